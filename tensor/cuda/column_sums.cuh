// Column sums over chunks of rows, deterministic, in one launch: the gradients
// of biases, LayerNorm's gamma and beta (fused.cu, layernorm.cu).
//
// Block (32, 8) takes tasks (chunk, strip of 32 columns): thread (c, l) calls
// element(row, column, sums) for rows begin + l, begin + l + 8, ... of its
// column in order, then the 8 partial sums of each column are added in a
// fixed tree in shared memory; partials is [Element::kSums][chunks][n] in
// double. The block that completes a strip's chunks (last_of_group,
// cuda_common.cuh) adds them up in chunk order. No float atomics: the same
// bits on every run and every GPU.
#pragma once

#include <algorithm>

#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

namespace {

constexpr int kColumns = 32;  // columns per block (one warp wide: coalesced rows)
constexpr int kRowLanes = 8;  // threads per column, each taking every 8th row of the chunk

// The fixed split of `rows` into chunks (at least 64 rows each, about 2048
// blocks in all): a function of the shape only.
struct ColumnChunks {
  int64_t strips, chunks, rows_per_chunk;
};

inline ColumnChunks column_chunks(int64_t rows, int64_t n) {
  ColumnChunks c;
  c.strips = (n + kColumns - 1) / kColumns;
  const int64_t wanted = std::max<int64_t>(1, 2048 / c.strips);
  c.chunks = std::max<int64_t>(1, std::min((rows + 63) / 64, wanted));
  c.rows_per_chunk = (rows + c.chunks - 1) / c.chunks;
  return c;
}

// out[k][column] = the k-th sum of column (out[k] null: skipped).
struct ColumnOutputs {
  float* out[3];
};

template <class Element>
__global__ void column_sums_kernel(ColumnOutputs outs, double* partials, unsigned* counters, int64_t rows, int64_t n,
                                   ColumnChunks cc, Element element) {
  constexpr int kSums = Element::kSums;
  __shared__ double tile[kSums][kRowLanes][kColumns];
  for (int64_t task = blockIdx.x; task < cc.strips * cc.chunks; task += gridDim.x) {
    const int64_t chunk = task / cc.strips, strip = task % cc.strips, column = strip * kColumns + threadIdx.x;
    const int64_t begin = chunk * cc.rows_per_chunk, end = min(rows, begin + cc.rows_per_chunk);
    double sums[kSums] = {};
    if (column < n)
      for (int64_t row = begin + threadIdx.y; row < end; row += kRowLanes) element(row, column, sums);
    for (int k = 0; k < kSums; ++k) tile[k][threadIdx.y][threadIdx.x] = sums[k];
    __syncthreads();
    for (int stride = kRowLanes / 2; stride > 0; stride /= 2) {
      if (threadIdx.y < stride)
        for (int k = 0; k < kSums; ++k) tile[k][threadIdx.y][threadIdx.x] += tile[k][threadIdx.y + stride][threadIdx.x];
      __syncthreads();
    }
    if (threadIdx.y == 0 && column < n)
      for (int k = 0; k < kSums; ++k) partials[(k * cc.chunks + chunk) * n + column] = tile[k][0][threadIdx.x];
    if (last_of_group(counters, strip, cc.chunks) && threadIdx.y == 0 && column < n)
      for (int k = 0; k < kSums; ++k) {
        if (outs.out[k] == nullptr) continue;
        double sum = 0.0;
        for (int64_t c = 0; c < cc.chunks; ++c) sum += partials[(k * cc.chunks + c) * n + column];
        outs.out[k][column] = static_cast<float>(sum);
      }
    __syncthreads();  // the tile is reused by the next task
  }
}

template <class Element>
void column_sums(const Device& device, DeviceContext& ctx, int64_t rows, int64_t n, ColumnOutputs outs,
                 Element element) {
  constexpr int kSums = Element::kSums;
  const ColumnChunks cc = column_chunks(rows, n);
  ORDO_ASSERT(cc.chunks == 1 || cc.strips <= kGroupCounters);  // column_chunks splits only up to 2048 blocks
  Tensor scratch = workspace(device, static_cast<size_t>(kSums * cc.chunks * n) * sizeof(double));
  double* partials = static_cast<double*>(scratch.raw_data());
  ORDO_LAUNCH(column_sums_kernel<Element>, grid_for_rows(cc.strips * cc.chunks), dim3(kColumns, kRowLanes), 0,
              ctx.stream, outs, partials, ctx.group_counters, rows, n, cc, element);
  ORDO_CUDA_CHECK_LAUNCH();
}

}  // namespace

}  // namespace ordo::cuda
