// Table 2's semantic-role swap across runs (experiment/swap_report.h): each
// row's accuracy on the originals, its change under the swap and the answers
// the swap changes, per pretraining run, and the verdict on the baseline's
// change. The expected test figures are SciPy's (scipy.stats.ttest_1samp(d, 0)
// and its confidence_interval(0.95)).
#include "experiment/swap_report.h"
#include "experiment/verdicts.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

// A run fine-tuned on subject_number: per seed its dev accuracy and the swap's figures (fractions).
experiment::RunResults run_with(const std::string& config, const std::vector<double>& original,
                                const std::vector<double>& swapped, const std::vector<double>& changed) {
  experiment::TaskResults t;
  t.select_epoch = "best";
  t.chance = 52;
  t.runs = json::Value::array();
  for (size_t k = 0; k < original.size(); ++k) {
    json::Value sets = json::Value::object(), dev = json::Value::object(), before = json::Value::object(),
                after = json::Value::object();
    dev["accuracy"] = 0.8;
    before["accuracy"] = original[k];
    after["accuracy"] = swapped[k];
    after["answers_changed"] = changed[k];
    sets["dev"] = dev, sets["dev_roles_original"] = before, sets["dev_roles_swapped"] = after;
    json::Value line = json::Value::object();
    line["best"] = sets;
    line["best_score"] = 0.8;
    t.runs.push_back(line);
  }
  t.present = true;
  experiment::RunResults r;
  r.config = config;
  r.tasks["subject_number"] = t;
  return r;
}

experiment::Plan plan_with_subject_number() {
  experiment::Plan plan;
  plan.folder = "f", plan.out = "o", plan.baseline = "bert", plan.alpha = 0.05;
  experiment::FinetuneTask task;
  task.name = task.stand_in = "subject_number";
  task.task = "sst2";
  plan.finetune.push_back(task);
  return plan;
}

}  // namespace

TEST_CASE("Table 2's role swap: the baseline's change over its pretraining runs, the answers it changes",
          "[experiment][verdicts]") {
  const experiment::Plan plan = plan_with_subject_number();
  experiment::PaperTable table;
  table.name = "table2";
  table.columns = {"subject_number.dev_roles_swapped.answers_changed"};
  REQUIRE(experiment::has_role_swaps({table}));
  CHECK_FALSE(experiment::has_role_swaps({}));
  // Three pretraining runs of bert, two seeds each: Original 71, 69, 73 and swapped 41, 44, 40, so
  // Δ = -30, -25, -33 (SciPy: mean -29.33, p = 0.006268, interval [-39.37, -19.29]).
  experiment::RunResults bert = run_with("bert", {0.70, 0.72}, {0.40, 0.42}, {0.1, 0.2});
  bert.replicates = {run_with("bert", {0.68, 0.70}, {0.45, 0.43}, {0.2, 0.2}),
                     run_with("bert", {0.74, 0.72}, {0.40, 0.40}, {0.3, 0.3})};
  const std::vector<experiment::RunResults> runs = {bert, run_with("reader", {0.9}, {0.9}, {0.95})};
  const experiment::ReportSection s = experiment::role_swaps_across_runs(plan, runs, {table});
  REQUIRE(s.verdicts.size() == 1);
  const experiment::SectionVerdict& v = s.verdicts[0];
  CHECK(v.key == "swap.subject_number");
  CHECK(v.judgement.verdict == experiment::Verdict::holds);
  CHECK(v.effect == "bert's Δ -29.3 [-39.4, -19.3] points on subject_number's swap (Student's t over 3 pretraining "
                    "runs, p = 0.00627)");
  // Each row: Original, Δ, answers changed and the fall a model blind to order would show (100 - 2 x Original).
  CHECK_THAT(s.markdown, Contains("| bert | 3 | 71.0 ± 2.0 | -29.3 ± 4.0 | 21.7 ± 7.6 | -42.0 ± 4.0 |"));
  CHECK_THAT(s.markdown, Contains("| reader | 1 | 90.0 | 0.0 | 95.0 | -80.0 |"));
  CHECK_THAT(s.markdown, Contains("Answers the swap changes, most first: reader 95.0%, bert 21.7%."));

  // A baseline at chance on the task (its dev accuracy not 5 points above the majority's) tests nothing.
  experiment::RunResults chance = bert;
  for (experiment::RunResults* r : {&chance, &chance.replicates[0], &chance.replicates[1]})
    for (json::Value& line : r->tasks["subject_number"].runs.as_array()) line["best"]["dev"]["accuracy"] = 0.53;
  const experiment::ReportSection at_chance = experiment::role_swaps_across_runs(plan, {chance}, {table});
  CHECK(at_chance.verdicts[0].judgement.verdict == experiment::Verdict::not_testable);
  CHECK_THAT(at_chance.verdicts[0].judgement.reason, Contains("accuracy at chance on subject_number"));
}
