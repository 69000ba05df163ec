// The GLUE metrics, computed as the reference implementations compute them
// (HuggingFace's glue_compute_metrics calls these from scikit-learn and SciPy;
// the values are fractions, as those functions return them):
//   accuracy   the fraction of predictions equal to the gold label;
//   binary_f1  sklearn f1_score(average='binary', pos_label=1): 2 tp / (2 tp + fp + fn),
//              0 when there is no positive at all (sklearn's zero_division);
//   matthews   sklearn matthews_corrcoef, its multi-class form (Gorodkin's R_K):
//              with C the confusion matrix, t = row sums, p = column sums,
//              s = samples, c = trace: (c s - t.p) / sqrt((s^2 - p.p)(s^2 - t.t)),
//              0 when the denominator is 0 (a constant prediction or gold);
//   pearson    scipy.stats.pearsonr: the mean-centred vectors, each divided by its
//              norm, dotted, clipped to [-1, 1]; NaN when either input is constant
//              (SciPy's ConstantInputWarning), exactly +-1 for two points;
//   spearman   scipy.stats.spearmanr: Pearson's r of the ranks, ties given the
//              average of the ranks they span (rankdata(method='average')).
#pragma once

#include <vector>

#include "base/json.h"
#include "downstream/glue.h"

namespace ordo::downstream {

double accuracy(const std::vector<int>& gold, const std::vector<int>& predicted);
double binary_f1(const std::vector<int>& gold, const std::vector<int>& predicted, int positive = 1);
double matthews(const std::vector<int>& gold, const std::vector<int>& predicted);
double pearson(const std::vector<double>& x, const std::vector<double>& y);
double spearman(const std::vector<double>& x, const std::vector<double>& y);
// The fraction of paired examples whose predicted class differs between two
// sets of predictions: `altered[i]` is the answer to example i of `original`
// changed in one way (a word-swap probe: its agent and patient exchanged).
// 0: the model never changes its answer under the change; 1: it always does.
// Unlike an accuracy difference it does not depend on the labels, so a model
// that ignores the change reads 0 whatever its accuracy.
double answer_change_rate(const std::vector<int>& original, const std::vector<int>& altered);
// The synthetic tasks' role swaps (synth/tasks.h), dev set names: row i of
// `swapped` is row i of `original` with agent and patient exchanged (roles'
// Shuffle-SR; subject_number's subject and object). Fine-tuning counts the
// answers each changes ("answers_changed" of the swapped set).
struct RoleSwap {
  const char* original;
  const char* swapped;
};
inline constexpr RoleSwap kRoleSwaps[] = {{"dev_sr_original", "dev_shuffle_sr"},
                                          {"dev_roles_original", "dev_roles_swapped"}};
// 1-based ranks, ties averaged (scipy.stats.rankdata's default).
std::vector<double> average_ranks(const std::vector<double>& x);

// The task's metrics of predictions against a labelled set, one key per metric
// in the task's order (metric_key): {"accuracy": .., "f1": ..} and so on. A
// Pearson or Spearman that is undefined (constant input) is null.
json::Value glue_metrics(const GlueSet& gold, const GluePredictions& predicted);

}  // namespace ordo::downstream
