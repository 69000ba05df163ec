// experiment/paper_table.h and experiment/tables.h: a paper's table read from
// its TSV (rows of configurations or of correlations), set beside runs whose
// figures this test chose, and the generated reading. Every expected order,
// rank correlation and test below is worked by hand from the numbers here.
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "base/file_io.h"
#include "base/json.h"
#include "experiment/paper_table.h"
#include "experiment/tables.h"
#include "experiment/verdicts.h"
#include "tests/experiment/fixtures.h"
#include "tests/helpers.h"
#include "train/pretrain.h"

using namespace ordo;
using Catch::Matchers::Contains;
using test::plan_with_rte;

namespace {

const char* kHeader = "config\tpaper_row\tfamily\tkind\ttranslation_invariance_no_special\tdirection_balance\n";

experiment::PaperTable table_from(const test::TempDir& dir, const std::string& body) {
  const std::string path = dir / "paper_t.tsv";
  write_file_atomic(path, body);
  return experiment::read_paper_table(path);
}

// A probed run with two indicators, and a fine-tuned task "rte" whose seeds scored `accuracies` (fractions).
experiment::RunResults run_with(const std::string& config, double aiv, double db,
                                const std::vector<double>& accuracies = {}, const std::string& pe = "ape_learned") {
  experiment::RunResults r;
  r.config = config;
  r.pe = pe;
  r.probed = true;
  r.record.run_dir = config;
  // A band: each row's weight falls with the distance (not uniform).
  r.record.attention = Matrix(6, 6);
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 6; ++j) r.record.attention(i, j) = 1.0 / (1 + std::abs(i - j));
  r.record.with_special = json::Value::object();
  r.record.with_special["translation_invariance_no_special"] = aiv;
  r.record.with_special["direction_balance"] = db;
  r.tasks["rte"] = test::accuracy_task(accuracies);
  return r;
}

// A run that was neither probed nor fine-tuned: it has none of a table's figures.
experiment::RunResults unprobed(const std::string& config) {
  experiment::RunResults r;
  r.config = config;
  r.pe = "ape_learned";
  r.record.run_dir = config;
  return r;
}

const experiment::ColumnReading* reading(const experiment::Comparison& c, const std::string& column,
                                         const std::string& grouping) {
  for (const auto& r : c.readings)
    if (r.column == column && r.grouping == grouping) return &r;
  return nullptr;
}

}  // namespace

TEST_CASE("paper table: read with its source lines, cells with spreads and marks, bad lines named", "[experiment][paper]") {
  test::TempDir dir("paper-table");
  const experiment::PaperTable t = table_from(
      dir, "# A paper, Table 9\n# second line\nconfig\tpaper_row\tfamily\tkind\tsquad.f1\tdirection_balance\n"
           "a\tRow A\tAPE\tlearned\t89.65 \u2020 \u00b1 0.11\t1.25\n"
           "b\tRow B\tRPE\tlearned\t-\t0.75\n");
  REQUIRE(t.rows.size() == 2);
  CHECK(t.name == "t");
  CHECK_FALSE(t.correlations);
  CHECK(t.source == std::vector<std::string>{"A paper, Table 9", "second line"});
  CHECK(t.columns == std::vector<std::string>{"squad.f1", "direction_balance"});
  const experiment::PaperCell& cell = t.find("a")->cells.at("squad.f1");
  CHECK((cell.present && cell.value == 89.65 && cell.spread == 0.11 && cell.marked));
  CHECK_FALSE(t.find("b")->cells.at("squad.f1").present);
  CHECK(t.find("b")->cells.at("direction_balance").spread == -1);
  CHECK(t.find("c") == nullptr);

  const experiment::PaperTable corr = table_from(
      dir, "indicator\tpaper_row\tsquad.f1\tglue.mean\nmonotonicity_first_k\tmonotonicity, first 20\t-0.91\t-0.21\n");
  CHECK(corr.correlations);
  CHECK(corr.find("monotonicity_first_k")->cells.at("squad.f1").value == -0.91);
  // A UTF-8 byte-order mark before the header (an editor's) is dropped: the header still begins "config".
  const experiment::PaperTable bom =
      table_from(dir, std::string("\xEF\xBB\xBF") + kHeader + "a\tRow A\tAPE\tlearned\t0.5\t1\n");
  CHECK(bom.find("a") != nullptr);

  struct Bad {
    std::string body, message;
  };
  for (const Bad& bad : std::vector<Bad>{
           {std::string(kHeader) + "a\tRow A\tAPE\tlearned\t0.5\n", "paper_t.tsv:2: 5 columns, the header has 6"},
           {std::string(kHeader) + "a\tRow A\tAPE\tlearned\t0.5\tx1\n", "paper_t.tsv:2: direction_balance: 'x1' is not a number"},
           {std::string(kHeader) + "a\tRow A\tAPE\tlearned\t0.5\t1 \u00b1 -2\n", "a spread must not be negative"},
           {std::string(kHeader) + "a\tA\tAPE\tl\t1\t1\na\tA\tAPE\tl\t1\t1\n", "paper_t.tsv:3: config 'a' is named twice"},
           {"config\tpaper_row\tfamily\tkind\tperplexity\n", "paper_t.tsv:1: 'perplexity' is not a figure ordo computes"},
           {"name\tpaper_row\tfamily\tkind\tsymmetry_sd\n", "paper_t.tsv:1: the header must begin config"},
           {"indicator\tpaper_row\tsymmetry_sd\n", "a correlation's column is a task's figure"},
           {"indicator\tpaper_row\tsquad.f1\nsquad_size\tx\t0.1\n", "'squad_size' is not an indicator"},
           {"indicator\tpaper_row\tsquad.f1\nsymmetry_sd\tx\t-1.2\n", "squad.f1: -1.2 is no correlation"},
           {std::string("# only a header\n") + kHeader, "no rows"},
           // Not UTF-8 (a Latin-1 "é"): named at the plan's reading, not when the report is written.
           {std::string(kHeader) + "a\tRow \xe9\tAPE\tlearned\t0.5\t1\n",
            "paper_t.tsv:2: invalid UTF-8 at byte 7 of the line"},
       }) {
    INFO(bad.body);
    CHECK_THROWS_WITH(table_from(dir, bad.body), Contains(bad.message));
  }
}

