// The real models' layouts through the commands: a bare BertModel (no cls.*,
// no "bert." prefix: all-MiniLM-L6-v2's files), GPT-2 and RoBERTa folders
// with their byte-level BPE tokenizers, read by `ordo forward`, `probe`,
// `analyze` (one checkpoint, and Wang & Chen's tables across a folder) and
// `finetune`; and the refusals: a model ordo does not implement,
// a folder without a tokenizer, a vocabulary longer than the model's.
#include <filesystem>
#include <functional>

#include "base/file_io.h"
#include "base/json.h"
#include "model/model.h"
#include "nn/bert_config.h"
#include "nn/checkpoint.h"
#include "tensor/ops.h"
#include "tensor/safetensors.h"
#include "tests/helpers.h"

using Catch::Matchers::Contains;
using ordo::test::run_ordo;
using ordo::test::TempDir;
namespace json = ordo::json;

namespace {

const std::string kTwin = std::string(ORDO_SOURCE_DIR) + "/tests/data/twin";
const std::string kBpe = std::string(ORDO_SOURCE_DIR) + "/tests/data/bpe";

// The twin's BERT (vocab 59) as AutoModel.save_pretrained writes a BertModel:
// no "bert." prefix, no cls.* heads, a pooler; with or without a vocab.txt of
// `vocab_tokens` tokens.
std::string bare_bert(const TempDir& dir, int vocab_tokens) {
  const std::string bare = dir / "bare";
  ordo::make_directories(bare);
  std::vector<std::pair<std::string, ordo::Tensor>> kept;
  for (auto& [name, t] : ordo::safetensors::load(kTwin + "/bert/model.safetensors"))
    if (name.rfind("bert.", 0) == 0) kept.emplace_back(name.substr(5), t);
  ordo::safetensors::save(bare + "/model.safetensors", kept);
  json::Value config = json::parse(ordo::read_file(kTwin + "/bert/config.json"));
  config["architectures"] = json::parse("[\"BertModel\"]");
  ordo::write_file_atomic(bare + "/config.json", json::dump(config, 2));
  if (vocab_tokens > 0) {
    std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    for (int i = 5; i < vocab_tokens; ++i) vocab += "w" + std::to_string(i) + "\n";
    ordo::write_file_atomic(bare + "/vocab.txt", vocab);
  }
  return bare;
}

// RTE's layout with words of the vocabulary above (w5 ... w69).
std::string rte_data(const TempDir& dir) {
  const std::string rte = dir / "rte";
  ordo::make_directories(rte);
  std::string rows = "index\tsentence1\tsentence2\tlabel\n";
  for (int i = 0; i < 8; ++i)
    rows += std::to_string(i) + "\tw" + std::to_string(5 + i) + " w" + std::to_string(60 + i) + " w7\tw" +
            std::to_string(9 + i) + " w" + std::to_string(62 + i % 8) + "\t" +
            (i % 2 ? "entailment" : "not_entailment") + "\n";
  ordo::write_file_atomic(rte + "/train.tsv", rows);
  ordo::write_file_atomic(rte + "/dev.tsv", rows);
  return rte;
}

// A random GPT-2 or RoBERTa model of `vocab` tokens, written by ordo in HF's
// layout, with the BPE tokenizer of tests/data/bpe/<family>.
std::string family_model(const TempDir& dir, const std::string& family, int64_t vocab) {
  const std::string hf_config =
      family == "gpt2"
          ? R"({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 16, "n_layer": 2, "n_head": 2,)"
            R"( "n_positions": 40, "n_inner": null, "vocab_size": )" + std::to_string(vocab) + "}"
          : R"({"model_type": "roberta", "architectures": ["RobertaForMaskedLM"], "hidden_size": 16,)"
            R"( "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 24, "type_vocab_size": 1,)"
            R"( "pad_token_id": 1, "max_position_embeddings": 42, "layer_norm_eps": 1e-5, "vocab_size": )" +
                std::to_string(vocab) + "}";
  const ordo::nn::BertConfig config = ordo::nn::config_from_json(json::parse(hf_config), family, true);
  auto model = ordo::model::build_model(config, ordo::Device::cpu(), false, 5);
  const std::string out = dir / family;
  ordo::nn::save_model(out, *model);
  for (const char* file : {"/vocab.json", "/merges.txt"})
    ordo::write_file_atomic(out + file, ordo::read_file(kBpe + "/" + family + file));
  return out;
}

ordo::test::CommandResult ordo_ok(const std::string& args) {
  ordo::test::CommandResult r = run_ordo(args);
  INFO("ordo " << args << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
  return r;
}

}  // namespace

