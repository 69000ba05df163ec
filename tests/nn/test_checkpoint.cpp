// Checkpoints: ordo's own round trip, HuggingFace's names and files read
// both ways, and every way a checkpoint can be wrong ending in an
// ordo::Error that names the file and the tensor or key.
//
// The HF side is exercised with hand-made tensor lists (the names HF writes,
// as documented by transformers' BertForPreTraining: no "bert." prefix for a
// BertModel, TF-era gamma/beta, the position_ids buffer, the tied decoder
// copies) and with a real HF checkpoint, tests/data/twin/bert/, written by
// transformers' save_pretrained (see tests/twin/README.md).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "base/json.h"
#include "model/model.h"
#include "nn/checkpoint.h"
#include "nn/task_heads.h"
#include "pe/registry.h"
#include "tensor/ops.h"
#include "tensor/safetensors.h"
#include "tests/helpers.h"

namespace {

using namespace ordo;
namespace fs = std::filesystem;
using ordo::test::TempDir;


nn::BertConfig tiny_config() {
  return ordo::test::tiny_bert_config(/*vocab_size=*/23, /*hidden_size=*/8, /*layers=*/2, /*heads=*/2,
                                      /*intermediate_size=*/12, /*max_position_embeddings=*/10);
}

nn::NamedTensors named_values(nn::PretrainingModel& model) {
  nn::NamedTensors out;
  for (const auto& [name, p] : model.named_parameters()) out.emplace_back(name, p->var.value().clone());
  return out;
}

void require_same_parameters(nn::PretrainingModel& a, nn::PretrainingModel& b) {
  auto pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].first);
    REQUIRE(pa[i].first == pb[i].first);
    CHECK(test::bit_identical(pa[i].second->var.value(), pb[i].second->var.value()));
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The error load_weights throws for these tensors, or "" when it loads them.
std::string load_error(nn::PretrainingModel& model, const nn::NamedTensors& tensors,
                       const std::vector<std::string>& may_be_missing = {}) {
  try {
    nn::load_weights(model, tensors, "ckpt.safetensors", may_be_missing);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string load_model_error(const std::string& dir, bool nsp = true) {
  try {
    model::load_model(dir, Device::cpu(), nsp);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("save_model then load_model gives back every parameter bit for bit", "[checkpoint]") {
  for (bool decoder : {false, true}) {
    for (bool pre_ln : {false, true}) {
      nn::BertConfig config = tiny_config();
      config.decoder = decoder;
      config.pre_layer_norm = pre_ln;
      const bool nsp = !decoder;
      INFO("decoder " << decoder << ", pre-LN " << pre_ln);
      auto model = model::build_model(config, Device::cpu(), nsp, /*seed=*/11);
      TempDir dir;
      nn::save_model(dir.path, *model);
      REQUIRE(file_exists(dir.path + "/config.json"));
      REQUIRE(file_exists(dir.path + "/model.safetensors"));

      nn::BertConfig read = nn::load_config(dir.path);
      CHECK(read.vocab_size == config.vocab_size);
      CHECK(read.hidden_size == config.hidden_size);
      CHECK(read.num_hidden_layers == config.num_hidden_layers);
      CHECK(read.intermediate_size == config.intermediate_size);
      CHECK(read.max_position_embeddings == config.max_position_embeddings);
      CHECK(read.pe == config.pe);
      CHECK(read.decoder == decoder);
      CHECK(read.pre_layer_norm == pre_ln);

      // A different seed, so equality means the values came from the file.
      auto loaded = model::load_model(dir.path, Device::cpu(), nsp, /*seed=*/99);
      require_same_parameters(*model, *loaded);
    }
  }
}

TEST_CASE("a saved checkpoint is laid out as HuggingFace's", "[checkpoint]") {
  auto model = model::build_model(tiny_config(), Device::cpu(), /*nsp=*/true, 3);
  TempDir dir;
  nn::save_model(dir.path, *model);
  // transformers reads safetensors only with metadata format "pt" and the
  // config by model_type; Linear weights are [out, in].
  safetensors::Header header;
  std::string bytes = read_file(dir.path + "/model.safetensors");
  header = safetensors::parse_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  bool format_pt = false;
  for (const auto& [k, v] : header.metadata) format_pt |= (k == "format" && v == "pt");
  CHECK(format_pt);
  std::map<std::string, Shape> shapes;
  for (const auto& e : header.entries) shapes[e.name] = e.shape;
  CHECK(shapes.at("bert.embeddings.word_embeddings.weight") == Shape{23, 8});
  CHECK(shapes.at("bert.embeddings.position_embeddings.weight") == Shape{10, 8});
  CHECK(shapes.at("bert.embeddings.token_type_embeddings.weight") == Shape{2, 8});
  CHECK(shapes.at("bert.encoder.layer.1.attention.self.query.weight") == Shape{8, 8});
  CHECK(shapes.at("bert.encoder.layer.0.intermediate.dense.weight") == Shape{12, 8});  // [out, in]
  CHECK(shapes.at("bert.encoder.layer.0.output.dense.weight") == Shape{8, 12});
  CHECK(shapes.at("bert.pooler.dense.weight") == Shape{8, 8});
  CHECK(shapes.at("cls.predictions.bias") == Shape{23});
  CHECK(shapes.at("cls.predictions.transform.LayerNorm.weight") == Shape{8});
  CHECK(shapes.at("cls.seq_relationship.weight") == Shape{2, 8});
  CHECK(shapes.count("cls.predictions.decoder.weight") == 0);  // tied: written once, as HF does
  CHECK(shapes.size() == model->named_parameters().size());

  json::Value config = json::parse(read_file(dir.path + "/config.json"));
  CHECK(config["model_type"].as_string() == "bert");
  CHECK(config["architectures"][0].as_string() == "BertForPreTraining");  // it holds the NSP head (cls.seq_relationship above)
  CHECK(config["position_embedding_type"].as_string() == "absolute");
  CHECK(config["is_decoder"].as_bool() == false);
  // ordo's `decoder` travels as HF's is_decoder only: transformers takes a
  // "decoder" key for an encoder-decoder model's sub-config and fails on a bool.
  CHECK_FALSE(config.contains("decoder"));

  nn::BertConfig decoder_config = tiny_config();
  decoder_config.decoder = true;
  auto decoder = model::build_model(decoder_config, Device::cpu(), /*nsp=*/false, 3);
  TempDir decoder_dir;
  nn::save_model(decoder_dir.path, *decoder);
  json::Value d = json::parse(read_file(decoder_dir.path + "/config.json"));
  CHECK(d["is_decoder"].as_bool());
  CHECK(d["architectures"][0].as_string() == "BertLMHeadModel");
  CHECK_FALSE(d.contains("decoder"));
  CHECK(nn::load_config(decoder_dir.path).decoder);
}

TEST_CASE("load_weights accepts the names HuggingFace writes", "[checkpoint]") {
  auto source = model::build_model(tiny_config(), Device::cpu(), /*nsp=*/true, 5);
  const nn::NamedTensors values = named_values(*source);
  const Tensor& words = values.front().second;
  REQUIRE(values.front().first == "bert.embeddings.word_embeddings.weight");

  SECTION("canonical_name maps each spelling to ordo's") {
    CHECK(nn::canonical_name("embeddings.word_embeddings.weight") == "bert.embeddings.word_embeddings.weight");
    CHECK(nn::canonical_name("bert.embeddings.LayerNorm.gamma") == "bert.embeddings.LayerNorm.weight");
    CHECK(nn::canonical_name("encoder.layer.3.output.LayerNorm.beta") == "bert.encoder.layer.3.output.LayerNorm.bias");
    CHECK(nn::canonical_name("cls.predictions.transform.LayerNorm.gamma") ==
          "cls.predictions.transform.LayerNorm.weight");
    CHECK(nn::canonical_name("cls.predictions.bias") == "cls.predictions.bias");
    CHECK(nn::canonical_name("pooler.dense.bias") == "bert.pooler.dense.bias");
  }

  SECTION("a BertModel-style checkpoint: no bert. prefix, gamma/beta, position_ids, the tied copies") {
    nn::NamedTensors hf;
    for (const auto& [name, t] : values) {
      std::string n = name;
      if (n.rfind("bert.", 0) == 0) n = n.substr(5);
      if (ends_with(n, "LayerNorm.weight")) n = n.substr(0, n.size() - 6) + "gamma";
      if (ends_with(n, "LayerNorm.bias")) n = n.substr(0, n.size() - 4) + "beta";
      hf.emplace_back(n, t);
    }
    hf.emplace_back("embeddings.position_ids", Tensor::arange(10).reshape({1, 10}));  // an i64 buffer
    hf.emplace_back("cls.predictions.decoder.weight", words);
    hf.emplace_back("cls.predictions.decoder.bias", source->predictions.bias->var.value());
    auto target = model::build_model(tiny_config(), Device::cpu(), true, 6);
    REQUIRE(load_error(*target, hf) == "");
    require_same_parameters(*source, *target);
  }

  SECTION("the MLM bias under the decoder's name only") {
    nn::NamedTensors hf;
    for (const auto& [name, t] : values)
      hf.emplace_back(name == "cls.predictions.bias" ? "cls.predictions.decoder.bias" : name, t);
    auto target = model::build_model(tiny_config(), Device::cpu(), true, 6);
    REQUIRE(load_error(*target, hf) == "");
    require_same_parameters(*source, *target);
  }

  SECTION("an untied decoder copy is refused, naming it") {
    nn::NamedTensors hf = values;
    hf.emplace_back("cls.predictions.decoder.weight", affine(words, 1.0, 1e-3));
    auto target = model::build_model(tiny_config(), Device::cpu(), true, 6);
    std::string e = load_error(*target, hf);
    CHECK(contains(e, "ckpt.safetensors"));
    CHECK(contains(e, "cls.predictions.decoder.weight"));
    CHECK(contains(e, "ties"));
  }

  SECTION("a checkpoint in f64 loads into the f32 model") {
    nn::NamedTensors hf;
    for (const auto& [name, t] : values) hf.emplace_back(name, t.to(DType::f64));
    hf.emplace_back("cls.predictions.decoder.weight", words.to(DType::f64));
    auto target = model::build_model(tiny_config(), Device::cpu(), true, 6);
    REQUIRE(load_error(*target, hf) == "");
    require_same_parameters(*source, *target);
  }
}

TEST_CASE("a checkpoint that does not match the model is refused, naming the tensor", "[checkpoint]") {
  auto source = model::build_model(tiny_config(), Device::cpu(), /*nsp=*/true, 5);
  const nn::NamedTensors values = named_values(*source);
  auto target = model::build_model(tiny_config(), Device::cpu(), true, 6);

  SECTION("a missing tensor") {
    nn::NamedTensors t;
    for (const auto& [name, v] : values)
      if (name != "bert.encoder.layer.1.attention.self.key.weight") t.emplace_back(name, v);
    std::string e = load_error(*target, t);
    CHECK(contains(e, "ckpt.safetensors"));
    CHECK(contains(e, "lacks 1 parameters"));
    CHECK(contains(e, "bert.encoder.layer.1.attention.self.key.weight"));
  }
  SECTION("a missing tensor that may be missing (the NSP head of an MLM-only checkpoint)") {
    nn::NamedTensors t;
    for (const auto& [name, v] : values)
      if (name.rfind("cls.seq_relationship.", 0) != 0) t.emplace_back(name, v);
    CHECK(load_error(*target, t, {"cls.seq_relationship."}) == "");
  }
  SECTION("an extra tensor (a third layer)") {
    nn::NamedTensors t = values;
    t.emplace_back("bert.encoder.layer.2.attention.self.query.weight", Tensor::zeros({8, 8}));
    std::string e = load_error(*target, t);
    CHECK(contains(e, "ckpt.safetensors"));
    CHECK(contains(e, "tensors the model does not"));
    CHECK(contains(e, "bert.encoder.layer.2.attention.self.query.weight"));
  }
  SECTION("a wrong shape (another vocabulary)") {
    nn::NamedTensors t = values;
    t[0].second = Tensor::zeros({30, 8});
    std::string e = load_error(*target, t);
    CHECK(contains(e, "ckpt.safetensors"));
    CHECK(contains(e, "bert.embeddings.word_embeddings.weight"));
    CHECK(contains(e, "[30, 8]"));
    CHECK(contains(e, "[23, 8]"));
  }
  SECTION("an integer tensor where a weight belongs") {
    nn::NamedTensors t = values;
    t[0].second = Tensor::zeros({23, 8}, DType::i64);
    std::string e = load_error(*target, t);
    CHECK(contains(e, "bert.embeddings.word_embeddings.weight"));
    CHECK(contains(e, "floating-point"));
  }
  SECTION("the same tensor under two spellings") {
    nn::NamedTensors t = values;
    t.emplace_back("embeddings.word_embeddings.weight", values[0].second);
    std::string e = load_error(*target, t);
    CHECK(contains(e, "embeddings.word_embeddings.weight"));
    CHECK(contains(e, "twice"));
  }
}

TEST_CASE("a damaged checkpoint directory is refused with the file named", "[checkpoint]") {
  auto model = model::build_model(tiny_config(), Device::cpu(), /*nsp=*/true, 5);
  TempDir dir;
  nn::save_model(dir.path, *model);
  const std::string weights = dir.path + "/model.safetensors", config = dir.path + "/config.json";
  const std::string good = read_file(weights), good_config = read_file(config);
  REQUIRE(load_model_error(dir.path) == "");

  SECTION("truncated weights") {
    write_file_atomic(weights, good.substr(0, good.size() - 100));
    std::string e = load_model_error(dir.path);
    CHECK(contains(e, weights));
  }
  SECTION("trailing bytes after the data") {
    write_file_atomic(weights, good + "junk");
    std::string e = load_model_error(dir.path);
    CHECK(contains(e, weights));
    CHECK(contains(e, "trailing"));
  }
  SECTION("a header that lies about a tensor's extent") {
    // Rewrite one data_offsets end in the JSON header to reach past the file;
    // the header keeps its length so only the lie is new.
    std::string bad = good;
    size_t at = bad.find("\"data_offsets\":[0,");
    REQUIRE(at != std::string::npos);
    size_t digit = at + std::string("\"data_offsets\":[0,").size();
    REQUIRE(bad[digit] != '9');
    bad[digit] = '9';
    write_file_atomic(weights, bad);
    std::string e = load_model_error(dir.path);
    CHECK(contains(e, weights));
    CHECK(contains(e, "data_offsets"));
  }
  SECTION("a header length beyond the file") {
    std::string bad = good;
    bad[6] = '\x7f';  // the length's second-highest byte
    write_file_atomic(weights, bad);
    std::string e = load_model_error(dir.path);
    CHECK(contains(e, weights));
    CHECK(contains(e, "header length"));
  }
  SECTION("garbage") {
    write_file_atomic(weights, "not a safetensors file");
    CHECK(contains(load_model_error(dir.path), weights));
  }
  SECTION("no weights file") {
    fs::remove(weights);
    std::string e = load_model_error(dir.path);
    CHECK(contains(e, weights));
  }
  SECTION("weights for another config") {
    json::Value c = json::parse(good_config);
    c["num_hidden_layers"] = 1;
    write_file_atomic(config, json::dump(c));
    std::string e = load_model_error(dir.path);
    CHECK(contains(e, weights));
    CHECK(contains(e, "bert.encoder.layer.1."));
  }
  SECTION("malformed config.json") {
    write_file_atomic(config, good_config.substr(0, good_config.size() / 2));
    CHECK(contains(load_model_error(dir.path), config));
  }
  SECTION("an unknown key in config.json") {
    json::Value c = json::parse(good_config);
    c["hiden_size"] = 8;
    write_file_atomic(config, json::dump(c));
    std::string e = load_model_error(dir.path);
    CHECK(contains(e, config));
    CHECK(contains(e, "hiden_size"));
  }
  SECTION("is_decoder (HF's key) contradicting decoder (ordo's)") {
    json::Value c = json::parse(good_config);
    c["decoder"] = false;
    c["is_decoder"] = true;
    write_file_atomic(config, json::dump(c));
    std::string e = load_model_error(dir.path);
    CHECK(contains(e, config));
    CHECK(contains(e, "is_decoder"));
  }
}

TEST_CASE("HuggingFace's own checkpoint (save_pretrained) loads in ordo", "[checkpoint]") {
  const std::string dir = std::string(ORDO_SOURCE_DIR) + "/tests/data/twin/bert";
  // config.json as transformers 5 writes it: null token ids, dtype, use_cache, ...
  nn::BertConfig c = nn::load_config(dir);
  CHECK(c.vocab_size == 59);
  CHECK(c.pe == "ape_learned");
  CHECK_FALSE(c.decoder);
  auto model = model::load_model(dir, Device::cpu(), /*nsp=*/true);
  // Every tensor of the file is in the model, value for value.
  auto tensors = safetensors::load(dir + "/model.safetensors");
  CHECK(tensors.size() == model->named_parameters().size());
  for (const auto& [name, t] : tensors) {
    INFO(name);
    nn::Parameter* p = model->find_parameter(name);
    REQUIRE(p != nullptr);
    CHECK(test::bit_identical(p->var.value(), t));
  }

  SECTION("an HF decoder config (is_decoder true, no ordo keys) builds a decoder") {
    TempDir tmp;
    json::Value config = json::parse(read_file(dir + "/config.json"));
    config["is_decoder"] = true;
    config["architectures"][0] = "BertLMHeadModel";
    write_file_atomic(tmp.path + "/config.json", json::dump(config, 2));
    nn::BertConfig d = nn::load_config(tmp.path);
    CHECK(d.decoder);
  }
}

TEST_CASE("a checkpoint's NSP head is read from its weights, whatever 'architectures' says", "[checkpoint]") {
  test::TempDir dir("heads");
  auto model = model::build_model(test::tiny_bert_config(23, 8, 1, 2, 12, 10), Device::cpu(), /*nsp=*/true, 3);
  nn::save_model(dir.path, *model);
  // ordo's MLM+NSP checkpoints before they were named right (and HF's
  // bert-base-uncased) say BertForMaskedLM while holding the NSP head.
  json::Value config = json::parse(read_file(dir.path + "/config.json"));
  config["architectures"] = json::parse("[\"BertForMaskedLM\"]");
  write_file_atomic(dir.path + "/config.json", json::dump(config));
  CHECK(nn::read_checkpoint(dir.path).nsp);
  CHECK(model::load_model(dir.path, Device::cpu())->seq_relationship != nullptr);

  // A checkpoint with a pooler but no NSP head (HF's BertModel writes one):
  // read as MLM, the pooler left out.
  nn::NamedTensors without_nsp;
  for (auto& [name, t] : safetensors::load(dir.path + "/model.safetensors"))
    if (name.rfind("cls.seq_relationship.", 0) != 0) without_nsp.emplace_back(name, t);
  safetensors::save(dir.path + "/model.safetensors", without_nsp);
  nn::Checkpoint mlm = nn::read_checkpoint(dir.path);
  CHECK_FALSE(mlm.nsp);
  for (const auto& [name, t] : mlm.tensors) CHECK(name.rfind("bert.pooler.", 0) != 0);
  CHECK(model::load_model(dir.path, Device::cpu())->seq_relationship == nullptr);
}

TEST_CASE("a NaN or Inf in a checkpoint is an error naming the tensor and the element", "[checkpoint][errors]") {
  test::TempDir dir("non-finite");
  auto model = model::build_model(test::tiny_bert_config(23, 8, 1, 2, 12, 10), Device::cpu(), /*nsp=*/false, 3);
  nn::save_model(dir.path, *model);
  const std::string weights = dir.path + "/model.safetensors";
  const auto clean = safetensors::load(weights);
  for (double bad : {NAN, INFINITY, -INFINITY}) {
    INFO(bad);
    auto tensors = clean;
    for (auto& [name, t] : tensors)
      if (name == "bert.encoder.layer.0.output.dense.weight") t.select(0, 2).select(0, 5).fill_(bad);  // element [2, 5]
    safetensors::save(weights, tensors);
    CHECK_THROWS_WITH(model::load_model(dir.path, Device::cpu()),
                      Catch::Contains("model.safetensors") && Catch::Contains("'bert.encoder.layer.0.output.dense.weight'") &&
                          Catch::Contains(std::isnan(bad) ? "nan" : bad > 0 ? "inf" : "-inf") &&
                          Catch::Contains("element 29"));  // [8, 12] (out, in): row 2, column 5 is 2 * 12 + 5
  }
}

#ifdef ORDO_HAS_CUDA
// Loading onto the GPU: the checkpoint's tensors are on the host, the
// model's parameters on the device. Runs only where a GPU is (`ordo_tests
// --require-gpu "[cuda]"`).
TEST_CASE("cuda: a checkpoint with the tied decoder copies loads onto the device, an untied one is refused",
          "[cuda][checkpoint]") {
  auto source = model::build_model(tiny_config(), Device::cpu(), /*nsp=*/true, 5);
  const nn::NamedTensors values = named_values(*source);
  const Tensor& words = values.front().second;
  REQUIRE(values.front().first == "bert.embeddings.word_embeddings.weight");
  nn::NamedTensors hf = values;
  auto target = model::build_model(tiny_config(), Device::cuda(0), true, 6);

  SECTION("tied copies equal to the originals") {
    hf.emplace_back("cls.predictions.decoder.weight", words);
    hf.emplace_back("cls.predictions.decoder.bias", source->predictions.bias->var.value());
    REQUIRE(load_error(*target, hf) == "");
    require_same_parameters(*source, *target);
  }
  SECTION("an untied copy") {
    hf.emplace_back("cls.predictions.decoder.weight", affine(words, 1.0, 1e-3));
    std::string e = load_error(*target, hf);
    CHECK(contains(e, "cls.predictions.decoder.weight"));
    CHECK(contains(e, "ties"));
  }
}

TEST_CASE("cuda: a saved checkpoint loads onto the device bit for bit", "[cuda][checkpoint]") {
  TempDir dir("ckpt-cuda");
  auto source = model::build_model(tiny_config(), Device::cpu(), /*nsp=*/true, 5);
  nn::save_model(dir.path, *source);
  auto loaded = model::load_model(dir.path, Device::cuda(0), true);
  for (const auto& [name, p] : loaded->named_parameters()) CHECK(p->var.device() == Device::cuda(0));
  require_same_parameters(*source, *loaded);
}
#endif  // ORDO_HAS_CUDA

TEST_CASE("a fine-tuned model loads as its encoder, the task head left out and listed", "[checkpoint]") {
  // What ordo analyze --model reads: an `ordo finetune` best/ folder.
  for (const bool span : {false, true}) {
    INFO((span ? "span head" : "classifier"));
    test::TempDir dir("finetuned");
    const nn::BertConfig config = test::tiny_bert_config(23, 8, 1, 2, 12, 10);
    std::unique_ptr<nn::Module> model;
    nn::BertModel* bert = nullptr;
    auto keep = [&](auto m) {
      nn::initialize_bert(*m, m->bert, 5);
      bert = &m->bert;
      model = std::move(m);
    };
    if (span)
      keep(std::make_unique<nn::SpanExtractor>(config, pe::make_position_encoding(config, Device::cpu()), Device::cpu()));
    else
      keep(std::make_unique<nn::SequenceClassifier>(config, pe::make_position_encoding(config, Device::cpu()),
                                                    Device::cpu(), 3));
    nn::save_weights(dir.path, *model, config,
                     span ? "BertForQuestionAnswering" : "BertForSequenceClassification");
    nn::LoadReport report;
    auto encoder = model::load_model(dir.path, Device::cpu(), &report);
    const std::vector<std::string> head =
        span ? std::vector<std::string>{"qa_outputs.bias", "qa_outputs.weight"}
             : std::vector<std::string>{"classifier.bias", "classifier.weight"};
    std::vector<std::string> unused = report.unused;
    std::sort(unused.begin(), unused.end());
    CHECK(unused == head);
    // Every encoder weight is the fine-tuned model's, bit for bit; the
    // classifier's pooler (read only by its head) is not part of the encoder.
    for (const auto& [name, p] : bert->named_parameters()) {
      INFO(name);
      nn::Parameter* loaded = encoder->bert.find_parameter(name);
      if (name.rfind("pooler.", 0) == 0) {
        CHECK(loaded == nullptr);
        continue;
      }
      REQUIRE(loaded != nullptr);
      CHECK(max(abs(sub(loaded->var.value(), p->var.value()))).item() == 0);
    }
  }
}
