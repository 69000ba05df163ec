// The statistics of the papers' tables (experiment/statistics.h).
#include "experiment/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "base/error.h"
#include "downstream/metrics.h"

namespace ordo::experiment {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Sample variance (n - 1).
double variance_of(const std::vector<double>& v, double mean) {
  double squares = 0;
  for (double x : v) squares += (x - mean) * (x - mean);
  return squares / static_cast<double>(v.size() - 1);
}

void check_pairs(const std::vector<double>& x, const std::vector<double>& y, const char* what) {
  ORDO_CHECK(x.size() == y.size(), what, ": ", x.size(), " x values and ", y.size(), " y values; pairs are needed");
}

// The continued fraction of the regularised incomplete beta function
// (modified Lentz's method; Press et al., Numerical Recipes, 6.4).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300, eps = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    // The even step, then the odd step of the fraction.
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < eps) break;
  }
  return h;
}

// I_x(a, b), the regularised incomplete beta function, for 0 <= x <= 1, with
// y = 1 - x from the caller: near x = 1 the rounded x has lost the digits of
// 1 - x that the symmetric branch needs (x = df / (df + t^2) rounds to 1 for
// t = 1e-7, df = 1e4, where 1 - x = t^2 / (df + t^2) = 1e-18).
double incomplete_beta(double a, double b, double x, double y) {
  if (x <= 0) return 0;
  if (y <= 0) return 1;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log(y);
  // The fraction converges fast for x < (a + 1) / (a + b + 2); beyond, by symmetry.
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_continued_fraction(a, b, x) / a;
  return 1 - std::exp(log_front) * beta_continued_fraction(b, a, y) / b;
}

// P(Z > z) for a standard normal Z.
double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

// Kendall's S = concordant - discordant pairs: sum over i < j of sign(x_i - x_j) sign(y_i - y_j).
int64_t kendall_s(const std::vector<double>& x, const std::vector<double>& y) {
  int64_t s = 0;
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = i + 1; j < x.size(); ++j) s += ((x[i] > x[j]) - (x[i] < x[j])) * ((y[i] > y[j]) - (y[i] < y[j]));
  return s;
}

// sum rank(x_i) rank(y_i) on doubled ranks (average ranks are halves: doubled, they are integers).
int64_t rank_products(const std::vector<double>& doubled_x, const std::vector<double>& doubled_y) {
  int64_t s = 0;
  for (size_t i = 0; i < doubled_x.size(); ++i) s += std::llround(doubled_x[i]) * std::llround(doubled_y[i]);
  return s;
}

std::vector<double> doubled_ranks(const std::vector<double>& v) {
  std::vector<double> r = downstream::average_ranks(v);
  for (double& x : r) x *= 2;
  return r;
}

// The two-sided p-value of an exact permutation test of an integer statistic:
// every distinct arrangement of y's values against x once (each stands for
// the same number, the product of y's tie groups' factorials, of the n!
// permutations), p = min(1, 2 min(P(S <= s), P(S >= s))).
template <class Statistic>
double exact_permutation_p(const std::vector<double>& x, std::vector<double> y, Statistic statistic) {
  const int64_t observed = statistic(x, y);
  std::sort(y.begin(), y.end());
  double at_most = 0, at_least = 0, arrangements = 0;
  do {
    const int64_t s = statistic(x, y);
    at_most += s <= observed;
    at_least += s >= observed;
    arrangements += 1;
  } while (std::next_permutation(y.begin(), y.end()));
  return std::min(1.0, 2 * std::min(at_most, at_least) / arrangements);
}

// The sizes of v's groups of equal values that hold more than one.
std::vector<double> tie_sizes(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::vector<double> sizes;
  for (size_t i = 0; i < v.size();) {
    size_t j = i + 1;
    while (j < v.size() && v[j] == v[i]) ++j;
    if (j - i > 1) sizes.push_back(static_cast<double>(j - i));
    i = j;
  }
  return sizes;
}

