// The report stage's comparisons with the papers (experiment/tables.h).
#include "experiment/tables.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "base/error.h"
#include "base/json_numbers.h"
#include "experiment/columns.h"
#include "experiment/figure5.h"
#include "experiment/statistics.h"
#include "experiment/verdicts.h"
#include "probe/indicators.h"
#include "probe/probe_matrix.h"

namespace ordo::experiment {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The indicators of Wang et al.'s Tables 2 and 5, in their order.
const std::vector<std::string> kTable5Indicators = {"monotonicity",
                                                    "monotonicity_first_k",
                                                    "translation_invariance",
                                                    "translation_invariance_no_special",
                                                    "symmetry_sd",
                                                    "direction_balance"};

std::string paper_text(const std::string& key, const PaperCell* c) {
  if (!c || !c->present) return "-";
  std::string s = figure_number(key, c->value);
  if (c->spread >= 0) s += " ± " + figure_number(key, c->spread);
  return s + (c->marked ? " †" : "");
}

// Where a column's figures come from: a task's data, or the probe.
std::string column_source(const std::string& key, const Plan& plan) {
  if (is_indicator_key(key)) return "identical word probing";
  if (key == "eval_accuracy") return "held-out MLM accuracy";
  if (key == "glue.mean") return "the mean of the classification tasks (WNLI left out)";
  if (key == "senteval.mean") return "the mean of the classifiers started from the run's own position table";
  const FinetuneTask* t = plan.task(key.substr(0, key.find('.')));
  return t ? t->source() : "no fine-tuning task of this name in the plan";
}

// Groups ordered best first by their mean: "name (mean)", "=" between two
// equally good (two paper cells of 93.00).
struct Ranked {
  std::vector<std::string> names;
  std::vector<double> means;
  bool tied(const std::string& key, size_t i) const { return badness(key, means[i - 1]) == badness(key, means[i]); }
  // No single best: the first two are equally good.
  bool top_tied(const std::string& key) const { return names.size() >= 2 && tied(key, 1); }
  std::string text(const std::string& key) const {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i)
      out += (i == 0 ? "" : tied(key, i) ? " = " : " > ") + names[i] + " (" + figure_number(key, means[i]) + ")";
    return out;
  }
};
Ranked rank(const std::map<std::string, std::vector<double>>& groups, const std::vector<std::string>& order,
            const std::string& key) {
  std::vector<std::pair<double, std::string>> scored;
  for (const std::string& g : order) scored.emplace_back(mean_std(groups.at(g)).mean, g);
  std::stable_sort(scored.begin(), scored.end(),
                   [&](const auto& a, const auto& b) { return badness(key, a.first) < badness(key, b.first); });
  Ranked r;
  for (const auto& [mean, name] : scored) r.names.push_back(name), r.means.push_back(mean);
  return r;
}

// A p-value to three significant figures: "p = 0.0521", "p < 1e-6", "p = 0" (a perfect correlation).
std::string p_text(double p) {
  if (std::isnan(p)) return "p undefined";
  return p > 0 && p < 1e-6 ? "p < 1e-6" : "p = " + format_figure(p, "%.3g");
}

// Both are undefined (NaN, as scipy.stats gives them) where one side's values
// all tie, as two paper cells of 93.00 do: said in words, not printed "nan".
std::string rank_text(const CorrelationTest& tau, const CorrelationTest& rho) {
  const bool undefined = std::isnan(tau.value) || std::isnan(rho.value);
  if (undefined)
    return "Kendall's τ_b undefined, Spearman's ρ undefined (n = " + std::to_string(tau.n) +
           ": one side's values all tie)";
  const std::string how = std::string(tau.method) == rho.method ? std::string(tau.method)
                                                                  : std::string(tau.method) + " and " + rho.method;
  return "Kendall's τ_b " + format_figure(tau.value, "%.2f") + " (" + p_text(tau.p) + "), Spearman's ρ " +
         format_figure(rho.value, "%.2f") + " (" + p_text(rho.p) + ") (n = " + std::to_string(tau.n) + "; p by " + how + ")";
}

// The verdict on a column's rank agreement (experiment/verdicts.h).
std::string rank_verdict_text(const CorrelationTest& tau, double alpha) {
  const Judgement j = judge_rank_agreement(tau, alpha);
  return std::string("Verdict on the order: ") + verdict_name(j.verdict) + (j.reason.empty() ? "" : " (" + j.reason + ")") +
         (agrees(tau, alpha) ? ": ordo's rows agree with the paper's."
                             : ": no agreement shown (that needs τ_b > 0 with p < " + format_figure(alpha, "%g") + ").");
}

std::string direction_note(const std::string& key) {
  if (key == "direction_balance") return " (by |DB - 1|)";
  return badness(key, 1) < badness(key, 0) ? " (larger is better)" : " (smaller is better)";
}

// ---- a table of configurations -----------------------------------------------------------------

