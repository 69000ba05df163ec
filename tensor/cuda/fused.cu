// CUDA fused transformer pieces (tensor/kernels.inc), forward and backward
// side by side, with the formulas of the kernels they replace: dropout's
// Philox mask (base/philox.h), LayerNorm's row statistics in double
// (layernorm.cu), the activations of tensor/elementwise_math.h.
//
//   residual_layernorm           1 launch   (unfused: bias copy, dropout, add, layernorm)
//   residual_layernorm_backward  1 launch   (layernorm_backward's 3, dropout's, the bias's sum; 2 for rows > 1024)
//   bias_activation              1 launch   (bias copy, activation)
//   bias_activation_backward     1 launch   (activation's derivative, the bias's sum)
//   bias_activation_layernorm    1 launch   (bias_activation, layernorm)
//   bias_activation_layernorm_backward
//                                1 launch   (layernorm_backward's, bias_activation_backward; 2 for rows > 1024)
//
// Column sums (the bias, gamma and beta gradients): column_sums.cuh.
#include <type_traits>

#include "tensor/cuda/column_sums.cuh"
#include "tensor/cuda/dropout_mask.cuh"
#include "tensor/cuda/rows.cuh"

namespace ordo::cuda {

namespace {

// ---- residual + dropout + LayerNorm ----------------------------------------------------------

// Per row: s = r + mask(h + b) written in one pass that also sums it; the
// squared deviations (re-reading this thread's own s); y. Spec: whether a
// warp takes a row, and h's element type (float, or uint16_t for a product's
// bf16 output), as one template argument (a launch's kernel name has no commas).
template <bool kWarpPerRow, class HElement>
struct ResidualRows {
  static constexpr bool kWarp = kWarpPerRow;
  using H = HElement;
};

template <class Spec>
__global__ void residual_layernorm_kernel(float* y, uint16_t* y16, float* s, float* mean, float* rstd,
                                          const typename Spec::H* h, const float* bias, const float* residual,
                                          const float* gamma, const float* beta, int64_t rows, int64_t n, double eps,
                                          DropoutMask mask) {
  using Threads = RowThreads<Spec::kWarp>;
  const uint64_t stream = mask.stream();
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
    float* sr = s + row * n;
    double sum = 0.0;
    for (int64_t j = Threads::lane(); j < n; j += Threads::width()) {
      const float hv = f32_value(h[row * n + j]);
      const float v = bias ? hv + bias[j] : hv;
      sr[j] = residual[row * n + j] + mask.apply(v, row * n + j, stream);
      sum += sr[j];
    }
    layernorm_row<Threads>(y + row * n, mean, rstd, row, sr, gamma, beta, n, eps, sum, y16 ? y16 + row * n : nullptr);
  }
}

// One row: gs = layernorm's gx (its two row means in double), gh = mask(gs)
// in f32 (gh) or rounded to bf16 (gh16), or neither.
template <class Threads>
__device__ __forceinline__ void residual_layernorm_backward_row(float* gs, float* gh, uint16_t* gh16, const float* gy,
                                                                const float* s, const float* mean, const float* rstd,
                                                                const float* gamma, int64_t row, int64_t n,
                                                                const DropoutMask& mask) {
  const uint64_t stream = mask.stream();
  const float* xr = s + row * n;
  const float* gr = gy + row * n;
  const float m = mean[row], r = rstd[row];
  const LayerNormRowMeans means = layernorm_backward_means<Threads>(xr, gr, m, r, gamma, n);
  for (int64_t j = Threads::lane(); j < n; j += Threads::width()) {
    const float xhat = (xr[j] - m) * r;
    const float g = r * (gr[j] * gamma[j] - means.a - xhat * means.c);
    gs[row * n + j] = g;
    if (gh) gh[row * n + j] = mask.apply(g, row * n + j, stream);
    if (gh16) gh16[row * n + j] = bf16_bits(mask.apply(g, row * n + j, stream));
  }
}

// Rows longer than a warp takes: a block per row; the column sums in a second launch.
__global__ void residual_layernorm_backward_kernel(float* gs, float* gh, uint16_t* gh16, const float* gy,
                                                   const float* s, const float* mean, const float* rstd,
                                                   const float* gamma, int64_t rows, int64_t n, DropoutMask mask) {
  using Threads = RowThreads<false>;
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride())
    residual_layernorm_backward_row<Threads>(gs, gh, gh16, gy, s, mean, rstd, gamma, row, n, mask);
}

