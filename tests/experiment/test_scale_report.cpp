// experiment/disagreements.h and scale_report.h: the scale study's
// disagreements read with the paper's values from its tables, refused when
// malformed and where the plan cannot give them, and judged along a
// ladder (the trend's verdict and each step up it) on hand-made rungs whose
// statistics come from SciPy (scipy.stats.linregress and ttest_ind with
// equal_var=False, run by hand on the numbers below).
#include <cmath>
#include <filesystem>
#include <string>

#include "base/file_io.h"
#include "experiment/plan.h"
#include "experiment/scale_report.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

const std::string kStudy = std::string(ORDO_SOURCE_DIR) + "/configs/scale_study";

experiment::RungValues rung(const std::string& name, const std::string& moves, double flops, std::vector<double> v) {
  experiment::RungValues r;
  r.rung = name;
  if (!moves.empty()) r.moves = {moves};
  r.flops = flops;
  r.values = std::move(v);
  return r;
}

// A folder with a paper table of two configs and a disagreements.tsv of `lines` under its header.
std::string disagreements_in(const test::TempDir& dir, const std::string& lines) {
  write_file_atomic(dir / "paper_t.tsv", "config\tpaper_row\tfamily\tkind\tdirection_balance\trte.accuracy\n"
                                         "a\tA\tAPE\tlearned\t1.5\t60.0\nb\tB\tRPE\tlearned\t1.25\t-\n");
  write_file_atomic(dir / "disagreements.tsv",
                    "# a made-up study\nid\tfigure\trow\tminus\tpaper\tpaper_flops\tdisagreement\n" + lines);
  return dir / "disagreements.tsv";
}

// A study of one run config, a (the tiny model), and one disagreement, its
// direction balance against a paper's 1.5 in a table outside the folder's
// own paper_*.tsv (as the scale study reads Wang et al.'s).
void write_one_disagreement(const test::TempDir& dir) {
  write_file_atomic(dir / "a.json", R"({"extends": ")" + std::string(ORDO_SOURCE_DIR) + R"(/configs/tiny.json"})");
  write_file_atomic(dir / "ref.tsv", "config\tpaper_row\tfamily\tkind\tdirection_balance\na\tA\tAPE\tlearned\t1.5\n");
  write_file_atomic(dir / "disagreements.tsv", "id\tfigure\trow\tminus\tpaper\tpaper_flops\tdisagreement\n"
                                               "db\tdirection_balance\ta\t-\tref.tsv\t1e18\tthe APE's balance\n");
}

}  // namespace

// The values as Wang et al. 2021 print them (Tables 2-4 of "On Position
// Embeddings in BERT"), typed here from the paper: OPR first 20 of the learned
// APE 0.0208 and RPE 0.0048, AIV w/o [CLS] of the APE 0.0143, SST-2 93.0 and
// 92.6, SQuAD v1.1 F1 89.44 and 90.50.
TEST_CASE("the scale study's disagreements carry the paper's values", "[experiment][scale]") {
  const auto d = experiment::read_disagreements(kStudy + "/disagreements.tsv", kStudy);
  REQUIRE(d.size() == 6);
  CHECK(d[0].id == "mono_ape");
  CHECK(d[0].paper == Approx(0.0208).margin(1e-12));
  CHECK(d[1].paper == Approx(0.0048).margin(1e-12));
  CHECK(d[2].minus == "02_ape_learned");
  CHECK(d[2].paper == Approx(0.0048 - 0.0208).margin(1e-12));
  CHECK(d[3].paper == Approx(0.0143).margin(1e-12));
  CHECK(d[4].paper == Approx(93.0 - 92.6).margin(1e-9));
  CHECK(d[5].paper == Approx(90.50 - 89.44).margin(1e-9));
  for (const auto& x : d) CHECK(x.paper_flops == 2.2e19);
}

