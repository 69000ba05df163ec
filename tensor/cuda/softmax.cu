// CUDA softmax / log-softmax over the last axis, with an optional additive
// mask, and their backward, side by side. Rows are shared out as in rows.cuh
// (a warp per row up to 1024 elements, a block per row beyond).
//
// forward, per row of up to 1024 (a warp): the row read once into the lanes'
// registers, its max, then the sum of exp(v - max), then exp(v - max) / sum
// (or v - max - log(sum)). Longer rows (a block): one pass keeps the online
// (max, sum of exp(v - max)) of v = x + mask, a fixed-order reduction
// combines the threads' pairs, and a second pass writes the outputs. A row
// that is entirely -inf gives 0s (log-softmax: -inf), as the CPU. Beside y,
// softmax can write dropout(y) (the attention's dropped probabilities, bf16
// for the P V product) from the same registers: no second pass over y. y
// itself may be written as bf16 (kept so for the backward under bf16
// products), which the backward reads.
// backward, per row: one reduction (sum of gy * y, or of gy), then the write
// (a warp's row, again, held in registers).
#include "tensor/cuda/dropout_mask.cuh"
#include "tensor/cuda/rows.cuh"

namespace ordo::cuda {

namespace {

// Where row `row` of the mask starts (the mask is any strided view of x's
// shape; its rows are found through an indexer over every axis but the last)
// and its stride along the row.
struct MaskRows {
  const float* data = nullptr;  // nullptr: no mask
  Indexer<1> rows;
  int64_t column_stride = 0;
};

// A row output written in f32 (f), or rounded to bf16 (h): the one pointer
// given; neither: no such output.
struct RowOut {
  float* f = nullptr;
  uint16_t* h = nullptr;
  __device__ __forceinline__ bool defined() const { return f != nullptr || h != nullptr; }
  __device__ __forceinline__ void store(int64_t i, float v) const {
    if (h != nullptr) {
      h[i] = bf16_bits(v);
    } else {
      f[i] = v;
    }
  }
};

// A row input read as f32 (f) or from bf16 (h): the one pointer given.
struct RowIn {
  const float* f = nullptr;
  const uint16_t* h = nullptr;
  __device__ __forceinline__ float load(int64_t i) const { return h != nullptr ? bf16_value(h[i]) : f[i]; }
};

// A block per row (rows longer than a warp's registers hold).
// out, where defined: dropout(y) beside y (softmax only).
__global__ void softmax_block_kernel(RowOut y, const float* x, MaskRows mask, int64_t rows, int64_t n, bool log,
                                     RowOut out, DropoutMask drop) {
  using Threads = RowThreads<false>;
  const uint64_t stream = drop.stream();
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
    const float* xr = x + row * n;
    const float* mr = nullptr;
    if (mask.data != nullptr) {
      int64_t offset[1];
      mask.rows.offsets(row, offset);
      mr = mask.data + offset[0];
    }
    auto value = [&](int64_t j) { return mr != nullptr ? xr[j] + mr[j * mask.column_stride] : xr[j]; };

    MaxSum stats = max_sum_identity();
    for (int64_t j = Threads::lane(); j < n; j += Threads::width()) stats = max_sum_add(stats, value(j));
    stats = Threads::reduce(stats, MaxSumCombine{}, max_sum_identity());

    if (stats.max == -INFINITY) {  // every position masked out
      for (int64_t j = Threads::lane(); j < n; j += Threads::width()) {
        y.store(row * n + j, log ? -INFINITY : 0.0f);
        if (out.defined()) out.store(row * n + j, 0.0f);
      }
    } else if (log) {
      const float log_sum = logf(stats.sum);
      for (int64_t j = Threads::lane(); j < n; j += Threads::width())
        y.store(row * n + j, (value(j) - stats.max) - log_sum);
    } else {
      const float inv = 1.0f / stats.sum;
      for (int64_t j = Threads::lane(); j < n; j += Threads::width()) {
        const float v = expf(value(j) - stats.max) * inv;
        y.store(row * n + j, v);
        if (out.defined()) out.store(row * n + j, drop.apply(v, row * n + j, stream));
      }
    }
  }
}

// Max with a NaN carried (fmaxf would drop it): a NaN anywhere makes the max NaN.
__device__ __forceinline__ float max_keeping_nan(float a, float b) { return isnan(a) || a > b ? a : b; }
struct MaxKeepingNan {
  __device__ __forceinline__ float operator()(float a, float b) const { return max_keeping_nan(a, b); }
};

// A warp per row of n <= 32 kPerLane elements (the attention's rows): the
// row is read once into registers, and its max, the sum of exp(v - max) and
// the outputs all come from them — one exp an element and one read, where
// the block kernel's online pass takes two exps an element and reads the row
// again. The same edge values: a NaN or a +inf makes the whole row NaN (the
// max is NaN, or inf - inf is, and so is the sum every output divides by);
// an entirely -inf row gives 0s (log-softmax: -inf).
template <int kPerLane>
__global__ void softmax_warp_kernel(RowOut y, const float* x, MaskRows mask, int64_t rows, int64_t n, bool log,
                                    RowOut out, DropoutMask drop) {
  using Threads = RowThreads<true>;
  const int lane = Threads::lane();
  const uint64_t stream = drop.stream();
  // Element t of a lane is lane + 32 t of the row; it exists where 32 t < left.
  // (32-bit offsets from the lane's first element: n <= 1024 here, and each
  // element's address is then its base plus a constant.)
  const int left = static_cast<int>(n) - lane;
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
    const float* xl = x + row * n + lane;
    const float* ml = nullptr;
    if (mask.data != nullptr) {
      int64_t offset[1];
      mask.rows.offsets(row, offset);
      ml = mask.data + offset[0] + lane * mask.column_stride;
    }
    const int64_t mask_step = 32 * mask.column_stride;
    float v[kPerLane];
    float max = -INFINITY;
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) {
      v[t] = 32 * t < left ? (ml != nullptr ? xl[32 * t] + ml[t * mask_step] : xl[32 * t]) : -INFINITY;
      max = max_keeping_nan(max, v[t]);
    }
    max = shuffle_broadcast(warp_reduce(max, MaxKeepingNan{}), 0);
    const int64_t first = row * n + lane;  // element t of the lane: first + 32 t
    if (max == -INFINITY) {  // every position masked out
#pragma unroll
      for (int t = 0; t < kPerLane; ++t)
        if (32 * t < left) {
          y.store(first + 32 * t, log ? -INFINITY : 0.0f);
          if (out.defined()) out.store(first + 32 * t, 0.0f);
        }
      continue;
    }
    float sum = 0.0f;
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) {
      const float d = v[t] - max;  // -inf past the row's end: exp gives 0
      const float e = expf(d);
      sum += e;
      v[t] = log ? d : e;
    }
    sum = shuffle_broadcast(warp_reduce(sum, SumCombine{}), 0);
    const float log_sum = logf(sum), inv = 1.0f / sum;
