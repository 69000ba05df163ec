// Forward results of the primitive ops against hand-worked values and naive
// loops written in the test (never the ops' own output).
#include <cmath>
#include <limits>

#include "tensor/backend.h"
#include "tensor/ops.h"
#include "tensor/product_onto.h"
#include "tests/helpers.h"

using namespace ordo;
using ordo::test::f64;
using ordo::test::i64;
using ordo::test::random_tensor;
using ordo::test::random_values;
using ordo::test::require_close;

namespace {
const double kInf = std::numeric_limits<double>::infinity();

// f32 results against double references: a few ulps of float.
constexpr double kF32 = 2e-6;
}  // namespace

TEST_CASE("unary ops match the C library in f64 and f32", "[ops]") {
  std::vector<double> xs = random_values(257, 11, -3, 3);
  std::vector<double> pos = random_values(257, 12, 0.1, 4);
  struct Case {
    UnaryOp op;
    bool positive;
    double (*ref)(double);
  };
  const Case cases[] = {
      {UnaryOp::neg, false, [](double x) { return -x; }},
      {UnaryOp::exp, false, [](double x) { return std::exp(x); }},
      {UnaryOp::log, true, [](double x) { return std::log(x); }},
      {UnaryOp::sqrt, true, [](double x) { return std::sqrt(x); }},
      {UnaryOp::rsqrt, true, [](double x) { return 1 / std::sqrt(x); }},
      {UnaryOp::tanh, false, [](double x) { return std::tanh(x); }},
      {UnaryOp::erf, false, [](double x) { return std::erf(x); }},
      {UnaryOp::relu, false, [](double x) { return x > 0 ? x : 0.0; }},
      {UnaryOp::gelu, false, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {UnaryOp::gelu_tanh, false,
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }},
      {UnaryOp::sigmoid, false, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {UnaryOp::abs, false, [](double x) { return std::fabs(x); }},
      {UnaryOp::sin, false, [](double x) { return std::sin(x); }},
      {UnaryOp::cos, false, [](double x) { return std::cos(x); }},
  };
  for (const Case& c : cases) {
    const std::vector<double>& in = c.positive ? pos : xs;
    std::vector<double> expected;
    for (double x : in) expected.push_back(c.ref(x));
    Tensor x = f64(in, {257});
    require_close(unary(c.op, x), expected, 1e-14, 1e-15, unary_name(c.op));
    require_close(unary(c.op, x.to(DType::f32)), expected, kF32, 1e-7, std::string(unary_name(c.op)) + " f32");
  }
  // A few values by hand.
  require_close(gelu(f64({0, 1, -1}, {3})), {0, 0.8413447460685429, -0.15865525393145707}, 1e-14, 1e-16);
  require_close(pow(f64({2, 3}, {2}), 3), {8, 27}, 0, 0);
  require_close(affine(f64({2, -1}, {2}), 3, 1), {7, -2}, 0, 0);
  require_close(sigmoid(f64({0}, {1})), {0.5}, 0, 0);
}

TEST_CASE("unary ops read strided views", "[ops]") {
  Tensor t = random_tensor({4, 5}, 3);
  Tensor tt = t.transpose(0, 1);
  require_close(exp(tt), exp(tt.contiguous()).to_doubles(), 0, 0);
}

TEST_CASE("binary ops broadcast as NumPy", "[ops]") {
  Tensor a = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor row = f64({10, 20, 30}, {3});
  Tensor col = f64({100, 200}, {2, 1});
  require_close(add(a, row), {11, 22, 33, 14, 25, 36}, 0, 0);
  require_close(sub(a, col), {-99, -98, -97, -196, -195, -194}, 0, 0);
  require_close(mul(col, row), {1000, 2000, 3000, 2000, 4000, 6000}, 0, 0);  // outer product [2,3]
  require_close(div(a, f64({2}, {})), {0.5, 1, 1.5, 2, 2.5, 3}, 0, 0);
  require_close(maximum(a, f64({3.5}, {1})), {3.5, 3.5, 3.5, 4, 5, 6}, 0, 0);
  require_close(minimum(a, f64({3.5}, {1})), {1, 2, 3, 3.5, 3.5, 3.5}, 0, 0);
  require_close(eq(a, f64({1, 0, 3}, {3})), {1, 0, 1, 0, 0, 0}, 0, 0);
  require_close(lt(a, f64({3}, {1})), {1, 1, 0, 0, 0, 0}, 0, 0);
  require_close(ge(a, f64({3}, {1})), {0, 0, 1, 1, 1, 1}, 0, 0);
  require_close(ne(a, a), {0, 0, 0, 0, 0, 0}, 0, 0);
  CHECK(add(a, row).shape() == Shape{2, 3});
  CHECK(mul(f64({1, 2}, {2, 1, 1}), f64({1, 2, 3}, {1, 3})).shape() == Shape{2, 1, 3});
  // i64 arithmetic (positions times a constant for the skip-position attack)
  CHECK(mul(i64({0, 1, 2}, {3}), i64({3}, {1})).to_vector<int64_t>() == std::vector<int64_t>{0, 3, 6});
  // NaN propagates through maximum as in PyTorch
  CHECK(std::isnan(maximum(f64({NAN}, {1}), f64({1}, {1})).item()));
  // Strided operands on both sides
  Tensor m = random_tensor({3, 4}, 5);
  require_close(add(m.transpose(0, 1), m.transpose(0, 1)), mul(m, f64({2}, {1})).transpose(0, 1).contiguous().to_doubles(), 0, 0);
}

TEST_CASE("in-place add accumulates and where selects", "[ops]") {
  Tensor acc = f64({1, 2, 3, 4}, {2, 2});
  add_(acc, f64({10, 20}, {2}));
  require_close(acc, {11, 22, 13, 24}, 0, 0);
  CHECK_THROWS_AS(add_(acc.transpose(0, 1), acc), Error);
  Tensor cond = f64({1, 0, 0, 1}, {2, 2});
  require_close(where(cond, f64({5}, {1}), f64({-1, -2}, {2})), {5, -2, -1, 5}, 0, 0);
}

TEST_CASE("reductions over chosen axes match naive loops", "[ops]") {
  const Shape shape{3, 4, 5};
  std::vector<double> v = random_values(60, 21);
  Tensor x = f64(v, shape);
  auto at = [&](int i, int j, int k) { return v[(i * 4 + j) * 5 + k]; };

  std::vector<double> s1, m02, mx2, mn0;
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 5; ++k) {
      double s = 0;
      for (int j = 0; j < 4; ++j) s += at(i, j, k);
      s1.push_back(s);
    }
  for (int j = 0; j < 4; ++j) {
    double s = 0;
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 5; ++k) s += at(i, j, k);
    m02.push_back(s / 15);
  }
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      double m = -kInf;
      for (int k = 0; k < 5; ++k) m = std::max(m, at(i, j, k));
      mx2.push_back(m);
    }
  for (int j = 0; j < 4; ++j)
    for (int k = 0; k < 5; ++k) {
      double m = kInf;
      for (int i = 0; i < 3; ++i) m = std::min(m, at(i, j, k));
      mn0.push_back(m);
    }
  require_close(sum(x, {1}), s1, 1e-14, 1e-15, "sum axis 1");
  require_close(mean(x, {0, 2}), m02, 1e-14, 1e-15, "mean axes 0,2 (permuted path)");
  require_close(max(x, {-1}), mx2, 0, 0, "max last axis");
  require_close(min(x, {0}), mn0, 0, 0, "min axis 0");
  CHECK(sum(x, {1}, true).shape() == Shape{3, 1, 5});
  CHECK(sum(x).shape() == Shape{});
  double total = 0;
  for (double e : v) total += e;
  CHECK(sum(x).item() == Approx(total).epsilon(1e-14));
  // The same on a transposed view (non-contiguous input).
  require_close(sum(x.transpose(0, 2), {1}), sum(x, {1}).transpose(0, 1).contiguous().to_doubles(), 1e-14, 1e-15);
}

