// Nothing outside what a command is told to write is touched (base/output.h),
// checked through the ordo binary as an adversarial user would try it: an
// --out whose '..' climbs out of a folder that does not exist yet, names in
// an experiment's plan that are paths, the plan's own folder as --out, user
// files where ordo keeps its bookkeeping (locks, staging and worker folders),
// a lock that is a symbolic link, a checkpoint's trainer state edited, shards
// started together, and a corpus stopped by Ctrl-C. Each data-loss case
// snapshots the scratch folder before and after.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "base/file_io.h"
#include "base/json.h"
#include "tests/helpers.h"
#include "tests/tools/disk_state.h"
#include "tests/tools/two_step_run.h"

using Catch::Contains;
namespace fs = std::filesystem;

namespace {

const std::string kPathsFinetune = " --quiet --set train.epochs=1 --set train.batch_size=8 --set train.max_seq_length=48 "
                              "--set train.threads=1 --set train.device=cpu --set train.max_train_examples=40 ";

// A pretrained run, its synthetic tasks and an input batch, made once for the file (read only).
struct PathsFixture {
  ordo::test::TempDir dir{"output-paths"};
  std::string config = dir / "run.json", run = dir / "run", tasks = dir / "tasks", batch;
  PathsFixture() {
    std::ofstream(config) << ordo::test::kTwoStepRunConfig;
    batch = dir.write("in.json", R"({"input_ids": [[2, 7, 9, 3]]})");
    ordo::test::CommandResult r = ordo::test::run_ordo("pretrain --quiet --config " + config + " --out " + run);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    r = ordo::test::run_ordo("data tasks --from " + run + " --out " + tasks);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
};

const PathsFixture& paths_fixture() {
  static PathsFixture f;
  return f;
}

std::string paths_finetune_into(const std::string& out) {
  const PathsFixture& f = paths_fixture();
  return "finetune" + kPathsFinetune + "--checkpoint " + f.run + " --task rte --data " + f.tasks + "/roles --out " + out;
}

// `name`.json in `folder`: the fixture's run config.
void write_paths_config(const std::string& folder, const std::string& name) {
  fs::create_directories(folder);
  ordo::write_file_atomic(folder + "/" + name + ".json", ordo::test::kTwoStepRunConfig);
}

// The names in `dir` (hidden ones included).
std::vector<std::string> names_in_folder(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("an --out whose '..' follows a missing folder is refused by every command, and the folder it names is kept",
          "[cli][output_policy][paths]") {
  const PathsFixture& f = paths_fixture();
  ordo::test::TempDir scratch("paths-dotdot");
  fs::create_directories(scratch / "x/keep");
  scratch.write("x/keep/thesis.txt", "four years of work");
  const std::string folder = scratch / "x/nope/../keep", file = scratch / "x/nope/../keep/thesis.txt";
  write_paths_config(scratch / "plan", "a");
  const std::vector<std::string> commands = {
      "pretrain --quiet --config " + f.config + " --out " + folder,
      "probe --checkpoint " + f.run + " --words 5 --length 6 --out " + folder,
      "analyze --quiet --run " + f.run + " --eval-sequences 2 --out " + folder,
      "report " + f.run + " --out " + folder,
      "data synth --sentences 20 --out " + folder,
      "data tasks --from " + f.run + " --out " + folder,
      paths_finetune_into(folder),
      "experiment " + (scratch / "plan") + " --quiet --out " + folder,
      "forward --checkpoint " + f.run + " --input " + f.batch + " --out " + file,
      "vocab train --corpus " + f.run + "/data/corpus.txt --size 100 --out " + file,
  };
  const auto before = ordo::test::snapshot(scratch.path);
  for (const std::string& command : commands)
    for (const std::string overwrite : {"", " --overwrite"}) {
      if (!overwrite.empty() && command.rfind("experiment", 0) == 0) continue;  // it has no --overwrite
      const ordo::test::CommandResult r = ordo::test::run_ordo(command + overwrite);
      INFO("ordo " << command << overwrite << "\n" << r.output);
      CHECK(r.exit_code == 1);
      CHECK_THAT(r.output, Contains("'..' follows '" + (scratch / "x/nope") + "', which does not exist"));
      CHECK(ordo::test::snapshot(scratch.path) == before);
    }
}

TEST_CASE("an --out naming a file with a trailing slash is refused, the file kept", "[cli][output_policy][paths]") {
  const PathsFixture& f = paths_fixture();
  ordo::test::TempDir scratch("paths-slash");
  const std::string thesis = scratch.write("thesis.txt", "four years of work");
  const auto before = ordo::test::snapshot(scratch.path);
  for (const std::string& command : {"data synth --sentences 20 --out " + thesis + "/",
                                     "probe --checkpoint " + f.run + " --words 5 --length 6 --out " + thesis + "//",
                                     "pretrain --quiet --config " + f.config + " --out " + thesis + "/"}) {
    const ordo::test::CommandResult r = ordo::test::run_ordo(command);
    INFO("ordo " << command << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains("'" + thesis + "' is a file, not a folder"));
    CHECK(ordo::test::snapshot(scratch.path) == before);
  }
  const ordo::test::CommandResult r = ordo::test::run_ordo("vocab train --corpus " + f.run + "/data/corpus.txt --size 100 --out " + (scratch / "v/"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("ends in '/', which names a folder; give the path of a file"));
  CHECK(ordo::test::snapshot(scratch.path) == before);
}

TEST_CASE("experiment: names in a plan that would be paths are refused at plan load, naming the file and key",
          "[cli][experiment][paths]") {
  ordo::test::TempDir scratch("paths-names");
  fs::create_directories(scratch / "victim");
  scratch.write("victim/precious.txt", "keep me");
  const std::string plan = scratch / "lab/plan", out = scratch / "lab/out";
  write_paths_config(plan, "a");
  auto with_task = [&](const std::string& name) {
    ordo::write_file_atomic(plan + "/experiment.json",
                            R"({"stages": ["pretrain", "tasks", "finetune"], "finetune": {"tasks": [{"name": ")" +
                                name + R"(", "task": "rte", "stand_in": "roles"}]}})");
  };
  struct Case {
    std::string task_name, message;
  };
  const Case cases[] = {
      {"../../../victim", "finetune.tasks[0]: 'name': '../../../victim' holds the character '/'"},
      {"..", "finetune.tasks[0]: 'name': '..' begins with '.'"},
      {".", "finetune.tasks[0]: 'name': '.' begins with '.'"},
      {"a\\\\b", "finetune.tasks[0]: 'name': 'a\\b' holds the character '\\'"},
  };
  for (const Case& c : cases) {
    with_task(c.task_name);
    const auto before = ordo::test::snapshot(scratch.path);
    const ordo::test::CommandResult r = ordo::test::run_ordo("experiment " + plan + " --quiet --out " + out);
    INFO(c.task_name << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains(plan + "/experiment.json: " + c.message));
    CHECK(ordo::test::snapshot(scratch.path) == before);
  }
  // A run config named "...json": the run would be called "..", its folder OUT/runs/.. (OUT itself).
  ordo::write_file_atomic(plan + "/experiment.json", R"({"stages": ["pretrain"]})");
  ordo::write_file_atomic(plan + "/...json", ordo::test::kTwoStepRunConfig);
  fs::create_directories(out);
  scratch.write("lab/out/notes.txt", "mine");
  const auto before = ordo::test::snapshot(scratch.path);
  for (const std::string extra : {"", " --redo pretrain"}) {
    const ordo::test::CommandResult r = ordo::test::run_ordo("experiment " + plan + " --quiet --out " + out + extra);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains(plan + "/...json: the run's name (its file name without .json): '..' begins with '.'"));
    CHECK(ordo::test::snapshot(scratch.path) == before);
  }
  // --redo of a task no plan may have.
  fs::remove(plan + "/...json");
  const auto without = ordo::test::snapshot(scratch.path);
  const ordo::test::CommandResult r = ordo::test::run_ordo("experiment " + plan + " --quiet --out " + out + " --redo finetune:../../../victim");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("--redo finetune:../../../victim: the plan has no fine-tuning task"));
  CHECK(ordo::test::snapshot(scratch.path) == without);
}