TEST_CASE("paper table: families and kinds ordered by their means, DB by its distance from 1, rank agreement",
          "[experiment][paper]") {
  test::TempDir dir("paper-reading");
  // Paper: APE rows 0.2 and 0.4 (mean 0.3), RPE 0.1 -> RPE first (smaller is better). Kinds of APE:
  // learned 0.2 before fixed 0.4. Direction balance: APE 1.5 and 1.1 (mean 1.3, 0.3 from 1), RPE 0.8
  // (0.2 from 1) -> RPE first.
  const experiment::PaperTable t = table_from(dir, std::string(kHeader) +
                                                       "a1\tA1\tAPE\tlearned\t0.2\t1.5\n"
                                                       "a2\tA2\tAPE\tfixed\t0.4\t1.1\n"
                                                       "r1\tR1\tRPE\tlearned\t0.1\t0.8\n");
  // ordo: APE 0.1 and 0.05 (mean 0.075) before RPE 0.5: the families reversed; kinds: fixed 0.05 first.
  // Direction balance: APE 0.9 and 1.3 (mean 1.1, 0.1 off) before RPE 1.25 (0.25 off): reversed.
  const std::vector<experiment::RunResults> runs = {run_with("a1", 0.1, 0.9), run_with("a2", 0.05, 1.3),
                                                    run_with("r1", 0.5, 1.25), run_with("not_in_paper", 0.0, 1.0),
                                                    unprobed("not_in_paper_no_figures")};
  const experiment::Plan plan = plan_with_rte();
  const experiment::Comparison c = experiment::compare(t, runs, plan);
  const auto* families = reading(c, "translation_invariance_no_special", "families");
  REQUIRE(families != nullptr);
  CHECK(families->paper_order == std::vector<std::string>{"RPE", "APE"});
  CHECK(families->ordo_order == std::vector<std::string>{"APE", "RPE"});
  CHECK_FALSE(families->same_best);
  const auto* kinds = reading(c, "translation_invariance_no_special", "kinds of APE");
  REQUIRE(kinds != nullptr);
  CHECK(kinds->paper_order == std::vector<std::string>{"learned", "fixed"});
  CHECK(kinds->ordo_order == std::vector<std::string>{"fixed", "learned"});
  const auto* db = reading(c, "direction_balance", "families");
  REQUIRE(db != nullptr);
  CHECK_THAT(db->text, Contains("paper RPE (0.8000) > APE (1.3000); ordo APE (1.1000) > RPE (1.2500)"));
  // Kinds of APE by |DB - 1|: paper learned 1.5 (0.5 off), fixed 1.1 (0.1) -> fixed first; ordo learned
  // 0.9 (0.1), fixed 1.3 (0.3) -> learned first.
  CHECK(reading(c, "direction_balance", "kinds of APE")->paper_order == std::vector<std::string>{"fixed", "learned"});
  // Rank agreement of AIV over the three shared rows: ordo (0.1, 0.05, 0.5), paper (0.2, 0.4, 0.1).
  // Pairs: (a1,a2) ordo down, paper up: discordant; (a1,r1) up/down: discordant; (a2,r1) up/down:
  // discordant. tau_b = -3/3 = -1; ranks ordo (2,1,3), paper (2,3,1): rho = 1 - 6*(0+4+4)/(3*8) = -1.
  const auto* rank = reading(c, "translation_invariance_no_special", "rank");
  REQUIRE(rank != nullptr);
  CHECK(rank->n == 3);
  CHECK(rank->kendall == Approx(-1.0));
  CHECK(rank->spearman == Approx(-1.0));
  // Exact permutation p: of the 3! = 6 arrangements only the observed reaches S = -3 (rho = -1): p = 2/6.
  CHECK(rank->kendall_p == Approx(1.0 / 3));
  CHECK(rank->spearman_p == Approx(1.0 / 3));
  CHECK_THAT(rank->text, Contains("Kendall's τ_b -1.00 (p = 0.333), Spearman's ρ -1.00 (p = 0.333) (n = 3; p by "
                                  "exact permutation)"));
  // An opposite order, not significant: inconclusive, and no agreement.
  REQUIRE(rank->verdicts.size() == 1);
  CHECK(rank->verdicts[0] == experiment::Verdict::inconclusive);
  CHECK_THAT(rank->text, Contains("Verdict on the order: inconclusive: no agreement shown (that needs τ_b > 0 with p < 0.05)"));
  // Direction balance ranked by |DB - 1| on both sides, as its groups are: paper (0.5, 0.1, 0.2), ordo
  // (0.1, 0.3, 0.25): every pair discordant, tau_b = -1. On the raw DB (paper 1.5, 1.1, 0.8; ordo 0.9,
  // 1.3, 1.25) the pair (a2, r1) would be concordant: tau_b = -1/3.
  const auto* db_rank = reading(c, "direction_balance", "rank");
  REQUIRE(db_rank != nullptr);
  CHECK(db_rank->kendall == Approx(-1.0));
  // The rendered cells: ordo / paper; a run the paper's table lacks belongs to another table: left out.
  const std::string md = c.cells.markdown();
  CHECK_THAT(md, Contains("| a1 | A1 | 0.1000 / 0.2000 | 0.9000 / 1.5000 |"));
  CHECK_THAT(md, !Contains("not_in_paper"));
  CHECK(c.cells.rows.size() == 3);
}

TEST_CASE("paper table: rank agreement where the paper's values all tie is undefined, said in words",
          "[experiment][paper]") {
  test::TempDir dir("paper-tie");
  // The paper's two rows tie (0.2, 0.2): every pair is tied on its side, so tau_b's denominator and
  // rho's variance are 0 (scipy.stats gives nan for both).
  const experiment::PaperTable t = table_from(dir, std::string(kHeader) +
                                                       "a1\tA1\tAPE\tlearned\t0.2\t1.5\n"
                                                       "a2\tA2\tAPE\tfixed\t0.2\t1.1\n");
  const std::vector<experiment::RunResults> runs = {run_with("a1", 0.1, 0.9), run_with("a2", 0.05, 1.3)};
  const experiment::Comparison c = experiment::compare(t, runs, plan_with_rte());
  const auto* rank = reading(c, "translation_invariance_no_special", "rank");
  REQUIRE(rank != nullptr);
  CHECK(std::isnan(rank->kendall));
  CHECK_THAT(rank->text,
             Contains("Kendall's τ_b undefined, Spearman's ρ undefined (n = 2: one side's values all tie)"));
  CHECK_THAT(rank->text, !Contains("nan"));
  // The kinds of APE: the paper's learned and fixed are equally good, so neither is its best; ordo's
  // fixed (0.05) is below learned (0.1): smaller is better.
  const auto* kinds = reading(c, "translation_invariance_no_special", "kinds of APE");
  REQUIRE(kinds != nullptr);
  CHECK_THAT(kinds->text, Contains("paper learned (0.2000) = fixed (0.2000); ordo fixed (0.0500) > learned (0.1000). "
                                   "The paper's first two tie: no best to compare."));
  CHECK_FALSE(kinds->same_best);
  CHECK_FALSE(kinds->same_order);
}

