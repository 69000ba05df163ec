// `ordo pretrain` from the command line: mistakes end in one clear line and a
// non-zero exit, and nothing already on disk is destroyed.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/file_io.h"
#include "base/json.h"
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

namespace {

// Every file under `dir` by its path relative to it, with its bytes (and every
// folder, with no bytes): two equal snapshots mean the tree is byte for byte the same.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    std::string relative = std::filesystem::relative(entry.path(), dir).string();
    files[relative] = entry.is_directory() ? std::string("<folder>") : ordo::read_file(entry.path().string());
  }
  return files;
}

// The names in a folder, sorted (the order a directory lists them in is arbitrary).
std::vector<std::string> sorted_names(const TempDir& dir) {
  std::vector<std::string> names = dir.names();
  std::sort(names.begin(), names.end());
  return names;
}

std::string pretrain_args(const TempDir& dir, const std::string& run, const std::string& extra) {
  return "pretrain --quiet --config " + (dir / "ok.json") + " --out " + run + " " + extra;
}

}  // namespace

TEST_CASE("ordo pretrain --overwrite keeps the old run whole until the new one has done its first step",
          "[pretrain][errors][cli]") {
  TempDir dir("pretrain-cli");
  std::ofstream(dir / "ok.json") << kSmall;
  std::string run = dir / "run";
  REQUIRE(run_ordo(pretrain_args(dir, run, "")).exit_code == 0);
  // What a finished study leaves beside the run: its probes and analyses.
  std::filesystem::create_directories(run + "/probe");
  std::filesystem::create_directories(run + "/analysis");
  std::ofstream(run + "/probe/indicators.json") << "{}";
  std::ofstream(run + "/analysis/notes.txt") << "old";
  const auto before = snapshot(run);
  const auto neighbours = sorted_names(dir);
  // A failure at each stage: the config, the corpus, the vocabulary, the model against the vocabulary.
  const std::pair<std::string, std::string> failures[] = {
      {"--set model.pe=rope_typo", "unknown position encoding"},
      {"--set model.pe_options.clip=4", "unknown key 'clip'"},
      {"--set data.corpus=" + (dir / "no_corpus.txt"), "no_corpus.txt"},
      {"--set data.vocab=" + (dir / "no_vocab.txt"), "no_vocab.txt"},
      {"--set model.vocab_size=7", "differs from the vocabulary's"},
  };
  for (const auto& [set, message] : failures) {
    ordo::test::CommandResult r = run_ordo(pretrain_args(dir, run, "--overwrite " + set));
    INFO(set << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find(message) != std::string::npos);
    CHECK(snapshot(run) == before);
    CHECK(sorted_names(dir) == neighbours);  // no half-built run left beside it
  }
  // A run that starts replaces the old one whole: no stale probe/ or analysis/.
  REQUIRE(run_ordo(pretrain_args(dir, run, "--overwrite")).exit_code == 0);
  CHECK(ordo::file_exists(run + "/checkpoints/step_000000002/model.safetensors"));
  CHECK_FALSE(std::filesystem::exists(run + "/probe"));
  CHECK_FALSE(std::filesystem::exists(run + "/analysis"));
  CHECK(sorted_names(dir) == neighbours);
}

TEST_CASE("ordo pretrain checks the whole run before its first write", "[pretrain][errors][cli]") {
  TempDir dir("pretrain-cli");
  std::ofstream(dir / "ok.json") << kSmall;
  std::ofstream(dir / "no_mask_vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\nof\n";
  std::string five_tokens = dir.write("five_tokens.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n");
  std::string run = dir / "deeper/run";
  const auto neighbours = sorted_names(dir);
  // Each is refused before the corpus is generated or the vocabulary trained.
  const std::pair<std::string, std::string> refusals[] = {
      {"--set model.pe=rope_typo", "unknown position encoding"},
      {"--set model.pe_options.clip=4", "unknown key 'clip'"},
      {"--set model.pe=abs_scalar --set model.pe_options.rank=0", "rank"},
      {"--set model.pe=tupe --set train.max_seq_length=64", "max_position_embeddings"},
      {"--set train.device=cuda:7", "not available"},
      {"--set train.precision=fp16", "train.precision: unknown precision 'fp16' (auto, fp32, tf32 or bf16)"},
      {"--set data.corpus=" + (dir / "no_corpus.txt"), "no_corpus.txt"},
      {"--set data.vocab=" + (dir / "no_mask_vocab.txt"), "[MASK]"},
      {"--set data.vocab=" + five_tokens + " --set model.vocab_size=7", "differs from the vocabulary's"},
  };
  for (const auto& [set, message] : refusals) {
    ordo::test::CommandResult r = run_ordo("pretrain --config " + (dir / "ok.json") + " --out " + run + " " + set);
    INFO(set << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find(message) != std::string::npos);
    CHECK(r.output.find("generating") == std::string::npos);
    CHECK(sorted_names(dir) == neighbours);  // not even the folders above the run
  }
  // The same --out then works without --overwrite.
  CHECK(run_ordo(pretrain_args(dir, run, "")).exit_code == 0);
}

TEST_CASE("ordo pretrain ends with one line: where it stands, its checkpoint, held-out metrics, wall time", "[pretrain][cli]") {
  TempDir dir("pretrain-cli");
  std::ofstream(dir / "ok.json") << kSmall;
  std::string run = dir / "run";
  // --quiet too: the last line is what a sweep's log keeps.
  ordo::test::CommandResult r =
      run_ordo("pretrain --quiet --config " + (dir / "ok.json") + " --out " + run + " --set train.eval_every=2");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("complete at step 2 of 2; checkpoint " + run + "/checkpoints/step_000000002; held-out loss ") !=
        std::string::npos);
  CHECK(r.output.find("wall time ") != std::string::npos);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
}

