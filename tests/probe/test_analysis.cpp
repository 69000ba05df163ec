// The analyses of position tables (probe/analysis_position.h): hand-worked
// cases for each routine, and Wang & Chen 2020's qualitative results on the
// fixed sinusoid (their control) against random tables (chance level):
//   §4.1.1 Table 1  the sinusoid gives its absolute positions back almost
//                   exactly (MAE near 0); a random table no better than
//                   predicting the mean position;
//   §4.1.2 Table 2  the order of two positions is readable from the
//                   sinusoid, not from a random table (error rate 0.5);
//   §4.2.2 Fig. 2   the sinusoid's singular values are concentrated (few
//                   components reach 90 % of their sum), a random table's
//                   spread over all of them.
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "model/model.h"
#include "probe/analysis_linalg.h"
#include "probe/analysis_position.h"
#include "probe/analyze_run.h"
#include "tests/helpers.h"

using ordo::Matrix;
namespace probe = ordo::probe;

namespace {

// Standard normal entries from std::mt19937_64 + Box-Muller (independent of ordo's generators).
Matrix gaussian_table(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<double> u = ordo::test::random_values(rows * cols * 2, seed, 0, 1);
  Matrix m(rows, cols);
  for (int64_t k = 0; k < rows * cols; ++k)
    m.data[k] = std::sqrt(-2 * std::log(1 - u[2 * k])) * std::cos(2 * M_PI * u[2 * k + 1]);
  return m;
}

}  // namespace

