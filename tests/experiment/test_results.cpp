// experiment/results.h: a task's figures gathered from a fine-tuning's
// results.json, at the best learning rate or averaged over all of them (the
// locality/symmetry paper's Tables 1, 3, 7), and the word-swap probes' Δ
// against their original (its Table 2). Every expected value is worked by
// hand from the numbers written here.
#include <cmath>
#include <filesystem>

#include "base/file_io.h"
#include "base/json.h"
#include "experiment/results.h"
#include "tests/experiment/fixtures.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {

// One finished run's line: accuracies (fractions) on the main dev set and two probes.
json::Value run_line(int64_t seed, double dev, double shuffled, double original) {
  json::Value sets = json::Value::object(), line = json::Value::object();
  auto set = [](double a) {
    json::Value s = json::Value::object();
    s["accuracy"] = a;
    return s;
  };
  sets["dev"] = set(dev);
  sets["dev_shuffle_sr"] = set(shuffled);
  sets["dev_sr_original"] = set(original);
  line["seed"] = seed;
  line["finished"] = true;
  line["best"] = sets;
  line["best_score"] = dev;
  return line;
}

}  // namespace

TEST_CASE("results: a task's figure at the best learning rate or over all of them, Δ run by run", "[experiment]") {
  test::TempDir dir("results");
  // Two learning rates, two seeds each. lr 1e-4: dev 0.80, 0.90 (mean 85); lr 3e-4: dev 0.60, 0.70 (mean 65).
  json::Value results = json::Value::object(), rates = json::Value::array();
  auto rate = [](double lr, std::vector<json::Value> lines) {
    json::Value r = json::Value::object(), runs = json::Value::array();
    for (auto& l : lines) runs.push_back(l);
    r["lr"] = lr;
    r["runs"] = runs;
    return r;
  };
  // Seeds 42 and 43 at both; seed 44 finished at 3e-4 only.
  rates.push_back(rate(1e-4, {run_line(42, 0.80, 0.10, 0.95), run_line(43, 0.90, 0.30, 0.85)}));
  rates.push_back(rate(3e-4, {run_line(42, 0.60, 0.20, 0.70), run_line(43, 0.70, 0.40, 0.60),
                              run_line(44, 0.10, 0.10, 0.10)}));
  results["learning_rates"] = rates;
  results["best_lr"] = 1e-4;
  results["select_epoch"] = "best";
  std::filesystem::create_directories(dir / "runs/a/finetune/rte");
  write_file_atomic(dir / "runs/a/finetune/rte/results.json", json::dump(results));

  experiment::Plan plan;
  plan.out = dir.path;
  plan.names = {"a"};
  plan.configs.resize(1);
  experiment::FinetuneTask rte;
  rte.name = "rte";
  rte.task = "rte";
  rte.stand_in = "roles";
  plan.finetune.push_back(rte);

  auto values = [&](const std::string& key) {
    const std::vector<experiment::RunResults> runs = experiment::gather_results(plan);
    const std::optional<experiment::Figure> f = experiment::figure(runs.at(0), key, plan);
    REQUIRE(f.has_value());
    return f->values;
  };
  auto near = [](const std::vector<double>& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < got.size(); ++k) CHECK(got[k] == Approx(want[k]).margin(1e-9));
  };
  // The best learning rate (1e-4) alone: 80, 90 percent.
  near(values("rte.accuracy"), {80, 90});
  // No task data in the run's folder: no chance level to hold a row against.
  CHECK(std::isnan(experiment::gather_results(plan).at(0).tasks.at("rte").chance));
  // The stand-in's dev set in RTE's layout, 3 of its 5 labels "entailment": always answering that scores 60%.
  std::filesystem::create_directories(dir / "runs/a/tasks/roles");
  const char* rte_header = "index\tsentence1\tsentence2\tlabel\n";
  write_file_atomic(dir / "runs/a/tasks/roles/train.tsv", std::string(rte_header) + "0\ta\tb\tentailment\n");
  write_file_atomic(dir / "runs/a/tasks/roles/dev.tsv",
                    std::string(rte_header) + "0\ta\tb\tentailment\n1\tc\td\tnot_entailment\n2\te\tf\tentailment\n"
                                              "3\tg\th\tnot_entailment\n4\ti\tj\tentailment\n");
  CHECK(experiment::gather_results(plan).at(0).tasks.at("rte").chance == Approx(60.0));
  // Shuffle-SR against its original, run by run: 10 - 95, 30 - 85.
  near(values("rte.dev_shuffle_sr.accuracy.delta.dev_sr_original"), {-85, -55});
  // Against the main dev set: 10 - 80, 30 - 90.
  near(values("rte.dev_shuffle_sr.accuracy.delta"), {-70, -60});
  // Averaged over the learning rates: a learning rate is not a replicate, so each seed's mean over the
  // two rates, seed 44 (one rate only) left out: seed 42 (80 + 60) / 2 = 70, seed 43 (90 + 70) / 2 = 80;
  // mean 75, sample std sqrt(2 * 5^2 / 1) = 7.07 over the two seeds.
  plan.average_learning_rates = true;
  near(values("rte.accuracy"), {70, 80});
  const std::vector<experiment::RunResults> runs = experiment::gather_results(plan);
  const experiment::Figure f = *experiment::figure(runs.at(0), "rte.accuracy", plan);
  CHECK(f.mean() == Approx(75));
  CHECK(f.std() == Approx(std::sqrt(50.0)));
  // Δ per seed: 42 ((10 - 95) + (20 - 70)) / 2 = -67.5; 43 ((30 - 85) + (40 - 60)) / 2 = -37.5.
  near(values("rte.dev_shuffle_sr.accuracy.delta.dev_sr_original"), {-67.5, -37.5});
  // A Δ against a set the task does not have is absent, not a number.
  CHECK_FALSE(experiment::figure(runs.at(0), "rte.dev_shuffle_sr.accuracy.delta.dev_nothing", plan).has_value());

  // A line without its seed cannot be averaged per seed: said, with the file.
  rates[0]["runs"][0].erase("seed");
  results["learning_rates"] = rates;
  write_file_atomic(dir / "runs/a/finetune/rte/results.json", json::dump(results));
  CHECK_THROWS_WITH(experiment::gather_results(plan),
                    Catch::Matchers::Contains("finetune/rte/results.json: a finished run of learning rate 0.0001 has no "
                                              "\"seed\""));
  // A field of the wrong type deep in the file is named with the file, not as a bare "json:" error.
  const std::string file = dir / "runs/a/finetune/rte/results.json";
  rates[0]["runs"][0]["seed"] = 42;
  rates[0]["runs"][1]["finished"] = "yes";
  results["learning_rates"] = rates;
  write_file_atomic(file, json::dump(results));
  CHECK_THROWS_WITH(experiment::gather_results(plan), file + ": json: expected a boolean, got a string");
  rates[0]["runs"][1]["finished"] = true;
  rates[0]["runs"][1]["best"] = json::Value::object();  // no dev set's figures
  results["learning_rates"] = rates;
  write_file_atomic(file, json::dump(results));
  CHECK_THROWS_WITH(values("rte.accuracy"), file + ": a finished run's \"best\" holds no dev set's figures");
  // A metric that is not a number is refused, named; one undefined there ("nan", as the codec writes
  // it) leaves the figure absent.
  rates[0]["runs"][1] = run_line(43, 0.90, 0.30, 0.85);
  rates[0]["runs"][1]["best"]["dev_shuffle_sr"]["accuracy"] = "lots";
  results["learning_rates"] = rates;
  write_file_atomic(file, json::dump(results));
  CHECK_THROWS_WITH(values("rte.dev_shuffle_sr.accuracy"), Catch::Matchers::Contains(file) &&
                                                               Catch::Matchers::Contains("the string \"lots\""));
  rates[0]["runs"][1]["best"]["dev_shuffle_sr"]["accuracy"] = "nan";
  results["learning_rates"] = rates;
  write_file_atomic(file, json::dump(results));
  const std::vector<experiment::RunResults> undefined = experiment::gather_results(plan);
  CHECK_FALSE(experiment::figure(undefined.at(0), "rte.dev_shuffle_sr.accuracy", plan).has_value());
}

