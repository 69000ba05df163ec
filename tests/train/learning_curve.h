// A small pretraining run's losses on a chosen device and precision, and the
// check that one run's learning curve tracks another's: used by the bf16
// comparisons on the CPU (tests/train/test_pretrain.cpp) and on CUDA
// (tests/train/test_step_cuda.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "tests/helpers.h"
#include "train/pretrain.h"

namespace ordo::test {

inline void write_tracking_corpus(const TempDir& dir) {
  std::ofstream(dir / "corpus.txt") << "the dog chased the cat .\nthe cat saw a bird near the house .\n"
                                       "a small boy ran to the old man .\nthe old man gave the boy a red ball .\n";
}

// The per-step losses of `steps` steps of a 2-layer, 32-wide BERT on the
// corpus in dir (write_tracking_corpus), one thread.
inline std::vector<double> pretrain_losses(const TempDir& dir, const std::string& device,
                                           const std::string& precision = "fp32", int64_t steps = 20) {
  json::Value c = json::parse(R"({
    "model": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 48,
              "max_position_embeddings": 24},
    "data": {"corpus": "", "held_out_fraction": 0, "vocab_size": 120, "vocab_min_frequency": 1,
             "max_predictions_per_seq": 5},
    "train": {"steps": 20, "batch_size": 4, "max_seq_length": 13, "lr": 5e-3, "warmup_steps": 2,
              "log_every": 1, "eval_every": 0, "threads": 1}
  })");
  c["data"]["corpus"] = dir / "corpus.txt";
  c["train"]["device"] = device;
  c["train"]["precision"] = precision;
  c["train"]["steps"] = steps;
  train::PretrainOptions o;
  o.out = dir / (device + "_" + precision);
  o.quiet = true;
  std::vector<double> losses;
  train::pretrain(train::parse_run_config(c, {}, std::to_string(steps) + " steps on " + device), o,
                  [&](const json::Value& line) {
                    if (line.contains("loss")) losses.push_back(line["loss"].as_number());
                  });
  return losses;
}

// bf16 products against FP32 over the same run. Step by step the two curves
// part: every product's operands lose 16 of their 24 bits, AdamW's first
// updates are near sign(g), and dropout and the small batches make each
// step's loss a noisy estimate (here its step-to-step scatter is ~0.3 on a
// loss of ~2.5), so two trajectories that start ~1e-6 apart drift to
// differences of that noise's order at single steps, as two FP32 runs from
// different summation orders would given enough steps. What bf16 must not
// change is the curve the run learns: the bound is the resolution the FP32
// curve itself has. Over a window of w steps, the mean of the FP32 losses
// estimates the curve with a standard error sigma / sqrt(w), sigma the
// standard deviation of one step's loss about the curve, estimated from the
// FP32 run's successive differences (von Neumann: var(L_s+1 - L_s) =
// 2 sigma^2 when the trend moves little within a step). The candidate tracks
// when every window's mean is within 2 standard errors of the reference's: a
// difference the FP32 curve cannot resolve from its own noise. A path that
// learns more slowly, stalls or blows up moves a window by far more.
inline void check_tracks_learning_curve(const std::vector<double>& fp32, const std::vector<double>& other,
                                        int64_t window) {
  const int64_t steps = static_cast<int64_t>(fp32.size());
  REQUIRE(other.size() == fp32.size());
  REQUIRE(steps >= 2 * window);
  double squares = 0;
  for (int64_t s = 0; s + 1 < steps; ++s) squares += (fp32[s + 1] - fp32[s]) * (fp32[s + 1] - fp32[s]);
  const double sigma = std::sqrt(squares / static_cast<double>(steps - 1) / 2);
  const double bound = 2 * sigma / std::sqrt(static_cast<double>(window));
  auto window_mean = [&](const std::vector<double>& l, int64_t from) {
    double sum = 0;
    for (int64_t s = from; s < from + window; ++s) sum += l[s];
    return sum / static_cast<double>(window);
  };
  for (int64_t from = 0; from + window <= steps; from += window) {
    const double a = window_mean(fp32, from), b = window_mean(other, from);
    INFO("steps " << from + 1 << "-" << from + window << ": fp32 " << a << ", other " << b << ", bound " << bound);
    CHECK(std::fabs(b - a) <= bound);
  }
  // The run learns far more than the bound: the check is not vacuous.
  CHECK(window_mean(fp32, steps - window) < window_mean(fp32, 0) - 5 * bound);
}

}  // namespace ordo::test
