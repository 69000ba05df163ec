// The primitive ops on Tensors: one signature each, dispatching on the device.
//
// Every op validates its arguments (shapes, dtypes, devices) and throws
// ordo::Error naming the op, the argument and what was expected; it then
// allocates the output and calls the CPU or CUDA kernel (tensor/backend.h).
// Ops never modify their inputs, except the ones ending in an underscore.
// No op records gradients: that is autograd/'s job, built on these.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace ordo {

// ---- elementwise ------------------------------------------------------------
Tensor unary(UnaryOp op, const Tensor& x, UnaryParams params = {});
Tensor unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& gy,
                      UnaryParams params = {});
// neg, exp, log, ...: one wrapper per op of tensor/unary_ops.def without
// parameters, e.g. `Tensor exp(const Tensor& x)` = unary(UnaryOp::exp, x).
#define ORDO_UNARY_OP(name, Formula, domain) \
  inline Tensor name(const Tensor& x) { return unary(UnaryOp::name, x); }
#define ORDO_UNARY_OP_WITH_PARAMS(name, Formula, domain)
#include "tensor/unary_ops.def"
inline Tensor pow(const Tensor& x, double exponent) { return unary(UnaryOp::pow, x, {exponent, 0}); }
// scale * x + shift
inline Tensor affine(const Tensor& x, double scale, double shift = 0) {
  return unary(UnaryOp::affine, x, {scale, shift});
}
// affine(x.to(dtype), scale, shift) of integers x (i64) in one pass: the same
// bits (the cast through double, then affine in dtype). An attention mask's
// additive bias, made where a cast and a map were two launches.
Tensor affine_to(const Tensor& x, double scale, double shift, DType dtype);

// NumPy broadcasting. Both operands must have the same dtype and device.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
// add, sub, mul, ..., eq, lt, ...: one wrapper per op of tensor/binary_ops.def,
// e.g. `Tensor add(const Tensor& a, const Tensor& b)` = binary(BinaryOp::add, a, b).
#define ORDO_BINARY_OP(name, Formula) \
  inline Tensor name(const Tensor& a, const Tensor& b) { return binary(BinaryOp::name, a, b); }
#include "tensor/binary_ops.def"
// Whether op is one of the ORDO_COMPARISON_OP lines of tensor/binary_ops.def (no gradient).
bool is_comparison(BinaryOp op);
// a op= b in place; b broadcast to a's shape; a must be contiguous.
void binary_(BinaryOp op, const Tensor& a, const Tensor& b);
inline void add_(const Tensor& a, const Tensor& b) { binary_(BinaryOp::add, a, b); }

// cond != 0 ? a : b, all three broadcast together; cond has a's dtype.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// ---- reductions -------------------------------------------------------------
// axes may be negative; an empty list reduces over every axis.
Tensor sum(const Tensor& x, const std::vector<int>& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int>& axes = {}, bool keepdim = false);
Tensor max(const Tensor& x, const std::vector<int>& axes = {}, bool keepdim = false);
Tensor min(const Tensor& x, const std::vector<int>& axes = {}, bool keepdim = false);
// Variance: divides by (count - correction); correction 0 is the population variance.
Tensor var(const Tensor& x, const std::vector<int>& axes = {}, bool keepdim = false,
           int64_t correction = 0);
// Index (i64) of the first maximum along one axis.
Tensor argmax(const Tensor& x, int axis, bool keepdim = false);
// Sums x over the axes that were broadcast to turn `shape` into x.shape():
// the gradient of a broadcast operand.
Tensor sum_to(const Tensor& x, const Shape& shape);

// ---- matrix products ----------------------------------------------------------
// a [..., m, k] @ b [..., k, n] -> [..., m, n]; trans_a / trans_b use the
// transpose of the last two axes. Batch axes broadcast. Strided views whose
// last two axes are row- or column-major are used without a copy.
// alpha scales the product (attention's 1/sqrt(d) at no extra pass);
// precision: how f32 operands multiply (tensor/device_runtime.h).
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false, double alpha = 1.0,
              MatmulPrecision precision = MatmulPrecision::fp32);
