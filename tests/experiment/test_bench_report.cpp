// experiment/bench_report.h: Chen et al. 2021's Table 3 read from the shipped
// paper_table3.tsv (keyed "mode" rows) and set beside an `ordo bench pe
// --json` file written here; every cell and verdict worked by hand.
#include <string>

#include "base/file_io.h"
#include "base/json.h"
#include "experiment/bench_report.h"
#include "experiment/paper_table.h"
#include "experiment/plan.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::Contains;

TEST_CASE("Chen et al.'s Table 3 beside ordo bench pe's ratios: cells in percent, the paper's order read",
          "[experiment][bench]") {
  const experiment::PaperTable paper =
      experiment::read_paper_table(std::string(ORDO_SOURCE_DIR) + "/configs/papers/chen2021/paper_table3.tsv");
  CHECK(paper.keyed == "mode");
  CHECK(paper.find("inference.small")->cells.at("rpe_shaw").value == 65);
  experiment::Plan plan;
  CHECK_THROWS_WITH(experiment::check_paper_table(paper, plan), Contains("report.bench_pe"));
  plan.bench_pe = true;
  CHECK_NOTHROW(experiment::check_paper_table(paper, plan));

  test::TempDir dir("bench-report");
  plan.out = dir.path;
  CHECK_THAT(experiment::bench_pe_table3(plan, &paper).markdown, Contains("No " + dir.path + "/bench_pe.json yet"));
  // Training: Shaw 1.30, TUPE 1.10 of REL-SCALAR's time (the paper's order); inference: TUPE 0.95 (not).
  write_file_atomic(dir / "bench_pe.json",
                    R"({"config": "tiny", "batch": 32, "length": 64, "device": "cpu", "machine": "x", "threads": 2,)"
                    R"( "steps": 5, "rounds": 3, "chen2021_table3": {"training": {"rpe_shaw": 1.30, "tupe": 1.10,)"
                    R"( "rel_scalar": 1}, "inference": {"rpe_shaw": 1.25, "tupe": 0.95, "rel_scalar": 1}}})");
  const std::string md = experiment::bench_pe_table3(plan, &paper).markdown;
  INFO(md);
  // The mode names align left, every figure right (a Markdown renderer reads the alignment row).
  CHECK_THAT(md, Contains("| --- | ---: | ---: | ---: |\n| training |"));
  CHECK_THAT(md, Contains("| training | +30% / +13% / +24% | +10% / +1% / +4% | +0% |"));
  CHECK_THAT(md, Contains("| inference | +25% / +33% / +65% | -5% / +19% / +27% | +0% |"));
  CHECK_THAT(md, Contains("training: the paper's order, Shaw above TUPE above REL-SCALAR (at both sizes), holds here"));
  CHECK_THAT(md, Contains("inference: the paper's order, Shaw above TUPE above REL-SCALAR (at both sizes), does not "
                          "hold here (Shaw +25%, TUPE -5%)."));
}

TEST_CASE("the chen2021 folder's plan reads its step-time table with report.bench_pe", "[experiment][plan][bench]") {
  experiment::PlanRequest request;
  request.folder = std::string(ORDO_SOURCE_DIR) + "/configs/papers/chen2021";
  request.out = "/nonexistent/out";
  const experiment::Plan plan = experiment::make_plan(request);
  CHECK(plan.bench_pe);
  CHECK(plan.to_json()["report"]["bench_pe"].as_bool());
  CHECK(std::any_of(plan.paper_tables.begin(), plan.paper_tables.end(),
                    [](const std::string& p) { return p.find("paper_table3.tsv") != std::string::npos; }));
}
