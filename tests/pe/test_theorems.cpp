// Chen et al. 2021's two theorems about position embeddings added at the
// input, as tests on ordo's model.
//
// Theorem 1: with L = l(g(X + P), y), the gradients reaching X and P are the
// same (dL/dX = dL/dP = dL/d(X + P)). In BERT, X is a lookup of the word
// table, so the gradient reaching word row w is the sum of dL/d(x + p) over
// every place w occurs, and position row i gets the sum over every sequence's
// position i. The two coincide row for row when each position holds one
// token and that token occurs nowhere else: a batch whose every row has token
// t_i at position i (the rows differ in segments and padding, so they are not
// copies). Then grad(word[t_i]) = grad(P[i]) exactly, for any g and l. The
// loss is taken on the encoder's output (not the MLM head) because ordo ties
// the output layer to the word table, which would add a second, unrelated
// gradient to the word rows. Counter-checks: a repeated token breaks the
// equality (its row sums two positions), and an attention-level encoding
// (TUPE) has no such tie.
//
// Theorem 2: the input-level attention matrix (X + P) W_Q^T W_K (X + P)^T of a
// head, and its position-position part P W_Q^T W_K P^T, have rank <= d_h
// (W_Q, W_K in R^{d_h x d}); the per-head form X W_Q^T W_K X^T + P^ P^T of the
// proof's construction reaches rank d_h + d_p. Ranks are numerical: the
// singular values from a one-sided Jacobi SVD written here, a singular value
// counting as zero below 1e-10 of the largest (f64 rounding leaves about
// 1e-15; a generic non-zero singular value of these small random matrices is
// above 1e-4).
#include <cmath>
#include <map>

#include "model/model.h"
#include "nn/bert.h"
#include "tests/helpers.h"
#include "tests/pe/score_term_helpers.h"

using namespace ordo;

namespace {

nn::BertConfig config(const std::string& pe) {
  nn::BertConfig c = ordo::test::tiny_bert_config(/*vocab_size=*/20, /*hidden_size=*/8, /*layers=*/2, /*heads=*/2,
                                                  /*intermediate_size=*/12, /*max_position_embeddings=*/16);
  c.pe = pe;
  return c;
}

// Gradients of sum(R * encoder output) for the batch, by parameter name.
std::map<std::string, Tensor> gradients(nn::PretrainingModel& model, const nn::BertInputs& in) {
  nn::Context ctx = nn::Context::eval();
  Var out = model.bert.forward(in, ctx);
  Tensor r = test::random_tensor(out.shape(), 99);
  sum(mul(out, Var(r))).backward();
  std::map<std::string, Tensor> g;
  for (auto& [name, p] : model.named_parameters())
    if (p->var.grad().defined()) g[name] = p->var.grad();
  return g;
}

std::vector<double> row(const Tensor& t, int64_t r) {
  std::vector<double> all = t.to_doubles();
  const int64_t w = t.size(1);
  return std::vector<double>(all.begin() + r * w, all.begin() + (r + 1) * w);
}

double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

double max_abs(const std::vector<double>& a) {
  double m = 0;
  for (double x : a) m = std::max(m, std::fabs(x));
  return m;
}

// Singular values of the m x n matrix a (row-major) by one-sided Jacobi
// (Hestenes): rotate pairs of columns until all are orthogonal; the column
// norms are then the singular values. Descending.
std::vector<double> singular_values(std::vector<double> a, int64_t m, int64_t n) {
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool rotated = false;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j) {
        double alpha = 0, beta = 0, gamma = 0;
        for (int64_t r = 0; r < m; ++r) {
          alpha += a[r * n + i] * a[r * n + i];
          beta += a[r * n + j] * a[r * n + j];
          gamma += a[r * n + i] * a[r * n + j];
        }
        if (std::fabs(gamma) <= 1e-15 * std::sqrt(alpha * beta) || gamma == 0) continue;
        rotated = true;
        double zeta = (beta - alpha) / (2 * gamma);
        double t = (zeta >= 0 ? 1.0 : -1.0) / (std::fabs(zeta) + std::sqrt(1 + zeta * zeta));
        double c = 1 / std::sqrt(1 + t * t), s = c * t;
        for (int64_t r = 0; r < m; ++r) {
          double x = a[r * n + i], y = a[r * n + j];
          a[r * n + i] = c * x - s * y;
          a[r * n + j] = s * x + c * y;
        }
      }
    if (!rotated) break;
  }
  std::vector<double> sv(n);
  for (int64_t j = 0; j < n; ++j) {
    double s = 0;
    for (int64_t r = 0; r < m; ++r) s += a[r * n + j] * a[r * n + j];
    sv[j] = std::sqrt(s);
  }
  std::sort(sv.rbegin(), sv.rend());
  return sv;
}