// matmul under bf16 precision with its f32 sums rounded to bf16 (nearest
// even) as they are written, as a tensor core's bf16 C: half the bytes of an
// output that only a bf16-reading kernel takes (a fused kernel's input). On
// the CPU the bits of matmul(a, b, .., MatmulPrecision::bf16).to(bf16).
// Throws for f64 operands.
Tensor matmul_to_bf16(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// x [..., in] W^T + b with W [out, in] (a Linear layer); b may be undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
              MatmulPrecision precision = MatmulPrecision::fp32);
// Several Linears of one input as one product: W stacks their weights
// [sum out_i, in], and each bias b_i [out_i] (none, or one per Linear, in
// W's order) is broadcast into its own columns of the output.
Tensor linear_stacked(const Tensor& x, const Tensor& weight, const std::vector<Tensor>& biases,
                      MatmulPrecision precision = MatmulPrecision::fp32);
// Both take f32 operands (or bf16 ones, under MatmulPrecision::bf16:
// tensor/device_runtime.h) and give f32, or f64 with f64. An operand used by
// several products can be rounded once: as_operand(t, precision) is t as a
// product of that precision takes it (bf16 under bf16, else f32; f64 unchanged).
Tensor as_operand(const Tensor& t, MatmulPrecision precision);
// x [rows, n] (f32) as a bf16 product operand and the sums of its columns
// [n] (f32), reading x once: a product's gradient rounded for its two
// products, and its biases' gradients (linear_stacked's backward). On the
// CPU the bits of x.to(bf16) and sum(x, {0}) (those kernels in order); on
// CUDA one launch (column_sums' fixed order).
struct OperandColumnSums {
  Tensor operand, sums;
};
OperandColumnSums operand_column_sums(const Tensor& x);
// A forward's product operands rounded to bf16 once, where they are made.
// While it lives, this thread's products take every f32 view of `block`'s
// storage (the weights nn::pack_product_weights put together) from one
// rounding of the whole storage made here — one cast, one launch on a
// device, instead of one per weight per forward — and an activation a
// kernel rounded as it wrote it (add_rounding) from that rounding instead of
// a cast. Only under bf16 precision (the forward's, `precision`), where each
// element rounds as as_operand would round it alone (the same bits); a scope
// nested in one over the same storage does nothing.
//
// `kept`, when its weights are block's storage: that rounding, already made
// and current (its keeper vouches for it: nn::AdamW writes it with every
// update), is taken instead of the cast.
struct RoundedWeights {
  Tensor weights;   // a packed block's whole storage (f32, 1-d)
  Tensor rounding;  // its bf16 rounding, the same shape
};
class OperandRoundingScope {
 public:
  OperandRoundingScope(const Tensor& block, MatmulPrecision precision, const RoundedWeights& kept = {});
  ~OperandRoundingScope();
  OperandRoundingScope(const OperandRoundingScope&) = delete;
  OperandRoundingScope& operator=(const OperandRoundingScope&) = delete;
  // The rounding of t when t lies in a live scope's block or is a value given
  // to add_rounding (else undefined). An activation's rounding is handed out
  // once (its product saves it), so the scope does not hold it longer.
  static Tensor lookup(const Tensor& t);
  // Whether a scope is collecting roundings on this thread: a kernel that can
  // write its output's bf16 rounding in the same pass should then do so.
  static bool collecting();
  // `rounded` (bf16) is `value` (f32, a fresh output no one writes again
  // during the forward) rounded, element for element: the innermost scope
  // keeps it for the product that takes `value`.
  static void add_rounding(const Tensor& value, const Tensor& rounded);