TEST_CASE("variance: population and with a correction", "[ops]") {
  // [1, 2, 3, 4]: mean 2.5, squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5
  Tensor x = f64({1, 2, 3, 4}, {4});
  CHECK(var(x).item() == Approx(1.25).epsilon(1e-15));
  CHECK(var(x, {}, false, 1).item() == Approx(5.0 / 3).epsilon(1e-15));
  Tensor rows = f64({1, 2, 3, 4, 10, 10, 10, 10}, {2, 4});
  require_close(var(rows, {1}), {1.25, 0}, 1e-15, 1e-15);
}

TEST_CASE("long rows sum exactly enough across the blocked reduction", "[ops]") {
  std::vector<double> v = random_values(10000, 31);
  long double exact = 0;
  for (double e : v) exact += e;
  CHECK(sum(f64(v, {10000})).item() == Approx(static_cast<double>(exact)).epsilon(1e-13));
  // f32 input, accumulated in double: the error is the f32 rounding of the inputs only.
  Tensor x32 = f64(v, {10000}).to(DType::f32);
  std::vector<double> rounded = x32.to_doubles();
  long double exact32 = 0;
  for (double e : rounded) exact32 += e;
  CHECK(sum(x32).item() == Approx(static_cast<double>(exact32)).epsilon(1e-6));
}

TEST_CASE("argmax returns the first maximum", "[ops]") {
  Tensor x = f64({1, 5, 5, 2, 7, 0, 7, 7}, {2, 4});
  CHECK(argmax(x, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  CHECK(argmax(x, 0).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1, 1});
  CHECK(argmax(x, 1, true).shape() == Shape{2, 1});
}

TEST_CASE("sum_to undoes broadcasting", "[ops]") {
  Tensor g = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  require_close(sum_to(g, {3}), {5, 7, 9}, 0, 0);
  require_close(sum_to(g, {2, 1}), {6, 15}, 0, 0);
  require_close(sum_to(g, {1, 1}), {21}, 0, 0);
  CHECK(sum_to(g, {2, 3}).shares_storage_with(g));
  CHECK_THROWS_AS(sum_to(g, {4}), Error);
}

namespace {
// C[b] = op(A[b]) op(B[b]) by the definition, on already-transposed logical operands.
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b) {
  Tensor ac = a.contiguous(), bc = b.contiguous();
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  const int64_t batch = a.numel() / (m * k);
  std::vector<double> av = ac.to_doubles(), bv = bc.to_doubles(), out;
  const int64_t bbatch = b.numel() / (k * n);
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        long double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += static_cast<long double>(av[(t * m + i) * k + p]) * bv[((bbatch == 1 ? 0 : t) * k + p) * n + j];
        out.push_back(static_cast<double>(s));
      }
  return out;
}
}  // namespace

