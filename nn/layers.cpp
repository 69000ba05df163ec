#include "nn/layers.h"

namespace ordo::nn {

Linear::Linear(int64_t in, int64_t out, double init_std, Device device, bool with_bias)
    : weight(add_parameter("weight", {out, in}, Init::normal(init_std), true, device)) {
  weight.product_weight = true;
  if (with_bias) bias = &add_parameter("bias", {out}, Init::zeros(), false, device);
}

Var Linear::forward(const Var& x, const Context& ctx) const {
  return linear(x, weight.var, bias ? bias->var : Var(), /*output_as_operand=*/false, ctx.precision);
}

Embedding::Embedding(int64_t num, int64_t dim, double init_std, Device device, int64_t padding_idx)
    : weight(add_parameter("weight", {num, dim}, Init::normal(init_std), true, device)),
      padding_idx(padding_idx) {
  ORDO_CHECK(padding_idx < num, "Embedding: padding_idx ", padding_idx, " is outside ", num, " rows");
}

Var Embedding::forward(const Tensor& ids) const { return embedding(weight.var, ids, padding_idx); }

LayerNorm::LayerNorm(int64_t dim, double eps, Device device)
    : weight(add_parameter("weight", {dim}, Init::ones(), false, device)),
      bias(add_parameter("bias", {dim}, Init::zeros(), false, device)),
      eps(eps) {}

Var LayerNorm::forward(const Var& x, bool to_product) const {
  return layernorm(x, weight.var, bias.var, eps, to_product);
}

Var dropout(const Var& x, double p, Context& ctx) {
  if (!ctx.training || p == 0) return x;
  return ordo::dropout(x, p, ctx.take_stream());
}

Activation parse_activation(const std::string& name) {
  if (name == "gelu") return Activation::gelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return Activation::gelu_tanh;
  if (name == "relu") return Activation::relu;
  if (name == "tanh") return Activation::tanh;
  throw Error("unknown activation '" + name + "': expected gelu, gelu_new, gelu_pytorch_tanh, relu or tanh");
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::gelu: return "gelu";
    case Activation::gelu_tanh: return "gelu_new";
    case Activation::relu: return "relu";
    case Activation::tanh: return "tanh";
  }
  return "?";
}

UnaryOp activation_op(Activation a) {
  switch (a) {
    case Activation::gelu: return UnaryOp::gelu;
    case Activation::gelu_tanh: return UnaryOp::gelu_tanh;
    case Activation::relu: return UnaryOp::relu;
    case Activation::tanh: return UnaryOp::tanh;
  }
  return UnaryOp::gelu;
}

Var linear_activation(const Linear& dense, Activation act, const Var& x, const Context& ctx, bool as_operand) {
  if (!ctx.fused || dense.bias == nullptr) return activate(act, dense.forward(x, ctx));
  // An output stored as a product's operand is made from the product's bf16
  // output: the rounding a bf16 autocast makes, at half the bytes each way.
  return bias_activation(dense.product(x, ctx, as_operand), dense.bias->var, activation_op(act), as_operand,
                         /*x_is_product=*/true, ctx.precision);
}

Var activate(Activation a, const Var& x) {
  switch (a) {
    case Activation::gelu: return gelu(x);
    case Activation::gelu_tanh: return gelu_tanh(x);
    case Activation::relu: return relu(x);
    case Activation::tanh: return tanh(x);
  }
  return x;
}

}  // namespace ordo::nn
