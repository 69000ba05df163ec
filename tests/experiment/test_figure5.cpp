// experiment/tables.h's Figure 5 (Wang et al. 2021: the correlation of
// OPR and DB over the first k offsets with each score) as SVG, read back by
// the test's own XML reader: with eight scores whose names fill more than a
// row, every one is named once in the legend, inside the figure.
#include <algorithm>
#include <cmath>

#include "experiment/figure5.h"
#include "experiment/tables.h"
#include "tests/experiment/fixtures.h"
#include "tests/helpers.h"
#include "tests/plot/svg_check.h"

using namespace ordo;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

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
  CHECK_THAT(figures->bytes, Contains("![Wang et al. 2021, Figure 5](figure5.svg)"));
  // paper.json carries each run's indicators by range, so Figure 5's r can be recomputed from the report.
  const auto paper = std::find_if(out.files.begin(), out.files.end(),
                                  [](const report::OutputFile& f) { return f.name == "paper.json"; });
  REQUIRE(paper != out.files.end());
  const json::Value per_run = json::parse(paper->bytes)["runs"];
  REQUIRE(per_run.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    const json::Value& ranges = per_run[i]["by_range"];
    REQUIRE(ranges["monotonicity_first_k"].size() == 3);
    CHECK(ranges["monotonicity_first_k"][2].as_number() == runs[i].by_range["monotonicity_first_k"][2].as_number());
    CHECK(ranges["direction_balance"][0].as_number() == runs[i].by_range["direction_balance"][0].as_number());
  }
  // Read, with the two claims' verdicts: no SQuAD column for the monotonicity claim; the GLUE mean for the
  // balance claim over l = 1..3, the offsets these runs measured.
  CHECK_THAT(figures->bytes, Contains("**Reading (generated)**"));
  CHECK_THAT(figures->bytes, Contains("- DB over the first l offsets, l = 1..5, against glue.mean: r from"));
  CHECK(out.html.find("<li>OPR over the first k offsets") == std::string::npos);  // no run reaches k = 20
  CHECK_THAT(out.html, Contains("<li>The paper (Appendix C): r of OPR over the first 20-55 offsets with SQuAD below "
                                "-0.9. Verdict: not testable here (no score of span prediction has a value).</li>"));
  REQUIRE(out.verdicts.size() == 2);
  CHECK(out.verdicts[0].key == "figure5.monotonicity");
  CHECK(out.verdicts[0].judgement.verdict == experiment::Verdict::not_testable);
  CHECK(out.verdicts[0].judgement.reason == "no score of span prediction has a value");
  CHECK(out.verdicts[1].key == "figure5.balance");
  CHECK_THAT(out.verdicts[1].effect, StartsWith("r glue.mean over the first 1..3 offsets"));
}

namespace {

// A score's correlations at offsets 1..n: r(k) and p(k) given, five runs each.
experiment::RangeCorrelations curve(const std::string& column, int n, double (*r)(int), double (*p)(int)) {
  experiment::RangeCorrelations c{column, {}};
  for (int k = 1; k <= n; ++k) c.by_range.push_back({r(k), p(k), 5});
  return c;
}

experiment::Verdict verdict_of(const experiment::RangeCorrelations& c, int first, int last, int sign) {
  return experiment::range_verdict("key", c, first, last, sign, "the paper", 0.05).judgement.verdict;
}

}  // namespace

TEST_CASE("Figure 5's claims: one sign at every offset of the range, each significant", "[experiment][paper]") {
  using experiment::Verdict;
  auto significant = [](int) { return 0.01; };
  auto weak = [](int k) { return k == 30 ? 0.2 : 0.01; };  // one offset of the range not significant
  const auto negative = curve("squad.f1", 63, [](int) { return -0.95; }, significant);
  const auto positive = curve("squad.f1", 63, [](int) { return +0.95; }, significant);
  // The paper's sign (negative) at every offset, every p < 0.05: holds.
  CHECK(verdict_of(negative, 20, 55, -1) == Verdict::holds);
  // The other sign everywhere, significant: contradicted.
  CHECK(verdict_of(positive, 20, 55, -1) == Verdict::contradicted);
  // One offset not significant: the range is not (its largest p is 0.2).
  CHECK(verdict_of(curve("squad.f1", 63, [](int) { return -0.9; }, weak), 20, 55, -1) == Verdict::consistent);
  // Both signs in the range: never significant; the median decides the direction.
  const auto mostly_negative = curve("squad.f1", 63, [](int k) { return k < 50 ? -0.9 : 0.9; }, significant);
  CHECK(verdict_of(mostly_negative, 20, 55, -1) == Verdict::consistent);
  CHECK(verdict_of(mostly_negative, 20, 55, +1) == Verdict::inconclusive);
  // An offset outside the range does not count: r > 0 at k < 20 leaves k = 20..55 negative.
  CHECK(verdict_of(curve("squad.f1", 63, [](int k) { return k < 20 ? 0.9 : -0.9; }, significant), 20, 55, -1) ==
        Verdict::holds);
  // The range stops at the longest offset measured; one that starts beyond it cannot be tested.
  CHECK(verdict_of(curve("squad.f1", 30, [](int) { return -0.9; }, significant), 20, 55, -1) == Verdict::holds);
  const experiment::SectionVerdict short_range =
      experiment::range_verdict("key", curve("squad.f1", 10, [](int) { return -0.9; }, significant), 20, 55, -1, "", 0.05);
  CHECK(short_range.judgement.verdict == Verdict::not_testable);
  CHECK_THAT(short_range.judgement.reason, Contains("offsets up to 10"));
  // An offset with fewer than three runs (r NaN) leaves the range untestable.
  const experiment::SectionVerdict gap = experiment::range_verdict(
      "key", curve("squad.f1", 63, [](int k) { return k == 40 ? std::nan("") : -0.9; }, significant), 20, 55, -1, "",
      0.05);
  CHECK(gap.judgement.verdict == Verdict::not_testable);
  // The effect names the range, the extremes, the median and the largest p.
  const experiment::SectionVerdict held =
      experiment::range_verdict("figure5.monotonicity", curve("squad.f1", 63, [](int k) { return -0.3 - 0.01 * k; },
                                                              [](int k) { return 0.0005 * k; }),
                                20, 54, -1, "the paper's words", 0.05);
  CHECK(held.judgement.verdict == Verdict::holds);
  CHECK(held.effect == "r squad.f1 over the first 20..54 offsets from -0.84 to -0.50, median -0.67 (n = 5 runs; "
                       "largest p of one sign 0.027)");
  CHECK(held.paper == "the paper's words");
}