// The verdict line of a task column: each row's difference from the baseline
// against the paper's, both signed so that positive is "the row is better".
std::optional<ColumnReading> baseline_verdicts(const PaperTable& table, const ColumnFigures& column,
                                               const std::vector<RunResults>& runs, const Plan& plan,
                                               const std::string& name) {
  const PaperTable::Row* paper_base = table.find(plan.baseline);
  if (!paper_base || !paper_base->cells.at(column.key).present || !column.compared(plan.baseline))
    return std::nullopt;
  std::vector<std::pair<std::string, Verdict>> rows;
  std::vector<std::string> reasons;
  int64_t over_pretraining = 0, over_seeds = 0;
  for (const RunResults& run : runs) {
    const PaperTable::Row* p = table.find(run.config);
    if (run.config == plan.baseline || !p || !p->cells.at(column.key).present || !column.compared(run.config)) continue;
    const std::string& key = column.key;
    const Significance test = column.test(run.config);
    // The direction read is the difference the test is over (for a row pretrained once against a
    // baseline pretrained several times, the two first runs', not the baseline's pretraining mean,
    // which can lie on the other side); untested, the rows' estimates.
    const double ours = test.tested ? test.mean : column.estimate(run.config);
    const double baseline = test.tested ? test.baseline_mean : column.estimate(plan.baseline);
    Evidence e;
    e.ordo_effect = badness(key, baseline) - badness(key, ours);
    e.paper_effect = badness(key, paper_base->value(key)) - badness(key, p->value(key));
    e.p = test.p_holm;
    if (std::isnan(e.p))
      e.not_testable = is_indicator_key(key) ? "one pretraining run: an indicator has one value per run"
                                             : "no test: fewer than two seeds in a row, or no spread in either";
    if (column.at_chance.count(run.config) || column.at_chance.count(plan.baseline))
      e.not_testable = "accuracy at chance (the majority label's " + format_figure(column.chance, "%.1f") + "%)";
    const Judgement j = judge(e, plan.alpha);
    rows.emplace_back(run.config, j.verdict);
    reasons.push_back(j.reason);
    if (test.tested) (test.over_pretraining ? over_pretraining : over_seeds) += 1;
  }
  if (rows.empty()) return std::nullopt;
  ColumnReading r;
  r.table = table.name, r.column = column.key, r.grouping = "verdicts";
  r.n = static_cast<int64_t>(rows.size());
  for (const auto& [config, v] : rows) r.verdicts.push_back(v), r.names.push_back(config);
  r.reasons = reasons;
  std::string over;
  if (over_pretraining > 0) over = "over the pretraining runs' means for the " + std::to_string(over_pretraining) +
                                   " row(s) pretrained several times (‡)";
  if (over_seeds > 0) over += std::string(over.empty() ? "" : ", ") + "over fine-tuning seeds of one pretraining "
                              "run for the " + std::to_string(over_seeds) + " other row(s) (†)";
  if (over.empty()) over = "on no row: none is testable";
  r.text = name + ", each row against " + plan.baseline + " (the paper's direction of the difference; Welch's "
           "two-sided t-test " + over + "; Holm over this column's " + std::to_string(column.family) +
           " comparisons with " + plan.baseline + ", p < " + format_figure(plan.alpha, "%g") + "): " + verdicts_by_name(rows) +
           ".";
  return r;
}