TEST_CASE("sinusoid frequencies and table", "[probe][analysis]") {
  // w_i = 10000^(-2i/D): for D = 8, 1, 10^-1, 10^-2, 10^-3.
  std::vector<double> w = probe::sinusoid_frequencies(8);
  REQUIRE(w.size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(w[i] == Approx(std::pow(10.0, -i)).epsilon(1e-14));
  Matrix p = probe::sinusoid_table(5, w, 2);
  CHECK(p(0, 0) == Approx(std::sin(2.0)));  // row 0 is position `first` = 2
  CHECK(p(3, 3) == Approx(std::cos(0.5)));  // position 5, frequency 0.1, cosine column
  CHECK_THROWS_WITH(probe::sinusoid_frequencies(7), Catch::Contains("must be even"));
}

TEST_CASE("dot products and cosines: hand-worked and the sinusoid identity", "[probe][analysis]") {
  Matrix p = Matrix::from_rows({{1, 0}, {1, 1}, {0, 0}, {-2, 0}});
  Matrix d = probe::dot_products(p);
  CHECK(d(0, 1) == 1);
  CHECK(d(1, 1) == 2);
  CHECK(d(3, 0) == -2);
  Matrix c = probe::cosine_similarities(p);
  CHECK(c(0, 1) == Approx(1 / std::sqrt(2.0)).epsilon(1e-15));
  CHECK(c(0, 3) == Approx(-1).epsilon(1e-15));
  CHECK(c(2, 2) == 0);  // a zero row has cosine 0, itself included
  CHECK(c(1, 2) == 0);
  // Wang et al. 2021, section 3.1: P_x . P_y = sum_i cos(w_i (x - y)) for the sinusoid.
  std::vector<double> w = probe::sinusoid_frequencies(16);
  Matrix s = probe::dot_products(probe::sinusoid_table(20, w));
  for (int64_t x = 0; x < 20; x += 3)
    for (int64_t y = 0; y < 20; y += 4) {
      double expected = 0;
      for (double wi : w) expected += std::cos(wi * static_cast<double>(x - y));
      CHECK(s(x, y) == Approx(expected).margin(1e-12));
    }
}

TEST_CASE("threshold summary of relative vectors (Wang et al. 2021, App. D)", "[probe][analysis]") {
  // Offsets -3..3. Both sides: offsets 2 and 3 nearly parallel, offset 1 orthogonal to them.
  Matrix t = Matrix::from_rows({{1, 0}, {1, 0.01}, {0, 1}, {1, 1}, {0, 1}, {1, 0.02}, {1, 0}});
  probe::ThresholdSummary s = probe::threshold_summary(probe::cosine_similarities(t), -3);
  CHECK(s.indistinct_beyond_ahead == 2);
  CHECK(s.indistinct_beyond_behind == 2);
  // Ordered pairs above 0.95: the four near-(1, 0) vectors (4 x 3 = 12) and
  // the two (0, 1) vectors (2); (1, 1) has cosine 0.707 with both groups: 14 of 42.
  CHECK(s.share_above == Approx(14.0 / 42.0).epsilon(1e-15));
  // Outermost vectors apart on one side: -1 there.
  Matrix u = Matrix::from_rows({{1, 0}, {0, 1}, {1, 1}, {1, 0}, {1, 0.01}});
  probe::ThresholdSummary v = probe::threshold_summary(probe::cosine_similarities(u), -2);
  CHECK(v.indistinct_beyond_behind == -1);
  CHECK(v.indistinct_beyond_ahead == 1);  // offsets 1 and 2 are one group: no difference from offset 1 on
  // Every vector parallel: the whole side from offset 1.
  probe::ThresholdSummary all = probe::threshold_summary(Matrix(5, 5, 1.0), -2);
  CHECK(all.indistinct_beyond_ahead == 1);
  CHECK(all.share_above == 1);
}

TEST_CASE("the fold order is a seeded permutation", "[probe][analysis]") {
  std::vector<int64_t> a = probe::fold_order(50, 3), b = probe::fold_order(50, 3), c = probe::fold_order(50, 4);
  CHECK(a == b);
  CHECK(a != c);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> expected(50);
  std::iota(expected.begin(), expected.end(), 0);
  CHECK(sorted == expected);
}

TEST_CASE("position regression: hand-worked linear table and baseline", "[probe][analysis]") {
  // P_x = (2x + 1, 3): the position is (P_x0 - 1) / 2 exactly, so every
  // held-out prediction is exact; the baseline predicts the training mean.
  const int64_t n = 10;
  Matrix p(n, 2);
  for (int64_t x = 0; x < n; ++x) p(x, 0) = 2.0 * x + 1, p(x, 1) = 3;
  probe::RegressionResult r = probe::position_regression(p, 5, 7);
  CHECK(r.mae < 1e-12);
  for (int64_t x = 0; x < n; ++x) CHECK(r.predictions[x] == Approx(static_cast<double>(x)).margin(1e-12));
  // The baseline recomputed from the documented folds (row order[k] is in fold k % 5).
  std::vector<int64_t> order = probe::fold_order(n, 7);
  std::vector<int> fold(n);
  for (int64_t k = 0; k < n; ++k) fold[order[k]] = static_cast<int>(k % 5);
  double base = 0;
  for (int f = 0; f < 5; ++f) {
    double sum = 0, count = 0;
    for (int64_t x = 0; x < n; ++x)
      if (fold[x] != f) sum += x, ++count;
    for (int64_t x = 0; x < n; ++x)
      if (fold[x] == f) base += std::fabs(sum / count - x);
  }
  CHECK(r.baseline_mae == Approx(base / n).epsilon(1e-14));
  CHECK_THROWS_WITH(probe::position_regression(Matrix(3, 2), 5), Catch::Contains("cannot make 5 folds"));
}

TEST_CASE("position regression: the sinusoid gives positions back, a random table does not (Wang & Chen 2020, Table 1)",
          "[probe][analysis]") {
  const int64_t n = 128, dim = 64;
  probe::RegressionResult sin = probe::position_regression(probe::sinusoid_table(n, probe::sinusoid_frequencies(dim)));
  INFO("sinusoid MAE " << sin.mae << ", baseline " << sin.baseline_mae);
  CHECK(sin.mae < 0.05);
  // Chance level: the mean position's MAE, about n/4 = 32 for uniform positions.
  CHECK(sin.baseline_mae == Approx(32).epsilon(0.1));
  probe::RegressionResult rnd = probe::position_regression(gaussian_table(n, dim, 11));
  INFO("random MAE " << rnd.mae << ", baseline " << rnd.baseline_mae);
  CHECK(rnd.mae > 0.85 * rnd.baseline_mae);
}

TEST_CASE("logistic regression against Newton's method and a hand-worked optimum", "[probe][analysis]") {
  // x = -1 with labels (0, 0, 0, 1), x = +1 with (1, 1, 1, 0). Standardised,
  // z = x. Without a penalty the optimum has p(z = 1) = 3/4: b = 0, w = ln 3.
  std::vector<std::vector<double>> xs;
  std::vector<double> ys;
  for (double y : {0, 0, 0, 1}) xs.push_back({-1}), ys.push_back(y);
  for (double y : {1, 1, 1, 0}) xs.push_back({1}), ys.push_back(y);
  probe::LogisticModel m = probe::fit_logistic(xs, ys, 0.0, 2000);
  CHECK(m.w[0] == Approx(std::log(3.0)).epsilon(1e-6));
  CHECK(m.b == Approx(0).margin(1e-6));
  CHECK(m.score({1}) == Approx(std::log(3.0)).epsilon(1e-6));

  // Random 3-feature data, l2 = 0.1: Newton's method on the same objective
  // (standardisation redone here), iterated to convergence.
  const size_t n = 60, d = 3;
  std::vector<double> r = ordo::test::random_values(n * (d + 1), 41, -1, 1);
  xs.assign(n, std::vector<double>(d));
  ys.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < d; ++k) xs[i][k] = r[i * (d + 1) + k] * (k + 1) + 0.5 * k;
    ys[i] = r[i * (d + 1) + d] < 0.6 * xs[i][0] - 0.2 * xs[i][1] ? 1 : 0;
  }
  const double l2 = 0.1;
  probe::LogisticModel g = probe::fit_logistic(xs, ys, l2, 3000);
  std::vector<double> mean(d, 0), sd(d, 0);
  for (const auto& x : xs)
    for (size_t k = 0; k < d; ++k) mean[k] += x[k] / n;
  for (const auto& x : xs)
    for (size_t k = 0; k < d; ++k) sd[k] += (x[k] - mean[k]) * (x[k] - mean[k]) / n;
  for (double& s : sd) s = std::sqrt(s);
  std::vector<double> theta(d + 1, 0.0);  // (w, b)
  for (int it = 0; it < 50; ++it) {
    std::vector<double> grad(d + 1, 0.0);
    std::vector<std::vector<double>> h(d + 1, std::vector<double>(d + 1, 0.0));
    for (size_t i = 0; i < n; ++i) {
      std::vector<double> z(d + 1, 1.0);
      for (size_t k = 0; k < d; ++k) z[k] = (xs[i][k] - mean[k]) / sd[k];
      double s = 0;
      for (size_t k = 0; k <= d; ++k) s += z[k] * theta[k];
      const double p = 1 / (1 + std::exp(-s));
      for (size_t a = 0; a <= d; ++a) {
        grad[a] += (p - ys[i]) * z[a] / n;
        for (size_t b = 0; b <= d; ++b) h[a][b] += p * (1 - p) * z[a] * z[b] / n;
      }
    }
    for (size_t k = 0; k < d; ++k) grad[k] += l2 * theta[k], h[k][k] += l2;
    // Solve h delta = grad by Gaussian elimination (4 x 4, positive definite).
    for (size_t c = 0; c <= d; ++c)
      for (size_t row = c + 1; row <= d; ++row) {
        const double f = h[row][c] / h[c][c];
        for (size_t k = c; k <= d; ++k) h[row][k] -= f * h[c][k];
        grad[row] -= f * grad[c];
      }
    std::vector<double> delta(d + 1);
    for (size_t c = d + 1; c-- > 0;) {
      double s = grad[c];
      for (size_t k = c + 1; k <= d; ++k) s -= h[c][k] * delta[k];
      delta[c] = s / h[c][c];
    }
    for (size_t k = 0; k <= d; ++k) theta[k] -= delta[k];
  }
  for (size_t k = 0; k < d; ++k) CHECK(g.w[k] == Approx(theta[k]).epsilon(1e-6));
  CHECK(g.b == Approx(theta[d]).margin(1e-6));
  CHECK_THROWS_WITH(probe::fit_logistic({{1}}, {1, 0}), Catch::Contains("1 feature rows, 2 labels"));
}

