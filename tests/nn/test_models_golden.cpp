// GPT-2 and RoBERTa as HuggingFace writes them: tests/twin/models_twin.py
// built GPT2LMHeadModel and RobertaForMaskedLM in four configurations (odd
// sizes, tied and untied LM heads) with random weights, saved them with
// save_pretrained into tests/data/twin/<name>/ and ran a padded batch through
// each in float64: golden_<name>.safetensors. ordo loads each folder as HF
// wrote it (config.json's model_type, HF's tensor names and Conv1D shapes)
// and must give every hidden state, attention and the logits.
#include <catch2/catch.hpp>

#include <filesystem>

#include "base/file_io.h"
#include "model/model.h"
#include "nn/checkpoint.h"
#include "nn/hf_layout.h"
#include "pe/registry.h"
#include "tests/nn/golden.h"

using namespace ordo;
using ordo::test::Comparison;
using ordo::test::Golden;
using ordo::test::kTwinDir;

namespace {

// The folder's model forward on the golden batch (default positions: RoBERTa's
// skip its padding, as HF's), every tensor against the golden file.
void check_model(const std::string& name, DType dtype, double bound) {
  const Golden g("golden_" + name + ".safetensors");
  nn::LoadReport report;
  auto model = model::load_model(kTwinDir + "/" + name, Device::cpu(), &report);
  CHECK(report.missing.empty());
  if (dtype != DType::f32) model->to_dtype(dtype);
  nn::BertInputs in;
  in.input_ids = g["input_ids"];
  in.attention_mask = g["attention_mask"];
  NoGradGuard no_grad;
  nn::Context ctx = nn::Context::eval();
  nn::ForwardTrace trace;
  trace.keep_hidden_states = trace.keep_attentions = true;
  Var sequence = model->bert.forward(in, ctx, &trace);
  Var logits = model->predictions.forward(sequence, model->bert.embeddings.word_embeddings.weight.var, ctx);
  const int64_t layers = model->bert.config().num_hidden_layers;
  REQUIRE(trace.hidden_states.size() == static_cast<size_t>(layers + 1));
  REQUIRE(g.count("hidden_states.") == layers + 1);
  Comparison cmp(name + (dtype == DType::f64 ? " (f64)" : " (f32)"));
  for (int64_t l = 0; l <= layers; ++l)
    cmp.check("hidden_states." + std::to_string(l), trace.hidden_states[l],
              g["hidden_states." + std::to_string(l)], bound);
  for (int64_t l = 1; l <= layers; ++l)
    cmp.check("attentions." + std::to_string(l), trace.attentions[l - 1],
              g["attentions." + std::to_string(l)], bound);
  cmp.check("logits", logits.value(), g["logits"], bound);
  // Again without the attentions kept: the CPU's evaluation path
  // (attention_inference, a batch element a thread), against the same values.
  nn::ForwardTrace plain;
  plain.keep_hidden_states = true;
  Var again = model->bert.forward(in, ctx, &plain);
  for (int64_t l = 0; l <= layers; ++l)
    cmp.check("hidden_states." + std::to_string(l) + " (evaluation path)", plain.hidden_states[l],
              g["hidden_states." + std::to_string(l)], bound);
  cmp.check("logits (evaluation path)",
            model->predictions.forward(again, model->bert.embeddings.word_embeddings.weight.var, ctx).value(),
            g["logits"], bound);
}

}  // namespace

TEST_CASE("GPT-2 and RoBERTa checkpoints from transformers match HF in f32", "[golden][models]") {
  for (const char* name : {"gpt2_tied", "gpt2_untied", "roberta_tied", "roberta_untied"}) {
    SECTION(name) { check_model(name, DType::f32, test::kForwardBound); }
  }
}

TEST_CASE("GPT-2 and RoBERTa in f64 match the golden values to their f32 rounding", "[golden][models]") {
  for (const char* name : {"gpt2_tied", "gpt2_untied", "roberta_tied", "roberta_untied"}) {
    SECTION(name) { check_model(name, DType::f64, test::kF64TensorBound); }
  }
}

TEST_CASE("the twin folders are read as HF's families", "[golden][models]") {
  const nn::BertConfig gpt2 = nn::load_config(kTwinDir + "/gpt2_untied");
  CHECK(gpt2.model_type == "gpt2");
  CHECK(gpt2.decoder);
  CHECK(gpt2.pre_layer_norm);
  CHECK_FALSE(gpt2.embedding_layer_norm);
  CHECK(gpt2.lm_head == "linear");
  CHECK_FALSE(gpt2.tie_word_embeddings);
  CHECK(gpt2.hidden_size == 20);
  CHECK(gpt2.intermediate_size == 37);
  CHECK(gpt2.hidden_act == "gelu_new");
  CHECK(nn::load_config(kTwinDir + "/gpt2_tied").intermediate_size == 96);  // n_inner null: 4 n_embd
  const nn::BertConfig roberta = nn::load_config(kTwinDir + "/roberta_tied");
  CHECK(roberta.model_type == "roberta");
  CHECK(roberta.position_offset == 2);  // pad_token_id 1 + 1
  CHECK(roberta.type_vocab_size == 1);
  CHECK_FALSE(roberta.decoder);
  // 22 rows, the first two never a real token's: positions 0..19.
  auto model = model::load_model(kTwinDir + "/roberta_tied", Device::cpu());
  CHECK(model->bert.position_encoding().max_position() == 19);
}

