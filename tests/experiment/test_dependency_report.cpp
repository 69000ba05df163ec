// experiment/dependency_report.h, experiment/layer_report.h and the keyed
// shape of experiment/paper_table.h: the locality/symmetry paper's Tables 8
// and 9 read from their TSVs and set beside a run's dependency_heads.json and
// layers/probing.json written here, with the generated readings; every
// expected cell and verdict is worked by hand from the numbers below, and the
// findings tested over the baseline's pretraining runs against SciPy
// (scipy.stats.ttest_1samp(d, 0) and its confidence_interval(0.95)).
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>

#include "base/file_io.h"
#include "base/json.h"
#include "experiment/dependency_report.h"
#include "experiment/layer_report.h"
#include "experiment/paper_table.h"
#include "experiment/verdicts.h"
#include "tests/experiment/fixtures.h"
#include "tests/helpers.h"
#include "tests/plot/svg_check.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

const char* kRelationsHeader = "relation\tpaper_row\tdistance\tcontextual\tpositional\tboth\n";
const std::string kTable9 = std::string(ORDO_SOURCE_DIR) + "/configs/papers/locality_symmetry/paper_table9.tsv";

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

// A run whose analyze stage read its heads with these attentions (attention() above).
experiment::RunResults analysed_run(const test::TempDir& dir, const std::string& name, const json::Value& contextual,
                                    const json::Value& positional) {
  json::Value analysis = json::Value::object(), attentions = json::Value::object();
  attentions["contextual"] = contextual;
  attentions["positional"] = positional;
  attentions["both"] = attention(0.8, 0.7, 0.6);
  analysis["sentences"] = 5;
  analysis["arcs"] = 30;
  analysis["top"] = 20;
  analysis["attentions"] = attentions;
  analysis["not_defined"] = json::Value::object();
  make_directories(dir / (name + "/analysis"));
  write_file_atomic(dir / (name + "/analysis/dependency_heads.json"), json::dump(analysis));
  experiment::RunResults run;
  run.config = name;
  run.run_dir = dir / name;
  return run;
}

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
experiment::RunResults bert_run(const test::TempDir& dir, const std::string& name,
                                std::tuple<double, double, double> syn, std::pair<double, double> sem) {
  const auto& [depth, constituents, shift] = syn;
  return probed_run(dir, name,
                    {{"tree_depth", {0.6, 0.5, 0.5 + depth / 100}},
                     {"top_constituents", {0.8, 0.78, 0.78 + constituents / 100}},
                     {"bigram_shift", {0.6, 0.5, 0.5 + shift / 100}},
                     {"tense", {0.8, 0.72 + sem.first / 100, 0.72}},
                     {"object_number", {0.8, 0.79 + sem.second / 100, 0.79}}});
}

}  // namespace

