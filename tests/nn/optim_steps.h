// A tiny model trained for a few AdamW steps with clipping, from the same
// weights and batch on any device: what the optimizer tests compare.
#pragma once

#include <vector>

#include "model/model.h"
#include "nn/optim.h"
#include "tests/helpers.h"

namespace ordo::test {

// `steps` steps of the tiny model (clipping acting every step); read_norm
// as AdamW::step takes it; fused = false: AdamW's per-tensor reference
// path; precision: the forwards' products (nn::Context::precision);
// keep_rounding: AdamW keeps the weights' bf16 rounding and each forward
// takes it (AdamW::keep_weights_rounding; under bf16 products).
struct TinyTraining {
  std::vector<Tensor> losses;  // each step's, on the device: read after the steps
  std::vector<Tensor> params;  // on the host
  RoundedWeights kept;         // AdamW's kept rounding (undefined without keep_rounding)
};
inline TinyTraining train_tiny(Device device, int steps, bool read_norm, bool fused, bool keep_rounding = false,
                               MatmulPrecision precision = MatmulPrecision::fp32) {
  nn::BertConfig c = tiny_bert_config(50, 16, 2, 2, 32, 16);
  auto model = model::build_model(c, device, false, 7);
  nn::AdamWConfig ac;
  ac.lr = 1e-2;
  ac.max_grad_norm = 0.05;  // well below the gradients' norm: clipping acts every step
  ac.fused = fused;
  nn::AdamW opt(model->named_parameters(), ac);
  if (keep_rounding) opt.keep_weights_rounding();
  std::vector<int64_t> ids, labels;
  for (int64_t i = 0; i < 2 * 9; ++i) {
    ids.push_back(5 + (i * 7) % 40);
    labels.push_back(i % 3 == 0 ? ids.back() : -100);
  }
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(ids, {2, 9}, device);
  Tensor host_labels = Tensor::from_vector(labels, {2, 9});
  TinyTraining out;
  for (int s = 0; s < steps; ++s) {
    nn::Context ctx = nn::Context::train(1, s);
    ctx.precision = precision;
    ctx.rounded_weights = opt.rounded_weights();
    const Var loss = model->forward(in, host_labels, Tensor(), ctx).loss;
    out.losses.push_back(loss.value());
    loss.backward();
    opt.step(read_norm);
  }
  for (const auto& [name, p] : model->named_parameters()) out.params.push_back(p->var.value().to(Device::cpu()));
  out.kept = opt.rounded_weights();
  return out;
}

// The parameters (on the host) after `steps` steps on `device`.
inline std::vector<Tensor> parameters_after_steps(Device device, bool read_norm, int steps, bool fused = true) {
  return train_tiny(device, steps, read_norm, fused).params;
}

}  // namespace ordo::test