// Kendall's variance of S without association, corrected for ties (kendall_test's comment).
double kendall_s_variance(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  auto sum = [](const std::vector<double>& sizes, auto term) {
    double s = 0;
    for (double t : sizes) s += term(t);
    return s;
  };
  const std::vector<double> tx = tie_sizes(x), ty = tie_sizes(y);
  auto spread = [](double t) { return t * (t - 1) * (2 * t + 5); };
  auto triples = [](double t) { return t * (t - 1) * (t - 2); };
  auto pairs = [](double t) { return t * (t - 1); };
  return (n * (n - 1) * (2 * n + 5) - sum(tx, spread) - sum(ty, spread)) / 18 +
         sum(tx, triples) * sum(ty, triples) / (9 * n * (n - 1) * (n - 2)) +
         sum(tx, pairs) * sum(ty, pairs) / (2 * n * (n - 1));
}

// The two-sided p-value of a correlation r over n pairs from Student's t on n - 2 degrees of freedom.
double t_test_of_correlation(double r, int64_t n) {
  if (std::fabs(r) >= 1) return 0;
  const double df = static_cast<double>(n - 2);
  const double t = r * std::sqrt(df / ((1 - r) * (1 + r)));
  return std::min(1.0, 2 * student_t_sf(std::fabs(t), df));
}

}  // namespace

MeanStd mean_std(const std::vector<double>& values) {
  MeanStd s;
  s.n = static_cast<int64_t>(values.size());
  if (values.empty()) return {kNaN, kNaN, 0};
  s.mean = mean_of(values);
  s.std = values.size() < 2 ? kNaN : std::sqrt(variance_of(values, s.mean));
  return s;
}

double student_t_sf(double t, double df) {
  ORDO_CHECK(df > 0, "Student's t: the degrees of freedom must be > 0, got ", df);
  if (std::isnan(t)) return kNaN;
  // P(|T| > |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2); half of it lies beyond |t| on each side.
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t), t * t / (df + t * t));
  return t >= 0 ? tail : 1 - tail;
}

double student_t_isf(double p, double df) {
  ORDO_CHECK(p > 0 && p < 1, "Student's t quantile: the tail probability must lie in (0, 1), got ", p);
  if (p > 0.5) return -student_t_isf(1 - p, df);
  double low = 0, high = 1;
  while (student_t_sf(high, df) > p) low = high, high *= 2;  // sf falls with t: bracket the root
  for (int i = 0; i < 200 && high - low > 1e-15 * high; ++i) {
    const double mid = 0.5 * (low + high);
    (student_t_sf(mid, df) > p ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

Interval welch_interval(const std::vector<double>& a, const std::vector<double>& b, double confidence) {
  ORDO_CHECK(confidence > 0 && confidence < 1, "a confidence level lies in (0, 1), got ", confidence);
  const TTest t = welch_t_test(a, b);
  if (std::isnan(t.t)) return {kNaN, kNaN};
  const double difference = mean_of(a) - mean_of(b), se = difference / t.t;
  const double half = student_t_isf((1 - confidence) / 2, t.df) * std::fabs(se);
  if (difference == 0) {  // t = 0 leaves the standard error unrecoverable from it: take it again
    const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
    const double s = std::sqrt(variance_of(a, mean_of(a)) / na + variance_of(b, mean_of(b)) / nb);
    return {-student_t_isf((1 - confidence) / 2, t.df) * s, student_t_isf((1 - confidence) / 2, t.df) * s};
  }
  return {difference - half, difference + half};
}

Interval mean_interval(const std::vector<double>& values, double confidence) {
  ORDO_CHECK(confidence > 0 && confidence < 1, "a confidence level lies in (0, 1), got ", confidence);
  if (values.size() < 2) return {kNaN, kNaN};
  const double n = static_cast<double>(values.size()), mean = mean_of(values);
  const double half = student_t_isf((1 - confidence) / 2, n - 1) * std::sqrt(variance_of(values, mean) / n);
  return {mean - half, mean + half};
}

Interval pearson_interval(double r, int64_t n, double confidence) {
  ORDO_CHECK(confidence > 0 && confidence < 1, "a confidence level lies in (0, 1), got ", confidence);
  if (n < 4 || std::isnan(r)) return {kNaN, kNaN};
  // The standard normal's upper quantile, by bisection on its tail erfc(z / sqrt 2) / 2.
  const double tail = (1 - confidence) / 2;
  double low = 0, high = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (low + high);
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > tail ? low : high) = mid;
  }
  const double z = std::atanh(r), half = 0.5 * (low + high) / std::sqrt(static_cast<double>(n) - 3);
  return {std::tanh(z - half), std::tanh(z + half)};
}

TTest welch_t_test(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) return {kNaN, kNaN, kNaN};
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double ma = mean_of(a), mb = mean_of(b);
  const double va = variance_of(a, ma) / na, vb = variance_of(b, mb) / nb;  // squared standard errors
  if (va + vb == 0) return {kNaN, kNaN, kNaN};
  TTest r;
  r.t = (ma - mb) / std::sqrt(va + vb);
  r.df = (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1));
  r.p = std::min(1.0, 2 * student_t_sf(std::fabs(r.t), r.df));
  return r;
}

