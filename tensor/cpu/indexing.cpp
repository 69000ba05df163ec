// CPU index_select / index_add (embedding lookup and its backward) and
// gather / scatter_add, all on the [outer, n, inner] layout.
//
// Indices are checked before any thread starts (an exception must not leave
// an OpenMP region). Accumulating backwards are parallel over destinations,
// never over the index list: scatter_add adds repeated indices up in list
// order, index_add in the pieces of tensor/backend.h's kIndexAddPiece.
#include <cstring>
#include <vector>

#include "tensor/cpu/common.h"

namespace ordo::cpu {

namespace {

void check_indices(const Tensor& idx, int64_t n, const char* kernel) {
  const int64_t* p = idx.data<int64_t>();
  for (int64_t i = 0, count = idx.numel(); i < count; ++i) {
    ORDO_CHECK(p[i] >= 0 && p[i] < n, kernel, ": index ", p[i], " at position ", i,
               " is out of range for an axis of size ", n);
  }
}

constexpr int64_t kStrip = 64;  // inner elements per task in accumulating kernels

}  // namespace

void index_select(const Tensor& out, const Tensor& x, const Tensor& idx) {
  const int64_t outer = out.size(0), k = out.size(1), inner = out.size(2), n = x.size(1);
  check_indices(idx, n, "index_select");
  const int64_t* ids = idx.data<int64_t>();
  const size_t row_bytes = static_cast<size_t>(inner) * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  parallel_for(outer * k, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / k, j = t % k;
      std::memcpy(dst + t * row_bytes, src + (o * n + ids[j]) * row_bytes, row_bytes);
    }
  });
}

void embedding_sum(const Tensor& out, const std::vector<Tensor>& tables, const std::vector<Tensor>& ids) {
  const int64_t B = out.size(0), L = out.size(1), d = out.size(2);
  for (size_t t = 0; t < tables.size(); ++t) check_indices(ids[t], tables[t].size(0), "embedding_sum");
  dispatch_float(out.dtype(), "embedding_sum", [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(d, 1));
    parallel_for(B * L, grain, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        T* y = dst + row * d;
        for (size_t t = 0; t < tables.size(); ++t) {
          const int64_t id = ids[t].data<int64_t>()[ids[t].size(0) == 1 ? row % L : row];
          const T* x = tables[t].data<T>() + id * d;
          for (int64_t c = 0; c < d; ++c) y[c] = t == 0 ? x[c] : y[c] + x[c];
        }
      }
    });
  });
}

void index_add(const Tensor& gx, const Tensor& idx, const Tensor& g, int64_t skip_row, bool onto) {
  const int64_t outer = gx.size(0), n = gx.size(1), inner = gx.size(2), k = g.size(1);
  check_indices(idx, n, "index_add");
  const int64_t* ids = idx.data<int64_t>();
  // The stable sort by row (a counting sort): row r's entries, in index
  // order, at sorted positions start[r] .. start[r + 1] - 1.
  std::vector<int64_t> start(static_cast<size_t>(n) + 1, 0), sorted(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) ++start[ids[j] + 1];
  for (int64_t r = 0; r < n; ++r) start[r + 1] += start[r];
  std::vector<int64_t> next(start.begin(), start.end() - 1);
  for (int64_t j = 0; j < k; ++j) sorted[next[ids[j]]++] = j;
  // Every row is a task, those no index names included: they are written 0.
  const int64_t strips = (inner + kStrip - 1) / kStrip, tasks = outer * strips * n;
  dispatch_float(gx.dtype(), "index_add", [&](auto tag) {
    using T = decltype(tag);
    T* dst = gx.data<T>();
    const T* src = g.data<T>();
    parallel_for(tasks, 1, [&](int64_t b, int64_t e) {
      T total[kStrip], piece[kStrip];
      for (int64_t t = b; t < e; ++t) {
        const int64_t r = t % n, os = t / n;
        const int64_t o = os / strips, i0 = (os % strips) * kStrip, w = std::min(kStrip, inner - i0);
        T* d = dst + (o * n + r) * inner + i0;
        const int64_t end = r == skip_row ? start[r] : start[r + 1];  // the skipped row sums nothing
        if (onto && end == start[r]) continue;  // nothing onto it: as it is (a -0 stays -0)
        for (int64_t i = 0; i < w; ++i) total[i] = onto ? d[i] : T(0), piece[i] = T(0);
        for (int64_t p = start[r]; p < end; ++p) {
          const T* s = src + (o * k + sorted[p]) * inner + i0;
          if (p == start[r]) {
            for (int64_t i = 0; i < w; ++i) piece[i] = s[i];
          } else if (p % kIndexAddPiece == 0) {  // a piece ends: onto the total, and the next begins
            for (int64_t i = 0; i < w; ++i) total[i] += piece[i], piece[i] = s[i];
          } else {
            for (int64_t i = 0; i < w; ++i) piece[i] += s[i];
          }
        }
        for (int64_t i = 0; i < w; ++i) d[i] = total[i] + piece[i];
      }
    });
  });
}

