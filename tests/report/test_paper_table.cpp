// report/paper_table.h: a paper's table read from its TSV, set beside runs
// whose indicators this test chose, and the generated reading — every
// expected order below is worked by hand from the numbers written here.
#include <filesystem>
#include <set>

#include "base/file_io.h"
#include "base/json.h"
#include "report/paper_table.h"
#include "tests/helpers.h"
#include "train/pretrain.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

const char* kHeader = "config\tpaper_row\tfamily\tkind\ttranslation_invariance_no_special\tdirection_balance\n";

report::PaperTable table_from(const test::TempDir& dir, const std::string& body) {
  const std::string path = dir / "paper_t.tsv";
  write_file_atomic(path, body);
  return report::read_paper_table(path);
}

report::RunRecord run_with(double aiv, double db) {
  report::RunRecord r;
  r.run_dir = "r";
  r.with_special = json::Value::object();
  r.with_special["translation_invariance_no_special"] = aiv;
  r.with_special["direction_balance"] = db;
  return r;
}

}  // namespace

TEST_CASE("paper table: read with its source lines; a bad line is named by file and line", "[report][paper]") {
  test::TempDir dir("paper-table");
  const report::PaperTable t = table_from(dir, std::string("# A paper, Table 9\n# second line\n") + kHeader +
                                                   "a\tRow A\tAPE\tlearned\t0.5\t1.25\n"
                                                   "b\tRow B\tRPE\tlearned\t0.125\t0.75\n");
  REQUIRE(t.rows.size() == 2);
  CHECK(t.source == std::vector<std::string>{"A paper, Table 9", "second line"});
  CHECK(t.indicators == std::vector<std::string>{"translation_invariance_no_special", "direction_balance"});
  CHECK(t.find("b")->name == "Row B");
  CHECK(t.find("b")->values.at("direction_balance") == 0.75);
  CHECK(t.find("c") == nullptr);

  struct Bad {
    std::string body, message;
  };
  for (const Bad& bad : std::vector<Bad>{
           {std::string(kHeader) + "a\tRow A\tAPE\tlearned\t0.5\n", "paper_t.tsv:2: 5 columns, the header has 6"},
           {std::string(kHeader) + "a\tRow A\tAPE\tlearned\t0.5\tx1\n", "paper_t.tsv:2: direction_balance 'x1' is not a number"},
           {std::string(kHeader) + "a\tA\tAPE\tl\t1\t1\na\tA\tAPE\tl\t1\t1\n", "paper_t.tsv:3: config 'a' is named twice"},
           {"config\tpaper_row\tfamily\tkind\tperplexity\n", "paper_t.tsv:1: 'perplexity' is not an indicator"},
           {"name\tpaper_row\tfamily\tkind\tsymmetry_sd\n", "paper_t.tsv:1: the header must begin config"},
           {std::string("# only a header\n") + kHeader, "no rows"},
       }) {
    INFO(bad.body);
    CHECK_THROWS_WITH(table_from(dir, bad.body), Contains(bad.message));
  }
}

