// CUDA reductions over the middle axis of x [outer, r, inner]: sum, mean,
// max, min, var, argmax, and the sum of squares of gradient clipping.
//
// Two stages in one launch, no float atomics:
//  1. the r axis of every output is cut into `splits` chunks (a number fixed
//     by the shape alone); one block reduces one chunk of one output (inner
//     == 1, contiguous rows) or of 32 neighbouring outputs (inner > 1, so the
//     loads along inner coalesce), each thread walking its elements in order
//     and the block combining threads in a fixed tree;
//  2. the block that completes an output's chunks (last_of_group: an integer
//     count) combines its chunk results in chunk order and writes the output.
// Every sum is accumulated in double (as the CPU's), so both backends agree
// to within the final rounding to f32. Nothing depends on timing or on the
// GPU model: the same inputs give bit-identical outputs on every run.
#include <cfloat>

#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

namespace {

// ---- the reductions: identity, per-element load, combine -------------------------

struct SumOp {
  using Acc = double;
  __device__ static Acc identity() { return 0.0; }
  __device__ Acc load(float v, int64_t, int64_t) const { return v; }
  __device__ Acc operator()(Acc a, Acc b) const { return a + b; }
};

struct SquareOp : SumOp {
  __device__ Acc load(float v, int64_t, int64_t) const { return static_cast<double>(v) * v; }
};

// Squared deviation from each output's mean (the second pass of var).
struct SquaredDeviationOp : SumOp {
  const double* mean;
  __device__ Acc load(float v, int64_t, int64_t out) const {
    double d = static_cast<double>(v) - mean[out];
    return d * d;
  }
};

// NaN-propagating, like the CPU's (any NaN in the range gives NaN).
struct MaxOp {
  using Acc = float;
  __device__ static Acc identity() { return -INFINITY; }
  __device__ Acc load(float v, int64_t, int64_t) const { return v; }
  __device__ Acc operator()(Acc a, Acc b) const { return (a != a || a > b) ? a : b; }
};
struct MinOp {
  using Acc = float;
  __device__ static Acc identity() { return INFINITY; }
  __device__ Acc load(float v, int64_t, int64_t) const { return v; }
  __device__ Acc operator()(Acc a, Acc b) const { return (a != a || a < b) ? a : b; }
};

struct ValueIndex {
  float value;
  int64_t index;
};
__device__ __forceinline__ ValueIndex shuffle_down(ValueIndex v, int offset) {
  return {__shfl_down_sync(0xffffffffu, v.value, offset),
          __shfl_down_sync(0xffffffffu, v.index, offset)};
}
__device__ __forceinline__ ValueIndex shuffle_broadcast(ValueIndex v, int lane) {
  return {__shfl_sync(0xffffffffu, v.value, lane), __shfl_sync(0xffffffffu, v.index, lane)};
}

// The first maximum, a NaN counting as the maximum (the CPU's rule): the
// larger value wins, NaN beats everything, ties go to the smaller index.
// This makes combine associative and commutative, so any tree gives the
// CPU's sequential answer.
struct ArgMaxOp {
  using Acc = ValueIndex;
  __device__ static Acc identity() { return {-INFINITY, INT64_MAX}; }
  __device__ Acc load(float v, int64_t j, int64_t) const { return {v, j}; }
  __device__ Acc operator()(Acc a, Acc b) const {
    const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
    if (a_nan != b_nan) return a_nan ? a : b;
    if (!a_nan && a.value != b.value) return a.value > b.value ? a : b;
    return a.index <= b.index ? a : b;
  }
};

// ---- stage 2, in the launch of stage 1: an output's chunks combined in order -----------
// (by the block that completes them: last_of_group)

template <class Op, class Finish>
__device__ __forceinline__ void finish_output(const typename Op::Acc* partial, int64_t out, int64_t splits, Op op,
                                              Finish finish) {
  typename Op::Acc acc = partial[out * splits];
  for (int64_t s = 1; s < splits; ++s) acc = op(acc, partial[out * splits + s]);
  finish(out, acc);
}

// ---- stage 1: partial results per (output, chunk) ----------------------------------

// inner == 1. Block = threads_for_row(chunk) threads, one (row, split) task at
// a time (grid-stride over tasks); thread t takes elements begin + t,
// begin + t + blockDim.x, ... of the chunk. partial is [rows, splits].
template <class Op, class Finish>
__global__ void reduce_rows_kernel(const float* x, int64_t rows, int64_t r, int64_t splits, int64_t chunk, Op op,
                                   typename Op::Acc* partial, unsigned* counters, Finish finish) {
  for (int64_t task = blockIdx.x; task < rows * splits; task += gridDim.x) {
    const int64_t row = task / splits, begin = (task % splits) * chunk;
    const int64_t end = min(r, begin + chunk);
    const float* xr = x + row * r;
    typename Op::Acc acc = Op::identity();
    for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) acc = op(acc, op.load(xr[j], j, row));
    acc = block_reduce(acc, op, Op::identity());
    if (threadIdx.x == 0) partial[task] = acc;
    if (last_of_group(counters, row, splits) && threadIdx.x == 0) finish_output(partial, row, splits, op, finish);
  }
}

