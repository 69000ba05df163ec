// One column of an experiment's report over its runs (experiment/columns.h).
#include "experiment/columns.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "base/json_numbers.h"
#include "experiment/paper_table.h"
#include "experiment/verdicts.h"
#include "probe/indicators.h"
#include "probe/probe_matrix.h"

namespace ordo::experiment {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A task column scored by accuracy ("TASK.score" or "TASK.accuracy"): the
// accuracy of the run's task data's most frequent label; NaN otherwise.
double chance_of(const RunResults& run, const std::string& key) {
  const size_t dot = key.find('.');
  if (dot == std::string::npos || is_indicator_key(key)) return kNaN;
  const std::string metric = key.substr(dot + 1);
  const auto t = run.tasks.find(key.substr(0, dot));
  return t == run.tasks.end() || (metric != "score" && metric != "accuracy") ? kNaN : t->second.chance;
}

}  // namespace

std::string format_figure(double v, const char* pattern) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, pattern, v);
  return buf;
}

std::string figure_number(const std::string& key, double v) {
  return format_figure(v, is_indicator_key(key) ? "%.4f" : "%.2f");
}

bool uniform_attention(const RunResults& run) {
  return run.probed && probe::uniform_rows(probe::without_special(run.record.attention));
}

std::string compared_task_set(const std::map<std::string, Figure>& figures, const std::string& baseline) {
  const auto base = figures.find(baseline);
  if (base != figures.end()) return base->second.tasks;
  std::map<std::string, int> sets;  // how many rows average each task set
  for (const auto& [config, f] : figures) ++sets[f.tasks];
  std::string commonest;
  int most = 0;
  for (const auto& [set, n] : sets)
    if (n > most) most = n, commonest = set;
  return commonest;
}

ColumnFigures column_figures(const std::string& key, const std::vector<RunResults>& runs, const Plan& plan) {
  ColumnFigures c;
  c.key = key;
  for (const RunResults& run : runs) {
    const std::optional<Figure> f = figure(run, key, plan);
    if (!f) continue;
    c.figures[run.config] = *f;
    if (is_indicator_key(key) && tie_artifact_on_uniform(key) && uniform_attention(run)) c.uniform.insert(run.config);
    const double chance = chance_of(run, key);
    if (!std::isnan(chance)) {
      c.chance = chance;
      if (at_chance(f->values, chance, plan.alpha)) c.at_chance.insert(run.config);
    }
    std::vector<double> means = {f->mean()};
    for (const RunResults& replicate : run.replicates) {
      const std::optional<Figure> r = figure(replicate, key, plan);
      if (r && r->tasks == f->tasks && std::isfinite(r->mean())) means.push_back(r->mean());
    }
    if (means.size() >= 2) c.pretraining[run.config] = means;
  }
  const Figure* base = c.find(plan.baseline);
  c.tasks = compared_task_set(c.figures, plan.baseline);
  for (const auto& [config, f] : c.figures)
    if (f.tasks != c.tasks) c.other_tasks.insert(config);
  if (plan.baseline.empty() || !base || !c.compared(plan.baseline)) return c;
  // The replicate that varies between the two rows (SPEC §4): their
  // pretraining runs where both have several, else (the paper's †) one run's
  // fine-tuning seeds; a probe indicator has one value per run, so only the
  // first.
  std::vector<std::string> tested;
  std::vector<double> p;
  std::vector<bool> over_pretraining;
  std::vector<Interval> intervals;
  std::vector<std::pair<double, double>> means;  // the row's and the baseline's, over the replicates tested
  const std::vector<double>* base_runs = c.pretraining_means(plan.baseline);
  for (const RunResults& run : runs) {
    if (run.config == plan.baseline || !c.compared(run.config)) continue;
    const std::vector<double>* runs_of_row = c.pretraining_means(run.config);
    const bool pretraining = base_runs && runs_of_row;
    if (!pretraining && (is_indicator_key(key) || c.find(run.config)->values.size() < 2 || base->values.size() < 2))
      continue;
    const std::vector<double>& row = pretraining ? *runs_of_row : c.find(run.config)->values;
    const std::vector<double>& against = pretraining ? *base_runs : base->values;
    const double welch = welch_t_test(row, against).p;
    if (std::isnan(welch)) continue;
    tested.push_back(run.config);
    p.push_back(welch);
    over_pretraining.push_back(pretraining);
    intervals.push_back(welch_interval(row, against, 1 - plan.alpha));
    means.emplace_back(mean_std(row).mean, mean_std(against).mean);
  }
  const std::vector<double> holm = holm_adjust(p);
  for (size_t i = 0; i < tested.size(); ++i)
    c.tests[tested[i]] = {true,         holm[i] < plan.alpha, p[i],           holm[i], over_pretraining[i],
                          intervals[i], means[i].first,       means[i].second};
  c.family = static_cast<int64_t>(tested.size());
  return c;
}