// The column sums of the backward: gy * xhat (gamma), gy (beta), and
// mask(gs) (the bias: h's gradient before any rounding to bf16).
struct ResidualLayerNormSums {
  static constexpr int kSums = 3;
  LayerNormParamSums norm;  // its x: s, the LayerNorm's input
  const float* gs;
  DropoutMask mask;
  __device__ __forceinline__ void operator()(int64_t row, int64_t column, double (&sums)[3]) const {
    norm.add(row, column, sums[0], sums[1]);
    const int64_t i = row * norm.n + column;
    sums[2] += mask.apply(gs[i], i, mask.stream());
  }
};

// Rows a warp takes: the rows and their column sums (which read gs) in one
// launch (rows_and_column_sums).
struct ResidualLayerNormBackward : ResidualLayerNormSums {
  float* gs_out;  // gs, written by row()
  float* gh;
  uint16_t* gh16;
  const float* gamma;
  __device__ __forceinline__ void row(int64_t r) const {
    residual_layernorm_backward_row<RowThreads<true>>(gs_out, gh, gh16, norm.gy, norm.x, norm.mean, norm.rstd, gamma,
                                                      r, norm.n, mask);
  }
};

// ---- bias + activation -----------------------------------------------------------------------

// The activation, the input's and the output's element types (float, or
// uint16_t for bf16) and whether the elements are counted in 32 bits, as one
// template argument (a launch's kernel name is written without commas).
template <class Activation, class InElement, class OutElement, bool kNarrowIndex>
struct BiasActivation {
  using Op = Activation;
  using In = InElement;
  using Out = OutElement;
  static constexpr bool kNarrow = kNarrowIndex;
};

template <class Spec>
__global__ void bias_activation_kernel(typename Spec::Out* y, const typename Spec::In* x, const float* bias,
                                       int64_t count, int64_t n) {
  using Op = typename Spec::Op;
  for (int64_t i = global_thread_index(); i < count; i += grid_thread_count()) {
    // The bias's column: a 64-bit i % n costs more than the activation, a
    // 32-bit one a few times less.
    const int64_t column = Spec::kNarrow ? static_cast<uint32_t>(i) % static_cast<uint32_t>(n) : i % n;
    const float v = Op::f(f32_value(x[i]) + bias[column], UnaryParams{});
    if constexpr (sizeof(typename Spec::Out) == 2) {
      y[i] = bf16_bits(v);
    } else {
      y[i] = v;
    }
  }
}

// gx = gy * act'(x + b) in f32 (gx) or rounded to bf16 (gx16), written
// while the bias's column sums (of the f32 values) are taken. gy and x: In
// (float, or uint16_t for a bf16 product output and its gradient).
template <class Op, class In>
struct BiasActivationBackward {
  static constexpr int kSums = 1;
  float* gx;
  uint16_t* gx16;
  const In *gy, *x;
  const float* bias;
  int64_t n;
  __device__ __forceinline__ void operator()(int64_t row, int64_t column, double (&sums)[1]) const {
    const int64_t i = row * n + column;
    const float u = f32_value(x[i]) + bias[column];
    const float g = f32_value(gy[i]) * Op::df(u, Op::f(u, UnaryParams{}), UnaryParams{});
    if (gx16) {
      gx16[i] = bf16_bits(g);
    } else {
      gx[i] = g;
    }
    sums[0] += g;
  }
};

