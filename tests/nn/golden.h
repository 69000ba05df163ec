// What the twin's golden tests share (tests/twin/): a golden file's tensors by
// name, and a comparison that checks each error against its bound and, with
// ORDO_GOLDEN_VERBOSE set, prints every error and the worst.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <functional>
#include <string>
#include <vector>

#include "autograd/var.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "tensor/ops.h"
#include "tensor/safetensors.h"
#include "tests/helpers.h"

namespace ordo::test {

inline const std::string kTwinDir = std::string(ORDO_SOURCE_DIR) + "/tests/data/twin";

// ---- bounds ------------------------------------------------------------------------
//
// f32's unit roundoff is u = 2^-24 = 6e-8. A forward value here is the end of
// a chain of some twenty stages (embedding sums, 32- and 37-long dot
// products, two LayerNorms per layer, softmax, GELU, the vocabulary
// projection); each adds a few u relative to its tensor's scale, and a
// LayerNorm divides by a row's standard deviation, amplifying what came
// before by max|x| / std. Measured with this batch (OpenBLAS build): worst
// forward tensor 4.0e-7 (the logits), worst gradient 1.1e-6
// (layer 1's key.weight, decoder), worst loss 7.6e-8, worst AdamW loss 2.7e-6
// (growing by ~5e-7 a step); ordo's own GEMM (ORDO_BLAS=off) and one thread
// give the same magnitudes (worst gradient 1.4e-6). The bounds leave about a
// tenfold margin for other summation orders and stay orders of
// magnitude below what a real mistake moves (a wrong LayerNorm eps, GELU's
// tanh form for the erf one, a missing bias or mask: 1e-4 to 1e-1).
inline constexpr double kForwardBound = 5e-6;
// Gradients run the chain twice (forward, then backward through it) and sum
// over the batch's positions, where terms of both signs cancel.
inline constexpr double kGradientBound = 1e-5;
// A loss: a mean of cross-entropies, each a log-sum-exp of 59 logits.
inline constexpr double kLossBound = 1e-6;
// Five AdamW steps: an update is lr * m / (sqrt(v) + eps), about lr per
// element whatever the gradient's scale, so gradient rounding moves the
// weights by small fractions of lr and the losses drift apart slowly.
inline constexpr double kAdamLossBound = 1e-5;
// In f64, ordo's own rounding is ~1e-15 and each golden tensor is the f32
// rounding of the exact value: |ordo - golden| <= u |golden| + 1e-15 <=
// u max|golden|, so the per-tensor error is at most 2^-24 = 5.96e-8 (measured
// worst 5.6e-8). This is the tightest check the f32 files allow: ordo in f64
// and HF in f64 agree to the last bit f32 can show.
inline constexpr double kF64TensorBound = 6.0e-8;
// f64 losses (stored in f64): both sides f64, differing in summation order
// only (measured < 3e-16).
inline constexpr double kF64LossBound = 1e-12;
// f64 AdamW: the same through 5 steps of sqrt and division (measured < 5e-16).
inline constexpr double kF64AdamLossBound = 1e-10;

struct Bounds {
  double tensor_forward, tensor_gradient, loss, adam_loss;
};
inline const Bounds kF32{kForwardBound, kGradientBound, kLossBound, kAdamLossBound};
inline const Bounds kF64{kF64TensorBound, kF64TensorBound, kF64LossBound, kF64AdamLossBound};

inline bool verbose() { return std::getenv("ORDO_GOLDEN_VERBOSE") != nullptr; }

class Golden {
 public:
  explicit Golden(const std::string& file) : path_(kTwinDir + "/" + file) {
    for (auto& [name, t] : safetensors::load(path_)) tensors_.emplace(name, t);
  }
  const Tensor& operator[](const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) FAIL("golden file " << path_ << " has no tensor '" << name << "'");
    return it->second;
  }
  bool has(const std::string& name) const { return tensors_.count(name) > 0; }
  // How many tensors' names begin with `prefix` ("grad.": the gradients).
  int64_t count(const std::string& prefix) const {
    int64_t n = 0;
    for (const auto& entry : tensors_) n += entry.first.rfind(prefix, 0) == 0;
    return n;
  }

 private:
  std::string path_;
  std::map<std::string, Tensor> tensors_;
};

// Records per-tensor errors, checks each against its bound and keeps the worst.
class Comparison {
 public:
  explicit Comparison(std::string label) : label_(std::move(label)) {}
  void check(const std::string& name, const Tensor& actual, const Tensor& golden, double bound) {
    INFO(label_ << ": " << name);
    REQUIRE(actual.shape() == golden.shape());
    double e = relative_error(actual, golden);
    if (verbose()) std::printf("  %-58s %.3e  (bound %.0e)\n", name.c_str(), e, bound);
    CHECK(e <= bound);
    if (e > worst_) worst_ = e, worst_name_ = name;
  }
  void scalar(const std::string& name, double actual, double golden, double bound) {
    INFO(label_ << ": " << name << " = " << actual << ", golden " << golden);
    double e = std::fabs(actual - golden) / std::fabs(golden);
    if (verbose()) std::printf("  %-58s %.3e  (bound %.0e)\n", name.c_str(), e, bound);
    CHECK(e <= bound);
  }
  // An error already computed, against its bound.
  void scalar_bound(const std::string& name, double error, double bound) {
    INFO(label_ << ": " << name);
    if (verbose()) std::printf("  %-58s %.3e  (bound %.0e)\n", name.c_str(), error, bound);
    CHECK(error <= bound);
    if (error > worst_) worst_ = error, worst_name_ = name;
  }
  ~Comparison() {
    if (verbose()) std::printf("%s: worst tensor %s, %.3e\n", label_.c_str(), worst_name_.c_str(), worst_);
  }

