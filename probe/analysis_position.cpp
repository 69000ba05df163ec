#include "probe/analysis_position.h"

#include <algorithm>
#include <cmath>

#include "base/counter_rng.h"
#include "probe/analysis_linalg.h"

namespace ordo::probe {

// ---- sinusoids -----------------------------------------------------------------------------

std::vector<double> sinusoid_frequencies(int64_t dim) {
  ORDO_CHECK(dim >= 2 && dim % 2 == 0, "sinusoid_frequencies: the dimension must be even, got ", dim);
  std::vector<double> w(static_cast<size_t>(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) w[i] = std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
  return w;
}

Matrix sinusoid_table(int64_t rows, const std::vector<double>& frequencies, int64_t first) {
  Matrix p(rows, static_cast<int64_t>(frequencies.size()) * 2);
  for (int64_t x = 0; x < rows; ++x)
    for (size_t i = 0; i < frequencies.size(); ++i) {
      const double angle = frequencies[i] * static_cast<double>(x + first);
      p(x, static_cast<int64_t>(2 * i)) = std::sin(angle);
      p(x, static_cast<int64_t>(2 * i + 1)) = std::cos(angle);
    }
  return p;
}

// ---- similarity ----------------------------------------------------------------------------

Matrix dot_products(const Matrix& p) { return matmul_nt(p, p); }

Matrix cosine_similarities(const Matrix& p) {
  Matrix d = dot_products(p);
  std::vector<double> norm(static_cast<size_t>(p.rows));
  for (int64_t i = 0; i < p.rows; ++i) norm[i] = std::sqrt(std::max(0.0, d(i, i)));
  for (int64_t i = 0; i < p.rows; ++i)
    for (int64_t j = 0; j < p.rows; ++j) d(i, j) = norm[i] > 0 && norm[j] > 0 ? d(i, j) / (norm[i] * norm[j]) : 0.0;
  return d;
}

ThresholdSummary threshold_summary(const Matrix& cos, int64_t first, double threshold) {
  ORDO_CHECK(cos.square(), "threshold_summary: the cosine matrix must be square");
  ThresholdSummary s;
  s.threshold = threshold;
  const int64_t n = cos.rows;
  int64_t above = 0, pairs = 0;
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < n; ++b)
      if (a != b) above += cos(a, b) > threshold ? 1 : 0, ++pairs;
  s.share_above = pairs ? static_cast<double>(above) / static_cast<double>(pairs) : 0.0;
  // One side: the rows whose offsets have sign `sign`, ordered by |offset|.
  auto side = [&](int sign) -> int64_t {
    std::vector<std::pair<int64_t, int64_t>> rows;  // (|offset|, row)
    for (int64_t k = 0; k < n; ++k) {
      const int64_t r = first + k;
      if ((sign > 0 && r > 0) || (sign < 0 && r < 0)) rows.emplace_back(std::llabs(r), k);
    }
    std::sort(rows.begin(), rows.end());
    if (rows.size() < 2) return -1;
    // Grow the tail from the outermost vector inwards while every pair stays above.
    size_t start = rows.size() - 1;
    while (start > 0) {
      bool all = true;
      for (size_t t = start; t < rows.size() && all; ++t) all = cos(rows[start - 1].second, rows[t].second) > threshold;
      if (!all) break;
      --start;
    }
    return start == rows.size() - 1 ? -1 : rows[start].first;
  };
  s.indistinct_beyond_ahead = side(+1);
  s.indistinct_beyond_behind = side(-1);
  return s;
}

// ---- folds -----------------------------------------------------------------------------------

std::vector<int64_t> fold_order(int64_t n, uint64_t seed) {
  return shuffled_order(n, CounterRng(seed, rng_stream(RngPurpose::probe_folds)));
}

namespace {

// fold[row] for `folds` folds over n rows, as documented in the header.
std::vector<int> fold_of(int64_t n, int folds, uint64_t seed) {
  std::vector<int64_t> order = fold_order(n, seed);
  std::vector<int> f(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) f[order[k]] = static_cast<int>(k % folds);
  return f;
}

}  // namespace

// ---- regression ------------------------------------------------------------------------------

RegressionResult position_regression(const Matrix& table, int folds, uint64_t seed) {
  const int64_t n = table.rows, d = table.cols;
  ORDO_CHECK(folds >= 2 && n >= folds, "position_regression: ", n, " positions cannot make ", folds, " folds");
  const std::vector<int> fold = fold_of(n, folds, seed);
  RegressionResult r;
  r.predictions.assign(static_cast<size_t>(n), 0.0);
  double err = 0, base = 0;
  for (int f = 0; f < folds; ++f) {
    std::vector<int64_t> train, test;
    for (int64_t x = 0; x < n; ++x) (fold[x] == f ? test : train).push_back(x);
    std::vector<double> mean(static_cast<size_t>(d), 0.0);
    double ymean = 0;
    for (int64_t x : train) {
      for (int64_t k = 0; k < d; ++k) mean[k] += table(x, k);
      ymean += static_cast<double>(x);
    }
    for (double& m : mean) m /= static_cast<double>(train.size());
    ymean /= static_cast<double>(train.size());
    Matrix xs(static_cast<int64_t>(train.size()), d);
    std::vector<double> ys(train.size());
    for (size_t t = 0; t < train.size(); ++t) {
      for (int64_t k = 0; k < d; ++k) xs(static_cast<int64_t>(t), k) = table(train[t], k) - mean[k];
      ys[t] = static_cast<double>(train[t]) - ymean;
    }
    const std::vector<double> w = least_squares(xs, ys);
    for (int64_t x : test) {
      double y = ymean;
      for (int64_t k = 0; k < d; ++k) y += (table(x, k) - mean[k]) * w[k];
      r.predictions[x] = y;
      err += std::fabs(y - static_cast<double>(x));
      base += std::fabs(ymean - static_cast<double>(x));
    }
  }
  r.mae = err / static_cast<double>(n);
  r.baseline_mae = base / static_cast<double>(n);
  return r;
}

// ---- order classification ---------------------------------------------------------------------

double LogisticModel::score(const std::vector<double>& x) const {
  double s = b;
  for (size_t k = 0; k < w.size(); ++k) s += (x[k] - mean[k]) / scale[k] * w[k];
  return s;
}

LogisticModel fit_logistic(const std::vector<std::vector<double>>& xs, const std::vector<double>& ys, double l2,
                           int iterations) {
  ORDO_CHECK(!xs.empty() && xs.size() == ys.size(), "fit_logistic: ", xs.size(), " feature rows, ", ys.size(), " labels");
  const size_t n = xs.size(), d = xs[0].size();
  const double lambda = l2;
  Matrix x(static_cast<int64_t>(n), static_cast<int64_t>(d));
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < d; ++k) x(static_cast<int64_t>(i), static_cast<int64_t>(k)) = xs[i][k];
  Standardised st = standardise(x);
  const Matrix& z = st.z;
  LogisticModel m;
  m.mean = std::move(st.mean);
  m.scale = std::move(st.scale);
  // The loss's gradient is Lipschitz with constant (lambda_max(Z^T Z / n) + 1 for the bias) / 4 + lambda.
  const double lmax = gram_largest_eigenvalue(z);
  const double step = 1.0 / (0.25 * (lmax + 1.0) + lambda);
  std::vector<double> w(d, 0.0), w_prev(d, 0.0), wy(d), grad(d);
  double b = 0, b_prev = 0;
  for (int t = 0; t < iterations; ++t) {
    const double momentum = static_cast<double>(t) / (t + 3.0);
    for (size_t k = 0; k < d; ++k) wy[k] = w[k] + momentum * (w[k] - w_prev[k]);
    const double by = b + momentum * (b - b_prev);
    std::fill(grad.begin(), grad.end(), 0.0);
    double gb = 0;
    for (size_t i = 0; i < n; ++i) {
      double s = by;
      for (size_t k = 0; k < d; ++k) s += z(static_cast<int64_t>(i), static_cast<int64_t>(k)) * wy[k];
      const double p = 1.0 / (1.0 + std::exp(-s)), e = (p - ys[i]) / static_cast<double>(n);
      for (size_t k = 0; k < d; ++k) grad[k] += z(static_cast<int64_t>(i), static_cast<int64_t>(k)) * e;
      gb += e;
    }
    w_prev = w;
    b_prev = b;
    for (size_t k = 0; k < d; ++k) w[k] = wy[k] - step * (grad[k] + lambda * wy[k]);
    b = by - step * gb;
  }
  m.w = w;
  m.b = b;
  return m;
}

