// The generated readings of a report's figures (report/readings.h).
#include "report/readings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "base/json_numbers.h"
#include "base/strings.h"
#include "probe/indicators.h"
#include "probe/probe_matrix.h"

namespace ordo::report {

namespace {

const char* const kPaper =
    " Wang et al. 2021 found the layer-1 attention of BERT-base local and near translation invariant with every "
    "position encoding after pretraining (their Table 2; configs/papers/wang2021/paper_table2.tsv holds the values), "
    "and uniform without one.";

std::string bounds_text() {
  char s[64];
  std::snprintf(s, sizeof s, "a band is AIV <= %g and OPR <= %g here", kInvariantAiv, kLocalOpr);
  return s;
}

std::string figure(double x, const char* pattern = "%.3f") {
  char s[32];
  std::snprintf(s, sizeof s, pattern, x);
  return s;
}

}  // namespace

Shape shape_of(double aiv, double opr) {
  const bool invariant = aiv <= kInvariantAiv, local = opr <= kLocalOpr;
  return invariant && local ? Shape::band : local ? Shape::local_only : invariant ? Shape::invariant_only : Shape::neither;
}

Shape shape_of(const RunRecord& r) {
  // Uniform rows first: there every pair ties, AIV and OPR are 0 and describe no band.
  if (probe::uniform_rows(probe::without_special(r.attention))) return Shape::uniform;
  return shape_of(json::to_number(r.without_special["translation_invariance"]),
                  json::to_number(r.without_special["monotonicity_first_k"]));
}

std::string reading_of(const RunRecord& r) {
  const Shape shape = shape_of(r);
  if (shape == Shape::uniform)
    return "Layer " + std::to_string(r.layer) + " of " + r.label +
           " attends uniformly to identical words: every word position gets the same weight within f32 rounding "
           "(without [CLS] and [SEP]), so there is no positional structure; AIV and OPR are 0 here because every "
           "pair ties, not because of a band." + kPaper;
  const double aiv = json::to_number(r.without_special["translation_invariance"]);
  const double opr = json::to_number(r.without_special["monotonicity_first_k"]);
  const std::string what =
      shape == Shape::band         ? "a diagonal band: attention falls with distance and depends on the offset alone"
      : shape == Shape::local_only ? "local (attention falls with distance) but not translation invariant: the band "
                                     "changes along the diagonal"
      : shape == Shape::invariant_only
          ? "translation invariant (each diagonal constant) but not local: no band around the diagonal"
          : "neither local nor translation invariant: no diagonal band";
  return "Layer " + std::to_string(r.layer) + " of " + r.label + " attends to identical words with " + what + " (AIV " +
         figure(aiv) + ", OPR over the first 20 offsets " + figure(opr) + ", without [CLS] and [SEP]; " +
         bounds_text() + ")." + kPaper;
}

std::string heatmaps_reading(const std::vector<RunRecord>& runs) {
  std::vector<std::string> band, local, invariant, neither, uniform;
  for (const RunRecord& r : runs) {
    const Shape s = shape_of(r);
    (s == Shape::band ? band : s == Shape::local_only ? local : s == Shape::invariant_only ? invariant
                             : s == Shape::neither    ? neither : uniform)
        .push_back(r.label);
  }
  std::string out = "Each panel's probed layer (without [CLS] and [SEP]; " + bounds_text() + "): ";
  if (band.size() == runs.size()) return out + "every run's is a diagonal band." + kPaper;
  out += band.empty() ? std::string("no run's is a diagonal band")
                      : std::to_string(band.size()) + " of " + std::to_string(runs.size()) +
                            " runs' is a diagonal band (" + joined(band, ", ") + ")";
  const std::pair<const std::vector<std::string>*, const char*> others[] = {
      {&local, "local but not translation invariant"},
      {&invariant, "translation invariant but not local"},
      {&neither, "neither"},
      {&uniform, "uniform, with no positional structure"}};
  for (const auto& [list, what] : others)
    if (!list->empty()) out += "; " + std::string(what) + ": " + joined(*list, ", ");
  return out + "." + kPaper;
}

std::vector<std::pair<double, double>> trajectory_of(const RunRecord& r, const std::string& key) {
  std::vector<std::pair<double, double>> out;
  if (!r.trajectory.is_array()) return out;
  for (size_t i = 0; i < r.trajectory.size(); ++i) {
    const json::Value& row = r.trajectory[i];
    const json::Value* inner = row.is_object() ? row.find("without_special") : nullptr;
    const json::Value* v = inner && inner->is_object() ? inner->find(key) : nullptr;
    const json::Value* step = row.is_object() ? row.find("step") : nullptr;
    const std::string where = detail::cat(r.run_dir, "/analysis/indicator_trajectory.json: steps[", i, "]");
    ORDO_CHECK(v && step && step->is_number(), where, " lacks \"step\" or \"without_special\".\"", key, "\"");
    const double y = json::reading_file(where + ".without_special." + key, [&] { return json::to_number(*v); });
    if (std::isfinite(y)) out.emplace_back(step->as_number(), y);
  }
  return out;
}

std::string trajectory_reading(const std::vector<RunRecord>& runs) {
  std::vector<std::string> formed, never, uniform, moving;
  bool any = false;
  for (const RunRecord& r : runs) {
    const auto aiv = trajectory_of(r, "translation_invariance"), opr = trajectory_of(r, "monotonicity_first_k");
    // The checkpoints with both indicators, paired by step (a non-finite value drops one from its series).
    std::vector<std::pair<double, Shape>> shapes;
    for (const auto& [step, a] : aiv) {
      const auto o = std::find_if(opr.begin(), opr.end(), [&](const auto& p) { return p.first == step; });
      if (o != opr.end()) shapes.emplace_back(step, shape_of(a, o->second));
    }
    if (shapes.empty()) continue;
    any = true;
    if (shape_of(r) == Shape::uniform) {
      uniform.push_back(r.label);
      continue;
    }
    // The first checkpoint from which every later one is a band.
    size_t from = shapes.size();
    while (from > 0 && shapes[from - 1].second == Shape::band) --from;
    if (from == shapes.size()) never.push_back(r.label);
    else formed.push_back(r.label + " from step " + figure(shapes[from].first, "%.0f"));
    // OPR-20 over the last quarter of the steps: from the first checkpoint at 3/4 of the last step.
    const double last_step = opr.back().first;
    const auto quarter = std::find_if(opr.begin(), opr.end(), [&](const auto& p) { return p.first >= 0.75 * last_step; });
    if (quarter == opr.end() || quarter == opr.end() - 1) continue;
    const double change = opr.back().second - quarter->second;
    if (std::fabs(change) > kStillMoving * std::fabs(opr.back().second) && std::fabs(change) > kStillMovingAbsolute)
      moving.push_back(r.label + " " + figure(quarter->second) + " at step " + figure(quarter->first, "%.0f") + " to " +
                       figure(opr.back().second) + " (" + (change < 0 ? "falling" : "rising") + ")");
  }
  if (!any) return "";
  std::string out = "Layer 1 becomes a diagonal band and stays one to the last checkpoint (without [CLS] and [SEP]; " +
                    bounds_text() + "): " + (formed.empty() ? std::string("no run") : joined(formed, ", "));
  if (!never.empty()) out += "; not by the last checkpoint: " + joined(never, ", ");
  if (!uniform.empty()) out += "; uniform at the end, with no positional structure: " + joined(uniform, ", ");
  out += ". OPR over the first 20 offsets still moves over the last quarter of pretraining (by more than " +
         figure(100 * kStillMoving, "%.0f") + "% of its final value): " +
         (moving.empty() ? std::string("no run; every run's settles") : joined(moving, ", ")) + ".";
  return out;
}

std::string loss_reading(const std::vector<RunRecord>& runs) {
  std::string past;
  bool any = false;
  for (const RunRecord& r : runs) {
    if (r.held_out_loss.size() < 2) continue;
    any = true;
    const auto lowest = std::min_element(r.held_out_loss.begin(), r.held_out_loss.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
    const auto& last = r.held_out_loss.back();
    if (last.second <= lowest->second * (1 + kPastBestLoss)) continue;
    char s[160];
    std::snprintf(s, sizeof s, " (lowest %.3f at step %.0f, %.3f at step %.0f)", lowest->second, lowest->first,
                  last.second, last.first);
    past += (past.empty() ? "" : "; ") + r.label + s;
  }
  if (!any) return "";
  char allowed[16];
  std::snprintf(allowed, sizeof allowed, "%g%%", 100 * kPastBestLoss);
  if (past.empty())
    return "Every run's held-out loss at its last evaluation is within " + std::string(allowed) +
           " of its lowest: no run overfits the corpus before the end.";
  return "Above their lowest held-out loss by more than " + std::string(allowed) +
         " at the last evaluation, so overfitting the corpus before the end (their last checkpoint is past their "
         "best held-out point): " + past + ". Held-out losses of different objectives (masked tokens, next tokens) "
         "do not compare.";
}

}  // namespace ordo::report