TTest one_sample_t_test(const std::vector<double>& values, double mu) {
  if (values.size() < 2) return {kNaN, kNaN, kNaN};
  const double n = static_cast<double>(values.size()), mean = mean_of(values);
  const double se = std::sqrt(variance_of(values, mean) / n);
  if (se == 0) return {kNaN, kNaN, kNaN};
  TTest r;
  r.t = (mean - mu) / se;
  r.df = n - 1;
  r.p = std::min(1.0, 2 * student_t_sf(std::fabs(r.t), r.df));
  return r;
}

LinearFit linear_fit(const std::vector<double>& x, const std::vector<double>& y, double confidence) {
  check_pairs(x, y, "a least-squares line");
  ORDO_CHECK(confidence > 0 && confidence < 1, "a confidence level lies in (0, 1), got ", confidence);
  LinearFit f;
  f.n = static_cast<int64_t>(x.size());
  f.slope = f.intercept = f.slope_se = f.t = f.df = f.p = kNaN;
  f.slope_interval = {kNaN, kNaN};
  if (x.size() < 2) return f;
  const double mean_x = mean_of(x), mean_y = mean_of(y);
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mean_x) * (x[i] - mean_x);
    sxy += (x[i] - mean_x) * (y[i] - mean_y);
  }
  if (sxx == 0) return f;  // one x: no line
  f.slope = sxy / sxx;
  f.intercept = mean_y - f.slope * mean_x;
  if (x.size() < 3 || std::all_of(y.begin(), y.end(), [&](double v) { return v == y[0]; })) return f;
  f.df = static_cast<double>(x.size() - 2);
  double residual_squares = 0;  // from the residuals themselves: Syy - slope Sxy cancels on a near-perfect fit
  for (size_t i = 0; i < x.size(); ++i) {
    const double r = y[i] - f.intercept - f.slope * x[i];
    residual_squares += r * r;
  }
  f.slope_se = std::sqrt(residual_squares / f.df / sxx);
  const double half = student_t_isf((1 - confidence) / 2, f.df) * f.slope_se;
  f.slope_interval = {f.slope - half, f.slope + half};
  if (f.slope_se == 0) {  // every point on a sloped line exactly (a flat one returned above)
    f.t = std::copysign(std::numeric_limits<double>::infinity(), f.slope);
    f.p = 0;
    return f;
  }
  f.t = f.slope / f.slope_se;
  f.p = std::min(1.0, 2 * student_t_sf(std::fabs(f.t), f.df));
  return f;
}

LinearFit log_compute_trend(const std::vector<double>& compute, const std::vector<double>& metric, double confidence) {
  std::vector<double> x;
  for (size_t i = 0; i < compute.size(); ++i) {
    ORDO_CHECK(compute[i] > 0 && std::isfinite(compute[i]), "a trend against log compute: point ", i + 1, " of ",
               compute.size(), " has compute ", compute[i], "; compute must be positive and finite");
    x.push_back(std::log10(compute[i]));
  }
  return linear_fit(x, metric, confidence);
}

