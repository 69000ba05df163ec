#include "autograd/gradcheck_suite.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "autograd/ops.h"

namespace ordo {

namespace {

// Inputs drawn uniformly from [low, high) (Philox, fixed seeds).
Tensor rnd(const Shape& shape, uint64_t seed, double low = -1, double high = 1) {
  Tensor t = Tensor::empty(shape, DType::f64);
  uniform_(t, low, high, seed, 0);
  return t;
}

// Values in ±[0.2, 1): away from the kinks of relu/abs and the pole of 1/x.
Tensor away_from_zero(const Shape& shape, uint64_t seed) {
  Tensor u = rnd(shape, seed, -1, 1);
  Tensor sign = sub(mul(gt(u, Tensor::scalar(0.0, DType::f64)), Tensor::scalar(2.0, DType::f64)),
                    Tensor::scalar(1.0, DType::f64));
  return mul(sign, affine(abs(u), 0.8, 0.2));
}

Tensor ids(const std::vector<int64_t>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape);
}

// Where an op of tensor/unary_ops.def is checked (its `domain` column).
enum class Domain { any, positive, kinked };

Tensor unary_inputs(Domain domain, const Shape& shape, uint64_t seed) {
  switch (domain) {
    case Domain::positive: return rnd(shape, seed, 0.2, 2.0);
    case Domain::kinked: return away_from_zero(shape, seed);
    case Domain::any: break;
  }
  return affine(rnd(shape, seed), 2.0);
}

// op applied to a transposed view: the non-contiguous path.
void add_transposed_unary_case(std::vector<GradcheckCase>& cases, UnaryOp op, Domain domain, uint64_t seed) {
  cases.push_back({std::string(unary_name(op)) + " (transposed input)", {unary_inputs(domain, {3, 4}, seed)},
                   [op](const std::vector<Var>& v) { return unary(op, transpose(v[0], 0, 1)); }, {}});
}

void add_unary_cases(std::vector<GradcheckCase>& cases) {
  uint64_t seed = 100;
#define ORDO_UNARY_OP(name, Formula, domain) add_transposed_unary_case(cases, UnaryOp::name, Domain::domain, ++seed);
#define ORDO_UNARY_OP_WITH_PARAMS(name, Formula, domain)
#include "tensor/unary_ops.def"
  cases.push_back({"pow 2.5", {rnd({5}, 120, 0.2, 2.0)},
                   [](const std::vector<Var>& v) { return pow(v[0], 2.5); }, {}});
  cases.push_back({"affine", {rnd({5}, 121)}, [](const std::vector<Var>& v) { return affine(v[0], -1.5, 0.3); }, {}});
}

void add_binary_cases(std::vector<GradcheckCase>& cases) {
  cases.push_back({"add [3,4] + [4]", {rnd({3, 4}, 200), rnd({4}, 201)},
                   [](const std::vector<Var>& v) { return add(v[0], v[1]); }, {}});
  cases.push_back({"sub [3,1] - [1,4]", {rnd({3, 1}, 202), rnd({1, 4}, 203)},
                   [](const std::vector<Var>& v) { return sub(v[0], v[1]); }, {}});
  cases.push_back({"mul [2,3,4] * [3,1]", {rnd({2, 3, 4}, 204), rnd({3, 1}, 205)},
                   [](const std::vector<Var>& v) { return mul(v[0], v[1]); }, {}});
  cases.push_back({"div [2,3] / [2,1] (strided numerator)", {rnd({3, 2}, 206), rnd({2, 1}, 207, 0.5, 2.0)},
                   [](const std::vector<Var>& v) { return div(transpose(v[0], 0, 1), v[1]); }, {}});
  // b = a + offset with |offset| >= 0.1: never a tie within eps.
  Tensor a = rnd({3, 4}, 208);
  Tensor b = add(a, away_from_zero({3, 4}, 209));
  cases.push_back({"maximum", {a, b}, [](const std::vector<Var>& v) { return maximum(v[0], v[1]); }, {}});
  cases.push_back({"minimum [3,4] vs [4]", {a, add(a.select(0, 0), away_from_zero({4}, 210))},
                   [](const std::vector<Var>& v) { return minimum(v[0], v[1]); }, {}});
  Tensor cond = gt(rnd({3, 4}, 211), Tensor::scalar(0.0, DType::f64));
  cases.push_back({"where (b broadcast)", {rnd({3, 4}, 212), rnd({4}, 213), cond},
                   [](const std::vector<Var>& v) { return where(v[2].value(), v[0], v[1]); }, {2}});
}

void add_reduction_cases(std::vector<GradcheckCase>& cases) {
  cases.push_back({"sum axis 1", {rnd({2, 3, 4}, 300)}, [](const std::vector<Var>& v) { return sum(v[0], {1}); }, {}});
  cases.push_back({"sum all", {rnd({2, 3}, 301)}, [](const std::vector<Var>& v) { return sum(v[0]); }, {}});
  cases.push_back({"mean axes 0,2 keepdim", {rnd({2, 3, 4}, 302)},
                   [](const std::vector<Var>& v) { return mean(v[0], {0, 2}, true); }, {}});
  cases.push_back({"max last axis", {rnd({3, 5}, 303)}, [](const std::vector<Var>& v) { return max(v[0], {-1}); }, {}});
  cases.push_back({"min axis 0 of a transposed view", {rnd({5, 3}, 304)},
                   [](const std::vector<Var>& v) { return min(transpose(v[0], 0, 1), {0}); }, {}});
  cases.push_back({"var axis 1, correction 1", {rnd({3, 6}, 305)},
                   [](const std::vector<Var>& v) { return var(v[0], {1}, false, 1); }, {}});
}

void add_shape_cases(std::vector<GradcheckCase>& cases) {
  cases.push_back({"reshape of a transposed view (copying path)", {rnd({2, 6}, 400)},
                   [](const std::vector<Var>& v) { return reshape(transpose(v[0], 0, 1), {3, 4}); }, {}});
  cases.push_back({"permute + contiguous", {rnd({2, 3, 4}, 401)},
                   [](const std::vector<Var>& v) { return contiguous(permute(v[0], {2, 0, 1})); }, {}});
  cases.push_back({"slice with step, select", {rnd({4, 6}, 402)},
                   [](const std::vector<Var>& v) { return add(slice(v[0], 1, 1, 6, 2), unsqueeze(select(v[0], 1, 0), 1)); }, {}});
  cases.push_back({"expand", {rnd({3, 1}, 403)}, [](const std::vector<Var>& v) { return expand(v[0], {2, 3, 4}); }, {}});
  // Slices that tile their input (one buffer, no zeros), that overlap, and
  // that meet a gradient of the whole input (the zero-padded sum).
  cases.push_back({"slices tiling their input, overlapping, and with the whole input", {rnd({2, 6}, 406)},
                   [](const std::vector<Var>& v) {
                     Var t = mul(v[0], v[0]);  // read by its tiling slices alone
                     Var tiled = add(mul(slice(t, 1, 0, 2), slice(t, 1, 2, 4)), slice(t, 1, 4, 6));
                     Var u = sub(v[0], mul(v[0], v[0]));
                     Var overlapping = mul(slice(u, 1, 0, 3), slice(u, 1, 1, 4));
                     Var w = mul(v[0], u);
                     Var mixed = mul(slice(w, 1, 0, 6, 3), sum(w, {1}, true));
                     return concat({tiled, overlapping, mixed}, 1);
                   }, {}});
  cases.push_back({"concat + split", {rnd({2, 3}, 404), rnd({2, 2}, 405)}, [](const std::vector<Var>& v) {
                     Var c = concat({v[0], v[1]}, 1);
                     std::vector<Var> parts = split(c, {1, 4}, 1);
                     return mul(parts[1], squeeze(unsqueeze(parts[0], 0), 0));
                   }, {}});
}

void add_index_cases(std::vector<GradcheckCase>& cases) {
  cases.push_back({"embedding with repeated ids", {rnd({5, 3}, 500)},
                   [](const std::vector<Var>& v) { return embedding(v[0], ids({4, 1, 4, 0, 4, 2}, {2, 3})); }, {}});
  cases.push_back({"embedding_sum: three tables, repeated ids, the last looked up alike for the batch",
                   {rnd({5, 3}, 503), rnd({2, 3}, 504), rnd({4, 3}, 505)}, [](const std::vector<Var>& v) {
                     return embedding_sum(v, {ids({4, 1, 4, 0, 4, 2}, {2, 3}), ids({0, 1, 1, 0, 0, 0}, {2, 3}),
                                              ids({3, 0, 3}, {1, 3})},
                                          {-1, -1, -1});
                   }, {}});
  // The embeddings' front: the sum, LayerNorm and dropout p=0.3 (a padding
  // row's zero gradient is by design, not a derivative: tests/tensor/test_fused.cpp).
  cases.push_back({"embedding_layernorm: three tables, dropout p=0.3",
                   {rnd({5, 4}, 507), rnd({2, 4}, 508), rnd({4, 4}, 509), rnd({4}, 510, 0.5, 1.5), rnd({4}, 511)},
                   [](const std::vector<Var>& v) {
                     return embedding_layernorm({v[0], v[1], v[2]},
                                                {ids({4, 1, 4, 0, 4, 2}, {2, 3}), ids({0, 1, 1, 0, 0, 0}, {2, 3}),
                                                 ids({3, 0, 3}, {1, 3})},
                                                {-1, -1, -1}, v[3], v[4], 1e-5, 0.3, PhiloxStream{77, 6, Tensor()});
                   }, {}});
  cases.push_back({"index_select axis 1", {rnd({3, 4, 2}, 501)},
                   [](const std::vector<Var>& v) { return index_select(v[0], 1, ids({3, 0, 3}, {3})); }, {}});
  cases.push_back({"select_rows: ascending, distinct, rows 1 and 3 not picked", {rnd({5, 3}, 506)},
                   [](const std::vector<Var>& v) { return select_rows(v[0], ids({0, 2, 4}, {3})); }, {}});
  cases.push_back({"gather axis 0", {rnd({3, 4}, 502)},
                   [](const std::vector<Var>& v) { return gather(v[0], 0, ids({2, 0, 1, 2, 2, 2, 0, 1}, {2, 4})); }, {}});
}

// Relative-distance indices with repeats inside rows (clipped distances) and
// rows never used, so the scatters' sums and zeros are both exercised.
void add_relative_cases(std::vector<GradcheckCase>& cases) {
  // idx [B=2, L=3, J=4] into R=5 rows.
  Tensor idx = ids({0, 1, 1, 4, 2, 2, 2, 3, 4, 0, 3, 3, 1, 1, 0, 4, 3, 2, 1, 0, 2, 4, 4, 1}, {2, 3, 4});
  cases.push_back({"relative_gather [2,3,3,5] by [2,3,4]", {rnd({2, 3, 3, 5}, 550)},
                   [idx](const std::vector<Var>& v) { return relative_gather(v[0], idx); }, {}});
  cases.push_back({"relative_scatter [2,3,3,4] into 5 rows (transposed input)", {rnd({2, 3, 4, 3}, 551)},
                   [idx](const std::vector<Var>& v) { return relative_scatter(transpose(v[0], 2, 3), idx, 5); }, {}});
  // q [2,2,3,3] from a permuted [2,3,2,3] view (as attention's heads are), k [2,2,4,3], a [2,5,3].
  cases.push_back({"relative_product q k a (q a permuted view)", {rnd({2, 3, 2, 3}, 552), rnd({2, 2, 4, 3}, 553), rnd({2, 5, 3}, 554)},
                   [idx](const std::vector<Var>& v) {
                     return relative_product(permute(v[0], {0, 2, 1, 3}), v[1], v[2], idx, 0.7);
                   }, {}});
  // The banded terms, L = 3 (tables of 2L - 1 = 5 rows): a table per head and
  // one for both heads, x from a permuted view.
  cases.push_back({"band_scores x [2,2,3,4] (permuted view), a table per head [2,5,4]",
                   {rnd({2, 3, 2, 4}, 556), rnd({2, 5, 4}, 557)},
                   [](const std::vector<Var>& v) { return band_scores(permute(v[0], {0, 2, 1, 3}), v[1]); }, {}});
  cases.push_back({"band_apply p [2,2,3,3], one table [1,5,2]", {rnd({2, 2, 3, 3}, 558), rnd({1, 5, 2}, 559)},
                   [](const std::vector<Var>& v) { return band_apply(v[0], v[1]); }, {}});
  cases.push_back({"band_apply p [1,2,3,3], a table per head [2,5,3]", {rnd({1, 2, 3, 3}, 560), rnd({2, 5, 3}, 561)},
                   [](const std::vector<Var>& v) { return band_apply(v[0], v[1]); }, {}});
}

// The fused attention with every term it takes, over positions that are not
// consecutive (so rows repeat within a query row), in three cases: relative
// tables with a gate and dropout; the three-way product with an absolute
// product E.F and per-head segments under a causal mask; TUPE's [CLS] reset
// with a fixed dense term and padding.
void add_attention_cases(std::vector<GradcheckCase>& cases) {
  // B = 2, H = 2, L = 3, d = 2; distances p_j - p_i within -3..3 map to rows 0..4 (clipped at 2).
  const Tensor positions = ids({0, 2, 3, 1, 1, 4}, {2, 3});
  const Tensor row_of = ids({0, 0, 1, 2, 3, 4, 4}, {7});
  auto rows = [positions, row_of](AttentionTerms t) {
    t.positions = positions, t.row_of = row_of, t.first_distance = -3;
    return t;
  };
  cases.push_back({"attention: gate, query and key vectors, table, value vectors, dropout",
                   {rnd({2, 2, 3, 2}, 700), rnd({2, 2, 3, 2}, 701), rnd({2, 2, 3, 2}, 702), rnd({2, 5}, 703, 0.5, 1.5),
                    rnd({1, 5, 2}, 704), rnd({2, 5, 2}, 705), rnd({2, 5}, 706), rnd({1, 5, 2}, 707)},
                   [rows](const std::vector<Var>& v) {
                     AttentionTerms t = rows({});
                     t.scale = 0.7, t.query_scale = 0.5, t.key_scale = -0.3;
                     t.dropout = 0.3, t.seed = 11, t.stream = 5;
                     AttentionVars a;
                     a.gate = v[3], a.query_vectors = v[4], a.key_vectors = v[5], a.table = v[6], a.value_vectors = v[7];
                     return attention(v[0], v[1], v[2], a, t);
                   }, {}});
  const Tensor segments = ids({0, 0, 1, 0, 1, 1}, {2, 3});
  cases.push_back({"attention: product, E.F, segments, causal (q a permuted view)",
                   {rnd({2, 3, 2, 2}, 710), rnd({2, 2, 3, 2}, 711), rnd({2, 2, 3, 2}, 712), rnd({2, 5, 2}, 713),
                    rnd({1, 2, 3, 3}, 714), rnd({2, 2, 3, 3}, 715), rnd({1, 4}, 716)},
                   [rows, segments](const std::vector<Var>& v) {
                     AttentionTerms t = rows({});
                     t.scale = 0.6, t.pos_scale = 0.4, t.causal = true;
                     t.segments = segments, t.segment_types = 2;
                     AttentionVars a;
                     a.product = v[3], a.pos_query = v[4], a.pos_key = v[5], a.segment_table = v[6];
                     return attention(permute(v[0], {0, 2, 1, 3}), v[1], v[2], a, t);
                   }, {}});
  cases.push_back({"attention: RoPE's rotation (pairs m, m + d/2), segments, causal, dropout",
                   {rnd({2, 2, 3, 4}, 730), rnd({2, 2, 3, 4}, 731), rnd({2, 2, 3, 4}, 732), rnd({2, 4}, 733)},
                   [positions, segments](const std::vector<Var>& v) {
                     AttentionTerms t;
                     t.positions = positions, t.rotary = Tensor::from_vector(std::vector<double>{1.0, 0.3}, {2});
                     t.rotary_half = true, t.causal = true, t.scale = 0.5;
                     t.segments = segments, t.segment_types = 2;
                     t.dropout = 0.25, t.seed = 2, t.stream = 1;
                     AttentionVars a;
                     a.segment_table = v[3];
                     return attention(v[0], v[1], v[2], a, t);
                   }, {}});
  const Tensor padding = Tensor::from_vector(std::vector<double>{0, 0, 0, 0, 0, -3.4028234663852886e38}, {2, 1, 3});
  const Tensor fixed = rnd({1, 2, 3, 3}, 727);
  cases.push_back({"attention: TUPE's [CLS] reset, E.F, a fixed dense term, padding",
                   {rnd({2, 2, 3, 2}, 720), rnd({2, 2, 3, 2}, 721), rnd({2, 2, 3, 2}, 722), rnd({2, 7}, 723),
                    rnd({2, 2, 3, 2}, 724), rnd({2, 2, 3, 2}, 725)},
                   [rows, padding, fixed](const std::vector<Var>& v) {
                     AttentionTerms t = rows({});
                     t.cls_row = 5, t.pos_scale = 0.8, t.key_bias = padding, t.dense_bias = fixed;
                     AttentionVars a;
                     a.table = v[3], a.pos_query = v[4], a.pos_key = v[5];
                     return attention(v[0], v[1], v[2], a, t);
                   }, {}});
}

void add_nn_cases(std::vector<GradcheckCase>& cases) {
  cases.push_back({"matmul batched with broadcast", {rnd({2, 1, 3, 4}, 600), rnd({3, 4, 5}, 601)},
                   [](const std::vector<Var>& v) { return matmul(v[0], v[1]); }, {}});
  cases.push_back({"matmul trans_a trans_b", {rnd({2, 4, 3}, 602), rnd({2, 5, 4}, 603)},
                   [](const std::vector<Var>& v) { return matmul(v[0], v[1], true, true); }, {}});
  cases.push_back({"matmul trans_a", {rnd({4, 3}, 616), rnd({4, 5}, 617)},
                   [](const std::vector<Var>& v) { return matmul(v[0], v[1], true, false); }, {}});
  cases.push_back({"matmul Linear: [2,3,4] x W^T [5,4]", {rnd({2, 3, 4}, 604), rnd({5, 4}, 605)},
                   [](const std::vector<Var>& v) { return matmul(v[0], v[1], false, true); }, {}});
  cases.push_back({"matmul shared weight [2,3,4] x [4,5]", {rnd({2, 3, 4}, 618), rnd({4, 5}, 619)},
                   [](const std::vector<Var>& v) { return matmul(v[0], v[1]); }, {}});
  cases.push_back({"matmul of permuted heads (q k^T)", {rnd({2, 3, 2, 4}, 606), rnd({2, 3, 2, 4}, 607)},
                   [](const std::vector<Var>& v) {
                     return matmul(permute(v[0], {0, 2, 1, 3}), permute(v[1], {0, 2, 1, 3}), false, true);
                   }, {}});
  cases.push_back({"linear [2,3,4] W^T [5,4] + b", {rnd({2, 3, 4}, 626), rnd({5, 4}, 627), rnd({5}, 628)},
                   [](const std::vector<Var>& v) { return linear(v[0], v[1], v[2]); }, {}});
  cases.push_back({"linear_stacked: three Linears of one input, their biases", {rnd({2, 3, 4}, 631), rnd({2, 4}, 632),
                   rnd({3, 4}, 633), rnd({2, 4}, 634), rnd({2}, 635), rnd({3}, 636), rnd({2}, 637)},
                   [](const std::vector<Var>& v) { return linear_stacked(v[0], {v[1], v[2], v[3]}, {v[4], v[5], v[6]}); },
                   {}});
  cases.push_back({"linear_stacked without biases, its parts as Q K V views", {rnd({2, 3, 4}, 638), rnd({4, 4}, 639),
                   rnd({4, 4}, 653), rnd({4, 4}, 654)},
                   [](const std::vector<Var>& v) {
                     Var parts = reshape(linear_stacked(v[0], {v[1], v[2], v[3]}, {}), {2, 3, 3, 2, 2});
                     auto part = [&](int64_t i) { return permute(select(parts, 2, i), {0, 2, 1, 3}); };
                     return matmul(matmul(part(0), part(1), false, true), part(2));
                   }, {}});
  cases.push_back({"products of slices of one block: written into its gradient, a slice read twice, overlapping slices",
                   {rnd({3, 2, 4, 3}, 671)},
                   [](const std::vector<Var>& v) {
                     Var h = affine(v[0], 1.5);  // a block of heads, as split_heads makes
                     Var q = select(h, 0, 0), k = select(h, 0, 1), w = select(h, 0, 2);
                     Var attended = matmul(matmul(q, k, false, true), w);  // each its place in h's gradient
                     Var again = matmul(q, q, true, false);                 // q read again: its terms summed
                     Var g = affine(v[0], -0.5);
                     Var overlapping = matmul(slice(g, 0, 0, 2), slice(g, 0, 1, 3), false, true);  // one place only
                     return concat({reshape(attended, {-1}), reshape(again, {-1}), reshape(overlapping, {-1})}, 0);
                   }, {}});
  cases.push_back({"linear and linear_stacked adding onto their input's gathered gradient",
                   {rnd({2, 3, 4}, 655), rnd({2, 4}, 656), rnd({2, 4}, 657), rnd({4, 4}, 658), rnd({4}, 659)},
                   [](const std::vector<Var>& v) {
                     Var h = mul(v[0], v[0]);  // read by both products and by the elementwise term
                     Var y = linear_stacked(h, {v[1], v[2]}, {});
                     return add(mul(linear(h, v[3], v[4]), h), y);
                   }, {}});
  cases.push_back({"linear without bias, strided input, alpha-scaled matmul", {rnd({4, 3}, 629), rnd({2, 4}, 630)},
                   [](const std::vector<Var>& v) {
                     return matmul(linear(transpose(v[0], 0, 1), v[1], Var()), v[1], false, false, 0.7);
                   }, {}});
  cases.push_back({"softmax with a learned [1,1,4] bias", {rnd({2, 3, 4}, 608, -2, 2), rnd({1, 1, 4}, 609)},
                   [](const std::vector<Var>& v) { return softmax(v[0], v[1]); }, {}});
  cases.push_back({"log_softmax", {rnd({3, 5}, 610, -2, 2)}, [](const std::vector<Var>& v) { return log_softmax(v[0]); }, {}});
  cases.push_back({"layernorm", {rnd({4, 6}, 611, -2, 2), rnd({6}, 612, 0.5, 1.5), rnd({6}, 613)},
                   [](const std::vector<Var>& v) { return layernorm(v[0], v[1], v[2], 1e-5); }, {}});
  cases.push_back({"cross_entropy with an ignored row", {rnd({4, 5}, 614, -2, 2)}, [](const std::vector<Var>& v) {
                     return cross_entropy(v[0], ids({3, -100, 0, 4}, {4}));
                   }, {}});
  cases.push_back({"linear_cross_entropy: the decoder's product, bias and loss, a row ignored",
                   {rnd({4, 3}, 618), rnd({5, 3}, 619), rnd({5}, 620)}, [](const std::vector<Var>& v) {
                     return linear_cross_entropy(v[0], v[1], v[2], ids({3, -100, 0, 4}, {4}));
                   }, {}});
  cases.push_back({"softmax_dropout p=0.3 with a learned mask", {rnd({3, 5}, 616, -2, 2), rnd({1, 5}, 617)},
                   [](const std::vector<Var>& v) {
                     return softmax_dropout(v[0], v[1], 0.3, PhiloxStream{77, 4, Tensor()}, false, false);
                   }, {}});
  cases.push_back({"dropout p=0.3", {rnd({4, 8}, 615)},
                   [](const std::vector<Var>& v) { return dropout(v[0], 0.3, 77, 3); }, {}});
  // The fused pieces: dropout on, a bias, rows of 6; without a bias and dropout.
  cases.push_back({"residual_layernorm with bias and dropout p=0.3",
                   {rnd({4, 6}, 640), rnd({6}, 641), rnd({4, 6}, 642, -2, 2), rnd({6}, 643, 0.5, 1.5), rnd({6}, 644)},
                   [](const std::vector<Var>& v) {
                     return residual_layernorm(v[0], v[1], v[2], v[3], v[4], 1e-5, 0.3, PhiloxStream{77, 5, Tensor()});
                   }, {}});
  cases.push_back({"residual_layernorm without bias or dropout",
                   {rnd({3, 5}, 645), rnd({3, 5}, 646, -2, 2), rnd({5}, 647, 0.5, 1.5), rnd({5}, 648)},
                   [](const std::vector<Var>& v) {
                     return residual_layernorm(v[0], Var(), v[1], v[2], v[3], 1e-5, 0.0, PhiloxStream{});
                   }, {}});
  // q | k | v of 2 heads 2 wide over [B 2, L 3], a bias each; and two parts without.
  cases.push_back({"split_heads with biases",
                   {rnd({2, 3, 12}, 660), rnd({4}, 661), rnd({4}, 662), rnd({4}, 663)},
                   [](const std::vector<Var>& v) { return split_heads(v[0], {v[1], v[2], v[3]}, 3, 2, false, false); },
                   {}});
  cases.push_back({"split_heads without biases", {rnd({2, 3, 8}, 664)},
                   [](const std::vector<Var>& v) { return split_heads(v[0], {}, 2, 1, false, false); }, {}});
  // RoPE's rotation of a strided view (as q is of the q/k/v product), both pairings.
  for (bool half : {false, true})
    cases.push_back({std::string("rotary, ") + (half ? "halves" : "interleaved pairs"), {rnd({2, 3, 2, 4}, 665)},
                     [half](const std::vector<Var>& v) {
                       const Tensor angles = rnd({2, 3, 2}, 666, -4, 4);
                       return rotary(permute(v[0], {0, 2, 1, 3}), cos(angles), sin(angles), half);
                     }, {}});
  for (UnaryOp act : {UnaryOp::gelu, UnaryOp::gelu_tanh, UnaryOp::tanh})
    cases.push_back({std::string("bias_activation ") + unary_name(act), {rnd({3, 4}, 649, -2, 2), rnd({4}, 650)},
                     [act](const std::vector<Var>& v) { return bias_activation(v[0], v[1], act); }, {}});
  // relu is kinked at 0: inputs kept away from the kink ((x + b) in +-[0.2, 1.6)).
  cases.push_back({"bias_activation relu",
                   {Tensor::from_vector(std::vector<double>{0.5, -0.4, 1.1, -0.9, 0.3, -0.8}, {2, 3}),
                    Tensor::from_vector(std::vector<double>{0.1, -0.2, 0.3}, {3})},
                   [](const std::vector<Var>& v) { return bias_activation(v[0], v[1], UnaryOp::relu); }, {}});
  // An MLM head's transform: GELU then LayerNorm (rows of 5: a column's sums over 3 rows).
  cases.push_back({"bias_activation_layernorm gelu",
                   {rnd({3, 5}, 653, -2, 2), rnd({5}, 654), rnd({5}, 655, 0.5, 1.5), rnd({5}, 656)},
                   [](const std::vector<Var>& v) {
                     return bias_activation_layernorm(v[0], v[1], UnaryOp::gelu, v[2], v[3], 1e-5);
                   }, {}});
  cases.push_back({"operand (the product's operand) into matmul", {rnd({2, 3}, 651), rnd({3, 2}, 652)},
                   [](const std::vector<Var>& v) { return matmul(operand(v[0], MatmulPrecision::fp32), v[1]); }, {}});
  // A two-layer network end to end: the ops composed as a model composes them.
  cases.push_back({"two-layer MLP + layernorm + cross-entropy",
                   {rnd({6, 4}, 620), rnd({4, 8}, 621, -0.7, 0.7), rnd({8}, 622), rnd({8}, 623, 0.5, 1.5),
                    rnd({8}, 624), rnd({3, 8}, 625, -0.7, 0.7)},
                   [](const std::vector<Var>& v) {
                     Var h = gelu(add(matmul(v[0], v[1]), v[2]));
                     h = layernorm(h, v[3], v[4], 1e-5);
                     return cross_entropy(matmul(h, v[5], false, true), ids({0, 2, 1, 1, -100, 2}, {6}));
                   }, {}});
}

}  // namespace