TEST_CASE("relative order: the sinusoid orders positions, a random table is at chance (Wang & Chen 2020, Table 2)",
          "[probe][analysis]") {
  const int64_t n = 64, dim = 32;
  probe::OrderResult sin = probe::relative_order_classification(
      probe::sinusoid_table(n, probe::sinusoid_frequencies(dim)), 5, 1, 2000);
  INFO("sinusoid error " << sin.error_rate << " on " << sin.test_pairs << " pairs");
  // Each fold's test pairs: all ordered pairs of its ~n/5 positions.
  CHECK(sin.test_pairs > 5 * 12 * 11);
  CHECK(sin.error_rate < 0.15);
  probe::OrderResult rnd = probe::relative_order_classification(gaussian_table(n, dim, 5), 5, 1, 2000);
  INFO("random error " << rnd.error_rate);
  CHECK(rnd.error_rate > 0.35);
  CHECK(rnd.error_rate < 0.65);
}

TEST_CASE("informativeness: cumulative share of singular values (Wang & Chen 2020, §4.2.2)", "[probe][analysis]") {
  // Hand-worked: s = (4, 3, 2, 1), sum 10: shares 0.4, 0.7, 0.9, 1.
  std::vector<double> share = probe::cumulative_share({4, 3, 2, 1});
  REQUIRE(share.size() == 4);
  CHECK(share[0] == Approx(0.4));
  CHECK(share[1] == Approx(0.7));
  CHECK(share[2] == Approx(0.9));
  CHECK(share[3] == Approx(1.0));
  CHECK(probe::components_for(share, 0.9) == 3);
  CHECK(probe::components_for(share, 0.5) == 2);
  CHECK(probe::cumulative_share({0, 0}) == std::vector<double>{0, 0});

  // The sinusoid (128 positions, D = 64) against a Gaussian table of the same shape.
  const int64_t n = 128, dim = 64;
  std::vector<double> ss = probe::cumulative_share(
      probe::singular_values(probe::sinusoid_table(n, probe::sinusoid_frequencies(dim))));
  std::vector<double> sr = probe::cumulative_share(probe::singular_values(gaussian_table(n, dim, 9)));
  const int64_t k_sin = probe::components_for(ss, 0.9), k_rnd = probe::components_for(sr, 0.9);
  INFO("components for 90 %: sinusoid " << k_sin << ", random " << k_rnd << "; top-1 share " << ss[0] << " vs "
                                        << sr[0]);
  // Random: the singular values of a 128 x 64 Gaussian matrix lie in
  // sqrt(128) +- sqrt(64) (Marchenko-Pastur), within a factor 3.9 of each
  // other, so 90 % of their sum needs most of the 64 components (51 here).
  CHECK(k_rnd > 44);
  CHECK(sr[0] < 0.03);
  // The sinusoid: its slow frequencies are nearly constant columns that add
  // up into one large singular value.
  CHECK(ss[0] > 0.1);
  CHECK(k_sin < k_rnd);
}