// ---- bias + activation + LayerNorm (an MLM head's transform) --------------------------------

// The activation and whether a warp takes a row, as one template argument.
template <class Activation, bool kWarpPerRowArg>
struct ActivationRows {
  using Op = Activation;
  static constexpr bool kWarpPerRow = kWarpPerRowArg;
};

// Per row: t = act(x + b) written in one pass that also sums it; then
// LayerNorm's row (its squared deviations re-reading this thread's own t).
template <class Spec>
__global__ void bias_activation_layernorm_kernel(float* y, uint16_t* y16, float* t, float* mean, float* rstd,
                                                 const float* x, const float* bias, const float* gamma,
                                                 const float* beta, int64_t rows, int64_t n, double eps) {
  using Threads = RowThreads<Spec::kWarpPerRow>;
  using Op = typename Spec::Op;
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
    float* tr = t + row * n;
    double sum = 0.0;
    for (int64_t j = Threads::lane(); j < n; j += Threads::width()) {
      tr[j] = Op::f(x[row * n + j] + bias[j], UnaryParams{});
      sum += tr[j];
    }
    layernorm_row<Threads>(y + row * n, mean, rstd, row, tr, gamma, beta, n, eps, sum, y16 ? y16 + row * n : nullptr);
  }
}

// act'(x + b) times g: the activation's backward of element i (column j).
template <class Op>
__device__ __forceinline__ float activation_gradient(float g, const float* x, const float* bias, int64_t i, int64_t j) {
  const float u = x[i] + bias[j];
  return g * Op::df(u, Op::f(u, UnaryParams{}), UnaryParams{});
}

// What the transform's backward reads and writes (tensors of kernels.inc's
// bias_activation_layernorm_backward).
struct TransformOperands {
  LayerNormParamSums norm;  // its x: t, the LayerNorm's input
  float *gt, *gx;
  uint16_t* gx16;
  const float *x, *bias, *gamma;
};

// One row: gt = layernorm's gx (its two row means in double), gx = gt
// act'(x + b) in f32 (gx) or rounded to bf16 (gx16).
template <class Threads, class Op>
__device__ __forceinline__ void bias_activation_layernorm_backward_row(const TransformOperands& a,
                                                                       int64_t row) {
  const int64_t n = a.norm.n;
  const float* tr = a.norm.x + row * n;
  const float* gr = a.norm.gy + row * n;
  const float m = a.norm.mean[row], r = a.norm.rstd[row];
  const LayerNormRowMeans means = layernorm_backward_means<Threads>(tr, gr, m, r, a.gamma, n);
  for (int64_t j = Threads::lane(); j < n; j += Threads::width()) {
    const int64_t i = row * n + j;
    const float xhat = (tr[j] - m) * r;
    const float g = r * (gr[j] * a.gamma[j] - means.a - xhat * means.c);
    a.gt[i] = g;
    const float gx = activation_gradient<Op>(g, a.x, a.bias, i, j);
    if (a.gx16) {
      a.gx16[i] = bf16_bits(gx);
    } else {
      a.gx[i] = gx;
    }
  }
}

// Rows longer than a warp takes: a block per row; the column sums in a second launch.
template <class Op>
__global__ void bias_activation_layernorm_backward_kernel(TransformOperands a, int64_t rows) {
  using Threads = RowThreads<false>;
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride())
    bias_activation_layernorm_backward_row<Threads, Op>(a, row);
}

// The column sums: gy xhat (gamma), gy (beta) and gx's unrounded values (the
// bias: gt act'(x + b), recomputed from the gt the rows wrote). With row():
// the rows and their sums in one launch (rows_and_column_sums).
template <class Op>
struct BiasActivationLayerNormBackward {
  static constexpr int kSums = 3;
  TransformOperands a;
  __device__ __forceinline__ void row(int64_t r) const {
    bias_activation_layernorm_backward_row<RowThreads<true>, Op>(a, r);
  }
  __device__ __forceinline__ void operator()(int64_t row, int64_t column, double (&sums)[3]) const {
    a.norm.add(row, column, sums[0], sums[1]);
    const int64_t i = row * a.norm.n + column;
    sums[2] += activation_gradient<Op>(a.gt[i], a.x, a.bias, i, column);
  }
};

