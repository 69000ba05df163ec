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

#include "tensor/cuda/cuda_common.cuh"

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
