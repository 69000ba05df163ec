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

TEST_CASE("ordo bench step prints PREDICTED beside MODELED, and bench calibrate refits the repository's file", "[bench]") {
  Run step = run_ordo("bench step --config tiny --device cpu --batch 2 --length 8 --steps 1 --warmup 0 --model-only "
                      "--classes");
  INFO(step.output);
  REQUIRE(step.exit_code == 0);
  CHECK(step.output.find("MODELED, not measured") != std::string::npos);
  CHECK(step.output.find("PREDICTED, not measured, for NVIDIA H200") != std::string::npos);
  CHECK(step.output.find("tiny 2 x 8 after: MODELED by kernel class") != std::string::npos);
  CHECK(step.output.find("predicted us") != std::string::npos);

  // The calibration in the tree is what its logs give (docs/gpu_runs/calibration/README.md's command).
  const std::string g = std::string(ORDO_SOURCE_DIR) + "/docs/gpu_runs/", d = g + "calibration/";
  const std::string out = "/tmp/ordo_test_calibration_" + std::to_string(getpid()) + ".txt";
  Run fit = run_ordo("bench calibrate --measured " + g + "2026-11-27-h200/call6_bench_step.txt --modeled " + d +
                     "modeled_base_32x128.txt --modeled " + d + "modeled_base_8x512.txt --modeled " + d +
                     "modeled_tiny_32x64.txt --fit-on products_bf16=after --fit-on optimizer=after --fit-on "
                     "copies=before --fit-on elementwise=before --fit-on reductions=before --fit-on rows=before "
                     "--fit-on scatter_adds=before --changed \"scatter_adds=f61121f (after the measured 5722e45): "
                     "runs added in pieces of 256, where the measured add_row_runs_kernel summed a whole run (a token "
                     "type's ~2048 rows) in one thread\" --out " + out);
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  auto classes = [](const std::string& text) {  // the fitted figures and changed classes, not the provenance lines
    std::string kept;
    for (size_t at = 0; at < text.size();) {
      const size_t end = text.find('\n', at);
      const std::string line = text.substr(at, end - at);
      if (line.rfind("class ", 0) == 0 || line.rfind("changed ", 0) == 0 ||
          line.find("_per_launch") != std::string::npos || line.rfind("unlisted", 0) == 0)
        kept += line + "\n";
      at = end == std::string::npos ? text.size() : end + 1;
    }
    return kept;
  };
  CHECK(classes(ordo::read_file(out)) == classes(ordo::read_file(g + "calibration_h200.txt")));
  std::remove(out.c_str());

  Run bad = run_ordo("bench calibrate --measured " + d + "modeled_tiny_32x64.txt --modeled " + d +
                     "modeled_tiny_32x64.txt");
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("modeled_tiny_32x64.txt: no step timed") != std::string::npos);
}
