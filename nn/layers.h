// The basic layers: Linear, Embedding, LayerNorm, Dropout, and the
// activations BERT configs name. Weights are laid out as HuggingFace's
// (Linear weight [out, in]) so checkpoints map one to one.
#pragma once

#include <string>

#include "autograd/ops.h"
#include "nn/module.h"

namespace ordo::nn {

// y = x W^T + b, W [out, in].
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, double init_std, Device device, bool bias = true);
  // The product at the forward's precision (ctx.precision).
  Var forward(const Var& x, const Context& ctx) const;
  // x W^T without the bias, for a fused kernel that adds it (nn/bert.h);
  // as_operand: rounded to bf16 as written under bf16 products (autograd linear).
  Var product(const Var& x, const Context& ctx, bool as_operand = false) const {
    return linear(x, weight.var, Var(), as_operand, ctx.precision);
  }
  Parameter& weight;
  Parameter* bias = nullptr;
};

// Rows of a [num, dim] table. The row `padding_idx` (when >= 0) gets no
// gradient, as PyTorch's nn.Embedding(padding_idx) and hence HF BERT's word
// embeddings: the [PAD] vector stays where it was initialised.
class Embedding : public Module {
 public:
  Embedding(int64_t num, int64_t dim, double init_std, Device device, int64_t padding_idx = -1);
  Var forward(const Tensor& ids) const;
  Parameter& weight;
  int64_t padding_idx;
};

// y = (x - mean) / sqrt(var + eps) * weight + bias over the last axis.
class LayerNorm : public Module {
 public:
  LayerNorm(int64_t dim, double eps, Device device);
  // to_product: see autograd's layernorm (false where a dropout comes between).
  Var forward(const Var& x, bool to_product = true) const;
  Parameter& weight;
  Parameter& bias;
  double eps;
};

// Identity in evaluation; in training zeroes each element with probability p
// and scales the rest by 1 / (1 - p), the mask from the context's next stream.
Var dropout(const Var& x, double p, Context& ctx);

enum class Activation { gelu, gelu_tanh, relu, tanh };
// HF's hidden_act names: "gelu" (erf form), "gelu_new" / "gelu_pytorch_tanh" (tanh form), "relu", "tanh".
Activation parse_activation(const std::string& name);
const char* activation_name(Activation a);
Var activate(Activation a, const Var& x);
// The activation as its elementwise op (the fused bias_activation's argument).
UnaryOp activation_op(Activation a);
// act(x W^T + b): the product, then the bias and the activation in one fused
// kernel when ctx.fused, the output stored as the next product takes it when
// `as_operand` (bf16 under bf16 products); Linear::forward then activate otherwise.
Var linear_activation(const Linear& dense, Activation act, const Var& x, const Context& ctx, bool as_operand);

}  // namespace ordo::nn