constexpr int kColumnWidth = 32;  // outputs per block along inner (one warp: coalesced)
constexpr int kColumnLanes = 8;   // threads per output along r

// inner > 1. Block = (32, 8): threadIdx.x picks one of 32 consecutive inner
// positions, threadIdx.y walks rows j = begin + y, begin + y + 8, ... of the
// chunk; the 8 partial values of an output are then combined in a fixed tree
// through shared memory. partial is [outer * inner, splits].
template <class Op, class Finish>
__global__ void reduce_columns_kernel(const float* x, int64_t outer, int64_t r, int64_t inner, int64_t splits,
                                      int64_t chunk, Op op, typename Op::Acc* partial, unsigned* counters,
                                      Finish finish) {
  using Acc = typename Op::Acc;
  __shared__ Acc tile[kColumnLanes][kColumnWidth];
  const int64_t strips = (inner + kColumnWidth - 1) / kColumnWidth;
  for (int64_t task = blockIdx.x; task < outer * strips * splits; task += gridDim.x) {
    const int64_t split = task % splits, strip = (task / splits) % strips, o = task / (splits * strips);
    const int64_t i = strip * kColumnWidth + threadIdx.x;
    const int64_t begin = split * chunk, end = min(r, begin + chunk);
    Acc acc = Op::identity();
    if (i < inner) {
      for (int64_t j = begin + threadIdx.y; j < end; j += kColumnLanes)
        acc = op(acc, op.load(x[(o * r + j) * inner + i], j, o * inner + i));
    }
    tile[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    for (int stride = kColumnLanes / 2; stride > 0; stride /= 2) {
      if (threadIdx.y < stride)
        tile[threadIdx.y][threadIdx.x] = op(tile[threadIdx.y][threadIdx.x], tile[threadIdx.y + stride][threadIdx.x]);
      __syncthreads();
    }
    if (threadIdx.y == 0 && i < inner) partial[(o * inner + i) * splits + split] = tile[0][threadIdx.x];
    if (last_of_group(counters, o * strips + strip, splits) && threadIdx.y == 0 && i < inner)
      finish_output(partial, o * inner + i, splits, op, finish);
    __syncthreads();  // the tile is reused by the next task
  }
}


// out = f32(sum / divisor): sum (divisor 1), mean (r), var (r - correction).
struct WriteQuotient {
  float* out;
  double divisor;
  __device__ void operator()(int64_t i, double sum) const { out[i] = static_cast<float>(sum / divisor); }
};
struct WriteMean {
  double* mean;
  double count;
  __device__ void operator()(int64_t i, double sum) const { mean[i] = sum / count; }
};
struct WriteValue {
  float* out;
  __device__ void operator()(int64_t i, float v) const { out[i] = v; }
};
struct WriteIndex {
  int64_t* out;
  __device__ void operator()(int64_t i, ValueIndex v) const { out[i] = v.index; }
};

// ---- the plan: how r is cut, from the shape alone --------------------------------------

constexpr int64_t kRowChunk = 8192;     // least r elements per block, inner == 1
constexpr int64_t kColumnChunk = 512;   // least r rows per block, inner > 1
constexpr int64_t kTargetBlocks = 2048; // splitting stops once this many blocks exist

struct Plan {
  int64_t splits = 1, chunk = 0;
};

Plan plan_for(int64_t blocks_unsplit, int64_t r, int64_t least_chunk) {
  Plan p;
  const int64_t wanted = std::max<int64_t>(1, kTargetBlocks / std::max<int64_t>(blocks_unsplit, 1));
  p.splits = std::max<int64_t>(1, std::min((r + least_chunk - 1) / least_chunk, wanted));
  p.chunk = (r + p.splits - 1) / p.splits;
  if (p.chunk > 0) p.splits = (r + p.chunk - 1) / p.chunk;  // no empty chunk
  return p;
}

// Runs both stages of reduction `op` over x [outer, r, inner] and hands each
// output's result to `finish`.
template <class Op, class Finish>
void run_reduction(const Tensor& x, int64_t outer, int64_t r, int64_t inner, Op op, Finish finish) {
  using Acc = typename Op::Acc;
  const int64_t outputs = outer * inner;
  if (outputs == 0) return;
  DeviceContext& ctx = context(x);
  const float* xs = x.data<float>();
  const Plan plan = inner == 1
                        ? plan_for(outer, r, kRowChunk)
                        : plan_for(outer * ((inner + kColumnWidth - 1) / kColumnWidth), r, kColumnChunk);
  Tensor scratch = workspace(x.device(), static_cast<size_t>(outputs * plan.splits) * sizeof(Acc));
  Acc* partial = static_cast<Acc*>(scratch.raw_data());
  if (inner == 1) {
    ORDO_ASSERT(plan.splits == 1 || outer <= kGroupCounters);  // plan_for splits only up to 2048 blocks
    const int threads = threads_for_row(plan.chunk);
    ORDO_LAUNCH(reduce_rows_kernel, grid_for_rows(outer * plan.splits), threads, 0, ctx.stream, xs, outer, r,
                plan.splits, plan.chunk, op, partial, ctx.group_counters, finish);
  } else {
    const int64_t strips = (inner + kColumnWidth - 1) / kColumnWidth;
    ORDO_ASSERT(plan.splits == 1 || outer * strips <= kGroupCounters);
    ORDO_LAUNCH(reduce_columns_kernel, grid_for_rows(outer * strips * plan.splits), dim3(kColumnWidth, kColumnLanes),
                0, ctx.stream, xs, outer, r, inner, plan.splits, plan.chunk, op, partial, ctx.group_counters, finish);
  }
  ORDO_CUDA_CHECK_LAUNCH();
}

}  // namespace

