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
// shared out as in rows.cuh. ggamma and gbeta are sums over rows, computed in
// two deterministic stages instead of float atomics, in one launch: fixed
// chunks of rows give per-chunk partial sums, which the block that completes
// a strip of columns adds in chunk order (last_of_group, cuda_common.cuh).
#include "tensor/cuda/rows.cuh"

namespace ordo::cuda {

namespace {

// Two passes over the row (the second re-reads it from cache): the mean, then
// the mean squared deviation from it; then the normalised output.
template <bool kWarpPerRow>
__global__ void layernorm_kernel(float* y, float* mean, float* rstd, const float* x,
                                 const float* gamma, const float* beta, int64_t rows, int64_t n,
                                 double eps) {
  using Threads = RowThreads<kWarpPerRow>;
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
    const float* xr = x + row * n;
    double sum = 0.0;
    for (int64_t j = Threads::lane(); j < n; j += Threads::width()) sum += xr[j];
    layernorm_row<Threads>(y + row * n, mean, rstd, row, xr, gamma, beta, n, eps, sum);
  }
}

// gx of each row: the two row means (of g and of g * xhat, in double), then the write.
template <bool kWarpPerRow>
__global__ void layernorm_backward_kernel(float* gx, const float* gy, const float* x,
                                          const float* mean, const float* rstd, const float* gamma,
                                          int64_t rows, int64_t n) {
  using Threads = RowThreads<kWarpPerRow>;
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
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
}

constexpr int kColumns = 32;      // columns per block (one warp wide: coalesced rows)
constexpr int kRowLanes = 8;      // threads per column, each taking every 8th row of the chunk
constexpr int64_t kLeastRowsPerChunk = 64;
constexpr int64_t kTargetBlocks = 2048;

// Stage 1 of ggamma/gbeta. Block (32, 8) handles 32 columns of one chunk of
// rows: thread (c, l) sums rows begin + l, begin + l + 8, ... of its column in
// order, then the 8 sums of each column are combined in a fixed tree in shared
// memory. partial_gamma/partial_beta are [chunks, n].
__global__ void layernorm_param_sums_kernel(float* ggamma, float* gbeta, double* partial_gamma, double* partial_beta,
                                            unsigned* counters, const float* gy, const float* x, const float* mean,
                                            const float* rstd, int64_t rows, int64_t n, int64_t chunks,
                                            int64_t rows_per_chunk) {
  __shared__ double tile_gamma[kRowLanes][kColumns];
  __shared__ double tile_beta[kRowLanes][kColumns];
  const int64_t strips = (n + kColumns - 1) / kColumns;
  for (int64_t task = blockIdx.x; task < strips * chunks; task += gridDim.x) {
    const int64_t chunk = task / strips, strip = task % strips, column = strip * kColumns + threadIdx.x;
    const int64_t begin = chunk * rows_per_chunk, end = min(rows, begin + rows_per_chunk);
    double sum_gamma = 0.0, sum_beta = 0.0;
    if (column < n) {
      for (int64_t row = begin + threadIdx.y; row < end; row += kRowLanes) {
        const float g = gy[row * n + column];
        const float xhat = (x[row * n + column] - mean[row]) * rstd[row];
        sum_gamma += g * xhat;
        sum_beta += g;
      }
    }
    tile_gamma[threadIdx.y][threadIdx.x] = sum_gamma;
    tile_beta[threadIdx.y][threadIdx.x] = sum_beta;
    __syncthreads();
    for (int stride = kRowLanes / 2; stride > 0; stride /= 2) {
      if (threadIdx.y < stride) {
        tile_gamma[threadIdx.y][threadIdx.x] += tile_gamma[threadIdx.y + stride][threadIdx.x];
        tile_beta[threadIdx.y][threadIdx.x] += tile_beta[threadIdx.y + stride][threadIdx.x];
      }
      __syncthreads();
    }
    if (threadIdx.y == 0 && column < n) {
      partial_gamma[chunk * n + column] = tile_gamma[0][threadIdx.x];
      partial_beta[chunk * n + column] = tile_beta[0][threadIdx.x];
    }
    // Stage 2: the block completing this strip adds each column's chunk sums in chunk order.
    if (last_of_group(counters, strip, chunks) && threadIdx.y == 0 && column < n) {
      double total_gamma = 0.0, total_beta = 0.0;
      for (int64_t c = 0; c < chunks; ++c) {
        total_gamma += partial_gamma[c * n + column];
        total_beta += partial_beta[c * n + column];
      }
      ggamma[column] = static_cast<float>(total_gamma);
      gbeta[column] = static_cast<float>(total_beta);
    }
    __syncthreads();  // the tiles are reused by the next task
  }
}

}  // namespace

void layernorm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
               const Tensor& gamma, const Tensor& beta, double eps) {
  require_f32(x.dtype(), "layernorm");
  const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
  DeviceContext& ctx = context(x);
  float* ys = y.data<float>();
  float* ms = mean.data<float>();
  float* rs = rstd.data<float>();
  const float* xs = x.data<float>();
  const float* g = gamma.data<float>();
  const float* b = beta.data<float>();
  launch_rows(rows, n, ctx, [&](bool warp_per_row, unsigned grid, int threads) {
    if (warp_per_row) {
      ORDO_LAUNCH(layernorm_kernel<true>, grid, threads, 0, ctx.stream, ys, ms, rs, xs, g, b, rows, n, eps);
    } else {
      ORDO_LAUNCH(layernorm_kernel<false>, grid, threads, 0, ctx.stream, ys, ms, rs, xs, g, b, rows, n, eps);
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
  launch_rows(rows, n, ctx, [&](bool warp_per_row, unsigned grid, int threads) {
    if (warp_per_row) {
      ORDO_LAUNCH(layernorm_backward_kernel<true>, grid, threads, 0, ctx.stream, g, gys, xs, ms, rs, gam, rows,
                  n);
    } else {
      ORDO_LAUNCH(layernorm_backward_kernel<false>, grid, threads, 0, ctx.stream, g, gys, xs, ms, rs, gam, rows,
                  n);
    }
  });

  // ggamma, gbeta: chunks of rows fixed by the shape (at least 64 rows each,
  // no more chunks than needed for about 2048 blocks).
  const int64_t strips = (n + kColumns - 1) / kColumns;
  const int64_t wanted = std::max<int64_t>(1, kTargetBlocks / strips);
  const int64_t chunks = std::max<int64_t>(
      1, std::min((rows + kLeastRowsPerChunk - 1) / kLeastRowsPerChunk, wanted));
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  Tensor scratch = workspace(x.device(), static_cast<size_t>(2 * chunks * n) * sizeof(double));
  double* partial_gamma = static_cast<double*>(scratch.raw_data());
  double* partial_beta = partial_gamma + chunks * n;
  ORDO_ASSERT(chunks == 1 || strips <= kGroupCounters);  // split only up to about 2048 blocks
  ORDO_LAUNCH(layernorm_param_sums_kernel, grid_for_rows(strips * chunks), dim3(kColumns, kRowLanes), 0, ctx.stream,
              ggamma.data<float>(), gbeta.data<float>(), partial_gamma, partial_beta, ctx.group_counters, gys, xs, ms,
              rs, rows, n, chunks, rows_per_chunk);
  ORDO_CUDA_CHECK_LAUNCH();
}

}  // namespace ordo::cuda