 private:
  Tensor source_, rounded_;  // both undefined when this scope does nothing
  // Activations' roundings not yet taken: the value's storage, watched
  // without keeping it alive, and the rounding.
  std::vector<std::pair<std::weak_ptr<Storage>, Tensor>> activations_;
  OperandRoundingScope* outer_ = nullptr;
};

// ---- softmax, normalisation, losses ---------------------------------------------
// Over the last axis; mask (optional) is added to x first and broadcast to x.
Tensor softmax(const Tensor& x, const Tensor& mask = Tensor());
// y = softmax(x + mask) and out = dropout(y, p, stream) in out_dtype (x's, or
// bf16 from f32: the P V product's operand) in one pass — the bits of
// softmax then dropout(y, p, stream, out_dtype); out is y itself when p = 0
// and out_dtype is x's. keep_rounded (a bf16 out of f32 x): y is kept as its
// bf16 rounding, the probabilities the backward reads at half the bytes
// (out is then y itself when p = 0).
struct SoftmaxDropoutResult {
  Tensor y, out;
};
SoftmaxDropoutResult softmax_dropout(const Tensor& x, const Tensor& mask, double p, const PhiloxStream& stream,
                                     DType out_dtype, bool keep_rounded = false);
Tensor log_softmax(const Tensor& x, const Tensor& mask = Tensor());
// gx_dtype: gy's, or bf16 from f32 (gx a product's gradient, which it rounds
// so anyway). p > 0: the backward of dropout(softmax(x), p, stream), gy
// passed through the mask in the same pass. y may be bf16 with f32 gy (kept
// rounded: its values widened exactly).
Tensor softmax_backward(const Tensor& y, const Tensor& gy, DType gx_dtype, double p = 0,
                        const PhiloxStream& stream = {});
inline Tensor softmax_backward(const Tensor& y, const Tensor& gy) { return softmax_backward(y, gy, gy.dtype()); }
Tensor log_softmax_backward(const Tensor& y, const Tensor& gy);

struct LayerNormResult {
  Tensor y, mean, rstd;  // mean and rstd have x's shape without the last axis
  Tensor y_operand;      // y rounded to bf16 in the same pass, when asked (with_operand, f32 x)
};
LayerNormResult layernorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                          bool with_operand = false);
struct LayerNormGrads {
  Tensor gx, ggamma, gbeta;
};
LayerNormGrads layernorm_backward(const Tensor& gy, const Tensor& x, const Tensor& mean,
                                  const Tensor& rstd, const Tensor& gamma);

// Mean cross-entropy of logits [..., c] against i64 targets [...], skipping
// targets equal to ignore_index; 0 when every target is ignored. With bias
// [c] defined, of logits + bias (broadcast over the rows; the bits of
// add(logits, bias), which is never written).
struct CrossEntropyResult {
  Tensor loss;   // 0-dim
  Tensor lse;    // [rows]: logsumexp per row, saved for the backward
  Tensor count;  // 0-dim: number of rows that counted
};
CrossEntropyResult cross_entropy(const Tensor& logits, const Tensor& targets,
                                 int64_t ignore_index = -100, const Tensor& bias = Tensor());
// gy is the 0-dim gradient of the mean loss.
Tensor cross_entropy_backward(const Tensor& gy, const Tensor& logits, const CrossEntropyResult& saved,
                              const Tensor& targets, int64_t ignore_index = -100);
// The same for the logits z + bias of a product z [rows, c] and its bias [c]
// (a classifier's last Linear, whose bias the forward took as cross_entropy's
// `bias`): the gradient of z in glogits_dtype (z's, or bf16 from f32: the
// next products' operand, the f32 values rounded once) and the bias's
// gradient, the column sums of the unrounded values (in f64), in one pass.
struct CrossEntropyGrads {
  Tensor glogits, gbias;
};
CrossEntropyGrads cross_entropy_backward_with_bias(const Tensor& gy, const Tensor& z, const Tensor& bias,
                                                   const CrossEntropyResult& saved, const Tensor& targets,
                                                   int64_t ignore_index, DType glogits_dtype);