TEST_CASE("mean attention by offset: hand-worked on 3 x 3 (Huang et al. 2020, Fig. 5)", "[probe][analysis]") {
  // Rows are queries i, columns keys j; offset r = j - i.
  Matrix a(3, 3);
  a.data = {0.1, 0.6, 0.3,   //
            0.5, 0.2, 0.3,   //
            0.4, 0.4, 0.2};
  const std::vector<double> m = ordo::probe::mean_by_offset(a);
  REQUIRE(m.size() == 5);
  CHECK(m[0] == Approx(0.4));                  // r = -2: A(2,0)
  CHECK(m[1] == Approx((0.5 + 0.4) / 2));      // r = -1: A(1,0), A(2,1)
  CHECK(m[2] == Approx((0.1 + 0.2 + 0.2) / 3));  // r = 0: the diagonal
  CHECK(m[3] == Approx((0.6 + 0.3) / 2));      // r = 1: A(0,1), A(1,2)
  CHECK(m[4] == Approx(0.3));                  // r = 2: A(0,2)
  CHECK_THROWS(ordo::probe::mean_by_offset(Matrix(2, 3)));
}

TEST_CASE("positional score terms: ABS-SCALAR's P_h P_h^T and REL-SCALAR's R_h(j - i) by hand, segments out, none "
          "for Shaw (Chen et al. 2021, Figs. 2, 4)", "[probe][analysis]") {
  // 2 layers, 2 heads of d_h 8, 12 positions; layer 2 read at length 10.
  auto model_of = [](const std::string& pe, const std::string& segment) {
    ordo::nn::BertConfig c = ordo::test::tiny_bert_config(30, 16, 2, 2, 32, 12);
    c.pe = pe;
    c.segment = segment;
    auto m = ordo::model::build_model(c, ordo::Device::cpu(), false, 3);
    for (auto& [name, p] : m->named_parameters())  // segment scores far from 0: they must be taken out
      if (name.find("segment_encoding") != std::string::npos) p->var.value().fill_(0.75);
    return m;
  };
  auto values_of = [](ordo::nn::PretrainingModel& m, const std::string& part) {
    for (auto& [name, p] : m.named_parameters())
      if (name.find(part) != std::string::npos) return p->var.value().to_doubles();
    FAIL("no parameter named like " << part);
    return std::vector<double>{};
  };
  const int64_t L = 10;
  auto abs = model_of("abs_scalar", "per_head");
  std::vector<Matrix> got = ordo::probe::positional_scores(*abs, 1, L);
  REQUIRE(got.size() == 2);
  for (int64_t h = 0; h < 2; ++h) {
    const std::vector<double> p = values_of(*abs, "position_scalar.layer_1.head_" + std::to_string(h));  // [12, 8]
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j) {
        double e = 0;
        for (int64_t k = 0; k < 8; ++k) e += p[static_cast<size_t>(i * 8 + k)] * p[static_cast<size_t>(j * 8 + k)];
        CHECK(std::fabs(got[h](i, j) - e) <= 1e-6);
      }
  }
  auto rel = model_of("rel_scalar", "per_head");
  got = ordo::probe::positional_scores(*rel, 1, L);
  REQUIRE(got.size() == 2);
  for (int64_t h = 0; h < 2; ++h) {
    const std::vector<double> r = values_of(*rel, "relative_scalar.layer_1.head_" + std::to_string(h));  // [23]: r + 11
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j) CHECK(std::fabs(got[h](i, j) - r[static_cast<size_t>(j - i + 11)]) <= 1e-7);
  }
  CHECK(ordo::probe::positional_scores(*model_of("rpe_shaw", "input"), 0, L).empty());  // q . a_r: 0 without q
  CHECK(ordo::probe::positional_scores(*model_of("ape_learned", "input"), 0, L).empty());
}