TEST_CASE("matmul matches the definition for every layout", "[ops]") {
  Tensor a = random_tensor({2, 3, 5, 4}, 41), b = random_tensor({2, 3, 4, 6}, 42);
  require_close(matmul(a, b), naive_matmul(a, b), 1e-13, 1e-14, "batched");
  // Transposes through flags and through strided views give the same products.
  Tensor at = a.transpose(-1, -2).contiguous(), bt = b.transpose(-1, -2).contiguous();
  require_close(matmul(at, b, true, false), naive_matmul(a, b), 1e-13, 1e-14, "trans_a");
  require_close(matmul(a, bt, false, true), naive_matmul(a, b), 1e-13, 1e-14, "trans_b");
  require_close(matmul(at, bt, true, true), naive_matmul(a, b), 1e-13, 1e-14, "trans both");
  require_close(matmul(at.transpose(-1, -2), b), naive_matmul(a, b), 1e-13, 1e-14, "column-major view");
  // A head-split view [B, L, H, d] -> [B, H, L, d] is used without a copy.
  Tensor q = random_tensor({2, 5, 3, 4}, 43).permute({0, 2, 1, 3});
  Tensor kk = random_tensor({2, 5, 3, 4}, 44).permute({0, 2, 1, 3});
  require_close(matmul(q, kk, false, true), naive_matmul(q, kk.transpose(-1, -2)), 1e-13, 1e-14, "attention scores");
  // A shared 2-D weight against a batch (the Linear layer).
  Tensor x = random_tensor({3, 7, 4}, 45), w = random_tensor({4, 6}, 46);
  require_close(matmul(x, w), naive_matmul(x, w), 1e-13, 1e-14, "shared weight");
  Tensor wt = random_tensor({6, 4}, 47);
  require_close(matmul(x, wt, false, true), naive_matmul(x, wt.transpose(0, 1)), 1e-13, 1e-14, "Linear x W^T");
  // Broadcast batch axes: [2, 1, 5, 4] @ [3, 4, 6] -> [2, 3, 5, 6]
  Tensor a1 = random_tensor({2, 1, 5, 4}, 48), b3 = random_tensor({3, 4, 6}, 49);
  Tensor c = matmul(a1, b3);
  CHECK(c.shape() == Shape{2, 3, 5, 6});
  require_close(c, naive_matmul(a1.expand({2, 3, 5, 4}), b3.expand({2, 3, 4, 6})), 1e-13, 1e-14, "broadcast");
  // f32 against the f64 definition: error grows like k * eps_f32.
  Tensor a32 = random_tensor({33, 65}, 50, DType::f32), b32 = random_tensor({65, 17}, 51, DType::f32);
  require_close(matmul(a32, b32), naive_matmul(a32.to(DType::f64), b32.to(DType::f64)), 1e-5, 65 * 6e-8, "f32");
  // Empty inner size gives zeros.
  require_close(matmul(Tensor::zeros({2, 0}, DType::f64), Tensor::zeros({0, 3}, DType::f64)), {0, 0, 0, 0, 0, 0}, 0, 0);
}

TEST_CASE("softmax and log-softmax with an additive mask", "[ops]") {
  // softmax(0, ln 2, ln 3) = (1, 2, 3) / 6
  Tensor x = f64({0, std::log(2.0), std::log(3.0)}, {1, 3});
  require_close(softmax(x), {1.0 / 6, 2.0 / 6, 3.0 / 6}, 1e-15, 1e-16);
  require_close(log_softmax(x), {std::log(1.0 / 6), std::log(2.0 / 6), std::log(0.5)}, 1e-15, 1e-15);
  // Masking the middle position renormalises over the rest: (1, 3) / 4.
  Tensor mask = f64({0, -kInf, 0}, {3});
  require_close(softmax(x, mask), {0.25, 0, 0.75}, 1e-15, 1e-16);
  // Large values do not overflow (the max is subtracted first).
  require_close(softmax(f64({1000, 1000}, {2})), {0.5, 0.5}, 0, 1e-16);
  // A fully masked row gives zeros, not NaN.
  require_close(softmax(f64({1, 2}, {2}), f64({-kInf, -kInf}, {2})), {0, 0}, 0, 0);
  // A [B, 1, 1, L] padding mask broadcast over heads and query rows.
  Tensor scores = random_tensor({2, 3, 4, 4}, 61);
  Tensor pad = f64({0, 0, 0, -kInf, 0, 0, -kInf, -kInf}, {2, 1, 1, 4});
  Tensor y = softmax(scores, pad);
  std::vector<double> sv = scores.to_doubles(), yv = y.to_doubles(), pv = pad.to_doubles();
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 12; ++r) {
      double denom = 0;
      for (int j = 0; j < 4; ++j) denom += pv[b * 4 + j] == 0 ? std::exp(sv[(b * 12 + r) * 4 + j]) : 0;
      for (int j = 0; j < 4; ++j) {
        double expected = pv[b * 4 + j] == 0 ? std::exp(sv[(b * 12 + r) * 4 + j]) / denom : 0;
        CHECK(yv[(b * 12 + r) * 4 + j] == Approx(expected).epsilon(1e-14).margin(1e-16));
      }
    }
}

