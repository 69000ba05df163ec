// experiment/dependency_report.h and the relations shape of experiment/paper_table.h:
// the locality/symmetry paper's Table 8 read from its TSV and set beside a
// run's dependency_heads.json written here, with the generated reading; every
// expected cell and verdict is worked by hand from the numbers below.
#include <string>

#include "base/file_io.h"
#include "base/json.h"
#include "experiment/dependency_report.h"
#include "experiment/paper_table.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

const char* kRelationsHeader = "relation\tpaper_row\tdistance\tcontextual\tpositional\tboth\n";

experiment::PaperTable relations_from(const test::TempDir& dir, const std::string& body) {
  const std::string path = dir / "paper_table8.tsv";
  write_file_atomic(path, body);
  return experiment::read_paper_table(path);
}

json::Value relation(const std::string& name, double distance, double accuracy) {
  json::Value r = json::Value::object();
  r["relation"] = name;
  r["arcs"] = 10;
  r["distance"] = distance;
  r["accuracy"] = accuracy;
  r["layer"] = 1;
  r["head"] = 1;
  r["direction"] = "dependent→head";
  return r;
}

// root (length 0), det (1.5), punct (6) with these accuracies; the summaries as probe::summarize gives them.
json::Value attention(double root, double det, double punct) {
  json::Value a = json::Value::object(), list = json::Value::array();
  list.push_back(relation("root", 0, root));
  list.push_back(relation("det", 1.5, det));
  list.push_back(relation("punct", 6, punct));
  a["relations"] = list;
  a["short"] = (root + det) / 2;
  a["long"] = punct;
  a["macro"] = (root + det + punct) / 3;
  return a;
}

}  // namespace

TEST_CASE("paper table of relations: the shipped Table 8, '-' rows, summary rows, bad headers named",
          "[experiment][paper][dependency]") {
  const experiment::PaperTable t =
      experiment::read_paper_table(std::string(ORDO_SOURCE_DIR) + "/configs/papers/locality_symmetry/paper_table8.tsv");
  CHECK(t.relations);
  CHECK(t.name == "table8");
  REQUIRE(t.rows.size() == 23);  // the paper's 20 relations and short, long, Macro Avg
  CHECK(t.rows[0].key == "root");
  CHECK(t.rows[0].cells.at("contextual").value == 99.3);
  CHECK(t.find("aux:pass")->name == "auxpass");
  CHECK(t.find("macro")->cells.at("both").value == 55.4);
  CHECK_FALSE(t.find("short")->cells.at("distance").present);

  test::TempDir dir("paper-relations");
  CHECK_THROWS_WITH(relations_from(dir, "relation\tpaper_row\tdistance\tcontextual\tboth\n"),
                    Contains("a table of relations has the columns relation, paper_row, distance"));
  CHECK_THROWS_WITH(relations_from(dir, std::string(kRelationsHeader) + "det\tdet\t1\t1\t2\t3\ndet\tdt\t1\t1\t2\t3\n"),
                    Contains("paper_table8.tsv:3: relation 'det' is named twice"));
  // Two relations without a match in ordo's language are both "-".
  CHECK(relations_from(dir, std::string(kRelationsHeader) + "-\tposs\t1\t1\t2\t3\n-\taux\t1\t1\t2\t3\n").rows.size() == 2);
  // Read against a run: the plan must name it.
  experiment::Plan plan;
  CHECK_THROWS_WITH(experiment::check_paper_table(t, plan), Contains("report.dependency_heads"));
  plan.dependency_run = "tupe";
  CHECK_NOTHROW(experiment::check_paper_table(t, plan));
}

