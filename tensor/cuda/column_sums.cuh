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

#include "tensor/cuda/rows.cuh"

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

// Task (chunk, strip): thread (c, l) calls element(row, column, sums) for
// rows begin + l, begin + l + 8, ... of its column in order, the 8 partial
// sums of each column are added in a fixed tree in shared memory into
// partials[k][chunk][column], and the block that completes the strip's
// chunks adds them up in chunk order. Every thread of the block calls it.
template <class Element>
__device__ __forceinline__ void add_column_strip(const Element& element, const ColumnOutputs& outs, double* partials,
                                                 unsigned* counters, int64_t rows, int64_t n, const ColumnChunks& cc,
                                                 int64_t chunk, int64_t strip,
                                                 double (&tile)[Element::kSums][kRowLanes][kColumns]) {
  constexpr int kSums = Element::kSums;
  const int64_t column = strip * kColumns + threadIdx.x;
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

template <class Element>
__global__ void column_sums_kernel(ColumnOutputs outs, double* partials, unsigned* counters, int64_t rows, int64_t n,
                                   ColumnChunks cc, Element element) {
  __shared__ double tile[Element::kSums][kRowLanes][kColumns];
  for (int64_t task = blockIdx.x; task < cc.strips * cc.chunks; task += gridDim.x)
    add_column_strip(element, outs, partials, counters, rows, n, cc, task / cc.strips, task % cc.strips, tile);
}

// A row kernel and its column sums in one launch, for rows of up to
// kWarpRowLimit: a block (32 x 8 threads) per chunk of rows, its 8 warps
// calling task.row(r) for the chunk's rows (a warp per row, as
// RowThreads<true> shares a row out), then — every row of the chunk
// written — the block adds the chunk's column sums (task as the element
// functor), strip by strip. Each block starts at a strip of its own, so the
// blocks that find themselves last of a strip, and add its partials up, are
// spread over the grid instead of all being the one that finishes last.
template <class Task>
__global__ void rows_and_column_sums_kernel(Task task, ColumnOutputs outs, double* partials, unsigned* counters,
                                            int64_t rows, int64_t n, ColumnChunks cc) {
  __shared__ double tile[Task::kSums][kRowLanes][kColumns];
  for (int64_t chunk = blockIdx.x; chunk < cc.chunks; chunk += gridDim.x) {
    const int64_t begin = chunk * cc.rows_per_chunk, end = min(rows, begin + cc.rows_per_chunk);
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) task.row(r);
    __syncthreads();  // the chunk's rows, written by every warp, before their sums read them
    for (int64_t s = 0; s < cc.strips; ++s)
      add_column_strip(task, outs, partials, counters, rows, n, cc, chunk, (chunk + s) % cc.strips, tile);
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

// The split of rows_and_column_sums: chunks of at least 16 rows (a block's
// rows; at BERT-base 32 x 128, 256 blocks), at most 1024 of them (the
// partials: 8 bytes per sum, column and chunk). A function of the shape only.
inline ColumnChunks row_chunks(int64_t rows, int64_t n) {
  ColumnChunks c;
  c.strips = (n + kColumns - 1) / kColumns;
  c.chunks = std::max<int64_t>(1, std::min<int64_t>((rows + 15) / 16, 1024));
  c.rows_per_chunk = (rows + c.chunks - 1) / c.chunks;
  return c;
}

// task.row(r) for every row, then the column sums of task's elements (which
// may read what the rows wrote), in one launch. Rows of n <= kWarpRowLimit.
template <class Task>
void rows_and_column_sums(const Device& device, DeviceContext& ctx, int64_t rows, int64_t n, ColumnOutputs outs,
                          Task task) {
  constexpr int kSums = Task::kSums;
  ORDO_ASSERT(n <= kWarpRowLimit);  // (no rows: one block writes sums of nothing, 0)
  const ColumnChunks cc = row_chunks(rows, n);
  ORDO_ASSERT(cc.strips <= kGroupCounters);
  Tensor scratch = workspace(device, static_cast<size_t>(kSums * cc.chunks * n) * sizeof(double));
  ORDO_LAUNCH(rows_and_column_sums_kernel<Task>, static_cast<unsigned>(cc.chunks), dim3(kColumns, kRowLanes), 0,
              ctx.stream, task, outs, static_cast<double*>(scratch.raw_data()), ctx.group_counters, rows, n, cc);
  ORDO_CUDA_CHECK_LAUNCH();
}

}  // namespace

}  // namespace ordo::cuda
