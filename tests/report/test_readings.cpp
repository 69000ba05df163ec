// report/readings.h: the heatmaps' and the trajectories' readings, on runs
// made by hand (an indicator's values chosen on either side of the bounds).
#include "report/readings.h"

#include <cmath>

#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

report::RunRecord run(const std::string& label, double aiv, double opr) {
  report::RunRecord r;
  r.label = label;
  r.without_special = json::Value::object();
  r.without_special["translation_invariance"] = aiv;
  r.without_special["monotonicity_first_k"] = opr;
  return r;
}

// What a model without positions gives identical words: the word positions equal, [CLS] and [SEP] apart.
report::RunRecord uniform_run(const std::string& label) {
  report::RunRecord r = run(label, 0, 0);
  const int64_t L = 6;
  r.attention = Matrix(L, L);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j) r.attention(i, j) = j == 0 ? 0.3f : j == L - 1 ? 0.1f : 0.15f;
  return r;
}

// A trajectory of (step, AIV, OPR-20) rows as ordo analyze writes it.
json::Value trajectory(const std::vector<std::tuple<double, double, double>>& rows) {
  json::Value steps = json::Value::array();
  for (const auto& [step, aiv, opr] : rows) {
    json::Value inner = json::Value::object();
    inner["translation_invariance"] = aiv;
    inner["monotonicity_first_k"] = opr;
    json::Value row = json::Value::object();
    row["step"] = step;
    row["without_special"] = inner;
    steps.push_back(row);
  }
  return steps;
}

}  // namespace

TEST_CASE("the heatmaps' reading groups the runs by the shape of their probed layer", "[report]") {
  const std::string all_bands = report::heatmaps_reading({run("a", 0.05, 0.1), run("b", 0.1, 0.2)});
  CHECK_THAT(all_bands, Contains("every run's is a diagonal band."));
  const std::string mixed = report::heatmaps_reading(
      {run("a", 0.05, 0.1), run("local", 0.5, 0.1), run("flat", 0.05, 0.3), run("far", 0.5, 0.5), uniform_run("none")});
  CHECK_THAT(mixed, Contains("1 of 5 runs' is a diagonal band (a); local but not translation invariant: local; "
                             "translation invariant but not local: flat; neither: far; uniform, with no positional "
                             "structure: none."));
  CHECK_THAT(report::heatmaps_reading({uniform_run("none")}), Contains("no run's is a diagonal band"));
}

TEST_CASE("the trajectories' reading: where the band forms, and whether OPR still moves at the end", "[report]") {
  // Becomes a band at step 2000 and stays one; OPR over the last quarter (step 3000 on) 0.19 -> 0.18: settled.
  report::RunRecord settles = run("settles", 0.03, 0.18);
  settles.trajectory = trajectory({{1000, 0.5, 0.4}, {2000, 0.08, 0.2}, {3000, 0.05, 0.19}, {4000, 0.03, 0.18}});
  // A band at step 1000 that breaks at 2000 forms for good only at 3000; OPR 0.15 -> 0.10 in the last quarter.
  report::RunRecord late = run("late", 0.02, 0.1);
  late.trajectory = trajectory({{1000, 0.05, 0.1}, {2000, 0.2, 0.3}, {3000, 0.05, 0.15}, {4000, 0.02, 0.1}});
  // Never a band (AIV too large at the end).
  report::RunRecord never = run("never", 0.4, 0.1);
  never.trajectory = trajectory({{1000, 0.5, 0.3}, {2000, 0.45, 0.2}, {4000, 0.4, 0.1}});
  // Uniform at the end: its AIV and OPR are tie artifacts, neither a band nor moving.
  report::RunRecord none = uniform_run("none");
  none.trajectory = trajectory({{1000, 0.0, 0.0}, {4000, 0.0, 0.0}});
  report::RunRecord without = run("no analysis", 0.05, 0.1);  // no trajectory: left out

  const std::string text = report::trajectory_reading({settles, late, never, none, without});
  CHECK_THAT(text, Contains("stays one to the last checkpoint (without [CLS] and [SEP]; a band is AIV <= 0.1 and "
                            "OPR <= 0.2 here): settles from step 2000, late from step 3000; not by the last "
                            "checkpoint: never; uniform at the end, with no positional structure: none."));
  // late falls by 0.05 in its last quarter (50% of 0.10); settles by 0.01 (6%); never has no checkpoint in
  // [3000, 4000) to start its last quarter from, so it is not read as moving.
  CHECK_THAT(text, Contains("(by more than 10% of its final value): late 0.150 at step 3000 to 0.100 (falling)."));
  CHECK(text.find("settles 0.") == std::string::npos);
  CHECK(text.find("never 0.") == std::string::npos);
  CHECK(text.find("no analysis") == std::string::npos);
  CHECK(report::trajectory_reading({without}).empty());

  // The two indicators are paired by step: OPR's non-finite value at step 2000 drops that checkpoint only,
  // not the run, and the band forms from step 3000.
  report::RunRecord gap = run("gap", 0.03, 0.1);
  gap.trajectory = trajectory({{1000, 0.5, 0.4}, {2000, 0.05, 0.1}, {3000, 0.05, 0.1}, {4000, 0.5, 0.1}});
  gap.trajectory[1]["without_special"]["monotonicity_first_k"] = json::number(std::nan(""));
  gap.trajectory[3]["without_special"]["translation_invariance"] = 0.03;
  CHECK_THAT(report::trajectory_reading({gap}), Contains("here): gap from step 3000."));

  // A bad trajectory names its file and step.
  report::RunRecord bad = run("bad", 0.05, 0.1);
  bad.run_dir = "runs/bad";
  bad.trajectory = trajectory({{1000, 0.05, 0.1}});
  bad.trajectory[0]["without_special"] = json::Value::object();
  CHECK_THROWS_WITH(report::trajectory_reading({bad}),
                    Contains("runs/bad/analysis/indicator_trajectory.json: steps[0] lacks \"step\" or "
                             "\"without_special\".\"translation_invariance\""));
}
