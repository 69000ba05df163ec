// `ordo forward`, run as the binary: its outputs against HuggingFace's golden
// values (tests/data/twin, see tests/twin/README.md) and against the same
// model run in this process; properties that hold whatever the weights
// (causality, padding, probabilities summing to 1); and every bad input
// ending in a non-zero exit, a message naming the key and row, and an
// existing output file left as it was.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "base/json.h"
#include "model/model.h"
#include "nn/checkpoint.h"
#include "tensor/device_runtime.h"
#include "tensor/ops.h"
#include "tensor/safetensors.h"
#include "tests/helpers.h"

namespace {

using namespace ordo;
namespace fs = std::filesystem;
using Run = ordo::test::CommandResult;
using ordo::test::load_tensors;
using ordo::test::relative_error;
using ordo::test::run_ordo;
using ordo::test::TempDir;



json::Value matrix_json(const Tensor& t) {
  json::Value rows = json::Value::array();
  std::vector<int64_t> v = t.to_vector<int64_t>();
  for (int64_t r = 0; r < t.size(0); ++r) {
    json::Value row = json::Value::array();
    for (int64_t c = 0; c < t.size(1); ++c) row.push_back(v[r * t.size(1) + c]);
    rows.push_back(row);
  }
  return rows;
}

nn::BertConfig tiny_config(bool decoder) {
  nn::BertConfig c = ordo::test::tiny_bert_config(/*vocab_size=*/31, /*hidden_size=*/12, /*layers=*/2, /*heads=*/3,
                                                  /*intermediate_size=*/20, /*max_position_embeddings=*/16,
                                                  /*dropout=*/true);
  c.decoder = decoder;
  return c;
}

// A checkpoint whose every parameter is drawn from mt19937 (biases and
// LayerNorm parameters included), so nothing is trivially zero or one.
std::unique_ptr<nn::PretrainingModel> write_checkpoint(const std::string& dir, bool decoder) {
  auto model = model::build_model(tiny_config(decoder), Device::cpu(), /*nsp=*/!decoder, 1);
  uint64_t seed = 100;
  for (auto& [name, p] : model->named_parameters()) {
    Tensor values = test::random_tensor(p->var.shape(), seed++, DType::f32, -0.5, 0.5);
    if (name.size() > 16 && name.compare(name.size() - 16, 16, "LayerNorm.weight") == 0)
      values = affine(values, 1.0, 1.0);
    p->var.value().copy_from(values);
  }
  nn::save_model(dir, *model);
  return model;
}

// The batch used against the in-process model: padding, two segments and
// positions that do not start at 0 in row 1.
const char* kBatch = R"({
  "input_ids":      [[2, 7, 9, 11, 3, 13, 3], [2, 5, 6, 3, 0, 0, 0], [2, 30, 29, 28, 27, 3, 0]],
  "segment_ids":    [[0, 0, 0, 0, 0, 1, 1],   [0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1, 0]],
  "positions":      [[0, 1, 2, 3, 4, 5, 6],   [4, 5, 6, 7, 8, 9, 10], [0, 1, 2, 3, 4, 5, 6]],
  "attention_mask": [[1, 1, 1, 1, 1, 1, 1],   [1, 1, 1, 1, 0, 0, 0],  [1, 1, 1, 1, 1, 1, 0]]
})";

// The same computation in two processes of the same build: only thread
// scheduling may differ, so the bound is a few f32 roundings.
constexpr double kSameBuildBound = 1e-6;

