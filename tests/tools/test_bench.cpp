// Smoke test of `ordo bench ops`: it runs, prints its tables and writes valid
// JSON. Speeds are never asserted (benchmarks measure, tests check).
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "base/file_io.h"
#include "base/json.h"
#include "tests/helpers.h"

using Run = ordo::test::CommandResult;
using ordo::test::run_ordo;

TEST_CASE("ordo bench ops --quick prints its tables and writes JSON", "[bench]") {
  std::string json_path = "/tmp/ordo_test_bench_" + std::to_string(getpid()) + ".json";
  Run r = run_ordo("bench ops --quick --json " + json_path);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("CPU: ") != std::string::npos);
  CHECK(r.output.find("CPU matrix products, GFLOP/s") != std::string::npos);
  CHECK(r.output.find("OpenBLAS") != std::string::npos);
  CHECK(r.output.find("CPU memory-bound kernels") != std::string::npos);
  CHECK(r.output.find("softmax") != std::string::npos);
  CHECK(r.output.find("layernorm") != std::string::npos);

  ordo::json::Value report = ordo::json::parse(ordo::read_file(json_path));
  std::remove(json_path.c_str());
  const auto& matmul = report["cpu"]["matmul"].as_array();
  REQUIRE(!matmul.empty());
  for (const auto& row : matmul) CHECK(row["own_gflops"].as_number() > 0);
  CHECK(report["cpu"]["memcpy_gbps"].as_number() > 0);
  CHECK(report["cpu"]["kernels"].size() == 5);  // add, gelu, softmax x 2, layernorm
  CHECK(report["quick"].as_bool());
}

TEST_CASE("ordo bench ops refuses an unknown flag", "[bench]") {
  Run r = run_ordo("bench ops --fast");
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("unknown flag --fast") != std::string::npos);
}

TEST_CASE("ordo bench step counts a tiny step on the CPU, saying what applies there", "[bench]") {
  Run r = run_ordo("bench step --config tiny --device cpu --batch 2 --length 8 --steps 2 --warmup 1");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("only tensor allocations apply") != std::string::npos);
  CHECK(r.output.find("host syncs") != std::string::npos);
  CHECK(r.output.find("2 x 8") != std::string::npos);
}

TEST_CASE("ordo bench finetune times classification and span extraction on the CPU", "[bench][finetune]") {
  Run r = run_ordo("bench finetune --config tiny --device cpu --batch 2 --length 8 --squad-length 12 --steps 1 --warmup 0");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("classification (8)") != std::string::npos);
  CHECK(r.output.find("span (12)") != std::string::npos);
  CHECK(r.output.find("eval RSS MiB") != std::string::npos);  // the peak resident memory beside the rates
}
