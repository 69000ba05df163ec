// Identical word probing (probe/probe.h, `ordo probe`) on models whose
// attention is known by construction:
//   - query and key projections zero, learned absolute PE: every score is 0,
//     the attention uniform 1/L (AIV 0, SD 0, OPR 0 by the tie rule, DB 1);
//   - the same with ALiBi: the scores are -m_h |i - j| with Press et al.'s
//     slopes (for 2 heads m = 2^-4, 2^-8, written out here), the attention
//     their softmax, computed below by hand.
// Plus determinism, the average against single forward passes, the word
// draw, and the command's files and errors.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "base/file_io.h"
#include "base/json.h"
#include "model/model.h"
#include "nn/bert.h"
#include "nn/checkpoint.h"
#include "pe/registry.h"
#include "probe/probe.h"
#include "tests/helpers.h"
#include "tests/plot/svg_check.h"

using namespace ordo;
using ordo::Matrix;

namespace {

// [PAD] [UNK] [CLS] [SEP] [MASK], 20 words, 5 continuations: 30 tokens.
text::Vocab test_vocab() {
  std::vector<std::string> t = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (char c = 'a'; c < 'a' + 20; ++c) t.push_back(std::string(1, c) + "x");
  for (char c = 'a'; c < 'a' + 5; ++c) t.push_back("##" + std::string(1, c));
  return text::Vocab::from_tokens(t, "test vocab");
}

nn::BertConfig small_config(const std::string& pe) {
  nn::BertConfig c = ordo::test::tiny_bert_config(/*vocab_size=*/30, /*hidden_size=*/16, /*layers=*/2, /*heads=*/2,
                                                  /*intermediate_size=*/32, /*max_position_embeddings=*/32,
                                                  /*dropout=*/true);
  c.pe = pe;
  return c;
}

// A model with W^Q, W^K and their biases zero in every layer: q = k = 0, so
// the contextual term q_i . k_j is 0 whatever the input.
std::unique_ptr<nn::PretrainingModel> zero_qk_model(const std::string& pe, uint64_t seed = 7) {
  auto model = model::build_model(small_config(pe), Device::cpu(), false, seed);
  int zeroed = 0;
  for (auto& [name, p] : model->named_parameters())
    if (name.find("attention.self.query.") != std::string::npos || name.find("attention.self.key.") != std::string::npos) {
      p->var.value().fill_(0);
      ++zeroed;
    }
  REQUIRE(zeroed == 2 * 2 * 2);  // weight and bias, query and key, 2 layers
  return model;
}

// ALiBi by hand for 2 heads: slopes 2^-4 and 2^-8 (Press et al.: 2^(-8h/n));
// A_ij = mean_h softmax_j(-m_h |i - j|); the scores' mean is -(m_1 + m_2)/2 |i - j|.
Matrix alibi_attention(int64_t L) {
  const double m[2] = {1.0 / 16, 1.0 / 256};
  Matrix a(L, L);
  for (int h = 0; h < 2; ++h)
    for (int64_t i = 0; i < L; ++i) {
      double z = 0;
      for (int64_t j = 0; j < L; ++j) z += std::exp(-m[h] * std::llabs(i - j));
      for (int64_t j = 0; j < L; ++j) a(i, j) += 0.5 * std::exp(-m[h] * std::llabs(i - j)) / z;
    }
  return a;
}

void require_matrix_close(const Matrix& got, const Matrix& expected, double atol, const std::string& what) {
  INFO(what);
  REQUIRE(got.rows == expected.rows);
  REQUIRE(got.cols == expected.cols);
  double worst = 0;
  for (size_t k = 0; k < got.data.size(); ++k) worst = std::max(worst, std::fabs(got.data[k] - expected.data[k]));
  INFO("largest difference " << worst);
  REQUIRE(worst <= atol);
}

}  // namespace

TEST_CASE("probe: the word draw", "[probe][probe_run]") {
  text::Vocab vocab = test_vocab();
  std::vector<int32_t> all = probe::draw_probe_words(vocab, 20, 3);
  std::set<int32_t> distinct(all.begin(), all.end());
  CHECK(distinct.size() == 20);  // without replacement: every plain word once
  for (int32_t id : all) {
    CHECK(id >= 5);
    CHECK(id < 25);  // neither special nor ##-continuation
  }
  CHECK(probe::draw_probe_words(vocab, 7, 3) == std::vector<int32_t>(all.begin(), all.begin() + 7));
  CHECK(probe::draw_probe_words(vocab, 20, 4) != all);
  CHECK_THROWS_WITH(probe::draw_probe_words(vocab, 21, 3), Catch::Contains("21 words asked for") &&
                                                                Catch::Contains("only 20"));
  CHECK_THROWS_WITH(probe::draw_probe_words(vocab, 0, 3), Catch::Contains(">= 1"));
}

