// The semantic-role swaps of Table 2 across runs (experiment/swap_report.h).
#include "experiment/swap_report.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "downstream/metrics.h"
#include "experiment/columns.h"
#include "experiment/statistics.h"
#include "experiment/verdicts.h"

namespace ordo::experiment {

namespace {

const std::string kAnswersChanged = ".answers_changed";

// One pretraining run under one swap, in percent.
struct Swapped {
  double original = 0, swapped = 0, changed = 0;
};

// A role swap a table asks for: "subject_number.dev_roles_swapped.answers_changed".
struct Swap {
  std::string task, original, swapped;
};

std::vector<Swap> swaps_in(const std::vector<PaperTable>& tables) {
  std::vector<Swap> out;
  for (const PaperTable& t : tables)
    for (const std::string& key : t.columns) {
      if (key.size() <= kAnswersChanged.size() ||
          key.compare(key.size() - kAnswersChanged.size(), kAnswersChanged.size(), kAnswersChanged) != 0)
        continue;
      const std::string stem = key.substr(0, key.size() - kAnswersChanged.size());  // TASK.SWAPPED
      const size_t dot = stem.find('.');
      if (dot == std::string::npos) continue;
      for (const downstream::RoleSwap& s : downstream::kRoleSwaps)
        if (stem.substr(dot + 1) == s.swapped) out.push_back({stem.substr(0, dot), s.original, s.swapped});
    }
  return out;
}

std::optional<Swapped> swapped_of(const RunResults& run, const Swap& s, const Plan& plan) {
  const auto mean_of = [&](const std::string& key) {
    const std::optional<Figure> f = figure(run, key, plan);
    return f && !f->values.empty() ? f->mean() : std::nan("");
  };
  Swapped w;
  w.original = mean_of(s.task + "." + s.original + ".accuracy");
  w.swapped = mean_of(s.task + "." + s.swapped + ".accuracy");
  w.changed = mean_of(s.task + "." + s.swapped + kAnswersChanged);
  if (!std::isfinite(w.original) || !std::isfinite(w.swapped) || !std::isfinite(w.changed)) return std::nullopt;
  return w;
}

// The row's pretraining runs with the swap's figures.
std::vector<Swapped> pretraining_runs(const RunResults& row, const Swap& s, const Plan& plan) {
  std::vector<Swapped> out;
  if (auto w = swapped_of(row, s, plan)) out.push_back(*w);
  for (const RunResults& r : row.replicates)
    if (auto w = swapped_of(r, s, plan)) out.push_back(*w);
  return out;
}

}  // namespace

bool has_role_swaps(const std::vector<PaperTable>& tables) { return !swaps_in(tables).empty(); }

ReportSection role_swaps_across_runs(const Plan& plan, const std::vector<RunResults>& runs,
                                     const std::vector<PaperTable>& tables) {
  ReportSection out;
  std::string md = "\n## Table 2: what a semantic-role swap changes\n\n";
  std::string html = "<h2>Table 2: what a semantic-role swap changes</h2>\n";
  append_paragraph(
      "Each role swap's pairs: an original and the same words with agent and patient exchanged, row for row "
      "(synth/tasks.h). Original: accuracy on the originals; Δ: accuracy on the swapped minus on the originals, "
      "in points; changed: the answers the swap changes, in percent. A model blind to word order changes no "
      "answer and falls by 100 − 2 × Original (the last column); one that reads the roles keeps its accuracy. "
      "Each row's figures are the mean ± std over its pretraining runs (each the mean over its fine-tuning seeds "
      "and learning rates).",
      md, html);
  std::vector<std::string> lines;
  for (const Swap& s : swaps_in(tables)) {
    TextTable t;
    t.header = {"config", "pretraining runs", "Original", "Δ", "changed", "Δ if blind to order"};
    std::vector<std::pair<double, std::string>> by_changed;
    for (const RunResults& row : runs) {
      const std::vector<Swapped> w = pretraining_runs(row, s, plan);
      if (w.empty()) continue;
      std::vector<double> original, delta, changed, blind;
      for (const Swapped& x : w) {
        original.push_back(x.original), delta.push_back(x.swapped - x.original), changed.push_back(x.changed);
        blind.push_back(100 - 2 * x.original);
      }
      t.rows.push_back({row.config, std::to_string(w.size()), mean_std_cell(original, "%.1f"),
                        mean_std_cell(delta, "%.1f"), mean_std_cell(changed, "%.1f"), mean_std_cell(blind, "%.1f")});
      by_changed.push_back({mean_std(changed).mean, row.config});
    }
    md += "**" + s.task + "** (" + s.original + " → " + s.swapped + ")\n\n" + t.markdown() + "\n";
    html += "<p>" + s.task + " (" + s.original + " → " + s.swapped + ")</p>\n" + t.html();

    // The verdict on the baseline: does the swap cost it accuracy?
    SectionVerdict v;
    v.key = kSwapVerdictPrefix + s.task;
    v.paper = "accuracy falls under a semantic-role swap";
    const RunResults* baseline = run_named(runs, plan.baseline);
    const std::vector<Swapped> w = baseline ? pretraining_runs(*baseline, s, plan) : std::vector<Swapped>{};
    std::vector<double> delta;
    for (const Swapped& x : w) delta.push_back(x.swapped - x.original);
    const ColumnFigures task = column_figures(s.task + ".accuracy", runs, plan);
    if (plan.baseline.empty()) {
      v.judgement.reason = "the plan names no baseline (report.baseline)";
    } else if (delta.empty()) {
      v.judgement.reason = "no run of " + plan.baseline + " has the swap's figures yet";
    } else if (task.at_chance.count(plan.baseline)) {
      v.judgement.reason = "accuracy at chance on " + s.task + " (the majority label's " +
                           format_figure(task.chance, "%.1f") + "%): nothing learned for the swap to undo";
    } else if (delta.size() < 2) {
      v.judgement.reason = "one pretraining run of " + plan.baseline + ": no replicate to test over";
    } else {
      judge_change_over_runs(delta, -1.0, plan.alpha, plan.baseline + "'s Δ", "%+.1f",
                             " points on " + s.task + "'s swap", v);
    }
    out.verdicts.push_back(v);
    std::sort(by_changed.begin(), by_changed.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string ranked;
    for (const auto& [changed, config] : by_changed)
      ranked += (ranked.empty() ? "" : ", ") + config + " " + cell(changed, "%.1f") + "%";
    lines.push_back(s.task + "'s swap: " + (v.effect.empty() ? std::string("no test") : v.effect) + ". The paper: " +
                    v.paper + ". Verdict: " + verdict_name(v.judgement.verdict) +
                    (v.judgement.reason.empty() ? "" : " (" + v.judgement.reason + ")") +
                    ". Answers the swap changes, most first: " + (ranked.empty() ? "none yet" : ranked) + ".");
  }
  append_reading(lines, "Reading (generated)", md, html);
  out.markdown = md;
  out.html = html;
  return out;
}

}  // namespace ordo::experiment