TEST_CASE("experiment: an --out that is or holds the plan's folder is refused, and its experiment.json is kept",
          "[cli][experiment][paths]") {
  ordo::test::TempDir scratch("paths-plan-out");
  const std::string plan = scratch / "plan";
  write_paths_config(plan, "a");
  ordo::write_file_atomic(plan + "/experiment.json", R"({"stages": ["pretrain"]})");
  const auto before = ordo::test::snapshot(scratch.path);
  for (const std::string& out : {plan, scratch.path, plan + "/"}) {
    const ordo::test::CommandResult r = ordo::test::run_ordo("experiment " + plan + " --quiet --out " + out);
    INFO(out << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains("the experiment folder '" + plan + "', which this command reads"));
    CHECK(ordo::test::snapshot(scratch.path) == before);
  }
}

TEST_CASE("user files where ordo keeps its bookkeeping survive: OUT.lock, OUT.worker-*, a lock name that is a link",
          "[cli][output_policy][paths]") {
  const PathsFixture& f = paths_fixture();
  ordo::test::TempDir scratch("paths-bookkeeping");
  SECTION("a poetry.lock beside --out poetry") {
    scratch.write("poetry.lock", "[[package]]\nname = \"numpy\"\n");
    const ordo::test::CommandResult r = ordo::test::run_ordo("pretrain --quiet --config " + f.config + " --out " + (scratch / "poetry"));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(ordo::read_file(scratch / "poetry.lock") == "[[package]]\nname = \"numpy\"\n");
    CHECK(names_in_folder(scratch.path) == std::vector<std::string>{"poetry", "poetry.lock"});
  }
  SECTION("a folder r/ft.worker-mydata beside --out r/ft") {
    fs::create_directories(scratch / "r/ft.worker-mydata");
    scratch.write("r/ft.worker-mydata/data.tsv", "a\tb\n");
    // And ordo-looking folders that are not this output's, or not ordo's at all.
    fs::create_directories(scratch / "r/.ft.ordo-worker-x-ABCDEF");
    scratch.write("r/.ft.ordo-worker-x-ABCDEF/mine.txt", "no marker: not ordo's");
    fs::create_directories(scratch / "r/.ft.ordo-worker-2.ordo-worker-y-ABCDEF");
    scratch.write("r/.ft.ordo-worker-2.ordo-worker-y-ABCDEF/.ordo-bookkeeping", "ordo worker folder of ft.ordo-worker-2\n");
    const auto before = ordo::test::snapshot(scratch.path);
    const ordo::test::CommandResult r = ordo::test::run_ordo(paths_finetune_into(scratch / "r/ft"));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto after = ordo::test::snapshot(scratch.path);
    for (auto it = after.begin(); it != after.end();) it = it->first.rfind("r/ft/", 0) == 0 || it->first == "r/ft" ? after.erase(it) : ++it;
    CHECK(after == before);
  }
  SECTION("a lock name that is a symbolic link") {
    scratch.write("important.txt", "the only copy");
    fs::create_symlink("important.txt", scratch / "run2.lock");
    fs::create_symlink("important.txt", scratch / ".run2.ordo-lock");
    const auto before = ordo::test::snapshot(scratch.path);
    const ordo::test::CommandResult r = ordo::test::run_ordo("pretrain --quiet --config " + f.config + " --out " + (scratch / "run2"));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains("the lock file " + (scratch / ".run2.ordo-lock") + " is a symbolic link"));
    CHECK(ordo::test::snapshot(scratch.path) == before);
  }
  SECTION("a user's file at the lock's name") {
    scratch.write(".run3.ordo-lock", "my notes");
    const auto before = ordo::test::snapshot(scratch.path);
    const ordo::test::CommandResult r = ordo::test::run_ordo("pretrain --quiet --config " + f.config + " --out " + (scratch / "run3"));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains(scratch / ".run3.ordo-lock" + " exists and is not an ordo lock file"));
    CHECK(ordo::test::snapshot(scratch.path) == before);
  }
}