TEST_CASE("a disagreement's verdict and the steps up the ladder, on hand-made rungs", "[experiment][scale]") {
  experiment::Disagreement d;
  d.id = "mono";
  d.figure = "monotonicity_first_k";
  d.row = "a";
  d.paper = 0.02;
  d.paper_flops = 2.2e19;
  const auto row = experiment::judge_disagreement(
      d,
      {rung("r1", "", 1e13, {0.16, 0.15, 0.17}), rung("r2", "steps", 4e13, {0.10, 0.12, 0.11}),
       rung("r3", "depth", 8e13, {0.09, 0.07, 0.08})},
      0.05);
  // scipy.stats.linregress(log10 compute, value) over the nine points: slope
  // -0.08779381393630882 per tenfold, p 1.5543126045605682e-05.
  CHECK(row.judgement.trend.slope == Approx(-0.08779381393630882).epsilon(1e-9));
  CHECK(row.judgement.trend.p == Approx(1.5543126045605682e-05).epsilon(1e-6));
  CHECK(row.judgement.verdict == experiment::ScaleVerdict::closes);
  REQUIRE(row.moves.size() == 2);
  // Welch: r2 against r1, p 0.0036022326091040067; r3 against r2, p 0.021311641128756685.
  CHECK(row.moves[0].moves == std::vector<std::string>{"steps"});
  CHECK(row.moves[0].change == Approx(0.11 - 0.16).margin(1e-12));
  CHECK(row.moves[0].p == Approx(0.0036022326091040067).epsilon(1e-6));
  CHECK(row.moves[0].toward);
  CHECK(row.moves[1].moves == std::vector<std::string>{"depth"});
  CHECK(row.moves[1].change == Approx(0.08 - 0.11).margin(1e-12));
  CHECK(row.moves[1].p == Approx(0.021311641128756685).epsilon(1e-6));
  CHECK(row.moves[1].toward);
  // Where the ladder starts, r1 against the paper's 0.02: scipy.stats.ttest_1samp([0.16, 0.15, 0.17],
  // 0.02) p 0.001696354062790464, the mean's 95% interval [0.1351586228824967, 0.1848413771175033].
  CHECK(row.start == "r1");
  CHECK(row.at_start.p == Approx(0.001696354062790464).epsilon(1e-6));
  CHECK(row.start_mean.low == Approx(0.1351586228824967).epsilon(1e-9));
  CHECK(row.start_mean.high == Approx(0.1848413771175033).epsilon(1e-9));

  // Away from the paper: the same rungs read against a paper value above them.
  d.paper = 0.5;
  const auto away = experiment::judge_disagreement(
      d, {rung("r1", "", 1e13, {0.16, 0.15, 0.17}), rung("r2", "steps", 4e13, {0.10, 0.12, 0.11})}, 0.05);
  CHECK_FALSE(away.moves[0].toward);
  CHECK(away.judgement.verdict == experiment::ScaleVerdict::does_not_close);

  // A rung not run yet: its step has no change, and the verdict is over the rest.
  const auto partial = experiment::judge_disagreement(
      d, {rung("r1", "", 1e13, {0.16, 0.15, 0.17}), rung("r2", "steps", 4e13, {})}, 0.05);
  CHECK(std::isnan(partial.moves[0].change));
  CHECK(std::isnan(partial.moves[0].p));
  CHECK(partial.judgement.verdict == experiment::ScaleVerdict::cannot_tell);
  // The ladder starts at its smallest rung with runs.
  const auto later = experiment::judge_disagreement(
      d, {rung("r1", "", 1e13, {}), rung("r2", "steps", 4e13, {0.10, 0.12, 0.11})}, 0.05);
  CHECK(later.start == "r2");
  const auto none = experiment::judge_disagreement(d, {rung("r1", "", 1e13, {})}, 0.05);
  CHECK(none.start.empty());
  CHECK(std::isnan(none.at_start.p));

  // The same step of every disagreement is one family, and so is the change to real English. The first
  // step: row's and away's p 0.0036022 each, Holm 0.0072045 each; the second only row has (alone: its own
  // p). Real English {0.20, 0.26, 0.23} against r1 for both: scipy.stats.ttest_ind(equal_var=False) p
  // 0.04469059, below 0.05 alone, 0.08938 after Holm over the two. `none` has no step with runs and no
  // English: it stays out of every family.
  std::vector<experiment::ScaleRow> rows = {row, away, none};
  for (experiment::ScaleRow& r : rows)
    r.english_move = experiment::english_change(r, r.start.empty() ? std::vector<double>{}
                                                                   : std::vector<double>{0.20, 0.26, 0.23});
  CHECK(rows[0].english_move.p == Approx(0.04469059297007904).epsilon(1e-6));
  experiment::correct_moves(rows);
  CHECK(rows[0].moves[0].holm_p == Approx(2 * 0.0036022326091040067).epsilon(1e-6));
  CHECK(rows[1].moves[0].holm_p == Approx(2 * 0.0036022326091040067).epsilon(1e-6));
  CHECK(rows[0].moves[0].family == 2);
  CHECK(rows[0].moves[1].holm_p == Approx(0.021311641128756685).epsilon(1e-6));
  CHECK(rows[0].moves[1].family == 1);
  for (size_t k : {0, 1}) {
    CHECK(rows[k].english_move.holm_p == Approx(2 * 0.04469059297007904).epsilon(1e-6));
    CHECK(rows[k].english_move.family == 2);
  }
  CHECK((rows[2].moves.empty() && rows[2].english_move.family == 0 && std::isnan(rows[2].english_move.holm_p)));
}

