// Differentiable transformer pieces: matmul, softmax with an additive mask,
// LayerNorm, cross-entropy, dropout — the fused kernels of tensor/ with
// their hand-written backwards.
#include "autograd/ops.h"

namespace ordo {

namespace {
// The two gradients of C = alpha op(A) op(B), op = transpose when the flag is
// set. With A' = op(A), B' = op(B): gA' = alpha gC B'^T, gB' = alpha A'^T gC;
// transposing back where the operand was stored transposed gives the four
// cases below. Batch axes that broadcasting added are summed away.
// av and bv are the operands as the forward product took them (bf16 under
// bf16 precision: what the forward saved), and `precision` the forward's.
std::vector<Tensor> product_grads(const Tensor& gc_in, const Tensor& av, const Tensor& bv, bool trans_a, bool trans_b,
                                  double alpha, MatmulPrecision precision, const std::vector<bool>& needs) {
  MatmulPrecisionScope same_as_forward(precision);
  const Tensor gc = as_operand(gc_in);  // rounded once for both products
  Tensor ga, gb;
  if (needs[0]) {
    ga = trans_a ? matmul(bv, gc, trans_b, true, alpha) : matmul(gc, bv, false, !trans_b, alpha);
    ga = sum_to(ga, av.shape());
  }
  if (needs[1]) {
    if (bv.dim() == 2 && av.dim() > 2 && !trans_a) {
      // A weight shared by a batch ([.., m, k] @ [k, n]): one product over
      // all rows at once instead of a product per batch summed afterwards.
      Tensor a2 = av.reshape({-1, av.size(-1)}), g2 = gc.reshape({-1, gc.size(-1)});
      gb = trans_b ? matmul(g2, a2, true, false, alpha) : matmul(a2, g2, true, false, alpha);
    } else {
      gb = trans_b ? matmul(gc, av, true, trans_a, alpha) : matmul(av, gc, !trans_a, false, alpha);
      gb = sum_to(gb, bv.shape());
    }
  }
  return {ga, gb};
}
}  // namespace

// The operands are saved as the product takes them: under bf16 precision
// their bf16 roundings, half the memory of the f32 values, and what the
// backward's products would round them to anyway.
Var matmul(const Var& a, const Var& b, bool trans_a, bool trans_b, double alpha) {
  const MatmulPrecision precision = matmul_precision();
  Tensor av = as_operand(a.value()), bv = as_operand(b.value());
  Tensor c = matmul(av, bv, trans_a, trans_b, alpha);
  return record_op("matmul", c, {a, b},
                   [av, bv, trans_a, trans_b, alpha, precision](const Tensor& gc, const std::vector<bool>& needs) {
                     return product_grads(gc, av, bv, trans_a, trans_b, alpha, precision, needs);
                   });
}

// y = x W^T + b: the product's gradients as matmul's, and gb = gy summed over rows.
Var linear(const Var& x, const Var& weight, const Var& bias) {
  const MatmulPrecision precision = matmul_precision();
  Tensor xv = as_operand(x.value()), wv = as_operand(weight.value());
  Tensor y = linear(xv, wv, bias.defined() ? bias.value() : Tensor());
  std::vector<Var> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return record_op("linear", y, inputs, [xv, wv, precision](const Tensor& gy, const std::vector<bool>& needs) {
    std::vector<Tensor> grads = product_grads(gy, xv, wv, false, true, 1.0, precision, needs);
    if (needs.size() > 2) grads.push_back(needs[2] ? sum_to(gy, {wv.size(0)}) : Tensor());
    return grads;
  });
}

namespace {
// y = softmax(x + mask);  gx = y * (gy - sum(gy * y)), gmask = gx summed to mask's shape.
// (log-softmax: gx = gy - softmax(x) * sum(gy).)
Var softmax_op(const Var& x, const Var& mask, bool log) {
  Tensor mv = mask.defined() ? mask.value() : Tensor();
  Tensor y = log ? log_softmax(x.value(), mv) : softmax(x.value(), mv);
  std::vector<Var> inputs{x};
  if (mask.defined()) inputs.push_back(mask);
  return record_op(log ? "log_softmax" : "softmax", y, inputs,
                   [y, log, mshape = mv.defined() ? mv.shape() : Shape()](const Tensor& gy, const std::vector<bool>& needs) {
                     Tensor gx = log ? log_softmax_backward(y, gy) : softmax_backward(y, gy);
                     std::vector<Tensor> grads{needs[0] ? gx : Tensor()};
                     if (needs.size() > 1) grads.push_back(needs[1] ? sum_to(gx, mshape) : Tensor());
                     return grads;
                   });
}
}  // namespace

Var softmax(const Var& x, const Var& mask) { return softmax_op(x, mask, false); }
Var log_softmax(const Var& x, const Var& mask) { return softmax_op(x, mask, true); }

Var layernorm(const Var& x, const Var& gamma, const Var& beta, double eps) {
  LayerNormResult r = layernorm(x.value(), gamma.value(), beta.value(), eps);
  return record_op("layernorm", r.y, {x, gamma, beta},
                   [r, xv = x.value(), gv = gamma.value()](const Tensor& gy, const std::vector<bool>&) {
                     LayerNormGrads g = layernorm_backward(gy, xv, r.mean, r.rstd, gv);
                     return std::vector<Tensor>{g.gx, g.ggamma, g.gbeta};
                   });
}

Var cross_entropy(const Var& logits, const Tensor& targets, int64_t ignore_index) {
  CrossEntropyResult r = cross_entropy(logits.value(), targets, ignore_index);
  return record_op("cross_entropy", r.loss, {logits},
                   [r, targets, ignore_index, zv = logits.value()](const Tensor& gy, const std::vector<bool>&) {
                     return std::vector<Tensor>{cross_entropy_backward(gy, zv, r, targets, ignore_index)};
                   });
}

// y = x * mask / (1 - p);  gx = gy * mask / (1 - p), the mask redrawn from the same key.
Var dropout(const Var& x, double p, const PhiloxStream& stream) {
  if (p == 0) return x;
  Tensor y = dropout(x.value(), p, stream);
  return record_op("dropout", y, {x}, [p, stream](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{dropout(gy, p, stream)};
  });
}

}  // namespace ordo
