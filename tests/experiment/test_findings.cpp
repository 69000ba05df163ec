// experiment/findings.h: a paper's claims read and checked, each judged
// from hand-made runs by the rules of SPEC §4, and every report's findings
// gathered into one table. Every expected effect, interval and p below is
// worked by hand or taken from scipy.stats.ttest_ind(equal_var=False) (its
// confidence_interval(0.95)) on the numbers written here.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <tuple>

#include "base/file_io.h"
#include "base/json.h"
#include "experiment/findings.h"
#include "experiment/tables.h"
#include "tests/experiment/fixtures.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

// A run whose task "rte" scored `accuracies` (fractions) over its seeds.
experiment::RunResults run_scoring(const std::string& config, const std::vector<double>& accuracies) {
  experiment::RunResults r;
  r.config = config;
  r.pe = "ape_learned";
  r.tasks["rte"] = test::accuracy_task(accuracies);
  return r;
}

// The plan of these tests: "rte" against the baseline "base".
experiment::Plan plan_with_rte() { return test::plan_with_rte("base"); }

const char* kTable = "config\tpaper_row\tfamily\tkind\trte.accuracy\n"
                     "base\tB\tAPE\tlearned\t60.0\nfar\tF\tRPE\tlearned\t70.0\n"
                     "near\tN\tRPE\tsinusoid\t61.0\ndip\tD\tAPE\tfixed\t62.0\n";

const char* kClaims = "# A made-up paper (no venue)\n"
                      "id\titem\tclaim\ttest\tcaveat\n"
                      "far\tTable t\tF beats B\trow t rte.accuracy far\t-\n"
                      "fam\tTable t\tRPEs beat APEs\tfamilies t rte.accuracy RPE APE\tstand-in: roles\n"
                      "pair\tTable t\tD beats N\tpair t rte.accuracy near dip\t-\n"
                      "order\tTable t\tthe paper's order\trank t rte.accuracy\t-\n"
                      "sweep\tFigure 2\taccuracy rises with locality\tsection sweep.locality\t-\n"
                      "mt\tTable 6\ttranslation improves\tuntested needs WMT\t-\n";

// A paper table (paper_NAME.tsv) and a claims.tsv written into `dir` and read back.
struct Written {
  std::vector<experiment::PaperTable> tables;
  experiment::Claims claims;
};
Written written(const test::TempDir& dir, const std::string& name, const std::string& table,
                const std::string& claims) {
  write_file_atomic(dir / ("paper_" + name + ".tsv"), table);
  write_file_atomic(dir / "claims.tsv", claims);
  return {{experiment::read_paper_table(dir / ("paper_" + name + ".tsv"))},
          experiment::read_claims(dir / "claims.tsv")};
}

}  // namespace

