// CPU kernels of the relative-position ops (tensor/kernels.inc): a gather of
// per-distance scores into [query, key] order, its transpose, and the
// three-way product of Huang et al. 2020 (Eq. 15) with its backward; the
// banded terms of consecutive positions, a BLAS product per table and query.
//
// Work is split over rows that own their outputs, and every sum runs in a
// fixed order (increasing j, or increasing (b, i, j)), so results depend on
// the inputs alone, never on the thread count. Indices are checked before any
// thread starts (an exception must not leave an OpenMP region).
#include <memory>
#include <vector>

#include "tensor/cpu/common.h"
#include "tensor/cpu/gemm_own.h"

namespace ordo::cpu {

namespace {

void check_rows(const Tensor& idx, int64_t rows, const char* kernel) {
  const int64_t* p = idx.data<int64_t>();
  for (int64_t e = 0, n = idx.numel(); e < n; ++e)
    ORDO_CHECK(p[e] >= 0 && p[e] < rows, kernel, ": relative index ", p[e], " at position ", e,
               " is outside the table's ", rows, " rows");
}

// Rows of [B, H, L, *] per task: enough work per thread to pay its wake-up.
int64_t row_grain(int64_t row_work) { return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(row_work, 1)); }

}  // namespace

void relative_gather(const Tensor& out, const Tensor& x, const Tensor& idx) {
  const int64_t B = out.size(0), H = out.size(1), L = out.size(2), J = out.size(3), R = x.size(3);
  check_rows(idx, R, "relative_gather");
  const int64_t* ids = idx.data<int64_t>();
  dispatch_float(x.dtype(), "relative_gather", [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    parallel_for(B * H * L, row_grain(J), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {  // row = (b, h, i)
        const int64_t i = row % L, b = row / (H * L);
        const int64_t* ir = ids + (b * L + i) * J;
        const T* xr = src + row * R;
        T* o = dst + row * J;
        for (int64_t j = 0; j < J; ++j) o[j] = xr[ir[j]];
      }
    });
  });
}

void relative_scatter(const Tensor& out, const Tensor& g, const Tensor& idx) {
  const int64_t B = g.size(0), H = g.size(1), L = g.size(2), J = g.size(3), R = out.size(3);
  check_rows(idx, R, "relative_scatter");
  const int64_t* ids = idx.data<int64_t>();
  dispatch_float(g.dtype(), "relative_scatter", [&](auto tag) {
    using T = decltype(tag);
    const T* src = g.data<T>();
    T* dst = out.data<T>();
    parallel_for(B * H * L, row_grain(J + R), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t i = row % L, b = row / (H * L);
        const int64_t* ir = ids + (b * L + i) * J;
        const T* gr = src + row * J;
        T* o = dst + row * R;
        std::fill(o, o + R, T(0));
        for (int64_t j = 0; j < J; ++j) o[ir[j]] += gr[j];  // j in order: a fixed sum
      }
    });
  });
}

void relative_product(const Tensor& s, const Tensor& q, const Tensor& k, const Tensor& a, const Tensor& idx,
                      double alpha) {
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), D = q.size(3), J = k.size(2), R = a.size(1);
  check_rows(idx, R, "relative_product");
  const int64_t* ids = idx.data<int64_t>();
  dispatch_float(q.dtype(), "relative_product", [&](auto tag) {
    using T = decltype(tag);
    const T *qd = q.data<T>(), *kd = k.data<T>(), *ad = a.data<T>();
    T* sd = s.data<T>();
    const T scale = static_cast<T>(alpha);
    parallel_for(B * H * L, row_grain(J * D), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {  // row = (b, h, i)
        const int64_t i = row % L, h = (row / L) % H, b = row / (H * L);
        const int64_t* ir = ids + (b * L + i) * J;
        const T* qi = qd + row * D;
        const T* kb = kd + (b * H + h) * J * D;
        const T* ah = ad + h * R * D;
        for (int64_t j = 0; j < J; ++j) {
          const T* kj = kb + j * D;
          const T* ar = ah + ir[j] * D;
          sd[row * J + j] = scale * lane_sum<T>(D, [&](int64_t d) { return qi[d] * kj[d] * ar[d]; });
        }
      }
    });
  });
}

namespace {

// gq[b,h,i,:] = alpha sum_j gs_ij (k_j * a_{r_ij}), j in order; a row per task.
template <class T>
void product_grad_q(T* gq, const T* gs, const T* k, const T* a, const int64_t* ids, int64_t B, int64_t H,
                    int64_t L, int64_t J, int64_t D, int64_t R, T alpha) {
  parallel_for(B * H * L, row_grain(J * D), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t i = row % L, h = (row / L) % H, b = row / (H * L);
      const int64_t* ir = ids + (b * L + i) * J;
      const T* kb = k + (b * H + h) * J * D;
      const T* ah = a + h * R * D;
      T* g = gq + row * D;
      std::fill(g, g + D, T(0));
      for (int64_t j = 0; j < J; ++j) {
        const T c = gs[row * J + j];
        const T* kj = kb + j * D;
        const T* ar = ah + ir[j] * D;
        for (int64_t d = 0; d < D; ++d) g[d] += c * kj[d] * ar[d];
      }
      for (int64_t d = 0; d < D; ++d) g[d] *= alpha;
    }
  });
}

