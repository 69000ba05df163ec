// Analyses of a table of position vectors (one row per position or per
// relative offset): pure functions of the table, so each can be checked on
// the fixed sinusoid and on random tables (tests/probe/test_analysis.cpp).
//
//   similarity    dot products and cosine similarities between the rows
//                 (Wang et al. 2021, Fig. 1 and App. D's 0.95 threshold;
//                 Wang & Chen 2020, §4.2.1)
//   regression    absolute position from the vector: linear least squares,
//                 5-fold cross-validation, mean absolute error (Wang & Chen
//                 2020, §4.1.1, Table 1)
//   order         which of two positions comes first: logistic regression on
//                 the pair's vectors, error rate (Wang & Chen 2020, §4.1.2,
//                 Table 2)
//   informativeness  cumulative share of the top-k singular values (Wang &
//                 Chen 2020, §4.2.2, Fig. 2)
#pragma once

#include <cstdint>
#include <vector>

#include "probe/probe_matrix.h"

namespace ordo::probe {

// ---- sinusoids (the control) -----------------------------------------------------------------

// w_i = 10000^(-2i/D), i = 0 .. D/2-1 (Vaswani et al. 2017; Wang et al. 2021, Table 1).
std::vector<double> sinusoid_frequencies(int64_t dim);
// P[x, 2i] = sin(w_i x), P[x, 2i+1] = cos(w_i x) for x = first .. first+rows-1.
Matrix sinusoid_table(int64_t rows, const std::vector<double>& frequencies, int64_t first = 0);

// ---- similarity -----------------------------------------------------------------------------

Matrix dot_products(const Matrix& p);          // P P^T
Matrix cosine_similarities(const Matrix& p);   // rows normalised first; a zero row has cosine 0 with everything

// What Wang et al. 2021, App. D read off the cosine matrix of relative
// vectors with its 0.95 threshold ("not significantly different").
struct ThresholdSummary {
  double threshold = 0.95;
  double share_above = 0;  // of the pairs (a, b), a != b, with cosine > threshold
  // Rows are offsets `first`, first+1, ...: the smallest d >= 1 such that all
  // vectors of offsets >= d (resp. <= -d) are pairwise above the threshold —
  // "no significant difference beyond offset d"; -1 when even the two
  // outermost vectors of that side are apart (or the side has fewer than 2).
  int64_t indistinct_beyond_ahead = -1;   // offsets r = j - i > 0
  int64_t indistinct_beyond_behind = -1;  // offsets r < 0
};
ThresholdSummary threshold_summary(const Matrix& cosine, int64_t first, double threshold = 0.95);

// ---- deterministic folds --------------------------------------------------------------------

// The rows 0 .. n-1 in the order the folds deal them out: shuffled by
// `seed` on the probe_folds stream (base/counter_rng.h: the same on every
// platform).
std::vector<int64_t> fold_order(int64_t n, uint64_t seed);

// ---- absolute position regression (Wang & Chen 2020, §4.1.1) ----------------------------------

// Rows of `table` are positions 0..n-1; the target of row x is x. Folds:
// fold f = every folds-th row of fold_order(n, seed) starting at f
// (KFold(shuffle=True)). Per fold, the features and targets are centred
// on the training rows and the minimum-norm least-squares w is fitted (a
// table with at least as many columns as training rows makes the system
// underdetermined; scikit-learn's LinearRegression takes the same solution).
// mae: mean |prediction - x| over all rows, each predicted once;
// baseline_mae: the same for predicting the training rows' mean position —
// chance level.
struct RegressionResult {
  double mae = 0, baseline_mae = 0;
  std::vector<double> predictions;  // per row
};
RegressionResult position_regression(const Matrix& table, int folds = 5, uint64_t seed = 1);

// ---- relative order classification (Wang & Chen 2020, §4.1.2) ---------------------------------

// Pairs (i, j), i != j, labelled 1 when i > j, represented by the two
// vectors side by side [P_i ; P_j] (the paper's feature is lost from the
// extracted text; the concatenation lets the classifier learn w.(P_i - P_j)
// and more). Logistic regression (L2 weight 1e-4, features standardised on
// the training pairs, Nesterov gradient descent with step 1/Lipschitz, 300
// iterations). Cross-validation over positions: the positions are split in
// `folds` folds as above; a fold's test pairs are all pairs of its
// positions, its training pairs pairs of the other positions (at most
// max_train_pairs, drawn with `seed`) — so no test position was seen in
// training, and a table that does not order its positions scores about 0.5.
// The classifier: L2-penalised logistic regression (the bias is not
// penalised) on features standardised with the training rows' mean and
// population standard deviation (a constant feature keeps scale 1),
// minimising  mean_i log(1 + exp(-(2y_i - 1) s_i)) + l2/2 |w|^2,
// s_i = b + w . z_i, by Nesterov's accelerated gradient with step
// 1/Lipschitz. w and b are in the standardised coordinates.
struct LogisticModel {
  std::vector<double> mean, scale, w;
  double b = 0;
  double score(const std::vector<double>& x) const;  // s for a raw feature vector
};
LogisticModel fit_logistic(const std::vector<std::vector<double>>& xs, const std::vector<double>& ys,
                           double l2 = 1e-4, int iterations = 300);

struct OrderResult {
  double error_rate = 0;
  int64_t test_pairs = 0;
};
OrderResult relative_order_classification(const Matrix& table, int folds = 5, uint64_t seed = 1,
                                          int64_t max_train_pairs = 4000);

// ---- informativeness (Wang & Chen 2020, §4.2.2) ---------------------------------------------

// share[k-1] = (s_1 + ... + s_k) / sum of all s, s the singular values of
// the table (uncentred), descending.
std::vector<double> cumulative_share(const std::vector<double>& singular_values);
// The smallest k with share >= fraction.
int64_t components_for(const std::vector<double>& share, double fraction);

// ---- attention by offset (Huang et al. 2020, Fig. 5) ---------------------------------------------

// For a square matrix A (attention, queries by keys): m[r + L - 1] = the mean
// over the queries i that have a key at j = i + r of A(i, i + r), for
// r = -(L - 1) .. L - 1; how much attention goes r positions away.
std::vector<double> mean_by_offset(const Matrix& a);

}  // namespace ordo::probe