TEST_CASE("paper table of relations: the shipped Table 8, '-' rows, summary rows, bad headers named",
          "[experiment][paper][dependency]") {
  const experiment::PaperTable t =
      experiment::read_paper_table(std::string(ORDO_SOURCE_DIR) + "/configs/papers/locality_symmetry/paper_table8.tsv");
  CHECK(t.keyed == "relation");
  CHECK(t.name == "table8");
  REQUIRE(t.rows.size() == 23);  // the paper's 20 relations and short, long, Macro Avg
  CHECK(t.rows[0].key == "root");
  CHECK(t.rows[0].cells.at("contextual").value == 99.3);
  CHECK(t.find("aux:pass")->name == "auxpass");
  CHECK(t.find("macro")->cells.at("both").value == 55.4);
  CHECK_FALSE(t.find("short")->cells.at("distance").present);

  test::TempDir dir("paper-relations");
  CHECK_THROWS_WITH(relations_from(dir, std::string(kRelationsHeader) + "det\tdet\t1\t1\t2\t3\ndet\tdt\t1\t1\t2\t3\n"),
                    Contains("paper_table8.tsv:3: relation 'det' is named twice"));
  // Two relations without a match in ordo's language are both "-".
  CHECK(relations_from(dir, std::string(kRelationsHeader) + "-\tposs\t1\t1\t2\t3\n-\taux\t1\t1\t2\t3\n").rows.size() == 2);
  // Read against a run: the plan must name it.
  experiment::Plan plan;
  CHECK_THROWS_WITH(experiment::check_paper_table(t, plan), Contains("report.dependency_heads"));
  plan.dependency_run = "tupe";
  CHECK_NOTHROW(experiment::check_paper_table(t, plan));
  const experiment::PaperTable short_of_a_column =
      relations_from(dir, "relation\tpaper_row\tdistance\tcontextual\tboth\nroot\tRoot\t0\t1\t2\n");
  CHECK_THROWS_WITH(experiment::check_paper_table(short_of_a_column, plan),
                    Contains("a table of relations has the columns relation, paper_row, distance"));
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
  experiment::RunResults run = analysed_run(dir, "tupe", attention(0.9, 0.2, 0.5), attention(0.1, 0.8, 0.3));
  run.pe = "tupe";
  experiment::Plan plan;
  plan.dependency_run = "tupe";

  const experiment::ReportSection files = experiment::dependency_heads_across_runs(plan, {run}, &paper);
  const std::string& md = files.markdown;
  INFO(md);
  // Root: ordo's fractions in percent beside the paper's; compound has no label of ordo's; nsubj is not among ordo's.
  CHECK_THAT(md, Contains("| Root | root | 0.0 / 0.0 | 90.0 / 99.3 | 10.0 / 3.8 | 80.0 / 86.5 |"));
  CHECK_THAT(md, Contains("| compound | (none) | - / 1.2 | - / 21.7 | - / 75.0 | - / 70.6 |"));
  CHECK_THAT(md, Contains("| nsubj | nsubj | - / 2.3 | - / 13.4 | - / 58.2 | - / 52.6 |"));
  CHECK_THAT(md, Contains("| macro | (summary) | - / - | 53.3 / 27.5 | 40.0 / 46.0 | 70.0 / 55.4 |"));
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

  // A malformed analysis is refused with its file, before any table reads it.
  plan.dependency_run = "tupe";
  json::Value analysis = json::parse_file(dir / "tupe/analysis/dependency_heads.json");
  analysis["attentions"]["both"]["relations"][0]["accuracy"] = "high";
  write_file_atomic(dir / "tupe/analysis/dependency_heads.json", json::dump(analysis));
  CHECK_THROWS_WITH(experiment::dependency_heads_across_runs(plan, {run}, &paper),
                    (dir / "tupe/analysis/dependency_heads.json") + ": json: expected a number, got a string");
}

TEST_CASE("Table 8: the short and long findings tested over the baseline's pretraining runs",
          "[experiment][dependency][verdicts]") {
  test::TempDir dir("dependency-verdicts");
  const experiment::PaperTable paper =
      experiment::read_paper_table(std::string(ORDO_SOURCE_DIR) + "/configs/papers/locality_symmetry/paper_table8.tsv");
  experiment::Plan plan;
  plan.dependency_run = "tupe";
  plan.baseline = "bert";
  plan.alpha = 0.05;
  // Short (root and det) and long (punct), contextual / positional, per run: 0.2 / 0.5 and 0.5 / 0.2;
  // 0.2 / 0.4 and 0.4 / 0.3; 0.3 / 0.6 and 0.3 / 0.35. Positional's lead on short relations +30, +20,
  // +30 points (SciPy: mean 26.67, p = 0.01527, interval [12.32, 41.01]); contextual's on long ones
  // +30, +10, -5 (mean 11.67, p = 0.3688, interval [-31.95, 55.29]).
  experiment::RunResults bert = analysed_run(dir, "bert", attention(0.2, 0.2, 0.5), attention(0.5, 0.5, 0.2));
  bert.replicates = {analysed_run(dir, "bert.seed2", attention(0.3, 0.1, 0.4), attention(0.4, 0.4, 0.3)),
                     analysed_run(dir, "bert.seed3", attention(0.2, 0.4, 0.3), attention(0.6, 0.6, 0.35))};
  const experiment::RunResults tupe = analysed_run(dir, "tupe", attention(0.9, 0.2, 0.5), attention(0.1, 0.8, 0.3));
  const experiment::ReportSection s = experiment::dependency_heads_across_runs(plan, {bert, tupe}, &paper);
  const auto& short_ = test::section_verdict(s, experiment::kDependencyShort);
  CHECK(short_.judgement.verdict == experiment::Verdict::holds);
  CHECK(short_.effect == "bert's positional minus contextual accuracy on short relations +26.7 [+12.3, +41.0] points "
                         "(Student's t over 3 pretraining runs, p = 0.0153)");
  const auto& long_ = test::section_verdict(s, experiment::kDependencyLong);
  CHECK(long_.judgement.verdict == experiment::Verdict::consistent);
  CHECK(long_.effect == "bert's contextual minus positional accuracy on long relations +11.7 [-32.0, +55.3] points "
                        "(Student's t over 3 pretraining runs, p = 0.369)");
  CHECK_THAT(s.markdown, Contains("bert's pretraining runs: +30.0, +10.0, -5.0 points"));
  // One analysed run of the baseline: nothing to test over.
  plan.baseline = "tupe";
  const experiment::ReportSection once = experiment::dependency_heads_across_runs(plan, {bert, tupe}, &paper);
  CHECK_THAT(test::section_verdict(once, experiment::kDependencyLong).judgement.reason,
             Contains("one pretraining run of tupe analysed: no replicate to test over"));
}

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

  const auto& syntactic = test::section_verdict(s, experiment::kLayersSyntactic);
  CHECK(syntactic.judgement.verdict == experiment::Verdict::holds);
  CHECK(syntactic.effect == "bert's positional minus contextual accuracy, mean of tree_depth, top_constituents, "
                            "bigram_shift, +4.9 [+2.8, +7.0] points (Student's t over 3 pretraining runs, "
                            "p = 0.00967)");
  const auto& semantic = test::section_verdict(s, experiment::kLayersSemantic);
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
  const experiment::SectionVerdict& probed_once = test::section_verdict(one, experiment::kLayersSyntactic);
  CHECK(probed_once.judgement.verdict == experiment::Verdict::not_testable);
  CHECK_THAT(probed_once.judgement.reason,
             Contains("one pretraining run of bert probed layer by layer: no replicate to test over"));
  const experiment::ReportSection none = experiment::layer_probing_across_runs(plan, {tupe}, &paper);
  CHECK_THAT(test::section_verdict(none, experiment::kLayersSemantic).judgement.reason,
             Contains("no pretraining run of bert probed layer by layer yet"));
}