const double kRankTolerance = 1e-10;

int numerical_rank(const std::vector<double>& a, int64_t m, int64_t n) {
  std::vector<double> sv = singular_values(a, m, n);
  int rank = 0;
  for (double s : sv) rank += s > kRankTolerance * sv[0];
  return rank;
}

// C = A B^T for A [m, k], B [n, k] (row-major).
std::vector<double> times_transpose(const std::vector<double>& a, const std::vector<double>& b, int64_t m, int64_t n,
                                    int64_t k) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t e = 0; e < k; ++e) c[i * n + j] += a[i * k + e] * b[j * k + e];
  return c;
}

}  // namespace

TEST_CASE("theorem 1: with an input-level PE the token and the position embedding rows get the same gradient",
          "[pe][theorems]") {
  auto model = model::build_model(config("ape_learned"), Device::cpu(), false, 1);
  pe_test::randomize(*model, 1);
  // Token 5 + i at position i in both rows; the rows differ in segments and
  // the second has two padded positions (which carry their tokens too).
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(std::vector<int64_t>{5, 6, 7, 8, 9, 10, 5, 6, 7, 8, 9, 10}, {2, 6});
  in.segment_ids = Tensor::from_vector(std::vector<int64_t>{0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1}, {2, 6});
  in.attention_mask = Tensor::from_vector(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {2, 6});
  auto g = gradients(*model, in);
  const Tensor& words = g.at("bert.embeddings.word_embeddings.weight");
  const Tensor& positions = g.at("bert.embeddings.position_embeddings.weight");
  double largest = 0;
  for (int64_t i = 0; i < 6; ++i) {
    std::vector<double> w = row(words, 5 + i), p = row(positions, i);
    INFO("position " << i);
    CHECK(max_abs(p) > 1e-6);  // a real gradient, not two zeros
    CHECK(max_abs_difference(w, p) <= 1e-15 * max_abs(p));
    largest = std::max(largest, max_abs_difference(w, p));
  }
  INFO("largest difference " << largest);
  // Rows nothing looked up get nothing, on both sides.
  CHECK(max_abs(row(words, 4)) == 0);
  CHECK(max_abs(row(positions, 6)) == 0);

  // A token at two positions: its row sums the two, so it matches neither.
  nn::BertInputs twice = in;
  twice.input_ids = Tensor::from_vector(std::vector<int64_t>{5, 6, 5, 8, 9, 10, 5, 6, 5, 8, 9, 10}, {2, 6});
  for (auto& [name, p] : model->named_parameters()) p->var.zero_grad();
  auto h = gradients(*model, twice);
  std::vector<double> shared = row(h.at("bert.embeddings.word_embeddings.weight"), 5);
  std::vector<double> p0 = row(h.at("bert.embeddings.position_embeddings.weight"), 0);
  std::vector<double> p2 = row(h.at("bert.embeddings.position_embeddings.weight"), 2);
  std::vector<double> sum02(p0.size());
  for (size_t d = 0; d < p0.size(); ++d) sum02[d] = p0[d] + p2[d];
  CHECK(max_abs_difference(shared, p0) > 1e-6);
  CHECK(max_abs_difference(shared, sum02) <= 1e-14 * max_abs(sum02));
}

TEST_CASE("theorem 1 does not bind an attention-level encoding (TUPE): its position gradients are its own",
          "[pe][theorems]") {
  auto model = model::build_model(config("tupe"), Device::cpu(), false, 1);
  pe_test::randomize(*model, 2);
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(std::vector<int64_t>{5, 6, 7, 8, 9, 10}, {1, 6});
  auto g = gradients(*model, in);
  const Tensor& words = g.at("bert.embeddings.word_embeddings.weight");
  const Tensor& positions = g.at("bert.position_encoding.position_embeddings");
  for (int64_t i = 1; i < 6; ++i) {  // position 0 is [CLS], whose terms the reset replaces
    INFO("position " << i);
    CHECK(max_abs_difference(row(words, 5 + i), row(positions, i)) > 1e-6);
  }
}