TEST_CASE("experiment: configs x.json and x.lock.json run side by side", "[cli][experiment][paths]") {
  ordo::test::TempDir scratch("paths-lock-json");
  const std::string plan = scratch / "plan", out = scratch / "out";
  write_paths_config(plan, "x");
  write_paths_config(plan, "x.lock");
  ordo::write_file_atomic(plan + "/experiment.json", R"({"stages": ["pretrain"]})");
  for (int pass = 0; pass < 2; ++pass) {  // the second finds both finished
    const ordo::test::CommandResult r = ordo::test::run_ordo("experiment " + plan + " --quiet --out " + out);
    INFO("pass " << pass << "\n" << r.output);
    REQUIRE(r.exit_code == 0);
  }
  CHECK(ordo::file_exists(out + "/runs/x/checkpoints/step_000000002/trainer_state.json"));
  CHECK(ordo::file_exists(out + "/runs/x.lock/checkpoints/step_000000002/trainer_state.json"));
  CHECK(names_in_folder(out + "/runs") == std::vector<std::string>{"x", "x.lock"});
}

TEST_CASE("experiment --shard I/N started together on a fresh --out all find the experiment",
          "[cli][experiment][paths]") {
  ordo::test::TempDir scratch("paths-shards");
  const std::string plan = scratch / "plan";
  write_paths_config(plan, "a");
  write_paths_config(plan, "b");
  ordo::write_file_atomic(plan + "/experiment.json", R"({"stages": ["pretrain"]})");
  // Shards 3..8 of 8 select none of the two runs: every process only creates (or finds) the experiment.
  for (int trial = 0; trial < 8; ++trial) {
    const std::string out = scratch / ("out" + std::to_string(trial));
    std::string command = "(";
    for (int shard = 3; shard <= 8; ++shard)
      command += std::string(ORDO_BINARY) + " experiment " + plan + " --quiet --out " + out + " --shard " +
                 std::to_string(shard) + "/8 > " + out + ".log" + std::to_string(shard) + " 2>&1 || echo failed " +
                 std::to_string(shard) + " & ";
    const ordo::test::CommandResult r = ordo::test::run_command(command + "wait)");
    std::string logs;
    for (int shard = 3; shard <= 8; ++shard) logs += ordo::read_file(out + ".log" + std::to_string(shard));
    INFO("trial " << trial << "\n" << r.output << logs);
    CHECK(r.output.find("failed") == std::string::npos);
    CHECK(ordo::file_exists(out + "/experiment.json"));
    CHECK(names_in_folder(out) == std::vector<std::string>{"experiment.json", "runs"});
  }
}