TEST_CASE("Table 9 beside the runs' layer probing: the shipped table's rows, cells in percent, the findings read",
          "[experiment][layers]") {
  experiment::Plan plan;
  plan.folder = "f";
  plan.names = {"bert", "tupe"};
  plan.stages = {"pretrain", "tasks", "layers"};
  const experiment::PaperTable shipped =
      experiment::read_paper_table(std::string(ORDO_SOURCE_DIR) + "/configs/papers/locality_symmetry/paper_table9.tsv");
  CHECK(shipped.keyed == "run_attention");
  REQUIRE(shipped.rows.size() == 6);
  CHECK(shipped.find("bert.positional")->name == "BERT-p");
  CHECK(shipped.find("tupe.both")->cells.at("word_content").value == 85.76);
  CHECK_NOTHROW(experiment::check_paper_table(shipped, plan));
  plan.layers.runs = {"tupe"};
  CHECK_THROWS_WITH(experiment::check_paper_table(shipped, plan), Contains("the layers stage does not probe bert"));
  plan.layers.runs.clear();

  test::TempDir dir("layer-report");
  const experiment::PaperTable paper = [&] {
    const std::string path = dir / "paper_table9.tsv";
    write_file_atomic(path, "# The paper, Table 9\nrun_attention\tpaper_row\ttense\tbigram_shift\tsomo\n"
                            "bert.both\tBERT\t85.3\t77.7\t52.4\n"
                            "bert.contextual\tBERT-c\t82.9\t51.2\t51.9\n"
                            "bert.positional\tBERT-p\t67.2\t53.7\t51.2\n");
    return experiment::read_paper_table(path);
  }();
  CHECK_THROWS_WITH([&] {
    const std::string path = dir / "paper_table9.tsv";
    write_file_atomic(path, "run_attention\tpaper_row\ttense\nbert.all\tBERT\t1\n");
    experiment::check_paper_table(experiment::read_paper_table(path), plan);
  }(), Contains("'bert.all' is not RUN.both, RUN.contextual or RUN.positional"));
  // ordo's bert: tense both 0.70, contextual 0.60, positional 0.65; bigram_shift 0.80, 0.50, 0.55.
  // Each with its accuracy by layer (Figure 4's lines): half of it at the embeddings, all of it at layer 1.
  auto by_layer = [](double accuracy) {
    json::Value layers = json::Value::array();
    for (int l = 0; l < 2; ++l) {
      json::Value x = json::Value::object();
      x["layer"] = l;
      x["report_accuracy"] = accuracy * (l + 1) / 2;
      layers.push_back(x);
    }
    return layers;
  };
  auto attention = [&](double tense, double shift) {
    json::Value a = json::Value::object();
    a["accuracy"] = tense;
    a["by_layer"] = by_layer(tense);
    json::Value b = json::Value::object();
    b["accuracy"] = shift;
    b["by_layer"] = by_layer(shift);
    return std::make_pair(a, b);
  };
  json::Value tense = json::Value::object(), shift = json::Value::object();
  tense["attentions"] = json::Value::object();
  shift["attentions"] = json::Value::object();
  const std::pair<const char*, std::pair<double, double>> values[3] = {
      {"both", {0.70, 0.80}}, {"contextual", {0.60, 0.50}}, {"positional", {0.65, 0.55}}};
  for (const auto& [name, v] : values) {
    auto [a, b] = attention(v.first, v.second);
    tense["attentions"][name] = a;
    shift["attentions"][name] = b;
  }
  json::Value probing = json::Value::object();
  probing["tasks"] = json::Value::object();
  probing["tasks"]["tense"] = tense;
  probing["tasks"]["bigram_shift"] = shift;
  make_directories(dir / "bert/layers");
  write_file_atomic(dir / "bert/layers/probing.json", json::dump(probing));
  experiment::RunResults run;
  run.config = "bert";
  run.pe = "ape_learned";
  run.run_dir = dir / "bert";
  const experiment::ReportSection files = experiment::layer_probing_across_runs(plan, {run}, &paper);
  const std::string& md = files.markdown;
  INFO(md);
  // Columns in the paper's order; somo has no figure of ordo's.
  CHECK_THAT(md, Contains("| BERT | bert.both | 70.0 / 85.3 | 80.0 / 77.7 | - / 52.4 |"));
  CHECK_THAT(md, Contains("| BERT-p | bert.positional | 65.0 / 67.2 | 55.0 / 53.7 | - / 51.2 |"));
  // Both ahead of the two others on tense and bigram_shift in both tables (somo: ordo has none, so 2 tasks).
  CHECK_THAT(md, Contains("bert, the combination above both single attentions: the paper on 2 of 2 tasks, ordo on 2 of 2."));
  // Positional above contextual on the syntactic tasks: bigram_shift only here (53.7 > 51.2; 55 > 50).
  CHECK_THAT(md, Contains("the paper on 1 of 1, ordo on 1 of 1."));
  // Contextual above positional on tense: the paper 82.9 > 67.2, ordo 60 < 65.
  CHECK_THAT(md, Contains("contextual above positional on tense and object_number: the paper on 1 of 1, ordo on 0 of 1."));
  // Figure 4 of the run, drawn from its probing.json: a panel per task, one legend entry per attention.
  const auto figure = std::find_if(files.files.begin(), files.files.end(),
                                   [](const report::OutputFile& f) { return f.name == "layers/bert.svg"; });
  REQUIRE(figure != files.files.end());
  const svg_check::Element svg = svg_check::parse(figure->bytes);
  svg_check::check_texts_inside(svg, 13);
  CHECK(svg_check::view_box(svg).first <= 1400);
  for (const char* text : {"tense", "bigram_shift", "both", "contextual", "positional"})
    CHECK(svg_check::count_text(svg, text) == 1);
  CHECK_THAT(files.html, Contains("<img src=\"layers/bert.svg\""));

  // A malformed probing file is refused with its name, before any table reads it.
  probing["tasks"]["tense"]["attentions"]["both"].erase("accuracy");
  write_file_atomic(dir / "bert/layers/probing.json", json::dump(probing));
  CHECK_THROWS_WITH(experiment::layer_probing_across_runs(plan, {run}, &paper),
                    (dir / "bert/layers/probing.json") + ": json: missing key 'accuracy'");
}

TEST_CASE("the locality/symmetry folder's plan reads its six paper tables and names the runs of Tables 8 and 9",
          "[experiment][plan][dependency][layers]") {
  experiment::PlanRequest request;
  request.folder = std::string(ORDO_SOURCE_DIR) + "/configs/papers/locality_symmetry";
  request.out = "/nonexistent/out";
  const experiment::Plan plan = experiment::make_plan(request);
  CHECK(plan.paper_tables.size() == 6);
  CHECK(plan.dependency_run == "tupe");
  CHECK(plan.has_stage("layers"));
  CHECK(plan.layers.runs == std::vector<std::string>{"bert", "tupe"});
  CHECK(plan.to_json()["report"]["dependency_heads"].as_string() == "tupe");
}
