// `ordo analyze` on tiny runs made here: the index has the shape `ordo
// report` reads, every file it names exists (the SVG figures parse, their
// texts inside the picture and no wider than a page), what does not
// apply to a variant is listed with its reason, and every mistake ends in
// one clear line, exit 1 and an output directory left as it was.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fnmatch.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/file_io.h"
#include "base/json.h"
#include "probe/analyze_parts.h"
#include "tests/helpers.h"
#include "tests/plot/svg_check.h"

using ordo::test::run_ordo;
using ordo::test::TempDir;
namespace json = ordo::json;

namespace {

// Two checkpoints (steps 1 and 2) so the snapshots have something to show.
std::string analysis_run_config(const std::string& pe) {
  return R"({"model": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,)"
         R"( "max_position_embeddings": 24, "pe": ")" +
         pe +
         R"("}, "data": {"synthetic_sentences": 200, "vocab_size": 150, "held_out_fraction": 0.2},)"
         R"( "train": {"steps": 2, "batch_size": 2, "max_seq_length": 16, "eval_every": 0, "checkpoint_every": 1,)"
         R"( "device": "cpu"}})";
}

void make_run(const TempDir& dir, const std::string& name, const std::string& pe) {
  std::ofstream(dir / (name + ".json")) << analysis_run_config(pe);
  auto r = run_ordo("pretrain --config " + (dir / (name + ".json")) + " --out " + (dir / name) + " --quiet");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

json::Value read_index(const std::string& out) { return json::parse(ordo::read_file(out + "/index.json")); }

std::set<std::string> titles(const json::Value& list) {
  std::set<std::string> t;
  for (size_t i = 0; i < list.size(); ++i) t.insert(list[i]["title"].as_string());
  return t;
}

// Every entry: title, figure, one of csv / json, caption; every named file
// exists; each figure an SVG whose texts lie inside it, at least 13 px, and
// at most 1400 px wide (shown at its own size on a page that wide).
void check_index(const json::Value& index, const std::string& out) {
  REQUIRE(index.is_object());
  REQUIRE(index["variant"].is_string());
  REQUIRE(index["analyses"].is_array());
  REQUIRE(index["skipped"].is_array());
  for (size_t i = 0; i < index["analyses"].size(); ++i) {
    const json::Value& e = index["analyses"][i];
    INFO(json::dump(e));
    REQUIRE(e["title"].is_string());
    REQUIRE(!e["caption"].as_string().empty());
    const bool csv = e.contains("csv"), js = e.contains("json");
    REQUIRE(csv != js);
    REQUIRE(ordo::file_exists(out + "/" + e[csv ? "csv" : "json"].as_string()));
    const std::string figure = out + "/" + e["figure"].as_string();
    REQUIRE(figure.size() > 4);
    CHECK(figure.substr(figure.size() - 4) == ".svg");
    REQUIRE(ordo::file_exists(figure));
    const ordo::svg_check::Element svg = ordo::svg_check::parse(ordo::read_file(figure));
    ordo::svg_check::check_texts_inside(svg, 13);
    const auto [width, height] = ordo::svg_check::view_box(svg);
    CHECK(width > 100);
    CHECK(width <= 1400);
    CHECK(height > 100);
    if (js) CHECK(json::parse(ordo::read_file(out + "/" + e["json"].as_string())).is_object());
  }
  for (size_t i = 0; i < index["skipped"].size(); ++i) {
    REQUIRE(index["skipped"][i]["title"].is_string());
    REQUIRE(!index["skipped"][i]["reason"].as_string().empty());
  }
}

}  // namespace

