// A fine-tuning step's forward and backward on CUDA against the CPU from the
// same seed: SequenceClassifier (pooler, dropout, classifier, cross-entropy)
// and SpanExtractor (qa_outputs, start/end cross-entropy with a position past
// the window ignored) on the comparisons' tiny model, for an absolute, a
// relative and a bias position encoding, and a causal decoder (its classifier
// on the last real token of a padded row). Dropout is on: the masks come from
// Philox on both devices. The CPU side is itself checked against HF's golden
// files (tests/nn/test_task_golden.cpp); the bound is the step comparison's
// (tests/train/test_step_cuda.cpp, 4096 u relative to a tensor's largest
// element). Runs where a GPU is, and on the emulated GPU in every make test.
#ifdef ORDO_HAS_CUDA

#include <cmath>
#include <string>
#include <vector>

#include "nn/task_heads.h"
#include "pe/registry.h"
#include "tests/train/device_step.h"

using namespace ordo;
using ordo::test::step_batch;
using ordo::test::step_config;
using ordo::test::to_device;

namespace {

constexpr double kBound = 4096 * 0x1p-24;

struct FinetuneOutcome {
  double loss = 0;
  std::vector<std::string> names;
  std::vector<Tensor> grads;
};

FinetuneOutcome head_step(const nn::BertConfig& c, bool span, Device device) {
  const auto b = to_device(step_batch(c, false), device);
  const Tensor labels = Tensor::from_vector(std::vector<int64_t>{2, 0}, {2});
  const Tensor starts = Tensor::from_vector(std::vector<int64_t>{3, 40}, {2}), ends = Tensor::from_vector(std::vector<int64_t>{5, 1}, {2});
  nn::Context ctx = nn::Context::train(9, 1);
  FinetuneOutcome o;
  std::unique_ptr<nn::Module> owner;
  Var loss;
  if (span) {
    auto m = std::make_unique<nn::SpanExtractor>(c, pe::make_position_encoding(c, device), device);
    nn::initialize_bert(*m, m->bert, 5);
    loss = m->loss(m->forward(b.inputs, ctx), starts, ends);
    owner = std::move(m);
  } else {
    auto m = std::make_unique<nn::SequenceClassifier>(c, pe::make_position_encoding(c, device), device, 3);
    nn::initialize_bert(*m, m->bert, 5);
    loss = m->loss(m->forward(b.inputs, ctx), labels);
    owner = std::move(m);
  }
  loss.backward();
  o.loss = loss.value().item();
  for (auto& [name, p] : owner->named_parameters()) {
    o.names.push_back(name);
    o.grads.push_back(p->var.grad().defined() ? p->var.grad().to(Device::cpu()) : Tensor());
  }
  return o;
}

// Span extraction's softmax runs over the tokens: whatever adds the same
// amount to every token's logit cancels — the qa_outputs bias, and the last
// LayerNorm's bias (W b added to every token). Their gradients are zero in
// exact arithmetic, as the key bias's (device_step.h), and are bounded the same way.
bool gradient_is_exactly_zero(const std::string& name, bool span, int64_t layers) {
  if (ordo::test::gradient_is_exactly_zero(name)) return true;
  return span && (name == "qa_outputs.bias" ||
                  name == "bert.encoder.layer." + std::to_string(layers - 1) + ".output.LayerNorm.bias");
}

double norm(const std::vector<Tensor>& grads) {
  double total = 0;
  for (const Tensor& g : grads)
    if (g.defined()) total += sum(mul(g.to(DType::f64), g.to(DType::f64))).item();
  return std::sqrt(total);
}

}  // namespace

TEST_CASE("fine-tuning heads on CUDA: losses and every gradient match the CPU step", "[cuda][finetune]") {
  struct Case {
    const char* pe;
    bool decoder;
  };
  for (const Case& k : {Case{"ape_learned", false}, Case{"rpe_shaw", false}, Case{"t5_bias", false},
                        Case{"rope", true}}) {
    for (const bool span : {false, true}) {
      INFO("pe " << k.pe << (k.decoder ? " decoder" : "") << (span ? ", span extraction" : ", classification"));
      const nn::BertConfig c = step_config(k.pe, "{}", "input", k.decoder);
      const FinetuneOutcome cpu = head_step(c, span, Device::cpu()), gpu = head_step(c, span, Device::cuda(0));
      CHECK(std::fabs(gpu.loss - cpu.loss) <= kBound * std::fabs(cpu.loss));
      REQUIRE(cpu.names == gpu.names);
      for (size_t i = 0; i < cpu.names.size(); ++i) {
        INFO(cpu.names[i]);
        REQUIRE(cpu.grads[i].defined() == gpu.grads[i].defined());
        if (!cpu.grads[i].defined()) continue;
        if (gradient_is_exactly_zero(cpu.names[i], span, c.num_hidden_layers)) {
          for (const FinetuneOutcome* side : {&cpu, &gpu})
            CHECK(ordo::test::max_abs(side->grads[i]) <= kBound * norm(cpu.grads));
          continue;
        }
        const double scale = max(abs(cpu.grads[i].to(DType::f64))).item();
        const double diff = max(abs(sub(gpu.grads[i].to(DType::f64), cpu.grads[i].to(DType::f64)))).item();
        CHECK(diff <= kBound * scale);
      }
    }
  }
}

#endif
