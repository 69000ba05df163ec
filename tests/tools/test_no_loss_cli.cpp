// Nothing a user has is lost, and nothing interrupted reports a figure it
// does not have: the commands added for fine-tuning and experiments, driven
// through the ordo binary as a user would, each case ending in a refusal that
// names the conflict with the disk exactly as it was, or in work kept.
#include <filesystem>
#include <fstream>

#include "base/file_io.h"
#include "base/json.h"
#include "tests/helpers.h"
#include "tests/tools/disk_state.h"
#include "tests/tools/two_step_run.h"

using ordo::test::CommandResult;
using ordo::test::run_command;
using ordo::test::run_ordo;
using ordo::test::snapshot;
using ordo::test::TempDir;
using Catch::Matchers::Contains;
namespace json = ordo::json;
namespace fs = std::filesystem;

namespace {

// A pretrained run and its synthetic tasks, made once for the file.
struct Fixture {
  TempDir dir{"no-loss"};
  std::string config = dir / "run.json", run = dir / "run", tasks = dir / "tasks";
  Fixture() {
    std::ofstream(config) << ordo::test::kTwoStepRunConfig;
    REQUIRE(run_ordo("pretrain --quiet --config " + config + " --out " + run).exit_code == 0);
    REQUIRE(run_ordo("data tasks --from " + run + " --out " + tasks).exit_code == 0);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

const std::string kFast = " --quiet --set train.batch_size=8 --set train.max_seq_length=48 --set train.device=cpu"
                          " --set train.threads=1 --set train.log_every=1 ";

std::string finetune_roles(const std::string& out, const std::string& extra) {
  const Fixture& f = fixture();
  return "finetune" + kFast + "--checkpoint " + f.run + " --task rte --data " + f.tasks + "/roles --out " + out + " " +
         extra;
}

// A command started in the background; `wait_for` (a file that appears once it
// is under way) is polled, then the process gets `signal`. Its output and
// "exit status N" come back.
CommandResult run_and_signal(const std::string& ordo_args, const std::string& wait_for, const std::string& signal) {
  return run_ordo(ordo_args + " 2>&1 & pid=$!; for i in $(seq 1200); do [ -s " + wait_for +
                  " ] && break; sleep 0.05; done; kill -" + signal + " $pid; wait $pid; echo \"exit status $?\"");
}

}  // namespace

TEST_CASE("data tasks: an --out that is or holds what it reads is refused, even with --overwrite",
          "[cli][tasks][errors]") {
  const Fixture& f = fixture();
  const auto before = snapshot(f.dir.path);
  const std::string data = f.run + "/data";
  for (const std::string& args : {"--from " + f.run + " --out " + f.run, "--from " + f.run + " --out " + data,
                                  "--from " + data + " --out " + f.run}) {
    const CommandResult r = run_ordo("data tasks " + args + " --overwrite");
    INFO("ordo data tasks " << args << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains("--from '" + data + "/annotations.jsonl', which this command reads"));
  }
  CHECK(snapshot(f.dir.path) == before);
}

TEST_CASE("pretrain and finetune: a --config in --out, or a file it extends, is not deleted by --overwrite",
          "[cli][errors]") {
  TempDir scratch("no-loss-config");
  const std::string out = scratch / "out";
  ordo::make_directories(out);
  const std::string base = scratch.write("out/base.json", ordo::test::kTwoStepRunConfig);
  const std::string own = scratch.write("out/own.json", R"({"extends": "base.json"})");
  const std::string outside = scratch.write("outside.json", R"({"extends": "out/base.json"})");
  const std::string ft = scratch.write("out/ft.json", R"({"train": {"epochs": 1}})");
  const auto before = snapshot(scratch.path);
  struct Case {
    std::string args, message;
  } cases[] = {
      {"pretrain --quiet --config " + own + " --out " + out + " --overwrite", "holds --config '" + own + "'"},
      {"pretrain --quiet --config " + outside + " --out " + out + " --overwrite",
       "holds the \"extends\" of " + outside + " '"},
      {finetune_roles(out, "--config " + ft + " --overwrite"), "holds --config '" + ft + "'"},
  };
  for (const Case& c : cases) {
    const CommandResult r = run_ordo(c.args);
    INFO("ordo " << c.args << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains(c.message) && Contains("name another output"));
  }
  CHECK(snapshot(scratch.path) == before);
}

TEST_CASE("finetune: distinct learning rates never share a run folder, --lr is checked as a flag",
          "[cli][finetune][errors]") {
  TempDir scratch("no-loss-lr");
  const std::string config = scratch.write("lr.json", R"({"train": {"lr": 3e-5, "epochs": 1}})");
  // Values that %g printed alike ("0.0001") get folders of their own, both kept.
  const std::string out = scratch / "grid";
  CommandResult r = run_ordo(finetune_roles(out, "--config " + config + " --lr 1e-4,1.00000001e-4"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(ordo::file_exists(out + "/runs/lr_0.0001_seed_42/best/model.safetensors"));
  CHECK(ordo::file_exists(out + "/runs/lr_0.000100000001_seed_42/best/model.safetensors"));
  const json::Value results = json::parse_file(out + "/results.json");
  REQUIRE(results["learning_rates"].size() == 2);
  CHECK(results["learning_rates"][1]["runs"][0]["run"].as_string() == "lr_0.000100000001_seed_42");
  const auto before = snapshot(scratch.path);
  struct Case {
    std::string lr, message;
  } cases[] = {
      {"1e-4,1e-4", "flag --lr lists 1e-4 twice"},
      {"1e-4,0.0001", "flag --lr lists 0.0001 twice"},
      {"inf", "flag --lr expects numbers separated by commas, got 'inf'"},
      {"3e-5,", "flag --lr expects numbers separated by commas, got ''"},
      {"-1", "flag --lr takes numbers between"},
  };
  for (const Case& c : cases) {
    r = run_ordo(finetune_roles(scratch / "other", "--lr " + c.lr));
    INFO("--lr " << c.lr << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains(c.message));
  }
  // The same repeat inside a config is the config's error.
  const std::string twice = scratch.write("twice.json", R"({"train": {"learning_rates": [1e-4, 1e-4]}})");
  r = run_ordo(finetune_roles(scratch / "other", "--config " + twice));
  CHECK_THAT(r.output, Contains("learning_rates lists 0.0001 twice"));
  CHECK(snapshot(scratch.path).size() == before.size() + 1);  // twice.json, nothing else
}

TEST_CASE("pretrain --resume: a checkpoint whose trainer state disagrees with where it is is refused, untouched",
          "[cli][pretrain][errors]") {
  const Fixture& f = fixture();
  TempDir scratch("no-loss-resume");
  const std::string run = scratch / "run";
  REQUIRE(run_ordo("pretrain --quiet --config " + f.config + " --out " + run +
                   " --set train.steps=6 --set train.log_every=1 --stop-after 3")
              .exit_code == 0);
  const std::string checkpoint = run + "/checkpoints/step_000000003";
  const std::string state_path = checkpoint + "/trainer_state.json";
  REQUIRE(ordo::file_exists(state_path));
  const std::string state = ordo::read_file(state_path), weights = ordo::read_file(checkpoint + "/model.safetensors");

  SECTION("a trainer state of another step") {
    json::Value lying = json::parse(state);
    lying["step"] = 2;
    ordo::write_file_atomic(state_path, json::dump(lying, 2));
    const auto before = snapshot(run);
    const CommandResult r = run_ordo("pretrain --quiet --resume " + run);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains(state_path + " says step 2 but lies in the checkpoint of step 3"));
    CHECK(snapshot(run) == before);
  }
  SECTION("weights changed after the save") {
    std::string changed = weights;
    changed.back() ^= 0x40;
    ordo::write_file_atomic(checkpoint + "/model.safetensors", changed);
    const auto before = snapshot(run);
    const CommandResult r = run_ordo("pretrain --quiet --resume " + run);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains(checkpoint + "/model.safetensors is not the file this checkpoint saved"));
    CHECK(snapshot(run) == before);
  }
  SECTION("the recorded digests are sha256sum's") {
    const json::Value recorded = json::parse(state)["sha256"];
    const CommandResult sum = run_command("sha256sum " + checkpoint + "/model.safetensors");
    CHECK(sum.output.substr(0, 64) == recorded["model.safetensors"].as_string());
  }
}

TEST_CASE("finetune: a grid stopped before any run finished reports no figure, not a zero", "[cli][finetune]") {
  TempDir scratch("no-loss-stop");
  const std::string out = scratch / "grid";
  const CommandResult r = run_and_signal(finetune_roles(out, "--set train.epochs=1000 --seeds 2"),
                                         out + "/runs/lr_3e-05_seed_42/metrics.jsonl", "TERM");
  INFO(r.output);
  CHECK_THAT(r.output, Contains("exit status 130"));
  CHECK_THAT(r.output, Contains("rte lr 3e-05: no run finished, no mean of the dev metrics"));
  CHECK_THAT(r.output, Contains("stopped by SIGTERM"));
  const json::Value results = json::parse_file(out + "/results.json");
  const json::Value& score = results["learning_rates"][0]["summary"]["score"];
  CHECK(score["runs"].as_int() == 0);
  CHECK(score["mean"].is_null());
  CHECK(score["std"].is_null());
  CHECK(results["learning_rates"][0]["runs"][0]["best_score"].is_null());
  CHECK(!results.contains("best_lr"));
}

TEST_CASE("finetune: a grid killed mid-run keeps the runs it finished, and the same command continues it",
          "[cli][finetune]") {
  TempDir scratch("no-loss-continue");
  const std::string out = scratch / "grid";
  const std::string args = finetune_roles(out, "--set train.epochs=8 --seeds 2");
  const CommandResult killed = run_and_signal(args, out + "/runs/lr_3e-05_seed_43/metrics.jsonl", "KILL");
  INFO(killed.output);
  REQUIRE_THAT(killed.output, Contains("exit status 137"));
  // Seed 42 finished before the kill: results.json already holds it.
  json::Value results = json::parse_file(out + "/results.json");
  REQUIRE(results["learning_rates"][0]["runs"].size() == 1);
  CHECK(results["learning_rates"][0]["runs"][0]["finished"].as_bool());
  const json::Value first = results["learning_rates"][0]["runs"][0];
  const auto finished = snapshot(out + "/runs/lr_3e-05_seed_42");

  // Rerun as it was: seed 42 kept untouched, seed 43 made again from its start.
  const CommandResult again = run_ordo(args);
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.output, Contains("continuing the grid in " + out + ": 1 of 2 run(s) finished before"));
  CHECK_THAT(again.output, Contains("rte lr 3e-05: mean of the dev metrics") && Contains("over 2 run(s)"));
  CHECK(snapshot(out + "/runs/lr_3e-05_seed_42") == finished);
  results = json::parse_file(out + "/results.json");
  REQUIRE(results["learning_rates"][0]["runs"].size() == 2);
  CHECK(results["learning_rates"][0]["runs"][0] == first);
  CHECK(results["learning_rates"][0]["runs"][1]["finished"].as_bool());
  CHECK(results["learning_rates"][0]["summary"]["score"]["runs"].as_int() == 2);
  // A finished grid is left as it is; another config there needs --overwrite.
  const auto done = snapshot(out);
  CHECK(run_ordo(args).exit_code == 0);
  CHECK(snapshot(out) == done);
  const CommandResult other = run_ordo(finetune_roles(out, "--set train.epochs=3 --seeds 2"));
  CHECK(other.exit_code == 1);
  CHECK_THAT(other.output, Contains("holds a fine-tuning of another config") && Contains("differs at 'train.epochs'"));
  CHECK(snapshot(out) == done);
}

TEST_CASE("a second ordo process on an --out being written is refused, a dead process's lock is taken over",
          "[cli][errors]") {
  const Fixture& f = fixture();
  TempDir scratch("no-loss-lock");
  const std::string run = scratch / "run";
  // While a long run trains, a second pretrain on its folder (even with --overwrite) is refused by name.
  const std::string second = "pretrain --quiet --config " + f.config + " --out " + run + " --overwrite";
  const CommandResult r = run_ordo(
      "pretrain --quiet --config " + f.config + " --out " + run +
      " --set train.steps=1000000 --set train.log_every=1 2>&1 & pid=$!; for i in $(seq 1200); do [ -s " + run +
      "/metrics.jsonl ] && break; sleep 0.05; done; " + ORDO_BINARY + " " + second + " 2>&1; echo \"second exit $?\"; "
      "echo \"first pid $pid\"; kill -INT $pid; wait $pid");
  INFO(r.output);
  CHECK_THAT(r.output, Contains("second exit 1"));
  const size_t at = r.output.find("first pid ");
  REQUIRE(at != std::string::npos);
  const std::string pid = r.output.substr(at + 10, r.output.find('\n', at) - at - 10);
  CHECK_THAT(r.output, Contains("'" + run + "' is being written by another ordo process: pid " + pid + " on host"));
  const std::string lock = scratch / ".run.ordo-lock";
  CHECK(!ordo::file_exists(lock));  // released by the run that held it

  // A lock file whose owner ended without removing it (SIGKILL) is taken over, and said.
  ordo::write_file_atomic(lock, "ordo output lock\npid=999999999\nhost=elsewhere\ncommand=ordo pretrain\nsince=then\n");
  const CommandResult resumed = run_ordo("pretrain --quiet --resume " + run + " --stop-after 1");
  INFO(resumed.output);
  CHECK(resumed.exit_code == 0);
  CHECK_THAT(resumed.output, Contains("took over " + lock + ", left by pid 999999999 on host elsewhere"));
  CHECK(!ordo::file_exists(lock));
}

TEST_CASE("experiment: every config's probe settings are checked before the first run trains", "[cli][errors]") {
  TempDir scratch("no-loss-experiment");
  ordo::make_directories(scratch / "configs");
  scratch.write("configs/a.json", ordo::test::kTwoStepRunConfig);
  scratch.write("configs/b.json", ordo::test::kTwoStepRunConfig);
  const CommandResult r =
      run_ordo("experiment " + (scratch / "configs") + " --out " + (scratch / "out") + " --probe-layer 7");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("configs/a.json: flag --layer 7 is outside 1..1"));
  CHECK(!fs::exists(scratch / "out"));  // no plan recorded, nothing trained
}