 private:
  std::string label_;
  double worst_ = 0;
  std::string worst_name_;
};


// The twin's AdamW: lr 1e-3 constant, betas (0.9, 0.999), eps 1e-6, weight
// decay 0.01 except on biases and LayerNorm weights, clipping at norm 1.
inline nn::AdamWConfig twin_adamw() {
  nn::AdamWConfig c;
  c.lr = 1e-3;
  c.beta1 = 0.9;
  c.beta2 = 0.999;
  c.eps = 1e-6;
  c.weight_decay = 0.01;
  c.max_grad_norm = 1.0;
  c.warmup_steps = 0;
  c.total_steps = 0;
  return c;
}

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Every parameter's gradient (after a backward) against the golden grad.<name>,
// then cleared; every parameter has one and every golden gradient a parameter.
// `zero` names parameters whose true gradient is 0 for a reason of the model's
// algebra (the caller says why): both sides then hold rounding noise, checked
// against the largest golden gradient of all instead of relatively.
inline void check_gradients(const std::vector<nn::NamedParameter>& params, const Golden& g, double bound,
                            Comparison& cmp, const std::vector<std::string>& zero = {}) {
  CHECK(g.count("grad.") == static_cast<int64_t>(params.size()));
  double largest = 0;
  for (const auto& [name, p] : params) largest = std::max(largest, max(abs(g["grad." + name])).item());
  for (const auto& [name, p] : params) {
    INFO("parameter " << name);
    REQUIRE(p->var.grad().defined());
    if (std::find(zero.begin(), zero.end(), name) != zero.end()) {
      INFO("golden max |grad| " << max(abs(g["grad." + name])).item() << ", largest " << largest);
      CHECK(max(abs(g["grad." + name])).item() <= 1e-12 * largest);  // the twin's f64 zero
      const double noise = max(abs(p->var.grad().to(DType::f64))).item() / largest;
      cmp.scalar_bound("grad." + name + " (zero; / largest)", noise, bound);
    } else if (ends_with(name, "attention.self.key.bias")) {
      // The key bias has no effect on attention: q_i . (k_j + b) = q_i . k_j + q_i . b
      // adds the same q_i . b to every score of row i, which the softmax
      // cancels. Its true gradient is 0 and both sides hold rounding noise,
      // so relative error means nothing; the noise is measured against the
      // scale of the same layer's key.weight gradient instead.
      const std::string weight = name.substr(0, name.size() - 4) + "weight";
      const double scale = max(abs(g["grad." + weight])).item();
      INFO("golden max |grad| " << max(abs(g["grad." + name])).item() << ", key.weight's " << scale);
      CHECK(max(abs(g["grad." + name])).item() <= 1e-12 * scale);  // the twin's f64 zero
      const double noise = max(abs(p->var.grad().to(DType::f64))).item() / scale;
      cmp.scalar_bound("grad." + name + " (zero; / key.weight's)", noise, bound);
    } else {
      cmp.check("grad." + name, p->var.grad(), g["grad." + name], bound);
    }
    p->var.zero_grad();
  }
}

// The twin's five AdamW steps on its batch: loss(step) is the training loss
// at `step` (1..6; the sixth is the loss after the fifth update), against the
// golden adamw_losses and the pre-clipping adamw_grad_norms. The twin's
// no-decay rule is by name (biases, LayerNorm weights); ordo's is
// Parameter::decay: they must agree.
inline void check_adamw(const std::vector<nn::NamedParameter>& params, const Golden& g, double bound,
                        Comparison& cmp, const std::function<Var(int64_t step)>& loss) {
  for (const auto& [name, p] : params) {
    INFO("parameter " << name);
    CHECK(p->decay == !(ends_with(name, "bias") || ends_with(name, "LayerNorm.weight")));
  }
  nn::AdamW adamw(params, twin_adamw());
  const std::vector<double> golden_losses = g["adamw_losses"].to_doubles();
  const std::vector<double> golden_norms = g["adamw_grad_norms"].to_doubles();
  REQUIRE(golden_losses.size() == 6);
  for (int64_t step = 1; step <= 6; ++step) {
    Var l = loss(step);
    const std::string s = std::to_string(step);
    cmp.scalar("adamw loss " + s, l.value().item(), golden_losses[step - 1], bound);
    if (step == 6) break;  // the loss after the fifth update
    l.backward();
    nn::AdamW::StepInfo info = adamw.step();
    cmp.scalar("adamw grad norm " + s, info.grad_norm, golden_norms[step - 1], bound);
    CHECK(info.clip_scale < 1);  // the twin's norms are all above 1: clipping is exercised
  }
}

}  // namespace ordo::test
