// The statistics the papers' tables use, on plain vectors of numbers:
// spread over seeds, the two-sample test behind a significance mark, and the
// correlations between columns (a property indicator against a task's score
// over configurations; ordo's values against the paper's over rows) with
// their p-values, and Holm's correction of a family of p-values.
//
// Every function is written from its textbook definition (the comment says
// which) and checked against SciPy's values in tests/experiment/ (a twin
// script writes the golden file). NaN is the answer where the statistic is
// undefined (too few values, a zero variance), never a made-up number.
#pragma once

#include <cstdint>
#include <vector>

namespace ordo::experiment {

// Mean and sample standard deviation (n - 1 in the denominator) of `values`;
// std is NaN for fewer than 2 values, both NaN for none.
struct MeanStd {
  double mean = 0, std = 0;
  int64_t n = 0;
};
MeanStd mean_std(const std::vector<double>& values);

// Welch's unequal-variances t-test of the means of a and b, two-sided
// (scipy.stats.ttest_ind(a, b, equal_var=False)):
//   t = (mean_a - mean_b) / sqrt(s_a^2/n_a + s_b^2/n_b),
//   df by the Welch-Satterthwaite equation,
//   p = 2 P(T_df > |t|), from the regularised incomplete beta function.
// NaN (t, df and p) when either sample has fewer than 2 values or both
// variances are 0.
struct TTest {
  double t = 0, df = 0, p = 0;
};
TTest welch_t_test(const std::vector<double>& a, const std::vector<double>& b);

// Student's one-sample t-test of the mean of `values` against `mu`, two-sided
// (scipy.stats.ttest_1samp(values, mu)): t = (mean - mu) / (s / sqrt(n)),
// df = n - 1, p = 2 P(T_df > |t|). NaN below two values or with no spread.
TTest one_sample_t_test(const std::vector<double>& values, double mu);

// Student's t distribution with `df` degrees of freedom: P(T > t) (the
// survival function), for any real t and df > 0.
double student_t_sf(double t, double df);

// The upper quantile of Student's t: the t with P(T > t) = p, for 0 < p < 1
// (scipy.stats.t.isf(p, df)), found by bisection on student_t_sf.
double student_t_isf(double p, double df);

// A two-sided confidence interval; NaN ends where it is undefined.
struct Interval {
  double low = 0, high = 0;
};

// The `confidence` (0.95) interval of mean_a - mean_b by Welch's t:
//   (mean_a - mean_b) -/+ t.isf((1 - confidence) / 2, df) sqrt(s_a^2/n_a + s_b^2/n_b)
// (scipy.stats.ttest_ind(a, b, equal_var=False).confidence_interval(confidence));
// NaN where the test is.
Interval welch_interval(const std::vector<double>& a, const std::vector<double>& b, double confidence);

// The `confidence` interval of the mean of `values`:
//   mean -/+ t.isf((1 - confidence) / 2, n - 1) s / sqrt(n)
// (scipy.stats.ttest_1samp(values, mu).confidence_interval(confidence)); NaN
// ends below two values.
Interval mean_interval(const std::vector<double>& values, double confidence);

// The `confidence` interval of Pearson's r over n pairs by Fisher's z,
//   tanh(atanh(r) -/+ z_{(1 + confidence) / 2} / sqrt(n - 3))
// (scipy.stats.pearsonr(x, y).confidence_interval(confidence)); NaN for n < 4
// or an undefined r.
Interval pearson_interval(double r, int64_t n, double confidence);

// The least-squares line y = intercept + slope x through the pairs (x_i, y_i)
// with its slope's test and interval (scipy.stats.linregress; the interval
// as its documentation builds it): with Sxx = sum (x - mean x)^2,
// Sxy = sum (x - mean x)(y - mean y),
//   slope = Sxy / Sxx,   intercept = mean y - slope mean x,
//   s^2 = sum (y - intercept - slope x)^2 / (n - 2),   se = sqrt(s^2 / Sxx),
//   t = slope / se on n - 2 degrees of freedom, p = 2 P(T > |t|),
//   the `confidence` interval slope -/+ t.isf((1 - confidence) / 2, n - 2) se.
// A perfect fit (s = 0) has se 0, t infinite, p 0 and the interval
// [slope, slope] (SciPy: p 1e-20). slope and intercept are NaN when every x
// is the same (SciPy refuses); se, t, p and the interval are NaN below 3
// pairs (no residual degree of freedom) and when every y is the same (t =
// 0 / 0; SciPy's NaN). x and y must have the same length (ordo::Error
// otherwise).
struct LinearFit {
  double slope = 0, intercept = 0;
  double slope_se = 0, t = 0, df = 0, p = 0;
  Interval slope_interval;
  int64_t n = 0;
};
LinearFit linear_fit(const std::vector<double>& x, const std::vector<double>& y, double confidence);

// The trend of a metric with scale: linear_fit of the metric against
// log10(compute) over every (rung, seed) point, so the slope is the metric's
// change per tenfold compute and its interval is over the seeds' scatter
// about the line. Every compute must be positive and finite (ordo::Error
// naming the point otherwise).
LinearFit log_compute_trend(const std::vector<double>& compute, const std::vector<double>& metric, double confidence);

// Pearson's r of the pairs (x_i, y_i); NaN for fewer than 2 pairs or a zero
// variance. x and y must have the same length (ordo::Error otherwise).
double pearson(const std::vector<double>& x, const std::vector<double>& y);

// Spearman's rho: Pearson's r of the ranks, ties given their average rank
// (scipy.stats.spearmanr).
double spearman(const std::vector<double>& x, const std::vector<double>& y);

// Kendall's tau-b, which corrects for ties in either variable
// (scipy.stats.kendalltau's default):
//   tau_b = (P - Q) / sqrt((P + Q + T_x) (P + Q + T_y))
// P concordant pairs, Q discordant, T_x pairs tied in x only, T_y in y only.
// NaN for fewer than 2 pairs or when every pair ties in x or in y.
double kendall_tau_b(const std::vector<double>& x, const std::vector<double>& y);

// A correlation with its two-sided p-value (no association as the null), its
// n, and how p was found ("exact permutation", "normal approximation",
// "t approximation"). value and p are NaN where the coefficient is undefined.
struct CorrelationTest {
  double value = 0, p = 0;
  int64_t n = 0;
  const char* method = "";
};

// Up to this n the rank correlations' p-values are exact: every arrangement
// of y against x (n! at most 3,628,800) is counted.
constexpr int64_t kExactPermutationMaxN = 10;

// Kendall's tau-b and its p-value. n <= 10: the exact permutation test, each
// distinct arrangement of y's values against x counted once (with ties too):
//   p = min(1, 2 min(P(S <= s), P(S >= s))),  S = concordant - discordant,
// which is scipy.stats.kendalltau(method="exact") without ties and
// scipy.stats.permutation_test(permutation_type="pairings",
// n_resamples=inf) with them (kendalltau's default would take the normal
// approximation there). n > 10: the normal approximation with the
// tie-corrected variance (Kendall 1970, as kendalltau(method="asymptotic")):
//   var S = [n(n-1)(2n+5) - sum t(t-1)(2t+5) - sum u(u-1)(2u+5)] / 18
//         + [sum t(t-1)(t-2)] [sum u(u-1)(u-2)] / (9 n (n-1) (n-2))
//         + [sum t(t-1)] [sum u(u-1)] / (2 n (n-1)),
// t and u the sizes of x's and y's groups of ties; p = 2 P(Z > |S| / sqrt(var S)).
// (kendalltau's default takes its exact test up to n = 33 when nothing ties.)
CorrelationTest kendall_test(const std::vector<double>& x, const std::vector<double>& y);

// Spearman's rho and its p-value. n <= 10: the exact permutation test of
// sum rank(x_i) rank(y_i), as scipy.stats.permutation_test(permutation_type=
// "pairings", n_resamples=inf) on spearmanr's statistic; n > 10:
// scipy.stats.spearmanr's t approximation, t = rho sqrt((n - 2) / (1 - rho^2))
// on n - 2 degrees of freedom.
CorrelationTest spearman_test(const std::vector<double>& x, const std::vector<double>& y);

// Pearson's r and its p-value from Student's t, t = r sqrt((n - 2) / (1 - r^2))
// on n - 2 degrees of freedom (scipy.stats.pearsonr, exact for normal data);
// p = 1 at n = 2, as SciPy gives it.
CorrelationTest pearson_test(const std::vector<double>& x, const std::vector<double>& y);

// Holm's step-down correction (Holm 1979, "A simple sequentially rejective
// multiple test procedure", Scand. J. Statist. 6:65-70) of one family's
// p-values: with the m defined p-values sorted, p_(1) <= ... <= p_(m), the
// adjusted p_(i) = max over j <= i of min(1, (m - j + 1) p_(j)), returned in
// the input's order. Rejecting where the adjusted p < alpha keeps the chance
// of any false rejection in the family below alpha. NaN (an untested member)
// stays NaN and does not count in m; a p outside [0, 1] is an ordo::Error.
std::vector<double> holm_adjust(const std::vector<double>& p);

}  // namespace ordo::experiment
