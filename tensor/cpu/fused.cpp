// CPU fused transformer pieces (tensor/kernels.inc): each is the unfused
// path's own kernels run in sequence — the same roundings in the same order,
// so on the CPU the fused and unfused paths agree but for the product's bias
// (added after the product here, onto it there) — and the CUDA kernels'
// reference (tensor/cuda/fused.cu).
#include <type_traits>
#include <vector>

#include "tensor/cpu/common.h"
#include "tensor/cpu/gelu.h"

namespace ordo::cpu {

namespace {

// Runs body(row) over the rows of a [rows, n] operand in parallel, the
// elementwise grain's worth of elements per task.
template <class Body>
void for_rows(int64_t rows, int64_t n, const Body& body) {
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) body(r);
  });
}

// Row r of a contiguous [rows, n] tensor as T values: its own row, or a bf16
// one (a product's bf16 output, T = float) widened into `buffer` — read as
// the CUDA kernels read it, without an f32 copy of the whole tensor.
template <class T>
const T* row_values(const Tensor& t, int64_t r, int64_t n, std::vector<float>& buffer) {
  if (t.dtype() != DType::bf16) return t.data<T>() + r * n;
  if constexpr (std::is_same_v<T, float>) {
    buffer.resize(static_cast<size_t>(n));
    const uint16_t* in = static_cast<const uint16_t*>(t.raw_data()) + r * n;
    for (int64_t j = 0; j < n; ++j) buffer[j] = bf16_to_f32(in[j]);
    return buffer.data();
  }
  throw Error("internal error: a bf16 row read as f64");
}

}  // namespace

void residual_layernorm(const Tensor& y, const Tensor& s, const Tensor& mean, const Tensor& rstd,
                        const Tensor& h, const Tensor& bias, const Tensor& residual, const Tensor& gamma,
                        const Tensor& beta, double p, const PhiloxStream& stream, double eps, const Tensor& y16) {
  const int64_t n = h.size(-1), count = h.numel();
  dispatch_float(residual.dtype(), "residual_layernorm", [&](auto tag) {  // h's, or f32 beside a bf16 h
    using T = decltype(tag);
    T* ss = s.data<T>();
    const T* b = bias.defined() ? bias.data<T>() : nullptr;
    for_rows(n ? count / n : 0, n, [&](int64_t r) {
      thread_local std::vector<float> wide;
      T* sr = ss + r * n;
      const T* hr = row_values<T>(h, r, n, wide);
      if (b) {
        for (int64_t j = 0; j < n; ++j) sr[j] = hr[j] + b[j];
      } else {
        for (int64_t j = 0; j < n; ++j) sr[j] = hr[j];
      }
    });
    if (p > 0) dropout(s, s, p, stream);
    const T* r = residual.data<T>();
    parallel_for(count, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) ss[i] = r[i] + ss[i];
    });
  });
  layernorm(y, mean, rstd, s, gamma, beta, eps, y16);
}

void residual_layernorm_backward(const Tensor& gs, const Tensor& gh, const Tensor& gbias, const Tensor& ggamma,
                                 const Tensor& gbeta, const Tensor& gy, const Tensor& s, const Tensor& mean,
                                 const Tensor& rstd, const Tensor& gamma, double p, const PhiloxStream& stream) {
  layernorm_backward(gs, ggamma, gbeta, gy, s, mean, rstd, gamma);
  // h's gradient in gs's dtype (rounded into a bf16 gh afterwards: by the
  // bias's column sums as they read it, where there is a bias).
  const Tensor g_h = !gh.defined() || p == 0 ? gs : f32_target(gh);
  if (p > 0) dropout(g_h, gs, p, stream);
  if (!gbias.defined()) {
    if (gh.defined()) finish_rounded(gh, g_h);
    return;
  }
  uint16_t* rounded = gh.defined() && gh.dtype() == DType::bf16 ? static_cast<uint16_t*>(gh.raw_data()) : nullptr;
  const int64_t n = gs.size(-1);
  dispatch_float(gs.dtype(), "residual_layernorm_backward", [&](auto tag) {
    using T = decltype(tag);
    column_sums(gbias.data<T>(), g_h.data<T>(), n ? g_h.numel() / n : 0, n, rounded);
  });
}

// o[j] = F(x[j] + b[j]) for j < n: GELU in f32 through cpu::gelu_row (the
// unary op's own rows), the others element by element in loops the compiler
// vectorises.
template <class F, class T>
void activation_row(T* o, const T* x, const T* b, int64_t n) {
  if constexpr (uses_gelu_row<F, T>) {
    gelu_row(o, x, b, n);
  } else {
    for (int64_t j = 0; j < n; ++j) o[j] = F::f(x[j] + b[j], {});
  }
}