TEST_CASE("forward, probe and analyze read a bare BertModel: no LM head needed, logits said absent",
          "[cli][hf_models]") {
  TempDir dir("bare");
  const std::string bare = bare_bert(dir, 59);
  const std::string input = dir.write("in.json", R"({"input_ids": [[2, 7, 9, 3, 11, 3]]})");
  auto r = ordo_ok("forward --checkpoint " + bare + " --input " + input + " --out " + (dir / "out.safetensors"));
  CHECK_THAT(r.output, Contains("no logits") && Contains("cls.predictions."));
  auto out = ordo::test::load_tensors(dir / "out.safetensors");
  CHECK(out.count("logits") == 0);
  CHECK(out.count("hidden_states.2") == 1);
  CHECK(out.count("attentions.2") == 1);
  ordo_ok("probe --checkpoint " + bare + " --out " + (dir / "probe") + " --words 5 --length 8");
  ordo_ok("analyze --quiet --model " + bare + " --out " + (dir / "analysis") + " --positions 16");
  const json::Value index = json::parse(ordo::read_file(dir / "analysis/index.json"));
  bool regression = false;
  for (const json::Value& a : index["analyses"].as_array())
    regression |= a.find("json") && a["json"].as_string() == "position_regression.json";
  CHECK(regression);
}

TEST_CASE("GPT-2 and RoBERTa folders with their BPE tokenizers: probe, analyze, Wang & Chen's tables, finetune",
          "[cli][hf_models]") {
  TempDir dir("families");
  const std::string gpt2 = family_model(dir, "gpt2", 1500), roberta = family_model(dir, "roberta", 2500);
  CHECK(ordo::file_exists(gpt2 + "/model.safetensors"));

  // GPT-2: no specials around the repeated word; its causal mask gives DB = inf.
  ordo_ok("probe --checkpoint " + gpt2 + " --out " + (dir / "probe_gpt2") + " --words 6 --length 12");
  const json::Value gp = json::parse(ordo::read_file(dir / "probe_gpt2/probe.json"));
  CHECK(gp["tokenizer"].as_string() == "byte-level BPE");
  CHECK(gp["model_type"].as_string() == "gpt2");
  const json::Value gi = json::parse(ordo::read_file(dir / "probe_gpt2/indicators.json"));
  INFO(ordo::read_file(dir / "probe_gpt2/indicators.json"));
  CHECK(gi["layer_1"]["without_special"]["direction_balance"] == json::Value("inf"));
  CHECK(gi["layer_1"]["without_special"] == gi["layer_1"]["with_special"]);
  for (const json::Value& w : gp["word_tokens"].as_array()) CHECK(w.as_string().rfind("\xc4\xa0", 0) == 0);  // "Ġ..."

  ordo_ok("probe --checkpoint " + roberta + " --out " + (dir / "probe_roberta") + " --words 6 --length 12");
  ordo_ok("analyze --quiet --model " + roberta + " --out " + (dir / "an_roberta") + " --positions 24");

  // Wang & Chen's tables across a folder of models.
  const std::string models = dir / "models";
  ordo::make_directories(models);
  std::filesystem::rename(gpt2, models + "/gpt2");
  std::filesystem::rename(roberta, models + "/roberta");
  ordo_ok("analyze --quiet --models " + models + " --out " + (dir / "wang_chen") + " --positions 30");
  const json::Value wc = json::parse(ordo::read_file(dir / "wang_chen/wang_chen.json"));
  REQUIRE(wc["tables"].size() == 4);  // gpt2, roberta, the sinusoid, the Gaussian control
  CHECK(wc["tables"][0]["name"].as_string() == "gpt2");
  CHECK(wc["tables"][1]["name"].as_string() == "roberta");
  CHECK(wc["positions"].as_int() == 30);
  // The fixed sinusoid holds its positions (Wang & Chen's Table 1: MAE near 0); a Gaussian table does not.
  CHECK(wc["tables"][2]["name"].as_string() == "sinusoid");
  CHECK(wc["tables"][2]["mae"].as_number() < 0.5 * wc["tables"][3]["mae"].as_number());
  for (const char* f : {"wang_chen.md", "wang_chen.csv", "wang_chen_cosine.svg", "wang_chen_informativeness.svg"})
    CHECK(ordo::file_exists(dir / (std::string("wang_chen/") + f)));

  // Fine-tuning from RoBERTa: <s> a </s></s> b </s>, its best/ in RoBERTa's layout with the tokenizer beside it.
  const std::string rte = dir / "rte_text";
  ordo::make_directories(rte);
  const std::string rows = "index\tsentence1\tsentence2\tlabel\n0\tThe cat sat on the mat.\tA cat sat.\tentailment\n"
                           "1\tDogs bark at night.\tCats bark.\tnot_entailment\n"
                           "2\tIt rained all day.\tThe day was wet.\tentailment\n"
                           "3\tShe didn't go.\tShe went.\tnot_entailment\n";
  ordo::write_file_atomic(rte + "/train.tsv", rows);
  ordo::write_file_atomic(rte + "/dev.tsv", rows);
  ordo_ok("finetune --quiet --checkpoint " + models + "/roberta --task rte --data " + rte + " --out " + (dir / "ft") +
          " --set train.epochs=1 --set train.batch_size=2 --set train.max_seq_length=32");
  std::string best;  // the one run's best/, whatever its folder is named
  for (const auto& entry : std::filesystem::directory_iterator(dir / "ft/runs")) best = entry.path().string() + "/best";
  REQUIRE(ordo::file_exists(best + "/config.json"));
  const json::Value saved = json::parse(ordo::read_file(best + "/config.json"));
  CHECK(saved["architectures"][0].as_string() == "RobertaForSequenceClassification");
  CHECK(saved["model_type"].as_string() == "roberta");
  CHECK(ordo::file_exists(best + "/vocab.json"));
  CHECK(ordo::file_exists(best + "/merges.txt"));
  bool out_proj = false;
  for (const auto& [name, t] : ordo::safetensors::load(best + "/model.safetensors"))
    out_proj |= name == "classifier.out_proj.weight";
  CHECK(out_proj);
}