// The GLUE metrics' Pearson and Spearman (downstream/metrics.h, SciPy's
// definitions), with NaN rather than an error below two pairs.
double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  check_pairs(x, y, "Pearson's r");
  return x.size() < 2 ? kNaN : downstream::pearson(x, y);
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  check_pairs(x, y, "Spearman's rho");
  return x.size() < 2 ? kNaN : downstream::spearman(x, y);
}

double kendall_tau_b(const std::vector<double>& x, const std::vector<double>& y) {
  check_pairs(x, y, "Kendall's tau");
  double concordant = 0, discordant = 0, tied_x = 0, tied_y = 0;  // pairs tied in x only, in y only
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = i + 1; j < x.size(); ++j) {
      const double dx = x[i] - x[j], dy = y[i] - y[j];
      if (dx == 0 && dy == 0) continue;  // tied in both: in neither count
      if (dx == 0) tied_x += 1;
      else if (dy == 0) tied_y += 1;
      else if ((dx > 0) == (dy > 0)) concordant += 1;
      else discordant += 1;
    }
  const double denominator = std::sqrt((concordant + discordant + tied_x) * (concordant + discordant + tied_y));
  if (denominator == 0) return kNaN;
  return (concordant - discordant) / denominator;
}

CorrelationTest kendall_test(const std::vector<double>& x, const std::vector<double>& y) {
  CorrelationTest c;
  c.value = kendall_tau_b(x, y);
  c.n = static_cast<int64_t>(x.size());
  c.p = kNaN;
  if (std::isnan(c.value)) return c;
  if (c.n <= kExactPermutationMaxN) {
    c.method = "exact permutation";
    c.p = exact_permutation_p(x, y, kendall_s);
  } else {
    c.method = "normal approximation";
    c.p = 2 * normal_sf(std::fabs(static_cast<double>(kendall_s(x, y))) / std::sqrt(kendall_s_variance(x, y)));
  }
  return c;
}

CorrelationTest spearman_test(const std::vector<double>& x, const std::vector<double>& y) {
  CorrelationTest c;
  c.value = spearman(x, y);
  c.n = static_cast<int64_t>(x.size());
  c.p = kNaN;
  if (std::isnan(c.value)) return c;
  if (c.n <= kExactPermutationMaxN) {
    c.method = "exact permutation";
    c.p = exact_permutation_p(doubled_ranks(x), doubled_ranks(y), rank_products);
  } else {
    c.method = "t approximation";
    c.p = t_test_of_correlation(c.value, c.n);
  }
  return c;
}

CorrelationTest pearson_test(const std::vector<double>& x, const std::vector<double>& y) {
  CorrelationTest c;
  c.value = pearson(x, y);
  c.n = static_cast<int64_t>(x.size());
  c.method = "t distribution";
  c.p = std::isnan(c.value) ? kNaN : c.n == 2 ? 1.0 : t_test_of_correlation(c.value, c.n);
  return c;
}

std::vector<double> holm_adjust(const std::vector<double>& p) {
  std::vector<size_t> order;
  for (size_t i = 0; i < p.size(); ++i) {
    if (std::isnan(p[i])) continue;
    ORDO_CHECK(p[i] >= 0 && p[i] <= 1, "Holm's correction: p-value ", i + 1, " of ", p.size(), " is ", p[i],
               ", outside [0, 1]");
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> adjusted(p.size(), kNaN);
  const double m = static_cast<double>(order.size());
  double running = 0;  // the step-down's maximum so far: an adjusted p never falls below a smaller p's
  for (size_t k = 0; k < order.size(); ++k) {
    running = std::max(running, std::min(1.0, (m - static_cast<double>(k)) * p[order[k]]));
    adjusted[order[k]] = running;
  }
  return adjusted;
}

}  // namespace ordo::experiment