TEST_CASE("a disagreements file is refused where it is wrong, naming the line", "[experiment][scale][errors]") {
  struct Case {
    const char* lines;
    const char* message;
  };
  const Case cases[] = {
      {"x\tdirection_balance\ta\t-\tpaper_t.tsv\t1e18\n", "7 tab-separated fields"},
      {"x\tnot_a_figure\ta\t-\tpaper_t.tsv\t1e18\tw\n", "'not_a_figure' is no figure"},
      {"x\tdirection_balance\ta\t-\tpaper_t.tsv\t1e18\tw\nx\tdirection_balance\tb\t-\tpaper_t.tsv\t1e18\tw\n",
       ":4: the id 'x' is used twice"},
      {"x\tdirection_balance\tc\t-\tpaper_t.tsv\t1e18\tw\n", "paper_t.tsv has no row 'c'"},
      {"x\tsymmetry_sd\ta\t-\tpaper_t.tsv\t1e18\tw\n", "has no column 'symmetry_sd'"},
      {"x\trte.accuracy\ta\tb\tpaper_t.tsv\t1e18\tw\n", "gives no value of rte.accuracy for b"},
      {"x\tdirection_balance\ta\t-\tpaper_t.tsv\t0\tw\n", "paper_flops '0' is not a positive number"},
      {"x\tdirection_balance\ta\ta\tpaper_t.tsv\t1e18\tw\n", "minus another one"},
      {"a/b\tdirection_balance\ta\t-\tpaper_t.tsv\t1e18\tw\n", "the id"},
      {"x\tdirection_balance\ta\t-\tpaper_none.tsv\t1e18\tw\n", ":3: the paper's table paper_none.tsv is no file"},
  };
  for (const Case& c : cases) {
    INFO(c.lines);
    test::TempDir dir("scale_disagreements");
    const std::string path = disagreements_in(dir, c.lines);
    CHECK_THROWS_WITH(experiment::read_disagreements(path, dir.path), Contains(c.message));
  }
  {
    test::TempDir dir("scale_disagreements_utf8");
    const std::string path = disagreements_in(dir, "x\tdirection_balance\ta\t-\tpaper_t.tsv\t1e18\tmade \xff up\n");
    CHECK_THROWS_WITH(experiment::read_disagreements(path, dir.path), Contains(":3: invalid UTF-8 at byte"));
  }
  test::TempDir dir("scale_disagreements_header");
  write_file_atomic(dir / "d.tsv", "id\tfigure\trow\n");
  CHECK_THROWS_WITH(experiment::read_disagreements(dir / "d.tsv", dir.path), Contains(":1: the header must read"));

  // Good lines read (with Windows line ends too): a difference's paper value is row minus minus.
  test::TempDir good("scale_disagreements_good");
  write_file_atomic(good / "paper_t.tsv", "config\tpaper_row\tfamily\tkind\tdirection_balance\n"
                                          "a\tA\tAPE\tlearned\t1.5\nb\tB\tRPE\tlearned\t1.25\n");
  write_file_atomic(good / "d.tsv", "# made up\r\nid\tfigure\trow\tminus\tpaper\tpaper_flops\tdisagreement\r\n"
                                    "x\tdirection_balance\ta\tb\tpaper_t.tsv\t-\tw\r\n");
  const auto d = experiment::read_disagreements(good / "d.tsv", good.path);
  REQUIRE(d.size() == 1);
  CHECK(d[0].paper == 0.25);
  CHECK(d[0].paper_flops == 0);
}

