// train/position_init.h: a fresh model's position table copied from another
// model (Wang & Chen 2020, Table 3). The expected rows are read from the
// source's model.safetensors by its stored names (not through ordo's HF
// layouts), or computed from the sinusoid's equation; the copy must equal
// them bit for bit (the sinusoid: to f32 rounding of the f64 formula).
#include <cmath>
#include <cstring>

#include "model/model.h"
#include "nn/checkpoint.h"
#include "nn/heads.h"
#include "nn/task_heads.h"
#include "pe/registry.h"
#include "tensor/safetensors.h"
#include "tests/helpers.h"
#include "train/position_init.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

const std::string kTwin = std::string(ORDO_SOURCE_DIR) + "/tests/data/twin/";

// A small BERT of `width`, one layer, a learned table of `rows` positions.
nn::BertConfig fresh_config(int64_t width, int64_t rows) {
  nn::BertConfig c;
  c.vocab_size = 64;
  c.hidden_size = width;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.intermediate_size = 8;
  c.max_position_embeddings = rows;
  return c;
}

std::unique_ptr<nn::SequenceClassifier> fresh_model(const nn::BertConfig& c) {
  auto m = std::make_unique<nn::SequenceClassifier>(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), 2);
  nn::initialize_bert(*m, m->bert, 7);
  return m;
}

std::vector<float> table_of(nn::SequenceClassifier& m) {
  return m.find_parameter("bert.embeddings.position_embeddings.weight")->var.value().to_vector<float>();
}

// Rows [from, from + n) of the tensor stored under `name` in DIR/model.safetensors.
std::vector<float> stored_rows(const std::string& dir, const std::string& name, int64_t from, int64_t n) {
  for (const auto& [stored, t] : safetensors::load(dir + "/model.safetensors"))
    if (stored == name) {
      const std::vector<float> all = t.to_vector<float>();
      const int64_t w = t.size(1);
      return std::vector<float>(all.begin() + from * w, all.begin() + (from + n) * w);
    }
  FAIL("no tensor " << name << " in " << dir);
  return {};
}

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

}  // namespace

TEST_CASE("position table: HF BERT's, RoBERTa's (from row 2) and GPT-2's rows copied bit for bit", "[position_init]") {
  struct Source {
    std::string dir, stored;
    int64_t width, first_row, rows;
  };
  // RoBERTa's table has 22 rows, positions from row pad_token_id + 1 = 2; GPT-2's wpe 19, BERT's 20.
  for (const Source& s : {Source{"bert", "bert.embeddings.position_embeddings.weight", 32, 0, 20},
                          Source{"roberta_tied", "roberta.embeddings.position_embeddings.weight", 24, 2, 20},
                          Source{"gpt2_tied", "transformer.wpe.weight", 24, 0, 19}}) {
    INFO(s.dir);
    const nn::BertConfig config = fresh_config(s.width, 24);  // more rows than any source: the rest stay as drawn
    auto model = fresh_model(config);
    const std::vector<float> drawn = table_of(*model);
    const train::PositionTable t = train::read_position_table(kTwin + s.dir, config, 8);
    train::copy_position_table(*model, config, t);
    const std::vector<float> copied = table_of(*model), want = stored_rows(kTwin + s.dir, s.stored, s.first_row, s.rows);
    REQUIRE(t.rows.size(0) == s.rows);
    CHECK(same_bits(copied.data(), want.data(), want.size()));
    CHECK(same_bits(copied.data() + want.size(), drawn.data() + want.size(), drawn.size() - want.size()));
    CHECK_THAT(t.description, Contains("rows 0.." + std::to_string(s.rows - 1)) &&
                                  Contains("positions " + std::to_string(s.rows) + "..23 keep their random start"));
  }
  // Into a RoBERTa-layout fresh model: GPT-2's row p lands on row p + 2.
  const nn::BertConfig roberta = nn::load_config(kTwin + "roberta_tied");
  auto model = fresh_model(roberta);
  train::copy_position_table(*model, roberta, train::read_position_table(kTwin + "gpt2_tied", roberta, 8));
  const std::vector<float> copied = table_of(*model), want = stored_rows(kTwin + "gpt2_tied", "transformer.wpe.weight", 0, 19);
  CHECK(same_bits(copied.data() + 2 * 24, want.data(), want.size()));
}