// heads [P, B, H, L, d] <-> x [B, L, P H d] (kernels.inc's split_heads).
struct HeadLayout {
  int64_t batch, heads, length, width, columns;  // columns = P H d, x's row
  // x's element (row b L + l, column (p H + h) d + e) in the heads' order.
  __device__ __forceinline__ int64_t heads_index(int64_t row, int64_t column) const {
    const int64_t b = row / length, l = row % length;
    const int64_t p = column / (heads * width), h = column / width % heads, e = column % width;
    return (((p * batch + b) * heads + h) * length + l) * width + e;
  }
};

HeadLayout head_layout(const Tensor& heads) {
  return {heads.size(1), heads.size(2), heads.size(3), heads.size(4), heads.size(0) * heads.size(2) * heads.size(4)};
}

// A thread per element of x (a warp reads 32 columns of one row), written
// where its head takes it, in f32 (heads) or rounded to bf16 (heads16).
__global__ void split_heads_kernel(float* heads, uint16_t* heads16, const float* x, const float* bias, int64_t count,
                                   HeadLayout layout) {
  for (int64_t i = global_thread_index(); i < count; i += grid_thread_count()) {
    const int64_t row = i / layout.columns, column = i % layout.columns;
    const float v = bias != nullptr ? x[i] + bias[column] : x[i];
    const int64_t to = layout.heads_index(row, column);
    if (heads16 != nullptr) {
      heads16[to] = bf16_bits(v);
    } else {
      heads[to] = v;
    }
  }
}

// gx's element (row, column) from the heads' gradient, in f32 (gx) or
// rounded to bf16 (gx16), while the bias's column sums (of the f32 values)
// are taken.
struct SplitHeadsBackward {
  static constexpr int kSums = 1;
  float* gx;
  uint16_t* gx16;
  const float* gheads;
  HeadLayout layout;
  __device__ __forceinline__ void operator()(int64_t row, int64_t column, double (&sums)[1]) const {
    const float g = gheads[layout.heads_index(row, column)];
    const int64_t i = row * layout.columns + column;
    if (gx16) {
      gx16[i] = bf16_bits(g);
    } else {
      gx[i] = g;
    }
    sums[0] += g;
  }
};

}  // namespace

void split_heads(const Tensor& heads, const Tensor& x, const Tensor& bias) {
  require_f32(x.dtype(), "split_heads");
  const int64_t count = x.numel();
  if (count == 0) return;
  DeviceContext& ctx = context(x);
  const bool bf16 = heads.dtype() == DType::bf16;
  ORDO_LAUNCH(split_heads_kernel, grid_for(count, kThreads, ctx), kThreads, 0, ctx.stream,
              bf16 ? nullptr : heads.data<float>(), bf16 ? static_cast<uint16_t*>(heads.raw_data()) : nullptr,
              x.data<float>(), bias.defined() ? bias.data<float>() : nullptr, count, head_layout(heads));
  ORDO_CUDA_CHECK_LAUNCH();
}

void split_heads_backward(const Tensor& gx, const Tensor& gbias, const Tensor& gheads) {
  require_f32(gheads.dtype(), "split_heads_backward");
  const HeadLayout layout = head_layout(gheads);
  const int64_t rows = layout.batch * layout.length;
  if (rows == 0 || layout.columns == 0) return;
  DeviceContext& ctx = context(gheads);
  const bool bf16 = gx.dtype() == DType::bf16;
  const SplitHeadsBackward element{bf16 ? nullptr : gx.data<float>(),
                                   bf16 ? static_cast<uint16_t*>(gx.raw_data()) : nullptr, gheads.data<float>(),
                                   layout};
  column_sums(gheads.device(), ctx, rows, layout.columns,
              ColumnOutputs{{gbias.defined() ? gbias.data<float>() : nullptr, nullptr, nullptr}}, element);
}

