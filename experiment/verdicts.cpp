// The verdict rules of SPEC §4 (experiment/verdicts.h).
#include "experiment/verdicts.h"

#include <cmath>

namespace ordo::experiment {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::holds: return "holds";
    case Verdict::consistent: return "consistent, not significant";
    case Verdict::contradicted: return "contradicted";
    case Verdict::inconclusive: return "inconclusive";
    case Verdict::not_testable: return "not testable here";
  }
  return "";
}

Judgement judge(const Evidence& e, double alpha) {
  if (!e.not_testable.empty()) return {Verdict::not_testable, e.not_testable};
  if (std::isnan(e.paper_effect) || e.paper_effect == 0) return {Verdict::not_testable, "the paper's effect has no direction"};
  if (std::isnan(e.ordo_effect)) return {Verdict::not_testable, "ordo has no effect measured"};
  if (std::isnan(e.p)) return {Verdict::not_testable, "no test: too few replicates, or none that vary"};
  // No effect (0) is not the paper's direction; its p is large, so it reads inconclusive.
  const bool same = e.ordo_effect != 0 && (e.ordo_effect > 0) == (e.paper_effect > 0);
  const bool significant = e.p < alpha;
  if (same) return {significant ? Verdict::holds : Verdict::consistent, ""};
  return {significant ? Verdict::contradicted : Verdict::inconclusive, ""};
}

Judgement judge_rank_agreement(const CorrelationTest& tau, double alpha) {
  if (std::isnan(tau.value)) return {Verdict::not_testable, "tau_b is undefined: one side's values all tie"};
  return judge({tau.value, 1.0, tau.p, ""}, alpha);
}

bool agrees(const CorrelationTest& tau, double alpha) { return tau.value > 0 && tau.p < alpha; }

std::string verdicts_by_name(const std::vector<std::pair<std::string, Verdict>>& named) {
  std::string out;
  for (Verdict v : {Verdict::holds, Verdict::consistent, Verdict::contradicted, Verdict::inconclusive,
                    Verdict::not_testable}) {
    std::string names;
    for (const auto& [name, w] : named)
      if (w == v) names += (names.empty() ? "" : ", ") + name;
    if (!names.empty()) out += (out.empty() ? "" : "; ") + std::string(verdict_name(v)) + ": " + names;
  }
  return out;
}

bool tie_artifact_on_uniform(const std::string& indicator) {
  return indicator == "monotonicity" || indicator == "monotonicity_first_k" ||
         indicator == "translation_invariance_no_special" || indicator == "symmetry";
}

bool at_chance(const std::vector<double>& accuracies, double chance, double alpha) {
  if (accuracies.empty() || std::isnan(chance)) return false;
  const MeanStd m = mean_std(accuracies);
  if (m.mean - chance < kChanceMargin) return true;
  if (accuracies.size() < 2 || m.std == 0) return false;  // the margin cleared, nothing to test over
  const double t = (m.mean - chance) / (m.std / std::sqrt(static_cast<double>(m.n)));
  return student_t_sf(t, static_cast<double>(m.n - 1)) >= alpha;
}

}  // namespace ordo::experiment
