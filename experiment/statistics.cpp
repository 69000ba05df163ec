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

}  // namespace ordo::experiment