TEST_CASE("Table 8 beside a run's heads: cells in percent, ordo's extra relations, the three findings read",
          "[experiment][dependency]") {
  test::TempDir dir("dependency-report");
  const experiment::PaperTable paper = relations_from(
      dir, std::string("# The paper, Table 8\n") + kRelationsHeader +
               "root\tRoot\t0.0\t99.3\t3.8\t86.5\n"
               "-\tcompound\t1.2\t21.7\t75.0\t70.6\n"
               "det\tdet\t1.8\t47.9\t52.9\t51.6\n"
               "punct\tpunct\t7.3\t25.9\t30.3\t32.7\n"
               "nsubj\tnsubj\t2.3\t13.4\t58.2\t52.6\n"
               "short\tshort\t-\t28.4\t54.3\t61.6\n"
               "long\tlong\t-\t24.7\t21.0\t36.8\n"
               "macro\tMacro Avg\t-\t27.5\t46.0\t55.4\n");
  json::Value analysis = json::Value::object(), attentions = json::Value::object();
  attentions["contextual"] = attention(0.9, 0.2, 0.5);
  attentions["positional"] = attention(0.1, 0.8, 0.3);
  attentions["both"] = attention(0.8, 0.7, 0.6);
  analysis["sentences"] = 5;
  analysis["arcs"] = 30;
  analysis["top"] = 20;
  analysis["attentions"] = attentions;
  analysis["not_defined"] = json::Value::object();
  make_directories(dir / "tupe/analysis");
  write_file_atomic(dir / "tupe/analysis/dependency_heads.json", json::dump(analysis));
  experiment::RunResults run;
  run.config = "tupe";
  run.pe = "tupe";
  run.run_dir = dir / "tupe";
  experiment::Plan plan;
  plan.dependency_run = "tupe";

  const experiment::DependencyFiles files = experiment::dependency_heads_across_runs(plan, {run}, &paper);
  const std::string& md = files.markdown;
  INFO(md);
  // Root: ordo's fractions in percent beside the paper's; compound has no label of ordo's; nsubj is not among ordo's.
  CHECK_THAT(md, Contains("| Root | root | 0.0 / 0.0 | 90.0 / 99.3 | 10.0 / 3.8 | 80.0 / 86.5 |"));
  CHECK_THAT(md, Contains("| compound | (none) | - / 1.2 | - / 21.7 | - / 75.0 | - / 70.6 |"));
  CHECK_THAT(md, Contains("| nsubj | nsubj | - / 2.3 | - / 13.4 | - / 58.2 | - / 52.6 |"));
  CHECK_THAT(md, Contains("| **macro** |  | - / - | 53.3 / 27.5 | 40.0 / 46.0 | 70.0 / 55.4 |"));
  // Short: the paper's positional ahead (54.3 > 28.4), ordo's behind (45.0 < 55.0).
  CHECK_THAT(md, Contains("Short relations (mean length <= 4 words): the paper's positional attention 54.3 against "
                          "contextual 28.4; ordo's 45.0 against 55.0 — the opposite direction."));
  // Long: contextual ahead in both (24.7 > 21.0; 50.0 > 30.0).
  CHECK_THAT(md, Contains("ordo's 50.0 against 30.0 — the same direction."));
  // Macro: the paper both > positional > contextual; ordo both 70.0 > contextual 53.3 > positional 40.0.
  CHECK_THAT(md, Contains("ordo's both 70.0 > contextual 53.3 > positional 40.0 — the same best, another order."));
  // Positional minus contextual: root -80 (paper -95.5), det +60 (+5.0), punct -20 (+4.4): 2 of 3.
  CHECK_THAT(md, Contains("positional minus contextual has the paper's sign in 2 of 3; not in punct."));
  // Every run's summary: macro (short / long).
  CHECK_THAT(md, Contains("| tupe | tupe | 5 | 53.3 (55.0 / 50.0) | 40.0 (45.0 / 30.0) | 70.0 (75.0 / 60.0) |"));
  bool table = false;
  for (const auto& f : files.files) table = table || f.name == "dependency/table8.md";
  CHECK(table);

  // A run whose analysis has not run yet is said to lack it.
  plan.dependency_run = "bert";
  CHECK_THAT(experiment::dependency_heads_across_runs(plan, {run}, &paper).markdown,
             Contains("Run bert has no dependency_heads.json yet"));
}
