// The locality/symmetry paper's Figure 2 (left) across runs
// (experiment/pretraining_report.h): each run's locality and symmetry at step
// 0 and at its last checkpoint, and the verdicts on the baseline's change over
// its pretraining runs. The expected t-test figures are SciPy's
// (scipy.stats.ttest_1samp(d, 0) and its confidence_interval(0.95)).
#include "experiment/pretraining_report.h"
#include "experiment/verdicts.h"
#include "tests/experiment/fixtures.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

// A pretraining run whose analysis probed step 0 and step 4000.
experiment::RunResults run_with(const std::string& config, double locality0, double locality1, double symmetry0,
                                double symmetry1, bool step_zero = true) {
  experiment::RunResults r;
  r.config = config;
  r.run_dir = "runs/" + config;
  r.probed = true;
  r.record.trajectory = json::Value::array();
  for (const auto& [step, locality, symmetry] :
       {std::tuple<int, double, double>{step_zero ? 0 : 500, locality0, symmetry0}, {4000, locality1, symmetry1}}) {
    json::Value point = json::Value::object(), with = json::Value::object();
    with["locality"] = locality;
    with["symmetry"] = symmetry;
    point["step"] = step;
    point["with_special"] = with;
    r.record.trajectory.push_back(point);
  }
  return r;
}

}  // namespace

TEST_CASE("Figure 2 (left): the baseline's change from step 0, tested over its pretraining runs",
          "[experiment][verdicts]") {
  experiment::Plan plan;
  plan.baseline = "bert";
  plan.alpha = 0.05;
  // Locality changes +0.28, +0.31, +0.28 (SciPy: mean 0.29, p = 0.001187, interval [0.2470, 0.3330]);
  // symmetry -0.19, -0.04, -0.25 (mean -0.16, p = 0.1245: the other way, not significant).
  experiment::RunResults bert = run_with("bert", 0.05, 0.33, 0.94, 0.75);
  bert.replicates = {run_with("bert", 0.05, 0.36, 0.94, 0.90), run_with("bert", 0.05, 0.33, 0.94, 0.69)};
  const std::vector<experiment::RunResults> runs = {bert, run_with("alibi", 0.08, 0.09, 0.94, 0.94),
                                                    run_with("late", 0.1, 0.2, 0.5, 0.6, /*step_zero=*/false)};
  REQUIRE(experiment::has_initial_indicators(runs));
  const experiment::ReportSection s = experiment::pretraining_across_runs(plan, runs);

  const auto& locality = test::section_verdict(s, experiment::kPretrainingLocality);
  CHECK(locality.judgement.verdict == experiment::Verdict::holds);
  CHECK(locality.effect == "bert's locality +0.290 [+0.247, +0.333] from step 0 (Student's t over 3 pretraining "
                           "runs, p = 0.00119)");
  const auto& symmetry = test::section_verdict(s, experiment::kPretrainingSymmetry);
  CHECK(symmetry.judgement.verdict == experiment::Verdict::inconclusive);
  CHECK(symmetry.effect == "bert's symmetry -0.160 [-0.429, +0.109] from step 0 (Student's t over 3 pretraining "
                           "runs, p = 0.125)");
  // The table: each row's runs with a step-0 point, mean ± std; a run without one is left out.
  CHECK_THAT(s.markdown, Contains("| bert | 3 | 0.050 ± 0.000 | 0.340 ± 0.017 | 0.940 ± 0.000 | 0.780 ± 0.108 |"));
  CHECK_THAT(s.markdown, Contains("| alibi | 1 | 0.080 | 0.090 | 0.940 | 0.940 |"));
  CHECK_THAT(s.markdown, !Contains("| late |"));

  // One pretraining run of the baseline: nothing to test its change over.
  const experiment::ReportSection once = experiment::pretraining_across_runs(plan, {run_with("bert", 0.05, 0.33, 0.94, 0.75)});
  const experiment::SectionVerdict& measured_once = test::section_verdict(once, experiment::kPretrainingLocality);
  CHECK(measured_once.judgement.verdict == experiment::Verdict::not_testable);
  CHECK_THAT(measured_once.judgement.reason,
             Contains("one pretraining run of bert with a step-0 point: no replicate to test over"));
  CHECK_FALSE(experiment::has_initial_indicators({run_with("late", 0.1, 0.2, 0.5, 0.6, false)}));
}
