// CPU softmax / log-softmax over the last axis, with an optional additive
// mask, and their backward. One row per task; each row is three passes
// (max, sum of exponentials, normalise) in a fixed order.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "tensor/cpu/common.h"

namespace ordo::cpu {

void softmax(const Tensor& y, const Tensor& x, const Tensor& mask, bool log, const Tensor& out, double p,
             const PhiloxStream& stream) {
  const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
  // The mask is a strided view of x's shape; rows of x map to rows of the
  // mask through an indexer over all axes but the last.
  Shape row_shape(x.shape().begin(), x.shape().end() - 1);
  Shape mask_row_strides;
  int64_t mask_col_stride = 0;
  if (mask.defined()) {
    mask_row_strides.assign(mask.strides().begin(), mask.strides().end() - 1);
    mask_col_stride = mask.strides().back();
  }
  Shape x_row_strides = contiguous_strides(row_shape);
  auto rows_ix = make_indexer<2>(row_shape, {&x_row_strides, mask.defined() ? &mask_row_strides : &x_row_strides});
  // A bf16 y (kept so for the backward) is the f32 values' rounding, and
  // without dropout so is a bf16 `out`: each written row by row while the
  // row is in cache. The f32 values of a bf16 y go to a row buffer, or with
  // dropout (which reads them whole after) to scratch.
  const bool y_rounded = y.dtype() == DType::bf16;
  const Tensor values = !y_rounded ? y : p > 0 ? Tensor::empty(y.shape(), x.dtype()) : Tensor();
  uint16_t* rounded = y_rounded                    ? static_cast<uint16_t*>(y.raw_data())
                      : out.defined() && p == 0 ? static_cast<uint16_t*>(out.raw_data())
                                                : nullptr;

  dispatch_float(x.dtype(), "softmax", [&](auto tag) {
    using T = decltype(tag);
    const T* xs = x.data<T>();
    T* ys = values.defined() ? values.data<T>() : nullptr;
    const T* ms = mask.defined() ? mask.data<T>() : nullptr;
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      std::vector<T> row_buffer(ys ? 0 : n);
      for (int64_t row = b; row < e; ++row) {
        const T* xr = xs + row * n;
        T* yr = ys ? ys + row * n : row_buffer.data();
        const T* mr = nullptr;
        if (ms) {
          int64_t off[2];
          rows_ix.offsets(row, off);
          mr = ms + off[1];
        }
        // Passes that each vectorise: scores (+ mask), max, exp, sum, normalise.
        if (mr) {
          for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] + mr[j * mask_col_stride];
        } else {
          for (int64_t j = 0; j < n; ++j) yr[j] = xr[j];
        }
        const T max_value = row_max(yr, n);
        if (max_value == -std::numeric_limits<T>::infinity()) {
          // Every position masked out: a row of zeros rather than NaNs.
          for (int64_t j = 0; j < n; ++j) yr[j] = log ? -std::numeric_limits<T>::infinity() : T(0);
        } else if (log) {
          // log-softmax: (x - max) - log sum exp(x - max); yr keeps x - max.
          for (int64_t j = 0; j < n; ++j) yr[j] -= max_value;
          const T log_sum = std::log(lane_sum<T>(n, [yr](int64_t j) { return math::exp(yr[j]); }));
          for (int64_t j = 0; j < n; ++j) yr[j] -= log_sum;
        } else {
          for (int64_t j = 0; j < n; ++j) yr[j] = math::exp(yr[j] - max_value);
          const T inv = T(1) / row_sum(yr, n);
          for (int64_t j = 0; j < n; ++j) yr[j] *= inv;
        }
        if constexpr (std::is_same_v<T, float>)
          if (rounded)
            round_into_bf16(rounded + row * n, yr, n);
      }
    });
  });
  // The dropped probabilities: dropout's own kernel on the f32 values (a
  // second pass here; CUDA writes them beside y).
  if (out.defined() && p > 0) dropout(out, values, p, stream);
}

void softmax_backward(const Tensor& gx, const Tensor& y, const Tensor& gy, bool log, double p,
                      const PhiloxStream& stream) {
  const int64_t n = y.size(-1), rows = n ? y.numel() / n : 0;
  // A bf16 gx (a product's operand) is each row's f32 values rounded as the row is done.
  uint16_t* rounded = gx.dtype() == DType::bf16 ? static_cast<uint16_t*>(gx.raw_data()) : nullptr;
  Tensor dropped;  // gy through the mask, as dropout's backward writes it
  if (p > 0) {
    dropped = Tensor::empty(gy.shape(), gy.dtype());
    dropout(dropped, gy, p, stream);
  }
  const Tensor& g = p > 0 ? dropped : gy;
  // A bf16 y (softmax's kept rounding) is widened row by row, exactly.
  const uint16_t* y16 = y.dtype() == DType::bf16 ? static_cast<const uint16_t*>(y.raw_data()) : nullptr;
  dispatch_float(gy.dtype(), "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* ys = y16 ? nullptr : y.data<T>();
    const T* gys = g.data<T>();
    T* gxs = rounded ? nullptr : gx.data<T>();
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      std::vector<T> row_values(rounded ? n : 0), widened(y16 ? n : 0);
      for (int64_t row = b; row < e; ++row) {
        if (y16)
          for (int64_t j = 0; j < n; ++j) widened[j] = static_cast<T>(bf16_to_f32(y16[row * n + j]));
        const T* yr = y16 ? widened.data() : ys + row * n;
        const T* gr = gys + row * n;
        T* out = rounded ? row_values.data() : gxs + row * n;
        if (log) {
          // d/dx of log-softmax: gy - softmax * sum(gy); softmax = exp(y) (0 where y = -inf).
          const T total = row_sum(gr, n);
          for (int64_t j = 0; j < n; ++j) out[j] = gr[j] - math::exp(yr[j]) * total;
        } else {
          const T dot = lane_sum<T>(n, [gr, yr](int64_t j) { return gr[j] * yr[j]; });
          for (int64_t j = 0; j < n; ++j) out[j] = yr[j] * (gr[j] - dot);
        }
        if constexpr (std::is_same_v<T, float>)
          if (rounded)
            round_into_bf16(rounded + row * n, out, n);
      }
    });
  });
}

}  // namespace ordo::cpu
