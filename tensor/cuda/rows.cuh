// Row kernels (private to tensor/cuda): softmax, LayerNorm and cross-entropy
// each work on independent contiguous rows of n elements, and share how
// threads are given rows and how a row is reduced.
//
// Rows of up to 1024 elements get one warp each (four rows per 128-thread
// block): a row reduction is then a few shuffles, with no shared memory or
// block barrier, and short rows (attention's 128 keys) still fill the GPU.
// Longer rows get a whole block (threads_for_row(n) threads). Within a row,
// thread `lane` takes elements lane, lane + width, lane + 2 width, ...
// (consecutive lanes read consecutive addresses: coalesced).
//
// Determinism: the mapping and the reduction tree depend on n only.
#pragma once

#include <type_traits>

#include "tensor/cuda/cuda_common.cuh"
#include "tensor/cuda/dropout_mask.cuh"

namespace ordo::cuda {

constexpr int64_t kWarpRowLimit = 1024;  // longest row given to a single warp
constexpr int kRowsPerWarpBlock = 4;

template <bool kWarpPerRow>
struct RowThreads {
  __device__ __forceinline__ static int lane() { return kWarpPerRow ? threadIdx.x % 32 : threadIdx.x; }
  __device__ __forceinline__ static int width() { return kWarpPerRow ? 32 : blockDim.x; }
  __device__ __forceinline__ static int64_t first_row() {
    return kWarpPerRow ? static_cast<int64_t>(blockIdx.x) * kRowsPerWarpBlock + threadIdx.x / 32
                       : static_cast<int64_t>(blockIdx.x);
  }
  __device__ __forceinline__ static int64_t row_stride() {
    return kWarpPerRow ? static_cast<int64_t>(gridDim.x) * kRowsPerWarpBlock : gridDim.x;
  }
  // combine over the row's threads; every one of them gets the result.
  // (Block variant: every thread of the block must call it.)
  template <class T, class Combine>
  __device__ __forceinline__ static T reduce(T v, Combine combine, T identity) {
    if constexpr (kWarpPerRow) {
      return shuffle_broadcast(warp_reduce(v, combine), 0);
    } else {
      return block_reduce(v, combine, identity);
    }
  }
};

// Launches kernel<true> (a warp per row) or kernel<false> (a block per row)
// for `rows` rows of n: `launch(warp_per_row, grid, threads)` does the ORDO_LAUNCH.
// The grid is capped at 16 blocks per SM; the kernels loop over further rows.
template <class Launch>
void launch_rows(int64_t rows, int64_t n, const DeviceContext& ctx, Launch launch) {
  if (rows == 0) return;
  const int64_t cap = static_cast<int64_t>(ctx.sm_count) * 16;
  if (n <= kWarpRowLimit) {
    const int64_t blocks = (rows + kRowsPerWarpBlock - 1) / kRowsPerWarpBlock;
    launch(true, static_cast<unsigned>(std::min(blocks, cap)), 32 * kRowsPerWarpBlock);
  } else {
    launch(false, static_cast<unsigned>(std::min(rows, cap)), threads_for_row(n));
  }
  ORDO_CUDA_CHECK_LAUNCH();
}

// Calls f(std::integral_constant<int, P>{}) with P the fewest registers a lane,
// of 4, 8, 16 and 32, that hold a warp's row of n <= kWarpRowLimit elements
// (element lane + 32 t in register t): the kernels that keep a row in
// registers are instantiated for these four widths.
template <class F>
void with_lane_count(int64_t n, F f) {
  static_assert(kWarpRowLimit <= 32 * 32, "a warp's row fits 32 registers a lane");
  if (n <= 32 * 4) {
    f(std::integral_constant<int, 4>{});
  } else if (n <= 32 * 8) {
    f(std::integral_constant<int, 8>{});
  } else if (n <= 32 * 16) {
    f(std::integral_constant<int, 16>{});
  } else {
    f(std::integral_constant<int, 32>{});
  }
}

// ---- LayerNorm of one row ------------------------------------------------------------
// (layernorm.cu and fused.cu: the same formulas, the statistics in double.)

// Given the row's sum (in double), the mean, then the mean squared deviation
// from it (re-reading the row), rstd = 1 / sqrt(var + eps), written to
// mean[row] and rstd[row], and y = (x - mean) rstd gamma + beta — through
// `dropout` when it is on (element row n + j of its stream: the embeddings'
// LayerNorm then dropout).
template <class Threads>
__device__ __forceinline__ void layernorm_row(float* yr, float* mean, float* rstd, int64_t row, const float* xr,
                                              const float* gamma, const float* beta, int64_t n, double eps,
                                              double sum, uint16_t* yr16 = nullptr,
                                              DropoutMask dropout = DropoutMask{}) {
  const double mu = Threads::reduce(sum, SumCombine{}, 0.0) / n;
  double squares = 0.0;
  for (int64_t j = Threads::lane(); j < n; j += Threads::width()) {
    const double d = xr[j] - mu;
    squares += d * d;
  }
  squares = Threads::reduce(squares, SumCombine{}, 0.0);
  const float m = static_cast<float>(mu);
  const float r = static_cast<float>(1.0 / ::sqrt(squares / n + eps));
  if (Threads::lane() == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
  const uint64_t stream = dropout.on ? dropout.stream() : 0;
  for (int64_t j = Threads::lane(); j < n; j += Threads::width()) {
    const float y = dropout.apply((xr[j] - m) * r * gamma[j] + beta[j], row * n + j, stream);
    yr[j] = y;
    if (yr16) yr16[j] = bf16_bits(y);  // the next product's operand, as a cast of y would round it
  }
}

// The backward's two row means, of g = gy gamma and of g xhat (in double,
// rounded once): gx_j = rstd (g_j - a - xhat_j c). gy through `dropout`'s
// backward when it is on (row `row`'s elements of its stream).
struct LayerNormRowMeans {
  float a, c;
};
template <class Threads>
__device__ __forceinline__ LayerNormRowMeans layernorm_backward_means(const float* xr, const float* gr, float m, float r,
                                                                      const float* gamma, int64_t n,
                                                                      DropoutMask dropout = DropoutMask{},
                                                                      int64_t row = 0) {
  const uint64_t stream = dropout.on ? dropout.stream() : 0;
  double sum_g = 0.0, sum_gx = 0.0;
  for (int64_t j = Threads::lane(); j < n; j += Threads::width()) {
    const float xhat = (xr[j] - m) * r;
    const float g = dropout.apply(gr[j], row * n + j, stream) * gamma[j];
    sum_g += g;
    sum_gx += g * xhat;
  }
  sum_g = Threads::reduce(sum_g, SumCombine{}, 0.0);
  sum_gx = Threads::reduce(sum_gx, SumCombine{}, 0.0);
  return {static_cast<float>(sum_g / n), static_cast<float>(sum_gx / n)};
}

// The column sums of LayerNorm's backward (column_sums.cuh): gy xhat
// (gamma's gradient) and gy (beta's) of element (row, column), x the
// LayerNorm's input; gy through `dropout`'s backward when it is on.
struct LayerNormParamSums {
  static constexpr int kSums = 2;
  const float *gy, *x, *mean, *rstd;
  int64_t n;
  DropoutMask dropout{};
  __device__ __forceinline__ void add(int64_t row, int64_t column, double& gamma_sum, double& beta_sum) const {
    const int64_t i = row * n + column;
    const float g = dropout.on ? dropout.apply(gy[i], i, dropout.stream()) : gy[i];
    gamma_sum += g * ((x[i] - mean[row]) * rstd[row]);
    beta_sum += g;
  }
  __device__ __forceinline__ void operator()(int64_t row, int64_t column, double (&sums)[2]) const {
    add(row, column, sums[0], sums[1]);
  }
};

// ---- online softmax statistics ------------------------------------------------------
//
// The running maximum of a row and the sum of exp(v - max) over the values
// seen so far (Milakov & Gimelshein 2018, "Online normalizer calculation for
// softmax"): one pass gives both, and two partial results combine exactly.
// -inf values (masked positions) contribute nothing. A NaN or a +inf makes
// the whole row NaN, as the CPU's max-subtracting passes do (tensor/kernels.inc,
// "Edge values"): the NaN is carried in the max, which every output of the
// row subtracts, whatever order the values were combined in.
struct MaxSum {
  float max;
  float sum;
};

__device__ __forceinline__ MaxSum shuffle_down(MaxSum v, int offset) {
  return {__shfl_down_sync(0xffffffffu, v.max, offset), __shfl_down_sync(0xffffffffu, v.sum, offset)};
}
__device__ __forceinline__ MaxSum shuffle_broadcast(MaxSum v, int lane) {
  return {__shfl_sync(0xffffffffu, v.max, lane), __shfl_sync(0xffffffffu, v.sum, lane)};
}

__device__ __forceinline__ MaxSum max_sum_identity() { return {-INFINITY, 0.0f}; }

__device__ __forceinline__ MaxSum max_sum_nan() { return {NAN, NAN}; }

__device__ __forceinline__ MaxSum max_sum_add(MaxSum a, float v) {
  if (isnan(v) || v == INFINITY || isnan(a.max)) return max_sum_nan();
  if (v > a.max) return {v, a.sum * expf(a.max - v) + 1.0f};
  if (v == -INFINITY) return a;  // also keeps an all -inf prefix at sum 0
  return {a.max, a.sum + expf(v - a.max)};
}

struct MaxSumCombine {
  __device__ __forceinline__ MaxSum operator()(MaxSum a, MaxSum b) const {
    if (isnan(a.max) || isnan(b.max)) return max_sum_nan();
    const float m = a.max > b.max ? a.max : b.max;
    if (m == -INFINITY) return {m, 0.0f};
    return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
  }
};

}  // namespace ordo::cuda