OrderResult relative_order_classification(const Matrix& table, int folds, uint64_t seed, int64_t max_train_pairs) {
  const int64_t n = table.rows, d = table.cols;
  ORDO_CHECK(folds >= 2 && n >= 2 * folds, "relative_order_classification: ", n, " positions are too few for ",
             folds, " folds");
  const std::vector<int> fold = fold_of(n, folds, seed);
  auto features = [&](int64_t i, int64_t j) {
    std::vector<double> x(static_cast<size_t>(2 * d));
    for (int64_t k = 0; k < d; ++k) x[k] = table(i, k), x[d + k] = table(j, k);
    return x;
  };
  OrderResult r;
  int64_t wrong = 0;
  for (int f = 0; f < folds; ++f) {
    std::vector<int64_t> train, test;
    for (int64_t x = 0; x < n; ++x) (fold[x] == f ? test : train).push_back(x);
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (int64_t i : train)
      for (int64_t j : train)
        if (i != j) pairs.emplace_back(i, j);
    if (static_cast<int64_t>(pairs.size()) > max_train_pairs) {
      std::vector<int64_t> pick = shuffled_order(static_cast<int64_t>(pairs.size()),
                                                 CounterRng(seed, rng_stream(RngPurpose::probe_pairs), f));
      std::vector<std::pair<int64_t, int64_t>> kept;
      for (int64_t k = 0; k < max_train_pairs; ++k) kept.push_back(pairs[pick[k]]);
      std::sort(kept.begin(), kept.end());
      pairs.swap(kept);
    }
    std::vector<std::vector<double>> xs;
    std::vector<double> ys;
    for (const auto& [i, j] : pairs) xs.push_back(features(i, j)), ys.push_back(i > j ? 1.0 : 0.0);
    const LogisticModel model = fit_logistic(xs, ys);
    for (int64_t i : test)
      for (int64_t j : test) {
        if (i == j) continue;
        const bool predicted = model.score(features(i, j)) > 0;
        wrong += predicted != (i > j) ? 1 : 0;
        ++r.test_pairs;
      }
  }
  r.error_rate = r.test_pairs ? static_cast<double>(wrong) / static_cast<double>(r.test_pairs) : 0.0;
  return r;
}