TEST_CASE("a file that is not valid JSON is named in the error", "[cli][errors]") {
  const Fixture& f = fixture();
  TempDir scratch("no-loss-json");
  // A SQuAD training file cut short.
  ordo::make_directories(scratch / "squad");
  const std::string dev = ordo::read_file(f.tasks + "/squad/dev-v1.1.json");
  scratch.write("squad/train-v1.1.json", dev.substr(0, dev.size() / 2));
  scratch.write("squad/dev-v1.1.json", dev);
  CommandResult r = run_ordo("finetune" + kFast + "--checkpoint " + f.run + " --task squad --data " +
                             (scratch / "squad") + " --out " + (scratch / "out"));
  CHECK_THAT(r.output, Contains(scratch / "squad/train-v1.1.json: json: line"));
  // ordo score's predictions and no-answer odds.
  const std::string bad = scratch.write("bad.json", "{\"a\": \"x\",");
  r = run_ordo("score --task squad --data " + f.tasks + "/squad/dev-v1.1.json --predictions " + bad);
  CHECK_THAT(r.output, Contains(bad + ": json: line"));
  const std::string empty = scratch.write("empty.json", "{}");
  r = run_ordo("score --task squad2 --data " + f.tasks + "/squad2/dev-v2.0.json --predictions " + empty +
               " --na-probs " + bad);
  CHECK_THAT(r.output, Contains(bad + ": json: line"));
  // A run's trainer state.
  TempDir runs("no-loss-json-run");
  const std::string run = runs / "run";
  REQUIRE(run_ordo("pretrain --quiet --config " + f.config + " --out " + run + " --stop-after 1").exit_code == 0);
  const std::string state = run + "/checkpoints/step_000000001/trainer_state.json";
  ordo::write_file_atomic(state, "{\"step\": 1,");
  r = run_ordo("pretrain --quiet --resume " + run);
  CHECK_THAT(r.output, Contains(state + ": json: line"));
  // An experiment's plan.
  ordo::make_directories(scratch / "configs");
  scratch.write("configs/a.json", ordo::test::kTwoStepRunConfig);
  ordo::make_directories(scratch / "exp");
  scratch.write("exp/experiment.json", "{\"configs\": ");
  r = run_ordo("experiment " + (scratch / "configs") + " --out " + (scratch / "exp"));
  CHECK_THAT(r.output, Contains(scratch / "exp/experiment.json: json: line"));
}