#pragma unroll
    for (int t = 0; t < kPerLane; ++t)
      if (32 * t < left) {
        const float value = log ? v[t] - log_sum : v[t] * inv;
        y.store(first + 32 * t, value);
        if (out.defined()) out.store(first + 32 * t, drop.apply(value, first + 32 * t, stream));
      }
  }
}

// softmax:     gx = y * (gy - sum(gy * y))
// log-softmax: gx = gy - exp(y) * sum(gy)
// gy passes through dropout's mask as it is read (off: gy itself): the
// backward of dropout(softmax(x)) in one pass.
// A warp per row of n <= 32 kPerLane, y and gy held in registers (read once;
// each lane adds its terms of the dot in element order, as a row loop does).
template <int kPerLane>
__global__ void softmax_backward_warp_kernel(RowOut gx, RowIn y, const float* gy, int64_t rows, int64_t n,
                                             bool log, DropoutMask mask) {
  using Threads = RowThreads<true>;
  const int lane = Threads::lane();
  const uint64_t stream = mask.stream();
  const int left = static_cast<int>(n) - lane;  // as softmax_warp_kernel's
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
    const int64_t first = row * n + lane;
    float yv[kPerLane], gv[kPerLane];
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) {
      yv[t] = 32 * t < left ? y.load(first + 32 * t) : 0.0f;
      gv[t] = 32 * t < left ? mask.apply(gy[first + 32 * t], first + 32 * t, stream) : 0.0f;
    }
    float dot = 0.0f;
#pragma unroll
    for (int t = 0; t < kPerLane; ++t)
      if (32 * t < left) dot += log ? gv[t] : gv[t] * yv[t];
    dot = Threads::reduce(dot, SumCombine{}, 0.0f);
#pragma unroll
    for (int t = 0; t < kPerLane; ++t)
      if (32 * t < left) gx.store(first + 32 * t, log ? gv[t] - expf(yv[t]) * dot : yv[t] * (gv[t] - dot));
  }
}

