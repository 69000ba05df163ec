// The deterministic mode end to end (docs/determinism.md): a short
// pretraining run under ORDO_DETERMINISTIC=1 writes the same weights and the
// same losses on the AVX2 and AVX-512 code paths (ordo's own kernels' and
// OpenBLAS's: ORDO_CPU and OPENBLAS_CORETYPE) and on 1 and 2 threads.
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "base/sha256.h"
#include "tensor/cpu/cpu_paths.h"
#include "tests/helpers.h"

using ordo::test::run_ordo;
using ordo::test::TempDir;

namespace {

// Long enough that every product's sum over rows (batch x length = 512)
// crosses the own kernel's KC blocks, and the FFN runs GELU.
const char* kDeterministicRun =
    R"({"model": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,)"
    R"( "max_position_embeddings": 64},)"
    R"( "data": {"synthetic_sentences": 400, "vocab_size": 200, "held_out_fraction": 0.1},)"
    R"( "train": {"steps": 6, "batch_size": 8, "max_seq_length": 64, "eval_every": 0, "log_every": 1,)"
    R"( "device": "cpu"}})";

// metrics.jsonl without the wall-clock figure.
std::string losses(const std::string& metrics) {
  return std::regex_replace(metrics, std::regex(R"("tokens_per_s":[^,}]*)"), "");
}

struct Outcome {
  std::string label, weights_digest, losses;
};

Outcome pretrain(const TempDir& dir, const std::string& label, const std::string& environment) {
  const std::string out = dir / label;
  auto r = run_ordo("pretrain --quiet --config " + (dir / "run.json") + " --out " + out, environment);
  INFO(label << ": " << r.output);
  REQUIRE(r.exit_code == 0);
  return {label, ordo::sha256_file(out + "/checkpoints/step_000000006/model.safetensors"),
          losses(ordo::read_file(out + "/metrics.jsonl"))};
}

}  // namespace

TEST_CASE("deterministic mode: a pretraining run's weights and losses are the same on both CPU paths and thread counts",
          "[cli][determinism]") {
  TempDir dir("deterministic");
  std::ofstream(dir / "run.json") << kDeterministicRun;
  std::vector<std::pair<std::string, std::string>> paths{{"avx2", "ORDO_CPU=avx2 OPENBLAS_CORETYPE=Haswell "}};
  if (ordo::cpu::avx512_path_available()) paths.push_back({"avx512", "ORDO_CPU=avx512 OPENBLAS_CORETYPE=SkylakeX "});
  std::vector<Outcome> runs;
  for (const auto& [path, environment] : paths)
    for (const char* threads : {"1", "2"})
      runs.push_back(pretrain(dir, path + "_" + threads, "ORDO_DETERMINISTIC=1 OMP_NUM_THREADS=" + std::string(threads) +
                                                             " " + environment));
  REQUIRE_FALSE(runs[0].losses.empty());
  for (const Outcome& run : runs) {
    INFO(run.label << " against " << runs[0].label);
    CHECK(run.weights_digest == runs[0].weights_digest);
    CHECK(run.losses == runs[0].losses);
  }
  // Without the mode the two paths compute differently (OpenBLAS's kernels,
  // GELU's rows), so the equality above is the mode's doing.
  if (paths.size() == 2) {
    const Outcome avx2 = pretrain(dir, "avx2_default", "OMP_NUM_THREADS=1 " + paths[0].second);
    const Outcome avx512 = pretrain(dir, "avx512_default", "OMP_NUM_THREADS=1 " + paths[1].second);
    CHECK(avx2.weights_digest != avx512.weights_digest);
  }
}

TEST_CASE("ORDO_CPU and ORDO_DETERMINISTIC: a value they do not take stops the command before it writes",
          "[cli]") {
  TempDir dir("deterministic_errors");
  std::ofstream(dir / "run.json") << kDeterministicRun;
  const std::string out = dir / "run";
  auto bad_path = run_ordo("pretrain --quiet --config " + (dir / "run.json") + " --out " + out, "ORDO_CPU=sse ");
  CHECK(bad_path.exit_code == 1);
  CHECK_THAT(bad_path.output, Catch::Contains("ORDO_CPU: expected avx2, avx512 or auto, got 'sse'"));
  auto bad_mode = run_ordo("pretrain --quiet --config " + (dir / "run.json") + " --out " + out, "ORDO_DETERMINISTIC=yes ");
  CHECK(bad_mode.exit_code == 1);
  CHECK_THAT(bad_mode.output, Catch::Contains("ORDO_DETERMINISTIC: expected 1 or 0, got 'yes'"));
  CHECK_FALSE(ordo::file_exists(out));
  auto info = run_ordo("info", "ORDO_DETERMINISTIC=1 ORDO_CPU=avx2 ");
  CHECK(info.exit_code == 0);
  CHECK_THAT(info.output, Catch::Contains("ordo's own CPU kernels: avx2"));
  CHECK_THAT(info.output, Catch::Contains("deterministic mode: on (ORDO_DETERMINISTIC=1)"));
}