TEST_CASE("probe: zero query and key give uniform attention", "[probe][probe_run]") {
  auto model = zero_qk_model("ape_learned");
  text::Vocab vocab = test_vocab();
  probe::ProbeOptions o;
  o.words = 12;
  o.length = 10;
  o.layers = {1, 2};
  probe::ProbeResult r = probe::identical_word_probe(*model, vocab, o);
  REQUIRE(r.layers.size() == 2);
  CHECK(r.length == 10);
  CHECK(r.word_ids.size() == 12);
  for (const probe::LayerProbe& p : r.layers) {
    INFO("layer " << p.layer);
    require_matrix_close(p.attention, Matrix(10, 10, 0.1), 1e-7, "attention = 1/L");
    require_matrix_close(p.scores, Matrix(10, 10, 0.0), 0, "scores = 0");
    probe::Indicators ind = probe::compute_indicators(p.attention);
    CHECK(ind.translation_invariance == 0);  // every entry the same double: var(A) = 0
    CHECK(ind.monotonicity == 0);            // ties: not increasing (probe/indicators.h)
    CHECK(ind.symmetry_sd == 0);
    CHECK(ind.direction_balance == 1);
    CHECK(ind.symmetry == 1);
    // Locality of uniform rows: (1/L^2) sum_ij 2^-|i-j|, summed here by brute force.
    double loc = 0;
    for (int i = 0; i < 10; ++i)
      for (int j = 0; j < 10; ++j) loc += std::pow(2.0, -std::abs(i - j)) / 100;
    CHECK(ind.locality == Approx(loc).epsilon(1e-6));
  }
  // Both with and without the specials in the JSON.
  json::Value j = probe::layer_indicators_json(r.layers[0].attention);
  CHECK(j["with_special"]["direction_balance"].as_number() == 1);
  CHECK(j["without_special"]["symmetry_sd"].as_number() == 0);
}

TEST_CASE("probe: ALiBi with zero query and key gives its softmax", "[probe][probe_run]") {
  auto model = zero_qk_model("alibi");
  probe::ProbeOptions o;
  o.words = 5;
  o.length = 16;
  o.layers = {1, 2};
  probe::ProbeResult r = probe::identical_word_probe(*model, test_vocab(), o);
  Matrix expected_scores(16, 16);
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t j = 0; j < 16; ++j) expected_scores(i, j) = -(1.0 / 16 + 1.0 / 256) / 2 * std::llabs(i - j);
  for (const probe::LayerProbe& p : r.layers) {
    INFO("layer " << p.layer);
    require_matrix_close(p.attention, alibi_attention(16), 1e-6, "attention");
    require_matrix_close(p.scores, expected_scores, 1e-6, "scores");
    probe::Indicators ind = probe::compute_indicators(p.attention);
    // DB = 1: the map is unchanged by the reflection i -> L-1-i, j -> L-1-j,
    // which swaps preceding and succeeding. It is not symmetric (A_ij != A_ji:
    // the rows' softmax denominators differ near the ends), so SD > 0: the
    // expected matrix's SD, summed here.
    CHECK(ind.direction_balance == Approx(1).epsilon(1e-5));
    Matrix e = alibi_attention(16);
    double sd = 0;
    for (int64_t i = 0; i < 16; ++i)
      for (int64_t j = i + 1; j < 16; ++j) sd += std::fabs(e(i, j) - e(j, i)) / (16 * 15 / 2);
    CHECK(sd > 1e-3);
    CHECK(ind.symmetry_sd == Approx(sd).epsilon(1e-4));
    CHECK(ind.monotonicity == 0);  // strictly decreasing with distance in both directions
  }
}

