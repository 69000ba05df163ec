// CPU kernels of the relative-position ops (tensor/kernels.inc): a gather of
// per-distance scores into [query, key] order, its transpose, and the
// three-way product of Huang et al. 2020 (Eq. 15) with its backward.
//
// Work is split over rows that own their outputs, and every sum runs in a
// fixed order (increasing j, or increasing (b, i, j)), so results depend on
// the inputs alone, never on the thread count. Indices are checked before any
// thread starts (an exception must not leave an OpenMP region).
#include <vector>

#include "tensor/cpu/common.h"

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

// ga[h,r,:] = alpha sum over (b,i,j) with idx = r of gs_ij (q_i * k_j), in
// increasing (b, i, j). Tasks own (head, block of rows): each scans every
// pair and keeps those whose row is its own, so the order per row is fixed
// whatever the split.
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
      for (int64_t b = 0; b < B; ++b) {
        const T* qb = q + (b * H + h) * L * D;
        const T* kb = k + (b * H + h) * J * D;
        const T* gsb = gs + (b * H + h) * L * J;
        for (int64_t i = 0; i < L; ++i) {
          const int64_t* ir = ids + (b * L + i) * J;
          const T* qi = qb + i * D;
          for (int64_t j = 0; j < J; ++j) {
            const int64_t r = ir[j];
            if (r < r0 || r >= r1) continue;
            const T c = gsb[i * J + j];
            const T* kj = kb + j * D;
            T* g = gh + r * D;
            for (int64_t d = 0; d < D; ++d) g[d] += c * qi[d] * kj[d];
          }
        }
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

}  // namespace ordo::cpu