void select_rows(const Tensor& out, const Tensor& out_operand, const Tensor& x, const Tensor& rows) {
  index_select(out.reshape({1, out.size(0), out.size(1)}), x.reshape({1, x.size(0), x.size(1)}), rows);
  round_to_bf16(out_operand, out);
}

void scatter_rows(const Tensor& gx, const Tensor& rows, const Tensor& g) {
  const int64_t n = gx.size(0), d = gx.size(1), k = rows.numel();
  const int64_t* r = rows.data<int64_t>();
  check_indices(rows, n, "scatter_rows");
  for (int64_t j = 1; j < k; ++j)
    ORDO_CHECK(r[j - 1] < r[j], "scatter_rows: rows ", r[j - 1], " then ", r[j], " at position ", j,
               ": the list must be ascending and distinct");
  // Row by row: the next entry's row, or 0.
  std::vector<int64_t> entry(static_cast<size_t>(n), -1);
  for (int64_t j = 0; j < k; ++j) entry[r[j]] = j;
  const size_t row_bytes = static_cast<size_t>(d) * dtype_size(gx.dtype());
  char* dst = static_cast<char*>(gx.raw_data());
  const char* src = static_cast<const char*>(g.raw_data());
  parallel_for(n, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(d, 1)), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      if (entry[row] >= 0) std::memcpy(dst + row * row_bytes, src + entry[row] * row_bytes, row_bytes);
      else std::memset(dst + row * row_bytes, 0, row_bytes);
    }
  });
}

void embedding_sum_backward(const std::vector<Tensor>& grads, const Tensor& gout, const std::vector<Tensor>& ids,
                            const std::vector<int64_t>& skip_rows, const std::vector<bool>& onto) {
  const int64_t B = gout.size(0), L = gout.size(1), d = gout.size(2);
  const Tensor g = gout.reshape({1, B * L, d});
  for (size_t t = 0; t < grads.size(); ++t) {
    Tensor idx = ids[t].reshape({ids[t].numel()});
    if (ids[t].size(0) != B) {  // ids the batch shares: their list repeated, the same sum and order
      idx = Tensor::empty({B * L}, DType::i64, gout.device());
      const int64_t* from = ids[t].data<int64_t>();
      int64_t* to = idx.data<int64_t>();
      for (int64_t e = 0; e < B * L; ++e) to[e] = from[e % L];
    }
    index_add(grads[t].reshape({1, grads[t].size(0), d}), idx, g, skip_rows[t], onto[t]);
  }
}

void gather(const Tensor& out, const Tensor& x, const Tensor& idx) {
  const int64_t k = out.size(1), inner = out.size(2), n = x.size(1);
  check_indices(idx, n, "gather");
  const int64_t* ids = idx.data<int64_t>();
  dispatch_numeric(x.dtype(), "gather", [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    parallel_for(out.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / (k * inner), i = t % inner;
        dst[t] = src[(o * n + ids[t]) * inner + i];
      }
    });
  });
}

void scatter_add(const Tensor& gx, const Tensor& idx, const Tensor& g) {
  const int64_t outer = gx.size(0), n = gx.size(1), inner = gx.size(2), k = g.size(1);
  check_indices(idx, n, "scatter_add");
  const int64_t* ids = idx.data<int64_t>();
  dispatch_float(gx.dtype(), "scatter_add", [&](auto tag) {
    using T = decltype(tag);
    T* dst = gx.data<T>();
    const T* src = g.data<T>();
    // Each (o, i) column is independent; within it j runs in order.
    parallel_for(outer * inner, kElementwiseGrain / std::max<int64_t>(k, 1), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / inner, i = t % inner;
        for (int64_t j = 0; j < k; ++j) {
          int64_t at = (o * k + j) * inner + i;
          dst[(o * n + ids[at]) * inner + i] += src[at];
        }
      }
    });
  });
}

}  // namespace ordo::cpu
