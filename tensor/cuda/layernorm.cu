// CUDA LayerNorm over the last axis (Ba, Kiros & Hinton 2016), forward and
// backward side by side, with the CPU's formulas (tensor/cpu/layernorm.cpp):
//
// forward:  mean = E[x], rstd = 1/sqrt(Var[x] + eps), xhat = (x - mean) rstd,
//           y = xhat * gamma + beta
// backward: g = gy * gamma
//           gx = rstd * (g - mean(g) - xhat * mean(g * xhat))
//           ggamma = sum over rows of gy * xhat,  gbeta = sum over rows of gy
//
// Per-row statistics are accumulated in double, as on the CPU. Rows are
// shared out as in rows.cuh. ggamma and gbeta are sums over rows, in a fixed
// order (column_sums.cuh): for rows of up to 1024, in the backward's one
// launch (rows_and_column_sums), else in a second.
#include "tensor/cuda/column_sums.cuh"
#include "tensor/cuda/rows.cuh"

namespace ordo::cuda {

namespace {

// Two passes over the row (the second re-reads it from cache): the mean, then
// the mean squared deviation from it; then the normalised output.
template <bool kWarpPerRow>
__global__ void layernorm_kernel(float* y, uint16_t* y16, float* mean, float* rstd, const float* x,
                                 const float* gamma, const float* beta, int64_t rows, int64_t n,
                                 double eps) {
  using Threads = RowThreads<kWarpPerRow>;
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
    const float* xr = x + row * n;
    double sum = 0.0;
    for (int64_t j = Threads::lane(); j < n; j += Threads::width()) sum += xr[j];
    layernorm_row<Threads>(y + row * n, mean, rstd, row, xr, gamma, beta, n, eps, sum, y16 ? y16 + row * n : nullptr);
  }
}

// gx of one row: the two row means (of g and of g * xhat, in double), then the write.
template <class Threads>
__device__ __forceinline__ void layernorm_backward_row(float* gx, const float* gy, const float* x, const float* mean,
                                                       const float* rstd, const float* gamma, int64_t row, int64_t n) {
  const float* xr = x + row * n;
  const float* gr = gy + row * n;
  const float m = mean[row], r = rstd[row];
  const LayerNormRowMeans means = layernorm_backward_means<Threads>(xr, gr, m, r, gamma, n);
  float* out = gx + row * n;
  for (int64_t j = Threads::lane(); j < n; j += Threads::width()) {
    const float xhat = (xr[j] - m) * r;
    out[j] = r * (gr[j] * gamma[j] - means.a - xhat * means.c);
  }
}

// Rows longer than a warp takes: a block per row; gamma's and beta's sums in a second launch.
__global__ void layernorm_backward_kernel(float* gx, const float* gy, const float* x,
                                          const float* mean, const float* rstd, const float* gamma,
                                          int64_t rows, int64_t n) {
  using Threads = RowThreads<false>;
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride())
    layernorm_backward_row<Threads>(gx, gy, x, mean, rstd, gamma, row, n);
}

// Rows a warp takes: gx row by row and gamma's and beta's sums in one launch
// (rows_and_column_sums).
struct LayerNormBackward : LayerNormParamSums {
  float* gx;
  const float* gamma;
  __device__ __forceinline__ void row(int64_t r) const {
    layernorm_backward_row<RowThreads<true>>(gx, gy, x, mean, rstd, gamma, r, n);
  }
};

}  // namespace

void layernorm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
               const Tensor& gamma, const Tensor& beta, double eps, const Tensor& y16) {
  require_f32(x.dtype(), "layernorm");
  const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
  DeviceContext& ctx = context(x);
  float* ys = y.data<float>();
  float* ms = mean.data<float>();
  float* rs = rstd.data<float>();
  const float* xs = x.data<float>();
  const float* g = gamma.data<float>();
  const float* b = beta.data<float>();
  uint16_t* y16_data = y16.defined() ? static_cast<uint16_t*>(y16.raw_data()) : nullptr;
  launch_rows(rows, n, ctx, [&](bool warp_per_row, unsigned grid, int threads) {
    if (warp_per_row) {
      ORDO_LAUNCH(layernorm_kernel<true>, grid, threads, 0, ctx.stream, ys, y16_data, ms, rs, xs, g, b, rows, n, eps);
    } else {
      ORDO_LAUNCH(layernorm_kernel<false>, grid, threads, 0, ctx.stream, ys, y16_data, ms, rs, xs, g, b, rows, n, eps);
    }
  });
}

void layernorm_backward(const Tensor& gx, const Tensor& ggamma, const Tensor& gbeta,
                        const Tensor& gy, const Tensor& x, const Tensor& mean,
                        const Tensor& rstd, const Tensor& gamma) {
  require_f32(x.dtype(), "layernorm_backward");
  const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
  if (n == 0) return;
  DeviceContext& ctx = context(x);
  float* g = gx.data<float>();
  const float* gys = gy.data<float>();
  const float* xs = x.data<float>();
  const float* ms = mean.data<float>();
  const float* rs = rstd.data<float>();
  const float* gam = gamma.data<float>();
  const LayerNormParamSums sums{gys, xs, ms, rs, n};
  const ColumnOutputs outs{{ggamma.data<float>(), gbeta.data<float>(), nullptr}};
  if (n <= kWarpRowLimit) {
    rows_and_column_sums(x.device(), ctx, rows, n, outs, LayerNormBackward{sums, g, gam});
    return;
  }
  launch_rows(rows, n, ctx, [&](bool, unsigned grid, int threads) {  // n > kWarpRowLimit: a block a row
    ORDO_LAUNCH(layernorm_backward_kernel, grid, threads, 0, ctx.stream, g, gys, xs, ms, rs, gam, rows, n);
  });
  column_sums(x.device(), ctx, rows, n, outs, sums);
}

}  // namespace ordo::cuda