TEST_CASE("results: Wang & Chen's figures of a run's own table and its attack", "[experiment]") {
  test::TempDir dir("results_wang_chen");
  experiment::RunResults run;
  run.config = "a";
  run.run_dir = dir / "a";
  experiment::Plan plan;
  for (const char* key : {"position_mae", "order_error", "components_90", "skip_perplexity_ratio"})
    CHECK_FALSE(experiment::figure(run, key, plan).has_value());  // not analysed: absent, not zero

  // The run's own entry is the one "table" names, not a control beside it.
  std::filesystem::create_directories(run.run_dir + "/analysis");
  auto analysis = [&](const std::string& file, const std::string& text) {
    write_file_atomic(run.run_dir + "/analysis/" + file, text);
  };
  analysis("position_regression.json", R"J({"table": "gpt2 (ape_learned)", "tables": {"fixed sinusoid": {"mae": 0.01},
      "gpt2 (ape_learned)": {"mae": 4.5, "baseline_mae": 16}, "random (Gaussian)": {"mae": 18}}})J");
  analysis("relative_order.json", R"J({"table": "gpt2 (ape_learned)", "tables": {"random (Gaussian)":
      {"error_rate": 0.5}, "gpt2 (ape_learned)": {"error_rate": 0.125}}})J");
  analysis("informativeness.json", R"J({"table": "gpt2 (ape_learned)", "tables": {"gpt2 (ape_learned)":
      {"components_90": 35}, "fixed sinusoid": {"components_90": 17}}})J");
  // Stride 2: the held-out loss rises by ln 3, so the perplexity is multiplied by 3 (stride 4 is not read).
  json::Value attack = json::parse(R"J({"objective": "mlm", "conditions": [
      {"factor": 4, "unattacked": {"loss": 2.0}, "attacked": {"loss": 5.0}},
      {"factor": 2, "unattacked": {"loss": 2.0}, "attacked": {"loss": 0}}]})J");
  attack["conditions"][1]["attacked"]["loss"] = 2.0 + std::log(3.0);
  analysis("skip_position_attack.json", json::dump(attack));
  CHECK(experiment::figure(run, "position_mae", plan)->mean() == 4.5);
  CHECK(experiment::figure(run, "order_error", plan)->mean() == 0.125);
  CHECK(experiment::figure(run, "components_90", plan)->mean() == 35);
  CHECK(experiment::figure(run, "skip_perplexity_ratio", plan)->mean() == Approx(3.0).epsilon(1e-12));
  analysis("relative_order.json", R"J({"tables": {"gpt2 (ape_learned)": {"error_rate": 0.125}}})J");
  CHECK_THROWS_WITH(experiment::figure(run, "order_error", plan),
                    Catch::Matchers::Contains("relative_order.json: no \"table\" naming the run's own entry"));
}