TEST_CASE("GPT-2 and RoBERTa written by ordo read back the same and in HF's layout", "[models][checkpoint]") {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/ordo_models_roundtrip";
  for (const char* name : {"gpt2_tied", "gpt2_untied", "roberta_tied", "roberta_untied"}) {
    std::filesystem::remove_all(dir);
    auto model = model::load_model(kTwinDir + "/" + name, Device::cpu());
    nn::save_model(dir, *model);
    // HF's names and shapes exactly: the file holds what save_pretrained wrote.
    std::map<std::string, Shape> ours, theirs;
    for (const auto& [n, t] : safetensors::load(dir + "/model.safetensors")) ours[n] = t.shape();
    for (const auto& [n, t] : safetensors::load(kTwinDir + "/" + std::string(name) + "/model.safetensors"))
      theirs[n] = t.shape();
    CHECK(ours == theirs);
    const json::Value config = json::parse(read_file(dir + "/config.json"));
    CHECK(config["architectures"][0].as_string() ==
          (std::string(name).rfind("gpt2", 0) == 0 ? "GPT2LMHeadModel" : "RobertaForMaskedLM"));
    auto again = model::load_model(dir, Device::cpu());
    auto a = model->named_parameters(), b = again->named_parameters();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      INFO(name << ": " << a[i].first);
      CHECK(a[i].first == b[i].first);
      CHECK(max(abs(sub(a[i].second->var.value(), b[i].second->var.value()))).item() == 0);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("GPT-2 and RoBERTa configs: what ordo cannot compute is refused by name", "[models][config]") {
  auto gpt2 = [](const std::string& extra) {
    return nn::config_from_json(json::parse(R"({"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1)" + extra +
                                            "}"),
                                "config.json", true);
  };
  CHECK(gpt2("").intermediate_size == 32);
  CHECK(gpt2("").pad_token_id == -1);  // GPT-2's word embeddings have no padding row
  CHECK_THROWS_WITH(gpt2(R"(, "scale_attn_by_inverse_layer_idx": true)"),
                    Catch::Contains("scale_attn_by_inverse_layer_idx true is not supported"));
  CHECK_THROWS_WITH(gpt2(R"(, "add_cross_attention": true)"), Catch::Contains("add_cross_attention"));
  CHECK_THROWS_WITH(gpt2(R"(, "n_embd_typo": 3)"), Catch::Contains("n_embd_typo"));
  // A run config (strict) takes the options, not model_type.
  const nn::BertConfig opts = nn::config_from_json(
      json::parse(R"({"pre_layer_norm": true, "embedding_layer_norm": false, "lm_head": "linear",)"
                  R"( "tie_word_embeddings": false, "decoder": true})"),
      "run config");
  CHECK(opts.model_type == "bert");
  CHECK_FALSE(opts.embedding_layer_norm);
  CHECK_THROWS_WITH(nn::config_from_json(json::parse(R"({"lm_head": "mlp"})"), "run config"),
                    Catch::Contains("lm_head"));
  // The roberta layout holds a learned absolute table and input segments only.
  CHECK_THROWS_WITH(nn::config_from_json(json::parse(R"({"model_type": "roberta", "pe": "rpe_shaw"})"), "c.json", true),
                    Catch::Contains("has no roberta layout"));
}

TEST_CASE("a classifier fine-tuned from GPT-2 is written as GPT2ForSequenceClassification", "[models][checkpoint]") {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/ordo_gpt2_classifier";
  std::filesystem::remove_all(dir);
  const nn::BertConfig config = nn::load_config(kTwinDir + "/gpt2_tied");
  nn::SequenceClassifier model(config, pe::make_position_encoding(config, Device::cpu()), Device::cpu(), 3);
  nn::initialize_bert(model, model.bert, 9);
  CHECK(model.classifier.bias == nullptr);  // HF's score has none
  nn::save_weights(dir, model, config, "BertForSequenceClassification");
  std::map<std::string, Shape> names;
  for (const auto& [n, t] : safetensors::load(dir + "/model.safetensors")) names[n] = t.shape();
  CHECK(names.at("score.weight") == Shape{3, 24});
  CHECK(names.count("transformer.wte.weight") == 1);
  CHECK(names.count("classifier.weight") == 0);
  CHECK(json::parse(read_file(dir + "/config.json"))["architectures"][0].as_string() == "GPT2ForSequenceClassification");
  nn::LoadReport report;
  auto again = model::load_classifier(dir, 3, Device::cpu(), 1, &report);
  CHECK(report.missing.empty());
  CHECK(max(abs(sub(again->classifier.weight.var.value(), model.classifier.weight.var.value()))).item() == 0);
  std::filesystem::remove_all(dir);
}
