// Differentiable fused transformer pieces (tensor/ops.h, ops_fused.cpp),
// each backward beside its forward, and the product's operand.
#include "autograd/ops.h"

namespace ordo {

// s = residual + dropout(h + bias), y = LayerNorm(s):
//   gs = LayerNorm's gx, g_residual = gs, g_h = mask(gs) (the same mask),
//   g_bias = sum over rows of g_h, g_gamma and g_beta as LayerNorm's.
// h_is_product: h's gradient only feeds a product's backward, which rounds
// it to bf16 under bf16 precision: it is written as bf16 then.
Var residual_layernorm(const Var& h, const Var& bias, const Var& residual, const Var& gamma, const Var& beta,
                       double eps, double p, const PhiloxStream& stream, bool h_is_product,
                       MatmulPrecision precision) {
  // y is the next product's input: under a forward's OperandRoundingScope the
  // kernel writes its bf16 rounding too, which that product takes instead of a cast.
  ResidualLayerNormResult r = residual_layernorm(h.value(), bias.defined() ? bias.value() : Tensor(), residual.value(),
                                                 gamma.value(), beta.value(), eps, p, stream,
                                                 OperandRoundingScope::collecting());
  OperandRoundingScope::add_rounding(r.y, r.y_operand);
  r.y_operand = Tensor();
  std::vector<Var> inputs{h, residual, gamma, beta};
  if (bias.defined()) inputs.push_back(bias);
  const bool with_bias = bias.defined();
  const DType gh_dtype = operand_dtype(h, h_is_product, precision);
  Tensor y = r.y;
  r.y = Tensor();  // the backward needs s, mean and rstd only
  return record_op("residual_layernorm", y, inputs,
                   [r, gv = gamma.value(), with_bias, p, stream, gh_dtype](const Tensor& gy, const std::vector<bool>&) {
                     ResidualLayerNormGrads g = residual_layernorm_backward(gy, r, gv, with_bias, p, stream, gh_dtype);
                     std::vector<Tensor> grads{g.gh, g.gresidual, g.ggamma, g.gbeta};
                     if (with_bias) grads.push_back(g.gbias);
                     return grads;
                   });
}

// y = act(x + bias):  gx = gy * act'(x + bias), g_bias = sum over rows of gx.
// A bf16 x (a product's bf16 output) gives a bf16 y whose gradient the
// backward takes in bf16 (takes_bf16_gradient): gy is read in x's dtype.
Var bias_activation(const Var& x, const Var& bias, UnaryOp act, bool as_operand, bool x_is_product,
                    MatmulPrecision precision) {
  const DType out = operand_dtype(x, as_operand, precision);  // the same rule for the value a product takes
  const DType gx_dtype = operand_dtype(x, x_is_product, precision);
  Tensor y = bias_activation(x.value(), bias.value(), act, out);
  Var result = record_op("bias_activation", y, {x, bias},
                         [xv = x.value(), bv = bias.value(), act, gx_dtype](const Tensor& gy, const std::vector<bool>&) {
                           const Tensor g_y = gy.dtype() == xv.dtype() ? gy : gy.to(xv.dtype());
                           BiasActivationGrads g = bias_activation_backward(g_y, xv, bv, act, gx_dtype);
                           return std::vector<Tensor>{g.gx, g.gbias};
                         });
  if (x.dtype() == DType::bf16 && result.state()->node) result.state()->node->takes_bf16_gradient = true;
  return result;
}

// t = act(x + bias), y = LayerNorm(t):  gt = LayerNorm's gx, gx = gt * act'(x + bias),
// g_bias = sum over rows of gx, g_gamma and g_beta as LayerNorm's.
Var bias_activation_layernorm(const Var& x, const Var& bias, UnaryOp act, const Var& gamma, const Var& beta,
                              double eps, MatmulPrecision precision) {
  BiasActivationLayerNormResult r = bias_activation_layernorm(x.value(), bias.value(), act, gamma.value(),
                                                              beta.value(), eps, OperandRoundingScope::collecting());
  OperandRoundingScope::add_rounding(r.y, r.y_operand);
  r.y_operand = Tensor();
  const Tensor y = r.y;
  r.y = Tensor();  // the backward needs t, mean and rstd only
  const DType gx_dtype = operand_dtype(x, /*for_product=*/true, precision);
  return record_op("bias_activation_layernorm", y, {x, bias, gamma, beta},
                   [r, xv = x.value(), bv = bias.value(), gv = gamma.value(), act, gx_dtype](
                       const Tensor& gy, const std::vector<bool>&) {
                     BiasActivationLayerNormGrads g = bias_activation_layernorm_backward(gy, xv, bv, act, r, gv,
                                                                                         gx_dtype);
                     return std::vector<Tensor>{g.gx, g.gbias, g.ggamma, g.gbeta};
                   });
}

// heads = x + bias in the heads' layout:  gx = gheads in x's layout,
// g_bias_p = sum over rows of part p's columns of gx.
Var split_heads(const Var& x, const std::vector<Var>& biases, int64_t parts, int64_t heads, bool as_operand,
                bool x_is_product, MatmulPrecision precision) {
  ORDO_CHECK(biases.empty() || static_cast<int64_t>(biases.size()) == parts, "split_heads: ", biases.size(),
             " biases for ", parts, " parts (none, or one each)");
  std::vector<Tensor> bias_values;
  for (const Var& b : biases) bias_values.push_back(b.value());
  Tensor bias = Tensor::joined_rows(bias_values);  // a view where they lie together (nn::join_parameters)
  if (!bias.defined() && !biases.empty()) bias = concat(bias_values, 0);
  const Tensor y = split_heads(x.value(), bias, parts, heads, operand_dtype(x, as_operand, precision));
  std::vector<Var> inputs{x};
  inputs.insert(inputs.end(), biases.begin(), biases.end());
  const DType gx_dtype = operand_dtype(x, x_is_product, precision);
  return record_op("split_heads", y, inputs, [gx_dtype, parts](const Tensor& gy, const std::vector<bool>& needs) {
    const bool with_bias = needs.size() > 1;
    SplitHeadsGrads g = split_heads_backward(gy, with_bias, gx_dtype);
    std::vector<Tensor> grads{g.gx};
    const int64_t width = with_bias ? g.gbias.size(0) / parts : 0;
    for (int64_t p = 0; with_bias && p < parts; ++p) grads.push_back(g.gbias.slice(0, p * width, (p + 1) * width));
    return grads;
  });
}

// y = x turned pair by pair by the angles: gx = gy turned back.
Var rotary(const Var& x, const Tensor& cosines, const Tensor& sines, bool half) {
  return record_op("rotary", rotary(x.value(), cosines, sines, half), {x},
                   [cosines, sines, half](const Tensor& gy, const std::vector<bool>&) {
                     return std::vector<Tensor>{rotary(gy, cosines, sines, half, /*inverse=*/true)};
                   });
}

DType operand_dtype(const Var& x, bool for_product, MatmulPrecision precision) {
  return for_product && x.dtype() == DType::f32 && precision == MatmulPrecision::bf16 ? DType::bf16 : x.dtype();
}

// The value rounded as products take it; the gradient passes through.
Var operand(const Var& x, MatmulPrecision precision) {
  return record_op("operand", as_operand(x.value(), precision), {x},
                   [](const Tensor& gy, const std::vector<bool>&) { return std::vector<Tensor>{gy}; });
}

}  // namespace ordo