// gk[b,h,j,:] = alpha sum_i gs_ij (q_i * a_{r_ij}), i in order; a key row per task.
template <class T>
void product_grad_k(T* gk, const T* gs, const T* q, const T* a, const int64_t* ids, int64_t B, int64_t H,
                    int64_t L, int64_t J, int64_t D, int64_t R, T alpha) {
  parallel_for(B * H * J, row_grain(L * D), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {  // row = (b, h, j)
      const int64_t j = row % J, h = (row / J) % H, b = row / (H * J);
      const T* qb = q + (b * H + h) * L * D;
      const T* gsb = gs + (b * H + h) * L * J;
      const T* ah = a + h * R * D;
      T* g = gk + row * D;
      std::fill(g, g + D, T(0));
      for (int64_t i = 0; i < L; ++i) {
        const T c = gsb[i * J + j];
        const T* qi = qb + i * D;
        const T* ar = ah + ids[(b * L + i) * J + j] * D;
        for (int64_t d = 0; d < D; ++d) g[d] += c * qi[d] * ar[d];
      }
      for (int64_t d = 0; d < D; ++d) g[d] *= alpha;
    }
  });
}

// ga[h,r,:] = alpha sum over (b,i,j) with idx = r of gs_ij (q_i * k_j): per
// batch element b the pairs in increasing (i, j), then the B sums in order
// (the CUDA kernels' order: a GPU thread per (b, h, r, d), then one per (h,
// r, d)). Tasks own (head, block of rows): each scans every pair and keeps
// those whose row is its own, so the order per row is fixed whatever the split.
template <class T>
void product_grad_a(T* ga, const T* gs, const T* q, const T* k, const int64_t* ids, int64_t B, int64_t H,
                    int64_t L, int64_t J, int64_t D, int64_t R, T alpha) {
  // Enough blocks to give every thread a task; no more, since each scans all pairs.
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(R, (max_threads() + H - 1) / H));
  parallel_for(H * blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t h = task / blocks, blk = task % blocks;
      const int64_t r0 = R * blk / blocks, r1 = R * (blk + 1) / blocks;
      T* gh = ga + h * R * D;
      std::fill(gh + r0 * D, gh + r1 * D, T(0));
      std::vector<T> piece(static_cast<size_t>((r1 - r0) * D));  // batch element b's sums, rows r0 .. r1 - 1
      for (int64_t b = 0; b < B; ++b) {
        const T* qb = q + (b * H + h) * L * D;
        const T* kb = k + (b * H + h) * J * D;
        const T* gsb = gs + (b * H + h) * L * J;
        std::fill(piece.begin(), piece.end(), T(0));
        for (int64_t i = 0; i < L; ++i) {
          const int64_t* ir = ids + (b * L + i) * J;
          const T* qi = qb + i * D;
          for (int64_t j = 0; j < J; ++j) {
            const int64_t r = ir[j];
            if (r < r0 || r >= r1) continue;
            const T c = gsb[i * J + j];
            const T* kj = kb + j * D;
            T* g = piece.data() + (r - r0) * D;
            for (int64_t d = 0; d < D; ++d) g[d] += c * qi[d] * kj[d];
          }
        }
        for (int64_t e = 0; e < (r1 - r0) * D; ++e) gh[r0 * D + e] += piece[e];
      }
      for (int64_t e = r0 * D; e < r1 * D; ++e) gh[e] *= alpha;
    }
  });
}

}  // namespace

void relative_product_backward(const Tensor& gq, const Tensor& gk, const Tensor& ga, const Tensor& gs,
                               const Tensor& q, const Tensor& k, const Tensor& a, const Tensor& idx,
                               double alpha) {
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), D = q.size(3), J = k.size(2), R = a.size(1);
  check_rows(idx, R, "relative_product_backward");
  const int64_t* ids = idx.data<int64_t>();
  dispatch_float(q.dtype(), "relative_product_backward", [&](auto tag) {
    using T = decltype(tag);
    const T scale = static_cast<T>(alpha);
    const T *gsd = gs.data<T>(), *qd = q.data<T>(), *kd = k.data<T>(), *ad = a.data<T>();
    if (gq.defined()) product_grad_q<T>(gq.data<T>(), gsd, kd, ad, ids, B, H, L, J, D, R, scale);
    if (gk.defined()) product_grad_k<T>(gk.data<T>(), gsd, qd, ad, ids, B, H, L, J, D, R, scale);
    if (ga.defined()) product_grad_a<T>(ga.data<T>(), gsd, qd, kd, ids, B, H, L, J, D, R, scale);
  });
}

// ---- banded terms (consecutive positions) ---------------------------------------------