TEST_CASE("position and segment attention without the token term: softmax_j(R_h[j - i] + Seg_h[seg(i), seg(j)]) "
          "by hand (Chen et al. 2021, Fig. 6)", "[probe][analysis]") {
  ordo::nn::BertConfig c = ordo::test::tiny_bert_config(30, 16, 2, 2, 32, 12);
  c.pe = "rel_scalar";
  c.segment = "per_head";
  auto model = ordo::model::build_model(c, ordo::Device::cpu(), false, 3);
  // Each head's 2 x 2 segment table of layer 1 set by hand, far apart so that the segments show.
  std::map<std::string, std::vector<double>> seg;
  for (auto& [name, p] : model->named_parameters())
    if (name.find("segment_encoding") != std::string::npos && name.find("layer_0") != std::string::npos) {
      const double h = name.find("head_1") != std::string::npos ? 1 : 0;
      const std::vector<double> v = {1.5 + h, -0.5, -1.0 - h, 2.0 * h};
      REQUIRE(p->var.value().numel() == 4);
      p->var.value().copy_from(ordo::Tensor::from_vector(v, p->var.value().shape()).to(p->var.value().dtype()));
      seg[name] = v;
    }
  REQUIRE(seg.size() == 2);
  std::vector<std::vector<double>> r;
  for (auto& [name, p] : model->named_parameters())
    if (name.find("relative_scalar.layer_0.head_") != std::string::npos) r.push_back(p->var.value().to_doubles());
  REQUIRE(r.size() == 2);  // [23] each: distance + 11
  const int64_t L = 10, second = 5;
  const std::vector<Matrix> got = ordo::probe::segment_attention(*model, 0, L, second);
  REQUIRE(got.size() == 2);
  int64_t h = 0;
  for (const auto& [name, table] : seg) {  // head_0 then head_1
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> row(L);
      double z = 0;
      for (int64_t j = 0; j < L; ++j)
        z += row[j] = std::exp(r[h][static_cast<size_t>(j - i + 11)] + table[(i >= second) * 2 + (j >= second)]);
      for (int64_t j = 0; j < L; ++j) CHECK(std::fabs(got[h](i, j) - row[j] / z) <= 1e-6);
    }
    ++h;
  }
  c.segment = "input";  // no per-head segments: nothing to draw
  CHECK(ordo::probe::segment_attention(*ordo::model::build_model(c, ordo::Device::cpu(), false, 3), 0, L, second).empty());
}

TEST_CASE("indicator_axis: a trajectory panel's axis names the indicator, not its key", "[analysis]") {
  CHECK(probe::indicator_axis("translation invariance (AIV)") == "AIV (unitless)");
  CHECK(probe::indicator_axis("monotonicity, first 20 offsets (OPR)") == "OPR (unitless)");
  CHECK(probe::indicator_axis("locality (Eq. 7)") == "locality (unitless)");
  CHECK(probe::indicator_axis("symmetry") == "symmetry (unitless)");
}