TEST_CASE("ordo forward on RoBERTa as HF wrote it gives HF's outputs, padding's positions as HF counts them",
          "[cli][hf_models]") {
  TempDir dir("forward_roberta");
  auto golden = ordo::test::load_tensors(kTwin + "/golden_roberta_tied.safetensors");
  auto rows = [](const ordo::Tensor& t) {
    json::Value a = json::Value::array();
    const std::vector<int64_t> v = t.to_vector<int64_t>();
    for (int64_t r = 0; r < t.size(0); ++r) {
      json::Value row = json::Value::array();
      for (int64_t c = 0; c < t.size(1); ++c) row.push_back(v[static_cast<size_t>(r * t.size(1) + c)]);
      a.push_back(row);
    }
    return a;
  };
  json::Value in = json::Value::object();
  in["input_ids"] = rows(golden.at("input_ids"));
  in["attention_mask"] = rows(golden.at("attention_mask"));
  const std::string input = dir.write("in.json", json::dump(in));
  ordo_ok("forward --checkpoint " + kTwin + "/roberta_tied --input " + input + " --out " + (dir / "out.safetensors"));
  auto out = ordo::test::load_tensors(dir / "out.safetensors");
  for (const char* name : {"hidden_states.0", "hidden_states.2", "attentions.1", "logits"}) {
    INFO(name);
    REQUIRE(out.count(name) == 1);
    CHECK(ordo::test::relative_error(out.at(name), golden.at(name)) < 5e-6);
  }
  // The padding tokens' positions: -1 (RoBERTa's padding row), the others counted from 0.
  const std::vector<int64_t> p = out.at("positions").to_vector<int64_t>();
  const int64_t length = golden.at("input_ids").size(1);
  CHECK(p[static_cast<size_t>(length + 7)] == 7);
  CHECK(p[static_cast<size_t>(length + 8)] == -1);
}

TEST_CASE("a model ordo does not implement is named with what ordo reads, before any other key",
          "[cli][hf_models][errors]") {
  TempDir dir("unsupported");
  const std::string bare = bare_bert(dir, 59);
  struct Case {
    std::string config, named;
  };
  const Case cases[] = {
      {R"({"model_type": "xlnet", "architectures": ["XLNetLMHeadModel"], "d_model": 16, "n_layer": 2})",
       "model_type 'xlnet' (XLNetLMHeadModel)"},
      {R"({"model_type": "deberta-v2", "architectures": ["DebertaV2ForMaskedLM"], "pad_token_id": null})",
       "model_type 'deberta-v2' (DebertaV2ForMaskedLM)"},
      {R"({"architectures": ["T5ForConditionalGeneration"], "d_model": 16})", "(T5ForConditionalGeneration)"},
      {R"({"model_type": "bert", "architectures": ["BertForTokenClassification"], "vocab_size": 59})",
       "architecture 'BertForTokenClassification'"}};
  for (const Case& c : cases) {
    ordo::write_file_atomic(bare + "/config.json", c.config);
    for (const std::string& args :
         {"probe --checkpoint " + bare + " --out " + (dir / "p"),
          "forward --checkpoint " + bare + " --input " + dir.write("in.json", R"({"input_ids": [[2, 3]]})") +
              " --out " + (dir / "f.safetensors"),
          "finetune --checkpoint " + bare + " --task rte --data " + rte_data(dir) + " --out " + (dir / "ft")}) {
      auto r = run_ordo(args);
      INFO("ordo " << args << "\n" << r.output);
      CHECK(r.exit_code != 0);
      CHECK_THAT(r.output, Contains(c.named) && Contains("ordo reads bert (BertModel") &&
                               Contains("roberta (RobertaModel") && Contains("gpt2 (GPT2Model"));
      CHECK_FALSE(ordo::file_exists(dir / "ft"));
    }
  }
}