TEST_CASE("finetune: a head trained for another label count is named, and --new-head replaces it",
          "[cli][finetune][errors]") {
  const Fixture& f = fixture();
  TempDir scratch("no-loss-head");
  // roles is RTE (2 labels); sentence_length is SentEval's (6 classes).
  REQUIRE(run_ordo(finetune_roles(scratch / "rte", "--set train.epochs=1")).exit_code == 0);
  const std::string best = scratch / "rte/runs/lr_3e-05_seed_42/best";
  // Not --quiet: what the checkpoint lacks is said.
  const std::string base = "finetune --set train.epochs=1 --set train.batch_size=8 --set train.max_seq_length=48 "
                           "--set train.threads=1 --set train.device=cpu --checkpoint " + best +
                           " --task senteval --data " + f.tasks + "/sentence_length --out ";
  CommandResult r = run_ordo(base + (scratch / "refused"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("holds a classifier trained for 2 label(s)") && Contains("and this task has ") &&
                           Contains("give --new-head"));
  CHECK(!fs::exists(scratch / "refused"));
  r = run_ordo(base + (scratch / "new") + " --new-head");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("new (not in the checkpoint, initialised): classifier.weight"));
}

TEST_CASE("finetune: a SQuAD folder with two training files is refused rather than one picked", "[cli][errors]") {
  const Fixture& f = fixture();
  TempDir scratch("no-loss-squad");
  ordo::make_directories(scratch / "squad");
  const std::string dev = ordo::read_file(f.tasks + "/squad/dev-v1.1.json");
  for (const char* name : {"train-v1.1.json", "train.json", "dev-v1.1.json"}) scratch.write(std::string("squad/") + name, dev);
  const CommandResult r = run_ordo("finetune" + kFast + "--checkpoint " + f.run + " --task squad --data " +
                                   (scratch / "squad") + " --out " + (scratch / "out"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("holds both train-v1.1.json and train.json"));
}

TEST_CASE("the usage line follows mistakes in the command line only", "[cli][errors]") {
  const Fixture& f = fixture();
  CommandResult r = run_ordo("finetune --checkpoint " + f.run + " --task rte --data /nowhere --out /tmp/x");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("/nowhere: not a directory"));
  CHECK(r.output.find("usage:") == std::string::npos);
  r = run_ordo("finetune --checkpoint " + f.run + " --task rte --datta x");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("unknown flag --datta") && Contains("usage: ordo finetune"));
}