Comparison compare_rows(const PaperTable& table, const std::vector<RunResults>& all_runs, const Plan& plan) {
  // The paper's rows and the baseline its marks are against: another table's runs would widen each
  // column's Holm family past the paper's comparisons (SPEC §4) and fill the table with rows of "-".
  std::vector<RunResults> runs;
  for (const RunResults& run : all_runs)
    if (table.find(run.config) || run.config == plan.baseline) runs.push_back(run);
  Comparison c;
  c.table = &table;
  c.cells.header = {"config", "paper's row"};
  std::map<std::string, ColumnFigures> columns;
  for (const std::string& key : table.columns) {
    c.cells.header.push_back(heading_of(key) + ": ordo / paper");
    columns[key] = column_figures(key, runs, plan);
  }
  json::Value rows = json::Value::array();
  for (const RunResults& run : runs) {
    const PaperTable::Row* p = table.find(run.config);
    // The baseline where the paper's table lacks it (Chen et al.'s sharing ablation is among
    // REL-SCALAR's kinds): its row for the marks, unless it has none of the table's figures.
    const bool has_figure = std::any_of(table.columns.begin(), table.columns.end(), [&](const std::string& key) {
      return columns.at(key).find(run.config) != nullptr;
    });
    if (!p && !has_figure) continue;
    std::vector<std::string> line = {config_label(run, plan), p ? p->name : "(the baseline; not in the paper's table)"};
    json::Value row = json::Value::object(), ordo = json::Value::object(), paper = json::Value::object();
    row["config"] = run.config;
    row["paper_row"] = p ? json::Value(p->name) : json::Value();
    for (const std::string& key : table.columns) {
      const PaperCell* cell = p ? &p->cells.at(key) : nullptr;
      line.push_back(ordo_text(columns.at(key), run.config) + " / " + paper_text(key, cell));
      ordo[key] = figure_json(columns.at(key), run.config);
      if (cell && cell->present) {
        json::Value v = json::Value::object();
        v["value"] = cell->value;
        v["spread"] = cell->spread >= 0 ? json::Value(cell->spread) : json::Value();
        v["marked"] = cell->marked;
        paper[key] = v;
      }
    }
    c.cells.rows.push_back(line);
    row["ordo"] = ordo;
    row["paper"] = paper;
    rows.push_back(row);
  }

  for (const std::string& key : table.columns) {
    const ColumnFigures& column = columns.at(key);
    const std::string name = heading_of(key) + direction_note(key);
    // The rows both sides have, and those left out of the comparisons.
    std::vector<std::pair<const PaperTable::Row*, double>> both;
    std::string uniform, other_tasks;
    for (const RunResults& run : runs) {
      const PaperTable::Row* p = table.find(run.config);
      const Figure* f = column.find(run.config);
      if (!p || !f || !p->cells.at(key).present || !std::isfinite(f->mean())) continue;
      const std::string paper_and_ordo = run.config + " (ordo " + figure_number(key, f->mean()) + ", paper " +
                                         figure_number(key, p->value(key)) + ")";
      if (column.uniform.count(run.config)) uniform += (uniform.empty() ? "" : ", ") + paper_and_ordo;
      else if (column.other_tasks.count(run.config)) other_tasks += (other_tasks.empty() ? "" : ", ") + run.config + " (" + f->tasks + ")";
      else both.emplace_back(p, column.estimate(run.config));
    }
    auto aside = [&](const std::string& grouping, const std::string& text) {
      ColumnReading r;
      r.table = table.name, r.column = key, r.grouping = grouping, r.text = text;
      c.readings.push_back(r);
    };
    if (!uniform.empty())
      aside("uniform", name + ": uniform attention (no positional structure) in " + uniform + ": every pair ties, so "
            "the value is a tie artifact, left out of this column's orderings and rank statistics.");
    if (!other_tasks.empty())
      aside("not comparable", name + ": " + other_tasks + " average other tasks than the rows compared (" +
            column.tasks + "): not comparable, left out of this column's tests, orderings and rank statistics.");
    // Orders and ranks drawn mostly from rows that learned nothing of the task test nothing about it:
    // "" where fewer than half of `rows` are at chance, else the caveat in words.
    const auto mostly_at_chance = [&](const std::vector<const PaperTable::Row*>& rows) {
      const int64_t at = std::count_if(rows.begin(), rows.end(),
                                       [&](const PaperTable::Row* p) { return column.at_chance.count(p->key) > 0; });
      const int64_t n = static_cast<int64_t>(rows.size());
      return n == 0 || 2 * at < n ? std::string()
                                  : std::to_string(at) + " of the " + std::to_string(n) + " rows are at chance: the " +
                                        "majority label's " + format_figure(column.chance, "%.1f") + "%";
    };
    auto compare_groups = [&](const std::string& grouping, auto member, auto group_of) {
      std::map<std::string, std::vector<double>> in_paper, in_ordo;
      std::vector<std::string> order;
      std::vector<const PaperTable::Row*> members;
      for (const auto& [p, v] : both) {
        if (!member(*p)) continue;
        members.push_back(p);
        const std::string g = group_of(*p);
        if (!in_paper.count(g)) order.push_back(g);
        in_paper[g].push_back(p->cells.at(key).value);
        in_ordo[g].push_back(v);
      }
      if (order.size() < 2) return;
      const Ranked a = rank(in_paper, order, key), b = rank(in_ordo, order, key);
      ColumnReading r;
      r.table = table.name, r.column = key, r.grouping = grouping;
      r.paper_order = a.names, r.ordo_order = b.names;
      const bool tie = a.top_tied(key) || b.top_tied(key);  // a tie at the top has no best to compare
      const std::string caveat = mostly_at_chance(members);
      r.same_order = !tie && a.names == b.names;
      r.same_best = !tie && a.names[0] == b.names[0];
      r.text = name + ", " + grouping + ", best first: paper " + a.text(key) + "; ordo " + b.text(key) + ". " +
               (tie             ? std::string(a.top_tied(key) ? "The paper's" : "ordo's") +
                                      " first two tie: no best to compare."
                : r.same_order ? "Same order."
                : r.same_best  ? "Same best (" + a.names[0] + "), another order."
                               : "Differs: best in the paper " + a.names[0] + ", in ordo " + b.names[0] + ".") +
               (caveat.empty() ? "" : " The order tests nothing (" + caveat + ").");
      c.readings.push_back(r);
    };
    compare_groups("families", [](const PaperTable::Row&) { return true; },
                   [](const PaperTable::Row& p) { return p.family; });
    std::vector<std::string> families;
    for (const auto& [p, v] : both)
      if (std::find(families.begin(), families.end(), p->family) == families.end()) families.push_back(p->family);
    for (const std::string& family : families)
      compare_groups("kinds of " + family, [&](const PaperTable::Row& p) { return p.family == family; },
                     [](const PaperTable::Row& p) { return p.kind; });
    if (both.size() >= 2) {
      // Both sides ordered best first the same way: by badness (direction balance by |DB - 1|).
      std::vector<double> ours, theirs;
      for (const auto& [p, v] : both) ours.push_back(badness(key, v)), theirs.push_back(badness(key, p->cells.at(key).value));
      ColumnReading r;
      r.table = table.name, r.column = key, r.grouping = "rank";
      const CorrelationTest tau = kendall_test(ours, theirs), rho = spearman_test(ours, theirs);
      r.kendall = tau.value, r.spearman = rho.value, r.kendall_p = tau.p, r.spearman_p = rho.p;
      r.n = tau.n;
      std::vector<const PaperTable::Row*> rows;
      for (const auto& [p, v] : both) rows.push_back(p);
      const std::string at_chance = mostly_at_chance(rows);
      const bool chance = !at_chance.empty();
      const Judgement order = chance ? Judgement{Verdict::not_testable, "most rows at chance"}
                                     : judge_rank_agreement(tau, plan.alpha);
      r.verdicts = {order.verdict};
      r.reasons = {order.reason};
      r.text = name + ", rank agreement of ordo's rows with the paper's: " + rank_text(tau, rho) + ". " +
               (chance ? "Verdict on the order: " + std::string(verdict_name(Verdict::not_testable)) + " (" +
                             at_chance + ")."
                       : rank_verdict_text(tau, plan.alpha)) +
               " Data: " + column_source(key, plan) + ".";
      c.readings.push_back(r);
    }
    if (!plan.baseline.empty() && (!is_indicator_key(key) || column.family > 0))
      if (std::optional<ColumnReading> v = baseline_verdicts(table, column, runs, plan, name)) c.readings.push_back(*v);
  }
  c.json = json::Value::object();
  c.json["rows"] = rows;
  return c;
}