TEST_CASE("finetune takes --vocab for a folder without one, as its error says", "[cli][hf_models][errors]") {
  TempDir dir("novocab");
  const std::string bare = bare_bert(dir, 0), rte = rte_data(dir);
  const std::string base = "finetune --quiet --checkpoint " + bare + " --task rte --data " + rte +
                           " --set train.epochs=1 --set train.batch_size=4 --set train.max_seq_length=16 --out ";
  auto r = run_ordo(base + (dir / "ft"));
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("no tokenizer in") && Contains("give one with --vocab FILE"));
  CHECK_FALSE(ordo::file_exists(dir / "ft"));
  std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
  for (int i = 5; i < 59; ++i) vocab += "w" + std::to_string(i) + "\n";
  // A vocab.txt two folders up is a run's only where the folder is RUN/checkpoints/step_N of an ordo
  // run; beside any other folder it is a stranger's, and never read.
  std::filesystem::create_directories(dir / "models/hf");
  std::filesystem::rename(bare, dir / "models/hf/bare");
  dir.write("models/vocab.txt", vocab);
  r = run_ordo("finetune --quiet --checkpoint " + (dir / "models/hf/bare") + " --task rte --data " + rte +
               " --set train.epochs=1 --out " + (dir / "ft"));
  CHECK_THAT(r.output, Contains("no tokenizer in " + (dir / "models/hf/bare") + ": looked for"));
  CHECK_FALSE(ordo::file_exists(dir / "ft"));
  std::filesystem::rename(dir / "models/hf/bare", bare);
  const std::string vocab_file = dir.write("vocab.txt", vocab);
  ordo_ok(base + (dir / "ft") + " --vocab " + vocab_file);
  CHECK(ordo::file_exists(dir / "ft/results.json"));
}

TEST_CASE("a vocabulary longer than the model's vocab_size is refused at load, naming both numbers and files",
          "[cli][hf_models][errors]") {
  TempDir dir("bigvocab");
  const std::string bare = bare_bert(dir, 70), rte = rte_data(dir);  // w60..w69 are in the data
  auto r = run_ordo("finetune --quiet --checkpoint " + bare + " --task rte --data " + rte + " --out " + (dir / "ft") +
                    " --set train.epochs=1 --set train.batch_size=4 --set train.max_seq_length=16");
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains(bare + "/vocab.txt has 70 tokens") && Contains("59 rows") &&
                           Contains(bare + "/config.json"));
  CHECK_FALSE(ordo::file_exists(dir / "ft"));
  auto p = run_ordo("probe --checkpoint " + bare + " --out " + (dir / "probe"));
  CHECK(p.exit_code != 0);
  CHECK_THAT(p.output, Contains("has 70 tokens") && Contains("59 rows"));
}

namespace {

// DIR/model.safetensors with `edit` applied to its (name, tensor) list.
void edit_weights(const std::string& dir, const std::function<void(ordo::nn::NamedTensors&)>& edit) {
  ordo::nn::NamedTensors tensors = ordo::safetensors::load(dir + "/model.safetensors");
  edit(tensors);
  ordo::safetensors::save(dir + "/model.safetensors", tensors);
}

ordo::Tensor tensor_named(const ordo::nn::NamedTensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  FAIL("no tensor " << name);
  return {};
}

}  // namespace