// ---- informativeness ---------------------------------------------------------------------------

std::vector<double> cumulative_share(const std::vector<double>& s) {
  double total = 0;
  for (double x : s) total += x;
  std::vector<double> share;
  double run = 0;
  for (double x : s) {
    run += x;
    share.push_back(total > 0 ? run / total : 0.0);
  }
  return share;
}

int64_t components_for(const std::vector<double>& share, double fraction) {
  for (size_t k = 0; k < share.size(); ++k)
    if (share[k] >= fraction - 1e-12) return static_cast<int64_t>(k + 1);
  return static_cast<int64_t>(share.size());
}

// ---- attention by offset ---------------------------------------------------------------------------

std::vector<double> mean_by_offset(const Matrix& a) {
  ORDO_CHECK(a.rows == a.cols && a.rows >= 1, "mean_by_offset: expected a square matrix, got ", a.rows, " x ", a.cols);
  const int64_t L = a.rows;
  std::vector<double> m(static_cast<size_t>(2 * L - 1), 0.0);
  for (int64_t r = -(L - 1); r <= L - 1; ++r) {
    double sum = 0;
    for (int64_t i = std::max<int64_t>(0, -r); i < std::min(L, L - r); ++i) sum += a(i, i + r);
    m[static_cast<size_t>(r + L - 1)] = sum / static_cast<double>(L - std::abs(r));
  }
  return m;
}

}  // namespace ordo::probe