TEST_CASE("layernorm matches its formula", "[ops]") {
  const int rows = 5, n = 7;
  std::vector<double> xv = random_values(rows * n, 71, -2, 3), gv = random_values(n, 72), bv = random_values(n, 73);
  auto r = layernorm(f64(xv, {rows, n}), f64(gv, {n}), f64(bv, {n}), 1e-5);
  std::vector<double> expected, means, rstds;
  for (int i = 0; i < rows; ++i) {
    double mu = 0, var_ = 0;
    for (int j = 0; j < n; ++j) mu += xv[i * n + j] / n;
    for (int j = 0; j < n; ++j) var_ += (xv[i * n + j] - mu) * (xv[i * n + j] - mu) / n;
    for (int j = 0; j < n; ++j) expected.push_back((xv[i * n + j] - mu) / std::sqrt(var_ + 1e-5) * gv[j] + bv[j]);
    means.push_back(mu);
    rstds.push_back(1 / std::sqrt(var_ + 1e-5));
  }
  require_close(r.y, expected, 1e-13, 1e-14);
  require_close(r.mean, means, 1e-14, 1e-15);
  require_close(r.rstd, rstds, 1e-14, 1e-15);
  CHECK(r.mean.shape() == Shape{rows});
}

TEST_CASE("cross-entropy by hand, with an ignored row", "[ops]") {
  // Row 0: logits (0, ln 3, -inf), target 1: -log(3 / 4) = ln(4/3).
  // Row 1: logits (ln 2, 0, 0), target 0: -log(2 / 4) = ln 2.
  // Row 2: ignored.
  Tensor logits = f64({0, std::log(3.0), -kInf, std::log(2.0), 0, 0, 1, 2, 3}, {3, 3});
  auto r = cross_entropy(logits, i64({1, 0, -100}, {3}));
  CHECK(r.loss.item() == Approx((std::log(4.0 / 3) + std::log(2.0)) / 2).epsilon(1e-14));
  CHECK(r.count.item() == 2);
  // Every target ignored: the loss is 0, not NaN.
  CHECK(cross_entropy(logits, i64({-100, -100, -100}, {3})).loss.item() == 0);
  // The gradient of the mean: (softmax - onehot) / 2 on counted rows, 0 on the ignored one.
  Tensor g = cross_entropy_backward(Tensor::scalar(1.0, DType::f64), logits, r, i64({1, 0, -100}, {3}));
  require_close(g, {0.25 / 2, -0.25 / 2, 0, -0.5 / 2, 0.25 / 2, 0.25 / 2, 0, 0, 0}, 1e-14, 1e-16);
  CHECK_THROWS_WITH(cross_entropy(logits, i64({3, 0, 0}, {3})), Catch::Contains("target 3"));
}

TEST_CASE("embedding, index_select and gather pick and scatter back", "[ops]") {
  Tensor table = f64({0, 1, 10, 11, 20, 21, 30, 31}, {4, 2});
  Tensor ids = i64({2, 0, 2}, {3});
  require_close(embedding(table, ids), {20, 21, 0, 1, 20, 21}, 0, 0);
  CHECK(embedding(table, i64({1, 2, 3, 0}, {2, 2})).shape() == Shape{2, 2, 2});
  // Row 2 is picked twice: its gradient is the sum of both.
  Tensor g = f64({1, 2, 3, 4, 5, 6}, {3, 2});
  require_close(embedding_backward(g, ids, 4), {3, 4, 0, 0, 6, 8, 0, 0}, 0, 0);

  Tensor x = f64({0, 1, 2, 3, 4, 5}, {2, 3});
  require_close(index_select(x, 1, i64({2, 0}, {2})), {2, 0, 5, 3}, 0, 0);
  require_close(index_select_backward(f64({1, 2, 3, 4}, {2, 2}), 1, i64({2, 2}, {2}), {2, 3}), {0, 0, 3, 0, 0, 7}, 0, 0);
  // gather along axis 1: out[i][j] = x[i][idx[i][j]]
  require_close(gather(x, 1, i64({2, 2, 0, 1, 0, 1}, {2, 3})), {2, 2, 0, 4, 3, 4}, 0, 0);
  require_close(gather_backward(f64({1, 1, 1, 1, 1, 1}, {2, 3}), 1, i64({2, 2, 0, 1, 0, 1}, {2, 3}), {2, 3}),
                {1, 0, 2, 1, 2, 0}, 0, 0);
  CHECK_THROWS_WITH(embedding(table, i64({4}, {1})), Catch::Contains("index 4") && Catch::Contains("size 4"));
}