TEST_CASE("RoBERTa given BERT's vocab.txt for a pair task: the segment id against type_vocab_size, named up front",
          "[cli][hf_models][errors]") {
  TempDir dir("roberta_wordpiece");
  const std::string roberta = family_model(dir, "roberta", 2500), rte = rte_data(dir);
  std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
  for (int i = 5; i < 70; ++i) vocab += "w" + std::to_string(i) + "\n";
  const std::string vocab_file = dir.write("vocab.txt", vocab);
  auto r = run_ordo("finetune --quiet --checkpoint " + roberta + " --vocab " + vocab_file + " --task rte --data " + rte +
                    " --out " + (dir / "ft") + " --set train.epochs=1 --set train.batch_size=4 --set train.max_seq_length=16");
  INFO(r.output);
  CHECK(r.exit_code != 0);
  // WordPiece puts a pair's second text in segment 1; RoBERTa's config has type_vocab_size 1.
  CHECK_THAT(r.output, Contains("the tokenizer " + vocab_file + " (wordpiece)") &&
                           Contains("segment (token type) 1") && Contains("type_vocab_size is 1") &&
                           Contains(roberta + "/config.json") && !Contains("embedding_sum"));
  CHECK_FALSE(ordo::file_exists(dir / "ft"));
}

TEST_CASE("GPT-2's and RoBERTa's tensors are named as their files name them in load errors",
          "[cli][hf_models][errors]") {
  TempDir dir("file_names");
  const std::string gpt2 = family_model(dir, "gpt2", 1500), roberta = family_model(dir, "roberta", 2500);
  const std::string input = dir.write("in.json", R"({"input_ids": [[5, 7, 9]]})");
  // c_attn holds q, k and v side by side ([16, 48]); 45 columns split into parts of 15.
  edit_weights(gpt2, [](ordo::nn::NamedTensors& tensors) {
    for (auto& [name, t] : tensors)
      if (name == "transformer.h.0.attn.c_attn.weight") t = ordo::Tensor::zeros({16, 45}, t.dtype(), t.device());
  });
  auto r = run_ordo("forward --checkpoint " + gpt2 + " --input " + input + " --out " + (dir / "g.safetensors"));
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("tensor 'transformer.h.0.attn.c_attn.weight' has shape [16, 45]: its query columns, "
                                "transposed, that is [15, 16] where the model expects [16, 16]") &&
                           !Contains("bert.encoder"));
  edit_weights(roberta, [](ordo::nn::NamedTensors& tensors) {
    for (auto& [name, t] : tensors)
      if (name == "roberta.encoder.layer.1.output.dense.weight") t = ordo::Tensor::zeros({16, 20}, t.dtype(), t.device());
  });
  r = run_ordo("forward --checkpoint " + roberta + " --input " + input + " --out " + (dir / "r.safetensors"));
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("tensor 'roberta.encoder.layer.1.output.dense.weight' has shape [16, 20], the model "
                                "expects [16, 24]") && !Contains("bert.encoder"));
}

TEST_CASE("a tied GPT-2 that stores its own lm_head.weight: accepted as a copy, refused by name when it differs",
          "[cli][hf_models][errors]") {
  TempDir dir("tied_lm_head");
  const std::string gpt2 = family_model(dir, "gpt2", 1500);
  const std::string input = dir.write("in.json", R"({"input_ids": [[5, 7, 9]]})");
  // An f16 copy of the f32 table: the same table in the copy's precision.
  edit_weights(gpt2, [](ordo::nn::NamedTensors& tensors) {
    tensors.emplace_back("lm_head.weight", tensor_named(tensors, "transformer.wte.weight").to(ordo::DType::f16));
  });
  auto r = run_ordo("forward --checkpoint " + gpt2 + " --input " + input + " --out " + (dir / "a.safetensors"));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(ordo::test::load_tensors(dir / "a.safetensors").count("logits") == 1);
  // A different table: the model that wrote it had an output layer of its own.
  edit_weights(gpt2, [](ordo::nn::NamedTensors& tensors) {
    for (auto& [name, t] : tensors)
      if (name == "lm_head.weight") t = ordo::affine(tensor_named(tensors, "transformer.wte.weight"), 1.0, 1.0);
  });
  r = run_ordo("forward --checkpoint " + gpt2 + " --input " + input + " --out " + (dir / "b.safetensors"));
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("tensor 'lm_head.weight' differs from 'transformer.wte.weight' (first at [0, 0]") &&
                           Contains("\"tie_word_embeddings\": false") && !Contains("not supported"));
}

TEST_CASE("ordo analyze --run on an HF checkpoint points to --model", "[cli][hf_models][errors]") {
  TempDir dir("analyze_run_hf");
  const std::string gpt2 = family_model(dir, "gpt2", 1500);
  auto r = run_ordo("analyze --run " + gpt2 + " --out " + (dir / "an"));
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("'" + gpt2 + "' is a checkpoint") && Contains("analyze it with --model " + gpt2) &&
                           !Contains("unknown key"));
  CHECK_FALSE(ordo::file_exists(dir / "an"));
}