TEST_CASE("probe: the average over heads and words, against single forward passes", "[probe][probe_run]") {
  auto model = model::build_model(small_config("ape_learned"), Device::cpu(), false, 11);
  text::Vocab vocab = test_vocab();
  probe::ProbeOptions o;
  o.words = 3;
  o.length = 6;
  o.layers = {2};
  probe::ProbeResult r = probe::identical_word_probe(*model, vocab, o);
  // [CLS] w w w w [SEP] for each word, one at a time, every head averaged here,
  // and each head's own average over the words (the per-head maps).
  Matrix sum(6, 6);
  std::vector<Matrix> heads(2, Matrix(6, 6));
  NoGradGuard no_grad;
  for (int32_t w : r.word_ids) {
    nn::BertInputs in;
    in.input_ids = Tensor::from_vector(std::vector<int64_t>{2, w, w, w, w, 3}, Shape{1, 6});
    nn::Context ctx = nn::Context::eval();
    nn::ForwardTrace trace;
    trace.keep_attentions = true;
    model->bert.forward(in, ctx, &trace);
    std::vector<double> a = trace.attentions[1].to_doubles();  // layer 2: [1, 2, 6, 6]
    REQUIRE(a.size() == 72);
    for (int h = 0; h < 2; ++h)
      for (int k = 0; k < 36; ++k) {
        sum.data[k] += a[h * 36 + k] / 6;
        heads[h].data[k] += a[h * 36 + k] / 3;
      }
  }
  require_matrix_close(r.layers[0].attention, sum, 1e-6, "probe vs single passes");
  REQUIRE(r.layers[0].head_attention.size() == 2);
  require_matrix_close(r.layers[0].head_attention[0], heads[0], 1e-6, "head 1 vs single passes");
  require_matrix_close(r.layers[0].head_attention[1], heads[1], 1e-6, "head 2 vs single passes");
  // Each row of a softmax average sums to 1.
  for (int i = 0; i < 6; ++i) {
    double s = 0;
    for (int j = 0; j < 6; ++j) s += r.layers[0].attention(i, j);
    CHECK(s == Approx(1).epsilon(1e-6));
  }
}

TEST_CASE("probe: deterministic given the seed", "[probe][probe_run]") {
  auto model = model::build_model(small_config("ape_learned"), Device::cpu(), false, 5);
  text::Vocab vocab = test_vocab();
  probe::ProbeOptions o;
  o.words = 9;
  o.length = 12;
  o.seed = 42;
  probe::ProbeResult a = probe::identical_word_probe(*model, vocab, o);
  probe::ProbeResult b = probe::identical_word_probe(*model, vocab, o);
  CHECK(a.word_ids == b.word_ids);
  CHECK(a.layers[0].attention.data == b.layers[0].attention.data);  // bit for bit
  CHECK(a.layers[0].scores.data == b.layers[0].scores.data);
  CHECK(a.layers[0].layer == 1);  // the default layer
  // Another batch split gives the same average up to rounding.
  o.batch = 2;
  probe::ProbeResult c = probe::identical_word_probe(*model, vocab, o);
  require_matrix_close(c.layers[0].attention, a.layers[0].attention, 1e-6, "batch 2 vs default");
  // Another seed draws other words.
  o.seed = 43;
  CHECK(probe::identical_word_probe(*model, vocab, o).word_ids != a.word_ids);
}

TEST_CASE("probe: errors and the default length", "[probe][probe_run]") {
  auto ape = model::build_model(small_config("ape_learned"), Device::cpu(), false, 1);
  auto alibi = model::build_model(small_config("alibi"), Device::cpu(), false, 1);
  CHECK(probe::default_probe_length(*ape) == 32);     // the position table's rows
  CHECK(probe::default_probe_length(*alibi) == 128);  // Wang et al.'s 128 positions
  text::Vocab vocab = test_vocab();
  probe::ProbeOptions o;
  o.words = 2;
  o.length = 33;
  CHECK_THROWS_WITH(probe::identical_word_probe(*ape, vocab, o), Catch::Contains("length 33") &&
                                                                  Catch::Contains("32 rows"));
  o.length = 2;
  CHECK_THROWS_WITH(probe::identical_word_probe(*ape, vocab, o), Catch::Contains(">= 3"));
  o.length = 8;
  o.layers = {3};
  CHECK_THROWS_WITH(probe::identical_word_probe(*ape, vocab, o), Catch::Contains("layer 3 is outside 1..2"));
  o.layers = {0};
  CHECK_THROWS_WITH(probe::identical_word_probe(*ape, vocab, o), Catch::Contains("layer 0"));
  o.layers = {1};
  // More ids than the model's word embeddings (fewer is HF's padded vocab_size, and fine).
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (int i = 0; i < 31; ++i) tokens.push_back("w" + std::to_string(i));
  text::Vocab other = text::Vocab::from_tokens(tokens);
  CHECK_THROWS_WITH(probe::identical_word_probe(*ape, other, o), Catch::Contains("36 tokens") &&
                                                                   Catch::Contains("30"));
}