// Row by row, the bias indexed by column (a bf16 x widened a row at a time).
void bias_activation(const Tensor& y, const Tensor& x, const Tensor& bias, UnaryOp act) {
  const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
  dispatch_float(bias.dtype(), "bias_activation", [&](auto tag) {  // x's, or f32 beside a bf16 x
    using T = decltype(tag);
    const T* b = bias.data<T>();
    visit_activation(act, [&](auto f) {
      using F = decltype(f);
      if (y.dtype() == DType::bf16) {
        // The f32 values a chunk at a time, rounded while in L1.
        constexpr int64_t kChunk = 1024;
        uint16_t* out = static_cast<uint16_t*>(y.raw_data());
        for_rows(rows, n, [&](int64_t r) {
          thread_local std::vector<float> wide;
          const T* xr = row_values<T>(x, r, n, wide);
          T values[kChunk];
          for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
            const int64_t width = std::min(kChunk, n - j0);
            activation_row<F>(values, xr + j0, b + j0, width);
            for (int64_t j = 0; j < width; ++j) out[r * n + j0 + j] = f32_to_bf16(static_cast<float>(values[j]));
          }
        });
      } else {  // y in x's dtype: x is not bf16
        T* out = y.data<T>();
        const T* xs = x.data<T>();
        for_rows(rows, n, [&](int64_t r) { activation_row<F>(out + r * n, xs + r * n, b, n); });
      }
    });
  });
}

// The unfused kernels in order: the cast (as x.to(bf16)), the column sums (as sum(x, {0})).
void operand_column_sums(const Tensor& operand, const Tensor& sums, const Tensor& x) {
  copy(operand, x);
  reduce(ReduceOp::sum, sums, x, 1, x.size(0), x.size(1), 0);
}

void bias_activation_backward(const Tensor& gx, const Tensor& gbias, const Tensor& gy, const Tensor& x,
                              const Tensor& bias, UnaryOp act) {
  const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
  // A bf16 gx (a product's operand) is rounded row by row from the f32
  // values the bias's gradient sums, while the row is in the cache.
  const Tensor g_x = f32_target(gx);
  uint16_t* rounded = gx.dtype() == DType::bf16 ? static_cast<uint16_t*>(gx.raw_data()) : nullptr;
  dispatch_float(bias.dtype(), "bias_activation_backward", [&](auto tag) {  // x's, or f32 beside a bf16 x
    using T = decltype(tag);
    const T* b = bias.data<T>();
    T* out = g_x.data<T>();
    visit_activation(act, [&](auto f) {
      using F = decltype(f);
      for_rows(rows, n, [&](int64_t r) {
        thread_local std::vector<float> wide_x, wide_g;  // gy and x bf16: a product's output and its gradient
        const T* xr = row_values<T>(x, r, n, wide_x);
        const T* gr = row_values<T>(gy, r, n, wide_g);
        T* o = out + r * n;
        if constexpr (uses_gelu_row<F, T>) {
          gelu_backward_row(o, gr, xr, b, n);
        } else {
          for (int64_t j = 0; j < n; ++j) {
            const T u = xr[j] + b[j];
            o[j] = gr[j] * F::df(u, F::f(u, {}), {});
          }
        }
        if constexpr (std::is_same_v<T, float>)
          if (rounded) round_into_bf16(rounded + r * n, o, n);
      });
    });
    column_sums(gbias.data<T>(), out, rows, n);
  });
}

// heads [P, B, H, L, d] <-> x [B, L, P H d]: part p's head h at row (b, l)
// is x's columns (p H + h) d .. + d. Both kernels walk the heads' rows (one
// (p, b, h, l) each) and copy d contiguous elements.
struct HeadRows {
  int64_t parts, batch, heads, length, width;
  explicit HeadRows(const Tensor& heads_tensor)
      : parts(heads_tensor.size(0)), batch(heads_tensor.size(1)), heads(heads_tensor.size(2)),
        length(heads_tensor.size(3)), width(heads_tensor.size(4)) {}
  int64_t count() const { return parts * batch * heads * length; }
  // Where row r of the heads (r = ((p B + b) H + h) L + l) starts in x.
  int64_t x_offset(int64_t r) const {
    const int64_t l = r % length, h = r / length % heads, b = r / (length * heads) % batch;
    const int64_t p = r / (length * heads * batch);
    return (b * length + l) * parts * heads * width + (p * heads + h) * width;
  }
  int64_t column(int64_t r) const { return x_offset(r) % (parts * heads * width); }
  // body(r) for every row, shared out among the threads.
  template <class Body>
  void each(const Body& body) const {
    parallel_for(count(), std::max<int64_t>(1, kElementwiseGrain / width), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) body(r);
    });
  }
};

