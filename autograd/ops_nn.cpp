// Differentiable transformer pieces: matmul, softmax with an additive mask,
// LayerNorm, cross-entropy, dropout — the fused kernels of tensor/ with
// their hand-written backwards.
#include "autograd/ops.h"
#include "autograd/pending_gradient.h"
#include "tensor/product_onto.h"

namespace ordo {

namespace {
// The two gradients of C = alpha op(A) op(B), op = transpose when the flag is
// set. With A' = op(A), B' = op(B): gA' = alpha gC B'^T, gB' = alpha A'^T gC;
// transposing back where the operand was stored transposed gives the four
// cases below. Batch axes that broadcasting added are summed away.
// av and bv are the operands as the forward product took them (bf16 under
// bf16 precision: what the forward saved), and `precision` the forward's.
// ga_onto: A's gradient gathered so far (take_pending_gradient), which the
// product adds its term onto; A then has av's shape (no batch broadcast).
// ga_to_bf16 (no ga_onto; A's gradient the product's whole output): A's
// gradient rounded to bf16 as the product writes it (matmul_to_bf16).
// Where an operand's gradient is the product's whole output (no batch axis
// to sum away) and Var::backward offers it a place (gradient_destination:
// attention's q, k and v, slices of one block), the product writes it there.
std::vector<Tensor> product_grads(const Tensor& gc_in, const Tensor& av, const Tensor& bv, bool trans_a, bool trans_b,
                                  double alpha, MatmulPrecision precision, const std::vector<bool>& needs,
                                  const Tensor& ga_onto = Tensor(), bool ga_to_bf16 = false) {
  // Rounded once for both products; a bf16 gradient in a view's layout (a
  // product wrote it for matmul_to_operand's output) laid out once for both.
  const Tensor gc =
      gc_in.dtype() == DType::bf16 && !gc_in.is_contiguous() ? gc_in.contiguous() : as_operand(gc_in, precision);
  const DType grad_dtype = av.dtype() == DType::f64 ? DType::f64 : DType::f32;  // the products' output
  // The product of x and y (its transposes as given) for input `input`: into
  // its place where it has one, else a new tensor summed down to `shape`.
  auto product_for = [&](size_t input, const Shape& shape, const Tensor& x, const Tensor& y, bool tx, bool ty) {
    const bool whole = Shape(gc.shape().begin(), gc.shape().end() - 2) == Shape(shape.begin(), shape.end() - 2);
    const Tensor place = whole ? gradient_destination(input, grad_dtype) : Tensor();
    if (place.defined()) return matmul_into(place, x, y, tx, ty, alpha, precision);
    return sum_to(matmul(x, y, tx, ty, alpha, precision), shape);
  };
  Tensor ga, gb;
  if (needs[0] && ga_onto.defined()) {
    ga = trans_a ? matmul_onto(ga_onto, bv, gc, trans_b, true, alpha, precision)
                 : matmul_onto(ga_onto, gc, bv, false, !trans_b, alpha, precision);
  } else if (needs[0] && ga_to_bf16) {
    ORDO_ASSERT(!trans_a && alpha == 1.0 && precision == MatmulPrecision::bf16);
    ga = matmul_to_bf16(gc, bv, false, !trans_b);
    ORDO_ASSERT(ga.shape() == av.shape());
  } else if (needs[0]) {
    ga = trans_a ? product_for(0, av.shape(), bv, gc, trans_b, true)
                 : product_for(0, av.shape(), gc, bv, false, !trans_b);
  }
  if (needs[1]) {
    if (bv.dim() == 2 && av.dim() > 2 && !trans_a) {
      // A weight shared by a batch ([.., m, k] @ [k, n]): one product over
      // all rows at once instead of a product per batch summed afterwards.
      Tensor a2 = av.reshape({-1, av.size(-1)}), g2 = gc.reshape({-1, gc.size(-1)});
      gb = trans_b ? matmul(g2, a2, true, false, alpha, precision) : matmul(a2, g2, true, false, alpha, precision);
    } else {
      gb = trans_b ? product_for(1, bv.shape(), gc, av, true, trans_a)
                   : product_for(1, bv.shape(), av, gc, !trans_a, false);
    }
  }
  return {ga, gb};
}
}  // namespace

// The operands are saved as the product takes them: under bf16 precision
// their bf16 roundings, half the memory of the f32 values, and what the
// backward's products would round them to anyway.
Var matmul(const Var& a, const Var& b, bool trans_a, bool trans_b, double alpha, MatmulPrecision precision) {
  Tensor av = as_operand(a.value(), precision), bv = as_operand(b.value(), precision);
  Tensor c = matmul(av, bv, trans_a, trans_b, alpha, precision);
  return record_op("matmul", c, {a, b},
                   [av, bv, trans_a, trans_b, alpha, precision](const Tensor& gc, const std::vector<bool>& needs) {
                     return product_grads(gc, av, bv, trans_a, trans_b, alpha, precision, needs);
                   });
}

Var matmul_to_operand(const Var& a, const Var& b, MatmulPrecision precision) {
  if (precision != MatmulPrecision::bf16 || a.dtype() == DType::f64) return matmul(a, b, false, false, 1.0, precision);
  Tensor av = as_operand(a.value(), precision), bv = as_operand(b.value(), precision);
  Tensor c = matmul_to_bf16(av, bv, false, false);
  return record_op("matmul", c, {a, b}, [av, bv, precision](const Tensor& gc, const std::vector<bool>& needs) {
    return product_grads(gc, av, bv, false, false, 1.0, precision, needs);
  });
}

// y = x W^T + b: the product's gradients as matmul's (gx added by the product
// onto what x has gathered, when handed over), and gb = gy summed over rows.
Var linear(const Var& x, const Var& weight, const Var& bias, bool output_as_operand, MatmulPrecision precision) {
  const bool bf16 = precision == MatmulPrecision::bf16 && x.dtype() != DType::f64;
  Tensor xv = as_operand(x.value(), precision), wv = as_operand(weight.value(), precision);
  Tensor y = bf16 && output_as_operand && !bias.defined()
                 ? matmul_to_bf16(xv, wv, false, true)
                 : linear(xv, wv, bias.defined() ? bias.value() : Tensor(), precision);
  const Node* made_x = x.state()->node.get();
  const bool gx_to_bf16 = bf16 && made_x != nullptr && made_x->takes_bf16_gradient;
  std::vector<Var> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return record_op("linear", y, inputs, [xv, wv, precision, gx_to_bf16](const Tensor& gy, const std::vector<bool>& needs) {
    const Tensor gx_onto = needs[0] ? take_pending_gradient(0) : Tensor();
    std::vector<Tensor> grads = product_grads(gy, xv, wv, false, true, 1.0, precision, needs, gx_onto,
                                              gx_to_bf16 && !gx_onto.defined());
    if (needs.size() > 2) grads.push_back(needs[2] ? sum_to(gy, {wv.size(0)}) : Tensor());
    return grads;
  });
}

// The Linears of one input (attention's Q, K and V) as one product: the
// stacked weight [sum out_i, in] rounded once to the products' operand, the
// biases broadcast into their columns, the output [.., sum out_i]. Backward:
// gx in one product over every output column (the inputs' gradients summed by
// the product, no adds, onto what x has gathered when handed over), the gW_i
// as one product [sum out_i, in] and the gb_i as one row sum, each leaf given
// its rows (Var::backward adopts them: no copy).
Var linear_stacked(const Var& x, const std::vector<Var>& weights, const std::vector<Var>& biases,
                   MatmulPrecision precision) {
  ORDO_CHECK(!weights.empty(), "linear_stacked: no weight");
  ORDO_CHECK(biases.empty() || biases.size() == weights.size(), "linear_stacked: ", biases.size(),
             " biases for ", weights.size(), " weights (none, or one each)");
  const Tensor xv = as_operand(x.value(), precision);
  std::vector<Tensor> bias_values;
  std::vector<int64_t> outputs;
  int64_t total = 0;
  for (const Var& w : weights) {
    check_dim(w.value(), 2, "linear_stacked", "weight");
    ORDO_CHECK(w.size(1) == weights[0].size(1), "linear_stacked: weights ", shape_str(weights[0].shape()), " and ",
               shape_str(w.shape()), " take different inputs");
    outputs.push_back(w.size(0));
    total += w.size(0);
  }
  // The stacked operand: the weights as one view where they lie one after
  // another in memory (nn::join_parameters), rounded once as as_operand
  // would; else written once, each weight cast into its rows.
  std::vector<Tensor> weight_values;
  for (const Var& w : weights) weight_values.push_back(w.value());
  Tensor wv = Tensor::joined_rows(weight_values);
  if (wv.defined()) {
    wv = as_operand(wv, precision);
  } else {
    const Tensor& first = weight_values[0];
    const DType stacked_dtype = first.dtype() == DType::f64           ? DType::f64
                                : precision == MatmulPrecision::bf16 ? DType::bf16
                                                                     : DType::f32;
    wv = Tensor::empty({total, first.size(1)}, stacked_dtype, first.device());
    int64_t at = 0;
    for (size_t i = 0; i < weights.size(); at += outputs[i++]) wv.slice(0, at, at + outputs[i]).copy_from(weight_values[i]);
  }
  for (const Var& b : biases) bias_values.push_back(b.value());
  Tensor y = linear_stacked(xv, wv, bias_values, precision);
  std::vector<Var> inputs{x};
  inputs.insert(inputs.end(), weights.begin(), weights.end());
  inputs.insert(inputs.end(), biases.begin(), biases.end());
  const bool with_bias = !biases.empty();
  return record_op("linear_stacked", y, inputs,
                   [xv, wv, outputs, with_bias, precision](const Tensor& gy, const std::vector<bool>& needs) {
                     const size_t n = outputs.size();
                     // Every bias's gradient from one sum over gy's rows, then split: a
                     // bias's own columns of gy are a strided view the sum would copy first.
                     bool bias_wanted = false;
                     for (size_t i = 0; with_bias && i < n; ++i) bias_wanted = bias_wanted || needs[1 + n + i];
                     const Tensor g2 = gy.reshape({-1, gy.size(-1)});
                     Tensor gc, bias_sums;  // gy rounded once for the products; its column sums
                     if (bias_wanted && precision == MatmulPrecision::bf16 && gy.dtype() == DType::f32) {
                       OperandColumnSums both = operand_column_sums(g2);  // gy read once for the two
                       gc = both.operand, bias_sums = both.sums;
                     } else {
                       gc = as_operand(g2, precision);
                       if (bias_wanted) bias_sums = sum_to(g2, {gy.size(-1)});
                     }
                     std::vector<Tensor> grads(needs.size());
                     if (needs[0]) {
                       const Tensor onto = take_pending_gradient(0);
                       if (onto.defined())
                         matmul_onto(onto.reshape({gc.size(0), wv.size(1)}), gc, wv, false, false, 1.0, precision);
                       grads[0] = onto.defined() ? onto
                                                 : matmul(gc, wv, false, false, 1.0, precision).reshape(xv.shape());
                     }
                     const Tensor x2 = xv.reshape({-1, xv.size(-1)});
                     // One product for all the weights; where some take no gradient, one each for the rest.
                     bool weights_wanted = true;
                     for (size_t i = 0; i < n; ++i) weights_wanted = weights_wanted && needs[1 + i];
                     const Tensor weight_grads =
                         weights_wanted ? matmul(gc, x2, true, false, 1.0, precision) : Tensor();
                     int64_t at = 0;
                     for (size_t i = 0; i < n; at += outputs[i++]) {
                       if (weights_wanted) grads[1 + i] = weight_grads.slice(0, at, at + outputs[i]);
                       else if (needs[1 + i])
                         grads[1 + i] = matmul(gc.slice(1, at, at + outputs[i]), x2, true, false, 1.0, precision);
                       if (with_bias && needs[1 + n + i]) grads[1 + n + i] = bias_sums.slice(0, at, at + outputs[i]);
                     }
                     return grads;
                   });
}

namespace {
// y = softmax(x + mask);  gx = y * (gy - sum(gy * y)), gmask = gx summed to mask's shape.
// (log-softmax: gx = gy - softmax(x) * sum(gy).)
// p > 0: out = dropout(y, p, stream), and gy passes through its mask first.
Var softmax_op(const Var& x, const Var& mask, bool log, bool x_is_product, MatmulPrecision precision, double p = 0,
               const PhiloxStream& stream = {}, bool as_operand = false, Tensor* probs = nullptr) {
  Tensor mv = mask.defined() ? mask.value() : Tensor();
  const DType out_dtype = operand_dtype(x, as_operand, precision);
  // out: y dropped and rounded as the product takes it, written beside y in
  // one pass. Under bf16 products y is kept for the backward as its bf16
  // rounding too (half the bytes of the largest tensor the attention keeps),
  // unless its values are asked for (probs).
  const bool keep_rounded = out_dtype == DType::bf16 && x.dtype() == DType::f32 && probs == nullptr;
  Tensor y, out;
  if (log) {
    y = out = log_softmax(x.value(), mv);
  } else {
    SoftmaxDropoutResult r = softmax_dropout(x.value(), mv, p, stream, out_dtype, keep_rounded);
    y = std::move(r.y);
    out = std::move(r.out);
  }
  if (probs != nullptr) *probs = y;
  std::vector<Var> inputs{x};
  if (mask.defined()) inputs.push_back(mask);
  // A learned mask's gradient is gx summed: then gx stays unrounded.
  const DType gx_dtype =
      operand_dtype(x, x_is_product && !log && !(mask.defined() && mask.requires_grad()), precision);
  const char* name = log ? "log_softmax" : p > 0 ? "softmax_dropout" : "softmax";
  return record_op(name, out, inputs,
                   [y, log, gx_dtype, p, stream, mshape = mv.defined() ? mv.shape() : Shape()](
                       const Tensor& gy, const std::vector<bool>& needs) {
                     Tensor gx = log ? log_softmax_backward(y, gy) : softmax_backward(y, gy, gx_dtype, p, stream);
                     std::vector<Tensor> grads{needs[0] ? gx : Tensor()};
                     if (needs.size() > 1) grads.push_back(needs[1] ? sum_to(gx, mshape) : Tensor());
                     return grads;
                   });
}
}  // namespace

Var softmax(const Var& x, const Var& mask, bool x_is_product, MatmulPrecision precision) {
  return softmax_op(x, mask, false, x_is_product, precision);
}
Var softmax_dropout(const Var& x, const Var& mask, double p, const PhiloxStream& stream, bool x_is_product,
                    bool as_operand, Tensor* probs, MatmulPrecision precision) {
  ORDO_CHECK(p >= 0 && p < 1, "softmax_dropout: p must be in [0, 1), got ", p);
  return softmax_op(x, mask, false, x_is_product, precision, p, stream, as_operand, probs);
}
Var log_softmax(const Var& x, const Var& mask) { return softmax_op(x, mask, true, false, MatmulPrecision::fp32); }

// Under a forward's OperandRoundingScope the kernel writes y's bf16 rounding
// too, which the next product (the first layer's Q/K/V, the MLM decoder)
// takes instead of a cast.
Var layernorm(const Var& x, const Var& gamma, const Var& beta, double eps, bool to_product) {
  LayerNormResult r =
      layernorm(x.value(), gamma.value(), beta.value(), eps, to_product && OperandRoundingScope::collecting());
  OperandRoundingScope::add_rounding(r.y, r.y_operand);
  return record_op("layernorm", r.y, {x, gamma, beta},
                   [mean = r.mean, rstd = r.rstd, xv = x.value(), gv = gamma.value()](const Tensor& gy,
                                                                                      const std::vector<bool>&) {
                     LayerNormGrads g = layernorm_backward(gy, xv, mean, rstd, gv);
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

Var linear_cross_entropy(const Var& x, const Var& weight, const Var& bias, const Tensor& targets,
                         int64_t ignore_index, Tensor* product, MatmulPrecision precision) {
  ORDO_CHECK(bias.defined(), "linear_cross_entropy: the product's bias is missing (use cross_entropy of linear)");
  const Tensor xv = as_operand(x.value(), precision), wv = as_operand(weight.value(), precision);
  ORDO_CHECK(x.dim() == 2, "linear_cross_entropy: x has shape ", shape_str(x.shape()), ", expected [rows, in]");
  // The product without its bias: the loss kernels add it to each logit as
  // they read it, so no broadcast of it is written (the logits' bits those of
  // add(z, bias)).
  const Tensor z = matmul(xv, wv, false, true, 1.0, precision);
  const Tensor bv = bias.value();
  const CrossEntropyResult r = cross_entropy(z, targets, ignore_index, bv);
  if (product) *product = z;
  return record_op("linear_cross_entropy", r.loss, {x, weight, bias},
                   [r, z, bv, xv, wv, targets, ignore_index, precision](const Tensor& gy,
                                                                        const std::vector<bool>& needs) {
                     // The logits' gradient as the products' operand: rounded once, here.
                     const DType operand = precision == MatmulPrecision::bf16 && z.dtype() == DType::f32
                                               ? DType::bf16 : z.dtype();
                     CrossEntropyGrads g = cross_entropy_backward_with_bias(gy, z, bv, r, targets, ignore_index,
                                                                            operand);
                     const Tensor gx_onto = needs[0] ? take_pending_gradient(0) : Tensor();
                     std::vector<Tensor> grads = product_grads(g.glogits, xv, wv, false, true, 1.0, precision,
                                                               needs, gx_onto);
                     grads.push_back(needs[2] ? g.gbias : Tensor());
                     return grads;
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