// ---- indexing ----------------------------------------------------------------
// table [v, d] and i64 ids of any shape -> [..., d].
Tensor embedding(const Tensor& table, const Tensor& ids);
// gtable [v, d] of the lookup; repeated ids accumulate. Row padding_idx
// (when >= 0) gets 0, as an embedding's padding row (PyTorch's padding_idx).
// onto (defined: contiguous [num_rows, d], gout's dtype): the table's gradient
// gathered so far, which the lookup's terms are added onto in place (and returned).
Tensor embedding_backward(const Tensor& gout, const Tensor& ids, int64_t num_rows, int64_t padding_idx = -1,
                          const Tensor& onto = Tensor());
// The sum of lookups at each (b, l) in one pass: tables [n_t, d] (1 to
// kEmbeddingSumTerms, one dtype), ids i64 [B, L] or [1, L] (every row of the
// batch alike; at least one [B, L] sets B) -> [B, L, d] =
// ((tables[0][ids[0]] + tables[1][ids[1]]) + ...): embedding then add's bits.
Tensor embedding_sum(const std::vector<Tensor>& tables, const std::vector<Tensor>& ids);
// embedding_sum's backward, all its tables in one pass: gout [B, L, d]; ids,
// rows (n_t) and padding_idx per table as embedding_sum's and
// embedding_backward's; onto[t] as embedding_backward's (undefined: a new
// gradient). Returns table t's gradient [n_t, d] where wanted[t], else an
// undefined tensor. Ids the batch shares ([1, L]) are summed as if repeated
// for every b (in the order b = 0, 1, ...), which is a [1, L] term's
// lookup-then-broadcast gradient.
std::vector<Tensor> embedding_sum_backward(const Tensor& gout, const std::vector<Tensor>& ids,
                                           const std::vector<int64_t>& rows, const std::vector<int64_t>& padding_idx,
                                           const std::vector<Tensor>& onto, const std::vector<bool>& wanted);
// The embeddings' front: embedding_sum(tables, ids), then LayerNorm (gamma,
// beta [d], eps), then dropout(p, stream), in one pass — those ops' bits; y's
// bf16 rounding (of the dropped values) beside it when asked (with_operand, f32).
struct EmbeddingLayerNormResult {
  Tensor y;
  Tensor s;           // the lookups' sum: the LayerNorm's input, saved for the backward
  Tensor mean, rstd;  // [B, L]
  Tensor y_operand;
};
EmbeddingLayerNormResult embedding_layernorm(const std::vector<Tensor>& tables, const std::vector<Tensor>& ids,
                                             const Tensor& gamma, const Tensor& beta, double eps, double p,
                                             const PhiloxStream& stream, bool with_operand = false);
struct EmbeddingLayerNormGrads {
  std::vector<Tensor> tables;  // as embedding_sum_backward returns them
  Tensor ggamma, gbeta;
};
// ids, rows, padding_idx, onto and wanted as embedding_sum_backward's.
EmbeddingLayerNormGrads embedding_layernorm_backward(const Tensor& gy, const EmbeddingLayerNormResult& saved,
                                                     const Tensor& gamma, double p, const PhiloxStream& stream,
                                                     const std::vector<Tensor>& ids, const std::vector<int64_t>& rows,
                                                     const std::vector<int64_t>& padding_idx,
                                                     const std::vector<Tensor>& onto, const std::vector<bool>& wanted);