// ---- the command --------------------------------------------------------------------------

namespace {

// RUN/vocab.txt and two checkpoints: step 2 (a random ape_learned model)
// and step 10 (zero-q/k ALiBi, the latest), plus a stray directory.
void make_run(const std::string& run) {
  text::Vocab vocab = test_vocab();
  make_directories(run + "/checkpoints/step_abc");
  vocab.save(run + "/vocab.txt");
  auto early = model::build_model(small_config("ape_learned"), Device::cpu(), false, 3);
  nn::save_model(run + "/checkpoints/step_000000002", *early);
  auto late = zero_qk_model("alibi");
  nn::save_model(run + "/checkpoints/step_000000010", *late);
}

json::Value read_json(const std::string& path) { return json::parse(read_file(path)); }

}  // namespace

TEST_CASE("ordo probe: files, the latest checkpoint of a run, determinism", "[probe][probe_cli]") {
  test::TempDir dir("probe-cli");
  const std::string run = dir / "run";
  make_run(run);
  const std::string out = dir / "out";
  test::CommandResult r =
      test::run_ordo("probe --checkpoint " + run + " --out " + out + " --words 10 --length 9 --layer all --seed 4");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);

  json::Value meta = read_json(out + "/probe.json");
  CHECK_THAT(meta["checkpoint"].as_string(), Catch::EndsWith("checkpoints/step_000000010"));
  CHECK(meta["variant"].as_string() == "alibi");
  CHECK(meta["words"].as_int() == 10);
  CHECK(meta["word_tokens"].size() == 10);
  CHECK(meta["length"].as_int() == 9);
  CHECK(meta["seed"].as_int() == 4);
  CHECK(meta["layers"] == json::parse("[1, 2]"));
  // The checkpoint has no vocab.txt of its own (nn::save_model writes none): the run's.
  CHECK(meta["vocab"].as_string() == run + "/vocab.txt");

  // The matrices are ALiBi's softmax (see above), the indicators theirs.
  json::Value ind = read_json(out + "/indicators.json");
  for (int layer : {1, 2}) {
    const std::string k = std::to_string(layer);
    INFO("layer " << k);
    Matrix a = probe::read_matrix_file(out + "/attention_layer" + k + ".csv");
    require_matrix_close(a, alibi_attention(9), 1e-6, "attention CSV");
    Matrix s = probe::read_matrix_file(out + "/scores_layer" + k + ".csv");
    CHECK(s(0, 8) == Approx(-(1.0 / 16 + 1.0 / 256) / 2 * 8).epsilon(1e-6));
    const json::Value& li = ind["layer_" + k];
    probe::Indicators expected = probe::compute_indicators(alibi_attention(9));
    CHECK(li["with_special"]["direction_balance"].as_number() == Approx(1).epsilon(1e-5));
    CHECK(li["with_special"]["locality"].as_number() == Approx(expected.locality).epsilon(1e-5));
    CHECK(li["without_special"]["translation_invariance"].as_number() ==
          Approx(probe::translation_invariance(probe::without_special(alibi_attention(9)))).margin(1e-4));
    // Each head alone: softmax_j(-m_h |i - j|), ALiBi's slopes m = 1/16 and 1/256 for two heads.
    REQUIRE(li["heads"].size() == 2);
    for (int h = 0; h < 2; ++h) {
      const double m = h == 0 ? 1.0 / 16 : 1.0 / 256;
      Matrix e(9, 9);
      for (int64_t i = 0; i < 9; ++i) {
        double z = 0;
        for (int64_t j = 0; j < 9; ++j) z += e(i, j) = std::exp(-m * std::llabs(i - j));
        for (int64_t j = 0; j < 9; ++j) e(i, j) /= z;
      }
      CHECK(li["heads"][h]["with_special"]["locality"].as_number() ==
            Approx(probe::compute_indicators(e).locality).epsilon(1e-5));
    }
    // Each figure an SVG a browser can lay out: every text inside it and legible, the map an embedded
    // picture, and the heads' grid a panel per head (titles "head 1", "head 2").
    for (const char* figure : {"attention_layer", "scores_layer", "attention_heads_layer"}) {
      const std::string file = out + "/" + figure + k + ".svg";
      INFO(file);
      const svg_check::Element svg = svg_check::parse(read_file(file));
      svg_check::check_texts_inside(svg, 13);
      const auto [width, height] = svg_check::view_box(svg);
      CHECK(width > 100);
      CHECK(width <= 1400);
      CHECK(height > 100);
      CHECK(read_file(file).find("data:image/png;base64,") != std::string::npos);
      if (std::string(figure) == "attention_heads_layer")
        for (int h = 1; h <= 2; ++h) CHECK(svg_check::count_text(svg, "head " + std::to_string(h)) == 1);
    }
    CHECK(!file_exists(out + "/attention_layer" + k + ".png"));
  }

  // The same command again writes the same bytes.
  const std::string out2 = dir / "out2";
  REQUIRE(test::run_ordo("probe --checkpoint " + run + " --out " + out2 + " --words 10 --length 9 --layer all --seed 4")
              .exit_code == 0);
  for (const char* f : {"attention_layer1.csv", "scores_layer2.csv", "attention_layer2.svg", "indicators.json",
                        "probe.json"})
    CHECK(read_file(out + "/" + f) == read_file(out2 + "/" + f));
  // A checkpoint directory given directly; the default layer is 1.
  const std::string out3 = dir / "out3";
  r = test::run_ordo("probe --checkpoint " + run + "/checkpoints/step_000000002 --out " + out3 + " --words 4");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  meta = read_json(out3 + "/probe.json");
  CHECK(meta["variant"].as_string() == "ape_learned");
  CHECK(meta["length"].as_int() == 32);
  CHECK(meta["layers"] == json::parse("[1]"));
  CHECK(file_exists(out3 + "/attention_layer1.svg"));
  CHECK(!file_exists(out3 + "/attention_layer2.svg"));
}

