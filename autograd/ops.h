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
inline Var neg(const Var& x) { return unary(UnaryOp::neg, x); }
inline Var exp(const Var& x) { return unary(UnaryOp::exp, x); }
inline Var log(const Var& x) { return unary(UnaryOp::log, x); }
inline Var sqrt(const Var& x) { return unary(UnaryOp::sqrt, x); }
inline Var rsqrt(const Var& x) { return unary(UnaryOp::rsqrt, x); }
inline Var tanh(const Var& x) { return unary(UnaryOp::tanh, x); }
inline Var erf(const Var& x) { return unary(UnaryOp::erf, x); }
inline Var relu(const Var& x) { return unary(UnaryOp::relu, x); }
inline Var gelu(const Var& x) { return unary(UnaryOp::gelu, x); }
inline Var gelu_tanh(const Var& x) { return unary(UnaryOp::gelu_tanh, x); }
inline Var sigmoid(const Var& x) { return unary(UnaryOp::sigmoid, x); }
inline Var abs(const Var& x) { return unary(UnaryOp::abs, x); }
inline Var sin(const Var& x) { return unary(UnaryOp::sin, x); }
inline Var cos(const Var& x) { return unary(UnaryOp::cos, x); }
inline Var pow(const Var& x, double exponent) { return unary(UnaryOp::pow, x, {exponent, 0}); }
inline Var affine(const Var& x, double scale, double shift = 0) {
  return unary(UnaryOp::affine, x, {scale, shift});
}

// Broadcasting; gradients are summed back to each operand's shape.
Var binary(BinaryOp op, const Var& a, const Var& b);
inline Var add(const Var& a, const Var& b) { return binary(BinaryOp::add, a, b); }
inline Var sub(const Var& a, const Var& b) { return binary(BinaryOp::sub, a, b); }
inline Var mul(const Var& a, const Var& b) { return binary(BinaryOp::mul, a, b); }
inline Var div(const Var& a, const Var& b) { return binary(BinaryOp::div, a, b); }
// At ties the gradient goes to a (maximum) / a (minimum), as a subgradient.
inline Var maximum(const Var& a, const Var& b) { return binary(BinaryOp::maximum, a, b); }
inline Var minimum(const Var& a, const Var& b) { return binary(BinaryOp::minimum, a, b); }
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
Var index_select(const Var& x, int axis, const Tensor& idx);
Var gather(const Var& x, int axis, const Tensor& idx);

// ---- relative position encodings (ops_relative.cpp) -------------------------------------
// idx: i64 [B, L, J], the table row of (query i, key j), shared by the heads.
// [B, H, L, R] -> [B, H, L, J]: y[b,h,i,j] = x[b,h,i,idx[b,i,j]] (q . a_r for every r, then picked per pair).
Var relative_gather(const Var& x, const Tensor& idx);
// [B, H, L, J] -> [B, H, L, rows]: the transpose (Shaw's value term: sum_j a_ij a^V_{r_ij} = scatter(a) A^V).
Var relative_scatter(const Var& g, const Tensor& idx, int64_t rows);
// q [B,H,L,D], k [B,H,J,D], a [H,R,D] -> [B,H,L,J]: alpha sum_d q_id k_jd a_{idx_ij,d}, pair by pair.
Var relative_product(const Var& q, const Var& k, const Var& a, const Tensor& idx, double alpha = 1.0);

// ---- transformer pieces (ops_nn.cpp) ------------------------------------------------------
Var matmul(const Var& a, const Var& b, bool trans_a = false, bool trans_b = false, double alpha = 1.0);
// x W^T + b (b may be an undefined Var): a Linear layer in one op.
Var linear(const Var& x, const Var& weight, const Var& bias);
// mask (optional) is added to the scores before the softmax and may itself
// be differentiable (a learned positional bias); an undefined Var means none.
Var softmax(const Var& x, const Var& mask = Var());
Var log_softmax(const Var& x, const Var& mask = Var());
Var layernorm(const Var& x, const Var& gamma, const Var& beta, double eps);
// Mean over rows whose target is not ignore_index (0 when none counts).
Var cross_entropy(const Var& logits, const Tensor& targets, int64_t ignore_index = -100);
// Identity when p == 0; the backward recomputes the mask from (seed, stream).
Var dropout(const Var& x, double p, uint64_t seed, uint64_t stream);

}  // namespace ordo
