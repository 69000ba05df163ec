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