TEST_CASE("a plan's disagreements must follow a ladder and name its run configs", "[experiment][scale][errors]") {
  test::TempDir dir("scale_plan");
  write_file_atomic(dir / "a.json", R"({"extends": ")" + std::string(ORDO_SOURCE_DIR) + R"(/configs/tiny.json"})");
  disagreements_in(dir, "x\tdirection_balance\ta\t-\tpaper_t.tsv\t1e18\tw\n");
  std::filesystem::remove(dir / "paper_t.tsv");
  write_file_atomic(dir / "ref.tsv", "config\tpaper_row\tfamily\tkind\tdirection_balance\n"
                                     "a\tA\tAPE\tlearned\t1.5\nz\tZ\tAPE\tlearned\t1.0\n");
  write_file_atomic(dir / "disagreements.tsv", "id\tfigure\trow\tminus\tpaper\tpaper_flops\tdisagreement\n"
                                               "x\tdirection_balance\ta\t-\tref.tsv\t1e18\tw\n");
  experiment::PlanRequest request;
  request.folder = dir.path;
  request.out = "/nonexistent/out";
  write_file_atomic(dir / "experiment.json", R"({"stages": ["pretrain", "probe", "report"]})");
  CHECK_THROWS_WITH(experiment::make_plan(request), Contains("has none (\"ladder\")"));
  write_file_atomic(dir / "experiment.json", R"({"stages": ["pretrain", "probe", "report"], "ladder": {"rungs": [
      {"name": "r1"}, {"name": "r2", "moves": "steps", "set": ["train.steps=8000"]}]}})");
  CHECK_NOTHROW(experiment::make_plan(request));
  write_file_atomic(dir / "disagreements.tsv", "id\tfigure\trow\tminus\tpaper\tpaper_flops\tdisagreement\n"
                                               "x\tdirection_balance\ta\tz\tref.tsv\t1e18\tw\n");
  CHECK_THROWS_WITH(experiment::make_plan(request), Contains("disagreements.tsv:2 (x): 'z' is no run config"));
  // A task's figure: a task of the plan, which every step of the ladder fine-tunes on; a mean over
  // tasks where none is left out.
  write_file_atomic(dir / "ref.tsv", "config\tpaper_row\tfamily\tkind\tsst2.accuracy\tmrpc.accuracy\tglue.mean\n"
                                     "a\tA\tAPE\tlearned\t93.0\t80.0\t82.2\n");
  auto with_tasks = [&](const std::string& r2_tasks) {
    write_file_atomic(dir / "experiment.json", R"({"stages": ["pretrain", "tasks", "finetune", "report"],
        "finetune": {"config": ")" + std::string(ORDO_SOURCE_DIR) + R"(/configs/finetune/tiny.json",
                     "tasks": [{"name": "sst2", "task": "sst2", "stand_in": "sentiment"},
                               {"name": "rte", "task": "rte", "stand_in": "roles"}]},
        "ladder": {"rungs": [{"name": "r1"}, {"name": "r1_bf16", "checks": "r1", "tasks": ["rte"]},
                             {"name": "r2", "moves": "steps", "set": ["train.steps=8000"], "tasks": )" +
                                                     r2_tasks + "}]}}");
  };
  auto reading = [&](const std::string& figure) {
    write_file_atomic(dir / "disagreements.tsv", "id\tfigure\trow\tminus\tpaper\tpaper_flops\tdisagreement\n"
                                                 "x\t" + figure + "\ta\t-\tref.tsv\t1e18\tw\n");
  };
  with_tasks(R"(["sst2"])");
  reading("sst2.accuracy");
  CHECK_NOTHROW(experiment::make_plan(request));  // the check rung, no point of a trend, may leave it out
  with_tasks(R"(["rte"])");
  CHECK_THROWS_WITH(experiment::make_plan(request), Contains("disagreements.tsv:2 (x): 'sst2.accuracy' reads task "
                                                             "'sst2', which rung 'r2' leaves out of its tasks (rte)"));
  reading("mrpc.accuracy");
  CHECK_THROWS_WITH(experiment::make_plan(request), Contains("disagreements.tsv:2 (x): 'mrpc.accuracy' reads task "
                                                             "'mrpc', no task of " + dir.path));
  reading("glue.mean");
  CHECK_THROWS_WITH(experiment::make_plan(request), Contains("disagreements.tsv:2 (x): glue.mean averages every task, "
                                                             "and rung 'r2' fine-tunes on rte alone"));
  // Real-English runs are set beside disagreements, so they need some.
  std::filesystem::remove(dir / "disagreements.tsv");
  write_file_atomic(dir / "experiment.json", R"({"stages": ["pretrain", "probe", "report"], "ladder": {"rungs": [
      {"name": "r1"}, {"name": "r2", "moves": "steps", "set": ["train.steps=8000"]}]},
      "report": {"english": "../english"}})");
  CHECK_THROWS_WITH(experiment::make_plan(request), Contains("report.english sets real-English runs beside a ladder's "
                                                             "disagreements") && Contains("has no disagreements.tsv"));
}