TEST_CASE("paper table: task columns in percent, mean ± std over seeds, † by Welch's test against the baseline",
          "[experiment][paper]") {
  test::TempDir dir("paper-tasks");
  const experiment::PaperTable t =
      table_from(dir, "config\tpaper_row\tfamily\tkind\trte.accuracy\n"
                      "base\tB\tAPE\tlearned\t60.0 \u00b1 1.0\nfar\tF\tRPE\tlearned\t70.0 \u2020 \u00b1 1.0\n"
                      "near\tN\tRPE\tsinusoid\t61.0 \u00b1 1.0\n");
  // Seeds (accuracy fractions): base {0.50, 0.51, 0.52}, far {0.80, 0.81, 0.82}, near {0.51, 0.52, 0.53}.
  // far: t = 30 / sqrt(1/3 + 1/3) = 36.7 on 4 df, p < 1e-5: marked. near: t = 1 / sqrt(2/3) = 1.22 on
  // 4 df, p = 0.29: not marked. In percent: base 51.00 ± 1.00.
  const std::vector<experiment::RunResults> runs = {run_with("base", 0, 1, {0.50, 0.51, 0.52}),
                                                    run_with("far", 0, 1, {0.80, 0.81, 0.82}),
                                                    run_with("near", 0, 1, {0.51, 0.52, 0.53})};
  const experiment::Plan plan = plan_with_rte("base");
  const experiment::Comparison c = experiment::compare(t, runs, plan);
  const std::string md = c.cells.markdown();
  CHECK_THAT(md, Contains("| base | B | 51.00 ± 1.00 / 60.00 ± 1.00 |"));
  CHECK_THAT(md, Contains("| far | F | 81.00 ± 1.00 † / 70.00 ± 1.00 † |"));
  CHECK_THAT(md, Contains("| near | N | 52.00 ± 1.00 / 61.00 ± 1.00 |"));
  const json::Value& near = c.json["rows"][2]["ordo"]["rte.accuracy"];
  CHECK(near["welch_p"].as_number() == Approx(0.2879).epsilon(1e-3));
  // Holm over the column's two comparisons with base: near's p is the larger, times 1, at least far's times 2.
  CHECK(near["holm_p"].as_number() == Approx(0.2879).epsilon(1e-3));
  CHECK_FALSE(near["significant"].as_bool());
  // Larger is better for a task: paper RPE (65.5) before APE (60); ordo RPE (66.5) before APE (51).
  const auto* families = reading(c, "rte.accuracy", "families");
  REQUIRE(families != nullptr);
  CHECK(families->same_order);
  CHECK_THAT(reading(c, "rte.accuracy", "rank")->text, Contains("stand-in: the run's synthetic roles (rte layout)"));
}

TEST_CASE("paper table: correlations of indicators with a task over the runs with a position encoding",
          "[experiment][paper]") {
  test::TempDir dir("paper-corr");
  const experiment::PaperTable t = table_from(
      dir, "indicator\tpaper_row\trte.accuracy\n"
           "translation_invariance_no_special\tAIV w/o\t-0.5\ndirection_balance\tDB\t0.25\n");
  // AIV (0.1, 0.2, 0.3) against accuracy (70, 60, 50) percent: r = -1. DB (1, 2, 4) against
  // (70, 60, 50): centred (-4/3, -1/3, 5/3) and (10, 0, -10): r = -30 / sqrt(42/9 * 200) = -0.9820.
  // The run without a position encoding (its figures far off) is left out, as Wang et al. do.
  const std::vector<experiment::RunResults> runs = {
      run_with("a", 0.1, 1, {0.70}), run_with("b", 0.2, 2, {0.60}), run_with("c", 0.3, 4, {0.50}),
      run_with("none", 5.0, 9, {0.99}, "none")};
  const experiment::Plan plan = plan_with_rte();
  const experiment::Comparison c = experiment::compare(t, runs, plan);
  const json::Value& aiv = c.json["rows"][0]["ordo"]["rte.accuracy"];
  CHECK(aiv["r"].as_number() == Approx(-1.0));
  CHECK(aiv["n"].as_int() == 3);
  const double r_db = -30 / std::sqrt(42.0 / 9 * 200);
  CHECK(c.json["rows"][1]["ordo"]["rte.accuracy"]["r"].as_number() == Approx(r_db));
  // p from t = r / sqrt(1 - r^2) on 1 degree of freedom (Cauchy): P(|T| > |t|) = 1 - 2 atan(|t|) / pi
  // = 1 - 2 asin(|r|) / pi; r = -1 gives 0, and |r| = 1 - e (rounding, e a few 1e-16) gives about
  // (2 / pi) sqrt(2 e) < 2e-8. Holm over the two: 2 x that and 1 x p.
  const double p_db = 1 - 2 * std::asin(-r_db) / M_PI;
  CHECK(c.json["rows"][1]["ordo"]["rte.accuracy"]["p"].as_number() == Approx(p_db).epsilon(1e-9));
  CHECK(c.json["rows"][0]["ordo"]["rte.accuracy"]["p"].as_number() < 2e-8);
  CHECK(c.json["rows"][1]["ordo"]["rte.accuracy"]["holm_p"].as_number() == Approx(p_db).epsilon(1e-9));
  // Signs: ordo (-1, -0.98) against the paper's (-0.5, 0.25): one of two agrees; AIV's holds, DB's is
  // opposite and not significant (p = 0.12).
  const auto* signs = reading(c, "rte.accuracy", "signs");
  CHECK_THAT(signs->text, Contains("the paper's for 1 of 2 indicators"));
  CHECK_THAT(signs->text, Contains("Holm over this column's 2 correlations"));
  CHECK_THAT(signs->text, Contains("holds: translation invariance, w/o [CLS]; inconclusive: direction balance."));
  CHECK_THAT(c.cells.markdown(), Contains("| translation invariance, w/o [CLS] | AIV w/o | -1.00 (p < 1e-6, n 3) / -0.50 |"));
}