// index_select(x, 0, rows) of a [n, d] x, and with with_operand (f32 x) y's
// bf16 rounding written beside it in the same pass, as layernorm's
// y_operand: the MLM head's gather feeding its transform's product.
struct SelectedRows {
  Tensor y, y_operand;
};
SelectedRows select_rows(const Tensor& x, const Tensor& rows, bool with_operand);
// index_select's backward along axis 0 when rows (i64 [k]) are distinct and
// ascending, as nn::MlmRows makes them: g [k, d] -> gx [n, d], row rows[j] =
// g[j] (no sums: the same bits), every other row 0. A list that is not
// ascending and distinct in [0, n) is an error.
Tensor select_rows_backward(const Tensor& g, const Tensor& rows, int64_t n);

// A slice's gradient placed in the sliced tensor's shape `whole`: g (the
// shape of whole's slice(axis, start, ..., step)) there and 0 everywhere else,
// in one pass (a fill and a copy would be two launches). Any dtype.
Tensor pad_slice(const Tensor& g, const Shape& whole, int axis, int64_t start, int64_t step);
// Picks entries idx (i64, 1-d) along axis.
Tensor index_select(const Tensor& x, int axis, const Tensor& idx);
// skip_row (when >= 0): the entry along axis whose gradient is 0 whatever idx says.
// onto: as embedding_backward's (x's shape).
Tensor index_select_backward(const Tensor& g, int axis, const Tensor& idx, const Shape& x_shape,
                             int64_t skip_row = -1, const Tensor& onto = Tensor());
// out[..., j, ...] = x[..., idx[..., j, ...], ...] along axis (PyTorch's gather).
Tensor gather(const Tensor& x, int axis, const Tensor& idx);
Tensor gather_backward(const Tensor& g, int axis, const Tensor& idx, const Shape& x_shape);

// ---- fused transformer pieces (ops_fused.cpp) ------------------------------------
// y = LayerNorm(residual + dropout(h + bias)) in one pass (bias may be
// undefined; p = 0: no dropout), the mask dropout(h + bias, p, stream) draws.
struct ResidualLayerNormResult {
  Tensor y;
  Tensor s;           // residual + dropout(h + bias): the LayerNorm's input, saved for the backward
  Tensor mean, rstd;  // [rows]
  Tensor y_operand;   // y rounded to bf16 in the same pass, when asked (with_operand)
};
// h may be bf16 beside an f32 residual (a product's bf16 output,
// matmul_to_bf16): widened as it is read, everything else in f32.
ResidualLayerNormResult residual_layernorm(const Tensor& h, const Tensor& bias, const Tensor& residual,
                                           const Tensor& gamma, const Tensor& beta, double eps, double p,
                                           const PhiloxStream& stream, bool with_operand = false);
struct ResidualLayerNormGrads {
  Tensor gh, gbias, gresidual, ggamma, gbeta;  // gbias undefined without a bias; gh is gresidual when p = 0
};
// gh_dtype: s's, or bf16 from f32 (h a product's output, whose backward
// rounds its gradient so anyway; gbias sums the unrounded values).
ResidualLayerNormGrads residual_layernorm_backward(const Tensor& gy, const ResidualLayerNormResult& saved,
                                                   const Tensor& gamma, bool with_bias, double p,
                                                   const PhiloxStream& stream, DType gh_dtype);
// act(x + bias) over the last axis (act: gelu, gelu_tanh, relu or tanh), in
// dtype `out`: x's, or bf16 from f32 (a product's operand, rounded once).
// A bf16 x (a product's bf16 output, matmul_to_bf16) takes an f32 bias and
// is computed in f32: act(float(x) + bias), rounded once.
Tensor bias_activation(const Tensor& x, const Tensor& bias, UnaryOp act, DType out);
struct BiasActivationGrads {
  Tensor gx, gbias;
};
// gx_dtype: x's, or bf16 from f32 (as residual_layernorm_backward's gh). gy
// has x's dtype; with a bf16 x, gx = float(gy) act'(float(x) + bias) in f32,
// rounded once, and gbias (f32) sums those unrounded values.
BiasActivationGrads bias_activation_backward(const Tensor& gy, const Tensor& x, const Tensor& bias, UnaryOp act,
                                             DType gx_dtype);

