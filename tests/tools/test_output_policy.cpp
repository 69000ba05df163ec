// One output policy for every command that writes (base/output.h), checked
// command by command through the ordo binary: an existing output is refused
// without --overwrite and left as it was; a failure after every check has
// passed (a write past a file-size limit) leaves it as it was, with nothing
// beside it; --overwrite replaces it whole (no stale file of the old one).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "base/file_io.h"
#include "base/output.h"
#include "tests/helpers.h"
#include "tests/tools/disk_state.h"
#include "text/english.h"

using ordo::test::CommandResult;
using ordo::test::run_ordo;
using ordo::test::snapshot;
using ordo::test::TempDir;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

const char* kSmall =
    R"({"model": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,)"
    R"( "max_position_embeddings": 32},)"
    R"( "data": {"synthetic_sentences": 200, "vocab_size": 150},)"
    R"( "train": {"steps": 2, "batch_size": 2, "max_seq_length": 16, "eval_every": 0, "device": "cpu"}})";

// A finished run, probed, and an input batch: what the commands read.
struct Inputs {
  TempDir dir{"output-policy"};
  std::string config, run, batch;
  Inputs() {
    config = dir.write("small.json", kSmall);
    run = dir / "run";
    batch = dir.write("in.json", R"({"input_ids": [[2, 7, 9, 3]]})");
    CommandResult r = run_ordo("pretrain --quiet --config " + config + " --out " + run);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    r = run_ordo("probe --checkpoint " + run + " --out " + run + "/probe --words 5 --length 6");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
};

struct Command {
  std::string args;                 // the command writing `out`, without --overwrite
  ordo::OutputKind kind;
  std::string written;              // a file the new output holds (folders)
};

// The three promises for one command writing `out` (inside `outs`, a folder of its own).
void check_policy(const Command& c, const std::string& outs, const std::string& out) {
  INFO("ordo " << c.args);
  const bool folder = c.kind == ordo::OutputKind::folder;
  if (folder) {
    fs::create_directories(out);
    ordo::write_file_atomic(out + "/stale.txt", "from before");
  } else {
    ordo::write_file_atomic(out, "from before");
  }
  const auto before = snapshot(outs);

  // Refused without --overwrite, naming the output and the flag; nothing changed.
  CommandResult r = run_ordo(c.args);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("'" + out + "' already exists") && Contains("--overwrite"));
  CHECK(snapshot(outs) == before);

  // A write that fails after every check: the old output stays, nothing is left beside it.
  r = ordo::test::run_ordo_with_file_limit(c.args + " --overwrite", 0);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("File too large"));
  CHECK(snapshot(outs) == before);

  // Replaced whole with --overwrite.
  r = run_ordo(c.args + " --overwrite");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  if (folder) {
    CHECK_FALSE(fs::exists(out + "/stale.txt"));
    CHECK(ordo::file_exists(out + "/" + c.written));
    CHECK(fs::status(out).permissions() != fs::perms::owner_all);  // not mkdtemp's private 0700
  } else {
    CHECK(ordo::read_file(out) != "from before");
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(outs)) names.push_back(e.path().filename().string());
  CHECK(names == std::vector<std::string>{fs::path(out).filename().string()});  // no .OUT.ordo-new-* or -previous-* left
}

}  // namespace

TEST_CASE("every command that writes follows one output policy", "[cli][output_policy]") {
  Inputs in;
  const std::string corpus = in.run + "/data/corpus.txt";
  struct Case {
    std::string name;
    std::function<Command(const std::string& out)> command;
  };
  using ordo::OutputKind;
  const std::vector<Case> cases = {
      {"pretrain", [&](const std::string& out) { return Command{"pretrain --quiet --config " + in.config + " --out " + out, OutputKind::folder, "checkpoints/step_000000002/model.safetensors"}; }},
      {"probe", [&](const std::string& out) { return Command{"probe --checkpoint " + in.run + " --out " + out + " --words 5 --length 6", OutputKind::folder, "probe.json"}; }},
      {"analyze", [&](const std::string& out) { return Command{"analyze --quiet --run " + in.run + " --out " + out + " --eval-sequences 2", OutputKind::folder, "index.json"}; }},
      {"report", [&](const std::string& out) { return Command{"report " + in.run + " --out " + out, OutputKind::folder, "index.html"}; }},
      {"forward", [&](const std::string& out) { return Command{"forward --checkpoint " + in.run + " --input " + in.batch + " --out " + out, OutputKind::file, ""}; }},
      {"vocab train", [&](const std::string& out) { return Command{"vocab train --corpus " + corpus + " --size 100 --out " + out, OutputKind::file, ""}; }},
      {"data synth", [&](const std::string& out) { return Command{"data synth --sentences 50 --out " + out, OutputKind::folder, "meta.json"}; }},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const std::string outs = in.dir / "outs";
      fs::create_directories(outs);
      check_policy(c.command(outs + "/out"), outs, outs + "/out");
    }
  }
  SECTION("data english") {
    const std::string outs = in.dir / "outs", out = outs + "/english.txt";
    fs::create_directories(outs);
    if (!ordo::text::english_installed(ordo::text::EnglishSource::fortunes)) {
      // The refusal comes before the extraction, so it is checked without the package.
      ordo::write_file_atomic(out, "from before");
      CommandResult r = run_ordo("data english --source fortunes --out " + out);
      CHECK(r.exit_code == 1);
      CHECK_THAT(r.output, Contains("already exists") && Contains("--overwrite"));
      CHECK(ordo::read_file(out) == "from before");
      WARN("checked only the refusal: fortunes-min is not installed");
    } else {
      check_policy({"data english --source fortunes --out " + out, OutputKind::file, ""}, outs, out);
    }
  }
}