TEST_CASE("position table: a sinusoid run's table as computed, with its amplitude", "[position_init]") {
  test::TempDir dir("sinusoid");
  nn::BertConfig source = fresh_config(8, 16);
  source.pe = "ape_sin";
  source.pe_options["amplitude"] = 0.5;
  nn::save_model(dir.path, *model::build_model(source, Device::cpu(), /*nsp=*/false, 1));
  const nn::BertConfig config = fresh_config(8, 16);
  const train::PositionTable t = train::read_position_table(dir.path, config, 16);
  CHECK_THAT(t.description, Contains("ape_sin, as computed"));
  const std::vector<float> rows = t.rows.to_vector<float>();
  // P[x, 2i] = A sin(x w_i), P[x, 2i + 1] = A cos(x w_i), w_i = 10000^(-2i/D) (Vaswani et al. 2017).
  for (int x = 0; x < 16; ++x)
    for (int i = 0; i < 4; ++i) {
      const double w = std::pow(10000.0, -2.0 * i / 8);
      CHECK(rows[x * 8 + 2 * i] == Approx(0.5 * std::sin(x * w)).margin(1e-7));
      CHECK(rows[x * 8 + 2 * i + 1] == Approx(0.5 * std::cos(x * w)).margin(1e-7));
    }
}

TEST_CASE("position table: refused, naming what does not fit", "[position_init][errors]") {
  const nn::BertConfig fresh = fresh_config(24, 64);
  nn::BertConfig relative = fresh_config(24, 64);
  relative.pe = "rope";
  CHECK_THROWS_WITH(train::check_position_copy(relative, fresh, 16, "src"),
                    Contains("src: its position encoding 'rope' adds nothing at the input"));
  CHECK_THROWS_WITH(train::check_position_copy(fresh_config(32, 64), fresh, 16, "src"),
                    Contains("32 wide, the fresh model's hidden_size is 24"));
  CHECK_THROWS_WITH(train::check_position_copy(fresh_config(24, 12), fresh, 16, "src"),
                    Contains("12 rows, fewer than train.max_seq_length 16"));
  nn::BertConfig no_table = fresh;
  no_table.pe = "rpe_shaw";
  CHECK_THROWS_WITH(train::check_position_copy(fresh, no_table, 16, "src"), Contains("model.pe 'rpe_shaw'"));
}

TEST_CASE("model overrides: a run config's model keys over a checkpoint's config, strictly", "[position_init][config]") {
  const nn::BertConfig gpt2 = nn::load_config(kTwin + "gpt2_tied");
  json::Value o = json::parse(R"({"num_hidden_layers": 1, "decoder": false, "pre_layer_norm": false})");
  const nn::BertConfig c = nn::with_overrides(gpt2, o, "model");
  CHECK(c.num_hidden_layers == 1);
  CHECK(!c.decoder);
  CHECK(!c.pre_layer_norm);
  CHECK(c.model_type == "gpt2");
  CHECK(c.hidden_size == gpt2.hidden_size);
  CHECK(c.hidden_act == gpt2.hidden_act);
  // A new pe drops the old one's options; RoBERTa keeps its offset.
  nn::BertConfig sin = fresh_config(8, 16);
  sin.pe = "ape_sin";
  sin.pe_options["amplitude"] = 0.5;
  CHECK(nn::with_overrides(sin, json::parse(R"({"pe": "ape_learned"})"), "model").pe_options.size() == 0);
  CHECK(nn::with_overrides(nn::load_config(kTwin + "roberta_tied"), json::Value::object(), "model").position_offset == 2);
  CHECK_THROWS_WITH(nn::with_overrides(gpt2, json::parse(R"({"layers": 1})"), "model"),
                    Contains("model: unknown key 'layers'"));
  CHECK_THROWS_WITH(nn::with_overrides(gpt2, json::parse(R"({"num_attention_heads": 5})"), "model"),
                    Contains("does not divide hidden_size"));
}