// ---- a table of correlations ----------------------------------------------------------------------

// A run's probed indicator, NaN when it has none.
double indicator_of(const RunResults& run, const std::string& key) {
  if (!run.probed) return kNaN;
  const json::Value* v = run.record.with_special.find(key);
  return v ? json::to_number(*v) : kNaN;
}

std::vector<double> per_run_indicator(const std::vector<RunResults>& runs, const std::string& key) {
  std::vector<double> out;
  for (const RunResults& run : runs) out.push_back(indicator_of(run, key));
  return out;
}

std::string correlation_text(const Correlation& c) {
  return std::isnan(c.r) ? "n/a" : format_figure(c.r, "%.2f") + " (" + p_text(c.p) + ", n " + std::to_string(c.n) + ")";
}

Comparison compare_correlations(const PaperTable& table, const std::vector<RunResults>& runs, const Plan& plan) {
  Comparison c;
  c.table = &table;
  c.cells.header = {"indicator", "paper's row"};
  for (const std::string& key : table.columns) c.cells.header.push_back(key + ": ordo r / paper r");
  // Each column's correlations, row by row, and their Holm-corrected p-values (the family: the column's indicators).
  std::map<std::string, std::vector<Correlation>> by_column;
  std::map<std::string, std::vector<double>> holm;
  for (const std::string& key : table.columns) {
    std::vector<double> p;
    for (const PaperTable::Row& row : table.rows) {
      by_column[key].push_back(correlate(runs, per_run_indicator(runs, row.key), key, plan));
      p.push_back(by_column[key].back().p);
    }
    holm[key] = holm_adjust(p);
  }
  json::Value rows = json::Value::array();
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const PaperTable::Row& p = table.rows[i];
    std::vector<std::string> line = {heading_of(p.key), p.name};
    json::Value row = json::Value::object(), ordo = json::Value::object(), paper = json::Value::object();
    row["indicator"] = p.key;
    row["paper_row"] = p.name;
    for (const std::string& key : table.columns) {
      const Correlation& r = by_column[key][i];
      const PaperCell& cell = p.cells.at(key);
      line.push_back(correlation_text(r) + " / " + (cell.present ? format_figure(cell.value, "%.2f") : "-"));
      json::Value v = json::Value::object();
      v["r"] = json::number(r.r);
      v["p"] = json::number(r.p);
      v["holm_p"] = json::number(holm[key][i]);
      v["n"] = r.n;
      ordo[key] = v;
      if (cell.present) paper[key] = cell.value;
    }
    c.cells.rows.push_back(line);
    row["ordo"] = ordo;
    row["paper"] = paper;
    rows.push_back(row);
  }
  for (const std::string& key : table.columns) {
    std::vector<double> ours, theirs;
    std::vector<std::pair<std::string, Verdict>> verdicts;
    std::vector<std::string> indicators;
    int64_t same_sign = 0;
    for (size_t i = 0; i < table.rows.size(); ++i) {
      const PaperCell& cell = table.rows[i].cells.at(key);
      const Correlation& r = by_column[key][i];
      if (!cell.present || std::isnan(r.r)) continue;
      ours.push_back(r.r), theirs.push_back(cell.value);
      same_sign += (r.r > 0) == (cell.value > 0);
      verdicts.emplace_back(heading_of(table.rows[i].key), judge({r.r, cell.value, holm[key][i], ""}, plan.alpha).verdict);
      indicators.push_back(table.rows[i].key);
    }
    if (ours.empty()) continue;
    ColumnReading r;
    r.table = table.name, r.column = key, r.grouping = "signs";
    const CorrelationTest tau = kendall_test(ours, theirs), rho = spearman_test(ours, theirs);
    r.n = tau.n;
    r.kendall = tau.value, r.spearman = rho.value, r.kendall_p = tau.p, r.spearman_p = rho.p;
    for (const auto& [indicator, v] : verdicts) r.verdicts.push_back(v);
    r.names = indicators;
    r.text = key + ": the sign of ordo's correlation is the paper's for " + std::to_string(same_sign) + " of " +
             std::to_string(r.n) + " indicators. Verdicts, each indicator's r against the paper's sign (Pearson's r "
             "over the runs with a position encoding, t test, Holm over this column's " +
             std::to_string(std::count_if(holm[key].begin(), holm[key].end(), [](double p) { return !std::isnan(p); })) +
             " correlations, p < " + format_figure(plan.alpha, "%g") + "): " +
             verdicts_by_name(verdicts) + ". Down the column, " + rank_text(tau, rho) + ". Data: " +
             column_source(key, plan) + ".";
    c.readings.push_back(r);
  }
  c.json = json::Value::object();
  c.json["rows"] = rows;
  return c;
}

