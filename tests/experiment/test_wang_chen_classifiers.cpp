// experiment/wang_chen_classifiers.h: Table 3 and Figure 4 gathered from the
// classifiers' results.json, against values worked by hand from the numbers
// written here (made up, not the paper's).
#include <algorithm>
#include <filesystem>

#include "base/file_io.h"
#include "base/json.h"
#include "experiment/wang_chen_classifiers.h"
#include "tests/helpers.h"
#include "tests/plot/svg_check.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

// One finished seed: dev accuracy `accuracy` and the four bins' accuracies (negative: an empty bin).
json::Value seed_line(double accuracy, std::vector<double> bins) {
  json::Value line = json::Value::object(), sets = json::Value::object(), dev = json::Value::object();
  dev["accuracy"] = accuracy;
  sets["dev"] = dev;
  line["finished"] = true;
  line["best"] = sets;
  line["best_score"] = accuracy;
  json::Value by = json::Value::object(), list = json::Value::array();
  for (double b : bins) {
    json::Value bin = json::Value::object();
    bin["n"] = b < 0 ? 0 : 4;
    bin["accuracy"] = b < 0 ? json::Value() : json::Value(b);
    list.push_back(bin);
  }
  by["mean"] = 12.5;
  by["bins"] = list;
  line["best_by_length"] = json::Value::object();
  line["best_by_length"]["dev"] = by;
  return line;
}

void write_results(const std::string& path, const std::vector<json::Value>& lines) {
  json::Value results = json::Value::object(), rate = json::Value::object(), runs = json::Value::array();
  for (const json::Value& l : lines) runs.push_back(l);
  rate["lr"] = 1e-4;
  rate["runs"] = runs;
  results["learning_rates"] = json::Value::array();
  results["learning_rates"].push_back(rate);
  results["best_lr"] = 1e-4;
  results["select_epoch"] = "best";
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  write_file_atomic(path, json::dump(results));
}

experiment::FinetuneTask task(const std::string& name, const std::string& init, const std::string& column,
                              std::vector<std::string> runs = {}) {
  experiment::FinetuneTask t;
  t.name = name;
  t.task = "sst2";
  t.stand_in = "tense";
  t.init_positions = init;
  t.column = column;
  t.runs = runs;
  return t;
}

}  // namespace

TEST_CASE("Wang & Chen's Table 3 and Figure 4 from the classifiers' results", "[experiment][wang_chen]") {
  test::TempDir dir("table3");
  experiment::Plan plan;
  plan.out = dir.path;
  plan.names = {"a", "b"};
  plan.configs.resize(2);
  plan.finetune = {task("x", "run", "x"), task("y", "run", "y"), task("x_random", "none", "x", {"a"})};
  plan.length_figure = {"x", "y"};
  // Run a: x at 80 and 90 %, y at 60 and 70 %; run b: x alone; the random row: x alone.
  write_results(dir / "runs/a/finetune/x/results.json",
                {seed_line(0.80, {1.0, 0.5, -1, 0.75}), seed_line(0.90, {1.0, 1.0, 0.5, 0.25})});
  write_results(dir / "runs/a/finetune/y/results.json",
                {seed_line(0.60, {0.5, 0.5, 0.5, 0.5}), seed_line(0.70, {0.0, 1.0, 1.0, 0.0})});
  write_results(dir / "runs/a/finetune/x_random/results.json", {seed_line(0.50, {0.5, 0.5, 0.5, 0.5})});
  write_results(dir / "runs/b/finetune/x/results.json", {seed_line(0.75, {1, 1, 1, 1})});

  const experiment::WangChenFiles files = experiment::wang_chen_classifiers(plan, experiment::gather_results(plan));
  std::string table3;
  json::Value figure4;
  std::string svg;
  for (const report::OutputFile& f : files.files) {
    if (f.name == "wang_chen/table3.md") table3 = f.bytes;
    if (f.name == "wang_chen/figure4.json") figure4 = json::parse(f.bytes);
    if (f.name == "wang_chen/figure4.svg") svg = f.bytes;
  }
  INFO(table3);
  // Averages per seed: (80 + 60) / 2 = 70 and (90 + 70) / 2 = 80 -> 75.00 ± 7.07; a row without y has none.
  CHECK_THAT(table3, Contains("| a | 75.00 ± 7.07 | 85.00 ± 7.07 | 65.00 ± 7.07 |"));
  CHECK_THAT(table3, Contains("| b | — | 75.00 | — |"));
  CHECK_THAT(table3, Contains("| random | — | 50.00 | — |"));
  CHECK(table3.find("| random |") < table3.find("| a |"));  // the paper's order: random first
  CHECK_THAT(table3, Contains("| average length (words) |  | 12.5 | 12.5 |"));
  CHECK_THAT(table3, Contains("By the average, best first: a 75.00."));
  // Figure 4, run a: per seed the mean over x and y of each bin with examples, then over seeds:
  // seed 1: 75, 50, 50 (y alone), 62.5; seed 2: 50, 100, 75, 12.5 -> 62.5, 75, 62.5, 37.5.
  const double want[] = {62.5, 75, 62.5, 37.5};
  for (size_t b = 0; b < 4; ++b) CHECK(figure4["rows"]["a"][b]["mean"].as_number() == Approx(want[b]));
  CHECK(figure4["rows"]["random"][3]["mean"].as_number() == Approx(50));
  // The figure: a legend entry per row with a point, every text inside it.
  REQUIRE(!svg.empty());
  const svg_check::Element picture = svg_check::parse(svg);
  svg_check::check_texts_inside(picture, 13);
  for (const char* row : {"a", "b", "random"}) CHECK(svg_check::count_text(picture, row) == 1);
  CHECK_THAT(files.markdown, Contains("![Figure 4](wang_chen/figure4.svg)"));

  // A plan without init_positions tasks has neither.
  plan.finetune = {task("x", "", "x")};
  CHECK(experiment::wang_chen_classifiers(plan, experiment::gather_results(plan)).files.empty());
}
