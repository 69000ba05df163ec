// CPU LayerNorm over the last axis (Ba, Kiros & Hinton 2016), forward and
// backward side by side.
//
// forward:  mean = E[x], rstd = 1/sqrt(Var[x] + eps), xhat = (x - mean) rstd,
//           y = xhat * gamma + beta
// backward: g = gy * gamma
//           gx = rstd * (g - mean(g) - xhat * mean(g * xhat))
//           ggamma = sum over rows of gy * xhat,  gbeta = sum over rows of gy
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "tensor/cpu/common.h"

namespace ordo::cpu {

void layernorm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
               const Tensor& gamma, const Tensor& beta, double eps, const Tensor& y16) {
  const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
  // y's bf16 rounding for the next product (f32 y), row by row while the row is in cache.
  uint16_t* rounded = y16.defined() ? static_cast<uint16_t*>(y16.raw_data()) : nullptr;
  dispatch_float(x.dtype(), "layernorm", [&](auto tag) {
    using T = decltype(tag);
    const T* xs = x.data<T>();
    const T* g = gamma.data<T>();
    const T* bt = beta.data<T>();
    T* ys = y.data<T>();
    T* ms = mean.data<T>();
    T* rs = rstd.data<T>();
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        const T* xr = xs + row * n;
        const double mu = lane_sum<double>(n, [xr](int64_t j) { return xr[j]; }) / n;
        const double sq = lane_sum<double>(n, [xr, mu](int64_t j) { return (xr[j] - mu) * (xr[j] - mu); });
        T m = static_cast<T>(mu);
        T r = static_cast<T>(1.0 / std::sqrt(sq / n + eps));
        ms[row] = m;
        rs[row] = r;
        T* yr = ys + row * n;
        for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - m) * r * g[j] + bt[j];
        if constexpr (std::is_same_v<T, float>)
          if (rounded)
            round_into_bf16(rounded + row * n, yr, n);
      }
    });
  });
}

void layernorm_backward(const Tensor& gx, const Tensor& ggamma, const Tensor& gbeta,
                        const Tensor& gy, const Tensor& x, const Tensor& mean,
                        const Tensor& rstd, const Tensor& gamma) {
  const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
  dispatch_float(x.dtype(), "layernorm_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* xs = x.data<T>();
    const T* gys = gy.data<T>();
    const T* g = gamma.data<T>();
    const T* ms = mean.data<T>();
    const T* rs = rstd.data<T>();
    T* gxs = gx.data<T>();
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1)), [&](int64_t b0, int64_t b1) {
      for (int64_t row = b0; row < b1; ++row) {
        const T* xr = xs + row * n;
        const T* gr = gys + row * n;
        T* out = gxs + row * n;
        const T m = ms[row], r = rs[row];
        const double mean_g = lane_sum<double>(n, [&](int64_t j) { return gr[j] * g[j]; }) / n;
        const double mean_gx = lane_sum<double>(n, [&](int64_t j) { return gr[j] * g[j] * ((xr[j] - m) * r); }) / n;
        const T a = static_cast<T>(mean_g), c = static_cast<T>(mean_gx);
        for (int64_t j = 0; j < n; ++j) {
          T xhat = (xr[j] - m) * r;
          out[j] = r * (gr[j] * g[j] - a - xhat * c);
        }
      }
    });
    // ggamma and gbeta: each column one sum (in double) over the rows in
    // order, whatever the thread count, so a row whose gy is zero (a padded
    // row nothing predicts) adds exact zeros and changes no bit. The threads
    // take blocks of columns.
    constexpr int64_t kColumns = 256;
    T* gg = ggamma.data<T>();
    T* gb = gbeta.data<T>();
    parallel_for(ceil_div(n, kColumns), 1, [&](int64_t first, int64_t last) {
      double sg[kColumns], sb[kColumns];
      for (int64_t block = first; block < last; ++block) {
        const int64_t j0 = block * kColumns, width = std::min(kColumns, n - j0);
        std::fill(sg, sg + width, 0.0);
        std::fill(sb, sb + width, 0.0);
        for (int64_t row = 0; row < rows; ++row) {
          const T* xr = xs + row * n + j0;
          const T* gr = gys + row * n + j0;
          const T m = ms[row], r = rs[row];
          for (int64_t j = 0; j < width; ++j) {
            sg[j] += gr[j] * ((xr[j] - m) * r);
            sb[j] += gr[j];
          }
        }
        for (int64_t j = 0; j < width; ++j) {
          gg[j0 + j] = static_cast<T>(sg[j]);
          gb[j0 + j] = static_cast<T>(sb[j]);
        }
      }
    });
  });
}

}  // namespace ordo::cpu