std::vector<GradcheckCase> gradcheck_cases() {
  std::vector<GradcheckCase> cases;
  add_unary_cases(cases);
  add_binary_cases(cases);
  add_reduction_cases(cases);
  add_shape_cases(cases);
  add_index_cases(cases);
  add_relative_cases(cases);
  add_attention_cases(cases);
  add_nn_cases(cases);
  return cases;
}

std::vector<GradcheckOutcome> run_gradcheck_suite(const std::vector<std::string>& ops) {
  const std::vector<std::string> known = differentiable_ops();
  for (const std::string& op : ops)
    if (std::find(known.begin(), known.end(), op) == known.end()) {
      std::string names;
      for (const std::string& k : known) names += " " + k;
      throw Error("gradcheck: '" + op + "' is not a differentiable op; the ops are:" + names);
    }
  std::vector<GradcheckOutcome> outcomes;
  for (const GradcheckCase& c : gradcheck_cases()) {
    GradcheckOutcome o{c.name, gradcheck(c.f, c.inputs, GradcheckOptions{}, c.constant)};
    const auto touches = [&](const std::string& op) {
      return std::find(o.result.ops.begin(), o.result.ops.end(), op) != o.result.ops.end();
    };
    if (ops.empty() || std::any_of(ops.begin(), ops.end(), touches)) outcomes.push_back(std::move(o));
  }
  return outcomes;
}

std::vector<std::string> uncovered_ops(const std::vector<GradcheckOutcome>& outcomes,
                                       const std::vector<std::string>& ops) {
  std::set<std::string> seen;
  for (const auto& o : outcomes) seen.insert(o.result.ops.begin(), o.result.ops.end());
  std::vector<std::string> missing;
  for (const std::string& op : ops.empty() ? differentiable_ops() : ops)
    if (!seen.count(op)) missing.push_back(op);
  return missing;
}

}  // namespace ordo