TEST_CASE("ordo analyze on a tiny ape_learned run writes every analysis and the index", "[analysis][cli]") {
  TempDir dir("analyze-cli");
  make_run(dir, "run", "ape_learned");
  const std::string out = dir / "ana";
  auto r = run_ordo("analyze --run " + (dir / "run") + " --out " + out + " --eval-sequences 4 --quiet");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json::Value index = read_index(out);
  check_index(index, out);
  CHECK(index["variant"].as_string() == "ape_learned");
  CHECK(index["checkpoint"].as_string() == "step_2");
  std::set<std::string> done = titles(index["analyses"]), skipped = titles(index["skipped"]);
  for (const char* t : {"Absolute position vectors: dot products and cosine similarity",
                        "Position-position term P W^Q (W^K)^T P^T of layer 1",
                        "Numerical rank of the token-token and positional attention terms per head",
                        "Absolute position regression (linear, 5-fold cross-validation)",
                        "Relative order classification (logistic regression on position pairs)",
                        "Informativeness: cumulative share of the top-k singular values",
                        "Position patterns at checkpoints during pretraining",
                        "Indicators of layer 1 during pretraining",
                        "Skip-position attack: positions multiplied by c at evaluation"})
    CHECK(done.count(t) == 1);
  // The trajectory: a row per checkpoint; its last is what `ordo probe` finds with the same words.
  const json::Value trajectory = json::parse(ordo::read_file(out + "/indicator_trajectory.json"));
  REQUIRE(trajectory["steps"].size() == 2);
  CHECK(trajectory["steps"][0]["step"].as_int() == 1);
  CHECK(trajectory["length"].as_int() == 16);
  auto probed = run_ordo("probe --checkpoint " + (dir / "run") + " --out " + (dir / "probe") + " --words " +
                         std::to_string(trajectory["words"].as_int()) + " --length 16 --seed 1");
  REQUIRE(probed.exit_code == 0);
  const json::Value layer1 = json::parse(ordo::read_file(dir / "probe/indicators.json"))["layer_1"];
  CHECK(json::dump(trajectory["steps"][1]["without_special"]) == json::dump(layer1["without_special"]));
  CHECK(json::dump(trajectory["steps"][1]["with_special"]) == json::dump(layer1["with_special"]));
  // Without --length, a run's checkpoint is probed at the length it was pretrained at (16), not its table's 24.
  REQUIRE(run_ordo("probe --checkpoint " + (dir / "run") + " --out " + (dir / "probe16") + " --words 5").exit_code == 0);
  CHECK(json::parse(ordo::read_file(dir / "probe16/probe.json"))["length"].as_int() == 16);
  // No relative vectors, no learnable frequencies. Beyond the pretraining
  // length 16: the 24-row table holds length 24 (1.5 x 16), not 32 (2 x 16).
  CHECK(skipped.count("Relative position vectors: dot products and cosine similarity (0.95 threshold)") == 1);
  CHECK(skipped.count("Learned frequencies of learnable sinusoids against the fixed ones") == 1);
  CHECK(done.count("Evaluation beyond the pretraining length") == 1);
  json::Value beyond = json::parse(ordo::read_file(out + "/beyond_length.json"));
  CHECK(beyond["lengths"].size() == 2);  // 16 and 24
  CHECK(beyond["not_evaluated"].as_string().find("positions 0..23") != std::string::npos);
  // The attack on c = 2: length 8 (positions up to 14 < 16), the same windows both ways.
  json::Value attack = json::parse(ordo::read_file(out + "/skip_position_attack.json"));
  CHECK(attack["conditions"][0]["factor"].as_int() == 2);
  CHECK(attack["conditions"][0]["length"].as_int() == 8);
  CHECK(attack["conditions"][0]["unattacked"]["predicted_tokens"].as_int() ==
        attack["conditions"][0]["attacked"]["predicted_tokens"].as_int());
  // The regression table's controls: the sinusoid's MAE near 0.
  json::Value reg = json::parse(ordo::read_file(out + "/position_regression.json"));
  CHECK(reg["tables"]["fixed sinusoid"]["mae"].as_number() < 0.5);
  // Two checkpoints, two snapshots.
  CHECK(json::parse(ordo::read_file(out + "/snapshots.json"))["snapshots"].size() == 2);
  // A legend entry per series: once in a chart, once per panel in a grid of two.
  using ordo::svg_check::count_text;
  const auto figure = [&](const char* name) { return ordo::svg_check::parse(ordo::read_file(out + "/" + name)); };
  const ordo::svg_check::Element shares = figure("informativeness.svg");
  for (const char* table : {"ape_learned", "sinusoid", "random"}) CHECK(count_text(shares, table) == 1);
  const ordo::svg_check::Element regression = figure("position_regression.svg");
  for (const char* series : {"MAE", "predict the mean"}) CHECK(count_text(regression, series) == 1);
  const ordo::svg_check::Element skip = figure("skip_position_attack.svg");
  for (const char* series : {"positions 0,1,2,...", "positions 0,c,2c,..."}) CHECK(count_text(skip, series) == 2);
  // Each file written is claimed by exactly one row of the analyses'
  // registry (probe/analyze_run.cpp), and the rows' names are distinct.
  const std::vector<ordo::probe::analyses::Analysis>& registry = ordo::probe::analyses::registered_analyses();
  std::set<std::string> names;
  for (const auto& a : registry) CHECK(names.insert(a.name).second);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    const std::string file = entry.path().filename().string();
    if (file == "index.json") continue;
    int rows = 0;
    for (const auto& a : registry)
      for (const std::string& pattern : a.writes) rows += ::fnmatch(pattern.c_str(), file.c_str(), 0) == 0;
    INFO(file);
    CHECK(rows == 1);
    ++files;
  }
  CHECK(files >= 20);

  // An earlier checkpoint by name; the same seed gives the same numbers again.
  auto again = run_ordo("analyze --run " + (dir / "run") + " --out " + (dir / "ana1") +
                        " --checkpoint step_1 --eval-sequences 4 --quiet");
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK(read_index(dir / "ana1")["checkpoint"].as_string() == "step_1");
  auto same = run_ordo("analyze --run " + (dir / "run") + " --out " + (dir / "ana2") + " --eval-sequences 4 --quiet");
  REQUIRE(same.exit_code == 0);
  CHECK(ordo::read_file(out + "/skip_position_attack.json") == ordo::read_file(dir / "ana2/skip_position_attack.json"));
  CHECK(ordo::read_file(out + "/relative_order.json") == ordo::read_file(dir / "ana2/relative_order.json"));
}