// Reference runs 1, 2, 3: mean 2, s = 1, n = 3; t(0.975, 2 df) = 4.302653 (scipy.stats.t.ppf), so the
// interval of one more run is 2 -+ 4.302653 x sqrt(1 + 1/3) = [-2.968, +6.968].
TEST_CASE("a check rung's value against the prediction interval of the rung it checks", "[experiment][scale]") {
  const experiment::CheckValue in = experiment::check_value("a", "eval_accuracy", {1, 2, 3}, 6.9, 0.05);
  CHECK(in.interval.low == Approx(2 - 4.302653 * std::sqrt(4.0 / 3)).epsilon(1e-6));
  CHECK(in.interval.high == Approx(2 + 4.302653 * std::sqrt(4.0 / 3)).epsilon(1e-6));
  CHECK_FALSE(in.outside);
  CHECK(experiment::check_value("a", "eval_accuracy", {1, 2, 3}, 7.0, 0.05).outside);
  CHECK(experiment::check_value("a", "eval_accuracy", {1, 2, 3}, -3.0, 0.05).outside);
  // One reference run has no spread: no interval, never "outside".
  const experiment::CheckValue once = experiment::check_value("a", "eval_accuracy", {1}, 100, 0.05);
  CHECK(std::isnan(once.interval.low));
  CHECK_FALSE(once.outside);
  // Chance alone: P(X >= 2) for X ~ binomial(10, 0.05) = 1 - 0.95^10 - 10 x 0.05 x 0.95^9 = 0.0861384
  // (scipy.stats.binom.sf(1, 10, 0.05)); none outside is certain.
  CHECK(experiment::binomial_upper_tail(2, 10, 0.05) == Approx(0.0861384).epsilon(1e-6));
  CHECK(experiment::binomial_upper_tail(0, 10, 0.05) == Approx(1.0));
  CHECK(experiment::binomial_upper_tail(10, 10, 0.05) == Approx(std::pow(0.05, 10)).epsilon(1e-9));
}