TEST_CASE("paper table: the reading orders families and kinds by their means, DB by its distance from 1",
          "[report][paper]") {
  test::TempDir dir("paper-reading");
  // Paper: APE rows 0.2 and 0.4 (mean 0.3), RPE 0.1 -> RPE < APE. Kinds of APE: learned 0.2 < fixed 0.4.
  // Direction balance: APE 1.5 and 1.1 (mean 1.3, off by 0.3), RPE 0.8 (off by 0.2) -> RPE < APE.
  const report::PaperTable t = table_from(dir, std::string(kHeader) +
                                                   "a1\tA1\tAPE\tlearned\t0.2\t1.5\n"
                                                   "a2\tA2\tAPE\tfixed\t0.4\t1.1\n"
                                                   "r1\tR1\tRPE\tlearned\t0.1\t0.8\n");
  // ordo: APE 0.1 and 0.05 (mean 0.075) < RPE 0.5: the families reversed; kinds fixed 0.05 < learned 0.1: reversed.
  // Direction balance: APE 0.9 and 1.3 (mean 1.1, off by 0.1) < RPE 1.25 (off by 0.25): reversed.
  const report::RunRecord a1 = run_with(0.1, 0.9), a2 = run_with(0.05, 1.3), r1 = run_with(0.5, 1.25),
                          extra = run_with(0.0, 1.0);
  const std::vector<report::NamedRun> runs = {{"a1", &a1}, {"a2", &a2}, {"r1", &r1}, {"not_in_paper", &extra}};
  const std::vector<report::Reading> readings = report::read_against_paper(runs, t);
  REQUIRE(readings.size() == 4);  // 2 indicators x (families, kinds of APE); RPE has one kind
  CHECK(readings[0].grouping == "families");
  CHECK(readings[0].paper_order == std::vector<std::string>{"RPE", "APE"});
  CHECK(readings[0].ordo_order == std::vector<std::string>{"APE", "RPE"});
  CHECK_FALSE(readings[0].same_best);
  CHECK(readings[1].grouping == "kinds of APE");
  CHECK(readings[1].paper_order == std::vector<std::string>{"learned", "fixed"});
  CHECK(readings[1].ordo_order == std::vector<std::string>{"fixed", "learned"});
  CHECK(readings[2].indicator == "direction_balance");
  CHECK(readings[2].paper_order == std::vector<std::string>{"RPE", "APE"});
  CHECK(readings[2].ordo_order == std::vector<std::string>{"APE", "RPE"});
  CHECK_THAT(readings[2].text, Contains("paper RPE (0.8000) < APE (1.3000); ordo APE (1.1000) < RPE (1.2500)"));
  // Kinds of APE by |DB - 1|: paper learned 1.5 (0.5), fixed 1.1 (0.1) -> fixed first; ordo learned 0.9 (0.1),
  // fixed 1.3 (0.3) -> learned first.
  CHECK(readings[3].paper_order == std::vector<std::string>{"fixed", "learned"});
  CHECK(readings[3].ordo_order == std::vector<std::string>{"learned", "fixed"});

  // The same numbers in ordo as in the paper: every ordering agrees.
  const report::RunRecord b1 = run_with(0.2, 1.5), b2 = run_with(0.4, 1.1), b3 = run_with(0.1, 0.8);
  for (const report::Reading& r : report::read_against_paper({{"a1", &b1}, {"a2", &b2}, {"r1", &b3}}, t))
    CHECK(r.same_order);

  const std::string md = report::comparison_markdown(runs, t);
  CHECK_THAT(md, Contains("| a1 | A1 | 0.1000 / 0.2000 | 0.9000 / 1.5000 |"));
  CHECK_THAT(md, Contains("| not_in_paper | (not in the paper's table) | 0.0000 / n/a | 1.0000 / n/a |"));
  CHECK_THAT(md, Contains("0 of 4 orderings are the paper's"));
  const json::Value j = report::comparison_json(runs, t);
  CHECK(j["rows"][2]["paper"]["translation_invariance_no_special"].as_number() == 0.1);
  CHECK(j["rows"][3]["paper"].is_null());
}

TEST_CASE("paper table: Wang et al.'s Table 2 names the 13 configs, its families matching their encodings",
          "[report][paper]") {
  const std::string folder = std::string(ORDO_SOURCE_DIR) + "/configs/papers/wang2021_table2";
  const report::PaperTable t = report::read_paper_table(folder + "/paper_table2.tsv");
  REQUIRE(t.rows.size() == 13);
  CHECK(t.indicators.size() == 6);
  for (const report::PaperRow& row : t.rows) {
    INFO(row.config);
    REQUIRE(std::filesystem::exists(folder + "/" + row.config + ".json"));
    const std::string pe = train::read_run_config(folder + "/" + row.config + ".json", {}).model.pe;
    const bool ape = pe.rfind("ape", 0) == 0, rpe = pe.find("rpe") != std::string::npos, both = pe.find('+') != std::string::npos;
    if (row.family == "none") CHECK(pe == "none");
    else if (row.family == "APE") CHECK((ape && !both));
    else if (row.family == "RPE") CHECK((rpe && !both));
    else CHECK((row.family == "APE+RPE" && both));
  }
}