TEST_CASE("the rank tool: one-sided Jacobi finds the rank of matrices built with a known rank", "[pe][theorems]") {
  // A sum of `rank` outer products of random vectors (scaled over three
  // decades) has rank `rank`.
  const int64_t n = 7;
  for (int64_t rank = 0; rank <= n; ++rank) {
    std::vector<double> a(n * n, 0.0);
    for (int64_t r = 0; r < rank; ++r) {
      std::vector<double> u = test::random_values(n, 100 + r), v = test::random_values(n, 200 + r);
      double scale = std::pow(10.0, -double(r) / 2);  // singular values spread over 3 decades
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) a[i * n + j] += scale * u[i] * v[j];
    }
    INFO("built with rank " << rank);
    CHECK(numerical_rank(a, n, n) == rank);
  }
  // A permuted diagonal matrix: its singular values are its entries' magnitudes.
  std::vector<double> d = {0, 0, -2, 0, 5, 0, 0.5, 0, 0};  // rows [0 0 -2], [0 5 0], [0.5 0 0]
  std::vector<double> sv = singular_values(d, 3, 3);
  CHECK(std::fabs(sv[0] - 5) < 1e-15);
  CHECK(std::fabs(sv[1] - 2) < 1e-15);
  CHECK(std::fabs(sv[2] - 0.5) < 1e-15);
}

TEST_CASE("theorem 2: the input-level attention of a head has rank <= d_h, a per-head position term can exceed it",
          "[pe][theorems]") {
  nn::BertConfig c = config("ape_learned");
  c.hidden_size = 12;
  c.num_attention_heads = 3;  // d_h = 4 < d = 12 < n = 16
  auto model = model::build_model(c, Device::cpu(), false, 3);
  pe_test::randomize(*model, 3);
  const int64_t n = 16, d = 12, dh = 4;
  std::vector<double> P = model->find_parameter("bert.embeddings.position_embeddings.weight")->var.value().to_doubles();
  std::vector<double> X = test::random_values(n * d, 7);  // token vectors of a sequence of n tokens
  std::vector<double> XP(n * d);
  for (int64_t i = 0; i < n * d; ++i) XP[i] = X[i] + P[i];
  for (int layer = 0; layer < 2; ++layer) {
    std::string prefix = "bert.encoder.layer." + std::to_string(layer) + ".attention.self.";
    std::vector<double> WQ = model->find_parameter(prefix + "query.weight")->var.value().to_doubles();  // [d, d], out x in
    std::vector<double> WK = model->find_parameter(prefix + "key.weight")->var.value().to_doubles();
    for (int64_t h = 0; h < 3; ++h) {
      // Head h's W_Q: rows h*dh .. h*dh+dh-1 of the out x in weight (d_h x d).
      std::vector<double> wq(WQ.begin() + h * dh * d, WQ.begin() + (h + 1) * dh * d);
      std::vector<double> wk(WK.begin() + h * dh * d, WK.begin() + (h + 1) * dh * d);
      auto attention = [&](const std::vector<double>& Z) {  // (Z W_Q^T)(Z W_K^T)^T, n x n
        return times_transpose(times_transpose(Z, wq, n, dh, d), times_transpose(Z, wk, n, dh, d), n, n, dh);
      };
      INFO("layer " << layer << ", head " << h);
      CHECK(numerical_rank(attention(XP), n, n) == dh);  // A_a = (X + P) W_Q^T W_K (X + P)^T
      CHECK(numerical_rank(attention(P), n, n) == dh);   // its position-position part
    }
  }
  // The proof's construction: W_Q = W_K = [I_dh 0], X = [I_d; 0], P^ = [0 I_dp]
  // with d_p = 8: X W_Q^T W_K X^T + P^^T P^ has rank d_h + d_p = 12 > d_h.
  const int64_t dp = 8;
  std::vector<double> A(n * n, 0.0);
  for (int64_t i = 0; i < dh; ++i) A[i * n + i] += 1;              // X^T W_Q^T W_K X: identity on the first d_h
  for (int64_t i = n - dp; i < n; ++i) A[i * n + i] += 1;          // P^^T P^: identity on the last d_p
  CHECK(numerical_rank(A, n, n) == std::min(dh + dp, n));
  // A per-head absolute term of rank r (ABS-SCALAR's P_h P_h^T, r = 2 d_h = 8)
  // added to a rank-d_h contextual term: generically rank d_h + r.
  std::vector<double> Ph = test::random_values(n * 8, 11), Xh = test::random_values(n * dh, 12);
  std::vector<double> S = times_transpose(Ph, Ph, n, n, 8), T = times_transpose(Xh, Xh, n, n, dh);
  for (int64_t i = 0; i < n * n; ++i) S[i] += T[i];
  CHECK(numerical_rank(S, n, n) == dh + 8);
}