TEST_CASE("the scale report sets a check rung's runs against the checked rung's spread", "[experiment][scale]") {
  test::TempDir dir("scale_check");
  write_one_disagreement(dir);
  write_file_atomic(dir / "experiment.json", R"({"stages": ["pretrain", "probe", "report"],
      "replicates": {"runs": ["a"], "seeds": [2, 3]}, "ladder": {"rungs": [
      {"name": "r1"}, {"name": "r2", "moves": "steps", "set": ["train.steps=8000", "train.precision=bf16"]},
      {"name": "r1_bf16", "checks": "r1", "set": ["train.precision=bf16"]}]}})");
  experiment::PlanRequest request;
  request.folder = dir.path;
  request.out = dir / "out";
  const experiment::Plan plan = experiment::make_plan(request);
  auto probed = [](const std::string& name, double balance, double accuracy) {
    experiment::RunResults r;
    r.config = name;
    r.probed = true;
    r.record.with_special = json::Value::object();
    r.record.with_special["direction_balance"] = balance;
    r.record.has_eval = true;
    r.record.eval_accuracy = accuracy;
    return r;
  };
  // r1's runs: direction balance 1.0, 1.1, 1.2 (mean 1.1, s 0.1), held-out accuracy 30, 31, 32 % (mean
  // 31, s 1); the check's interval half-width t(0.975, 2) sqrt(4/3) s = 4.9686 s. The bf16 run's 2.0 lies
  // outside [0.603, 1.597], its 33 % inside [26.03, 35.97]: 1 of 2 outside, and chance alone puts at
  // least one of two outside with p = 1 - 0.95^2 = 0.0975.
  experiment::RunResults r1 = probed("a=r1", 1.0, 0.30);
  r1.replicates = {probed("a=r1.seed2", 1.1, 0.31), probed("a=r1.seed3", 1.2, 0.32)};
  const experiment::RunResults check = probed("a=r1_bf16", 2.0, 0.33);
  const experiment::ReportSection s = experiment::scale_across_rungs(plan, {r1, check});
  CHECK_THAT(s.markdown, Contains("### Check: r1_bf16 against r1"));
  CHECK_THAT(s.markdown, Contains("| a | direction_balance | 1.1 ± 0.1 (3) | [0.603, 1.6] | 2 | outside |"));
  CHECK_THAT(s.markdown, Contains("| a | eval_accuracy | 31 ± 1 (3) | [26, 36] | 33 | yes |"));
  CHECK_THAT(s.markdown, Contains("Check 'r1_bf16' of rung 'r1': 1 of 2 figures outside the 95% prediction "
                                  "interval") &&
                             Contains("p = 0.0975") && Contains("(outside: a direction_balance)"));
  // Where the ladder starts: scipy.stats.ttest_1samp([1.0, 1.1, 1.2], 1.5) p 0.0202, interval [0.852, 1.35].
  CHECK_THAT(s.markdown, Contains("At r1: 1.1, 95% interval [0.852, 1.35] over 3 pretraining runs, against the "
                                  "paper's 1.5 (one-sample t, p = 0.0202): the disagreement stands there."));
  // Two disagreements tested there are one family. Against 1.4 and 1.3, scipy.stats.ttest_1samp gives p
  // 0.0351 and 0.0742; Holm over the two: 0.0351 x 2 = 0.0702 and max(0.0702, 0.0742) = 0.0742. Alone the
  // first would stand; corrected, neither does.
  write_file_atomic(dir / "ref2.tsv", "config\tpaper_row\tfamily\tkind\tdirection_balance\na\tA\tAPE\tlearned\t1.4\n");
  write_file_atomic(dir / "ref3.tsv", "config\tpaper_row\tfamily\tkind\tdirection_balance\na\tA\tAPE\tlearned\t1.3\n");
  write_file_atomic(dir / "disagreements.tsv", "id\tfigure\trow\tminus\tpaper\tpaper_flops\tdisagreement\n"
                                               "db4\tdirection_balance\ta\t-\tref2.tsv\t1e18\tat 1.4\n"
                                               "db3\tdirection_balance\ta\t-\tref3.tsv\t1e18\tat 1.3\n");
  const std::string family = experiment::scale_across_rungs(plan, {r1, check}).markdown;
  CHECK_THAT(family, Contains("paper's 1.4 (one-sample t, p = 0.0351; Holm over the 2 disagreements tested, 0.0702): "
                              "these runs do not rule out the paper's value."));
  CHECK_THAT(family, Contains("paper's 1.3 (one-sample t, p = 0.0742; Holm over the 2 disagreements tested, 0.0742): "
                              "these runs do not rule out the paper's value."));
  std::vector<experiment::ScaleRow> rows(3);
  rows[0].at_start.p = 0.01, rows[1].at_start.p = std::nan(""), rows[2].at_start.p = 0.02;
  experiment::correct_start_tests(rows);  // Holm over the two tested: 0.02 and max(0.02, 0.02)
  CHECK(rows[0].start_holm_p == Approx(0.02));
  CHECK(std::isnan(rows[1].start_holm_p));
  CHECK(rows[2].start_holm_p == Approx(0.02));
  CHECK((rows[0].start_family == 2 && rows[1].start_family == 0));
  // The check is no point of the trend: the disagreement's table has r1 and r2 only.
  CHECK_THAT(s.markdown, !Contains("r1_bf16 (10^"));
  // Each rung says its products' precision: r1 fp32 (unset, on the CPU), r2 bf16 as its set says; the
  // compute is tiny's 2.01e13 FLOPs at 4,000 steps (configs/scale_study/README.md), twice that at 8,000.
  CHECK_THAT(s.markdown, Contains("| r1 (10^13.3, fp32) |"));
  const experiment::ReportSection with_r2 = experiment::scale_across_rungs(plan, {r1, check, probed("a=r2", 1.3, 0.34)});
  CHECK_THAT(with_r2.markdown, Contains("| r1 (10^13.3, fp32) | r2 (10^13.6, bf16) |"));
  // Each rung's wall time from its runs' stages.json: r1's pretrainings took 6, 7 and 10 minutes and
  // each probe 6 s (1,398 s, 0.39 h); the check's run 4.9 minutes and its probe 6 s (300 s, 0.08 h).
  auto timed = [](experiment::RunResults r, double pretrain) {
    r.stages = json::parse(R"({"pretrain": {"seconds": )" + std::to_string(pretrain) +
                           R"(}, "probe": {"seconds": 6}})");
    return r;
  };
  experiment::RunResults t1 = timed(r1, 360);
  t1.replicates = {timed(r1.replicates[0], 420), timed(r1.replicates[1], 600)};
  experiment::RunResults timed_check = timed(check, 294);
  const std::string times = experiment::scale_across_rungs(plan, {t1, timed_check}).markdown;
  CHECK_THAT(times, Contains("### Time per rung"));
  CHECK_THAT(times, Contains("| r1 | 3 | 6.0-10.0 min | - | 0.39 h |"));
  CHECK_THAT(times, Contains("| r1_bf16 | 1 | 4.9 min | - | 0.08 h |"));
  CHECK_THAT(s.markdown, !Contains("Time per rung"));  // no run has finished pretraining there
  t1.run_dir = "runs/a=r1";
  t1.stages["probe"]["seconds"] = "6 s";
  CHECK_THROWS_WITH(experiment::scale_across_rungs(plan, {t1, timed_check}),
                    Contains("runs/a=r1/stages.json: stage 'probe': its \"seconds\" is missing or no number"));
  // Without the check's run there is nothing to judge.
  const experiment::ReportSection none = experiment::scale_across_rungs(plan, {r1});
  CHECK_THAT(none.markdown, Contains("Check 'r1_bf16' of rung 'r1': not testable yet"));
}