TEST_CASE("findings: each kind of claim judged by the verdict rules, with its effect and interval",
          "[experiment][findings]") {
  test::TempDir dir("findings");
  write_file_atomic(dir / "paper_t.tsv", kTable);
  write_file_atomic(dir / "claims.tsv", kClaims);
  const std::vector<experiment::PaperTable> tables = {experiment::read_paper_table(dir / "paper_t.tsv")};
  const experiment::Claims claims = experiment::read_claims(dir / "claims.tsv");
  CHECK(claims.title == "A made-up paper (no venue)");
  REQUIRE(claims.claims.size() == 6);
  experiment::Plan plan = plan_with_rte();
  plan.names = {"base", "far", "near", "dip"};
  plan.row_of = plan.names;
  experiment::check_claims(claims.claims, dir / "claims.tsv", tables, plan);

  // Seeds in percent: base {50, 51, 52}, far {80, 81, 82}, near {51, 52, 53}, dip {49, 50, 51}.
  const std::vector<experiment::RunResults> runs = {
      run_scoring("base", {0.50, 0.51, 0.52}), run_scoring("far", {0.80, 0.81, 0.82}),
      run_scoring("near", {0.51, 0.52, 0.53}), run_scoring("dip", {0.49, 0.50, 0.51})};
  const std::vector<experiment::Comparison> comparisons = {experiment::compare(tables[0], runs, plan)};
  experiment::SectionVerdict sweep;
  sweep.key = "sweep.locality";
  sweep.judgement = {experiment::Verdict::contradicted, ""};
  sweep.effect = "rho -0.9";
  sweep.paper = "rises";
  const std::vector<experiment::Finding> f = experiment::judge_claims(claims.claims, comparisons, {sweep}, plan);
  REQUIRE(f.size() == 6);
  using experiment::Verdict;
  // far - base: +30 points, the paper's +10, significant after Holm over the column's 3 tests: holds.
  CHECK(f[0].judgement.verdict == Verdict::holds);
  CHECK_THAT(f[0].effect, Contains("far − base +30.00 ["));
  CHECK_THAT(f[0].effect, Contains("fine-tuning seeds, Holm p < 1e-4"));
  CHECK(f[0].paper == "+10.00");
  // RPE rows {81, 52} against APE rows {51, 50}: +16, t = 1.103 on 1.002 df, p = 0.4686, 95% interval
  // [-167.3, 199.3]; the paper's families 65.5 against 61: +4.5. It and the pair claim below compare the
  // same column, one family: Holm over the two, 0.0705 x 2 = 0.141 and max(0.141, 0.4686 x 1) = 0.4686.
  // Same direction, not significant.
  CHECK(f[1].judgement.verdict == Verdict::consistent);
  CHECK_THAT(f[1].effect, Contains("RPE − APE +16.00 [-167.32, +199.32] (rows 2 and 2, Welch p = 0.469; Holm over "
                                   "2 claims p = 0.469)"));
  CHECK(f[1].paper == "+4.5");
  CHECK(f[1].claim.caveat == "stand-in: roles");
  // near - dip: +2 points, t = 2.449 on 4 df, p = 0.0705, interval [-0.267, 4.267], Holm 0.141; the paper
  // has dip ahead (62 against 61): the opposite direction, not significant.
  CHECK(f[2].judgement.verdict == Verdict::inconclusive);
  CHECK_THAT(f[2].effect, Contains("near − dip +2.00 [-0.27, +4.27] (fine-tuning seeds, Welch p = 0.0705; Holm over "
                                   "2 claims p = 0.141)"));
  CHECK(f[2].paper == "-1");
  // The order: paper far > dip > near > base; ordo far > near > base > dip: tau_b = 1/3 over 4 rows
  // (exact permutation p = 0.75): same direction, not significant.
  CHECK(f[3].judgement.verdict == Verdict::consistent);
  CHECK_THAT(f[3].effect, Contains("τ_b 0.33 (p = 0.75, n = 4)"));
  CHECK(f[4].judgement.verdict == Verdict::contradicted);
  CHECK(f[4].effect == "rho -0.9");
  CHECK(f[4].paper == "rises");  // a section's words for the paper's effect
  CHECK(f[5].judgement.verdict == Verdict::not_testable);
  CHECK(f[5].judgement.reason == "needs WMT");

  // The baseline pretrained three times (its runs' seeds average 51, 53, 55) and `far` once: the test is
  // over fine-tuning seeds of the two first runs, and so is the effect the interval is around: 81 - 51 =
  // +30, Welch on {80, 81, 82} and {50, 51, 52}: standard error sqrt(2/3), 4 df, t(0.975) = 2.776, the
  // interval [+27.73, +32.27] (not 81 - 53 = +28, the pretraining mean of the baseline alone).
  std::vector<experiment::RunResults> replicated_base = runs;
  replicated_base[0].replicates = {run_scoring("base.seed2", {0.52, 0.53, 0.54}),
                                   run_scoring("base.seed3", {0.54, 0.55, 0.56})};
  experiment::Plan replicated_plan = plan;
  replicated_plan.replicate_seeds = {2, 3};
  const std::vector<experiment::Finding> once = experiment::judge_claims(
      claims.claims, {experiment::compare(tables[0], replicated_base, replicated_plan)}, {sweep}, replicated_plan);
  CHECK_THAT(once[0].effect, Contains("far − base +30.00 [+27.73, +32.27] (fine-tuning seeds"));

  // Every row of ordo's the same figure: tau_b is undefined, and the order's verdict says so (not "at chance").
  std::vector<experiment::RunResults> tied;
  for (const char* config : {"base", "far", "near", "dip"}) tied.push_back(run_scoring(config, {0.50, 0.51, 0.52}));
  const std::vector<experiment::Finding> ties = experiment::judge_claims(
      claims.claims, {experiment::compare(tables[0], tied, plan)}, {sweep}, plan);
  CHECK(ties[3].judgement.verdict == Verdict::not_testable);
  CHECK(ties[3].judgement.reason == "tau_b is undefined: one side's values all tie");

  // A row with one seed has no test: the verdict line counts the two rows tested, not it.
  std::vector<experiment::RunResults> one_seed = runs;
  one_seed[1] = run_scoring("far", {0.80});
  const experiment::Comparison with_one = experiment::compare(tables[0], one_seed, plan);
  const auto line = std::find_if(with_one.readings.begin(), with_one.readings.end(),
                                 [](const experiment::ColumnReading& r) { return r.grouping == "verdicts"; });
  REQUIRE(line != with_one.readings.end());
  CHECK_THAT(line->text, Contains("over fine-tuning seeds of one pretraining run for the 2 other row(s) (†)"));
  CHECK(line->reasons.at(0) == "no test: fewer than two seeds in a row, or no spread in either");

  // A row that has not run that task (no figure in the column): not testable, and no error.
  std::vector<experiment::RunResults> unfinished = runs;
  unfinished[1] = run_scoring("far", {});
  const std::vector<experiment::Finding> partial = experiment::judge_claims(
      claims.claims, {experiment::compare(tables[0], unfinished, plan)}, {sweep}, plan);
  CHECK(partial[0].judgement.verdict == Verdict::not_testable);

  // Without the section's runs, and without any run of the table: not testable, and why.
  const std::vector<experiment::Finding> none = experiment::judge_claims(claims.claims, {}, {}, plan);
  CHECK(none[0].judgement.verdict == Verdict::not_testable);
  CHECK_THAT(none[0].judgement.reason, Contains("no runs with this table's figures yet"));
  CHECK_THAT(none[4].judgement.reason, Contains("no such section yet"));

  // The report's files and the gathered document.
  const std::string md = experiment::findings_markdown(f, "Findings: a made-up paper");
  CHECK_THAT(md, Contains("| F beats B | Table t | far − base +30.00 ["));
  CHECK_THAT(md, Contains("holds: 1; consistent, not significant: 2; contradicted: 1; inconclusive: 1; not testable "
                          "here: 1 (of 6 claims)."));
  std::filesystem::create_directories(dir / "report");
  write_file_atomic(dir / "report/findings.json", experiment::findings_json(f, claims.title));
  const std::string all = experiment::gather_findings({dir / "report"});
  CHECK_THAT(all, Contains("| A made-up paper (no venue) | 1 | 2 | 1 | 1 | 1 | 6 |"));
  CHECK_THAT(all, Contains("| **total** | **1** | **2** | **1** | **1** | **1** | **6** |"));
  CHECK_THAT(all, Contains("| translation improves | Table 6 | — | — | **not testable here: needs WMT** | — |"));
  CHECK_THAT(all, !Contains("One baseline"));
  CHECK_THROWS_WITH(experiment::gather_findings({dir.path}), Contains("holds no findings.json"));
  // Three papers whose baselines are one draw (the same held-out losses, the third's off by 1.8e-5
  // relative: another CPU's rounding) and a fourth whose is not (0.7% off at step 1000): the first three
  // are named as one baseline.
  auto baseline = [](const std::string& config, double last_loss) {
    json::Value b = json::Value::object(), losses = json::Value::array(), early = json::Value::array(),
                late = json::Value::array();
    early.push_back(500), early.push_back(5.8669), late.push_back(1000), late.push_back(last_loss);
    losses.push_back(early), losses.push_back(late);
    b["config"] = config;
    b["held_out_loss"] = losses;
    return b;
  };
  for (const auto& [name, config, loss] : std::vector<std::tuple<std::string, std::string, double>>{
           {"p1", "absolute", 5.6088}, {"p2", "devlin", 5.6088}, {"p3", "bert", 5.6089}, {"p4", "base", 5.65}}) {
    std::filesystem::create_directories(dir / name);
    write_file_atomic(dir / (name + "/findings.json"),
                      experiment::findings_json(f, "Paper " + name, baseline(config, loss)));
  }
  const std::string shared = experiment::gather_findings({dir / "p1", dir / "p2", dir / "p3", dir / "p4"});
  CHECK_THAT(shared, Contains("**One baseline, not 3.** Paper p1's `absolute`, Paper p2's `devlin` and Paper p3's "
                              "`bert` are one pretraining draw"));
  CHECK_THAT(shared, !Contains("`base`"));
  // One paper's report given twice would count its claims twice.
  CHECK_THROWS_WITH(experiment::gather_findings({dir / "p1", dir / "p2", dir / "p1"}),
                    Contains("--findings: the paper 'Paper p1' is given twice"));
  // A report written before its paper had claims (a paper.json, no findings.json) is listed as such.
  std::filesystem::create_directories(dir / "old");
  write_file_atomic(dir / "old/paper.json", "{}");
  CHECK_THAT(experiment::gather_findings({dir / "report", dir / "old"}),
             Contains("old`: written before its paper's claims.tsv; its next report judges them | — |"));

  // A malformed findings file is refused with its path and the place inside it, never read half-way.
  const std::string good = read_file(dir / "p4/findings.json");
  auto refused = [&](const std::string& from, const std::string& to) {
    const size_t at = good.find(from);
    REQUIRE(at != std::string::npos);
    std::filesystem::create_directories(dir / "bad");
    write_file_atomic(dir / "bad/findings.json", std::string(good).replace(at, from.size(), to));
    try {
      experiment::gather_findings({dir / "p1", dir / "bad"});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  const std::string bad = dir / "bad/findings.json";
  CHECK(refused("\"verdict\": \"holds\"", "\"verdict\": \"stands\"") ==
        bad + ": \"findings\"[0]: unknown verdict 'stands'");
  CHECK(refused("\"verdict\": \"holds\"", "\"verdict\": 1") ==
        bad + ": \"findings\"[0]: json: expected a string, got a number");
  CHECK(refused("\"claim\": ", "\"claims\": ") == bad + ": \"findings\"[0]: json: missing key 'claim'");
  CHECK(refused("5.65", "-5.65") ==
        bad + ": \"baseline\".\"held_out_loss\"[1] is not a [step, loss] pair (a loss is a positive number)");
  CHECK(refused("[\n        1000,", "[\n        \"1000\",") ==
        bad + ": \"baseline\".\"held_out_loss\"[1] is not a [step, loss] pair (a loss is a positive number)");
  CHECK(refused("\"config\": \"base\"", "\"config\": 4") == bad + ": \"baseline\" names no \"config\"");
  CHECK(refused("\"paper\": \"Paper p4\"", "\"paper\": null") ==
        bad + ": \"paper\" is a null and \"findings\" an array (a paper's name and an array of findings were "
              "expected)");
}

TEST_CASE("findings: an indicator's effect in its own units, judged as smaller is better", "[experiment][findings]") {
  test::TempDir dir("findings_indicator");
  const auto [tables, claims] = written(dir, "i",
                                        "config\tpaper_row\tfamily\tkind\ttranslation_invariance_no_special\n"
                                        "a1\tA1\tAPE\tlearned\t0.01\na2\tA2\tAPE\tfixed\t0.02\n"
                                        "r1\tR1\tRPE\tlearned\t0.001\nr2\tR2\tRPE\tfixed\t0.002\n",
                                        "# A paper\nti\tTable 2\tRPEs more invariant\tfamilies i "
                                        "translation_invariance_no_special RPE APE\t-\n");
  // AIV (smaller is better): RPE rows 0.10, 0.12 against APE rows 0.30, 0.34. As values, RPE - APE =
  // 0.11 - 0.32 = -0.21 with scipy's interval [-0.3484, -0.07163], t = -9.39 on 1.47 df, p = 0.02738;
  // the paper's -0.0135. Both the better way (smaller) for RPEs, significant: holds.
  std::vector<experiment::RunResults> runs;
  for (const auto& [config, aiv] : std::vector<std::pair<std::string, double>>{{"a1", 0.30}, {"a2", 0.34},
                                                                                {"r1", 0.10}, {"r2", 0.12}}) {
    experiment::RunResults r = run_scoring(config, {});
    r.probed = true;
    r.record.attention = Matrix(4, 4);
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 4; ++j) r.record.attention(i, j) = 1.0 / (1 + std::abs(i - j));  // a band
    r.record.with_special = json::Value::object();
    r.record.with_special["translation_invariance_no_special"] = aiv;
    runs.push_back(r);
  }
  experiment::Plan plan = plan_with_rte();
  plan.baseline = "";
  const std::vector<experiment::Finding> f =
      experiment::judge_claims(claims.claims, {experiment::compare(tables[0], runs, plan)}, {}, plan);
  REQUIRE(f.size() == 1);
  CHECK(f[0].judgement.verdict == experiment::Verdict::holds);
  CHECK_THAT(f[0].effect, Contains("RPE − APE -0.210 [-0.348, -0.072] (rows 2 and 2, Welch p = 0.0274)"));
  CHECK(f[0].paper == "-0.0135");

  // One row of each family has run, each pretrained three times: the two representatives over their
  // pretraining runs. RPE r1 {0.10, 0.12, 0.11} against APE a1 {0.30, 0.34, 0.32}: -0.21, scipy's
  // interval [-0.2516, -0.1684], t = -16.27 on 2.94 df, p = 0.000565; the paper's over the same two
  // rows, r1 0.001 against a1 0.01: -0.009 (not the families' -0.0135). Both smaller for the RPE: holds.
  auto replicated = [&](const std::string& config, std::vector<double> aiv) {
    experiment::RunResults first = runs[config == "a1" ? 0 : 2];
    first.record.with_special["translation_invariance_no_special"] = aiv[0];
    for (size_t k = 1; k < aiv.size(); ++k) {
      experiment::RunResults again = first;
      again.config = config + ".seed" + std::to_string(k + 1);
      again.record.with_special["translation_invariance_no_special"] = aiv[k];
      first.replicates.push_back(again);
    }
    return first;
  };
  const std::vector<experiment::RunResults> two = {replicated("a1", {0.30, 0.34, 0.32}),
                                                   replicated("r1", {0.10, 0.12, 0.11})};
  const std::vector<experiment::Finding> g =
      experiment::judge_claims(claims.claims, {experiment::compare(tables[0], two, plan)}, {}, plan);
  CHECK(g[0].judgement.verdict == experiment::Verdict::holds);
  CHECK_THAT(g[0].effect, Contains("RPE − APE -0.210 [-0.252, -0.168] (one row of each, r1 and a1, over their "
                                   "pretraining runs, 3 and 3, Welch p = 0.000565)"));
  CHECK(g[0].paper == "-0.009");
  // The paper's two rows the other way round (a1 the more invariant): ordo's significant RPE advantage
  // is then against the paper's direction over the same rows: contradicted.
  write_file_atomic(dir / "paper_j.tsv", "config\tpaper_row\tfamily\tkind\ttranslation_invariance_no_special\n"
                                          "a1\tA1\tAPE\tlearned\t0.001\na2\tA2\tAPE\tfixed\t0.002\n"
                                          "r1\tR1\tRPE\tlearned\t0.01\nr2\tR2\tRPE\tfixed\t0.0001\n");
  write_file_atomic(dir / "claims.tsv", "# A paper\nti\tTable 2\tRPEs more invariant\tfamilies j "
                                        "translation_invariance_no_special RPE APE\t-\n");
  const experiment::PaperTable reversed = experiment::read_paper_table(dir / "paper_j.tsv");
  const std::vector<experiment::Finding> k = experiment::judge_claims(
      experiment::read_claims(dir / "claims.tsv").claims, {experiment::compare(reversed, two, plan)}, {}, plan);
  CHECK(k[0].paper == "+0.009");
  CHECK(k[0].judgement.verdict == experiment::Verdict::contradicted);
  // Without replicates one row a family is not enough.
  const std::vector<experiment::Finding> h = experiment::judge_claims(
      claims.claims, {experiment::compare(tables[0], {runs[0], runs[2]}, plan)}, {}, plan);
  CHECK(h[0].judgement.verdict == experiment::Verdict::not_testable);
}

TEST_CASE("findings: a bad claims file is refused by line, before any run", "[experiment][findings][errors]") {
  test::TempDir dir("findings_bad");
  write_file_atomic(dir / "paper_t.tsv", kTable);
  const std::vector<experiment::PaperTable> tables = {experiment::read_paper_table(dir / "paper_t.tsv")};
  experiment::Plan plan = plan_with_rte();
  plan.names = {"base", "far", "near", "dip"};
  plan.row_of = plan.names;
  auto refused = [&](const std::string& line) {
    write_file_atomic(dir / "claims.tsv", "# A paper\n" + line + "\n");
    const experiment::Claims c = experiment::read_claims(dir / "claims.tsv");
    experiment::check_claims(c.claims, dir / "claims.tsv", tables, plan);
  };
  CHECK_THROWS_WITH(refused("a\tT\tclaim\trow t rte.accuracy"), Contains("claims.tsv:2: a claim has 5 tab-separated"));
  CHECK_THROWS_WITH(refused("a\tT\tclaim\tguess t\t-"), Contains("claims.tsv:2: unknown test 'guess'"));
  CHECK_THROWS_WITH(refused("a\tT\tclaim\trow t rte.accuracy\t-"), Contains("the test 'row' takes 3 word(s)"));
  CHECK_THROWS_WITH(refused("a\tT\tc\tuntested x\t-\na\tT\tc\tuntested y\t-"), Contains("claims.tsv:3: the id 'a' is used twice"));
  CHECK_THROWS_WITH(refused("a\tT\tclaim\trank t2 rte.accuracy\t-"), Contains("no paper table 't2'"));
  // A section key no section computes would read "not finished yet" forever.
  CHECK_THROWS_WITH(refused("a\tT\tclaim\tsection figure5.monotonicty\t-"),
                    Contains("claims.tsv:2 (a): no section verdict 'figure5.monotonicty' (a report computes "
                             "figure5.monotonicity, figure5.balance, sweep.locality, sweep.symmetry, "
                             "pretraining.locality, pretraining.symmetry, layers.syntactic, layers.semantic, "
                             "dependency.short, dependency.long and swap.TASK for a fine-tuning task of the plan "
                             "with a role swap)"));
  CHECK_THROWS_WITH(refused("a\tT\tclaim\trank t sst2.accuracy\t-"), Contains("has no column 'sst2.accuracy'"));
  CHECK_THROWS_WITH(refused("a\tT\tclaim\trow t rte.accuracy nowhere\t-"), Contains("has no row 'nowhere'"));
  CHECK_THROWS_WITH(refused("a\tT\tclaim\trow t rte.accuracy base\t-"), Contains("which is this row"));
  CHECK_THROWS_WITH(refused("a\tT\tclaim\tfamilies t rte.accuracy RPE not_a_family\t-"),
                    Contains("has no family 'not a family'"));
  CHECK_THROWS_WITH(refused("a\tT\tclaim\tcorrelation t translation_invariance rte.accuracy\t-"),
                    Contains("needs a table of correlations"));
  write_file_atomic(dir / "claims.tsv", "a\tT\tc\tuntested x\t-\n");
  CHECK_THROWS_WITH(experiment::read_claims(dir / "claims.tsv"), Contains("the first comment line names the paper"));
  CHECK_THROWS_WITH(refused("a\tT\tclaim \xff\tuntested x\t-"), Contains("claims.tsv:2: invalid UTF-8 at byte 11"));
  // Windows line ends read as the lines.
  write_file_atomic(dir / "claims.tsv", "# A paper\r\na\tT\tc\tuntested x y\t-\r\n");
  const experiment::Claims crlf = experiment::read_claims(dir / "claims.tsv");
  REQUIRE(crlf.claims.size() == 1);
  CHECK(crlf.title == "A paper");
  CHECK(crlf.claims[0].caveat.empty());
  CHECK(crlf.claims[0].test == std::vector<std::string>{"untested", "x", "y"});
  // A UTF-8 byte-order mark before the title line (an editor's) is dropped, not read as a claim.
  write_file_atomic(dir / "claims.tsv", "\xEF\xBB\xBF# A paper\na\tT\tc\tuntested x\t-\n");
  const experiment::Claims bom = experiment::read_claims(dir / "claims.tsv");
  CHECK(bom.title == "A paper");
  CHECK(bom.claims.size() == 1);
}

TEST_CASE("findings: one row's two columns compared over its fine-tuning seeds", "[experiment][findings]") {
  test::TempDir dir("findings_columns");
  // The paper: row k at 60 when fine-tuned as pretrained, 62 when fine-tuned longer (+2).
  const auto [tables, claims] = written(dir, "t",
                                        "config\tpaper_row\tfamily\tkind\trte.accuracy\trte_long.accuracy\t"
                                        "translation_invariance_no_special\nk\tK\tRPE\tlearned\t60.0\t62.0\t0.1\n",
                                        "# A paper\nlonger\tTable 4\tlonger helps\tcolumns t k rte_long.accuracy "
                                        "rte.accuracy\t-\n");
  experiment::Plan plan = plan_with_rte();
  experiment::FinetuneTask longer = plan.finetune[0];
  longer.name = "rte_long";
  plan.finetune.push_back(longer);
  plan.baseline = "";
  plan.names = plan.row_of = {"k"};
  experiment::check_claims(claims.claims, dir / "claims.tsv", tables, plan);

  // ordo: {50, 51, 52} as pretrained, {45, 46, 47} longer: -5, standard error sqrt(2/3), t = -6.124 on
  // 4 df, two-sided p = 0.0036 (the t density integrated numerically), interval -5 -+ 2.776 x 0.8165 =
  // [-7.267, -2.733]. The paper's +2: a significant reversal, contradicted.
  experiment::RunResults k = run_scoring("k", {0.50, 0.51, 0.52});
  k.tasks["rte_long"] = test::accuracy_task({0.45, 0.46, 0.47});
  const std::vector<experiment::Finding> f =
      experiment::judge_claims(claims.claims, {experiment::compare(tables[0], {k}, plan)}, {}, plan);
  REQUIRE(f.size() == 1);
  CHECK(f[0].judgement.verdict == experiment::Verdict::contradicted);
  CHECK_THAT(f[0].effect, Contains("rte_long.accuracy − rte.accuracy -5.00 [-7.27, -2.73] (fine-tuning seeds, "
                                   "Welch p = 0.0036)"));
  CHECK(f[0].paper == "+2");

  // The longer fine-tuning not yet run: not testable, and why.
  k.tasks.erase("rte_long");
  const std::vector<experiment::Finding> g =
      experiment::judge_claims(claims.claims, {experiment::compare(tables[0], {k}, plan)}, {}, plan);
  CHECK(g[0].judgement.verdict == experiment::Verdict::not_testable);
  CHECK_THAT(g[0].judgement.reason, Contains("its fine-tuning has not run"));

  // Columns read different ways (an indicator, smaller is better, against an accuracy) are refused.
  write_file_atomic(dir / "bad.tsv", "# A paper\nmixed\tTable 4\tmixed\tcolumns t k translation_invariance_no_special "
                                     "rte.accuracy\t-\n");
  CHECK_THROWS_WITH(experiment::check_claims(experiment::read_claims(dir / "bad.tsv").claims, dir / "bad.tsv", tables,
                                             plan),
                    Contains("bad.tsv:2 (mixed): columns 'translation_invariance_no_special' and 'rte.accuracy' "
                             "are not read the same way"));
  write_file_atomic(dir / "bad.tsv",
                    "# A paper\nrow\tTable 4\tno row\tcolumns t q rte_long.accuracy rte.accuracy\t-\n");
  CHECK_THROWS_WITH(experiment::check_claims(experiment::read_claims(dir / "bad.tsv").claims, dir / "bad.tsv", tables,
                                             plan),
                    Contains("has no row 'q'"));
}

TEST_CASE("findings: a figure the paper states only in words, over pretraining runs", "[experiment][findings]") {
  test::TempDir dir("findings_higher");
  write_file_atomic(dir / "claims.tsv", "# A paper\nrank\tFigure 2\tper head higher\thigher positional_rank a b\t-\n");
  const experiment::Claims claims = experiment::read_claims(dir / "claims.tsv");
  experiment::Plan plan = plan_with_rte();
  plan.names = plan.row_of = {"a", "b"};
  experiment::check_claims(claims.claims, dir / "claims.tsv", {}, plan);
  // Each run's layer-1 ranks per head (analysis/attention_rank.csv); its figure is their mean.
  auto run_ranked = [&](const std::string& name, int head1, int head2) {
    experiment::RunResults r = run_scoring(name, {});
    r.run_dir = dir / name;
    std::filesystem::create_directories(r.run_dir + "/analysis");
    write_file_atomic(r.run_dir + "/analysis/attention_rank.csv",
                      "head,token_token_rank,positional_rank\n1,63," + std::to_string(head1) + "\n2,63," +
                          std::to_string(head2) + "\n");
    return r;
  };
  // a's runs 56, 57, 58; b's 50, 51, 52: +6, standard error sqrt(2/3), t = 7.348 on 4 df, two-sided p =
  // 1 - x (1 + (1 - x^2) / 2) with x = t / sqrt(t^2 + 4) (Student's t CDF for 4 df) = 0.001826; the
  // interval 6 -+ 2.776 x 0.8165 = [+3.73, +8.27]. The paper's direction (a higher), significant: holds.
  experiment::RunResults a = run_ranked("a", 55, 57), b = run_ranked("b", 49, 51);
  a.replicates = {run_ranked("a.seed2", 56, 58), run_ranked("a.seed3", 57, 59)};
  b.replicates = {run_ranked("b.seed2", 50, 52), run_ranked("b.seed3", 51, 53)};
  const std::vector<experiment::Finding> f = experiment::judge_claims(claims.claims, {}, {}, plan, {a, b});
  REQUIRE(f.size() == 1);
  CHECK(f[0].judgement.verdict == experiment::Verdict::holds);
  CHECK(f[0].effect == "a − b +6.00 [+3.73, +8.27] (pretraining runs, 3 and 3, Welch p = 0.00183)");
  CHECK(f[0].paper == "higher (stated, no values)");
  // Two more claims on the figure of another item, each +2.5 over b with the same spread: t = 2.5 /
  // sqrt(2/3) = 3.062 on 4 df, p = 0.03759 by the formula above (scipy.stats.ttest_ind agrees), below 0.05
  // alone; Holm over the item's two claims: 0.03759 x 2 = 0.0752 for both, not significant. The first
  // claim, alone in its item, keeps its p.
  write_file_atomic(dir / "family.tsv", "# A paper\nrank\tFigure 2\tper head higher\thigher positional_rank a b\t-\n"
                                        "c\tFigure 3\tc above b\thigher positional_rank c b\t-\n"
                                        "d\tFigure 3\td above b\thigher positional_rank d b\t-\n");
  const experiment::Claims family = experiment::read_claims(dir / "family.tsv");
  experiment::RunResults c = run_ranked("c", 52, 53), d = run_ranked("d", 53, 52);  // 52.5, 53.5, 54.5 each
  c.replicates = {run_ranked("c.seed2", 53, 54), run_ranked("c.seed3", 54, 55)};
  d.replicates = {run_ranked("d.seed2", 54, 53), run_ranked("d.seed3", 55, 54)};
  const std::vector<experiment::Finding> h = experiment::judge_claims(family.claims, {}, {}, plan, {a, b, c, d});
  REQUIRE(h.size() == 3);
  CHECK(h[0].effect == f[0].effect);
  for (size_t k : {1, 2}) {
    CHECK(h[k].judgement.verdict == experiment::Verdict::consistent);
    CHECK_THAT(h[k].effect, Contains("+2.50 [") && Contains("Welch p = 0.0376; Holm over 2 claims p = 0.0752)"));
  }
  // b pretrained once: one value, nothing to test over.
  experiment::RunResults once = b;
  once.replicates.clear();
  const std::vector<experiment::Finding> g = experiment::judge_claims(claims.claims, {}, {}, plan, {a, once});
  CHECK(g[0].judgement.verdict == experiment::Verdict::not_testable);
  CHECK_THAT(g[0].judgement.reason, Contains("a row has one run"));
  // A malformed table is an error naming the file and line.
  write_file_atomic(dir / "b/analysis/attention_rank.csv", "head,positional_rank\n1,fifty\n");
  CHECK_THROWS_WITH(experiment::judge_claims(claims.claims, {}, {}, plan, {a, b}),
                    Contains("b/analysis/attention_rank.csv:2: 'fifty' in column 'positional_rank' is not a number"));
  write_file_atomic(dir / "b/analysis/attention_rank.csv", "head,rank\n1,50\n");
  CHECK_THROWS_WITH(experiment::judge_claims(claims.claims, {}, {}, plan, {a, b}),
                    Contains("no column 'positional_rank' in its header"));
  // A task's figure is checked against the plan's tasks where it fine-tunes; where --stages leaves the
  // finetune stage out, the claim waits for it.
  write_file_atomic(dir / "task.tsv", "# A paper\nx\tTable 3\tx\thigher q.accuracy a b\t-\n");
  const experiment::Claims on_task = experiment::read_claims(dir / "task.tsv");
  experiment::Plan fine_tuning = plan;
  fine_tuning.stages = {"pretrain", "finetune"};
  CHECK_THROWS_WITH(experiment::check_claims(on_task.claims, dir / "task.tsv", {}, fine_tuning),
                    Contains("no figure 'q.accuracy'"));
  experiment::Plan pretraining = plan;
  pretraining.stages = {"pretrain"};
  experiment::check_claims(on_task.claims, dir / "task.tsv", {}, pretraining);
  // The claim names a figure or a row the plan does not have.
  for (const std::string& test :
       {std::string("higher no_such_figure a b"), std::string("higher positional_rank a c")}) {
    write_file_atomic(dir / "bad.tsv", "# A paper\nx\tFigure 2\tx\t" + test + "\t-\n");
    CHECK_THROWS_WITH(experiment::check_claims(experiment::read_claims(dir / "bad.tsv").claims, dir / "bad.tsv", {},
                                               plan),
                      Contains(test.find("no_such") != std::string::npos ? "no figure 'no_such_figure'"
                                                                         : "no run config 'c'"));
  }
}

TEST_CASE("findings: senteval.mean, the classifiers started from each run's table, over the same tasks only",
          "[experiment][findings]") {
  test::TempDir dir("findings_senteval_mean");
  write_file_atomic(dir / "claims.tsv", "# A paper\nt3\tTable 3\ta's table the better start\thigher senteval.mean a b\t-\n");
  const experiment::Claims claims = experiment::read_claims(dir / "claims.tsv");
  // Wang & Chen's Table 3 in small: two columns from the run's own table, and a random table's column,
  // which the mean leaves out.
  experiment::Plan plan;
  plan.folder = "f";
  plan.out = "o";
  for (const auto& [name, task, init] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"mr", "senteval", "run"}, {"sst2", "sst2", "run"}, {"sst2_random", "sst2", "none"}}) {
    experiment::FinetuneTask t;
    t.name = name;
    t.task = task;
    t.init_positions = init;
    plan.finetune.push_back(t);
  }
  plan.names = plan.row_of = {"a", "b"};
  experiment::check_claims(claims.claims, dir / "claims.tsv", {}, plan);
  // A run whose mean is m: mr at m - 2 and sst2 at m + 2 (one seed each), the random column far below.
  auto run_at = [](const std::string& config, double m) {
    experiment::RunResults r;
    r.config = config;
    r.tasks["mr"] = test::accuracy_task({(m - 2) / 100});
    r.tasks["sst2"] = test::accuracy_task({(m + 2) / 100});
    r.tasks["sst2_random"] = test::accuracy_task({0.10});
    return r;
  };
  const std::optional<experiment::Figure> mean = experiment::figure(run_at("a", 86), "senteval.mean", plan);
  REQUIRE(mean);
  CHECK(mean->mean() == Approx(86));
  CHECK(mean->tasks == "mr, sst2");
  // a's runs 86, 87, 88 against b's 80, 81, 82: the numbers of the positional_rank test above, so
  // +6.00 [+3.73, +8.27], Welch p = 0.00183.
  experiment::RunResults a = run_at("a", 86), b = run_at("b", 80);
  a.replicates = {run_at("a.seed2", 87), run_at("a.seed3", 88)};
  b.replicates = {run_at("b.seed2", 81), run_at("b.seed3", 82)};
  std::vector<experiment::Finding> f = experiment::judge_claims(claims.claims, {}, {}, plan, {a, b});
  REQUIRE(f.size() == 1);
  CHECK(f[0].judgement.verdict == experiment::Verdict::holds);
  CHECK(f[0].effect == "a − b +6.00 [+3.73, +8.27] (pretraining runs, 3 and 3, Welch p = 0.00183)");
  // A replicate that fine-tuned one column only averages another set of tasks: no test.
  b.replicates[1].tasks.erase("sst2");
  f = experiment::judge_claims(claims.claims, {}, {}, plan, {a, b});
  CHECK(f[0].judgement.verdict == experiment::Verdict::not_testable);
  CHECK(f[0].judgement.reason == "the pretraining runs' senteval.mean average different tasks (mr, sst2; mr)");
}

TEST_CASE("findings: a row the paper ties with its baseline is not testable, and says why", "[experiment][findings]") {
  test::TempDir dir("findings_tie");
  const auto [tables, claims] = written(dir, "t",
                                        "config\tpaper_row\tfamily\tkind\trte.accuracy\n"
                                        "base\tB\tAPE\tlearned\t60.0\ntie\tT\tRPE\tlearned\t60.0\n",
                                        "# A paper\ntie\tTable t\tT does as well as B\trow t rte.accuracy tie\t-\n");
  experiment::Plan plan = plan_with_rte();
  plan.names = plan.row_of = {"base", "tie"};
  const std::vector<experiment::RunResults> runs = {run_scoring("base", {0.50, 0.51, 0.52}),
                                                    run_scoring("tie", {0.55, 0.56, 0.57})};
  const std::vector<experiment::Finding> f =
      experiment::judge_claims(claims.claims, {experiment::compare(tables[0], runs, plan)}, {}, plan);
  REQUIRE(f.size() == 1);
  CHECK(f[0].judgement.verdict == experiment::Verdict::not_testable);
  CHECK(f[0].judgement.reason == "the paper's effect has no direction");
  CHECK(f[0].paper == "+0.00");
}