TEST_CASE("ordo probe: bad input exits non-zero and leaves the output alone", "[probe][probe_cli]") {
  test::TempDir dir("probe-bad");
  const std::string run = dir / "run";
  make_run(run);
  make_directories(dir / "empty");
  const std::string out = dir / "out";
  make_directories(out);
  const std::string old = "{\"old\": true}\n";
  write_file_atomic(out + "/probe.json", old);
  const std::string a_file = dir.write("a_file", "x");
  struct Case {
    std::string args, expected;
  };
  // --overwrite throughout: even with it, bad input leaves the output as it was.
  const std::string base = "--checkpoint " + run + " --out " + out + " --overwrite";
  const Case cases[] = {
      {base + " --layer 0", "--layer expects a layer number (from 1) or 'all', got '0'"},
      {base + " --layer 3", "--layer 3 is outside 1..2"},
      {base + " --layer first", "--layer expects a layer number (from 1) or 'all', got 'first'"},
      {base + " --words 0", "--words must be between 1"},
      {base + " --words 21", "21 words asked for"},
      {base + " --length 2", "--length must be between 3"},
      {base + " --seed -1", "--seed must be between 0"},
      {base + " --seed x", "--seed expects an integer"},
      {base + " --vocab " + dir / "missing.txt", "missing.txt"},
      {base + " --frobnicate 1", "unknown flag --frobnicate"},
      {base + " stray", "unexpected argument 'stray'"},
      {"--checkpoint " + dir / "nowhere" + " --out " + out + " --overwrite", "nowhere: not a directory"},
      {"--checkpoint " + dir / "empty" + " --out " + out + " --overwrite", "neither a checkpoint"},
      {"--checkpoint " + run + " --out " + a_file + " --overwrite", "is a file"},
      {"--checkpoint " + run + " --out " + out, "already exists and is not empty; give --overwrite"},
      {"--out " + out + " --overwrite", "missing required flag --checkpoint"},
      {"--checkpoint " + run, "missing required flag --out"},
  };
  for (const Case& c : cases) {
    test::CommandResult r = test::run_ordo("probe " + c.args);
    INFO("ordo probe " << c.args << "\n" << r.output);
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.output, Catch::Contains(c.expected));
    CHECK(read_file(out + "/probe.json") == old);
    size_t entries = 0;
    for (const auto& e : std::filesystem::directory_iterator(out)) entries += e.path().filename() != "";
    CHECK(entries == 1);  // probe.json only
  }
  // A run whose checkpoints are all incomplete.
  make_directories(dir / "run2/checkpoints/step_000000005");
  test::CommandResult r = test::run_ordo("probe --checkpoint " + dir / "run2" + " --out " + out + " --overwrite");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("no complete checkpoint"));
}