void reduce(ReduceOp op, const Tensor& out, const Tensor& x, int64_t outer, int64_t r,
            int64_t inner, int64_t correction) {
  require_f32(x.dtype(), "reduce");
  float* o = out.data<float>();
  switch (op) {
    case ReduceOp::sum: return run_reduction(x, outer, r, inner, SumOp{}, WriteQuotient{o, 1.0});
    case ReduceOp::mean:
      return run_reduction(x, outer, r, inner, SumOp{}, WriteQuotient{o, static_cast<double>(r)});
    case ReduceOp::max: return run_reduction(x, outer, r, inner, MaxOp{}, WriteValue{o});
    case ReduceOp::min: return run_reduction(x, outer, r, inner, MinOp{}, WriteValue{o});
    case ReduceOp::var: {
      // Two passes, as the CPU: the mean, then the squared deviations from it.
      Tensor mean = Tensor::empty({outer * inner}, DType::f64, x.device());
      run_reduction(x, outer, r, inner, SumOp{},
                    WriteMean{mean.data<double>(), static_cast<double>(r)});
      return run_reduction(x, outer, r, inner, SquaredDeviationOp{{}, mean.data<double>()},
                           WriteQuotient{o, static_cast<double>(r - correction)});
    }
  }
}

void argmax(const Tensor& out, const Tensor& x, int64_t outer, int64_t r, int64_t inner) {
  require_f32(x.dtype(), "argmax");
  run_reduction(x, outer, r, inner, ArgMaxOp{}, WriteIndex{out.data<int64_t>()});
}

void sum_squares(const Tensor& out, const Tensor& x) {
  require_f32(x.dtype(), "sum_squares");
  run_reduction(x, 1, x.numel(), 1, SquareOp{}, WriteQuotient{out.data<float>(), 1.0});
}

}  // namespace ordo::cuda
