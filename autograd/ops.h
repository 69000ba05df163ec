// Differentiable ops on Vars. Each computes its value with the Tensor op of
// the same name (tensor/ops.h) and records its backward, which sits right
// next to it in autograd/ops_*.cpp. Names match the Tensor ops; the argument
// types (Var vs Tensor) pick the differentiable version.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/var.h"
#include "tensor/ops.h"

namespace ordo {

// ---- elementwise (ops_elementwise.cpp) -------------------------------------------------
Var unary(UnaryOp op, const Var& x, UnaryParams params = {});
// neg, exp, log, ...: one wrapper per op of tensor/unary_ops.def without
// parameters, e.g. `Var exp(const Var& x)` = unary(UnaryOp::exp, x).
#define ORDO_UNARY_OP(name, Formula, domain) \
  inline Var name(const Var& x) { return unary(UnaryOp::name, x); }
#define ORDO_UNARY_OP_WITH_PARAMS(name, Formula, domain)
#include "tensor/unary_ops.def"
inline Var pow(const Var& x, double exponent) { return unary(UnaryOp::pow, x, {exponent, 0}); }
inline Var affine(const Var& x, double scale, double shift = 0) {
  return unary(UnaryOp::affine, x, {scale, shift});
}

// Broadcasting; gradients are summed back to each operand's shape.
Var binary(BinaryOp op, const Var& a, const Var& b);
// add, sub, mul, ...: one wrapper per ORDO_BINARY_OP op (not the comparisons) of
// tensor/binary_ops.def, e.g. `Var add(const Var& a, const Var& b)` = binary(BinaryOp::add, a, b).
// At ties maximum's and minimum's gradient goes to a, as a subgradient.
#define ORDO_BINARY_OP(name, Formula) \
  inline Var name(const Var& a, const Var& b) { return binary(BinaryOp::name, a, b); }
#define ORDO_COMPARISON_OP(name, Formula)
#include "tensor/binary_ops.def"
// cond is a plain Tensor (a mask is not differentiated).
Var where(const Tensor& cond, const Var& a, const Var& b);

// ---- reductions (ops_reduce.cpp) -----------------------------------------------------
Var sum(const Var& x, const std::vector<int>& axes = {}, bool keepdim = false);
Var mean(const Var& x, const std::vector<int>& axes = {}, bool keepdim = false);
// The gradient is shared equally by tied maxima (minima).
Var max(const Var& x, const std::vector<int>& axes = {}, bool keepdim = false);
Var min(const Var& x, const std::vector<int>& axes = {}, bool keepdim = false);
Var var(const Var& x, const std::vector<int>& axes = {}, bool keepdim = false, int64_t correction = 0);

// ---- shapes (ops_shape.cpp) ------------------------------------------------------------
Var reshape(const Var& x, const Shape& shape);
Var permute(const Var& x, const std::vector<int>& order);
Var transpose(const Var& x, int a, int b);
Var slice(const Var& x, int axis, int64_t start, int64_t end, int64_t step = 1);
Var select(const Var& x, int axis, int64_t index);  // slice + reshape
Var expand(const Var& x, const Shape& shape);
Var unsqueeze(const Var& x, int axis);
Var squeeze(const Var& x, int axis);
Var contiguous(const Var& x);
Var concat(const std::vector<Var>& parts, int axis);
std::vector<Var> split(const Var& x, const std::vector<int64_t>& sizes, int axis);

// ---- indexing (ops_index.cpp) -----------------------------------------------------------
// The row padding_idx (when >= 0) receives no gradient (PyTorch's padding_idx).
Var embedding(const Var& table, const Tensor& ids, int64_t padding_idx = -1);
// The lookups' sum in one pass (tensor/ops.h's embedding_sum): a BERT's
// word + token-type + position embeddings. padding_idx[t]: table t's row
// that receives no gradient (-1: none). Its gradients are the lookups', all
// three tables' in one pass (tensor/ops.h's embedding_sum_backward: ids
// [1, L] summed as if repeated for each sequence).
Var embedding_sum(const std::vector<Var>& tables, const std::vector<Tensor>& ids,
                  const std::vector<int64_t>& padding_idx);
// dropout(LayerNorm(embedding_sum(tables, ids)), p, stream) in one op: the
// embeddings' front (p = 0: no dropout). Under a forward's
// OperandRoundingScope the kernel writes y's bf16 rounding too, for the
// first layer's product.
Var embedding_layernorm(const std::vector<Var>& tables, const std::vector<Tensor>& ids,
                        const std::vector<int64_t>& padding_idx, const Var& gamma, const Var& beta, double eps,
                        double p, const PhiloxStream& stream);
Var index_select(const Var& x, int axis, const Tensor& idx);
// index_select along axis 0 of rows listed distinct and ascending (the MLM
// head's predicted positions, nn::MlmRows): the same values; the backward is
// a scatter (a row gets at most one gradient row: no sort, no sums), on CUDA
// one kernel where index_add takes three and a sort. A list that is not
// ascending and distinct is an error in the backward.
Var select_rows(const Var& x, const Tensor& rows);
Var gather(const Var& x, int axis, const Tensor& idx);

// ---- relative position encodings (ops_relative.cpp) -------------------------------------
// idx: i64 [B, L, J], the table row of (query i, key j), shared by the heads.
// [B, H, L, R] -> [B, H, L, J]: y[b,h,i,j] = x[b,h,i,idx[b,i,j]] (q . a_r for every r, then picked per pair).
Var relative_gather(const Var& x, const Tensor& idx);
// [B, H, L, J] -> [B, H, L, rows]: the transpose (Shaw's value term: sum_j a_ij a^V_{r_ij} = scatter(a) A^V).
Var relative_scatter(const Var& g, const Tensor& idx, int64_t rows);
// q [B,H,L,D], k [B,H,J,D], a [H,R,D] -> [B,H,L,J]: alpha sum_d q_id k_jd a_{idx_ij,d}, pair by pair.
Var relative_product(const Var& q, const Var& k, const Var& a, const Tensor& idx, double alpha = 1.0);
// Consecutive positions (key j - query i the distance): table [Ht, 2L - 1, D]
// (Ht 1 or H), row t the distance t - (L - 1), in place of an index.
// x [B,H,L,D] -> [B,H,L,L]: sum_d x_id table[h', j - i + L - 1, d] (q_i . a_{j-i} for every pair).
// Under bf16 products (precision) both ops and their backwards round their
// f32 operands as products do (tensor/ops.h band_table_grad).
Var band_scores(const Var& x, const Var& table, MatmulPrecision precision = MatmulPrecision::fp32);
// p [B,H,L,L] -> [B,H,L,D]: sum_j p_ij table[h', j - i + L - 1] (Shaw's value term sum_j alpha_ij a^V_{j-i}).
Var band_apply(const Var& p, const Var& table, MatmulPrecision precision = MatmulPrecision::fp32);

// ---- fused attention (ops_attention.cpp; the terms: tensor/attention_terms.h) -------------
// The terms that carry gradients (each may be undefined); attention() puts
// their values into the AttentionTerms it is given.
struct AttentionVars {
  Var gate, product, query_vectors, key_vectors, table, value_vectors, pos_query, pos_key, segment_table;
  // terms with the value of each defined Var in its place.
  AttentionTerms values_in(AttentionTerms terms) const;
};
// q [B, H, L, d], k, v [B, H, J, d] -> o [B, H, L, d]: softmax(s + terms) (v + V) in one op.
Var attention(const Var& q, const Var& k, const Var& v, const AttentionVars& vars, AttentionTerms terms);

// ---- transformer pieces (ops_nn.cpp) ------------------------------------------------------
// `precision` (tensor/device_runtime.h), here and below: how the op's
// products multiply and, for the ops that write a product's operand or its
// gradient (as_operand, x_is_product, ...), whether that is rounded to bf16.
// The backward's products take the forward's. Model code passes its
// nn::Context::precision; the default is the exact fp32 product.
Var matmul(const Var& a, const Var& b, bool trans_a = false, bool trans_b = false, double alpha = 1.0,
           MatmulPrecision precision = MatmulPrecision::fp32);
// a b for a product that is the operand of another product alone (the
// attention's context, through the heads' layout copy, for the output
// projection): under bf16 products written in bf16 by the product itself
// (matmul_to_bf16: the rounding the operand would get, half the bytes); else
// matmul. Its gradient may arrive in bf16 (a product wrote it so): the
// backward's products round it to that anyway.
Var matmul_to_operand(const Var& a, const Var& b, MatmulPrecision precision);
// x W^T + b (b may be an undefined Var): a Linear layer in one op.
// output_as_operand (no bias; bf16 products): the output rounded to bf16 as
// the product writes it (matmul_to_bf16), for a fused kernel that reads it so
// (bias_activation). Under bf16 products, x's gradient is written in bf16
// where x's op takes one (Node::takes_bf16_gradient).
Var linear(const Var& x, const Var& weight, const Var& bias, bool output_as_operand = false,
           MatmulPrecision precision = MatmulPrecision::fp32);
// Several Linears of one input as one product (tensor/ops.h linear_stacked):
// [x W_1^T + b_1, ..., x W_n^T + b_n] along the last axis; biases: none, or one each.
Var linear_stacked(const Var& x, const std::vector<Var>& weights, const std::vector<Var>& biases,
                   MatmulPrecision precision = MatmulPrecision::fp32);
// mask (optional) is added to the scores before the softmax and may itself
// be differentiable (a learned positional bias); an undefined Var means none.
// x_is_product: x is a product's output that nothing else reads, so its
// gradient is written as that product's backward takes it (bf16 under bf16
// precision: the same result, half the bytes; not with a learned mask).
Var softmax(const Var& x, const Var& mask = Var(), bool x_is_product = false,
            MatmulPrecision precision = MatmulPrecision::fp32);
// dropout(softmax(x + mask), p, stream) as one op, whose backward is one pass
// (softmax's, gy through the mask as it is read); x_is_product as softmax's,
// as_operand as dropout's. probs, when given, gets softmax's output (before
// the dropout: a trace's attentions). p = 0: softmax alone.
Var softmax_dropout(const Var& x, const Var& mask, double p, const PhiloxStream& stream, bool x_is_product,
                    bool as_operand, Tensor* probs = nullptr, MatmulPrecision precision = MatmulPrecision::fp32);
Var log_softmax(const Var& x, const Var& mask = Var());
// to_product: y feeds a product (nothing else is in between), so under a
// forward's OperandRoundingScope its bf16 rounding is written beside it.
Var layernorm(const Var& x, const Var& gamma, const Var& beta, double eps, bool to_product = true);
// Mean over rows whose target is not ignore_index (0 when none counts).
Var cross_entropy(const Var& logits, const Tensor& targets, int64_t ignore_index = -100);
// A classifier's last Linear and its loss as one node (the MLM decoder):
// cross_entropy(matmul(x, weightᵀ) + bias, targets), the bias added by the
// loss's kernels as they read each logit (tensor/ops.h's cross_entropy with
// a bias), so no broadcast of it is written. Its backward writes the logits'
// gradient once, as the products' operand (bf16 under bf16 products), with
// the bias's gradient summed in the same pass (cross_entropy_backward_with_bias):
// one kernel on CUDA where linear and cross_entropy apart take three (the
// gradient, its cast, the bias's sum), and a forward of one kernel and one
// product where they take a broadcast too. product (when given): matmul(x,
// weightᵀ) before the bias (the logits are add(product, bias)), for reports.
Var linear_cross_entropy(const Var& x, const Var& weight, const Var& bias, const Tensor& targets,
                         int64_t ignore_index = -100, Tensor* product = nullptr,
                         MatmulPrecision precision = MatmulPrecision::fp32);
// ---- fused transformer pieces (ops_fused.cpp) ------------------------------------------------
// LayerNorm(residual + dropout(h + bias)) in one op: a post-LN layer's
// residual branch (bias may be an undefined Var; p = 0: no dropout), the mask
// of dropout(h + bias, p, stream). h_is_product: h is a product's output
// that nothing else reads, so its gradient is written as that product's
// backward takes it (bf16 under bf16 precision: the same result, half the bytes).
Var residual_layernorm(const Var& h, const Var& bias, const Var& residual, const Var& gamma, const Var& beta,
                       double eps, double p, const PhiloxStream& stream, bool h_is_product = false,
                       MatmulPrecision precision = MatmulPrecision::fp32);
// act(x + bias) in one op (act: gelu, gelu_tanh, relu, tanh). as_operand:
// the value is stored as the next product takes it (bf16 under bf16
// precision); x_is_product: x's gradient likewise (residual_layernorm's h).
Var bias_activation(const Var& x, const Var& bias, UnaryOp act, bool as_operand = false, bool x_is_product = false,
                    MatmulPrecision precision = MatmulPrecision::fp32);
// LayerNorm(act(x + bias)) in one op: an MLM head's transform, x a product's
// output (its gradient written as bias_activation's with x_is_product). Under
// a forward's OperandRoundingScope the kernel writes y's bf16 rounding too,
// for the decoder's product.
Var bias_activation_layernorm(const Var& x, const Var& bias, UnaryOp act, const Var& gamma, const Var& beta,
                              double eps, MatmulPrecision precision = MatmulPrecision::fp32);
// x [B, L, P H d] plus the parts' biases (none, or one [H d] each) as heads
// [P, B, H, L, d] (tensor/ops.h split_heads); as_operand: the heads feed
// products alone (bf16 under bf16 precision); x_is_product: x's gradient
// likewise. Part p is select(heads, 0, p).
Var split_heads(const Var& x, const std::vector<Var>& biases, int64_t parts, int64_t heads, bool as_operand,
                bool x_is_product, MatmulPrecision precision = MatmulPrecision::fp32);
// RoPE's rotation of x [B, H, L, d] with the angles' cosines and sines
// [B, L, d / 2] (tensor/ops.h rotary): the unfused ops' values in one op; the
// backward turns the gradient back (by -angle).
Var rotary(const Var& x, const Tensor& cosines, const Tensor& sines, bool half);
// x as products of that precision take it (as_operand: bf16 under bf16),
// rounded once for several products; the gradient passes through unchanged.
Var operand(const Var& x, MatmulPrecision precision);
// The dtype in which a kernel writes a value like x (or x's gradient) that
// only products take: bf16 for f32 under bf16 precision when for_product,
// else x's — the rounding the product would make, made by the writer.
DType operand_dtype(const Var& x, bool for_product, MatmulPrecision precision);

// Identity when p == 0; the backward recomputes the mask from (seed, stream).
Var dropout(const Var& x, double p, const PhiloxStream& stream);
inline Var dropout(const Var& x, double p, uint64_t seed, uint64_t stream) {
  return dropout(x, p, PhiloxStream{seed, stream, Tensor()});
}

}  // namespace ordo
