// rpe_shaw and huang_m4 against HuggingFace's BertForPreTraining with
// position_embedding_type "relative_key" and "relative_key_query": golden
// files written by tests/twin/relative_twin.py (transformers 4.x; see
// tests/twin/README.md). The HF checkpoint is loaded with ordo's own loader
// (its config.json selects the variant), one forward and backward is checked
// tensor by tensor, and a checkpoint ordo saves has HF's names and shapes.
//
// Golden values are torch's f64 results from the stored f32 weights, cast to
// f32: the bounds are those of tests/nn/test_bert_golden.cpp (same config,
// same batch, same weight scale), whose comment derives them.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "model/model.h"
#include "nn/checkpoint.h"
#include "pe/huang.h"
#include "pe/relative.h"
#include "tensor/ops.h"
#include "tensor/safetensors.h"
#include "tests/helpers.h"

namespace {

using namespace ordo;
using ordo::test::load_tensors;
using ordo::test::relative_error;

const std::string kTwinDir = std::string(ORDO_SOURCE_DIR) + "/tests/data/twin";

constexpr double kForwardBound = 5e-6;      // f32, per tensor, max|ordo - golden| / max|golden|
constexpr double kGradientBound = 1e-5;     // f32 gradients
constexpr double kLossBound = 1e-6;         // f32 losses, relative
constexpr double kF64TensorBound = 6.0e-8;  // f64: the golden's own f32 rounding, 2^-24
constexpr double kF64LossBound = 1e-12;     // f64 losses (stored in f64)

bool verbose() { return std::getenv("ORDO_GOLDEN_VERBOSE") != nullptr; }

struct WorstElement {
  std::string label;
  double error = 0;
  std::string name;
  void check(const std::string& what, const Tensor& actual, const Tensor& golden, double bound) {
    INFO(label << ": " << what);
    REQUIRE(actual.shape() == golden.shape());
    const double e = relative_error(actual, golden);
    if (verbose()) std::printf("  %-62s %.3e  (bound %.0e)\n", what.c_str(), e, bound);
    CHECK(e <= bound);
    if (e > error) error = e, name = what;
  }
  ~WorstElement() {
    if (verbose()) std::printf("%s: worst tensor %s, %.3e\n", label.c_str(), name.c_str(), error);
  }
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The HF checkpoint of `kind` in an ordo model built from its config.json.
std::unique_ptr<nn::PretrainingModel> hf_model(const std::string& kind, nn::BertConfig& config) {
  config = nn::load_config(kTwinDir + "/" + kind);
  REQUIRE(config.position_embedding_type == kind);
  REQUIRE(config.max_position_embeddings == 20);
  REQUIRE(config.num_attention_heads == 2);
  auto model = model::build_model(config, Device::cpu(), /*nsp=*/true, /*seed=*/7);
  const std::string path = kTwinDir + "/" + kind + "/model.safetensors";
  nn::load_weights(*model, safetensors::load(path), path);  // strict: every parameter present, nothing extra
  return model;
}

void run_relative_golden(const std::string& kind, const std::string& variant, DType dtype) {
  nn::BertConfig config;
  auto model = hf_model(kind, config);
  REQUIRE(config.pe == variant);
  REQUIRE(model->bert.position_encoding().name() == variant);
  if (dtype != DType::f32) model->to_dtype(dtype);
  const bool f64 = dtype == DType::f64;
  const auto g = load_tensors(kTwinDir + "/golden_" + kind + ".safetensors");
  auto golden = [&](const std::string& name) -> const Tensor& {
    auto it = g.find(name);
    if (it == g.end()) FAIL("golden_" << kind << " has no tensor '" << name << "'");
    return it->second;
  };
  WorstElement worst{kind + (f64 ? " (f64)" : " (f32)"), 0, {}};
  const double forward_bound = f64 ? kF64TensorBound : kForwardBound;
  const double gradient_bound = f64 ? kF64TensorBound : kGradientBound;
  const double loss_bound = f64 ? kF64LossBound : kLossBound;

  nn::BertInputs in;
  in.input_ids = golden("input_ids");
  in.segment_ids = golden("segment_ids");
  in.attention_mask = golden("attention_mask");
  const Tensor& labels = golden("labels");
  nn::Context ctx = nn::Context::train(1, 0);  // dropout 0
  nn::ForwardTrace trace;
  trace.keep_hidden_states = trace.keep_attentions = true;
  nn::PretrainingOutput out = model->forward(in, labels, golden("nsp_labels"), ctx, &trace);

  for (const char* name : {"loss", "lm_loss", "nsp_loss"}) {
    const double actual = (std::string(name) == "loss"      ? out.loss
                           : std::string(name) == "lm_loss" ? out.lm_loss
                                                            : out.nsp_loss)
                              .value()
                              .item();
    const double expected = golden(name).item();
    INFO(worst.label << ": " << name << " " << actual << ", golden " << expected);
    CHECK(std::fabs(actual - expected) <= loss_bound * std::fabs(expected));
  }
  worst.check("nsp_logits", out.nsp_logits, golden("nsp_logits"), forward_bound);
  for (int64_t l = 0; l <= config.num_hidden_layers; ++l)
    worst.check("hidden_states." + std::to_string(l), trace.hidden_states.at(static_cast<size_t>(l)),
                golden("hidden_states." + std::to_string(l)), forward_bound);
  for (int64_t l = 1; l <= config.num_hidden_layers; ++l)
    worst.check("attentions." + std::to_string(l), trace.attentions.at(static_cast<size_t>(l - 1)),
                golden("attentions." + std::to_string(l)), forward_bound);
  {
    nn::Context eval = nn::Context::eval();
    worst.check("logits (all positions)", model->all_logits(in, eval).value(), golden("logits"), forward_bound);
    NoGradGuard no_grad;  // the CPU's evaluation path (attention_inference with Shaw's key term as its bias)
    worst.check("logits (all positions, evaluation path)", model->all_logits(in, eval).value(), golden("logits"),
                forward_bound);
  }

  out.loss.backward();
  int64_t golden_grads = 0;
  for (const auto& [name, t] : g) golden_grads += name.rfind("grad.", 0) == 0;
  const auto params = model->named_parameters();
  CHECK(golden_grads == static_cast<int64_t>(params.size()));
  bool saw_table = false;
  for (const auto& [name, p] : params) {
    INFO("parameter " << name);
    REQUIRE(p->var.grad().defined());
    saw_table |= ends_with(name, "attention.self.distance_embedding.weight");
    if (ends_with(name, "attention.self.key.bias")) {
      // Softmax cancels a key bias with relative_key: its gradient is zero
      // (bert_twin's README); with relative_key_query it is not, k_j . a_r
      // depends on it, and it is checked as any other.
      if (kind == "relative_key") {
        const std::string weight = name.substr(0, name.size() - 4) + "weight";
        const double scale = max(abs(golden("grad." + weight))).item();
        CHECK(max(abs(golden("grad." + name))).item() <= 1e-12 * scale);
        CHECK(max(abs(p->var.grad().to(DType::f64))).item() / scale <= gradient_bound);
        continue;
      }
      CHECK(max(abs(golden("grad." + name))).item() > 1e-3);
    }
    worst.check("grad." + name, p->var.grad(), golden("grad." + name), gradient_bound);
  }
  CHECK(saw_table);
}

}  // namespace

TEST_CASE("rpe_shaw matches HF BERT relative_key (forward, attentions, every gradient) in f32 and f64",
          "[golden][relative]") {
  run_relative_golden("relative_key", "rpe_shaw", DType::f32);
  run_relative_golden("relative_key", "rpe_shaw", DType::f64);
}

TEST_CASE("huang_m4 matches HF BERT relative_key_query (forward, attentions, every gradient) in f32 and f64",
          "[golden][relative]") {
  run_relative_golden("relative_key_query", "huang_m4", DType::f32);
  run_relative_golden("relative_key_query", "huang_m4", DType::f64);
}

TEST_CASE("rpe_shaw and huang_m4 checkpoints ordo saves have HF's names, shapes and position_embedding_type",
          "[golden][relative]") {
  for (const char* kind : {"relative_key", "relative_key_query"}) {
    INFO(kind);
    nn::BertConfig config;
    auto model = hf_model(kind, config);
    test::TempDir dir("ordo_relative_golden");
    nn::save_model(dir.path, *model);
    const auto hf = load_tensors(kTwinDir + "/" + kind + "/model.safetensors");
    const auto ours = load_tensors(dir.path + "/model.safetensors");
    for (const auto& [name, t] : hf) {
      INFO("HF tensor " << name);
      auto it = ours.find(name);
      REQUIRE(it != ours.end());
      CHECK(it->second.shape() == t.shape());
      // Every tensor HF uses comes back bit for bit; the table relative types leave unused is zeros.
      if (name == "bert.embeddings.position_embeddings.weight")
        CHECK(max(abs(it->second.to(DType::f64))).item() == 0);
      else
        CHECK(test::bit_identical(it->second, t));
    }
    CHECK(ours.size() == hf.size());
    // The per-layer table: [2 max_position_embeddings - 1, head_dim], HF's name.
    CHECK(ours.at("bert.encoder.layer.1.attention.self.distance_embedding.weight").shape() == Shape{39, 16});
    // config.json names the HF type, and reading it back gives the same variant.
    json::Value saved = json::parse(read_file(dir.path + "/config.json"));
    CHECK(saved["position_embedding_type"].as_string() == kind);
    nn::BertConfig again = nn::load_config(dir.path);
    CHECK(again.pe == config.pe);
    auto reloaded = model::build_model(again, Device::cpu(), true, 99);
    nn::load_weights(*reloaded, safetensors::load(dir.path + "/model.safetensors"), dir.path);
    for (const auto& [name, p] : model->named_parameters()) {
      INFO(name);
      CHECK(test::bit_identical(reloaded->find_parameter(name)->var.value(), p->var.value()));
    }
  }
}

TEST_CASE("HF's relative types are rpe_shaw and huang_m4 with HF's layout only", "[relative]") {
  auto type_of = [](const std::string& pe, const std::string& options) {
    json::Value c = json::parse(R"({"hidden_size": 32, "num_attention_heads": 2, "max_position_embeddings": 20})");
    c["pe"] = pe;
    c["pe_options"] = json::parse(options);
    return nn::config_from_json(c, "test").position_embedding_type;
  };
  CHECK(type_of("rpe_shaw", "{}") == "relative_key");
  CHECK(type_of("rpe_shaw", R"({"share": "heads", "value": false, "max_distance": 19})") == "relative_key");
  CHECK(type_of("huang_m4", "{}") == "relative_key_query");
  // Layouts HF cannot express are not written as HF's types.
  CHECK(type_of("rpe_shaw", R"({"value": true})") == "absolute");
  CHECK(type_of("rpe_shaw", R"({"clip": 4})") == "absolute");
  CHECK(type_of("rpe_shaw", R"({"share": "none"})") == "absolute");
  CHECK(type_of("huang_m4", R"({"max_distance": 40})") == "absolute");
  CHECK(type_of("huang_m3", "{}") == "absolute");
  // And a config that claims one with another layout is an error naming both.
  json::Value bad = json::parse(R"({"hidden_size": 32, "num_attention_heads": 2, "pe": "rpe_shaw",
                                    "position_embedding_type": "relative_key", "pe_options": {"value": true}})");
  CHECK_THROWS_WITH(nn::config_from_json(bad, "test"), Catch::Contains("relative_key") && Catch::Contains("value"));
}
