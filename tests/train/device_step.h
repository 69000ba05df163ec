// One training step of a tiny pretraining model — the pretraining loop's own
// pieces: model::build_model (initial weights from Philox), nn::Context::train
// (dropout masks from Philox), PretrainingModel::forward, AdamW with clipping
// — run on a chosen device, so that the CUDA path can be compared with the
// CPU path from the same seed. Used by the [cuda] step comparisons.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/model.h"
#include "nn/optim.h"
#include "tests/helpers.h"

namespace ordo::test {

// The key bias adds q.b to every score of a softmax row, which the softmax
// cancels: its gradient is zero in exact arithmetic, and what both devices
// compute is rounding noise of the terms that cancel. It has no scale of its
// own to be relative to, so it is bounded against the whole gradient's norm.
inline bool gradient_is_exactly_zero(const std::string& name) {
  const std::string suffix = "attention.self.key.bias";
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The tiny model of the comparisons: sizes odd where they can be (the
// length, the vocabulary), BertConfig's dropout kept so that the masks are
// compared too.
inline nn::BertConfig step_config(const std::string& pe, const std::string& options_json = "{}",
                                  const std::string& segment = "input", bool decoder = false) {
  nn::BertConfig c = tiny_bert_config(/*vocab*/ 53, /*hidden*/ 32, /*layers*/ 2, /*heads*/ 2, /*intermediate*/ 48,
                                      /*max positions*/ 24, /*dropout*/ true);
  c.pe = pe;
  c.pe_options = json::parse(options_json);
  c.segment = segment;
  c.decoder = decoder;
  return c;
}

// A batch of 2 sequences of length 13 drawn from std::mt19937_64: the second
// row ends in 4 [PAD]s, a few tokens of each row are predicted (MLM), or
// every real next token (causal), with NSP labels when asked.
struct StepBatch {
  nn::BertInputs inputs;
  Tensor labels, nsp_labels;
};

inline StepBatch step_batch(const nn::BertConfig& c, bool nsp) {
  const int64_t B = 2, L = 13, padded = 4;
  std::vector<double> u = random_values(3 * B * L, 77, 0, 1);
  std::vector<int64_t> ids, segments, positions, mask, labels;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i) {
      const size_t k = static_cast<size_t>(b * L + i);
      const bool real = b == 0 || i < L - padded;
      ids.push_back(real ? 1 + static_cast<int64_t>(u[k] * static_cast<double>(c.vocab_size - 1)) : 0);
      segments.push_back(i < L / 2 ? 0 : 1);
      positions.push_back(i);
      mask.push_back(real ? 1 : 0);
      const bool predicted = real && (c.decoder ? i + 1 < L : u[B * L + k] < 0.35);
      labels.push_back(predicted ? static_cast<int64_t>(u[2 * B * L + k] * static_cast<double>(c.vocab_size)) : -100);
    }
  const Shape shape{B, L};
  StepBatch s;
  s.inputs.input_ids = Tensor::from_vector(ids, shape);
  s.inputs.segment_ids = Tensor::from_vector(segments, shape);
  s.inputs.positions = Tensor::from_vector(positions, shape);
  s.inputs.attention_mask = Tensor::from_vector(mask, shape);
  s.labels = Tensor::from_vector(labels, shape);
  if (nsp) s.nsp_labels = Tensor::from_vector(std::vector<int64_t>{1, 0}, {B});
  return s;
}

inline StepBatch to_device(const StepBatch& b, Device device) {
  StepBatch d;
  d.inputs.input_ids = b.inputs.input_ids.to(device);
  d.inputs.segment_ids = b.inputs.segment_ids.to(device);
  d.inputs.positions = b.inputs.positions.to(device);
  d.inputs.attention_mask = b.inputs.attention_mask.to(device);
  d.labels = b.labels.to(device);
  if (b.nsp_labels.defined()) d.nsp_labels = b.nsp_labels.to(device);
  return d;
}

// The AdamW of the comparisons: clipping that acts (the tiny model's first
// gradient norm is well above 0.05), weight decay on.
inline nn::AdamWConfig step_optimizer() {
  nn::AdamWConfig o;
  o.lr = 1e-3;
  o.max_grad_norm = 0.05;
  o.weight_decay = 0.01;
  return o;
}

// What one step gives, every tensor on the host, parameters in
// named_parameters() order.
struct StepOutcome {
  double loss = 0;
  nn::AdamW::StepInfo info;
  std::vector<std::string> names;
  std::vector<Tensor> grads;    // before clipping
  std::vector<Tensor> updated;  // the parameters after AdamW
};

// Step 1 of a run from seed 5 on `device`: forward in training mode (dropout
// on), backward, then AdamW. `ablate` is an inference-time ablation applied
// through the context; `fused` = false runs the unfused reference ops;
// `precision`: the products' (nn::Context::precision).
inline StepOutcome training_step(const nn::BertConfig& c, bool nsp, Device device,
                                 nn::Ablation ablate = nn::Ablation::none, bool fused = true,
                                 MatmulPrecision precision = MatmulPrecision::fp32) {
  auto model = model::build_model(c, device, nsp, 5);
  nn::AdamW opt(model->named_parameters(), step_optimizer());
  const StepBatch b = to_device(step_batch(c, nsp), device);
  nn::Context ctx = nn::Context::train(9, 1);
  ctx.ablate = ablate;
  ctx.fused = fused;
  ctx.precision = precision;
  nn::PretrainingOutput out = model->forward(b.inputs, b.labels, b.nsp_labels, ctx);
  out.loss.backward();
  StepOutcome r;
  r.loss = out.loss.value().item();
  for (auto& [name, p] : model->named_parameters()) {
    r.names.push_back(name);
    r.grads.push_back(p->var.grad().defined() ? p->var.grad().to(Device::cpu()) : Tensor());
  }
  r.info = opt.step();
  for (auto& [name, p] : model->named_parameters()) r.updated.push_back(p->var.value().to(Device::cpu()));
  return r;
}

}  // namespace ordo::test