void residual_layernorm(const Tensor& y, const Tensor& s, const Tensor& mean, const Tensor& rstd,
                        const Tensor& h, const Tensor& bias, const Tensor& residual, const Tensor& gamma,
                        const Tensor& beta, double p, const PhiloxStream& stream, double eps, const Tensor& y16) {
  const bool bf16_h = h.dtype() == DType::bf16;  // a product's bf16 output
  require_f32(residual.dtype(), "residual_layernorm");
  uint16_t* y16_data = y16.defined() ? static_cast<uint16_t*>(y16.raw_data()) : nullptr;
  const int64_t n = h.size(-1), rows = n ? h.numel() / n : 0;
  DeviceContext& ctx = context(h);
  const DropoutMask mask = dropout_mask(p, stream);
  const float* b = bias.defined() ? bias.data<float>() : nullptr;
  launch_rows(rows, n, ctx, [&](bool warp_per_row, unsigned grid, int threads) {
    auto launch = [&](auto warp, const auto* h_data) {
      using Spec = ResidualRows<decltype(warp)::value, std::remove_const_t<std::remove_pointer_t<decltype(h_data)>>>;
      ORDO_LAUNCH(residual_layernorm_kernel<Spec>, grid, threads, 0, ctx.stream, y.data<float>(), y16_data,
                  s.data<float>(), mean.data<float>(), rstd.data<float>(), h_data, b, residual.data<float>(),
                  gamma.data<float>(), beta.data<float>(), rows, n, eps, mask);
    };
    const uint16_t* h16 = bf16_h ? static_cast<const uint16_t*>(h.raw_data()) : nullptr;
    const float* h32 = bf16_h ? nullptr : h.data<float>();
    if (warp_per_row) {
      bf16_h ? launch(std::true_type{}, h16) : launch(std::true_type{}, h32);
    } else {
      bf16_h ? launch(std::false_type{}, h16) : launch(std::false_type{}, h32);
    }
  });
}

void residual_layernorm_backward(const Tensor& gs, const Tensor& gh, const Tensor& gbias, const Tensor& ggamma,
                                 const Tensor& gbeta, const Tensor& gy, const Tensor& s, const Tensor& mean,
                                 const Tensor& rstd, const Tensor& gamma, double p, const PhiloxStream& stream) {
  require_f32(gy.dtype(), "residual_layernorm_backward");
  const int64_t n = s.size(-1), rows = n ? s.numel() / n : 0;
  if (n == 0) return;
  DeviceContext& ctx = context(s);
  const DropoutMask mask = dropout_mask(p, stream);
  const bool bf16 = gh.defined() && gh.dtype() == DType::bf16;
  float* gh_data = gh.defined() && !bf16 ? gh.data<float>() : nullptr;
  uint16_t* gh16 = bf16 ? static_cast<uint16_t*>(gh.raw_data()) : nullptr;
  const ResidualLayerNormSums sums{
      LayerNormParamSums{gy.data<float>(), s.data<float>(), mean.data<float>(), rstd.data<float>(), n},
      gs.data<float>(), mask};
  const ColumnOutputs outs{{ggamma.data<float>(), gbeta.data<float>(),
                            gbias.defined() ? gbias.data<float>() : nullptr}};
  if (n <= kWarpRowLimit) {
    rows_and_column_sums(s.device(), ctx, rows, n, outs,
                         ResidualLayerNormBackward{sums, gs.data<float>(), gh_data, gh16, gamma.data<float>()});
    return;
  }
  launch_rows(rows, n, ctx, [&](bool, unsigned grid, int threads) {  // n > kWarpRowLimit: a block a row
    ORDO_LAUNCH(residual_layernorm_backward_kernel, grid, threads, 0, ctx.stream, gs.data<float>(), gh_data, gh16,
                gy.data<float>(), s.data<float>(), mean.data<float>(), rstd.data<float>(), gamma.data<float>(), rows,
                n, mask);
  });
  column_sums(s.device(), ctx, rows, n, outs, sums);
}