TEST_CASE("pretrain stopped by Ctrl-C while its corpus is made: the next call removes the staging folder left",
          "[cli][output_policy][paths]") {
  const PathsFixture& f = paths_fixture();
  ordo::test::TempDir scratch("paths-ctrl-c");
  const std::string run = scratch / "run";
  // Stopped once the staging folder is there: the corpus of two million sentences is still being made. (SIGTERM:
  // a background job of a shell ignores SIGINT; at a terminal Ctrl-C ends it the same way.)
  const ordo::test::CommandResult stopped = ordo::test::run_ordo(
      "pretrain --quiet --config " + f.config + " --set data.synthetic_sentences=2000000 --out " + run +
      " >/dev/null 2>&1 & pid=$!; for i in $(seq 600); do ls -a " + scratch.path +
      " | grep -q 'run.*new' && break; sleep 0.02; done; sleep 0.3; kill -TERM $pid; wait $pid; echo \"exit status $?\"");
  INFO(stopped.output);
  CHECK_THAT(stopped.output, Contains("exit status 143"));
  REQUIRE(names_in_folder(scratch.path).size() == 2);  // the staging folder and the lock the run held
  const ordo::test::CommandResult r = ordo::test::run_ordo("pretrain --config " + f.config + " --out " + run);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("removed 1 unfinished staging folder(s) of " + run));
  CHECK(names_in_folder(scratch.path) == std::vector<std::string>{"run"});
}