TEST_CASE("paper tables: Wang et al.'s Tables 2-5 name the configs, their families matching their encodings",
          "[experiment][paper]") {
  const std::string folder = std::string(ORDO_SOURCE_DIR) + "/configs/papers/wang2021";
  const experiment::PaperTable t = experiment::read_paper_table(folder + "/paper_table2.tsv");
  REQUIRE(t.rows.size() == 13);
  CHECK(t.columns.size() == 6);
  for (const experiment::PaperTable::Row& row : t.rows) {
    INFO(row.key);
    REQUIRE(std::filesystem::exists(folder + "/" + row.key + ".json"));
    const std::string pe = train::read_run_config(folder + "/" + row.key + ".json", {}).model.pe;
    if (row.family == "none") CHECK(pe == "none");
    if (row.family == "APE") CHECK(pe.find('+') == std::string::npos);
    if (row.family == "APE+RPE") CHECK(pe.find('+') != std::string::npos);
  }
  for (const char* name : {"paper_table3.tsv", "paper_table4.tsv"}) {
    INFO(name);
    const experiment::PaperTable rows = experiment::read_paper_table(folder + "/" + name);
    CHECK(rows.rows.size() == 13);
  }
  const experiment::PaperTable corr = experiment::read_paper_table(folder + "/paper_table5.tsv");
  CHECK(corr.correlations);
  CHECK(corr.rows.size() == 6);
}

TEST_CASE("paper table: a verdict per row against the baseline, Holm within the column", "[experiment][paper][verdicts]") {
  test::TempDir dir("paper-verdicts");
  // The paper: every row above base (60). ordo's seeds (fractions) and Welch's test against base
  // {0.50, 0.51, 0.52} (std 1 point each, standard error sqrt(2/3) of the difference, 4 df):
  //   far  {0.80, 0.81, 0.82}: +30 points, t = 36.7, p ~ 3e-6   -> same direction, significant: holds
  //   rev  {0.30, 0.31, 0.32}: -20 points, t = -24.5, p ~ 2e-5  -> opposite, significant: contradicted
  //   near {0.51, 0.52, 0.53}: +1 point, t = 1.22, p = 0.288    -> same direction, not significant: consistent
  //   dip  {0.49, 0.50, 0.51}: -1 point, p = 0.288              -> opposite, not significant: inconclusive
  // Holm over the four: far 4p, rev 3p (both < 0.05); near and dip 2 x 0.288 = 0.576.
  const experiment::PaperTable t =
      table_from(dir, "config\tpaper_row\tfamily\tkind\trte.accuracy\n"
                      "base\tB\tAPE\tlearned\t60.0\nfar\tF\tRPE\tlearned\t70.0\nrev\tR\tRPE\tfixed\t65.0\n"
                      "near\tN\tRPE\tsinusoid\t61.0\ndip\tD\tAPE\tfixed\t62.0\n");
  const std::vector<experiment::RunResults> runs = {
      run_with("base", 0, 1, {0.50, 0.51, 0.52}), run_with("far", 0, 1, {0.80, 0.81, 0.82}),
      run_with("rev", 0, 1, {0.30, 0.31, 0.32}), run_with("near", 0, 1, {0.51, 0.52, 0.53}),
      run_with("dip", 0, 1, {0.49, 0.50, 0.51})};
  const experiment::Comparison c = experiment::compare(t, runs, plan_with_rte("base"));
  const auto* verdicts = reading(c, "rte.accuracy", "verdicts");
  REQUIRE(verdicts != nullptr);
  using experiment::Verdict;
  CHECK(verdicts->verdicts == std::vector<Verdict>{Verdict::holds, Verdict::contradicted, Verdict::consistent,
                                                   Verdict::inconclusive});
  CHECK_THAT(verdicts->text, Contains("Holm over this column's 4 comparisons with base"));
  CHECK_THAT(verdicts->text, Contains("holds: far; consistent, not significant: near; contradicted: rev; inconclusive: dip."));
  const json::Value& near = c.json["rows"][3]["ordo"]["rte.accuracy"];
  CHECK(near["holm_p"].as_number() == Approx(2 * near["welch_p"].as_number()));
  const std::string md = c.cells.markdown();
  CHECK_THAT(md, Contains("| rev | R | 31.00 ± 1.00 † / 65.00 |"));
  CHECK_THAT(md, Contains("| near | N | 52.00 ± 1.00 / 61.00 |"));

  // Two rows whose raw p lies below 0.05 but whose Holm p (2p) does not: no mark. base {0.50, 0.52,
  // 0.54} against {0.55, 0.57, 0.59}: +5 points, standard error sqrt(4/3 + 4/3), t = 3.06 on 4 df.
  const experiment::PaperTable pair = table_from(dir, "config\tpaper_row\tfamily\tkind\trte.accuracy\n"
                                                      "base\tB\tAPE\tlearned\t60.0\na\tA\tRPE\tlearned\t61.0\n"
                                                      "b\tB2\tRPE\tfixed\t61.0\n");
  const experiment::Comparison twice = experiment::compare(
      pair, {run_with("base", 0, 1, {0.50, 0.52, 0.54}), run_with("a", 0, 1, {0.55, 0.57, 0.59}),
             run_with("b", 0, 1, {0.55, 0.57, 0.59})}, plan_with_rte("base"));
  const json::Value& a = twice.json["rows"][1]["ordo"]["rte.accuracy"];
  CHECK(a["welch_p"].as_number() > 0.025);
  CHECK(a["welch_p"].as_number() < 0.05);
  CHECK(a["holm_p"].as_number() == Approx(2 * a["welch_p"].as_number()));
  CHECK_FALSE(a["significant"].as_bool());
  CHECK_THAT(twice.cells.markdown(), Contains("| a | A | 57.00 ± 2.00 / 61.00 |"));
  CHECK(reading(twice, "rte.accuracy", "verdicts")->verdicts == std::vector<Verdict>{Verdict::consistent, Verdict::consistent});
}