// ---- ordo's own tables ---------------------------------------------------------------------------------

// Every task's score and the pretraining's held-out accuracy, one row per run.
TextTable ordo_scores(const std::vector<RunResults>& runs, const Plan& plan, std::vector<std::string>& keys) {
  keys = {"eval_accuracy"};
  for (const FinetuneTask& t : plan.finetune)
    if (t.runnable() && !t.sweep) keys.push_back(t.name + ".score");  // the sweep: experiment/sweep_report.h
  if (!plan.finetune.empty()) keys.push_back("glue.mean");
  const auto from_run_table = [](const FinetuneTask& t) { return t.init_positions == "run"; };
  if (std::any_of(plan.finetune.begin(), plan.finetune.end(), from_run_table)) keys.push_back("senteval.mean");
  TextTable t;
  t.header = {"config", "pe"};
  std::vector<ColumnFigures> columns;
  for (const std::string& k : keys) {
    t.header.push_back(k);
    columns.push_back(column_figures(k, runs, plan));
  }
  for (const RunResults& run : runs) {
    std::vector<std::string> row = {config_label(run, plan), run.pe};
    for (const ColumnFigures& column : columns) row.push_back(ordo_text(column, run.config));
    t.rows.push_back(row);
  }
  return t;
}

// Every pretraining run of the rows pretrained more than once, one line each:
// the means the ‡ tests and the pretraining spread are taken over, so that a
// reader can recompute them. The columns: the scores, then the indicators
// and the analyses' figures some such run has.
TextTable pretraining_runs(const std::vector<RunResults>& runs, const Plan& plan,
                           const std::vector<std::string>& score_keys) {
  std::vector<std::string> keys = score_keys;
  keys.insert(keys.end(), kTable5Indicators.begin(), kTable5Indicators.end());
  keys.insert(keys.end(), analysis_keys().begin(), analysis_keys().end());
  // One line per pretraining run, each figure read once (an analysis figure is a file).
  TextTable t;
  std::vector<std::vector<std::optional<Figure>>> figures;
  for (const RunResults& row : runs) {
    if (row.replicates.empty()) continue;
    std::vector<const RunResults*> pretrainings = {&row};
    for (const RunResults& again : row.replicates) pretrainings.push_back(&again);
    for (const RunResults* run : pretrainings) {
      t.rows.push_back({run->config, row.config});
      figures.emplace_back();
      for (const std::string& k : keys) figures.back().push_back(figure(*run, k, plan));
    }
  }
  t.header = {"pretraining run", "row"};
  for (size_t k = 0; k < keys.size(); ++k) {
    const bool any = std::any_of(figures.begin(), figures.end(), [&](const auto& run) { return run[k].has_value(); });
    if (k >= score_keys.size() && !any) continue;
    t.header.push_back(heading_of(keys[k]));
    for (size_t i = 0; i < figures.size(); ++i) {
      const std::optional<Figure>& f = figures[i][k];
      std::string cell = f ? figure_number(keys[k], f->mean()) : "n/a";
      if (f && f->values.size() > 1) cell += " ± " + figure_number(keys[k], f->std());
      t.rows[i].push_back(cell);
    }
  }
  return t;
}

// Wang et al.'s Table 5 over every task of the plan.
TextTable ordo_correlations(const std::vector<RunResults>& runs, const std::vector<std::string>& task_keys,
                            const Plan& plan) {
  TextTable t;
  t.header = {"indicator"};
  t.text_columns = 1;
  for (const std::string& k : task_keys) t.header.push_back(k);
  for (const std::string& ind : kTable5Indicators) {
    std::vector<std::string> row = {heading_of(ind)};
    for (const std::string& k : task_keys) row.push_back(correlation_text(correlate(runs, per_run_indicator(runs, ind), k, plan)));
    t.rows.push_back(row);
  }
  return t;
}