// Worked by hand: out[b, l] = W[ids] + T[types] + P[positions], P's ids
// shared by the batch ([1, L]); one table alone is its lookup, a -0 kept.
TEST_CASE("embedding_sum adds the lookups of several tables in one pass, in their order", "[ops]") {
  const Tensor words = f64({0, 1, 10, 11, 20, 21}, {3, 2}), types = f64({100, 200, 300, 400}, {2, 2});
  const Tensor positions = f64({0.5, 0.25, 1.5, 1.25}, {2, 2});
  const Tensor ids = i64({2, 0, 1, 1}, {2, 2}), type_ids = i64({0, 1, 1, 0}, {2, 2}), position_ids = i64({1, 0}, {1, 2});
  require_close(embedding_sum({words, types, positions}, {ids, type_ids, position_ids}),
                {121.5, 222.25, 300.5, 401.25, 311.5, 412.25, 110.5, 211.25}, 0, 0);
  CHECK(embedding_sum({words, types, positions}, {ids, type_ids, position_ids}).shape() == Shape{2, 2, 2});
  const Tensor signed_zero = f64({-0.0, 1}, {1, 2});
  CHECK(std::signbit(embedding_sum({signed_zero}, {i64({0}, {1, 1})}).to_doubles()[0]));
  CHECK_THROWS_WITH(embedding_sum({words, types}, {ids, i64({0, 2, 1, 0}, {2, 2})}),
                    Catch::Contains("embedding_sum: index 2") && Catch::Contains("size 2"));
  CHECK_THROWS_WITH(embedding_sum({words, f64({1, 2, 3}, {1, 3})}, {ids, type_ids}),
                    Catch::Contains("does not match table 0's width 2"));
  CHECK_THROWS_WITH(embedding_sum({words, types}, {ids, i64({0, 1, 1, 0, 0, 0}, {3, 2})}),
                    "embedding_sum: ids 0 have shape [2, 2], expected a batch of 3 or 1");
  CHECK_THROWS_WITH(embedding_sum({words, words, words, words}, {ids, ids, ids, ids}),
                    Catch::Contains("1 to 3 tables"));
  CHECK_THROWS_WITH(embedding_sum({words, types.to(DType::f32)}, {ids, type_ids}), Catch::Contains("embedding_sum"));
}