// An MLM head's transform: t = act(x + bias), y = LayerNorm(t) over the last
// axis, in one pass (bias_activation then layernorm's values, bit for bit on
// the CPU); y's bf16 rounding beside it when asked (with_operand, f32 x).
struct BiasActivationLayerNormResult {
  Tensor y;
  Tensor t;           // act(x + bias): the LayerNorm's input, saved for the backward
  Tensor mean, rstd;  // [rows]
  Tensor y_operand;
};
BiasActivationLayerNormResult bias_activation_layernorm(const Tensor& x, const Tensor& bias, UnaryOp act,
                                                        const Tensor& gamma, const Tensor& beta, double eps,
                                                        bool with_operand = false);
struct BiasActivationLayerNormGrads {
  Tensor gx, gbias, ggamma, gbeta;
};
// gx_dtype: x's, or bf16 from f32 (as bias_activation_backward's).
BiasActivationLayerNormGrads bias_activation_layernorm_backward(const Tensor& gy, const Tensor& x, const Tensor& bias,
                                                                UnaryOp act, const BiasActivationLayerNormResult& saved,
                                                                const Tensor& gamma, DType gx_dtype);

// x [B, L, P H d] (a stacked product's output: P parts of H heads d wide,
// attention's q | k | v) plus bias [P H d] (or undefined) as heads
// [P, B, H, L, d] in dtype `out`: f32, or bf16 (the attention's products'
// operands, rounded once) — one pass instead of a bias broadcast, the
// product adding onto it, and a layout copy and a cast per part.
Tensor split_heads(const Tensor& x, const Tensor& bias, int64_t parts, int64_t heads, DType out);
struct SplitHeadsGrads {
  Tensor gx, gbias;  // gbias undefined unless asked
};
// gheads [P, B, H, L, d] back into x's layout [B, L, P H d] in
// gx_dtype (f32, or bf16: x is a product's output), and the bias's gradient
// (the column sums of the unrounded values) when with_bias.
SplitHeadsGrads split_heads_backward(const Tensor& gheads, bool with_bias, DType gx_dtype);

// RoPE's rotation (Su et al. 2021, Eq. 34) of x [B, H, L, d] (any view, d
// even): each pair (a, b) of row (b, h, l) -> (a cos - b sin, a sin + b cos)
// with cosines and sines [B, L, d / 2] (x's dtype) of the angles p theta_i,
// the pairs (2i, 2i + 1) or, with `half`, (i, i + d/2). The values of the
// unfused ops (four multiplies, a subtraction and an addition) in one pass;
// `inverse` turns by -angle, which is its backward (a rotation's transpose
// is its inverse).
Tensor rotary(const Tensor& x, const Tensor& cosines, const Tensor& sines, bool half, bool inverse = false);

// ---- relative position encodings (ops_relative.cpp) ---------------------------
// idx: i64 [B, L, J], the table row of (query i, key j), shared by the heads.
// [B, H, L, R] -> [B, H, L, J]: out[b,h,i,j] = x[b,h,i,idx[b,i,j]].
Tensor relative_gather(const Tensor& x, const Tensor& idx);
// [B, H, L, J] -> [B, H, L, rows]: sums g over the j of each row r (the transpose of relative_gather).
Tensor relative_scatter(const Tensor& g, const Tensor& idx, int64_t rows);
// q [B,H,L,D], k [B,H,J,D], a [H,R,D] -> [B,H,L,J]: alpha * sum_d q_id k_jd a_{idx_ij,d}.
Tensor relative_product(const Tensor& q, const Tensor& k, const Tensor& a, const Tensor& idx, double alpha = 1.0);
struct RelativeProductGrads {
  Tensor gq, gk, ga;  // undefined where not asked for
};
RelativeProductGrads relative_product_backward(const Tensor& gs, const Tensor& q, const Tensor& k, const Tensor& a,
                                               const Tensor& idx, double alpha, bool need_q, bool need_k,
                                               bool need_a);
