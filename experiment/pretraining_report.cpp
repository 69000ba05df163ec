// Figure 2 (left) of the locality/symmetry paper across runs (experiment/pretraining_report.h).
#include "experiment/pretraining_report.h"

#include <cmath>
#include <optional>

#include "base/error.h"
#include "base/json_numbers.h"
#include "experiment/statistics.h"
#include "experiment/verdicts.h"

namespace ordo::experiment {

namespace {

// One property of one pretraining run: at step 0 and at its last checkpoint.
struct Change {
  double first = 0, last = 0;
  int64_t last_step = 0;
};

// A property ("locality", "symmetry") of a run's analysis, [CLS] and [SEP]
// included; nothing when the run has no step-0 point.
std::optional<Change> change_of(const RunResults& run, const std::string& key) {
  const json::Value& steps = run.record.trajectory;
  if (!run.probed || !steps.is_array() || steps.size() < 2) return std::nullopt;
  auto value = [&](size_t i, int64_t* step) {
    const json::Value& row = steps[i];
    const std::string where = detail::cat(run.run_dir, "/analysis/indicator_trajectory.json: steps[", i, "]");
    const json::Value* inner = row.is_object() ? row.find("with_special") : nullptr;
    const json::Value* v = inner && inner->is_object() ? inner->find(key) : nullptr;
    const json::Value* s = row.is_object() ? row.find("step") : nullptr;
    ORDO_CHECK(v && s && s->is_number(), where, " lacks \"step\" or \"with_special\".\"", key, "\"");
    *step = static_cast<int64_t>(s->as_number());
    return json::reading_file(where + ".with_special." + key, [&] { return json::to_number(*v); });
  };
  Change c;
  int64_t first_step = -1;
  c.first = value(0, &first_step);
  c.last = value(steps.size() - 1, &c.last_step);
  if (first_step != 0 || !std::isfinite(c.first) || !std::isfinite(c.last)) return std::nullopt;
  return c;
}

// The row's pretraining runs that have both points.
std::vector<Change> changes_of(const RunResults& row, const std::string& key) {
  std::vector<Change> out;
  if (auto c = change_of(row, key)) out.push_back(*c);
  for (const RunResults& r : row.replicates)
    if (auto c = change_of(r, key)) out.push_back(*c);
  return out;
}

}  // namespace

bool has_initial_indicators(const std::vector<RunResults>& runs) {
  for (const RunResults& r : runs)
    if (change_of(r, "locality")) return true;
  return false;
}

ReportSection pretraining_across_runs(const Plan& plan, const std::vector<RunResults>& runs) {
  ReportSection out;
  std::string md = "\n## Figure 2 (left): locality and symmetry before and after pretraining\n\n";
  std::string html = "<h2>Figure 2 (left): locality and symmetry before and after pretraining</h2>\n";
  const std::string about =
      "Layer 1's locality and symmetry (Eqs. 7-8, identical word probing, [CLS] and [SEP] included) at the "
      "weights as initialised (step 0) and at the last checkpoint of pretraining, mean ± std over each row's "
      "pretraining runs; each run's curve is its analysis' indicator trajectory. The paper averages the "
      "attention over the layers of BERT, XLNet and DeBERTa; ordo probes layer 1 of its own encodings.";
  append_paragraph(about, md, html);
  TextTable t;
  t.header = {"config", "pretraining runs", "locality: step 0", "locality: last", "symmetry: step 0",
              "symmetry: last"};
  for (const RunResults& row : runs) {
    const std::vector<Change> locality = changes_of(row, "locality"), symmetry = changes_of(row, "symmetry");
    if (locality.empty() && symmetry.empty()) continue;
    auto column = [](const std::vector<Change>& changes, bool last) {
      std::vector<double> v;
      for (const Change& c : changes) v.push_back(last ? c.last : c.first);
      return v.empty() ? std::string("-") : mean_std_cell(v, "%.3f");
    };
    t.rows.push_back({row.config, std::to_string(locality.size()), column(locality, false), column(locality, true),
                      column(symmetry, false), column(symmetry, true)});
  }
  md += t.markdown();
  html += t.html();

  // The verdicts: the baseline's change over its pretraining runs.
  std::vector<std::string> lines;
  const RunResults* baseline = run_named(runs, plan.baseline);
  for (const std::string key : {"locality", "symmetry"}) {
    const bool locality = key == "locality";
    SectionVerdict v;
    v.key = locality ? kPretrainingLocality : kPretrainingSymmetry;
    v.paper = std::string("more ") + (locality ? "local" : "symmetric") + " after pretraining";
    const std::vector<Change> changes = baseline ? changes_of(*baseline, key) : std::vector<Change>{};
    std::vector<double> deltas;
    for (const Change& c : changes) deltas.push_back(c.last - c.first);
    judge_baseline_runs(plan, deltas, "with a step-0 point", plan.baseline + "'s " + key, "%+.3f", " from step 0", v);
    std::vector<double> first, last;
    for (const Change& c : changes) first.push_back(c.first), last.push_back(c.last);
    lines.push_back(
        std::string(locality ? "Locality" : "Symmetry") + " of " + plan.baseline + ": " +
        (changes.empty() ? std::string("not measured yet")
                         : mean_std_cell(first, "%.3f") + " at step 0, " + mean_std_cell(last, "%.3f") + " at step " +
                               std::to_string(changes.front().last_step) +
                               (v.effect.empty() ? std::string() : "; " + v.effect)) +
        ". The paper: " + v.paper + ". Verdict: " + verdict_name(v.judgement.verdict) +
        (v.judgement.reason.empty() ? "" : " (" + v.judgement.reason + ")") + ".");
    out.verdicts.push_back(v);
  }
  append_reading(lines, "Reading (generated)", md, html);
  out.markdown = md;
  out.html = html;
  return out;
}

}  // namespace ordo::experiment
