// Every checkpoint kind through every command that reads one: a run
// pretrained with MLM, MLM+NSP or the causal objective is read by `ordo
// forward`, `ordo probe` and `ordo analyze` (given a checkpoint or the run),
// each with the heads the checkpoint holds, and its config.json names the
// HuggingFace class that holds those heads.
#include <cmath>
#include <fstream>

#include "base/file_io.h"
#include "base/json.h"
#include "tensor/safetensors.h"
#include "tests/helpers.h"

using ordo::test::run_ordo;
using ordo::test::TempDir;
namespace json = ordo::json;

namespace {

struct Kind {
  std::string objective, decoder, architecture;
};

// transformers' class names (BertForPreTraining holds the MLM and NSP heads,
// BertForMaskedLM the MLM head, BertLMHeadModel the causal LM head).
const Kind kKinds[] = {{"mlm", "false", "BertForMaskedLM"},
                       {"mlm+nsp", "false", "BertForPreTraining"},
                       {"causal", "true", "BertLMHeadModel"}};

std::string config(const Kind& k) {
  return R"({"model": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,)"
         R"( "max_position_embeddings": 24, "decoder": )" + k.decoder + R"(},)"
         R"( "data": {"synthetic_sentences": 200, "vocab_size": 150, "held_out_fraction": 0.2, "objective": ")" +
         k.objective + R"("},)"
         R"( "train": {"steps": 2, "batch_size": 2, "max_seq_length": 16, "eval_every": 0, "checkpoint_every": 1,)"
         R"( "device": "cpu"}})";
}

void require_success(const std::string& args) {
  ordo::test::CommandResult r = run_ordo(args);
  INFO("ordo " << args << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
}

}  // namespace

TEST_CASE("forward, probe and analyze read MLM, MLM+NSP and causal checkpoints and runs", "[cli][checkpoint_kinds]") {
  for (const Kind& kind : kKinds) {
    INFO("objective " << kind.objective);
    TempDir dir("kinds");
    std::ofstream(dir / "run.json") << config(kind);
    const std::string run = dir / "run", checkpoint = run + "/checkpoints/step_000000002";
    require_success("pretrain --quiet --config " + (dir / "run.json") + " --out " + run);
    json::Value saved = json::parse(ordo::read_file(checkpoint + "/config.json"));
    CHECK(saved["architectures"] == json::parse("[\"" + kind.architecture + "\"]"));

    std::string input = dir.write("in.json", R"({"input_ids": [[2, 7, 9, 3, 11, 3]], "segment_ids": [[0, 0, 0, 0, 1, 1]]})");
    for (const std::string& given : {checkpoint, run}) {
      require_success("forward --checkpoint " + given + " --input " + input + " --out " + (dir / "out.safetensors") +
                      " --overwrite");
      auto out = ordo::test::load_tensors(dir / "out.safetensors");
      CHECK(out.count("logits") == 1);
      CHECK(out.count("nsp_logits") == (kind.objective == "mlm+nsp" ? 1u : 0u));
      require_success("probe --checkpoint " + given + " --out " + (dir / "probe") + " --words 5 --length 6 --overwrite");
    }
    require_success("analyze --quiet --run " + run + " --out " + (dir / "analysis"));
  }
}

TEST_CASE("forward, probe and analyze refuse a checkpoint holding NaN, naming the tensor", "[cli][checkpoint_kinds][errors]") {
  TempDir dir("kinds");
  std::ofstream(dir / "run.json") << config(kKinds[0]);
  const std::string run = dir / "run", checkpoint = run + "/checkpoints/step_000000002";
  require_success("pretrain --quiet --config " + (dir / "run.json") + " --out " + run);
  auto tensors = ordo::safetensors::load(checkpoint + "/model.safetensors");
  for (auto& [name, t] : tensors)
    if (name == "bert.encoder.layer.0.attention.self.key.weight") t.select(0, 1).fill_(NAN);
  ordo::safetensors::save(checkpoint + "/model.safetensors", tensors);
  std::string input = dir.write("in.json", R"({"input_ids": [[2, 7, 9, 3]]})");
  for (const std::string& args : {"forward --checkpoint " + run + " --input " + input + " --out " + (dir / "out.safetensors"),
                                  "probe --checkpoint " + run + " --out " + (dir / "probe") + " --words 5 --length 6",
                                  "analyze --quiet --run " + run + " --out " + (dir / "analysis")}) {
    ordo::test::CommandResult r = run_ordo(args);
    INFO("ordo " << args << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("'bert.encoder.layer.0.attention.self.key.weight' holds nan") != std::string::npos);
  }
}