// Banded terms of consecutive positions (the distance of query i and key j is
// j - i): table [Ht, 2L - 1, D], Ht = 1 (every head) or H, row t the distance
// t - (L - 1); h' is head h's table (tensor/kernels.inc).
// x [B, H, L, D] -> [B, H, L, L]: sum_d x[b,h,i,d] table[h', j - i + L - 1, d].
Tensor band_scores(const Tensor& x, const Tensor& table, MatmulPrecision precision = MatmulPrecision::fp32);
// p [B, H, L, L] -> [B, H, L, D]: sum_j p[b,h,i,j] table[h', j - i + L - 1, :].
Tensor band_apply(const Tensor& p, const Tensor& table, MatmulPrecision precision = MatmulPrecision::fp32);
// Both ops' table gradient, [table_heads, 2L - 1, D]: sum of g[b,h,i,j] y[b,h,i,:]
// over the pairs of each row; g [B, H, L, L], y [B, H, L, D]. Under bf16
// products (precision bf16) the three ops' f32 operands are rounded to bf16
// first, as a product's are: FP32 sums of the exact products.
Tensor band_table_grad(const Tensor& g, const Tensor& y, int64_t table_heads,
                       MatmulPrecision precision = MatmulPrecision::fp32);

// ---- fused attention (ops_attention.cpp; the terms: tensor/attention_terms.h) --------------
// q [B, H, L, d], k and v [B, H, J, d] -> out [B, H, L, d] and lse [B, H, L].
// out is a view of a contiguous [B, L, H, d] block: the heads already merged
// as the output projection takes them (nn/bert.cpp's merge_heads is then a
// view). with_operand (f32): its bf16 rounding too, written in the same
// pass in the same layout, for that product to take instead of a cast.
struct AttentionOutput {
  Tensor out, lse;
  Tensor out_operand;
};
AttentionOutput attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms,
                                  bool with_operand = false);
// Which gradients attention_backward computes.
struct AttentionNeeds {
  bool q = false, k = false, v = false;
  bool gate = false, product = false, query_vectors = false, key_vectors = false, table = false,
       value_vectors = false;
  bool pos_query = false, pos_key = false, segment_table = false;
};
// Every gradient asked for, in the shape of its input (segment_table's in
// AttentionGrads::segment_table); undefined where not asked for or absent.
AttentionGrads attention_backward(const Tensor& gout, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const AttentionOutput& forward, const AttentionTerms& terms,
                                  const AttentionNeeds& needs);

// Attention for inference on the CPU (ops_attention.cpp): q [B, H, L, d],
// k [B, H, J, d], v [B, H, J, e], mask (optional, added to the scores)
// [B or 1, 1, L or 1, J], bias (optional, the variant's score terms; fewer
// axes broadcast) [B or 1, H or 1, L or 1, J] -> [B, L, H e], the heads merged:
// softmax(scale q k^T + bias + mask) v by the same matmul, add and softmax ops as the
// unfused attention, so with the same values, one batch element a thread at
// a time: its [H, L, J] scores stay in the cache, q, k and v are read where
// they lie (a view of the q/k/v projection needs no copy), the output is
// written in place. Under bf16 products (precision) q, k, v (f32, or bf16 as the
// projection writes them) and the probabilities are the products' bf16
// operands, rounded once. No gradient. out_dtype bf16 (f32 inputs): the
// output written as its bf16 rounding, for a product to take (the output
// projection), instead of f32.
Tensor attention_inference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                           const Tensor& bias = Tensor(), DType out_dtype = DType::f32,
                           MatmulPrecision precision = MatmulPrecision::fp32);

Tensor concat(const std::vector<Tensor>& parts, int axis);
// Views of x: consecutive pieces of the given sizes along axis.
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int axis);

