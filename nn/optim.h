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
  // One multi-tensor step: the global norm, the clip factor and every
  // parameter's update in two kernels (tensor/ops.h adamw_multi_). false:
  // the reference path, a norm, a clip and an update per parameter tensor.
  bool fused = true;
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
  // and clipping happens on the device. A non-finite gradient then leaves
  // the parameters as they were (fused) or spoils them (the reference path);
  // the next logged step's norm or loss shows it. On the CPU (no round trips
  // to save) the norm is always read and checked.
  StepInfo step(bool read_norm = true);

  // step() in its parts, for a caller that reads the norm together with
  // other values in one host copy (a logged step's single synchronisation),
  // or that captures the device's part in a CUDA graph:
  //   begin_step   the gradients' global norm and clip factor, [norm, factor]
  //                on their device (undefined when no parameter has a
  //                gradient): kernels only;
  //   check_norm   given the norm read from it (or nothing), the StepInfo's
  //                norm and clip factor; throws naming the first non-finite
  //                gradient;
  //   schedule     counts the step and writes its learning rate (returned)
  //                and bias corrections to the device (a host copy, no kernel);
  //   apply        the update with begin_step's clip factor (the reference
  //                path takes check_norm's when the norm was read), then the
  //                gradients are cleared: kernels only.
  // step() is begin_step, check_norm, schedule, apply.
  Tensor begin_step();
  StepInfo check_norm(const double* norm_read) const;
  double schedule();
  void apply(const Tensor& norm_and_clip, const StepInfo& info);
  int64_t steps_taken() const { return step_; }
  // Drops every parameter's gradient (as apply does after its update).
  void clear_gradients();

  // The state a resume needs: the step count and both moments of every
  // parameter ("<name>.exp_avg", "<name>.exp_avg_sq", PyTorch's names).
  std::vector<std::pair<std::string, Tensor>> state_tensors() const;
  void load_state(int64_t steps_taken, const std::vector<std::pair<std::string, Tensor>>& tensors);

  // Keeps a bf16 rounding of the packed product weights (the block
  // pack_product_weights made that holds the first parameter with
  // Parameter::product_weight; a model packs its own weights, then a model
  // on top of it all of them) that every update keeps current: made here by
  // a cast, then written with the weights (the fused update in its own
  // kernel, the reference path by a cast after its updates). A forward under bf16
  // products given it (Context::rounded_weights) takes it instead of
  // rounding the weights itself: a cast of them every step saved. It is
  // current while nothing but this optimizer writes the weights, as in the
  // training loops (which load checkpoints before it is kept). Returns
  // false, keeping nothing, when there is no f32 product weight.
  bool keep_weights_rounding();
  const RoundedWeights& rounded_weights() const { return rounded_; }

  const AdamWConfig& config() const { return config_; }
  const std::vector<NamedParameter>& parameters() const { return params_; }

 private:
  // Throws naming the first parameter with a non-finite gradient when
  // grad_norm is not finite.
  void check_finite(double grad_norm) const;
  // The multi-tensor tables for the parameters that have a gradient now
  // (rebuilt when that set changes), with this step's gradients.
  AdamWTensors& fused_tensors();
  // The reference path's update of each parameter with a gradient.
  void apply_per_tensor(const Tensor& norm_and_clip, const StepInfo& info);

  std::vector<NamedParameter> params_;
  std::vector<Tensor> m_, v_;
  AdamWConfig config_;
  int64_t step_ = 0;
  double lr_ = 0;           // of the step schedule() counted
  Tensor schedule_;         // [lr, bias corrections] on the parameters' device (fused)
  AdamWTensors fused_;      // built for `with_grad_`
  std::vector<bool> with_grad_;
  RoundedWeights rounded_;  // undefined unless keep_weights_rounding()
};

}  // namespace ordo::nn
