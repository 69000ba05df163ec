// `ordo pretrain` from the command line: mistakes end in one clear line and a
// non-zero exit, and nothing already on disk is destroyed.
#include <fstream>

#include "base/file_io.h"
#include "tests/helpers.h"

using ordo::test::run_ordo;
using ordo::test::TempDir;

namespace {
const char* kSmall =
    R"({"model": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,)"
    R"( "max_position_embeddings": 32},)"
    R"( "data": {"synthetic_sentences": 200, "vocab_size": 150},)"
    R"( "train": {"steps": 2, "batch_size": 2, "max_seq_length": 16, "eval_every": 0, "device": "cpu"}})";
}

TEST_CASE("ordo pretrain refuses bad configs and flags with a message and exit 1", "[pretrain][errors][cli]") {
  TempDir dir("pretrain-cli");
  std::ofstream(dir / "ok.json") << kSmall;
  std::ofstream(dir / "broken.json") << "{\"model\": {\"hidden_size\": 16,}}";
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {"--config " + (dir / "broken.json") + " --out " + (dir / "r1"), "line 1, column"},
      {"--config " + (dir / "missing.json") + " --out " + (dir / "r1"), "No such file"},
      {"--config " + (dir / "ok.json") + " --out " + (dir / "r1") + " --set model.num_attention_heads=3",
       "does not divide hidden_size"},
      {"--config " + (dir / "ok.json") + " --out " + (dir / "r1") + " --set model.pe=rope_typo", "unknown position encoding"},
      {"--config " + (dir / "ok.json") + " --out " + (dir / "r1") + " --set model.hidden_act=swish", "hidden_act"},
      {"--config " + (dir / "ok.json") + " --out " + (dir / "r1") + " --set train.max_seq_length=64",
       "beyond max_position_embeddings 32"},
      {"--config " + (dir / "ok.json"), "missing required flag --out"},
      {"--config " + (dir / "ok.json") + " --out " + (dir / "r1") + " --epochs 3", "unknown flag --epochs"},
      {"--resume " + (dir / "nowhere"), "is not a directory"},
  };
  for (const Case& c : cases) {
    ordo::test::CommandResult r = run_ordo("pretrain " + c.args);
    INFO("ordo pretrain " << c.args << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find(c.message) != std::string::npos);
  }
}

TEST_CASE("ordo pretrain will not write over a run unless asked", "[pretrain][errors][cli]") {
  TempDir dir("pretrain-cli");
  std::ofstream(dir / "ok.json") << kSmall;
  std::string run = dir / "run";
  REQUIRE(run_ordo("pretrain --quiet --config " + (dir / "ok.json") + " --out " + run).exit_code == 0);
  std::string metrics = ordo::read_file(run + "/metrics.jsonl");
  ordo::test::CommandResult again = run_ordo("pretrain --quiet --config " + (dir / "ok.json") + " --out " + run);
  CHECK(again.exit_code == 1);
  CHECK(again.output.find("already holds a run") != std::string::npos);
  CHECK(ordo::read_file(run + "/metrics.jsonl") == metrics);
  CHECK(run_ordo("pretrain --quiet --config " + (dir / "ok.json") + " --out " + run + " --overwrite").exit_code == 0);
}