TEST_CASE("the scale report gives each rung's time, fine-tuning once every task has run", "[experiment][scale]") {
  test::TempDir dir("scale_times");
  write_one_disagreement(dir);
  write_file_atomic(dir / "experiment.json", R"({"stages": ["pretrain", "probe", "tasks", "finetune", "report"],
      "finetune": {"config": ")" + std::string(ORDO_SOURCE_DIR) + R"(/configs/finetune/tiny.json",
                   "tasks": [{"name": "sst2", "task": "sst2", "stand_in": "sentiment"},
                             {"name": "rte", "task": "rte", "stand_in": "roles"}]},
      "replicates": {"runs": ["a"], "seeds": [2, 3]}, "ladder": {"rungs": [
      {"name": "r1"}, {"name": "r2", "moves": "steps", "set": ["train.steps=8000"], "tasks": ["sst2"]},
      {"name": "r3", "moves": "steps", "set": ["train.steps=16000"]}]}})");
  experiment::PlanRequest request;
  request.folder = dir.path;
  request.out = dir / "out";
  const experiment::Plan plan = experiment::make_plan(request);
  auto run = [](const std::string& name, const std::string& stages) {
    experiment::RunResults r;
    r.config = name;
    r.stages = json::parse(stages);
    return r;
  };
  // r1: three runs, pretraining 5, 6 and 8 minutes; the first two fine-tuned on both tasks (1 + 2 and
  // 2 + 2 minutes), the third on sst2 alone so far: its fine-tuning is left out of the range, not
  // counted as 1 minute. Every stage: 300 + 60 + 120 + 360 + 120 + 120 + 480 + 60 = 1,620 s, 0.45 h.
  experiment::RunResults r1 = run("a=r1", R"({"pretrain": {"seconds": 300}, "finetune:sst2": {"seconds": 60},
                                             "finetune:rte": {"seconds": 120}})");
  r1.replicates = {run("a=r1.seed2", R"({"pretrain": {"seconds": 360}, "finetune:sst2": {"seconds": 120},
                                         "finetune:rte": {"seconds": 120}})"),
                   run("a=r1.seed3", R"({"pretrain": {"seconds": 480}, "finetune:sst2": {"seconds": 60}})")};
  // r2 fine-tunes on sst2 alone (its "tasks"): its run's fine-tuning is complete without rte.
  const experiment::RunResults r2 = run("a=r2", R"({"pretrain": {"seconds": 600}, "finetune:sst2": {"seconds": 120}})");
  // r3: one run still pretraining (no "pretrain" record): no row.
  const experiment::RunResults r3 = run("a=r3", R"({})");
  const std::string md = experiment::scale_across_rungs(plan, {r1, r2, r3}).markdown;
  CHECK_THAT(md, Contains("| rung | runs | pretraining / run | fine-tuning / run | every stage, all runs |"));
  CHECK_THAT(md, Contains("| r1 | 3 | 5.0-8.0 min | 3.0-4.0 min | 0.45 h |"));
  CHECK_THAT(md, Contains("| r2 | 1 | 10.0 min | 2.0 min | 0.20 h |"));
  CHECK_THAT(md, !Contains("| r3 | "));
}