// ---- randomness, training --------------------------------------------------------
// A stream's base, when given, is one i64 on the op's device (throws naming op).
void check_philox_stream(const PhiloxStream& stream, Device device, const char* op);
// out: x's dtype, or bf16 from f32 (a product's operand: the values rounded
// as they are written, instead of a cast after).
Tensor dropout(const Tensor& x, double p, const PhiloxStream& stream, DType out);
inline Tensor dropout(const Tensor& x, double p, const PhiloxStream& stream) {
  return dropout(x, p, stream, x.dtype());
}
inline Tensor dropout(const Tensor& x, double p, uint64_t seed, uint64_t stream) {
  return dropout(x, p, PhiloxStream{seed, stream, Tensor()});
}
void uniform_(const Tensor& out, double low, double high, uint64_t seed, uint64_t stream);
void normal_(const Tensor& out, double mean, double std, uint64_t seed, uint64_t stream);
void trunc_normal_(const Tensor& out, double mean, double std, uint64_t seed, uint64_t stream);

void adamw_(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
            const AdamWStep& step);
// The sum of the squares of each tensor's elements, [tensors.size()] on
// their device in their dtype (all the same); each sum reduced in a fixed
// order (the same result for any thread count).
Tensor sums_of_squares(const std::vector<Tensor>& tensors);
// sqrt of the sum of squares of every element of every tensor, read to the
// host (one synchronisation on a device); 0 for no tensors.
double global_norm(const std::vector<Tensor>& tensors);
// sqrt of partial sums of squares added in f64 in their order: global_norm's
// total from sums_of_squares read to the host.
double norm_of_sums(const std::vector<double>& partial_sums);
// torch.nn.utils.clip_grad_norm_ without reading anything to the host: when
// the global norm n exceeds max_norm, every tensor (contiguous, as gradients
// are) is scaled in place by max_norm / (n + 1e-6). Returns n, 0-d on the
// tensors' device, for the caller to read when it needs it (non-finite when
// some element is, and then the tensors are no longer meaningful).
Tensor clip_by_global_norm_(const std::vector<Tensor>& tensors, double max_norm);

// ---- AdamW over every parameter in three kernels (ops_train.cpp) --------------------
// The tables of a multi-tensor step (AdamWTensors, tensor/backend.h) for
// these parameters, their gradients and moments (contiguous, one dtype and
// device, params[i], grads[i], m[i] and v[i] of one shape); decay[i] says
// whether weight decay applies to params[i]. Copies two small tables to the
// device: build once, and again only when the parameters with a gradient change.
// rounded (empty, or one per parameter, undefined where none): bf16 tensors
// the update writes each updated f32 parameter's rounding into (round to
// nearest even, the cast's bits).
AdamWTensors adamw_tensors(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> m,
                           std::vector<Tensor> v, const std::vector<bool>& decay,
                           std::vector<Tensor> rounded = {});
// The global norm of the gradients and torch's clip factor for max_norm
// (<= 0: none), [norm, factor] on their device in their dtype: two kernels,
// nothing read to the host.
Tensor global_norm_and_clip(const AdamWTensors& t, double max_norm);
// The schedule adamw_multi_ reads: [lr, 1 / (1 - beta1^step), 1 / sqrt(1 -
// beta2^step)] in f64, written into `schedule` (3 elements on the device: a
// copy from the host, no kernel).
void write_adamw_schedule(const Tensor& schedule, double lr, double beta1, double beta2, int64_t step);
// One AdamW step of every parameter (AdamWStep's formula) with the gradients
// scaled by norm_and_clip[1]; nothing changes when norm_and_clip[0] is not
// finite. One kernel.
void adamw_multi_(const AdamWTensors& t, const Tensor& norm_and_clip, const Tensor& schedule, const AdamWConstants& c);

}  // namespace ordo