std::string ordo_text(const ColumnFigures& column, const std::string& config) {
  const Figure* f = column.find(config);
  if (!f) return "n/a";
  std::string s = figure_number(column.key, f->mean());
  if (f->values.size() > 1) s += " ± " + figure_number(column.key, f->std());
  if (const std::vector<double>* m = column.pretraining_means(config)) {
    const MeanStd pt = mean_std(*m);
    s += " [" + std::to_string(m->size()) + " pretrainings: " + figure_number(column.key, pt.mean) + " ± " +
         figure_number(column.key, pt.std) + "]";
  }
  if (column.other_tasks.count(config)) s += " (over " + f->tasks + ": not comparable)";
  if (column.uniform.count(config)) s += " (uniform)";
  if (column.at_chance.count(config)) s += " (at chance)";
  const Significance t = column.test(config);
  return s + (t.marked ? t.over_pretraining ? " ‡" : " †" : "");
}

json::Value figure_json(const ColumnFigures& column, const std::string& config) {
  const Figure* f = column.find(config);
  if (!f) return json::Value();
  json::Value v = json::Value::object(), values = json::Value::array();
  for (double x : f->values) values.push_back(json::number(x));
  v["mean"] = json::number(f->mean());
  v["std"] = f->values.size() > 1 ? json::number(f->std()) : json::Value();
  v["values"] = values;
  if (!f->tasks.empty()) v["tasks"] = f->tasks;
  if (const std::vector<double>* m = column.pretraining_means(config)) {
    json::Value pt = json::Value::object(), means = json::Value::array();
    for (double x : *m) means.push_back(json::number(x));
    pt["means"] = means;  // each pretraining run's mean, the row's own run first
    pt["mean"] = json::number(mean_std(*m).mean);
    pt["std"] = json::number(mean_std(*m).std);
    v["pretraining"] = pt;
  }
  if (column.uniform.count(config)) v["left_out"] = "uniform attention: a tie artifact";
  if (column.other_tasks.count(config)) v["left_out"] = "a mean over other tasks";
  if (column.at_chance.count(config)) v["at_chance"] = column.chance;
  const Significance s = column.test(config);
  if (s.tested) {
    v["welch_p"] = s.p;
    v["holm_p"] = s.p_holm;
    v["significant"] = s.marked;
    v["tested_over"] = s.over_pretraining ? "pretraining runs" : "fine-tuning seeds";
    json::Value interval = json::Value::array();  // of the difference from the baseline, at 1 - alpha
    interval.push_back(json::number(s.difference.low));
    interval.push_back(json::number(s.difference.high));
    v["difference_interval"] = interval;
  }
  return v;
}

std::string config_label(const RunResults& run, const Plan& plan) {
  if (plan.replicate_seeds.empty()) return run.config;
  const size_t n = 1 + run.replicates.size();
  return run.config + (n == 1 ? " (one pretraining run)" : " (" + std::to_string(n) + " pretraining runs)");
}


}  // namespace ordo::experiment