TEST_CASE("a model pretrained elsewhere stands beside the ladder's row it names", "[experiment][scale]") {
  test::TempDir dir("scale_pretrained");
  write_file_atomic(dir / "a.json", R"({"extends": ")" + std::string(ORDO_SOURCE_DIR) + R"(/configs/tiny.json"})");
  write_file_atomic(dir / "b.json", R"({"extends": ")" + std::string(ORDO_SOURCE_DIR) + R"(/configs/tiny.json"})");
  write_file_atomic(dir / "ref.tsv", "config\tpaper_row\tfamily\tkind\tdirection_balance\trte.accuracy\n"
                                     "a\tA\tAPE\tlearned\t1.5\t60\nb\tB\tRPE\tlearned\t1.2\t61\n");
  write_file_atomic(dir / "disagreements.tsv", "id\tfigure\trow\tminus\tpaper\tpaper_flops\tdisagreement\n"
                                               "db\tdirection_balance\ta\t-\tref.tsv\t1e18\tthe APE's balance\n"
                                               "gap\tdirection_balance\ta\tb\tref.tsv\t1e18\ta gap\n"
                                               "rte\trte.accuracy\ta\t-\tref.tsv\t1e18\ta task\n");
  const std::string ladder = R"("ladder": {"rungs": [{"name": "r1"}, {"name": "r2", "moves": "steps",
      "set": ["train.steps=8000"]}]})";
  auto plan_with = [&](const std::string& report) {
    write_file_atomic(dir / "experiment.json", R"({"stages": ["pretrain", "probe", "report"], )" + ladder +
                                                   R"(, "report": )" + report + "}");
    experiment::PlanRequest request;
    request.folder = dir.path;
    request.out = dir / "out";
    return experiment::make_plan(request);
  };
  // Refused: a row that is no run config, a model without a probe folder.
  CHECK_THROWS_WITH(plan_with(R"({"pretrained": [{"name": "M", "probe": "../m/probe", "row": "c"}]})"),
                    Contains("report.pretrained[0]: row 'c' names no run config"));
  CHECK_THROWS_WITH(plan_with(R"({"pretrained": [{"name": "M", "row": "a"}]})"),
                    Contains("report.pretrained[0]: a name and a probe folder are required"));
  const experiment::Plan plan = plan_with(R"({"pretrained": [{"name": "M", "probe": "../m/probe", "row": "a"}]})");
  CHECK(plan.to_json()["report"]["pretrained"][0]["row"].as_string() == "a");
  experiment::RunResults a;
  a.config = "a=r1";
  a.probed = true;
  a.record.with_special = json::Value::object();
  a.record.with_special["direction_balance"] = 1.1;
  // Not probed yet: said, with the command.
  const experiment::ReportSection before = experiment::scale_across_rungs(plan, {a});
  CHECK_THAT(before.markdown, Contains("| M (layer 1) |") && Contains("M has not been probed"));
  CHECK_THAT(before.markdown, Contains("| db | ") && Contains("| not probed |"));
  // A rung with no runs yet has no column; it is named under the table, with the command.
  CHECK_THAT(before.markdown, Contains("| r1 (10^") && !Contains("| r2 (10^") &&
                                  Contains("Rungs with no finished run yet: r2 (`ordo experiment " + dir.path +
                                           " --out " + (dir / "out") + " --rungs r2` runs them)."));
  // Probed: its layer-1 value of the APE's own indicator stands beside the row; a gap between two run
  // configs and a task's figure have no value of one pretrained encoder.
  std::filesystem::create_directories(dir / "m/probe");
  std::filesystem::create_directories(dir / "out");  // the probe's path is from the output folder
  write_file_atomic(dir / "m/probe/indicators.json",
                    R"({"layer_1": {"with_special": {"direction_balance": 1.3}, "without_special": {}}})");
  const experiment::ReportSection after = experiment::scale_across_rungs(plan, {a});
  CHECK_THAT(after.markdown, !Contains("has not been probed"));
  CHECK_THAT(after.markdown, Contains("M (pretrained elsewhere; layer 1, beside a): 1.3 (the paper 1.5, r1 1.1)."));
  // Where the ladder's first rung has no runs, the model stands beside the smallest rung that has.
  experiment::RunResults a2 = a;
  a2.config = "a=r2";
  a2.record.with_special["direction_balance"] = 1.2;
  CHECK_THAT(experiment::scale_across_rungs(plan, {a2}).markdown, Contains("(the paper 1.5, r2 1.2)."));
  const auto d = experiment::read_disagreements(dir / "disagreements.tsv", dir.path);
  const json::Value indicators = json::parse_file(dir / "m/probe/indicators.json");
  CHECK(experiment::pretrained_value(d[0], plan.pretrained[0], indicators, 1, "f") == Approx(1.3));
  CHECK(std::isnan(experiment::pretrained_value(d[1], plan.pretrained[0], indicators, 1, "f")));
  CHECK(std::isnan(experiment::pretrained_value(d[2], plan.pretrained[0], indicators, 1, "f")));
  // Probed at another layer than the plan reads: named, with the file.
  CHECK_THROWS_WITH(experiment::pretrained_value(d[0], plan.pretrained[0], indicators, 2, "m/indicators.json"),
                    Contains("m/indicators.json: no \"layer_2\".\"with_special\" object"));
}
