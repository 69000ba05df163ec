// Op layer: the fused transformer pieces (tensor/kernels.inc), each the
// value of a short chain of unfused ops computed in fewer passes.
#include "tensor/ops.h"

namespace ordo {

namespace {

void check_vector(const Tensor& v, const Tensor& x, const char* op, const char* arg) {
  check_shape(v, {x.size(-1)}, op, arg);
  check_same_dtype(x, v, op);
  check_same_device(x, v, op);
}

// The bias of bias_activation: a vector of x's dtype, or f32 beside a bf16 x
// (a product's bf16 output; the parameter stays f32).
void check_bias(const Tensor& bias, const Tensor& x, const char* op) {
  if (x.dtype() != DType::bf16) return check_vector(bias, x, op, "bias");
  check_shape(bias, {x.size(-1)}, op, "bias");
  check_dtype(bias, DType::f32, op, "bias");
  check_same_device(x, bias, op);
}

// A fused LayerNorm's outputs for an input shaped like x: y and the
// LayerNorm's input (x's shape), mean and rstd (its rows), and y's bf16
// rounding when asked (f32 only).
struct NormOutputs {
  Tensor y, input, mean, rstd, y_operand;
};
NormOutputs norm_outputs(const Tensor& x, bool with_operand) {
  const Shape row_shape(x.shape().begin(), x.shape().end() - 1);
  return {Tensor::empty(x.shape(), x.dtype(), x.device()), Tensor::empty(x.shape(), x.dtype(), x.device()),
          Tensor::empty(row_shape, x.dtype(), x.device()), Tensor::empty(row_shape, x.dtype(), x.device()),
          with_operand && x.dtype() == DType::f32 ? Tensor::empty(x.shape(), DType::bf16, x.device()) : Tensor()};
}

}  // namespace

ResidualLayerNormResult residual_layernorm(const Tensor& h, const Tensor& bias, const Tensor& residual,
                                           const Tensor& gamma, const Tensor& beta, double eps, double p,
                                           const PhiloxStream& stream, bool with_operand) {
  const char* op = "residual_layernorm";
  if (h.dtype() != DType::bf16) check_float(h, op, "h");  // or a product's bf16 output
  ORDO_CHECK(h.dim() >= 1, op, ": h must have at least one axis");
  check_shape(residual, h.shape(), op, "residual");
  // h in the residual's dtype, or bf16 beside an f32 residual (a product's
  // bf16 output): the sums and the outputs in the residual's.
  if (h.dtype() != DType::bf16 || residual.dtype() != DType::f32) check_same_dtype(h, residual, op);
  check_same_device(h, residual, op);
  if (bias.defined()) check_vector(bias, residual, op, "bias");
  check_vector(gamma, residual, op, "gamma");
  check_vector(beta, residual, op, "beta");
  ORDO_CHECK(eps > 0, op, ": eps must be positive, got ", eps);
  ORDO_CHECK(p >= 0 && p < 1, op, ": p must be in [0, 1), got ", p);
  check_philox_stream(stream, h.device(), op);
  const NormOutputs o = norm_outputs(residual, with_operand);
  ResidualLayerNormResult r{o.y, o.input, o.mean, o.rstd, o.y_operand};
  ORDO_BACKEND(h.device(), residual_layernorm)(r.y, r.s, r.mean, r.rstd, h.contiguous(),
                                               bias.defined() ? bias.contiguous() : Tensor(), residual.contiguous(),
                                               gamma.contiguous(), beta.contiguous(), p, stream, eps, r.y_operand);
  return r;
}

ResidualLayerNormGrads residual_layernorm_backward(const Tensor& gy, const ResidualLayerNormResult& saved,
                                                   const Tensor& gamma, bool with_bias, double p,
                                                   const PhiloxStream& stream, DType gh_dtype) {
  const char* op = "residual_layernorm_backward";
  const Tensor& s = saved.s;
  check_shape(gy, s.shape(), op, "gy");
  check_same_dtype(gy, s, op);
  check_vector(gamma, s, op, "gamma");
  check_output_dtype(s.dtype(), gh_dtype, op, "gh");
  const Device device = s.device();
  ResidualLayerNormGrads g;
  g.gresidual = Tensor::empty(s.shape(), s.dtype(), device);
  const bool own_gh = p > 0 || gh_dtype != s.dtype();
  g.gh = own_gh ? Tensor::empty(s.shape(), gh_dtype, device) : g.gresidual;
  if (with_bias) g.gbias = Tensor::empty(gamma.shape(), s.dtype(), device);
  g.ggamma = Tensor::empty(gamma.shape(), s.dtype(), device);
  g.gbeta = Tensor::empty(gamma.shape(), s.dtype(), device);
  ORDO_BACKEND(device, residual_layernorm_backward)(g.gresidual, own_gh ? g.gh : Tensor(), g.gbias, g.ggamma, g.gbeta,
                                                    gy.contiguous(), s, saved.mean, saved.rstd, gamma.contiguous(),
                                                    p, stream);
  return g;
}

Tensor bias_activation(const Tensor& x, const Tensor& bias, UnaryOp act, DType out) {
  const char* op = "bias_activation";
  if (x.dtype() != DType::bf16) check_float(x, op, "x");  // or a product's bf16 output
  ORDO_CHECK(x.dim() >= 1, op, ": x must have at least one axis");
  check_bias(bias, x, op);
  ORDO_CHECK(is_activation(act), op, ": '", unary_name(act), "' is not an activation (gelu, gelu_tanh, relu, tanh)");
  check_output_dtype(x.dtype(), out, op, "output");
  Tensor y = Tensor::empty(x.shape(), out, x.device());
  ORDO_BACKEND(x.device(), bias_activation)(y, x.contiguous(), bias.contiguous(), act);
  return y;
}

BiasActivationGrads bias_activation_backward(const Tensor& gy, const Tensor& x, const Tensor& bias, UnaryOp act,
                                             DType gx_dtype) {
  const char* op = "bias_activation_backward";
  check_shape(gy, x.shape(), op, "gy");
  check_same_dtype(gy, x, op);
  check_bias(bias, x, op);
  check_output_dtype(x.dtype(), gx_dtype, op, "gx");
  BiasActivationGrads g{Tensor::empty(x.shape(), gx_dtype, x.device()),
                        Tensor::empty(bias.shape(), bias.dtype(), x.device())};
  ORDO_BACKEND(x.device(), bias_activation_backward)(g.gx, g.gbias, gy.contiguous(), x.contiguous(),
                                                     bias.contiguous(), act);
  return g;
}

BiasActivationLayerNormResult bias_activation_layernorm(const Tensor& x, const Tensor& bias, UnaryOp act,
                                                        const Tensor& gamma, const Tensor& beta, double eps,
                                                        bool with_operand) {
  const char* op = "bias_activation_layernorm";
  check_float(x, op, "x");
  ORDO_CHECK(x.dim() >= 1, op, ": x must have at least one axis");
  check_vector(bias, x, op, "bias");
  check_vector(gamma, x, op, "gamma");
  check_vector(beta, x, op, "beta");
  ORDO_CHECK(is_activation(act), op, ": '", unary_name(act), "' is not an activation (gelu, gelu_tanh, relu, tanh)");
  ORDO_CHECK(eps > 0, op, ": eps must be positive, got ", eps);
  const NormOutputs o = norm_outputs(x, with_operand);
  BiasActivationLayerNormResult r{o.y, o.input, o.mean, o.rstd, o.y_operand};
  ORDO_BACKEND(x.device(), bias_activation_layernorm)(r.y, r.t, r.mean, r.rstd, x.contiguous(), bias.contiguous(), act,
                                                      gamma.contiguous(), beta.contiguous(), eps, r.y_operand);
  return r;
}

BiasActivationLayerNormGrads bias_activation_layernorm_backward(const Tensor& gy, const Tensor& x, const Tensor& bias,
                                                                UnaryOp act, const BiasActivationLayerNormResult& saved,
                                                                const Tensor& gamma, DType gx_dtype) {
  const char* op = "bias_activation_layernorm_backward";
  const Tensor& t = saved.t;
  check_shape(gy, t.shape(), op, "gy");
  check_same_dtype(gy, t, op);
  check_shape(x, t.shape(), op, "x");
  check_vector(bias, t, op, "bias");
  check_vector(gamma, t, op, "gamma");
  check_output_dtype(t.dtype(), gx_dtype, op, "gx");
  const Device device = t.device();
  BiasActivationLayerNormGrads g{Tensor::empty(t.shape(), gx_dtype, device),
                                 Tensor::empty(gamma.shape(), t.dtype(), device),
                                 Tensor::empty(gamma.shape(), t.dtype(), device),
                                 Tensor::empty(gamma.shape(), t.dtype(), device)};
  const Tensor gt = Tensor::empty(t.shape(), t.dtype(), device);  // LayerNorm's gx: scratch
  ORDO_BACKEND(device, bias_activation_layernorm_backward)(g.gx, g.gbias, g.ggamma, g.gbeta, gt, gy.contiguous(),
                                                           x.contiguous(), bias.contiguous(), act, t, saved.mean,
                                                           saved.rstd, gamma.contiguous());
  return g;
}

Tensor split_heads(const Tensor& x, const Tensor& bias, int64_t parts, int64_t heads, DType out) {
  const char* op = "split_heads";
  check_dim(x, 3, op, "x");
  check_float(x, op, "x");
  const int64_t columns = x.size(2);
  ORDO_CHECK(parts > 0 && heads > 0 && columns % (parts * heads) == 0, op, ": ", columns, " columns do not split into ",
             parts, " parts of ", heads, " heads");
  check_output_dtype(x.dtype(), out, op, "output");
  if (bias.defined()) {
    check_shape(bias, {columns}, op, "bias");
    check_same_dtype(x, bias, op);
    check_same_device(x, bias, op);
  }
  Tensor y = Tensor::empty({parts, x.size(0), heads, x.size(1), columns / (parts * heads)}, out, x.device());
  ORDO_BACKEND(x.device(), split_heads)(y, x.contiguous(), bias.defined() ? bias.contiguous() : Tensor());
  return y;
}

SplitHeadsGrads split_heads_backward(const Tensor& gheads, bool with_bias, DType gx_dtype) {
  const char* op = "split_heads_backward";
  check_dim(gheads, 5, op, "gheads");
  check_float(gheads, op, "gheads");
  check_output_dtype(gheads.dtype(), gx_dtype, op, "gx");
  const int64_t columns = gheads.size(0) * gheads.size(2) * gheads.size(4);
  SplitHeadsGrads g{Tensor::empty({gheads.size(1), gheads.size(3), columns}, gx_dtype, gheads.device()),
                    with_bias ? Tensor::empty({columns}, gheads.dtype(), gheads.device()) : Tensor()};
  ORDO_BACKEND(gheads.device(), split_heads_backward)(g.gx, g.gbias, gheads.contiguous());
  return g;
}

Tensor rotary(const Tensor& x, const Tensor& cosines, const Tensor& sines, bool half, bool inverse) {
  const char* op = "rotary";
  check_dim(x, 4, op, "x");
  check_float(x, op, "x");
  const int64_t d = x.size(3);
  ORDO_CHECK(d % 2 == 0, op, ": the head width must be even (dimensions turn in pairs), got ", d);
  for (const Tensor* table : {&cosines, &sines}) {
    check_shape(*table, {x.size(0), x.size(2), d / 2}, op, table == &cosines ? "cosines" : "sines");
    check_same_dtype(x, *table, op);
    check_same_device(x, *table, op);
  }
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  ORDO_BACKEND(x.device(), rotary)(y, x, cosines.contiguous(), sines.contiguous(), half, inverse);
  return y;
}

}  // namespace ordo
