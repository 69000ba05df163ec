// The statistics the papers' tables use, on plain vectors of numbers:
// spread over seeds, the two-sample test behind a significance mark, and the
// correlations between columns (a property indicator against a task's score
// over configurations; ordo's values against the paper's over rows).
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

// Student's t distribution with `df` degrees of freedom: P(T > t) (the
// survival function), for any real t and df > 0.
double student_t_sf(double t, double df);

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

}  // namespace ordo::experiment