TEST_CASE("ordo analyze skips what a variant lacks: none and rpe_sin_learnable", "[analysis][cli]") {
  TempDir dir("analyze-variants");
  make_run(dir, "none", "none");
  make_run(dir, "rel", "rpe_sin_learnable");
  auto r = run_ordo("analyze --run " + (dir / "none") + " --out " + (dir / "a") + " --eval-sequences 4 --quiet");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json::Value index = read_index(dir / "a");
  check_index(index, dir / "a");
  std::set<std::string> done = titles(index["analyses"]);
  CHECK(done == std::set<std::string>{"Skip-position attack: positions multiplied by c at evaluation",
                                      "Indicators of layer 1 during pretraining",
                                      "Evaluation beyond the pretraining length",
                                      "Layer-1 attention on held-out text, mean over heads",
                                      "Attention heads as dependency parsers: contextual, positional and both (Table 8, Fig. 5)"});
  // Identical words and no positions: every inner row of the attention is the same, so the inner
  // matrix is translation invariant (AIV 0) at every checkpoint.
  const json::Value steps = json::parse(ordo::read_file(dir / "a/indicator_trajectory.json"))["steps"];
  REQUIRE(steps.size() == 2);
  for (size_t i = 0; i < steps.size(); ++i)
    CHECK(steps[i]["without_special"]["translation_invariance"].as_number() == 0);
  for (size_t i = 0; i < index["skipped"].size(); ++i)
    CHECK(index["skipped"][i]["reason"].as_string().find("none") != std::string::npos);

  r = run_ordo("analyze --run " + (dir / "rel") + " --out " + (dir / "b") + " --eval-sequences 4 --quiet");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  index = read_index(dir / "b");
  check_index(index, dir / "b");
  done = titles(index["analyses"]);
  CHECK(done.count("Relative position vectors: dot products and cosine similarity (0.95 threshold)") == 1);
  CHECK(done.count("Learned frequencies of learnable sinusoids against the fixed ones") == 1);
  CHECK(done.count("Position patterns at checkpoints during pretraining") == 1);
  CHECK(done.count("Evaluation beyond the pretraining length") == 1);
  json::Value beyond = json::parse(ordo::read_file(dir / "b/beyond_length.json"));
  CHECK(beyond["lengths"].size() == 3);  // 16, 24, 32: a functional encoding takes any distance
  // The relative table spans offsets -15..15 (pretraining length 16).
  CHECK(json::parse(ordo::read_file(dir / "b/relative_threshold.json"))["first_offset"].as_int() == -15);
}