TEST_CASE("ordo pretrain --resume: a finished run says so and is untouched, --set train.steps=N trains it on",
          "[pretrain][cli]") {
  TempDir dir("pretrain-cli");
  std::ofstream(dir / "ok.json") << kSmall;
  std::string run = dir / "run";
  REQUIRE(run_ordo("pretrain --quiet --config " + (dir / "ok.json") + " --out " + run).exit_code == 0);
  const std::string metrics = ordo::read_file(run + "/metrics.jsonl"), config = ordo::read_file(run + "/config.json");

  ordo::test::CommandResult done = run_ordo("pretrain --resume " + run);
  INFO(done.output);
  CHECK(done.exit_code == 0);
  CHECK(done.output.find("is complete (step 2 of 2); nothing to do") != std::string::npos);
  CHECK(ordo::read_file(run + "/metrics.jsonl") == metrics);
  CHECK(ordo::read_file(run + "/config.json") == config);

  // Only train.steps may be set, and only beyond the steps done; refused, nothing changes.
  for (const char* set : {"train.steps=2", "train.steps=1", "train.lr=1", "train.steps=x"}) {
    ordo::test::CommandResult bad = run_ordo("pretrain --resume " + run + " --set " + set);
    INFO(set << "\n" << bad.output);
    CHECK(bad.exit_code == 1);
    CHECK(ordo::read_file(run + "/config.json") == config);
    CHECK(ordo::read_file(run + "/metrics.jsonl") == metrics);
  }

  ordo::test::CommandResult more = run_ordo("pretrain --quiet --resume " + run + " --set train.steps=4");
  INFO(more.output);
  CHECK(more.exit_code == 0);
  CHECK(more.output.find("complete at step 4 of 4") != std::string::npos);
  CHECK(ordo::file_exists(run + "/checkpoints/step_000000004/trainer_state.json"));
  CHECK(ordo::json::parse(ordo::read_file(run + "/config.json"))["train"]["steps"].as_int() == 4);
}

namespace {

// A long run in the background of the test's shell; once its first step is
// logged (the run has taken its folder), `signal` (INT as a terminal's
// Ctrl-C, or TERM). A process killed by the signal also shows status 130 in
// a shell: the summary line and the checkpoint tell that it stopped by itself.
ordo::test::CommandResult interrupt_pretrain(const TempDir& dir, const std::string& run, const std::string& signal) {
  std::ofstream(dir / "ok.json") << kSmall;
  return run_ordo("pretrain --quiet --config " + (dir / "ok.json") + " --out " + run +
                  " --set train.steps=1000000 --set train.log_every=1 2>&1 & pid=$!; "
                  "for i in $(seq 1200); do grep -q '\"step\"' " + run +
                  "/metrics.jsonl 2>/dev/null && break; sleep 0.05; done; "
                  "kill -" + signal + " $pid; wait $pid; echo \"exit status $?\"");
}

}  // namespace

TEST_CASE("SIGTERM stops ordo pretrain after a checkpoint and the summary names SIGTERM, not Ctrl-C",
          "[pretrain][cli]") {
  TempDir dir("pretrain-cli");
  std::string run = dir / "run";
  ordo::test::CommandResult r = interrupt_pretrain(dir, run, "TERM");
  INFO(r.output);
  CHECK(r.output.find("exit status 130") != std::string::npos);
  CHECK(r.output.find("interrupted by SIGTERM at step ") != std::string::npos);
  CHECK(r.output.find("Ctrl-C") == std::string::npos);
}

TEST_CASE("Ctrl-C stops ordo pretrain after a checkpoint and exits 130", "[pretrain][cli]") {
  TempDir dir("pretrain-cli");
  std::string run = dir / "run";
  ordo::test::CommandResult r = interrupt_pretrain(dir, run, "INT");
  INFO(r.output);
  CHECK(r.output.find("exit status 130") != std::string::npos);
  CHECK(r.output.find("interrupted by Ctrl-C (SIGINT) at step ") != std::string::npos);
  CHECK(r.output.find("continue with --resume " + run) != std::string::npos);
  // Its checkpoint is complete: the run resumes from it.
  const std::string last = run + "/checkpoints";
  bool complete_checkpoint = false;
  for (const auto& e : std::filesystem::directory_iterator(last))
    complete_checkpoint |= std::filesystem::exists(e.path() / "trainer_state.json");
  CHECK(complete_checkpoint);
}

TEST_CASE("a corpus too small for its split or its vocabulary is a warning saying so", "[pretrain][cli]") {
  TempDir dir("pretrain-cli");
  std::ofstream(dir / "ok.json") << kSmall;
  // 12 sentences: 2 or 3 documents, none left for 5% held out; a vocabulary
  // of 5000 asked of ~100 distinct words.
  ordo::test::CommandResult small =
      run_ordo("pretrain --quiet --config " + (dir / "ok.json") + " --out " + (dir / "small") +
               " --set data.synthetic_sentences=12 --set data.vocab_size=5000 --set data.held_out_fraction=0.05");
  INFO(small.output);
  CHECK(small.exit_code == 0);
  CHECK(small.output.find("warning: the held-out split has no document") != std::string::npos);
  CHECK(small.output.find("under half of the 5000 asked (data.vocab_size)") != std::string::npos);
  // The default-sized small run warns of neither.
  ordo::test::CommandResult fine = run_ordo("pretrain --quiet --config " + (dir / "ok.json") + " --out " + (dir / "fine"));
  INFO(fine.output);
  CHECK(fine.exit_code == 0);
  CHECK(fine.output.find("warning") == std::string::npos);
}
