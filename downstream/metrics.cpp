#include "downstream/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"

namespace ordo::downstream {
namespace {

template <class T>
void check_pair(const std::vector<T>& a, const std::vector<T>& b, const char* metric, size_t at_least = 1) {
  ORDO_CHECK(a.size() == b.size(), metric, ": ", a.size(), " gold values against ", b.size(), " predictions");
  ORDO_CHECK(a.size() >= at_least, metric, " needs at least ", at_least, " value", at_least == 1 ? "" : "s",
             ", got ", a.size());
}

}  // namespace

double accuracy(const std::vector<int>& gold, const std::vector<int>& predicted) {
  check_pair(gold, predicted, "accuracy");
  size_t same = 0;
  for (size_t i = 0; i < gold.size(); ++i) same += gold[i] == predicted[i];
  return static_cast<double>(same) / static_cast<double>(gold.size());
}

double answer_change_rate(const std::vector<int>& original, const std::vector<int>& altered) {
  ORDO_CHECK(original.size() == altered.size(), "answer change rate: ", original.size(), " answers to the originals ",
             "against ", altered.size(), " to the altered examples: they must be paired one to one");
  ORDO_CHECK(!original.empty(), "answer change rate needs at least one pair");
  size_t changed = 0;
  for (size_t i = 0; i < original.size(); ++i) changed += original[i] != altered[i];
  return static_cast<double>(changed) / static_cast<double>(original.size());
}

double binary_f1(const std::vector<int>& gold, const std::vector<int>& predicted, int positive) {
  check_pair(gold, predicted, "f1");
  double tp = 0, fp = 0, fn = 0;
  for (size_t i = 0; i < gold.size(); ++i) {
    const bool g = gold[i] == positive, p = predicted[i] == positive;
    tp += g && p;
    fp += !g && p;
    fn += g && !p;
  }
  const double denominator = 2 * tp + fp + fn;
  return denominator == 0 ? 0.0 : 2 * tp / denominator;
}

double matthews(const std::vector<int>& gold, const std::vector<int>& predicted) {
  check_pair(gold, predicted, "matthews correlation");
  int classes = 0;
  for (size_t i = 0; i < gold.size(); ++i) {
    ORDO_CHECK(gold[i] >= 0 && predicted[i] >= 0, "matthews correlation: class ids must be >= 0");
    classes = std::max({classes, gold[i] + 1, predicted[i] + 1});
  }
  // Classes absent from both sides add nothing to any sum below, as in
  // sklearn, whose confusion matrix holds only the classes that occur.
  std::vector<double> t(static_cast<size_t>(classes)), p(static_cast<size_t>(classes));
  double correct = 0;
  for (size_t i = 0; i < gold.size(); ++i) {
    t[static_cast<size_t>(gold[i])] += 1;
    p[static_cast<size_t>(predicted[i])] += 1;
    correct += gold[i] == predicted[i];
  }
  const double s = static_cast<double>(gold.size());
  const double tp = std::inner_product(t.begin(), t.end(), p.begin(), 0.0);
  const double pp = std::inner_product(p.begin(), p.end(), p.begin(), 0.0);
  const double tt = std::inner_product(t.begin(), t.end(), t.begin(), 0.0);
  const double cov_ytyp = correct * s - tp, cov_ypyp = s * s - pp, cov_ytyt = s * s - tt;
  const double denominator = cov_ypyp * cov_ytyt;
  return denominator == 0 ? 0.0 : cov_ytyp / std::sqrt(denominator);
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  check_pair(x, y, "pearson", 2);
  const auto constant = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [&](double e) { return e == v[0]; });
  };
  if (constant(x) || constant(y)) return std::nan("");
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n, my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  const double nx = std::sqrt(sxx), ny = std::sqrt(syy);
  double r = 0;
  for (size_t i = 0; i < x.size(); ++i) r += ((x[i] - mx) / nx) * ((y[i] - my) / ny);
  r = std::clamp(r, -1.0, 1.0);
  return x.size() == 2 ? std::round(r) : r;
}

std::vector<double> average_ranks(const std::vector<double>& x) {
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> ranks(x.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && x[order[j]] == x[order[i]]) ++j;
    // Positions i..j-1 hold one value: ranks i+1 .. j, averaged.
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) ranks[order[k]] = rank;
    i = j;
  }
  return ranks;
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  check_pair(x, y, "spearman", 2);
  return pearson(average_ranks(x), average_ranks(y));
}

json::Value glue_metrics(const GlueSet& gold, const GluePredictions& predicted) {
  const GlueTask& task = *gold.task;
  ORDO_CHECK(gold.labelled, gold.path, " has no labels (a GLUE test file): ", task.display,
             " metrics need a train or dev file");
  ORDO_CHECK(!task.metrics.empty(), task.display, " has no metric ordo computes (the GLUE server scores it)");
  std::vector<int> gold_labels;
  std::vector<double> gold_scores;
  for (const GlueExample& e : gold.examples) {
    gold_labels.push_back(e.label);
    gold_scores.push_back(e.score);
  }
  json::Value out = json::Value::object();
  for (GlueMetric m : task.metrics) {
    double value = 0;
    switch (m) {
      case GlueMetric::accuracy: value = accuracy(gold_labels, predicted.labels); break;
      case GlueMetric::f1: value = binary_f1(gold_labels, predicted.labels, 1); break;
      case GlueMetric::mcc: value = matthews(gold_labels, predicted.labels); break;
      case GlueMetric::pearson: value = pearson(predicted.scores, gold_scores); break;
      case GlueMetric::spearman: value = spearman(predicted.scores, gold_scores); break;
    }
    out[metric_key(m)] = std::isnan(value) ? json::Value() : json::Value(value);
  }
  return out;
}

}  // namespace ordo::downstream