TEST_CASE("paper table: the family is the paper's rows against the baseline, kept where the table lacks it",
          "[experiment][paper][verdicts]") {
  test::TempDir dir("paper-family");
  // The paper's table has one row, a; base is the plan's baseline and not in it (as Chen et al.'s
  // sharing ablation lacks Devlin's row); other is another table's run with the same figure.
  const experiment::PaperTable t = table_from(dir, "config\tpaper_row\tfamily\tkind\trte.accuracy\n"
                                                   "a\tA\tRPE\tlearned\t61.0\n");
  // base {0.50, 0.52, 0.54} against a {0.55, 0.57, 0.59}: t = 3.06 on 4 df, 0.025 < p < 0.05. Over a
  // family of two (a and other) Holm would double it past 0.05; the family is a alone: p unchanged.
  const experiment::Comparison c = experiment::compare(
      t, {run_with("base", 0, 1, {0.50, 0.52, 0.54}), run_with("a", 0, 1, {0.55, 0.57, 0.59}),
          run_with("other", 0, 1, {0.55, 0.57, 0.59})}, plan_with_rte("base"));
  const std::string md = c.cells.markdown();
  CHECK_THAT(md, Contains("| base | (the baseline; not in the paper's table) | 52.00 ± 2.00 / - |"));
  CHECK_THAT(md, Contains("| a | A | 57.00 ± 2.00 † / 61.00 |"));
  CHECK_THAT(md, !Contains("other"));
  const json::Value& a = c.json["rows"][1]["ordo"]["rte.accuracy"];
  CHECK(a["welch_p"].as_number() < 0.05);
  CHECK(a["holm_p"].as_number() == a["welch_p"].as_number());
  CHECK(a["significant"].as_bool());
}

TEST_CASE("paper table: a uniform row leaves the rank statistics of an indicator that ties there", "[experiment][paper][verdicts]") {
  test::TempDir dir("paper-uniform");
  const experiment::PaperTable t = table_from(dir, std::string(kHeader) +
                                                       "none\tNo PE\tnone\t-\t0.99\t1.01\n"
                                                       "a1\tA1\tAPE\tlearned\t0.2\t1.5\n"
                                                       "a2\tA2\tAPE\tfixed\t0.4\t1.1\n"
                                                       "r1\tR1\tRPE\tlearned\t0.1\t0.8\n");
  // none's attention is uniform once [CLS]/[SEP] (the first and last row and column) are dropped:
  // its AIV without them (0) is a tie artifact, and would rank it best.
  experiment::RunResults none = run_with("none", 0.0, 0.97, {}, "none");
  none.record.attention = Matrix(6, 6, 1.0 / 6);
  none.record.attention(2, 0) = 0.5;  // a [CLS] column entry: outside the block that must be uniform
  const std::vector<experiment::RunResults> runs = {none, run_with("a1", 0.1, 0.9), run_with("a2", 0.05, 1.3),
                                                    run_with("r1", 0.5, 1.25)};
  const experiment::Comparison c = experiment::compare(t, runs, plan_with_rte());
  // AIV: three rows ranked (as in the test above), none apart.
  CHECK(reading(c, "translation_invariance_no_special", "rank")->n == 3);
  const auto* uniform = reading(c, "translation_invariance_no_special", "uniform");
  REQUIRE(uniform != nullptr);
  CHECK_THAT(uniform->text, Contains("uniform attention (no positional structure) in none (ordo 0.0000, paper 0.9900)"));
  CHECK_THAT(reading(c, "translation_invariance_no_special", "families")->text, !Contains("none"));
  CHECK_THAT(c.cells.markdown(), Contains("| none | No PE | 0.0000 (uniform) / 0.9900 |"));
  // Direction balance measures a real balance there: none stays in its rank statistics.
  CHECK(reading(c, "direction_balance", "rank")->n == 4);
  CHECK(reading(c, "direction_balance", "uniform") == nullptr);
}

TEST_CASE("paper table: glue.mean compares only rows over the same tasks", "[experiment][paper][verdicts]") {
  test::TempDir dir("paper-glue");
  const experiment::PaperTable t = table_from(dir, "config\tpaper_row\tfamily\tkind\tglue.mean\n"
                                                   "base\tB\tAPE\tlearned\t80.0\nx\tX\tRPE\tlearned\t81.0\n"
                                                   "y\tY\tRPE\tfixed\t82.0\n");
  experiment::Plan plan = plan_with_rte("base");
  experiment::FinetuneTask sst2 = plan.finetune[0];
  sst2.name = sst2.task = "sst2";
  plan.finetune.push_back(sst2);
  // base and x have rte and sst2; y has rte only: its mean (rte alone) is not comparable.
  auto with_sst2 = [](experiment::RunResults r, const std::vector<double>& accuracies) {
    r.tasks["sst2"] = run_with("", 0, 1, accuracies).tasks["rte"];
    return r;
  };
  const std::vector<experiment::RunResults> runs = {
      with_sst2(run_with("base", 0, 1, {0.50, 0.52}), {0.70, 0.72}), with_sst2(run_with("x", 0, 1, {0.60, 0.62}), {0.80, 0.82}),
      run_with("y", 0, 1, {0.90, 0.92})};
  const experiment::Comparison c = experiment::compare(t, runs, plan);
  // Seed by seed: base (50 + 70) / 2 = 60, (52 + 72) / 2 = 62; x 70, 72; y 90, 92 over rte alone.
  const std::string md = c.cells.markdown();
  CHECK_THAT(md, Contains("| x | X | 71.00 ± 1.41 † / 81.00 |"));
  CHECK_THAT(md, Contains("| y | Y | 91.00 ± 1.41 (over rte: not comparable) / 82.00 |"));
  CHECK(c.json["rows"][0]["ordo"]["glue.mean"]["tasks"].as_string() == "rte, sst2");
  const auto* aside = reading(c, "glue.mean", "not comparable");
  REQUIRE(aside != nullptr);
  CHECK_THAT(aside->text, Contains("y (rte) average other tasks than the rows compared (rte, sst2)"));
  CHECK(reading(c, "glue.mean", "rank")->n == 2);
  CHECK(reading(c, "glue.mean", "verdicts")->n == 1);
  // Correlated with a per-run value, glue.mean pairs only the rows over the same tasks too: z (rte and
  // sst2, seed by seed 65 and 67: 66) joins base (61) and x (71); y is left out. Against (1, 2, 3):
  // centred (-1, 0, 1) and (-5, 5, 0), r = 5 / sqrt(2 x 50) = 0.5 on n 3 (y's 91 at 4 would make n 4).
  std::vector<experiment::RunResults> four = runs;
  four.push_back(with_sst2(run_with("z", 0, 1, {0.55, 0.57}), {0.75, 0.77}));
  const experiment::Correlation r = experiment::correlate(four, {1, 2, 4, 3}, "glue.mean", plan);
  CHECK(r.n == 3);
  CHECK(r.r == Approx(0.5));
}