// A block per row.
__global__ void softmax_backward_block_kernel(RowOut gx, RowIn y, const float* gy, int64_t rows, int64_t n,
                                              bool log, DropoutMask mask) {
  using Threads = RowThreads<false>;
  const uint64_t stream = mask.stream();
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
    const float* gr = gy + row * n;
    auto g = [&](int64_t j) { return mask.apply(gr[j], row * n + j, stream); };
    auto yr = [&](int64_t j) { return y.load(row * n + j); };
    float dot = 0.0f;
    for (int64_t j = Threads::lane(); j < n; j += Threads::width()) dot += log ? g(j) : g(j) * yr(j);
    dot = Threads::reduce(dot, SumCombine{}, 0.0f);
    for (int64_t j = Threads::lane(); j < n; j += Threads::width())
      gx.store(row * n + j, log ? g(j) - expf(yr(j)) * dot : yr(j) * (g(j) - dot));
  }
}

}  // namespace

namespace {
// y, gx or out as a RowOut: f32, or bf16 (undefined: none).
RowOut row_out(const Tensor& t, const char* what) {
  RowOut o;
  if (!t.defined()) return o;
  if (t.dtype() == DType::bf16) {
    o.h = static_cast<uint16_t*>(t.raw_data());
  } else {
    require_f32(t.dtype(), what);
    o.f = t.data<float>();
  }
  return o;
}

// y as the backward reads it: f32, or bf16.
RowIn row_in(const Tensor& t, const char* what) {
  RowIn in;
  if (t.dtype() == DType::bf16) {
    in.h = static_cast<const uint16_t*>(t.raw_data());
  } else {
    require_f32(t.dtype(), what);
    in.f = t.data<float>();
  }
  return in;
}
}  // namespace

void softmax(const Tensor& y, const Tensor& x, const Tensor& mask, bool log, const Tensor& out, double p,
             const PhiloxStream& dropout) {
  require_f32(x.dtype(), "softmax");
  const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
  MaskRows m;
  if (mask.defined()) {
    require_f32(mask.dtype(), "softmax (mask)");
    Shape row_shape(x.shape().begin(), x.shape().end() - 1);
    Shape row_strides(mask.strides().begin(), mask.strides().end() - 1);
    m.data = mask.data<float>();
    m.rows = make_indexer<1>(row_shape, {&row_strides});
    m.column_stride = mask.strides().back();
  }
  DeviceContext& ctx = context(x);
  const RowOut ys = row_out(y, "softmax (y)");
  const float* xs = x.data<float>();
  const RowOut o = row_out(out, "softmax (out)");
  const DropoutMask drop = dropout_mask(p, dropout);
  launch_rows(rows, n, ctx, [&](bool warp_per_row, unsigned grid, int threads) {
    if (warp_per_row) {
      with_lane_count(n, [&](auto per_lane) {
        [[maybe_unused]] constexpr int P = decltype(per_lane)::value;  // g++: used in a template argument
        ORDO_LAUNCH(softmax_warp_kernel<P>, grid, threads, 0, ctx.stream, ys, xs, m, rows, n, log, o, drop);
      });
    } else {
      ORDO_LAUNCH(softmax_block_kernel, grid, threads, 0, ctx.stream, ys, xs, m, rows, n, log, o, drop);
    }
  });
}

void softmax_backward(const Tensor& gx, const Tensor& y, const Tensor& gy, bool log, double p,
                      const PhiloxStream& dropout) {
  require_f32(gy.dtype(), "softmax_backward");
  const int64_t n = y.size(-1), rows = n ? y.numel() / n : 0;
  DeviceContext& ctx = context(y);
  const RowOut g = row_out(gx, "softmax_backward (gx)");
  const RowIn ys = row_in(y, "softmax_backward (y)");
  const float* gys = gy.data<float>();
  const DropoutMask mask = dropout_mask(p, dropout);
  launch_rows(rows, n, ctx, [&](bool warp_per_row, unsigned grid, int threads) {
    if (warp_per_row) {
      with_lane_count(n, [&](auto per_lane) {
        [[maybe_unused]] constexpr int P = decltype(per_lane)::value;  // g++: used in a template argument
        ORDO_LAUNCH(softmax_backward_warp_kernel<P>, grid, threads, 0, ctx.stream, g, ys, gys, rows, n, log, mask);
      });
    } else {
      ORDO_LAUNCH(softmax_backward_block_kernel, grid, threads, 0, ctx.stream, g, ys, gys, rows, n, log, mask);
    }
  });
}

}  // namespace ordo::cuda