void check_against_model(nn::PretrainingModel& model, const std::map<std::string, Tensor>& out, bool nsp,
                         double bound = kSameBuildBound) {
  json::Value batch = json::parse(kBatch);
  auto matrix = [&](const char* key) {
    std::vector<int64_t> v;
    for (const auto& row : batch[key].as_array())
      for (const auto& x : row.as_array()) v.push_back(x.as_int());
    return Tensor::from_vector(v, {3, 7});
  };
  nn::BertInputs in;
  in.input_ids = matrix("input_ids");
  in.segment_ids = matrix("segment_ids");
  in.positions = matrix("positions");
  in.attention_mask = matrix("attention_mask");
  // The inputs come back as given.
  for (const char* key : {"input_ids", "segment_ids", "positions", "attention_mask"}) {
    INFO(key);
    REQUIRE(out.count(key));
    CHECK(test::bit_identical(out.at(key), matrix(key)));
  }
  nn::Context ctx = nn::Context::eval();
  nn::ForwardTrace trace;
  trace.keep_hidden_states = trace.keep_attentions = true;
  Var sequence = model.bert.forward(in, ctx, &trace);
  Var logits = model.predictions.forward(sequence, model.bert.embeddings.word_embeddings.weight.var, ctx);
  for (size_t l = 0; l < trace.hidden_states.size(); ++l) {
    INFO("hidden_states." << l);
    REQUIRE(out.count("hidden_states." + std::to_string(l)));
    CHECK(relative_error(out.at("hidden_states." + std::to_string(l)), trace.hidden_states[l]) <= bound);
  }
  for (size_t l = 0; l < trace.attentions.size(); ++l) {
    INFO("attentions." << l + 1);
    const Tensor& a = out.at("attentions." + std::to_string(l + 1));
    CHECK(a.shape() == Shape{3, 3, 7, 7});  // [batch, heads, L, L]
    CHECK(relative_error(a, trace.attentions[l]) <= bound);
  }
  CHECK(out.count("hidden_states.3") == 0);
  CHECK(out.count("attentions.0") == 0);
  CHECK(out.at("logits").shape() == Shape{3, 7, 31});
  CHECK(relative_error(out.at("logits"), logits.value()) <= bound);
  CHECK(out.count("nsp_logits") == (nsp ? 1u : 0u));
  if (nsp) {
    Tensor nsp_logits = model.seq_relationship->forward(model.bert.pooler->forward(sequence, ctx), ctx).value();
    CHECK(relative_error(out.at("nsp_logits"), nsp_logits) <= bound);
  }
}

}  // namespace

TEST_CASE("ordo forward on HF's checkpoint gives the twin's golden values", "[forward]") {
  // Independent of ordo: the golden batch and HF's outputs from tests/twin.
  const std::string twin = std::string(ORDO_SOURCE_DIR) + "/tests/data/twin";
  auto golden = load_tensors(twin + "/golden_encoder.safetensors");
  TempDir tmp;
  json::Value input = json::Value::object();
  input["input_ids"] = matrix_json(golden.at("input_ids"));
  input["segment_ids"] = matrix_json(golden.at("segment_ids"));
  input["attention_mask"] = matrix_json(golden.at("attention_mask"));
  write_file_atomic(tmp.path + "/in.json", json::dump(input));
  Run r = run_ordo("forward --checkpoint " + twin + "/bert --input " + tmp.path + "/in.json --out " + tmp.path +
                   "/out.safetensors");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto out = load_tensors(tmp.path + "/out.safetensors");
  // The f32 bound of tests/nn/test_bert_golden.cpp (justified there).
  for (const char* name : {"hidden_states.0", "hidden_states.1", "hidden_states.2", "attentions.1", "attentions.2",
                           "logits", "nsp_logits"}) {
    INFO(name);
    REQUIRE(out.count(name));
    REQUIRE(out.at(name).shape() == golden.at(name).shape());
    CHECK(relative_error(out.at(name), golden.at(name)) <= 5e-6);
  }
  // Positions were not given: 0..L-1 in every row, written back.
  std::vector<int64_t> positions = out.at("positions").to_vector<int64_t>();
  for (int64_t i = 0; i < 33; ++i) CHECK(positions[i] == i % 11);
}

TEST_CASE("ordo forward matches the model run in-process, encoder and decoder", "[forward]") {
  for (bool decoder : {false, true}) {
    INFO((decoder ? "decoder" : "encoder"));
    TempDir tmp;
    auto model = write_checkpoint(tmp.path + "/ckpt", decoder);
    write_file_atomic(tmp.path + "/in.json", kBatch);
    Run r = run_ordo("forward --checkpoint " + tmp.path + "/ckpt --input " + tmp.path + "/in.json --out " +
                     tmp.path + "/out.safetensors --device cpu");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("3 x 7 tokens") != std::string::npos);
    auto out = load_tensors(tmp.path + "/out.safetensors");
    check_against_model(*model, out, /*nsp=*/!decoder);

    // Properties of attention whatever the weights: each row sums to 1;
    // padded keys get exactly 0; a decoder never looks ahead.
    std::vector<int64_t> mask = out.at("attention_mask").to_vector<int64_t>();
    for (int layer = 1; layer <= 2; ++layer) {
      std::vector<double> a = out.at("attentions." + std::to_string(layer)).to_doubles();
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t h = 0; h < 3; ++h)
          for (int64_t i = 0; i < 7; ++i) {
            double row = 0;
            for (int64_t j = 0; j < 7; ++j) {
              double p = a[((b * 3 + h) * 7 + i) * 7 + j];
              row += p;
              if (mask[b * 7 + j] == 0) CHECK(p == 0);
              if (decoder && j > i) CHECK(p == 0);
            }
            CHECK(std::fabs(row - 1) < 1e-6);
          }
    }
  }
}