namespace {

// Where the rows (b, h) of one table lie in a [B, H, L, X] tensor: with one
// table for every head they are all B H rows, one head apart (L X elements);
// with a table per head, head h' of each b, H L X apart from b to b.
struct BandRows {
  int64_t B, H, L, Ht;
  int64_t count() const { return Ht == 1 ? B * H : B; }
  int64_t step(int64_t X) const { return (Ht == 1 ? 1 : H) * L * X; }     // between rows
  int64_t first(int64_t ht, int64_t X) const { return ht * L * X; }       // table ht's first row
};

// Every (table, query) pair as a task: body(ht, i) on the threads, one
// single-threaded product each (OpenBLAS runs on its caller in a parallel region).
template <class Body>
void for_each_window(int64_t Ht, int64_t i_begin, int64_t i_end, Body body) {
  const int64_t queries = i_end - i_begin;
  parallel_for(Ht * queries, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) body(task / queries, i_begin + task % queries);
  });
}

}  // namespace

void band_scores(const Tensor& out, const Tensor& x, const Tensor& table) {
  const int64_t L = x.size(2), D = x.size(3), Ht = table.size(0), T = table.size(1);
  const BandRows rows{x.size(0), x.size(1), L, Ht};
  dispatch_float(x.dtype(), "band_scores", [&](auto tag) {
    using F = decltype(tag);
    const F *xd = x.data<F>(), *td = table.data<F>();
    F* od = out.data<F>();
    // Query i: C [rows x L] = X_i [rows x D] W_i^T, W_i the table's rows L-1-i .. 2L-2-i.
    for_each_window(Ht, 0, L, [&](int64_t ht, int64_t i) {
      strided_gemm<F>(false, true, rows.count(), L, D, F(1), xd + rows.first(ht, D) + i * D, rows.step(D),
                      td + (ht * T + L - 1 - i) * D, D, F(0), od + rows.first(ht, L) + i * L, rows.step(L));
    });
  });
}

void band_apply(const Tensor& out, const Tensor& p, const Tensor& table) {
  const int64_t L = p.size(2), D = out.size(3), Ht = table.size(0), T = table.size(1);
  const BandRows rows{p.size(0), p.size(1), L, Ht};
  dispatch_float(p.dtype(), "band_apply", [&](auto tag) {
    using F = decltype(tag);
    const F *pd = p.data<F>(), *td = table.data<F>();
    F* od = out.data<F>();
    // Query i: C [rows x D] = P_i [rows x L] W_i.
    for_each_window(Ht, 0, L, [&](int64_t ht, int64_t i) {
      strided_gemm<F>(false, false, rows.count(), D, L, F(1), pd + rows.first(ht, L) + i * L, rows.step(L),
                      td + (ht * T + L - 1 - i) * D, D, F(0), od + rows.first(ht, D) + i * D, rows.step(D));
    });
  });
}

void band_table_grad(const Tensor& out, const Tensor& g, const Tensor& y) {
  const int64_t L = g.size(2), D = y.size(3), Ht = out.size(0), T = out.size(1);
  const BandRows rows{g.size(0), g.size(1), L, Ht};
  dispatch_float(g.dtype(), "band_table_grad", [&](auto tag) {
    using F = decltype(tag);
    const F *gd = g.data<F>(), *yd = y.data<F>();
    F* od = out.data<F>();
    std::fill(od, od + out.numel(), F(0));
    if (rows.count() == 0 || L == 0) return;
    // Each query's window gradient G_i^T Y_i [L x D] is made apart (windows
    // overlap), a chunk of queries at a time within a bounded buffer, then
    // added onto the table row by row in increasing i: the same sums whatever
    // the thread count.
    const int64_t window = L * D;
    const int64_t chunk = std::clamp<int64_t>((int64_t{4} << 20) / std::max<int64_t>(Ht * window, 1), 1, L);
    // Not zeroed: every product below writes its whole window (beta = 0).
    const std::unique_ptr<F[]> windows(new F[static_cast<size_t>(Ht * chunk * window)]);
    for (int64_t i0 = 0; i0 < L; i0 += chunk) {
      const int64_t i1 = std::min(L, i0 + chunk);
      for_each_window(Ht, i0, i1, [&](int64_t ht, int64_t i) {
        strided_gemm<F>(true, false, L, D, rows.count(), F(1), gd + rows.first(ht, L) + i * L, rows.step(L),
                        yd + rows.first(ht, D) + i * D, rows.step(D), F(0),
                        windows.get() + (ht * chunk + i - i0) * window, D);
      });
      parallel_for(Ht * T, row_grain(D * (i1 - i0)), [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {  // row = (ht, t)
          const int64_t ht = row / T, t = row % T;
          F* o = od + row * D;
          // Query i's window holds table row t at its row t - (L - 1 - i).
          const int64_t lo = std::max(i0, L - 1 - t), hi = std::min(i1, 2 * L - 1 - t);
          for (int64_t i = lo; i < hi; ++i) {
            const F* w = windows.get() + ((ht * chunk + i - i0) * L + t - (L - 1 - i)) * D;
            for (int64_t d = 0; d < D; ++d) o[d] += w[d];
          }
        }
      });
    }
  });
}

}  // namespace ordo::cpu
