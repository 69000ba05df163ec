// The `ordo` command itself: help for every command, an unknown one refused,
// and `ordo info` plain about a machine without a GPU.
#include "tensor/device_runtime.h"
#include "tests/helpers.h"

using ordo::test::run_ordo;

TEST_CASE("ordo CMD --help and -h print the command's help and exit 0", "[cli]") {
  for (const char* args : {"pretrain --help", "pretrain -h", "pretrain --config x.json --help", "help pretrain"}) {
    ordo::test::CommandResult r = run_ordo(args);
    INFO("ordo " << args << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("ordo pretrain — pretrain a BERT") != std::string::npos);
    CHECK(r.output.find("--config FILE.json [--set key=value ...] --out RUN_DIR") != std::string::npos);
  }
  ordo::test::CommandResult two_words = run_ordo("data synth --help");
  INFO(two_words.output);
  CHECK(two_words.exit_code == 0);
  CHECK(two_words.output.find("ordo data synth — ") != std::string::npos);
}

TEST_CASE("ordo help NOSUCH is an error naming it", "[cli][errors]") {
  ordo::test::CommandResult r = run_ordo("help nosuch");
  INFO(r.output);
  CHECK(r.exit_code == 2);  // as `ordo nosuch`
  CHECK(r.output.find("unknown command 'nosuch'") != std::string::npos);
}

TEST_CASE("ordo info on a machine without a GPU says so", "[cli]") {
  if (ordo::cuda_available()) return;  // the machine has one: nothing to check here
  ordo::test::CommandResult r = run_ordo("info");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("cuda: no GPU") != std::string::npos);
  CHECK(r.output.find("driver") == std::string::npos);
}

TEST_CASE("a flag's value that is not UTF-8 is refused before any work, naming the flag and the byte",
          "[cli][errors]") {
  // The paths a command is given go into its JSON records (JSON holds UTF-8
  // only), which used to fail when they were written: for an experiment's
  // report, after its runs. "\xff" never occurs in UTF-8.
  ordo::test::TempDir dir("not_utf8");
  const std::string bad = dir / "r\xff";
  struct Case {
    std::string args, named;
  } cases[] = {
      {"pretrain --config " + std::string(ORDO_SOURCE_DIR) + "/configs/tiny.json --set train.steps=2 --out " + bad,
       "the value of --out is not valid UTF-8 (byte " + std::to_string(bad.size()) + " of " +
           std::to_string(bad.size())},
      {"finetune --checkpoint " + (dir / "ckpt") + " --task rte --data " + bad + " --out " + (dir / "ft"),
       "the value of --data is not valid UTF-8"},
      {"experiment " + bad + " --out " + (dir / "ex"), "argument 1 (not a flag) is not valid UTF-8"},
  };
  for (const Case& c : cases) {
    const ordo::test::CommandResult r = run_ordo(c.args);
    INFO("ordo " << c.args << "\n" << r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.output.find(c.named) != std::string::npos);
  }
  CHECK(std::filesystem::is_empty(dir.path));
}

TEST_CASE("a word that is not a flag is refused by every command that takes flags only, naming it and the flags",
          "[cli][errors]") {
  // A forgotten "--config" before a second config, or a value after a switch, would otherwise run
  // something other than what was asked, in silence.
  ordo::test::TempDir dir("stray_word");
  const std::string tiny = std::string(ORDO_SOURCE_DIR) + "/configs/tiny.json";
  for (const std::string& args : std::vector<std::string>{
           "bench train --config tiny mini", "bench ops pe",
           "pretrain --config " + tiny + " --out " + (dir / "r") + " --overwrite yes",
           "data synth --sentences 10 --out " + (dir / "s") + " extra"}) {
    const ordo::test::CommandResult r = run_ordo(args);
    INFO("ordo " << args << "\n" << r.output);
    CHECK(r.exit_code == 1);  // a usage error, as an unknown flag
    CHECK(r.output.find("unexpected argument '") != std::string::npos);
    CHECK(r.output.find("': this command takes flags only (--") != std::string::npos);
  }
  CHECK(std::filesystem::is_empty(dir.path));
  const ordo::test::CommandResult pretrain = run_ordo("pretrain --config " + tiny + " --out " + (dir / "r") + " yes");
  CHECK(pretrain.output.find("unexpected argument 'yes': this command takes flags only (--config, --set, --out, "
                             "--resume, --stop-after, --overwrite, --quiet)") != std::string::npos);
}

TEST_CASE("a flag whose value is forgotten does not take the next flag for it", "[cli][errors]") {
  // "--out --overwrite" would write a run into a folder named "--overwrite".
  ordo::test::TempDir dir("flag_as_value");
  const std::string tiny = std::string(ORDO_SOURCE_DIR) + "/configs/tiny.json";
  const ordo::test::CommandResult r = run_ordo("pretrain --config " + tiny + " --out --overwrite");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("flag --out needs a value, got the flag --overwrite (--out=--overwrite if that is the value)") !=
        std::string::npos);
  const ordo::test::CommandResult rungs =
      run_ordo("experiment " + std::string(ORDO_SOURCE_DIR) + "/configs/scale_study --out " + (dir / "x") +
               " --rungs --list");
  CHECK(rungs.output.find("flag --rungs needs a value, got the flag --list") != std::string::npos);
  CHECK(std::filesystem::is_empty(dir.path));
}