// bf16 heads (the products' operands) are rounded as each row is written,
// and a bf16 gx as the bias's column sums read it: no f32 copy of either.
void split_heads(const Tensor& heads, const Tensor& x, const Tensor& bias) {
  const HeadRows rows(heads);
  uint16_t* rounded = heads.dtype() == DType::bf16 ? static_cast<uint16_t*>(heads.raw_data()) : nullptr;
  dispatch_float(x.dtype(), "split_heads", [&](auto tag) {
    using T = decltype(tag);
    T* out = rounded ? nullptr : heads.data<T>();
    const T* xs = x.data<T>();
    const T* b = bias.defined() ? bias.data<T>() : nullptr;
    const int64_t d = rows.width;
    rows.each([&](int64_t r) {
      const T* from = xs + rows.x_offset(r);
      const T* bias_row = b ? b + rows.column(r) : nullptr;
      if (rounded) {
        uint16_t* to = rounded + r * d;
        for (int64_t e = 0; e < d; ++e)
          to[e] = f32_to_bf16(static_cast<float>(bias_row ? from[e] + bias_row[e] : from[e]));
      } else {
        T* to = out + r * d;
        for (int64_t e = 0; e < d; ++e) to[e] = bias_row ? from[e] + bias_row[e] : from[e];
      }
    });
  });
}

void split_heads_backward(const Tensor& gx, const Tensor& gbias, const Tensor& gheads) {
  const HeadRows rows(gheads);
  const Tensor target = f32_target(gx);
  uint16_t* rounded = gx.dtype() == DType::bf16 && gbias.defined() ? static_cast<uint16_t*>(gx.raw_data()) : nullptr;
  dispatch_float(gheads.dtype(), "split_heads_backward", [&](auto tag) {
    using T = decltype(tag);
    T* out = target.data<T>();
    const T* g = gheads.data<T>();
    const int64_t d = rows.width;
    rows.each([&](int64_t r) { std::copy(g + r * d, g + (r + 1) * d, out + rows.x_offset(r)); });
    if (gbias.defined())
      column_sums(gbias.data<T>(), out, rows.batch * rows.length, rows.parts * rows.heads * d, rounded);
  });
  if (!rounded) finish_rounded(gx, target);
}

// The unfused kernels in sequence: bias_activation, then layernorm.
void bias_activation_layernorm(const Tensor& y, const Tensor& t, const Tensor& mean, const Tensor& rstd,
                               const Tensor& x, const Tensor& bias, UnaryOp act, const Tensor& gamma,
                               const Tensor& beta, double eps, const Tensor& y16) {
  bias_activation(t, x, bias, act);
  layernorm(y, mean, rstd, t, gamma, beta, eps, y16);
}

void bias_activation_layernorm_backward(const Tensor& gx, const Tensor& gbias, const Tensor& ggamma,
                                        const Tensor& gbeta, const Tensor& gt, const Tensor& gy, const Tensor& x,
                                        const Tensor& bias, UnaryOp act, const Tensor& t, const Tensor& mean,
                                        const Tensor& rstd, const Tensor& gamma) {
  layernorm_backward(gt, ggamma, gbeta, gy, t, mean, rstd, gamma);
  bias_activation_backward(gx, gbias, gt, x, bias, act);
}

// The unfused kernels in sequence: embedding_sum, layernorm, dropout (y's
// rounding taken from the dropped values).
void embedding_layernorm(const Tensor& y, const Tensor& s, const Tensor& mean, const Tensor& rstd,
                         const std::vector<Tensor>& tables, const std::vector<Tensor>& ids, const Tensor& gamma,
                         const Tensor& beta, double eps, double p, const PhiloxStream& stream, const Tensor& y16) {
  embedding_sum(s, tables, ids);
  layernorm(y, mean, rstd, s, gamma, beta, eps, p > 0 ? Tensor() : y16);
  if (p == 0) return;
  if (y16.defined()) dropout(y16, y, p, stream);
  dropout(y, y, p, stream);
}

void embedding_layernorm_backward(const std::vector<Tensor>& grads, const Tensor& ggamma, const Tensor& gbeta,
                                  const Tensor& gs, const Tensor& gy, const Tensor& s, const Tensor& mean,
                                  const Tensor& rstd, const Tensor& gamma, double p, const PhiloxStream& stream,
                                  const std::vector<Tensor>& ids, const std::vector<int64_t>& skip_rows,
                                  const std::vector<bool>& onto) {
  Tensor g = gy;
  if (p > 0) {
    g = Tensor::empty(gy.shape(), gy.dtype());
    dropout(g, gy, p, stream);
  }
  layernorm_backward(gs, ggamma, gbeta, g, s, mean, rstd, gamma);
  embedding_sum_backward(grads, gs, ids, skip_rows, onto);
}

}  // namespace ordo::cpu