TEST_CASE("verdicts: the five rules on hand-made evidence", "[experiment][verdicts]") {
  using experiment::Verdict;
  auto verdict = [](double ordo, double paper, double p, const std::string& why = "") {
    return experiment::judge({ordo, paper, p, why}, 0.05).verdict;
  };
  CHECK(verdict(2.0, 1.0, 0.01) == Verdict::holds);
  CHECK(verdict(-2.0, -0.5, 0.049) == Verdict::holds);
  CHECK(verdict(2.0, 1.0, 0.05) == Verdict::consistent);  // p < alpha, strictly
  CHECK(verdict(-2.0, 1.0, 0.001) == Verdict::contradicted);
  CHECK(verdict(-2.0, 1.0, 0.3) == Verdict::inconclusive);
  CHECK(verdict(0.0, 1.0, 1.0) == Verdict::inconclusive);  // no effect is not the paper's direction
  CHECK(verdict(2.0, 1.0, 0.01, "accuracy at chance") == Verdict::not_testable);
  CHECK(verdict(2.0, 0.0, 0.01) == Verdict::not_testable);
  CHECK(verdict(2.0, 1.0, std::nan("")) == Verdict::not_testable);
  CHECK(experiment::judge({2.0, 1.0, 0.01, "a stand-in built to need order"}, 0.05).reason == "a stand-in built to need order");
  CHECK(std::string(experiment::verdict_name(Verdict::consistent)) == "consistent, not significant");
  CHECK(std::string(experiment::verdict_name(Verdict::not_testable)) == "not testable here");
  // Rank agreement: agrees only with tau_b > 0 and p < 0.05.
  CHECK(experiment::agrees({0.6, 0.01, 12, ""}, 0.05));
  CHECK_FALSE(experiment::agrees({0.6, 0.2, 12, ""}, 0.05));
  CHECK_FALSE(experiment::agrees({-0.6, 0.01, 12, ""}, 0.05));
  CHECK(experiment::judge_rank_agreement({-0.6, 0.01, 12, ""}, 0.05).verdict == Verdict::contradicted);
  CHECK(experiment::judge_rank_agreement({std::nan(""), std::nan(""), 2, ""}, 0.05).verdict == Verdict::not_testable);
  CHECK(experiment::verdicts_by_name({{"a", Verdict::inconclusive}, {"b", Verdict::holds}, {"c", Verdict::holds}}) ==
        "holds: b, c; inconclusive: a");
  CHECK(experiment::verdicts_by_name({}).empty());
  CHECK(experiment::tie_artifact_on_uniform("monotonicity_first_k"));
  CHECK_FALSE(experiment::tie_artifact_on_uniform("translation_invariance"));
  CHECK_FALSE(experiment::tie_artifact_on_uniform("direction_balance"));
}

