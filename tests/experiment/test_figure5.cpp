// experiment/tables.h's Figure 5 (Wang et al. 2021: the correlation of
// OPR and DB over the first k offsets with each score) as SVG, read back by
// the test's own XML reader: with eight scores whose names fill more than a
// row, every one is named once in the legend, inside the figure.
#include <algorithm>

#include "experiment/tables.h"
#include "tests/experiment/fixtures.h"
#include "tests/helpers.h"
#include "tests/plot/svg_check.h"

using namespace ordo;
using Catch::Matchers::Contains;

TEST_CASE("Figure 5: every score named once in a legend inside the SVG", "[experiment][paper][svg]") {
  experiment::Plan plan = test::plan_with_rte();
  std::vector<std::string> names;
  for (int k = 1; k < 8; ++k) {
    experiment::FinetuneTask t = plan.finetune[0];
    t.name = "synthetic_roles_" + std::to_string(k);
    plan.finetune.push_back(t);
  }
  for (const experiment::FinetuneTask& t : plan.finetune) names.push_back(t.name + ".score");

  // Four runs with a position encoding; offsets 1..3 of OPR and DB, and scores that vary with them.
  std::vector<experiment::RunResults> runs;
  for (int i = 0; i < 4; ++i) {
    experiment::RunResults r;
    r.config = "run_" + std::to_string(i);
    r.pe = "ape_learned";
    r.probed = true;
    r.record.run_dir = r.config;
    r.record.attention = Matrix(4, 4, 0.25);
    r.record.with_special = json::Value::object();
    for (const char* key : {"monotonicity", "monotonicity_first_k", "translation_invariance",
                            "translation_invariance_no_special", "symmetry_sd", "direction_balance"})
      r.record.with_special[key] = 0.1 * (i + 1);
    r.record.without_special = r.record.with_special;
    r.by_range = json::Value::object();
    json::Value opr = json::Value::array(), db = json::Value::array();
    for (int k = 1; k <= 3; ++k) opr.push_back(0.1 * i + 0.01 * k * k * i * i), db.push_back(1.0 + 0.2 * (3 - i) * k);
    r.by_range["monotonicity_first_k"] = opr;
    r.by_range["direction_balance"] = db;
    for (size_t t = 0; t < plan.finetune.size(); ++t)
      r.tasks[plan.finetune[t].name] = test::accuracy_task({0.5 + 0.05 * i * (t % 2 ? 1 : -1) + 0.01 * t * i * i});
    runs.push_back(r);
  }
  const experiment::ComparisonFiles out = experiment::render_comparisons(plan, runs, {});
  const auto svg = std::find_if(out.files.begin(), out.files.end(),
                                [](const report::OutputFile& f) { return f.name == "figure5.svg"; });
  REQUIRE(svg != out.files.end());
  const svg_check::Element doc = svg_check::parse(svg->bytes);
  svg_check::check_texts_inside(doc, 13);
  CHECK(svg_check::view_box(doc).first <= 1280);
  for (const std::string& name : names) {
    INFO(name);
    CHECK(svg_check::count_text(doc, name) == 1);
  }
  CHECK(svg_check::count_text(doc, "Pearson r (unitless)") == 2);
  CHECK_THAT(out.html, Contains("<img src=\"figure5.svg\""));
  const auto figures = std::find_if(out.files.begin(), out.files.end(),
                                    [](const report::OutputFile& f) { return f.name == "figures.md"; });
  REQUIRE(figures != out.files.end());
  CHECK_THAT(figures->bytes, Contains("![Figure 5](figure5.svg)"));
}