// Worked by hand: gout's rows (b, l) = (0, 0) [1, 2], (0, 1) [3, 4], (1, 0)
// [5, 6], (1, 1) [7, 8]. Words ids {2, 0, 2, 1}, row 0 the padding row, onto
// rows [10, 10], [20, 20], [30, 30]: row 0 keeps its value, row 1 20 + 7,
// row 2 30 + 1 + 5. Types {0, 1, 1, 1}: row 0 [1, 2], row 1 [3 + 5 + 7, 4 + 6
// + 8]. Positions {1, 0} shared by the batch: row 1 (0, 0) + (1, 0), row 0
// (0, 1) + (1, 1), row 2 named by none: 0.
TEST_CASE("embedding_sum_backward adds each table's rows in one pass, shared ids for every sequence", "[ops]") {
  const Tensor gout = f64({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  const std::vector<Tensor> ids = {i64({2, 0, 2, 1}, {2, 2}), i64({0, 1, 1, 1}, {2, 2}), i64({1, 0}, {1, 2})};
  const Tensor onto = f64({10, 10, 20, 20, 30, 30}, {3, 2});
  std::vector<Tensor> g = embedding_sum_backward(gout, ids, {3, 2, 3}, {0, -1, -1}, {onto, Tensor(), Tensor()},
                                                 {true, true, true});
  require_close(g[0], {10, 10, 27, 28, 36, 38}, 0, 0);
  CHECK(g[0].raw_data() == onto.raw_data());  // added in place
  require_close(g[1], {1, 2, 15, 18}, 0, 0);
  require_close(g[2], {10, 12, 6, 8, 0, 0}, 0, 0);
  g = embedding_sum_backward(gout, ids, {3, 2, 3}, {0, -1, -1}, {Tensor(), Tensor(), Tensor()}, {false, true, false});
  CHECK((!g[0].defined() && g[1].defined() && !g[2].defined()));
  require_close(g[1], {1, 2, 15, 18}, 0, 0);
  const std::vector<Tensor> none(3);
  CHECK_THROWS_WITH(embedding_sum_backward(gout, {ids[0], i64({0, 1, 1, 1, 0, 0}, {3, 2}), ids[2]}, {3, 2, 3},
                                           {0, -1, -1}, none, {true, true, true}),
                    "embedding_sum_backward: ids 1 have shape [3, 2], expected [2 or 1, 2] as gout [2, 2, 2]");
  CHECK_THROWS_WITH(embedding_sum_backward(gout, ids, {3, 2, 3}, {0, 2, -1}, none, {true, true, true}),
                    Catch::Contains("padding row 2 of table 1 is outside its 2 rows"));
  CHECK_THROWS_WITH(embedding_sum_backward(gout, ids, {3, 2, 3}, {0, -1, -1}, {f64({0, 0}, {1, 2}), Tensor(), Tensor()},
                                           {true, true, true}),
                    Catch::Contains("embedding_sum_backward"));
  CHECK_THROWS_WITH(embedding_sum_backward(gout, ids, {3, 2}, {0, -1, -1}, none, {true, true, true}),
                    Catch::Contains("3 ids with 2 row counts"));
  CHECK_THROWS_WITH(embedding_sum_backward(gout, {ids[0], i64({0, 5, 1, 1}, {2, 2}), ids[2]}, {3, 2, 3}, {0, -1, -1},
                                           none, {true, true, true}),
                    Catch::Contains("index 5") && Catch::Contains("size 2"));
}

// Worked by hand: an attention mask's bias (1 - m) lowest = -lowest m +
// lowest: 0 for a token, lowest for padding; other integers p x + q. The
// products here are exact (p = 0.5), so the one-pass and the two-pass
// results agree whatever the compiler makes of p x + q.
TEST_CASE("affine_to casts integers and applies p x + q in one pass, the bits of a cast then affine", "[ops]") {
  const double lowest = std::numeric_limits<float>::lowest();
  const Tensor mask = i64({1, 1, 0, 1, 0}, {5});
  const Tensor bias = affine_to(mask, -lowest, lowest, DType::f32);
  CHECK(bias.dtype() == DType::f32);
  CHECK(bias.to_doubles() == std::vector<double>{0, 0, lowest, 0, lowest});
  require_close(affine_to(i64({-3, 0, 7, 1000001}, {2, 2}), 0.5, -2, DType::f64), {-3.5, -2, 1.5, 499998.5}, 0, 0);
  const Tensor big = i64({16777217, -5, 123456789}, {3});  // 2^24 + 1 rounds to f32 as the cast rounds it
  CHECK(ordo::test::bit_identical(affine_to(big, 0.5, 1, DType::f32), affine(big.to(DType::f32), 0.5, 1)));
  CHECK_THROWS_WITH(affine_to(f64({1}, {1}), 1, 0, DType::f32), Catch::Contains("affine_to"));
  CHECK_THROWS_WITH(affine_to(mask, 1, 0, DType::i64), Catch::Contains("affine_to: the result must be f32 or f64"));
}

// Worked by hand: rows {1, 3} of 4 get g's two rows, rows 0 and 2 zeros
// (whatever the table held: written, not added onto); -0 kept.
TEST_CASE("select_rows_backward puts each row where it came from and 0 elsewhere, from an ascending list", "[ops]") {
  const Tensor g = f64({1, 2, -0.0, 4}, {2, 2});
  const Tensor gx = select_rows_backward(g, i64({1, 3}, {2}), 4);
  require_close(gx, {0, 0, 1, 2, 0, 0, -0.0, 4}, 0, 0);
  CHECK(std::signbit(gx.to_doubles()[6]));
  require_close(select_rows_backward(g, i64({0, 1}, {2}), 2), {1, 2, -0.0, 4}, 0, 0);
  CHECK_THROWS_WITH(select_rows_backward(g, i64({3, 1}, {2}), 4),
                    Catch::Contains("rows 3 then 1 at position 1: the list must be ascending and distinct"));
  CHECK_THROWS_WITH(select_rows_backward(g, i64({1, 1}, {2}), 4), Catch::Contains("ascending and distinct"));
  CHECK_THROWS_WITH(select_rows_backward(g, i64({1, 4}, {2}), 4), Catch::Contains("index 4"));
  CHECK_THROWS_WITH(select_rows_backward(g, i64({0, 1}, {2}), 1), Catch::Contains("2 distinct rows cannot come from 1"));
  CHECK_THROWS_WITH(select_rows_backward(g, i64({0, 1, 2}, {3}), 4), Catch::Contains("select_rows_backward"));
}

// index_select_backward hands index_add a table it has not zeroed (on CUDA a
// zero fill is a launch and a pass over the table): the kernel must write
// every element, 0 where no index names the row. Worked by hand.
TEST_CASE("index_add writes every row of the table, 0 where no index names it or it is skipped, whatever it held", "[ops]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(dtype_name(dtype));
    Tensor gx = Tensor::full({2, 4, 3}, std::numeric_limits<double>::quiet_NaN(), dtype);
    const Tensor g = f64({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30, 40, 50, 60, 70, 80, 90}, {2, 3, 3}).to(dtype);
    cpu::index_add(gx, i64({2, 0, 2}, {3}), g, -1, false);
    require_close(gx, {4, 5, 6, 0, 0, 0, 8, 10, 12, 0, 0, 0,  // outer 0: rows 0..3
                       40, 50, 60, 0, 0, 0, 80, 100, 120, 0, 0, 0},  // outer 1
                  0, 0);
    // skip_row (an embedding's padding row): 0 though two entries name it.
    gx.fill_(std::numeric_limits<double>::quiet_NaN());
    cpu::index_add(gx, i64({2, 0, 2}, {3}), g, 2, false);
    require_close(gx, {4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 40, 50, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0, 0);
  }
}

// onto: the table's gradient gathered so far (tied word embeddings: the
// decoder's term) is each sum's start; rows no index names and the skipped
// row keep their values, a -0 its sign. Worked by hand.
TEST_CASE("index_add onto a gathered gradient adds each row's entries to it, leaving the rest as they were", "[ops]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(dtype_name(dtype));
    const Tensor g = f64({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3}).to(dtype);
    const Tensor base = f64({100, 101, 102, -0.0, 0.5, 0.25, 200, 201, 202, 300, 301, 302}, {1, 4, 3}).to(dtype);
    Tensor gx = base.clone();
    cpu::index_add(gx, i64({2, 0, 2}, {3}), g, -1, true);
    // row 0: 100.. + entry 1; row 2: 200.. + entries 0 and 2 in index order; rows 1, 3 untouched.
    require_close(gx, {104, 106, 108, -0.0, 0.5, 0.25, 208, 211, 214, 300, 301, 302}, 0, 0);
    CHECK(std::signbit(gx.to_doubles()[3]));
    gx = base.clone();
    cpu::index_add(gx, i64({2, 0, 2}, {3}), g, 2, true);  // row 2 skipped: as it was
    require_close(gx, {104, 106, 108, -0.0, 0.5, 0.25, 200, 201, 202, 300, 301, 302}, 0, 0);
    // The op: the lookup's gradient added onto the tensor given, which it returns.
    const Tensor onto = base.reshape({4, 3}).clone();
    const Tensor got = embedding_backward(g.reshape({3, 3}), i64({2, 0, 2}, {3}), 4, -1, onto);
    CHECK(got.shares_storage_with(onto));
    require_close(got, {104, 106, 108, -0.0, 0.5, 0.25, 208, 211, 214, 300, 301, 302}, 0, 0);
    CHECK_THROWS_WITH(embedding_backward(g.reshape({3, 3}), i64({2, 0, 2}, {3}), 4, -1, onto.slice(0, 0, 3)),
                      Catch::Contains("onto"));
  }
}

// The order of tensor/backend.h's kIndexAddPiece, worked here from its
// statement: a row's entries in index order at sorted positions s_r, s_r + 1,
// ...; cut where the position is a multiple of the piece; each piece summed
// from its first entry; the pieces added in order onto 0. Rows of a thousand
// entries cross several cuts, and one run starts inside a piece.
TEST_CASE("embedding_backward adds a long run of one row in the pieces backend.h states", "[ops]") {
  const int64_t rows = 5, d = 3, k = 1500;
  std::vector<int64_t> ids(k);
  for (int64_t j = 0; j < k; ++j) ids[j] = j % 3 == 0 ? j % 5 : 3;  // row 3 ~1100 times; 0, 1, 2, 4 ~100 each
  // Values of mixed magnitude, so that the order of the adds shows in the bits.
  std::vector<double> values(k * d);
  for (int64_t e = 0; e < k * d; ++e) values[e] = std::sin(0.37 * e) * std::pow(10.0, (e * 7) % 5 - 2);
  const Tensor g = f64(values, {k, d}).to(DType::f32);
  const std::vector<float> gv = g.to_vector<float>();
  const std::vector<float> got = embedding_backward(g, i64(ids, {k}), rows).to_vector<float>();

  std::vector<int64_t> before(rows, 0);  // s_r: entries of smaller rows
  for (int64_t j = 0; j < k; ++j)
    for (int64_t r = ids[j] + 1; r < rows; ++r) ++before[r];
  int differs_from_plain_sum = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t x = 0; x < d; ++x) {
      float total = 0, piece = 0, plain = 0;
      double exact = 0, magnitude = 0;
      int64_t t = 0;
      for (int64_t j = 0; j < k; ++j) {
        if (ids[j] != r) continue;
        const float v = gv[j * d + x];
        const int64_t position = before[r] + t;
        if (t == 0) piece = v;
        else if (position % kIndexAddPiece == 0) total += piece, piece = v;
        else piece += v;
        ++t;
        plain += v;
        exact += v, magnitude += std::fabs(v);
      }
      total += piece;
      INFO("row " << r << ", column " << x);
      CHECK(got[r * d + x] == total);
      differs_from_plain_sum += total != plain;
      CHECK(std::fabs(got[r * d + x] - exact) <= 1e-7 * t * magnitude);  // the f32 sum's usual bound
    }
  CHECK(differs_from_plain_sum > 0);  // the cuts changed the order somewhere: the case tests them
}