TEST_CASE("ordo analyze draws the positional score terms of every layer and head where the layers differ "
          "(the locality/symmetry paper, Figs. 9-10)", "[analysis][cli]") {
  TempDir dir("analyze-layers");
  for (const std::string pe : {"rel_scalar", "alibi"}) {  // a table per layer and head; one slope per head for all
    std::string config = analysis_run_config(pe);
    config.replace(config.find("\"num_hidden_layers\": 1"), 22, "\"num_hidden_layers\": 2");
    std::ofstream(dir / (pe + ".json")) << config;
    auto r = run_ordo("pretrain --config " + (dir / (pe + ".json")) + " --out " + (dir / pe) + " --quiet");
    REQUIRE(r.exit_code == 0);
    r = run_ordo("analyze --run " + (dir / pe) + " --out " + (dir / (pe + "_a")) + " --eval-sequences 4 --quiet");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const json::Value index = read_index(dir / (pe + "_a"));
    check_index(index, dir / (pe + "_a"));
    const bool drawn = titles(index["analyses"]).count("Positional score terms of every layer and head") == 1;
    CHECK(drawn == (pe == "rel_scalar"));
    if (!drawn) {
      CHECK_THAT(json::dump(index["skipped"]), Catch::Contains("the layers share the terms"));
      continue;
    }
    // One row per layer and head: locality and symmetry of a row distribution, each in [0, 1].
    const std::string csv = ordo::read_file(dir / "rel_scalar_a/positional_scores_layers.csv");
    std::istringstream lines(csv);
    std::string line;
    std::getline(lines, line);
    CHECK(line == "layer,head,locality,symmetry");
    std::vector<std::pair<int, int>> cells;
    while (std::getline(lines, line)) {
      double layer, head, locality, symmetry;
      REQUIRE(std::sscanf(line.c_str(), "%lf,%lf,%lf,%lf", &layer, &head, &locality, &symmetry) == 4);
      cells.emplace_back(static_cast<int>(layer), static_cast<int>(head));
      CHECK((locality >= 0 && locality <= 1));
      CHECK((symmetry >= 0 && symmetry <= 1));
    }
    CHECK(cells == std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {2, 2}});
  }
}

TEST_CASE("ordo analyze reads huang_m1's and huang_m4's own tables and layer-1 attention on text (Huang et al. "
          "2020, Figs. 4-5)", "[analysis][cli]") {
  TempDir dir("analyze-huang");
  make_run(dir, "m4", "huang_m4");
  make_run(dir, "m1", "huang_m1");
  auto r = run_ordo("analyze --run " + (dir / "m4") + " --out " + (dir / "a") + " --eval-sequences 4 --quiet");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json::Value index = read_index(dir / "a");
  check_index(index, dir / "a");
  std::set<std::string> done = titles(index["analyses"]);
  CHECK(done.count("Per-offset parameters of layer 1 (offsets -50..50 at most)") == 1);
  CHECK(done.count("Relative position vectors: dot products and cosine similarity (0.95 threshold)") == 1);
  CHECK(done.count("Layer-1 attention on held-out text, mean over heads") == 1);
  // Fig. 4: offsets -15..15 (pretraining length 16), one column per dimension of a head (16 / 2 heads = 8).
  const std::string vectors = ordo::read_file(dir / "a/offset_parameters.csv");
  CHECK(vectors.rfind("offset,d0,d1,d2,d3,d4,d5,d6,d7\n-15,", 0) == 0);
  CHECK(std::count(vectors.begin(), vectors.end(), '\n') == 1 + 31);
  // Fig. 5: every row of the mean attention is a distribution; the mean at offset 0 is the diagonal's mean.
  std::ifstream csv(dir / "a/attention_text_layer1.csv");
  std::string line;
  int64_t rows = 0;
  double diagonal = 0;
  while (std::getline(csv, line)) {
    std::stringstream cells(line);
    std::string cell;
    double sum = 0;
    for (int64_t j = 0; std::getline(cells, cell, ','); ++j) {
      sum += std::stod(cell);
      if (j == rows) diagonal += std::stod(cell);
    }
    CHECK(std::fabs(sum - 1) <= 1e-5);
    ++rows;
  }
  CHECK(rows == 16);
  const json::Value text = json::parse(ordo::read_file(dir / "a/attention_text_layer1.json"));
  CHECK(std::fabs(text["self"].as_number() - diagonal / 16) <= 1e-6);
  CHECK(text["by_offset"].size() == 31);

  // Method 1: one scalar per offset, w_|r|: drawn as a curve, symmetric in r; no cosines of scalars.
  r = run_ordo("analyze --run " + (dir / "m1") + " --out " + (dir / "b") + " --eval-sequences 4 --quiet");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  index = read_index(dir / "b");
  check_index(index, dir / "b");
  CHECK(titles(index["analyses"]).count("Per-offset parameters of layer 1 (offsets -50..50 at most)") == 1);
  CHECK(titles(index["skipped"]).count("Relative position vectors: dot products and cosine similarity (0.95 threshold)") == 1);
  std::ifstream gates(dir / "b/offset_parameters.csv");
  std::map<int64_t, std::string> w;
  REQUIRE(std::getline(gates, line));
  CHECK(line == "offset,d0");
  while (std::getline(gates, line)) w[std::stoll(line.substr(0, line.find(',')))] = line.substr(line.find(',') + 1);
  REQUIRE(w.size() == 31);
  for (int64_t o = 1; o <= 15; ++o) CHECK(w[o] == w[-o]);
}