TEST_CASE("paper table: rows pretrained several times are tested over their pretraining runs, others over seeds",
          "[experiment][paper][verdicts]") {
  test::TempDir dir("paper-replicates");
  const experiment::PaperTable t =
      table_from(dir, "config\tpaper_row\tfamily\tkind\trte.accuracy\n"
                      "base\tB\tAPE\tlearned\t60.0\nrep\tR\tRPE\tlearned\t70.0\nonce\tO\tRPE\tfixed\t65.0\n");
  // base: pretraining runs whose seeds average 51, 53, 55 (mean 53, std 2); rep: 61, 55, 58 (mean
  // 58, std 3). Over their first runs' seeds alone rep would be 10 points up with t = 12.2 (p = 2.6e-4);
  // over the pretraining runs the difference is 5 with standard error sqrt(4/3 + 9/3): t = 2.402 on
  // 3.48 Welch df, p = 0.08373 (scipy.stats.ttest_ind(equal_var=False)). once, pretrained once, is
  // tested over seeds: {0.80, 0.81, 0.82} against base's first run, p = 3.276e-6. Holm over the two:
  // once 2p, rep p: rep not significant, once significant.
  experiment::RunResults base = run_with("base", 0, 1, {0.50, 0.51, 0.52});
  base.replicates = {run_with("base.seed2", 0, 1, {0.52, 0.53, 0.54}), run_with("base.seed3", 0, 1, {0.54, 0.55, 0.56})};
  experiment::RunResults rep = run_with("rep", 0, 1, {0.60, 0.61, 0.62});
  rep.replicates = {run_with("rep.seed2", 0, 1, {0.54, 0.55, 0.56}), run_with("rep.seed3", 0, 1, {0.57, 0.58, 0.59})};
  const std::vector<experiment::RunResults> runs = {base, rep, run_with("once", 0, 1, {0.80, 0.81, 0.82})};
  experiment::Plan plan = plan_with_rte("base");
  plan.replicate_seeds = {2, 3};
  const experiment::Comparison c = experiment::compare(t, runs, plan);
  const json::Value& r = c.json["rows"][1]["ordo"]["rte.accuracy"];
  CHECK(r["welch_p"].as_number() == Approx(0.08373).epsilon(1e-3));
  CHECK(r["holm_p"].as_number() == Approx(0.08373).epsilon(1e-3));
  CHECK(r["tested_over"].as_string() == "pretraining runs");
  CHECK_FALSE(r["significant"].as_bool());
  CHECK(r["pretraining"]["mean"].as_number() == Approx(58.0));
  CHECK(r["pretraining"]["std"].as_number() == Approx(3.0));
  const json::Value& o = c.json["rows"][2]["ordo"]["rte.accuracy"];
  CHECK(o["welch_p"].as_number() == Approx(3.276e-6).epsilon(1e-3));
  CHECK(o["tested_over"].as_string() == "fine-tuning seeds");
  CHECK(o["significant"].as_bool());
  const std::string md = c.cells.markdown();
  CHECK_THAT(md, Contains("| base (3 pretraining runs) | B | 51.00 ± 1.00 [3 pretrainings: 53.00 ± 2.00] / 60.00 |"));
  CHECK_THAT(md, Contains("| rep (3 pretraining runs) | R | 61.00 ± 1.00 [3 pretrainings: 58.00 ± 3.00] / 70.00 |"));
  CHECK_THAT(md, Contains("| once (one pretraining run) | O | 81.00 ± 1.00 † / 65.00 |"));
  // The verdicts: rep same direction (+5 over the pretraining runs, paper +10), not significant; once holds.
  const auto* verdicts = reading(c, "rte.accuracy", "verdicts");
  REQUIRE(verdicts != nullptr);
  using experiment::Verdict;
  CHECK(verdicts->verdicts == std::vector<Verdict>{Verdict::consistent, Verdict::holds});
  CHECK_THAT(verdicts->text, Contains("over the pretraining runs' means for the 1 row(s) pretrained several times (‡)"));
  // A row pretrained once reads its direction from the difference its test is over, the two first runs'
  // seeds: `between` {0.51, 0.52, 0.53} is 1 point above base's first run (51) and 1 below base's
  // pretraining mean (53); the paper has it 1 above (61 against 60). Welch over the seeds: standard error
  // sqrt(2/3), t = 1.225 on 4 df, p = 0.288: the paper's direction, not significant (consistent, where
  // reading the baseline's pretraining mean would make it inconclusive).
  const experiment::PaperTable between_table = table_from(dir, "config\tpaper_row\tfamily\tkind\trte.accuracy\n"
                                                               "base\tB\tAPE\tlearned\t60.0\nbetween\tN\tRPE\tfixed\t61.0\n");
  const experiment::Comparison between =
      experiment::compare(between_table, {base, run_with("between", 0, 1, {0.51, 0.52, 0.53})}, plan);
  CHECK(between.json["rows"][1]["ordo"]["rte.accuracy"]["welch_p"].as_number() == Approx(0.2879).epsilon(1e-3));
  CHECK(reading(between, "rte.accuracy", "verdicts")->verdicts == std::vector<Verdict>{Verdict::consistent});

  // An indicator, one value per run, is tested only over pretraining runs: AIV of base's runs
  // {0.10, 0.12, 0.14}, rep's {0.30, 0.32, 0.34}: t = 0.2 / sqrt(2 x 0.0004 / 3) = 12.25 on 4 df, p = 2.55e-4.
  base.record.with_special["translation_invariance_no_special"] = 0.10;
  base.replicates[0].record.with_special["translation_invariance_no_special"] = 0.12;
  base.replicates[1].record.with_special["translation_invariance_no_special"] = 0.14;
  rep.record.with_special["translation_invariance_no_special"] = 0.30;
  rep.replicates[0].record.with_special["translation_invariance_no_special"] = 0.32;
  rep.replicates[1].record.with_special["translation_invariance_no_special"] = 0.34;
  const experiment::PaperTable aiv = table_from(dir, std::string(kHeader) + "base\tB\tAPE\tlearned\t0.01\t1.0\n"
                                                     "rep\tR\tRPE\tlearned\t0.02\t1.0\nonce\tO\tRPE\tfixed\t0.03\t1.0\n");
  const experiment::Comparison ci = experiment::compare(aiv, {base, rep, run_with("once", 0.2, 1)}, plan);
  const json::Value& ri = ci.json["rows"][1]["ordo"]["translation_invariance_no_special"];
  CHECK(ri["welch_p"].as_number() == Approx(2.552e-4).epsilon(1e-3));
  CHECK(ri["significant"].as_bool());
  CHECK_FALSE(ci.json["rows"][2]["ordo"]["translation_invariance_no_special"].contains("welch_p"));
  // rep's AIV is larger (worse) than base's, as the paper's (0.02 > 0.01): holds; once has no test.
  const auto* vi = reading(ci, "translation_invariance_no_special", "verdicts");
  REQUIRE(vi != nullptr);
  CHECK(vi->verdicts == std::vector<Verdict>{Verdict::holds, Verdict::not_testable});
  // The line counts the tested row under its replicate (‡) and leaves the untested one out of the † count.
  CHECK_THAT(vi->text, Contains("t-test over the pretraining runs' means for the 1 row(s) pretrained several times (‡); "));
  CHECK(vi->text.find("(†)") == std::string::npos);
  // No row tested at all (one fine-tuning seed a row): the line says so.
  const experiment::PaperTable rte = table_from(dir, "config\tpaper_row\tfamily\tkind\trte.accuracy\n"
                                                     "base\tB\tAPE\tlearned\t60.0\nonce\tO\tRPE\tfixed\t65.0\n");
  const experiment::Comparison untested = experiment::compare(
      rte, {run_with("base", 0, 1, {0.70}), run_with("once", 0, 1, {0.80})}, plan_with_rte("base"));
  const auto* vu = reading(untested, "rte.accuracy", "verdicts");
  REQUIRE(vu != nullptr);
  CHECK(vu->verdicts == std::vector<Verdict>{Verdict::not_testable});
  CHECK_THAT(vu->text, Contains("Welch's two-sided t-test on no row: none is testable; Holm over"));
}