TEST_CASE("probe: every registered variant gives attention rows that sum to 1", "[probe][probe_run]") {
  // A smoke test across the registry: whatever the variant adds to the
  // scores, the probed matrix is an average of softmax rows.
  text::Vocab vocab = test_vocab();
  int probed = 0;
  for (const std::string& name : pe::variant_names()) {
    INFO("pe " << name);
    nn::BertConfig c = small_config(name);
    std::unique_ptr<nn::PretrainingModel> model;
    try {
      model = model::build_model(c, Device::cpu(), false, 9);
    } catch (const Error& e) {
      WARN("pe " << name << " does not build with default options, not probed: " << e.what());
      continue;
    }
    probe::ProbeOptions o;
    o.words = 3;
    o.length = 7;
    o.layers = {1, 2};
    probe::ProbeResult r = probe::identical_word_probe(*model, vocab, o);
    REQUIRE(r.layers.size() == 2);
    for (const probe::LayerProbe& p : r.layers) {
      for (int64_t i = 0; i < 7; ++i) {
        double s = 0;
        for (int64_t j = 0; j < 7; ++j) {
          CHECK(p.attention(i, j) >= 0);
          CHECK(std::isfinite(p.scores(i, j)));
          s += p.attention(i, j);
        }
        CHECK(s == Approx(1).epsilon(1e-5));
      }
    }
    ++probed;
  }
  CHECK(probed >= 10);
}

TEST_CASE("png: a probing map's colours span its word positions, not CLS/SEP nor rounding", "[probe][png]") {
  // 5 x 5: [CLS] row/column 0 and [SEP] row/column 4 hold 0.9; the words
  // (rows/columns 1..3) hold 0.1 + i/100 + j/1000.
  Matrix m(5, 5, 0.9);
  for (int64_t i = 1; i <= 3; ++i)
    for (int64_t j = 1; j <= 3; ++j) m(i, j) = 0.1 + i / 100.0 + j / 1000.0;
  plot::HeatmapStyle style;
  probe::range_of_word_positions(style, m);
  CHECK(style.vmin == Approx(0.111).epsilon(1e-15));
  CHECK(style.vmax == Approx(0.133).epsilon(1e-15));

  // Words equal to 1e-8 (rounding): the range stays the data's (NaN: unset).
  for (int64_t i = 1; i <= 3; ++i)
    for (int64_t j = 1; j <= 3; ++j) m(i, j) = 0.1 * (1 + 1e-8 * static_cast<double>(i * j));
  plot::HeatmapStyle flat;
  probe::range_of_word_positions(flat, m);
  CHECK(std::isnan(flat.vmin));
  CHECK(std::isnan(flat.vmax));

  // Too small to have words: unchanged.
  plot::HeatmapStyle tiny;
  probe::range_of_word_positions(tiny, Matrix(2, 2, 0.5));
  CHECK(std::isnan(tiny.vmin));
}

#ifdef ORDO_HAS_CUDA
// Runs only where a GPU is (`ordo_tests --require-gpu "[cuda]"`).
TEST_CASE("cuda: ordo probe --device cuda gives the CPU's matrices and indicators", "[cuda][probe_cli]") {
  test::TempDir dir("probe-cuda");
  const std::string run = dir / "run";
  make_run(run);
  // The random ape_learned model of step 2: attention that is neither
  // uniform nor ALiBi's closed form.
  const std::string checkpoint = run + "/checkpoints/step_000000002";
  for (const char* device : {"cpu", "cuda"}) {
    test::CommandResult r = test::run_ordo("probe --checkpoint " + checkpoint + " --out " + dir / device +
                                           " --words 10 --length 9 --layer all --seed 4 --precision fp32 --device " +
                                           device);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  // Averages of softmax rows (entries in [0, 1]) over the words: f32 on two
  // devices, the forward half of the training step's bound
  // (tests/train/test_step_cuda.cpp), 2^-13, absolute.
  for (const char* matrix : {"attention_layer1.csv", "attention_layer2.csv"})
    require_matrix_close(probe::read_matrix_file(dir / "cuda/" + matrix), probe::read_matrix_file(dir / "cpu/" + matrix),
                         0x1p-13, matrix);
  // Locality weighs a row's entries by 2^-|i-j|, weights summing to less
  // than 3: it moves by at most 3 times the entries' bound.
  json::Value cpu = read_json(dir / "cpu/indicators.json"), gpu = read_json(dir / "cuda/indicators.json");
  for (const char* layer : {"layer_1", "layer_2"})
    CHECK(gpu[layer]["with_special"]["locality"].as_number() ==
          Approx(cpu[layer]["with_special"]["locality"].as_number()).margin(3 * 0x1p-13));
}
#endif  // ORDO_HAS_CUDA
