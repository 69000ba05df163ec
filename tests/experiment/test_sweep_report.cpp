// The locality/symmetry paper's Figure 2 sweep (finetune.sweep, experiment/sweep_report.h):
// each encoder's locality and symmetry against Eq. 9 and Eqs. 7-8 written
// here as loops, the plan's expansion into fresh-model tasks, and the
// report's table and reading on accuracies this test chose.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "base/json.h"
#include "experiment/plan.h"
#include "experiment/sweep_report.h"
#include "tests/helpers.h"
#include "tests/plot/svg_check.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

// Eq. 9 by hand: delta_ij = softmax_j(a_ij), a_ij = -s w (j - i)^2 for j > i, -w (j - i)^2 otherwise;
// Eq. 7: the mean over rows of sum_j delta_ij / 2^|i - j|.
double locality_by_hand(double w, double s, int64_t L) {
  double total = 0;
  for (int64_t i = 0; i < L; ++i) {
    std::vector<double> a(L);
    double z = 0;
    for (int64_t j = 0; j < L; ++j) z += (a[j] = std::exp(-(j > i ? s : 1.0) * w * double((j - i) * (j - i))));
    for (int64_t j = 0; j < L; ++j) total += a[j] / z / std::pow(2.0, std::fabs(double(i - j)));
  }
  return total / double(L);
}

// A run whose task `name` finished with these accuracies (fractions), one line per seed.
void finished(experiment::RunResults& run, const std::string& name, const std::vector<double>& accuracies) {
  experiment::TaskResults t;
  t.present = true;
  t.select_epoch = "best";
  t.runs = json::Value::array();
  for (double a : accuracies) {
    json::Value line = json::Value::object();
    line["best_score"] = a;
    t.runs.push_back(line);
  }
  run.tasks[name] = t;
}

}  // namespace

TEST_CASE("sweep: each encoder's locality from Eq. 9 and Eq. 7 by hand, s = 1 symmetric and s != 1 not",
          "[experiment][sweep]") {
  for (double w : {1e-4, 0.011, 0.3, 10.0}) {
    INFO(w);
    const auto [locality, symmetry] = experiment::attenuated_locality_symmetry(w, 1.0, 64);
    CHECK(locality == Approx(locality_by_hand(w, 1.0, 64)).epsilon(1e-12));
    CHECK(symmetry == 1.0);
  }
  const auto [locality, symmetry] = experiment::attenuated_locality_symmetry(0.02, 4.0, 64);
  CHECK(locality == Approx(locality_by_hand(0.02, 4.0, 64)).epsilon(1e-12));
  CHECK(symmetry < 0.9);
}

TEST_CASE("sweep: the plan makes a fresh positional-only encoder per (w, s) and checks the spec",
          "[experiment][plan][sweep]") {
  test::TempDir dir("plan_sweep");
  dir.write("a.json", std::string(R"({"extends": ")") + ORDO_SOURCE_DIR + R"(/configs/tiny.json"})");
  const std::string config = std::string(ORDO_SOURCE_DIR) + "/configs/finetune/positional_encoder.json";
  auto plan_of = [&](const std::string& sweep) {
    dir.write("experiment.json", R"({"stages": ["pretrain", "tasks", "finetune"], "finetune": {"set": )"
                                 R"(["train.learning_rates=[9e-5]", "train.max_seq_length=64"], "tasks": [{"name": "rte", "task": "rte", )"
                                 R"("stand_in": "roles"}], "sweep": )" + sweep + "}}");
    experiment::PlanRequest request;
    request.folder = dir.path;
    request.out = dir / "out";
    return experiment::make_plan(request);
  };
  const experiment::Plan plan = plan_of(R"({"run": "a", "stand_in": "subject_number", "config": ")" + config +
                                        R"(", "locality_w": [0.011, 3], "symmetry_w": 0.02, "symmetry_s": [0.5, 2]})");
  REQUIRE(plan.finetune.size() == 5);
  const experiment::FinetuneTask* t = plan.task("sweep_w0p011_s1");
  REQUIRE(t != nullptr);
  CHECK((t->sweep && t->sweep_w == 0.011 && t->sweep_s == 1.0));
  CHECK(t->init_positions == "none");
  CHECK(t->runs == std::vector<std::string>{"a"});
  CHECK(t->config["model"]["pe_options"]["w"].as_number() == 0.011);
  CHECK(t->config["model"]["pe_options"]["ablate"].as_string() == "contextual");
  // The sweep's own config, not the plan's finetune.set: its learning rate stays 2e-3.
  CHECK(t->config["train"]["learning_rates"][0].as_number() == 2e-3);
  CHECK(plan.task("sweep_w3_s1") != nullptr);
  CHECK(plan.task("sweep_w0p02_s0p5")->config["model"]["pe_options"]["s"].as_number() == 0.5);
  CHECK_FALSE(plan.task("rte")->sweep);

  // A pretraining replicate of the sweep's run fine-tunes its tasks, not the sweep: its encoders are fresh models.
  std::string with_replicate = read_file(dir / "experiment.json");
  with_replicate.insert(with_replicate.rfind('}'), R"(, "replicates": {"runs": ["a"], "seeds": [2]})");
  dir.write("experiment.json", with_replicate);
  const test::CommandResult listed = test::run_ordo("experiment " + dir.path + " --out " + (dir / "out") + " --list");
  INFO(listed.output);
  REQUIRE(listed.exit_code == 0);
  const std::string replicate = listed.output.substr(listed.output.find("a.seed2"));
  CHECK_THAT(replicate, Contains("finetune:rte -") && !Contains("sweep_"));
  CHECK_THAT(listed.output.substr(0, listed.output.find("a.seed2")), Contains("finetune:sweep_w0p011_s1 -"));

  CHECK_THROWS_WITH(plan_of(R"({"run": "b", "stand_in": "subject_number", "config": ")" + config + R"("})"),
                    Contains("run 'b' is no run config"));
  CHECK_THROWS_WITH(plan_of(R"({"run": "a", "stand_in": "roles", "config": ")" + config + R"("})"),
                    Contains("stand_in 'roles' is not a synthetic task in sst2's layout"));
  CHECK_THROWS_WITH(plan_of(R"({"run": "a", "stand_in": "tense", "config": ")" + config +
                            R"(", "locality_w": [0.1, 0.1]})"),
                    Contains("encoder sweep_w0p1_s1 is named twice"));
  CHECK_THROWS_WITH(plan_of(R"({"run": "a", "stand_in": "tense", "config": ")" + config + R"(", "locality_w": [0, 1]})"),
                    Contains("w must be positive"));
  CHECK_THROWS_WITH(plan_of(R"({"run": "a", "stand_in": "tense", "config": ")" + config + R"("})"),
                    Contains("finetune.sweep: give locality_w, symmetry_s or both"));
  CHECK_THROWS_WITH(plan_of(R"({"run": "a", "stand_in": "tense", "config": ")" + config +
                            R"(", "locality_w": [0.1, 1], "symmetry_s": [2]})"),
                    Contains("a sweep's curve needs at least two points"));
  CHECK_THROWS_WITH(plan_of(R"({"run": "a", "stand_in": "tense", "config": "none.json", "locality_w": [1, 2]})"),
                    Contains("finetune.sweep: config 'none.json' is no file"));
  dir.write("other.json", R"({"model": {"pe": "alibi"}})");
  CHECK_THROWS_WITH(plan_of(R"({"run": "a", "stand_in": "tense", "config": "other.json", "locality_w": [1, 2]})"),
                    Contains("must make the encoder model.pe attenuated"));
}