TEST_CASE("verdicts: a row at chance tests nothing about its task", "[experiment][verdicts]") {
  // Worked by hand: {52, 53, 54} against 50 is 3 points up, inside the 5-point margin; {60, 61, 62}
  // clears it with t = 11 / (1 / sqrt 3) = 19.1 on 2 df; {50, 70, 90} clears it by its mean (70) but
  // t = 20 / (20 / sqrt 3) = 1.732 on 2 df has one-sided p = (1 - 1.732 / sqrt(1.732^2 + 2)) / 2 = 0.113.
  CHECK(experiment::at_chance({52, 53, 54}, 50, 0.05));
  CHECK_FALSE(experiment::at_chance({60, 61, 62}, 50, 0.05));
  CHECK(experiment::at_chance({50, 70, 90}, 50, 0.05));
  CHECK_FALSE(experiment::at_chance({50, 70, 90}, 50, 0.2));
  CHECK_FALSE(experiment::at_chance({60}, 50, 0.05));
  CHECK(experiment::at_chance({54.9}, 50, 0.05));
  CHECK_FALSE(experiment::at_chance({60, 61}, std::nan(""), 0.05));

  test::TempDir dir("paper-chance");
  const experiment::PaperTable t =
      table_from(dir, "config\tpaper_row\tfamily\tkind\trte.accuracy\n"
                      "base\tB\tAPE\tlearned\t60.0\nfar\tF\tRPE\tlearned\t70.0\nlow\tL\tRPE\tfixed\t65.0\n");
  std::vector<experiment::RunResults> runs = {run_with("base", 0, 1, {0.70, 0.71, 0.72}),
                                              run_with("far", 0, 1, {0.80, 0.81, 0.82}),
                                              run_with("low", 0, 1, {0.51, 0.52, 0.53})};
  for (auto& r : runs) r.tasks["rte"].chance = 50.0;
  const experiment::Comparison c = experiment::compare(t, runs, plan_with_rte("base"));
  const auto* verdicts = reading(c, "rte.accuracy", "verdicts");
  REQUIRE(verdicts != nullptr);
  using experiment::Verdict;
  // far beats base as in the paper (significant); low sits at chance: no verdict on it.
  CHECK(verdicts->verdicts == std::vector<Verdict>{Verdict::holds, Verdict::not_testable});
  CHECK_THAT(c.cells.markdown(), Contains("| low | L | 52.00 ± 1.00 (at chance) † / 65.00 |"));
  CHECK(c.json["rows"][2]["ordo"]["rte.accuracy"]["at_chance"].as_number() == 50.0);
  // With the baseline at chance too, two of three rows are: the order itself is not testable.
  runs[0] = run_with("base", 0, 1, {0.50, 0.51, 0.52});
  runs[0].tasks["rte"].chance = 50.0;
  const experiment::Comparison mostly = experiment::compare(t, runs, plan_with_rte("base"));
  REQUIRE(reading(mostly, "rte.accuracy", "rank") != nullptr);
  CHECK(reading(mostly, "rte.accuracy", "rank")->verdicts == std::vector<Verdict>{Verdict::not_testable});
  CHECK_THAT(reading(mostly, "rte.accuracy", "rank")->text, Contains("2 of the 3 rows are at chance"));
  // So is the order of the families, which says so: with one row of three at chance it stands.
  REQUIRE(reading(mostly, "rte.accuracy", "families") != nullptr);
  CHECK_THAT(reading(mostly, "rte.accuracy", "families")->text,
             Contains("The order tests nothing (2 of the 3 rows are at chance: the majority label's 50.0%)."));
  CHECK_THAT(reading(c, "rte.accuracy", "families")->text, !Contains("tests nothing"));
}

TEST_CASE("figures: each pretraining run of a replicated row, its own figures, so the tests can be recomputed",
          "[experiment][paper]") {
  // base is pretrained three times: its runs' rte seeds average 51, 53 and 55 (each ± 1.00), its
  // indicators AIV w/o [CLS] 0.10, 0.12, 0.14 and DB 1.2, 0.8, 1.0; once is pretrained once and stays
  // out of the table. Nothing here is probed for held-out accuracy: that column reads n/a.
  experiment::RunResults base = run_with("base", 0.10, 1.2, {0.50, 0.51, 0.52});
  base.replicates = {run_with("base.seed2", 0.12, 0.8, {0.52, 0.53, 0.54}),
                     run_with("base.seed3", 0.14, 1.0, {0.54, 0.55, 0.56})};
  base.tasks["rte"].chance = 52.5;
  experiment::Plan plan = plan_with_rte("base");
  plan.replicate_seeds = {2, 3};
  test::TempDir dir("paper-pretraining-runs");
  const std::string path = dir / "paper_table3.tsv";
  write_file_atomic(path, "config\tpaper_row\tfamily\tkind\trte.accuracy\nbase\tB\tAPE\tlearned\t60.0\n");
  const experiment::ComparisonFiles out = experiment::render_comparisons(
      plan, {base, run_with("once", 0.2, 1, {0.80, 0.81, 0.82})}, {experiment::read_paper_table(path)});
  auto file = [&](const std::string& name) {
    for (const report::OutputFile& f : out.files)
      if (f.name == name) return f.bytes;
    FAIL("no " << name);
    return std::string();
  };
  const std::string md = file("figures.md");
  CHECK_THAT(md, Contains("## Each pretraining run of the rows pretrained more than once"));
  // The columns: held-out accuracy, rte, glue.mean (rte alone), then the two indicators the runs have.
  CHECK_THAT(md, Contains("| base | base | n/a | 51.00 ± 1.00 | 51.00 ± 1.00 | 0.1000 | 1.2000 |"));
  CHECK_THAT(md, Contains("| base.seed2 | base | n/a | 53.00 ± 1.00 | 53.00 ± 1.00 | 0.1200 | 0.8000 |"));
  CHECK_THAT(md, Contains("| base.seed3 | base | n/a | 55.00 ± 1.00 | 55.00 ± 1.00 | 0.1400 | 1.0000 |"));
  CHECK_THAT(md, !Contains("| once |"));
  const json::Value paper = json::parse(file("paper.json"));
  const json::Value& first = paper["runs"][0];
  CHECK(first["chance"]["rte"].as_number() == Approx(52.5));
  REQUIRE(first["replicates"].size() == 2);
  CHECK(first["replicates"][1]["config"].as_string() == "base.seed3");
  CHECK(first["replicates"][1]["figures"]["rte.score"]["mean"].as_number() == Approx(55.0));
  CHECK(first["replicates"][0]["figures"]["direction_balance"]["mean"].as_number() == Approx(0.8));
  CHECK_FALSE(paper["runs"][1].contains("replicates"));
  // The table is headed as the paper names it; claims.tsv cites it by its file's name.
  CHECK_THAT(file("paper.md"), Contains("\n## Table 3\n"));
  // One paper row: no order and no difference of the paper's to read, said in words.
  CHECK_THAT(file("paper.md"), Contains("(generated from the two tables)\n\n- None against the paper: no column "
                                        "gives the paper's values for two of ordo's rows"));
  CHECK(paper["tables"][0]["readings"][0]["grouping"].as_string() == "none");
  CHECK_THAT(out.html, Contains("<h3>Table 3</h3>"));
  CHECK(paper["tables"][0]["name"].as_string() == "table3");
}