TEST_CASE("concat and split are inverse", "[ops]") {
  Tensor a = f64({1, 2, 3, 4}, {2, 2}), b = f64({5, 6}, {2, 1});
  Tensor c = concat({a, b}, 1);
  require_close(c, {1, 2, 5, 3, 4, 6}, 0, 0);
  auto parts = split(c, {2, 1}, 1);
  REQUIRE(parts.size() == 2);
  require_close(parts[0], a.to_doubles(), 0, 0);
  require_close(parts[1], b.to_doubles(), 0, 0);
  CHECK(parts[0].shares_storage_with(c));
  require_close(concat({a, a}, 0), {1, 2, 3, 4, 1, 2, 3, 4}, 0, 0);
  CHECK_THROWS_WITH(split(c, {2, 2}, 1), Catch::Contains("add up to 4"));
  CHECK_THROWS_WITH(concat({a, f64({1, 2, 3}, {3, 1})}, 1), Catch::Contains("incompatible"));
}

TEST_CASE("dropout keeps 1-p of the elements, scaled, with a reproducible mask", "[ops]") {
  const int64_t n = 200000;
  const double p = 0.25;
  Tensor x = Tensor::ones({n}, DType::f32);
  Tensor y = dropout(x, p, 42, 7);
  std::vector<double> v = y.to_doubles();
  int64_t kept = 0;
  for (double e : v) {
    REQUIRE((e == 0 || std::fabs(e - 1 / (1 - p)) < 1e-6));
    kept += e != 0;
  }
  // Binomial(n, 0.75): mean 150000, sd sqrt(n p (1-p)) = 193.6; allow 5 sd.
  CHECK(std::fabs(kept - n * (1 - p)) < 5 * std::sqrt(n * p * (1 - p)));
  CHECK(ordo::test::bit_identical(dropout(x, p, 42, 7), y));
  CHECK_FALSE(ordo::test::bit_identical(dropout(x, p, 42, 8), y));
  CHECK_FALSE(ordo::test::bit_identical(dropout(x, p, 43, 7), y));
  require_close(dropout(x.slice(0, 0, 10), 0.0, 1, 1), std::vector<double>(10, 1.0), 0, 0);
}