TEST_CASE("sweep: the report's table, panels and reading from the encoders' accuracies", "[experiment][sweep]") {
  experiment::Plan plan;
  plan.names = {"bert"};
  auto encoder = [&](double w, double s) {
    experiment::FinetuneTask t;
    t.name = t.column = "e" + std::to_string(plan.finetune.size());  // no '.': a figure key splits there
    t.task = "sst2";
    t.stand_in = "subject_number";
    t.runs = {"bert"};
    t.init_positions = "none";
    t.sweep = true;
    t.sweep_w = w;
    t.sweep_s = s;
    t.config = json::parse(R"({"train": {"max_seq_length": 64}})");
    plan.finetune.push_back(t);
    return t.name;
  };
  experiment::RunResults run;
  run.config = "bert";
  // Locality rises with w (0.049, 0.186, 0.595) and so do the accuracies: Spearman's rho 1; of the
  // 3! = 6 arrangements only this one reaches it, so the exact two-sided p = 2/6: the paper's direction,
  // not significant.
  finished(run, encoder(1e-4, 1), {0.70, 0.72});
  finished(run, encoder(0.011, 1), {0.80, 0.82});
  finished(run, encoder(0.3, 1), {0.90, 0.90});
  encoder(3, 1);  // not finished: in the table without a figure
  const experiment::ReportSection files = experiment::sweep_across_encoders(plan, {run});
  INFO(files.markdown);
  CHECK_THAT(files.markdown, Contains("| e1 | 0.011 | 1 | 0.186 | 1.000 | 81.00 ± 1.41 | 2 |"));
  CHECK_THAT(files.markdown, Contains("| e3 | 3 | 1 | 0.955 | 1.000 | - | 0 |"));
  CHECK_THAT(files.markdown, Contains("Middle (s = 1): Spearman's rho of accuracy with locality 1.00 (p = 0.333 by "
                                      "exact permutation, n = 3 encoders); the best 90.00 at locality 0.595."));
  CHECK_THAT(files.markdown, Contains("Verdict on \"accuracy rises with locality\": consistent, not significant;"));
  // Only the encoder at locality 0.186 lies in [0.15, 0.3].
  CHECK_THAT(files.markdown, Contains("Right (locality in [0.15, 0.3]): 1 encoder(s) finished, too few to read. "
                                      "Verdict: not testable here."));
  // The figure: a panel for the middle (three finished encoders), one for the right (one), legible at 1400 px.
  const auto figure = std::find_if(files.files.begin(), files.files.end(),
                                   [](const report::OutputFile& f) { return f.name == "sweep/figure2.svg"; });
  REQUIRE(figure != files.files.end());
  const svg_check::Element svg = svg_check::parse(figure->bytes);
  svg_check::check_texts_inside(svg, 13);
  CHECK(svg_check::view_box(svg).first <= 1400);
  CHECK(svg_check::count_text(svg, "s = 1: accuracy against locality") == 1);
  CHECK(svg_check::count_text(svg, "locality 0.15-0.3: accuracy against symmetry") == 1);
  CHECK_THAT(files.html, Contains("<img src=\"sweep/figure2.svg\""));
}