TEST_CASE("ordo analyze refuses bad flags and runs with a message, exit 1 and the output kept", "[analysis][cli][errors]") {
  TempDir dir("analyze-errors");
  make_run(dir, "run", "ape_learned");
  const std::string out = dir / "out";
  ordo::make_directories(out);
  ordo::write_file_atomic(out + "/index.json", "earlier");
  std::ofstream(dir / "afile") << "x";
  ordo::make_directories(dir / "empty");
  ordo::make_directories(dir / "nockpt");
  std::ofstream(dir / "nockpt/config.json") << analysis_run_config("ape_learned");
  struct Case {
    std::string args, message;
  };
  const std::string run = " --run " + (dir / "run");
  // --overwrite throughout: even with it, bad input leaves the output as it was.
  const Case cases[] = {
      {"--out " + out + " --overwrite", "--run"},
      {run, "--out"},
      {"--run " + (dir / "missing") + " --out " + out + " --overwrite", "is not a directory"},
      {"--run " + (dir / "empty") + " --out " + out + " --overwrite", "no config.json"},
      {"--run " + (dir / "nockpt") + " --out " + out + " --overwrite", "no complete checkpoint"},
      {run + " --out " + out + " --overwrite --checkpoint step_7", "it has step_1, step_2"},
      {run + " --out " + out + " --overwrite --checkpoint latest", "expected step_N"},
      {run + " --out " + (dir / "afile") + " --overwrite", "is a file"},
      {run + " --out " + out, "already exists and is not empty; give --overwrite"},
      {run + " --out " + (dir / "run") + " --overwrite", "is --run"},
      {run + " --out " + out + " --overwrite --seed -1", "--seed"},
      {run + " --out " + out + " --overwrite --eval-sequences 0", "--eval-sequences"},
      {run + " --out " + out + " --overwrite --colour red", "colour"},
      {run + " --out " + out + " --overwrite extra", "unexpected argument 'extra'"},
  };
  for (const Case& c : cases) {
    auto r = run_ordo("analyze " + c.args);
    INFO("ordo analyze " << c.args << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find(c.message) != std::string::npos);
  }
  // A checkpoint whose weights are damaged: the error names the file.
  const std::string weights = dir / "run/checkpoints/step_000000002/model.safetensors";
  ordo::write_file_atomic(weights, "not safetensors");
  auto r = run_ordo("analyze" + run + " --out " + out + " --overwrite");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("model.safetensors") != std::string::npos);
  // Nothing written over the earlier output.
  CHECK(ordo::read_file(out + "/index.json") == "earlier");
  CHECK(ordo::read_file(dir / "afile") == "x");
}

TEST_CASE("ordo analyze: the token-token term's rank is the model's, not the window's repeated tokens",
          "[analysis][cli]") {
  // One head of width 64 over L = 32 positions: X Wq Wk^T X^T of 32 distinct tokens (random embeddings,
  // independent and well conditioned in 64 dimensions, through full-rank Wq and Wk) has rank
  // min(d_h, 32) = 32. A window of 32 tokens of running text repeats some ("the", "."), and equal rows
  // of X would cap it at the window's distinct tokens.
  TempDir dir("analyze_rank");
  std::ofstream(dir / "r.json")
      << R"({"model": {"hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 1, "intermediate_size": 32,)"
         R"( "max_position_embeddings": 40, "pe": "ape_learned"}, "data": {"synthetic_sentences": 200,)"
         R"( "vocab_size": 150, "held_out_fraction": 0.2}, "train": {"steps": 2, "batch_size": 2,)"
         R"( "max_seq_length": 32, "eval_every": 0, "device": "cpu"}})";
  REQUIRE(run_ordo("pretrain --config " + (dir / "r.json") + " --out " + (dir / "r") + " --quiet").exit_code == 0);
  REQUIRE(run_ordo("analyze --run " + (dir / "r") + " --out " + (dir / "a") + " --quiet").exit_code == 0);
  const std::string csv = ordo::read_file(dir / "a/attention_rank.csv");
  INFO(csv);
  std::istringstream lines(csv);
  std::string header, row;
  std::getline(lines, header);
  std::getline(lines, row);
  CHECK(header.rfind("head,token_token_rank,positional_rank,head_dim,distinct_tokens,", 0) == 0);
  CHECK(row.rfind("1,32,", 0) == 0);  // head 1, token-token rank 32
  CHECK(row.find(",64,32,") != std::string::npos);  // d_h 64, 32 distinct tokens
}
