// AdamW (Loshchilov & Hutter 2019) over a model's parameters, with BERT's
// schedule: linear warm-up to the peak learning rate, then linear decay to 0;
// gradient clipping by the global norm; no weight decay on biases and
// LayerNorm parameters (Parameter::decay).
#pragma once

#include <string>
#include <vector>

#include "nn/module.h"
#include "tensor/ops.h"

namespace ordo::nn {

struct AdamWConfig {
  double lr = 1e-4;             // peak learning rate
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-6;  // BERT's eps
  double weight_decay = 0.01;
  double max_grad_norm = 1.0;   // <= 0: no clipping
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;      // linear decay to 0 at this step; 0: constant after warm-up
};

// The learning rate of step `step` (1-based).
double scheduled_lr(const AdamWConfig& c, int64_t step);

class AdamW {
 public:
  AdamW(std::vector<NamedParameter> params, AdamWConfig config);

  struct StepInfo {
    double lr = 0;
    double grad_norm = 0;    // before clipping
    double clip_scale = 1;   // factor applied to the gradients
  };
  // One update from the parameters' accumulated gradients, which are then
  // cleared. Throws ordo::Error naming the step and the first parameter whose
  // gradient is not finite (nothing is updated then).
  //
  // On a device, read_norm = false keeps the step free of host round trips:
  // the norm is neither read nor checked (grad_norm and clip_scale are NaN)
  // and clipping happens on the device; a non-finite gradient then spoils
  // the parameters, which the next loss read shows. On the CPU (no round
  // trips to save) the norm is always read and checked.
  StepInfo step(bool read_norm = true);
  // The two halves of step(true) for a caller that reads the norm together
  // with other values in one host copy (a logged training step's single
  // synchronisation): the sum of the squares of each gradient, [gradients] on
  // their device (undefined when no parameter has a gradient), and the step
  // given the norm read from them (norm_of_sums in tensor/ops.h).
  Tensor gradient_sums_of_squares() const;
  StepInfo step_with_norm(double grad_norm);
  int64_t steps_taken() const { return step_; }

  // The state a resume needs: the step count and both moments of every
  // parameter ("<name>.exp_avg", "<name>.exp_avg_sq", PyTorch's names).
  std::vector<std::pair<std::string, Tensor>> state_tensors() const;
  void load_state(int64_t steps_taken, const std::vector<std::pair<std::string, Tensor>>& tensors);

  const AdamWConfig& config() const { return config_; }
  const std::vector<NamedParameter>& parameters() const { return params_; }

 private:
  // Throws naming the first parameter with a non-finite gradient when
  // grad_norm is not finite.
  void check_finite(double grad_norm) const;
  std::vector<Tensor> gradients() const;
  // Counts the step, sets info.lr and updates every parameter with a gradient
  // (multiplied by grad_scale), clearing the gradients.
  void update(StepInfo& info, double grad_scale);

  std::vector<NamedParameter> params_;
  std::vector<Tensor> m_, v_;
  AdamWConfig config_;
  int64_t step_ = 0;
};

}  // namespace ordo::nn