std::string escape(const std::string& s) { return report::html_escape(s); }

// What varies, what is tested and how (SPEC §4), under the tables.
std::string statistics_note(const Plan& plan) {
  const std::string rates = plan.average_learning_rates ? ", each seed averaged over the learning rates first (a "
                                                          "learning rate is never a replicate)"
                                                        : " at the best learning rate";
  std::string note =
      plan.replicate_seeds.empty()
          ? "Replicates: each row is one pretraining run; its spread and tests are over fine-tuning seeds" + rates + "."
          : "Replicates: a cell is the row's first pretraining run, mean ± std over its fine-tuning seeds" + rates +
                " (the paper's layout); rows pretrained again (train.seed = data.seed = another seed, the same corpus) "
                "add in brackets the mean ± std over their pretraining runs' means, which their orderings and rank "
                "statistics use. A difference between two such rows is tested over their pretraining runs (‡); a row "
                "pretrained once is tested over its fine-tuning seeds (†), as the paper's marks are.";
  note +=
      " A mean over tasks (glue.mean) is compared only between rows over the same tasks. Rank agreement: Kendall's "
      "τ_b and Spearman's ρ with two-sided p-values (exact permutation for n <= " +
      std::to_string(kExactPermutationMaxN) + ", else the normal and t approximations); it agrees only if τ_b > 0 "
      "with p < " + format_figure(plan.alpha, "%g") + ". A row with uniform attention is left out of an indicator whose "
      "value is then a tie artifact. Verdicts follow experiment/verdicts.h.";
  if (!plan.baseline.empty())
    note = "† (‡) marks a row that differs from " + plan.baseline + " by Welch's two-sided t-test over fine-tuning "
           "seeds (over pretraining runs), Holm-corrected within each column over that column's rows tested against " +
           plan.baseline + " (the family), at p < " + format_figure(plan.alpha, "%g") + " (ordo's marks; the paper's are its "
           "own). " + note;
  return note;
}

}  // namespace

void append_paragraph(const std::string& text, std::string& md, std::string& html) {
  md += text + "\n\n";
  html += "<p>" + report::html_escape(text) + "</p>\n";
}

json::Value append_reading(const std::vector<std::string>& lines, const std::string& title, std::string& md,
                           std::string& html) {
  md += "\n**" + title + "**\n\n";
  html += "<ul>\n";
  json::Value reading = json::Value::array();
  for (const std::string& l : lines) {
    md += "- " + l + "\n";
    html += "<li>" + escape(l) + "</li>\n";
    reading.push_back(l);
  }
  html += "</ul>\n";
  return reading;
}

std::string paper_values_markdown(const PaperTable& table) {
  std::string md = "\nThe paper's values: `" + table.path + "`\n";
  for (const std::string& s : table.source) md += "> " + s + "\n";
  return md;
}

std::string cell(double v, const char* pattern) { return std::isfinite(v) ? format_figure(v, pattern) : "-"; }

std::string mean_std_cell(const std::vector<double>& values, const char* pattern) {
  const MeanStd m = mean_std(values);
  return cell(m.mean, pattern) + (values.size() > 1 ? " ± " + cell(m.std, pattern) : "");
}

void judge_change_over_runs(const std::vector<double>& changes, double paper_sign, double alpha,
                            const std::string& what, const char* pattern, const std::string& where,
                            SectionVerdict& v) {
  ORDO_ASSERT(changes.size() >= 2);
  const TTest test = one_sample_t_test(changes, 0);
  const Interval ci = mean_interval(changes, 0.95);
  const double mean = mean_std(changes).mean;
  v.judgement = judge({mean, paper_sign, test.p, ""}, alpha);
  v.effect = what + " " + cell(mean, pattern) + " [" + cell(ci.low, pattern) + ", " + cell(ci.high, pattern) + "]" +
             where + " (Student's t over " + std::to_string(changes.size()) + " pretraining runs, p = " +
             cell(test.p, "%.3g") + ")";
}

void judge_baseline_runs(const Plan& plan, const std::vector<double>& changes, const std::string& having,
                         const std::string& what, const char* pattern, const std::string& where, SectionVerdict& v) {
  const std::string runs_of = "pretraining run of " + plan.baseline + " " + having;
  if (plan.baseline.empty()) v.judgement.reason = "the plan names no baseline (report.baseline)";
  else if (changes.empty()) v.judgement.reason = "no " + runs_of + " yet";
  else if (changes.size() < 2) v.judgement.reason = "one " + runs_of + ": no replicate to test over";
  else judge_change_over_runs(changes, 1.0, plan.alpha, what, pattern, where, v);
}

std::string baseline_runs_line(const Plan& plan, const SectionVerdict& v, const std::vector<double>& changes,
                               const char* pattern, const std::string& unit) {
  std::string each;
  for (double c : changes) each += (each.empty() ? "" : ", ") + cell(c, pattern);
  return "The paper: " + v.paper + ". " +
         (changes.empty() ? plan.baseline + ": not measured yet"
                          : plan.baseline + "'s pretraining runs: " + each + unit +
                                (v.effect.empty() ? std::string() : "; " + v.effect)) +
         ". Verdict: " + verdict_name(v.judgement.verdict) +
         (v.judgement.reason.empty() ? "" : " (" + v.judgement.reason + ")") + ".";
}