TEST_CASE("ordo forward leaves out the NSP head a checkpoint does not have", "[forward]") {
  TempDir tmp;
  auto model = model::build_model(tiny_config(false), Device::cpu(), /*nsp=*/false, 4);
  nn::save_model(tmp.path + "/ckpt", *model);
  write_file_atomic(tmp.path + "/in.json", R"({"input_ids": [[2, 3, 4]]})");
  Run r = run_ordo("forward --checkpoint " + tmp.path + "/ckpt --input " + tmp.path + "/in.json --out " + tmp.path +
                   "/out.safetensors");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto out = load_tensors(tmp.path + "/out.safetensors");
  CHECK(out.count("nsp_logits") == 0);
  CHECK(out.at("segment_ids").to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0});
  CHECK(out.at("attention_mask").to_vector<int64_t>() == std::vector<int64_t>{1, 1, 1});
}

TEST_CASE("ordo forward refuses bad input with a message naming it, and keeps an existing output", "[forward]") {
  TempDir tmp;
  write_checkpoint(tmp.path + "/ckpt", false);  // vocab 31, type_vocab 2, 16 positions
  const std::string out = tmp.path + "/out.safetensors";
  const std::string previous = "an earlier result that must survive";
  write_file_atomic(out, previous);
  auto run_with = [&](const std::string& json_text, const std::string& extra = "") {
    write_file_atomic(tmp.path + "/in.json", json_text);
    // --overwrite: even with it, bad input leaves the output as it was.
    return run_ordo("forward --checkpoint " + tmp.path + "/ckpt --input " + tmp.path + "/in.json --out " + out +
                    " --overwrite " + extra);
  };
  struct Case {
    const char* what;
    std::string json;
    std::vector<std::string> expected;  // each must appear in the message
  };
  const std::vector<Case> cases = {
      {"ragged rows", R"({"input_ids": [[2, 3, 4], [2, 3]]})", {"\"input_ids\" row 1 has 2 entries", "row 0 has 3"}},
      {"a fraction", R"({"input_ids": [[2, 3.5, 4]]})", {"\"input_ids\" row 0 column 1", "expected an integer", "3.5"}},
      {"a string", R"({"input_ids": [[2, 3], ["4", 5]]})", {"\"input_ids\" row 1 column 0", "expected an integer", "string"}},
      {"a bare number for a row", R"({"input_ids": [[2, 3], 4]})", {"\"input_ids\" row 1", "array of integers"}},
      {"not an array", R"({"input_ids": 7})", {"\"input_ids\"", "array of rows"}},
      {"no rows", R"({"input_ids": []})", {"\"input_ids\"", "empty"}},
      {"an empty row", R"({"input_ids": [[]]})", {"\"input_ids\" row 0 is empty"}},
      {"an id past the vocabulary", R"({"input_ids": [[2, 31]]})", {"\"input_ids\" row 0 column 1", "31", "vocabulary has 31"}},
      {"a negative id", R"({"input_ids": [[2, 3], [-1, 3]]})", {"\"input_ids\" row 1 column 0", "-1"}},
      {"a segment past type_vocab_size", R"({"input_ids": [[2, 3]], "segment_ids": [[0, 2]]})",
       {"\"segment_ids\" row 0 column 1", "type_vocab_size is 2"}},
      {"a position past the table", R"({"input_ids": [[2, 3]], "positions": [[15, 16]]})",
       {"\"positions\" row 0 column 1", "16", "max_position_embeddings"}},
      {"rows longer than the table", R"({"input_ids": [[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]]})",
       {"17 tokens", "max_position_embeddings", "positions"}},
      {"segment rows that disagree", R"({"input_ids": [[2, 3], [2, 3]], "segment_ids": [[0, 0]]})",
       {"\"segment_ids\" has 1 rows, input_ids has 2"}},
      {"positions of another length", R"({"input_ids": [[2, 3]], "positions": [[0, 1, 2]]})",
       {"\"positions\" rows have 3 entries, input_ids rows have 2"}},
      {"a mask value of 2", R"({"input_ids": [[2, 3]], "attention_mask": [[1, 2]]})",
       {"\"attention_mask\" row 0 column 1", "1: a real token, 0: padding"}},
      {"a row with nothing to attend to", R"({"input_ids": [[2, 3], [2, 3]], "attention_mask": [[1, 1], [0, 0]]})",
       {"\"attention_mask\" row 1 is all 0"}},
      {"an unknown key", R"({"input_ids": [[2, 3]], "token_type_ids": [[0, 0]]})", {"unknown key \"token_type_ids\""}},
      {"no input_ids", R"({"segment_ids": [[0, 0]]})", {"no \"input_ids\""}},
      {"malformed JSON", R"({"input_ids": [[2, 3]])", {"in.json", "json"}},
      {"not an object", R"([[2, 3]])", {"in.json", "JSON object"}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    Run r = run_with(c.json);
    INFO(r.output);
    CHECK(r.exit_code != 0);
    for (const std::string& e : c.expected) CHECK(r.output.find(e) != std::string::npos);
    CHECK(r.output.find("in.json") != std::string::npos);  // every input error names the file
    CHECK(read_file(out) == previous);
  }

  SECTION("flags and files") {
    const std::string good = R"({"input_ids": [[2, 3]]})";
    write_file_atomic(tmp.path + "/in.json", good);
    Run r = run_ordo("forward --checkpoint " + tmp.path + "/nowhere --input " + tmp.path + "/in.json --out " + out +
                     " --overwrite");
    CHECK(r.exit_code != 0);
    CHECK(r.output.find(tmp.path + "/nowhere: not a directory") != std::string::npos);  // a checkpoint or a run, as ordo probe reads it
    r = run_ordo("forward --checkpoint " + tmp.path + "/ckpt --input " + tmp.path + "/missing.json --out " + out +
                 " --overwrite");
    CHECK(r.exit_code != 0);
    CHECK(r.output.find("missing.json") != std::string::npos);
    r = run_ordo("forward --checkpoint " + tmp.path + "/ckpt --input " + tmp.path + "/in.json");
    CHECK(r.exit_code != 0);
    CHECK(r.output.find("--out") != std::string::npos);
    r = run_with(good, "--device tpu");
    CHECK(r.exit_code != 0);
    CHECK(r.output.find("--device: unknown device 'tpu'") != std::string::npos);
    if (cuda_device_count() == 0) {
      r = run_with(good, "--device cuda");
      CHECK(r.exit_code != 0);
      CHECK(r.output.find("not available") != std::string::npos);
    }
    CHECK(read_file(out) == previous);
    // A damaged checkpoint is named too.
    std::string weights = read_file(tmp.path + "/ckpt/model.safetensors");
    write_file_atomic(tmp.path + "/ckpt/model.safetensors", weights.substr(0, weights.size() / 2));
    r = run_with(good);
    CHECK(r.exit_code != 0);
    CHECK(r.output.find("model.safetensors") != std::string::npos);
    CHECK(read_file(out) == previous);
    // And the same command with the file restored replaces the old output.
    write_file_atomic(tmp.path + "/ckpt/model.safetensors", weights);
    r = run_with(good);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(load_tensors(out).count("logits") == 1);
  }
}

#ifdef ORDO_HAS_CUDA
// Runs only where a GPU is (`ordo_tests --require-gpu "[cuda]"`).
TEST_CASE("cuda: ordo forward --device cuda matches the model run on the CPU, encoder and decoder",
          "[cuda][forward]") {
  // f32 on two devices: summation orders and exp/tanh/erf ulps differ. Half
  // the training step's bound (tests/train/test_step_cuda.cpp), as this is
  // its forward half: 2^-13 relative to each tensor's largest element.
  const double bound = 0x1p-13;
  for (bool decoder : {false, true}) {
    INFO((decoder ? "decoder" : "encoder"));
    TempDir tmp;
    auto model = write_checkpoint(tmp.path + "/ckpt", decoder);
    write_file_atomic(tmp.path + "/in.json", kBatch);
    const std::string args = "forward --checkpoint " + tmp.path + "/ckpt --input " + tmp.path + "/in.json --out " +
                             tmp.path + "/out.safetensors --device cuda --overwrite";
    Run r = run_ordo(args + " --precision fp32");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("on cuda:0, fp32 products") != std::string::npos);
    check_against_model(*model, load_tensors(tmp.path + "/out.safetensors"), /*nsp=*/!decoder, bound);
    // Without --precision a GPU's products are bf16 (autocast's default).
    if (!decoder) CHECK(run_ordo(args).output.find("on cuda:0, bf16 products") != std::string::npos);
  }
}
#endif  // ORDO_HAS_CUDA
