// CUDA softmax / log-softmax over the last axis, with an optional additive
// mask, and their backward, side by side. Rows are shared out as in rows.cuh
// (a warp per row up to 1024 elements, a block per row beyond).
//
// forward, per row: one pass keeps the online (max, sum of exp(v - max)) of
// v = x + mask, a fixed-order reduction combines the threads' pairs, and a
// second pass writes exp(v - max) / sum (or v - max - log(sum)). A row that
// is entirely -inf gives 0s (log-softmax: -inf), as the CPU.
// backward, per row: one reduction (sum of gy * y, or of gy), then the write.
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

template <bool kWarpPerRow>
__global__ void softmax_kernel(float* y, const float* x, MaskRows mask, int64_t rows, int64_t n,
                               bool log) {
  using Threads = RowThreads<kWarpPerRow>;
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
    const float* xr = x + row * n;
    float* yr = y + row * n;
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
      for (int64_t j = Threads::lane(); j < n; j += Threads::width()) yr[j] = log ? -INFINITY : 0.0f;
    } else if (log) {
      const float log_sum = logf(stats.sum);
      for (int64_t j = Threads::lane(); j < n; j += Threads::width()) yr[j] = (value(j) - stats.max) - log_sum;
    } else {
      const float inv = 1.0f / stats.sum;
      for (int64_t j = Threads::lane(); j < n; j += Threads::width()) yr[j] = expf(value(j) - stats.max) * inv;
    }
  }
}

// softmax:     gx = y * (gy - sum(gy * y))
// log-softmax: gx = gy - exp(y) * sum(gy)
template <bool kWarpPerRow>
__global__ void softmax_backward_kernel(float* gx, const float* y, const float* gy, int64_t rows,
                                        int64_t n, bool log) {
  using Threads = RowThreads<kWarpPerRow>;
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
    const float* yr = y + row * n;
    const float* gr = gy + row * n;
    float* out = gx + row * n;
    float dot = 0.0f;
    for (int64_t j = Threads::lane(); j < n; j += Threads::width()) dot += log ? gr[j] : gr[j] * yr[j];
    dot = Threads::reduce(dot, SumCombine{}, 0.0f);
    for (int64_t j = Threads::lane(); j < n; j += Threads::width())
      out[j] = log ? gr[j] - expf(yr[j]) * dot : yr[j] * (gr[j] - dot);
  }
}

}  // namespace

void softmax(const Tensor& y, const Tensor& x, const Tensor& mask, bool log) {
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
  float* ys = y.data<float>();
  const float* xs = x.data<float>();
  launch_rows(rows, n, ctx, [&](bool warp_per_row, unsigned grid, int threads) {
    if (warp_per_row) {
      ORDO_LAUNCH(softmax_kernel<true>, grid, threads, 0, ctx.stream, ys, xs, m, rows, n, log);
    } else {
      ORDO_LAUNCH(softmax_kernel<false>, grid, threads, 0, ctx.stream, ys, xs, m, rows, n, log);
    }
  });
}

void softmax_backward(const Tensor& gx, const Tensor& y, const Tensor& gy, bool log) {
  require_f32(y.dtype(), "softmax_backward");
  const int64_t n = y.size(-1), rows = n ? y.numel() / n : 0;
  DeviceContext& ctx = context(y);
  float* g = gx.data<float>();
  const float* ys = y.data<float>();
  const float* gys = gy.data<float>();
  launch_rows(rows, n, ctx, [&](bool warp_per_row, unsigned grid, int threads) {
    if (warp_per_row) {
      ORDO_LAUNCH(softmax_backward_kernel<true>, grid, threads, 0, ctx.stream, g, ys, gys, rows, n, log);
    } else {
      ORDO_LAUNCH(softmax_backward_kernel<false>, grid, threads, 0, ctx.stream, g, ys, gys, rows, n, log);
    }
  });
}

}  // namespace ordo::cuda