const RunResults* run_named(const std::vector<RunResults>& runs, const std::string& name) {
  for (const RunResults& r : runs)
    if (r.config == name) return &r;
  return nullptr;
}

std::string TextTable::markdown() const {
  std::string out = "|";
  for (const std::string& h : header) out += " " + h + " |";
  out += "\n|";
  for (size_t i = 0; i < header.size(); ++i) out += i < text_columns ? " --- |" : " ---: |";
  out += "\n";
  for (const auto& row : rows) {
    out += "|";
    for (const std::string& cell : row) out += " " + cell + " |";
    out += "\n";
  }
  return out;
}

std::string TextTable::html() const {
  std::string out = "<table>\n<tr>";
  for (const std::string& h : header) out += "<th>" + escape(h) + "</th>";
  out += "</tr>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const std::string& cell : row) out += "<td>" + escape(cell) + "</td>";
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

Correlation correlate(const std::vector<RunResults>& runs, const std::vector<double>& per_run, const std::string& key,
                      const Plan& plan) {
  std::map<std::string, Figure> figures;
  for (const RunResults& run : runs)
    if (const std::optional<Figure> f = figure(run, key, plan)) figures[run.config] = *f;
  // A mean over tasks (glue.mean) correlates only over the runs that average the same tasks.
  const std::string tasks = compared_task_set(figures, plan.baseline);
  std::vector<double> x, y;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].pe == "none" || !std::isfinite(per_run[i])) continue;  // Wang et al.'s footnote 11
    const auto f = figures.find(runs[i].config);
    if (f == figures.end() || f->second.tasks != tasks || !std::isfinite(f->second.mean())) continue;
    x.push_back(per_run[i]);
    y.push_back(f->second.mean());
  }
  Correlation c;
  c.n = static_cast<int64_t>(x.size());
  const CorrelationTest t = c.n >= 3 ? pearson_test(x, y) : CorrelationTest{kNaN, kNaN, c.n, ""};
  c.r = t.value, c.p = t.p;
  return c;
}

Comparison compare(const PaperTable& table, const std::vector<RunResults>& runs, const Plan& plan) {
  return table.correlations ? compare_correlations(table, runs, plan) : compare_rows(table, runs, plan);
}

// A paper table's heading: its name (the file's, which claims.tsv cites), "table10", as "Table 10".
std::string table_heading(const std::string& name) {
  if (name.size() <= 5 || name.rfind("table", 0) != 0) return name;
  return "Table " + name.substr(5);
}