void bias_activation(const Tensor& y, const Tensor& x, const Tensor& bias, UnaryOp act) {
  const bool bf16_x = x.dtype() == DType::bf16;  // a product's bf16 output (then y is bf16 too)
  if (!bf16_x) require_f32(x.dtype(), "bias_activation");
  const int64_t count = x.numel(), n = x.size(-1);
  if (count == 0) return;
  DeviceContext& ctx = context(x);
  visit_activation(act, [&](auto f) {
    using Op = decltype(f);
    auto launch = [&](auto narrow) {
      constexpr bool kNarrow = decltype(narrow)::value;
      if (bf16_x) {
        using Spec = BiasActivation<Op, uint16_t, uint16_t, kNarrow>;
        ORDO_LAUNCH(bias_activation_kernel<Spec>, grid_for(count, kThreads, ctx), kThreads, 0, ctx.stream,
                    static_cast<uint16_t*>(y.raw_data()), static_cast<const uint16_t*>(x.raw_data()),
                    bias.data<float>(), count, n);
      } else if (y.dtype() == DType::bf16) {
        using Spec = BiasActivation<Op, float, uint16_t, kNarrow>;
        ORDO_LAUNCH(bias_activation_kernel<Spec>, grid_for(count, kThreads, ctx), kThreads, 0, ctx.stream,
                    static_cast<uint16_t*>(y.raw_data()), x.data<float>(), bias.data<float>(), count, n);
      } else {
        using Spec = BiasActivation<Op, float, float, kNarrow>;
        ORDO_LAUNCH(bias_activation_kernel<Spec>, grid_for(count, kThreads, ctx), kThreads, 0, ctx.stream,
                    y.data<float>(), x.data<float>(), bias.data<float>(), count, n);
      }
    };
    if (count <= kNarrowIndexLimit) {
      launch(std::true_type{});
    } else {
      launch(std::false_type{});
    }
  });
  ORDO_CUDA_CHECK_LAUNCH();
}

void bias_activation_layernorm(const Tensor& y, const Tensor& t, const Tensor& mean, const Tensor& rstd,
                               const Tensor& x, const Tensor& bias, UnaryOp act, const Tensor& gamma,
                               const Tensor& beta, double eps, const Tensor& y16) {
  require_f32(x.dtype(), "bias_activation_layernorm");
  uint16_t* y16_data = y16.defined() ? static_cast<uint16_t*>(y16.raw_data()) : nullptr;
  const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
  DeviceContext& ctx = context(x);
  visit_activation(act, [&](auto f) {
    using Op = decltype(f);
    launch_rows(rows, n, ctx, [&](bool warp_per_row, unsigned grid, int threads) {
      auto launch = [&](auto warp) {
        using Spec = ActivationRows<Op, decltype(warp)::value>;
        ORDO_LAUNCH(bias_activation_layernorm_kernel<Spec>, grid, threads, 0, ctx.stream, y.data<float>(), y16_data,
                    t.data<float>(), mean.data<float>(), rstd.data<float>(), x.data<float>(), bias.data<float>(),
                    gamma.data<float>(), beta.data<float>(), rows, n, eps);
      };
      if (warp_per_row) {
        launch(std::true_type{});
      } else {
        launch(std::false_type{});
      }
    });
  });
}

