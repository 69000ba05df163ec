// One column of an experiment's report over its runs — a probe indicator or
// a task's figure — as the paper tables read it (experiment/tables.h): each
// row's figure and its pretraining replicates, the rows left out of the
// column's comparisons (uniform attention where the indicator is a tie
// artifact there, a mean over another task set, accuracy at chance), and
// each row's test against the plan's baseline, Holm-corrected over the
// column's family (SPEC §4; the rules in experiment/verdicts.h).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/json.h"
#include "experiment/plan.h"
#include "experiment/results.h"
#include "experiment/statistics.h"

namespace ordo::experiment {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

// A row's test against the baseline in one column: Welch's two-sided t-test
// (experiment/statistics.h), Holm-corrected over the column's family.
struct Significance {
  bool tested = false, marked = false;
  double p = kNoValue, p_holm = kNoValue;
  bool over_pretraining = false;  // over the pretraining runs' means (else over one run's fine-tuning seeds)
  Interval difference;            // the row's mean minus the baseline's over the same replicates, 1 - alpha
  double mean = kNoValue, baseline_mean = kNoValue;  // the two means the test compared
};

// One column over the runs: each run's figure, the runs left out of its
// comparisons, and each run's test against the baseline. The family of a
// column is every row tested against the baseline there; Holm's correction
// runs over it (SPEC §4).
struct ColumnFigures {
  std::string key;
  std::string tasks;                          // the task set the compared rows' means average ("" otherwise)
  std::map<std::string, Figure> figures;      // by config: the runs with the figure
  std::set<std::string> uniform;              // left out: uniform attention, this indicator a tie artifact
  std::set<std::string> other_tasks;          // left out: a mean over another task set than `tasks`
  double chance = kNoValue;                   // an accuracy column: the majority label's accuracy (results.h)
  std::set<std::string> at_chance;            // rows at chance there (verdicts.h): no verdict rests on them
  std::map<std::string, Significance> tests;  // by config
  int64_t family = 0;                         // how many rows were tested against the baseline
  // By config, for a row pretrained more than once: each pretraining run's
  // mean of the figure (the row's own run first, then its replicates').
  std::map<std::string, std::vector<double>> pretraining;
  const Figure* find(const std::string& config) const {
    const auto it = figures.find(config);
    return it == figures.end() ? nullptr : &it->second;
  }
  const std::vector<double>* pretraining_means(const std::string& config) const {
    const auto it = pretraining.find(config);
    return it == pretraining.end() ? nullptr : &it->second;
  }
  // The row's value in orderings and rank statistics: the mean over its
  // pretraining runs where it has several, else its one run's mean.
  double estimate(const std::string& config) const {
    if (const std::vector<double>* m = pretraining_means(config)) return mean_std(*m).mean;
    const Figure* f = find(config);
    return f ? f->mean() : kNoValue;
  }
  // In the column's tests, orderings and rank statistics.
  bool compared(const std::string& config) const {
    return find(config) && !uniform.count(config) && !other_tasks.count(config);
  }
  Significance test(const std::string& config) const {
    const auto it = tests.find(config);
    return it == tests.end() ? Significance() : it->second;
  }
};

// The task set a column's means compare over (SPEC §4: means only over equal task sets): the
// baseline's where it has the figure, else the commonest among `figures` (by config); "" for a
// figure that is no mean.
std::string compared_task_set(const std::map<std::string, Figure>& figures, const std::string& baseline);

// The column `key` over the runs (rows, their replicates inside them).
ColumnFigures column_figures(const std::string& key, const std::vector<RunResults>& runs, const Plan& plan);

// A row's cell: mean ± std over its seeds, its pretraining runs' mean ± std
// in brackets, why it is left out, and its mark (†: over fine-tuning seeds,
// ‡: over pretraining runs).
std::string ordo_text(const ColumnFigures& column, const std::string& config);
// The same as JSON (paper.json): values, spread, replicates, test, interval.
json::Value figure_json(const ColumnFigures& column, const std::string& config);
// A row's name in a table; where the plan replicates pretraining, with how
// many pretraining runs it has (SPEC §4: a row with one is marked so).
std::string config_label(const RunResults& run, const Plan& plan);
// Whether a run's probed attention without [CLS]/[SEP] is uniform (probe/indicators.h).
bool uniform_attention(const RunResults& run);

// A number by a printf pattern, "nan" / "inf" / "-inf" where it is not finite.
std::string format_figure(double v, const char* pattern);
// A column's number as the tables print it: indicators to four decimals (as
// Wang et al.'s Table 2), task figures to two (their Tables 3-4).
std::string figure_number(const std::string& key, double v);

}  // namespace ordo::experiment
