// The locality/symmetry paper's Table 9 across runs (experiment/layer_report.h):
// section 4.1's two findings tested over the baseline's pretraining runs, each
// run's lead the mean over the tasks of one attention's accuracy minus the
// other's. The expected t-test figures are SciPy's (scipy.stats.ttest_1samp(d,
// 0) and its confidence_interval(0.95)), on leads worked by hand below.
#include <filesystem>
#include <map>
#include <string>
#include <tuple>

#include "base/file_io.h"
#include "experiment/layer_report.h"
#include "experiment/verdicts.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

const std::string kTable9 = std::string(ORDO_SOURCE_DIR) + "/configs/papers/locality_symmetry/paper_table9.tsv";

// A run whose layers stage wrote these accuracies: task -> (both, contextual, positional).
experiment::RunResults probed_run(const test::TempDir& dir, const std::string& name,
                                  const std::map<std::string, std::tuple<double, double, double>>& accuracies) {
  json::Value tasks = json::Value::object();
  for (const auto& [task, a] : accuracies) {
    json::Value attentions = json::Value::object();
    const auto& [both, contextual, positional] = a;
    for (const auto& [attention, accuracy] :
         {std::pair{"both", both}, std::pair{"contextual", contextual}, std::pair{"positional", positional}}) {
      json::Value layer = json::Value::object();
      layer["layer"] = 1;
      layer["report_accuracy"] = accuracy;
      json::Value entry = json::Value::object();
      entry["accuracy"] = accuracy;
      entry["by_layer"] = json::Value::array();
      entry["by_layer"].push_back(layer);
      attentions[attention] = entry;
    }
    tasks[task]["attentions"] = attentions;
  }
  json::Value probing = json::Value::object();
  probing["tasks"] = tasks;
  std::filesystem::create_directories(dir / (name + "/layers"));
  write_file_atomic(dir / (name + "/layers/probing.json"), json::dump(probing, 2));
  experiment::RunResults r;
  r.config = name;
  r.run_dir = dir / name;
  return r;
}

// Positional minus contextual on tree_depth, top_constituents, bigram_shift and contextual minus
// positional on tense, object_number, in points, as (syntactic leads, semantic leads).
experiment::RunResults bert_run(const test::TempDir& dir, const std::string& name, std::tuple<double, double, double> syn,
                                std::pair<double, double> sem) {
  const auto& [depth, constituents, shift] = syn;
  return probed_run(dir, name,
                    {{"tree_depth", {0.6, 0.5, 0.5 + depth / 100}},
                     {"top_constituents", {0.8, 0.78, 0.78 + constituents / 100}},
                     {"bigram_shift", {0.6, 0.5, 0.5 + shift / 100}},
                     {"tense", {0.8, 0.72 + sem.first / 100, 0.72}},
                     {"object_number", {0.8, 0.79 + sem.second / 100, 0.79}}});
}

const experiment::SectionVerdict& verdict(const experiment::ReportSection& s, const std::string& key) {
  for (const auto& v : s.verdicts)
    if (v.key == key) return v;
  FAIL("no verdict " << key);
  return s.verdicts.front();
}

}  // namespace

TEST_CASE("Table 9: section 4.1's findings tested over the baseline's pretraining runs", "[experiment][verdicts]") {
  const test::TempDir dir("layer_report");
  const experiment::PaperTable paper = experiment::read_paper_table(kTable9);
  experiment::Plan plan;
  plan.baseline = "bert";
  plan.alpha = 0.05;
  // Syntactic leads per run: (10 + 2 + 5) / 3 = 5.667, (8 + 1 + 3) / 3 = 4, (6 + 3 + 6) / 3 = 5
  // (SciPy: mean 4.889, p = 0.009672, interval [2.805, 6.973]). Semantic: (-2 + 1) / 2 = -0.5,
  // (1 + 0) / 2 = 0.5, (-1 + 3) / 2 = 1 (mean 0.333, p = 0.5286, interval [-1.564, 2.231]).
  experiment::RunResults bert = bert_run(dir, "bert", {10, 2, 5}, {-2, 1});
  bert.replicates = {bert_run(dir, "bert.seed2", {8, 1, 3}, {1, 0}), bert_run(dir, "bert.seed3", {6, 3, 6}, {-1, 3})};
  // TUPE, one run: described by the counts, no verdict of its own.
  const experiment::RunResults tupe = bert_run(dir, "tupe", {-5, -5, -5}, {-5, -5});
  const experiment::ReportSection s = experiment::layer_probing_across_runs(plan, {bert, tupe}, &paper);

  const auto& syntactic = verdict(s, experiment::kLayersSyntactic);
  CHECK(syntactic.judgement.verdict == experiment::Verdict::holds);
  CHECK(syntactic.effect == "bert's positional minus contextual accuracy, mean of tree_depth, top_constituents, "
                            "bigram_shift, +4.9 [+2.8, +7.0] points (Student's t over 3 pretraining runs, p = 0.00967)");
  const auto& semantic = verdict(s, experiment::kLayersSemantic);
  CHECK(semantic.judgement.verdict == experiment::Verdict::consistent);
  CHECK(semantic.effect == "bert's contextual minus positional accuracy, mean of tense, object_number, +0.3 "
                           "[-1.6, +2.2] points (Student's t over 3 pretraining runs, p = 0.529)");
  CHECK_THAT(s.markdown, Contains("bert's pretraining runs: +5.7, +4.0, +5.0 points"));
  CHECK_THAT(s.markdown, Contains("tupe, positional above contextual on the syntactic tasks (tree_depth, "
                                  "top_constituents, bigram_shift): the paper on 3 of 3, ordo on 0 of 3."));

  // The baseline probed once (its replicates not yet): nothing to test over; not probed at all: not yet.
  experiment::RunResults once = bert;
  once.replicates = {experiment::RunResults{}};
  once.replicates[0].run_dir = dir / "bert.seed4";  // no layers/probing.json
  const experiment::ReportSection one = experiment::layer_probing_across_runs(plan, {once}, &paper);
  CHECK(verdict(one, experiment::kLayersSyntactic).judgement.verdict == experiment::Verdict::not_testable);
  CHECK_THAT(verdict(one, experiment::kLayersSyntactic).judgement.reason,
             Contains("one pretraining run of bert probed layer by layer: no replicate to test over"));
  const experiment::ReportSection none = experiment::layer_probing_across_runs(plan, {tupe}, &paper);
  CHECK_THAT(verdict(none, experiment::kLayersSemantic).judgement.reason,
             Contains("no pretraining run of bert probed layer by layer yet"));
}
