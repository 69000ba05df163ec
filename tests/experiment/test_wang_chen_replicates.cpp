// experiment/wang_chen_report.h: the rows pretrained more than once, each of
// Wang & Chen's figures as mean ± std over the pretraining runs. Every
// expected value is worked by hand from the numbers written here.
#include <filesystem>

#include "base/file_io.h"
#include "base/json.h"
#include "experiment/wang_chen_report.h"
#include "tests/experiment/fixtures.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {

// A pretraining run whose analysis gave its own table `mae` and `error`, and whose
// classifier "mr" scored `accuracies` (fractions) over its fine-tuning seeds.
experiment::RunResults analysed(const test::TempDir& dir, const std::string& name, double mae, double error,
                                const std::vector<double>& accuracies) {
  experiment::RunResults r;
  r.config = name;
  r.run_dir = dir / name;
  std::filesystem::create_directories(r.run_dir + "/analysis");
  write_file_atomic(r.run_dir + "/analysis/position_regression.json",
                    "{\"table\": \"own\", \"tables\": {\"own\": {\"mae\": " + std::to_string(mae) +
                        "}, \"fixed sinusoid\": {\"mae\": 0}}}");
  write_file_atomic(r.run_dir + "/analysis/relative_order.json",
                    "{\"table\": \"own\", \"tables\": {\"own\": {\"error_rate\": " + std::to_string(error) + "}}}");
  r.tasks["mr"] = test::accuracy_task(accuracies);
  return r;
}

}  // namespace

TEST_CASE("Wang & Chen: a replicated row's figures over its pretraining runs", "[experiment]") {
  test::TempDir dir("wang_chen_replicates");
  experiment::Plan plan;
  auto classifier = [](const std::string& name, const std::string& init) {
    experiment::FinetuneTask t;
    t.name = t.task = name;
    t.init_positions = init;
    return t;
  };
  // "mr" is the classifier the replicates fine-tune; "cr" they do not, and "mr_random" is not started
  // from the run's table: neither has a column.
  plan.finetune = {classifier("mr", "run"), classifier("cr", "run"), classifier("mr_random", "none")};
  plan.replicate_tasks = {"mr"};
  // MAE 4, 6, 8: mean 6, sample std 2. Order error 0.1, 0.2, 0.3: mean 0.2, std 0.1. mr's means per
  // run 61 (60, 62), 70 and 79: mean 70, std 9; the first run's seeds 60 and 62: std sqrt(2) = 1.41.
  experiment::RunResults bert = analysed(dir, "bert", 4, 0.1, {0.60, 0.62});
  bert.replicates = {analysed(dir, "bert.seed2", 6, 0.2, {0.70}), analysed(dir, "bert.seed3", 8, 0.3, {0.79})};
  // A row pretrained once has no spread to show: no line.
  const experiment::RunResults once = analysed(dir, "sinusoid", 0, 0, {0.5});
  const experiment::TextTable t = experiment::wang_chen_replicates(plan, {bert, once});
  REQUIRE(t.rows.size() == 1);
  CHECK(t.header.back() == "mr: std over the first run's seeds");
  CHECK(t.rows[0] == std::vector<std::string>{"bert", "3", "6.00 ± 2.00", "0.200 ± 0.100", "—", "—",
                                              "70.00 ± 9.00", "± 1.41"});
  // A replicate whose analysis has not run yet leaves its figure out, and says how many runs it is over.
  std::filesystem::remove(bert.replicates[1].run_dir + "/analysis/position_regression.json");
  const experiment::TextTable u = experiment::wang_chen_replicates(plan, {bert});
  CHECK(u.rows[0][2] == "5.00 ± 1.41 (n = 2)");
}

TEST_CASE("Wang & Chen: a run still pretraining is left out of the tables", "[experiment]") {
  // A run mid-way through pretraining has a checkpoint (here one that holds no model: reading it would
  // fail) and no finished pretrain stage in its stages.json: the section must not read its table.
  test::TempDir dir("wang_chen_unfinished");
  experiment::RunResults training;
  training.config = "bert";
  training.run_dir = dir / "bert";
  std::filesystem::create_directories(training.run_dir + "/checkpoints/step_500");
  write_file_atomic(training.run_dir + "/checkpoints/step_500/trainer_state.json", "{\"step\": 500}");
  training.stages = json::parse("{\"probe\": {}}");
  CHECK_FALSE(training.pretrained());
  const experiment::WangChenFiles files = experiment::wang_chen_across_runs(experiment::Plan{}, {training});
  CHECK(files.markdown.find("No run has finished pretraining yet.") != std::string::npos);
  CHECK(files.files.empty());
  training.stages = json::parse("{\"pretrain\": {\"seconds\": 1}}");
  CHECK(training.pretrained());
}

TEST_CASE("Wang & Chen's Figures 1-3 read in numbers: the cosine profile and the components", "[experiment][wang_chen]") {
  probe::WangChenRow local, periodic;
  local.name = "bert";
  local.components_90 = 35;
  local.cosine_by_offset = {0.6, 0.3, 0.1, 0.0, 0.02, 0.01, 0.5};  // d = 7 is past half the positions: not read
  periodic.name = "sinusoid";
  periodic.components_90 = 17;
  periodic.cosine_by_offset = {0.8, 0.2, -0.3, 0.1, 0.4, 0.0, 0.0};
  const std::vector<std::string> lines = experiment::wang_chen_figure_readings({local, periodic});
  REQUIRE(lines.size() == 2);
  // Half of 7 offsets, rounded up: d = 1..4. bert: lowest 0.00 at d = 4, nothing after it within the half;
  // sinusoid: lowest -0.30 at d = 3, up again to 0.10 at d = 4 (+0.40).
  CHECK_THAT(lines[0], Catch::Contains("bert 0.60 at d = 1, lowest 0.00 at d = 4, then up again by 0.00; sinusoid "
                                       "0.80 at d = 1, lowest -0.30 at d = 3, then up again by 0.40."));
  CHECK_THAT(lines[1], Catch::Contains("for 90% of their sum (each row's first pretraining run): bert 35, sinusoid 17."));
}