void bias_activation_layernorm_backward(const Tensor& gx, const Tensor& gbias, const Tensor& ggamma,
                                        const Tensor& gbeta, const Tensor& gt, const Tensor& gy, const Tensor& x,
                                        const Tensor& bias, UnaryOp act, const Tensor& t, const Tensor& mean,
                                        const Tensor& rstd, const Tensor& gamma) {
  require_f32(gy.dtype(), "bias_activation_layernorm_backward");
  const int64_t n = t.size(-1), rows = n ? t.numel() / n : 0;
  if (n == 0) return;
  DeviceContext& ctx = context(t);
  const bool bf16 = gx.dtype() == DType::bf16;
  const TransformOperands a{
      LayerNormParamSums{gy.data<float>(), t.data<float>(), mean.data<float>(), rstd.data<float>(), n},
      gt.data<float>(), bf16 ? nullptr : gx.data<float>(), bf16 ? static_cast<uint16_t*>(gx.raw_data()) : nullptr,
      x.data<float>(), bias.data<float>(), gamma.data<float>()};
  const ColumnOutputs outs{{ggamma.data<float>(), gbeta.data<float>(), gbias.data<float>()}};
  visit_activation(act, [&](auto f) {
    using Op = decltype(f);
    if (n <= kWarpRowLimit) {
      rows_and_column_sums(t.device(), ctx, rows, n, outs, BiasActivationLayerNormBackward<Op>{a});
      return;
    }
    launch_rows(rows, n, ctx, [&](bool, unsigned grid, int threads) {  // n > kWarpRowLimit: a block a row
      ORDO_LAUNCH(bias_activation_layernorm_backward_kernel<Op>, grid, threads, 0, ctx.stream, a, rows);
    });
    column_sums(t.device(), ctx, rows, n, outs, BiasActivationLayerNormBackward<Op>{a});
  });
}

// Each element rounded to bf16 as its column's sum takes it: x read once.
struct OperandColumnSumsElement {
  static constexpr int kSums = 1;
  const float* x;
  uint16_t* operand;
  int64_t n;
  __device__ __forceinline__ void operator()(int64_t row, int64_t column, double (&sums)[1]) const {
    const float v = x[row * n + column];
    operand[row * n + column] = bf16_bits(v);
    sums[0] += v;
  }
};

void operand_column_sums(const Tensor& operand, const Tensor& sums, const Tensor& x) {
  require_f32(x.dtype(), "operand_column_sums");
  const int64_t rows = x.size(0), n = x.size(1);
  if (n == 0) return;
  DeviceContext& ctx = context(x);
  column_sums(x.device(), ctx, rows, n, ColumnOutputs{{sums.data<float>(), nullptr, nullptr}},
              OperandColumnSumsElement{x.data<float>(), static_cast<uint16_t*>(operand.raw_data()), n});
}

void bias_activation_backward(const Tensor& gx, const Tensor& gbias, const Tensor& gy, const Tensor& x,
                              const Tensor& bias, UnaryOp act) {
  const bool bf16_x = x.dtype() == DType::bf16;  // x and gy: a product's bf16 output and its gradient
  if (!bf16_x) require_f32(x.dtype(), "bias_activation_backward");
  const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
  if (rows == 0) return;
  DeviceContext& ctx = context(x);
  const bool bf16 = gx.dtype() == DType::bf16;
  float* gx32 = bf16 ? nullptr : gx.data<float>();
  uint16_t* gx16 = bf16 ? static_cast<uint16_t*>(gx.raw_data()) : nullptr;
  const ColumnOutputs sums{{gbias.data<float>(), nullptr, nullptr}};
  visit_activation(act, [&](auto f) {
    using Op = decltype(f);
    if (bf16_x) {
      const BiasActivationBackward<Op, uint16_t> element{gx32, gx16, static_cast<const uint16_t*>(gy.raw_data()),
                                                         static_cast<const uint16_t*>(x.raw_data()),
                                                         bias.data<float>(), n};
      column_sums(x.device(), ctx, rows, n, sums, element);
    } else {
      const BiasActivationBackward<Op, float> element{gx32, gx16, gy.data<float>(), x.data<float>(),
                                                      bias.data<float>(), n};
      column_sums(x.device(), ctx, rows, n, sums, element);
    }
  });
}

}  // namespace ordo::cuda
