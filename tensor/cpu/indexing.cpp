// CPU index_select / index_add (embedding lookup and its backward) and
// gather / scatter_add, all on the [outer, n, inner] layout.
//
// Indices are checked before any thread starts (an exception must not leave
// an OpenMP region). Accumulating backwards are parallel over (outer, inner),
// never over the index list, so repeated indices add up in list order.
#include <cstring>

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

void index_add(const Tensor& gx, const Tensor& idx, const Tensor& g) {
  const int64_t outer = gx.size(0), n = gx.size(1), inner = gx.size(2), k = g.size(1);
  check_indices(idx, n, "index_add");
  const int64_t* ids = idx.data<int64_t>();
  const int64_t strips = (inner + kStrip - 1) / kStrip;
  dispatch_float(gx.dtype(), "index_add", [&](auto tag) {
    using T = decltype(tag);
    T* dst = gx.data<T>();
    const T* src = g.data<T>();
    parallel_for(outer * strips, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / strips, i0 = (t % strips) * kStrip, w = std::min(kStrip, inner - i0);
        for (int64_t j = 0; j < k; ++j) {
          T* d = dst + (o * n + ids[j]) * inner + i0;
          const T* s = src + (o * k + j) * inner + i0;
          for (int64_t i = 0; i < w; ++i) d[i] += s[i];
        }
      }
    });
  });
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