TEST_CASE("random initialisers have the requested moments", "[ops]") {
  const int64_t n = 200000;
  auto moments = [](const Tensor& t, double& mean_, double& sd, double& lo, double& hi) {
    std::vector<double> v = t.to_doubles();
    double s = 0, ss = 0;
    lo = kInf, hi = -kInf;
    for (double e : v) s += e, ss += e * e, lo = std::min(lo, e), hi = std::max(hi, e);
    mean_ = s / v.size();
    sd = std::sqrt(ss / v.size() - mean_ * mean_);
  };
  double m, sd, lo, hi;
  Tensor u = Tensor::empty({n}, DType::f32);
  uniform_(u, -2, 4, 1, 0);
  moments(u, m, sd, lo, hi);
  // uniform(-2, 4): mean 1, sd 6/sqrt(12) = 1.732; standard error of the mean 0.0039
  CHECK(std::fabs(m - 1) < 0.02);
  CHECK(std::fabs(sd - 6 / std::sqrt(12.0)) < 0.01);
  CHECK((lo >= -2 && hi < 4));
  Tensor g = Tensor::empty({n}, DType::f64);
  normal_(g, 0.5, 0.02, 2, 0);
  moments(g, m, sd, lo, hi);
  CHECK(std::fabs(m - 0.5) < 5 * 0.02 / std::sqrt(double(n)));
  CHECK(std::fabs(sd - 0.02) < 0.0003);
  Tensor tn = Tensor::empty({n}, DType::f32);
  trunc_normal_(tn, 0, 1, 3, 0);
  moments(tn, m, sd, lo, hi);
  // N(0,1) truncated to [-2, 2]: sd = sqrt(1 - 2*2*phi(2)/(2*Phi(2)-1)) = 0.8796
  CHECK((lo >= -2 && hi <= 2));
  CHECK(std::fabs(m) < 0.01);
  CHECK(std::fabs(sd - 0.8796) < 0.005);
}

TEST_CASE("AdamW: one step by hand, then the recurrence over several", "[ops]") {
  // Step 1 with g = 0.5: m = 0.05, v = 0.00025, m^ = 0.5, v^ = 0.25,
  // update = 0.5 / (0.5 + 1e-8); p = 1 - 0.1 (0.01 * 1 + update) = 0.899000002
  Tensor p = f64({1}, {1}), g = f64({0.5}, {1});
  Tensor m = Tensor::zeros({1}, DType::f64), v = Tensor::zeros({1}, DType::f64);
  AdamWStep s;
  s.lr = 0.1;
  s.weight_decay = 0.01;
  adamw_(p, g, m, v, s);
  CHECK(p.item() == Approx(1 - 0.1 * (0.01 + 0.5 / (0.5 + 1e-8))).epsilon(1e-15));
  CHECK(m.item() == Approx(0.05).epsilon(1e-15));
  CHECK(v.item() == Approx(0.00025).epsilon(1e-15));

  // Several steps with changing gradients and clipping scale, against the
  // recurrence written out in the test.
  std::vector<double> pv = random_values(5, 81), grads = random_values(5, 82);
  Tensor P = f64(pv, {5}), M = Tensor::zeros({5}, DType::f64), V = Tensor::zeros({5}, DType::f64);
  std::vector<double> rm(5, 0), rv(5, 0);
  for (int step = 1; step <= 4; ++step) {
    AdamWStep t;
    t.lr = 0.01 * step;
    t.weight_decay = 0.1;
    t.step = step;
    t.grad_scale = 0.5;
    std::vector<double> gs;
    for (int i = 0; i < 5; ++i) gs.push_back(grads[i] * step);
    adamw_(P, f64(gs, {5}), M, V, t);
    for (int i = 0; i < 5; ++i) {
      double gi = gs[i] * 0.5;
      rm[i] = 0.9 * rm[i] + 0.1 * gi;
      rv[i] = 0.999 * rv[i] + 0.001 * gi * gi;
      double mh = rm[i] / (1 - std::pow(0.9, step)), vh = rv[i] / (1 - std::pow(0.999, step));
      pv[i] -= t.lr * (0.1 * pv[i] + mh / (std::sqrt(vh) + 1e-8));
    }
  }
  require_close(P, pv, 1e-13, 1e-15);
}

TEST_CASE("global norm over several tensors", "[ops]") {
  CHECK(global_norm({f64({3, 4}, {2}), f64({12}, {1})}) == Approx(13).epsilon(1e-15));
  CHECK(global_norm({Tensor::from_vector(std::vector<float>{3, 4}, {2})}) == Approx(5).epsilon(1e-7));
}

TEST_CASE("matmul_onto adds the product onto its tensor: worked by hand", "[tensor]") {
  // [[1, 2], [3, 4]] + [[1, 0, 2], [0, 1, 1]] [[1, 1], [2, 0], [0, 3]] = [[1, 2], [3, 4]] + [[1, 7], [2, 3]]
  const Tensor c = Tensor::from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2});
  const Tensor a = Tensor::from_vector(std::vector<double>{1, 0, 2, 0, 1, 1}, {2, 3});
  const Tensor b = Tensor::from_vector(std::vector<double>{1, 1, 2, 0, 0, 3}, {3, 2});
  const Tensor out = matmul_onto(c, a, b);
  CHECK(out.shares_storage_with(c));
  CHECK(c.to_doubles() == std::vector<double>{2, 9, 5, 7});
}