ComparisonFiles render_comparisons(const Plan& plan, const std::vector<RunResults>& runs,
                                   const std::vector<PaperTable>& tables) {
  ComparisonFiles out;
  std::string md = "# " + plan.folder + " beside the paper\n\nGenerated by `ordo experiment` from the runs in `" +
                   plan.out + "/runs`" + (plan.quick ? " (--quick: a smoke test, not a result)" : "") + ".\n";
  std::string html;
  json::Value tables_json = json::Value::array();
  for (const PaperTable& table : tables) {
    if (!table.keyed.empty()) continue;  // read by its own section: experiment/dependency_report.h
    const Comparison c = compare(table, runs, plan);
    md += "\n## " + table_heading(table.name) + "\n\n" + c.cells.markdown() + "\nThe paper's values: `" + table.path + "`";
    html += "<h3>" + escape(table_heading(table.name)) + "</h3>\n" + c.cells.html() + "<p>The paper's values: <code>" +
            escape(table.path) + "</code> (";
    for (size_t i = 0; i < table.source.size(); ++i) {
      md += "\n> " + table.source[i];
      html += (i ? " " : "") + escape(table.source[i]);
    }
    md += "\n\n**Reading** (generated from the two tables)\n\n";
    html += ")</p>\n<ul>\n";
    json::Value readings = json::Value::array();
    for (const ColumnReading& r : c.readings) {
      md += "- " + r.text + "\n";
      html += "<li>" + escape(r.text) + "</li>\n";
      json::Value line = json::Value::object();
      line["column"] = r.column;
      line["grouping"] = r.grouping;
      line["text"] = r.text;
      if (r.grouping == "rank" || r.grouping == "signs") {
        line["kendall_tau_b"] = json::number(r.kendall);
        line["kendall_p"] = json::number(r.kendall_p);
        line["spearman_rho"] = json::number(r.spearman);
        line["spearman_p"] = json::number(r.spearman_p);
        line["n"] = r.n;
      }
      if (!r.verdicts.empty()) {
        json::Value verdicts = json::Value::array();
        for (Verdict v : r.verdicts) verdicts.push_back(verdict_name(v));
        line["verdicts"] = verdicts;
      } else if (r.grouping != "rank" && r.grouping != "signs") {
        line["same_order"] = r.same_order;
        line["same_best"] = r.same_best;
      }
      readings.push_back(line);
    }
    if (c.readings.empty()) {
      // Nothing to read against the paper, said so rather than left as an empty heading.
      const std::string none =
          "None against the paper: no column gives the paper's values for two of ordo's rows, so the paper has no "
          "order, and no difference from a baseline, to set ordo's against." +
          (plan.baseline.empty() ? std::string()
                                 : " The † and ‡ marks are ordo's own differences from " + plan.baseline +
                                       " (the note under the tables).");
      md += "- " + none + "\n";
      html += "<li>" + escape(none) + "</li>\n";
      json::Value line = json::Value::object();
      line["grouping"] = "none";
      line["text"] = none;
      readings.push_back(line);
    }
    html += "</ul>\n";
    out.comparisons.push_back(c);
    json::Value t = c.json;
    t["name"] = table.name;
    t["path"] = table.path;
    t["readings"] = readings;
    tables_json.push_back(t);
  }
  md += "\n" + statistics_note(plan) + "\n";

  // ordo's own tables: every task and Table 5 over them, and Figure 5.
  std::vector<std::string> score_keys;
  const TextTable scores = ordo_scores(runs, plan, score_keys);
  const std::string over = plan.average_learning_rates ? "seeds, each averaged over the learning rates as the paper "
                                                       "averages them"
                                                     : "seeds, at the best learning rate";
  std::string figures = "# Every figure of the runs\n\n## Scores (mean ± std over " + over +
                        "; held-out MLM accuracy from pretraining)\n\n" + scores.markdown() + "\n" +
                        statistics_note(plan) + "\n";
  const TextTable pretrained = pretraining_runs(runs, plan, score_keys);
  if (!pretrained.rows.empty())
    figures += "\n## Each pretraining run of the rows pretrained more than once\n\nA score is the mean ± std over the "
               "run's fine-tuning seeds; a row's bracketed spread and its ‡ tests are over these means.\n\n" +
               pretrained.markdown();
  if (!plan.finetune.empty()) {
    figures += "\nData: ";
    for (const FinetuneTask& t : plan.finetune)
      if (!t.sweep) figures += "\n- " + t.name + ": " + t.source();
    std::vector<std::string> task_keys(score_keys.begin() + 1, score_keys.end());
    figures += "\n\n## Pearson's r of each indicator with each score over the runs with a position encoding "
               "(Wang et al. 2021, Table 5's reading)\n\n" + ordo_correlations(runs, task_keys, plan).markdown();
    // Figure 5 on the paper's Table 5 columns where it has one, else on every score.
    std::vector<std::string> curve_keys;
    for (const PaperTable& t : tables)
      if (t.correlations) curve_keys = t.columns;
    if (curve_keys.empty()) curve_keys = task_keys;
    const ReportSection figure5 = figure5_section(runs, curve_keys, plan);
    out.files.insert(out.files.end(), figure5.files.begin(), figure5.files.end());
    figures += figure5.markdown;
    html += figure5.html;
    out.verdicts = figure5.verdicts;
  }
  json::Value all = json::Value::object();
  all["tables"] = tables_json;
  json::Value per_run = json::Value::array();
  std::vector<std::string> keys = score_keys;
  keys.insert(keys.end(), kTable5Indicators.begin(), kTable5Indicators.end());
  keys.insert(keys.end(), analysis_keys().begin(), analysis_keys().end());
  for (const PaperTable& t : tables)
    if (t.keyed.empty()) keys.insert(keys.end(), t.columns.begin(), t.columns.end());
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (const RunResults& run : runs) {
    json::Value r = json::Value::object();
    r["config"] = run.config;
    r["pe"] = run.pe;
    r["figures"] = figures_json(run, plan, keys);
    r["stages"] = run.stages;
    if (!run.by_range.is_null()) {  // Figure 5's inputs: the indicators over the first k offsets, k = 1, 2, ...
      json::Value ranges = json::Value::object();
      for (const char* key : {"monotonicity_first_k", "direction_balance"}) ranges[key] = run.by_range[key];
      r["by_range"] = ranges;
    }
    json::Value chance = json::Value::object();
    for (const auto& [name, task] : run.tasks)
      if (std::isfinite(task.chance)) chance[name] = json::number(task.chance);
    if (chance.size() > 0) r["chance"] = chance;  // the majority label's accuracy, in percent
    if (!run.replicates.empty()) {
      json::Value again = json::Value::array();
      for (const RunResults& replicate : run.replicates) {
        json::Value x = json::Value::object();
        x["config"] = replicate.config;
        x["figures"] = figures_json(replicate, plan, keys);
        x["stages"] = replicate.stages;
        again.push_back(x);
      }
      r["replicates"] = again;  // each further pretraining run's own figures
    }
    per_run.push_back(r);
  }
  all["runs"] = per_run;
  out.files.push_back({"paper.md", md});
  out.files.push_back({"figures.md", figures});
  out.files.push_back({"paper.json", json::dump(all, 2) + "\n"});
  out.html = "<h2>Against the paper</h2>\n" + html;
  return out;
}

}  // namespace ordo::experiment