TEST_CASE("an output that would delete an input, or is the wrong kind, is refused even with --overwrite",
          "[cli][output_policy][errors]") {
  Inputs in;
  const std::string a_file = in.dir.write("a_file.txt", "x");
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {"probe --checkpoint " + in.run + " --out " + in.run + " --words 5 --length 6", "is --checkpoint"},
      {"probe --checkpoint " + in.run + " --out " + in.dir.path + " --words 5 --length 6", "holds --checkpoint"},
      {"analyze --run " + in.run + " --out " + in.run, "is --run"},
      {"analyze --run " + in.run + " --out " + in.dir.path, "holds --run"},
      {"report " + in.run + " --out " + in.run, "is RUN_DIR"},
      {"forward --checkpoint " + in.run + " --input " + in.batch + " --out " + in.batch, "is --input"},
      {"forward --checkpoint " + in.run + "/checkpoints/step_000000002 --input " + in.batch + " --out " + in.run +
           "/checkpoints/step_000000002/model.safetensors", "is --checkpoint"},
      {"vocab train --corpus " + in.run + "/data/corpus.txt --out " + in.run + "/data/corpus.txt", "is --corpus"},
      {"pretrain --config " + in.config + " --out " + in.run + " --set data.corpus=" + in.run + "/data/corpus.txt",
       "holds data.corpus"},
      {"forward --checkpoint " + in.run + " --input " + in.batch + " --out " + in.run, "is a folder; give the path of a file"},
      {"probe --checkpoint " + in.run + " --out " + a_file, "is a file, not a folder"},
      {"data synth --sentences 5 --out " + a_file, "is a file, not a folder"},
      {"probe --checkpoint " + in.run + " --out " + a_file + "/probe", "is a file, not a folder"},
      {"vocab train --corpus " + in.run + "/data/corpus.txt --out " + a_file + "/vocab.txt", "is a file, not a folder"},
  };
  const auto before = snapshot(in.dir.path);
  for (const Case& c : cases) {
    CommandResult r = run_ordo(c.args + " --overwrite");
    INFO("ordo " << c.args << " --overwrite\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains(c.message));
    CHECK(snapshot(in.dir.path) == before);
  }
  // The folder the command runs in.
  CommandResult r = run_ordo("probe --checkpoint " + in.run + " --out . --overwrite --words 5 --length 6",
                             "cd " + in.run + "/probe && ");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("holds the current folder"));
  CHECK(snapshot(in.dir.path) == before);
  // An empty folder is no output yet: nothing in it to lose.
  fs::create_directories(in.dir / "empty");
  r = run_ordo("probe --checkpoint " + in.run + " --out " + (in.dir / "empty") + " --words 5 --length 6");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(ordo::file_exists(in.dir / "empty/probe.json"));
}

TEST_CASE("the steps of make run work again on a rerun", "[cli][output_policy]") {
  // make run: pretrain --overwrite, then probe, analyze and report into the run
  // directory. A fresh pretrain replaces the run whole, so the second pass
  // finds no probe/, analysis/ or report/ in the way.
  Inputs in;  // a first pass: run + probe
  for (int pass = 0; pass < 2; ++pass) {
    INFO("pass " << pass);
    for (const std::string& args :
         {"pretrain --quiet --config " + in.config + " --out " + in.run + " --overwrite --set train.seed=" + std::to_string(pass + 5),
          "probe --checkpoint " + in.run + " --out " + in.run + "/probe --words 5 --length 6",
          "analyze --quiet --run " + in.run + " --out " + in.run + "/analysis --eval-sequences 2",
          "report " + in.run + " --out " + in.run + "/report"}) {
      CommandResult r = run_ordo(args);
      INFO("ordo " << args << "\n" << r.output);
      REQUIRE(r.exit_code == 0);
    }
    CHECK(ordo::file_exists(in.run + "/report/index.html"));
  }
}

TEST_CASE("a replaced output that cannot be removed is left under a name that says it is the previous one",
          "[cli][output_policy]") {
  // The old output holds a folder its remover may not write into: as root
  // (CI) the command runs as nobody (setpriv), otherwise the mode bits stop
  // the test's own user. The binary is copied where nobody may run it.
  TempDir dir("previous");
  fs::permissions(dir.path, fs::perms::all);
  const std::string ordo_copy = dir / "ordo";
  fs::copy_file(ORDO_BINARY, ordo_copy);
  const std::string out = dir / "out";
  fs::create_directories(out + "/locked");
  ordo::write_file_atomic(out + "/locked/mine.txt", "from before");
  fs::permissions(out, fs::perms::all);
  fs::permissions(out + "/locked", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                       fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  const std::string as_other = ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  const CommandResult r = ordo::test::run_command(as_other + ordo_copy + " data synth --sentences 5 --out " + out +
                                                  " --overwrite");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(ordo::file_exists(out + "/meta.json"));  // the new output is in place
  std::vector<std::string> previous, staging;
  for (const auto& e : fs::directory_iterator(dir.path)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".out.ordo-previous-", 0) == 0) previous.push_back(name);
    if (name.rfind(".out.ordo-new-", 0) == 0) staging.push_back(name);
  }
  REQUIRE(previous.size() == 1);
  CHECK(staging.empty());
  CHECK(ordo::read_file(dir / previous[0] + "/locked/mine.txt") == "from before");
  CHECK_THAT(r.output, Contains("the previous output, moved to " + dir / previous[0] + ", could not be removed"));
  fs::permissions(dir / previous[0] + "/locked", fs::perms::all);  // for the folder's own removal
}