TEST_CASE("pretrain --resume refuses a trainer state it cannot trust, leaving the run as it was",
          "[cli][pretrain][paths]") {
  const PathsFixture& f = paths_fixture();
  ordo::test::TempDir scratch("paths-state");
  const std::string run = scratch / "run";
  const ordo::test::CommandResult made = ordo::test::run_ordo("pretrain --quiet --config " + f.config + " --out " + run +
                                      " --set train.steps=6 --set train.checkpoint_every=3 --stop-after 3");
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  const std::string checkpoint = run + "/checkpoints/step_000000003", state_path = checkpoint + "/trainer_state.json";
  const ordo::json::Value state = ordo::json::parse_file(state_path);
  auto edited = [&](const std::function<void(ordo::json::Value&)>& edit) {
    ordo::json::Value v = state;
    edit(v);
    ordo::write_file_atomic(state_path, ordo::json::dump(v, 2));
  };
  struct Case {
    std::string name;
    std::function<void()> damage;
    std::string message;
  };
  const std::string weights = checkpoint + "/model.safetensors";
  auto flip_weights = [&] {
    std::string bytes = ordo::read_file(weights);
    bytes.back() ^= 0x40;
    ordo::write_file_atomic(weights, bytes);
  };
  const std::vector<Case> cases = {
      {"digests removed, weights flipped",
       [&] { edited([](ordo::json::Value& v) { v.erase("sha256"); }), flip_weights(); },
       state_path + " has no 'sha256'"},
      {"digests emptied, weights flipped",
       [&] { edited([](ordo::json::Value& v) { v["sha256"] = ordo::json::Value::object(); }), flip_weights(); },
       state_path + ": 'sha256' has no digest of config.json"},
      {"a phase beyond the schedule's",
       [&] { edited([](ordo::json::Value& v) { v["phase"] = 1; }); },
       state_path + " says phase 1 (counted from 0), but " + run + "/config.json has 1 phase(s)"},
      {"another epoch",
       [&] { edited([](ordo::json::Value& v) { v["epoch"] = 40; }); },
       state_path + " says epoch 40, example " + std::to_string(state["example"].as_int()) + ", but the 3 step(s) of phase 0 "
       "before it drew 12 examples (4 a step), which end at epoch 0, example 12"},
      {"another example",
       [&] { edited([](ordo::json::Value& v) { v["example"] = 5; }); },
       "says epoch 0, example 5, but the 3 step(s) of phase 0"},
      {"an edited config",
       [&] {
         ordo::json::Value c = ordo::json::parse_file(run + "/config.json");
         c["train"]["seed"] = 77;
         c["model"]["hidden_dropout_prob"] = 0.5;
         ordo::write_file_atomic(run + "/config.json", ordo::json::dump(c, 2));
       },
       run + "/config.json differs from the config its latest checkpoint was trained with (" + state_path +
           ": run_config) at model.hidden_dropout_prob, train.seed"},
  };
  const std::string saved_state = ordo::read_file(state_path), saved_weights = ordo::read_file(weights),
                    saved_config = ordo::read_file(run + "/config.json");
  for (const Case& c : cases) {
    SECTION(c.name) {
      c.damage();
      const auto before = ordo::test::snapshot(scratch.path);
      const ordo::test::CommandResult r = ordo::test::run_ordo("pretrain --quiet --resume " + run);
      INFO(r.output);
      CHECK(r.exit_code == 1);
      CHECK_THAT(r.output, Contains(c.message) && Contains("nothing was changed"));
      CHECK(ordo::test::snapshot(scratch.path) == before);
    }
  }
  SECTION("the untouched checkpoint resumes, and so does a run extended by --set train.steps") {
    ordo::test::CommandResult r = ordo::test::run_ordo("pretrain --quiet --resume " + run + " --stop-after 4");
    INFO(r.output);
    CHECK(r.exit_code == 0);
    r = ordo::test::run_ordo("pretrain --quiet --resume " + run + " --set train.steps=8 --stop-after 5");
    INFO(r.output);
    CHECK(r.exit_code == 0);
    // The latest checkpoint again the one from before the extension: its config had 6 steps, the run's now 8.
    fs::remove_all(run + "/checkpoints/step_000000005");
    r = ordo::test::run_ordo("pretrain --quiet --resume " + run);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(ordo::file_exists(run + "/checkpoints/step_000000008/trainer_state.json"));
  }
}
