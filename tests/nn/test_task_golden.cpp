// Layer 3 for the fine-tuning heads: ordo's SequenceClassifier and
// SpanExtractor, loaded from the checkpoints HuggingFace's
// BertForSequenceClassification and BertForQuestionAnswering wrote
// (tests/twin/task_twin.py), against their logits, loss, every gradient and
// five AdamW steps on the twin's batch, in f32 and f64 (bounds: golden.h).
#include "model/model.h"
#include "nn/checkpoint.h"
#include "nn/task_heads.h"
#include "tests/nn/golden.h"

using namespace ordo;
using namespace ordo::test;

namespace {

nn::BertInputs inputs_of(const Golden& g) {
  nn::BertInputs in;
  in.input_ids = g["input_ids"];
  in.segment_ids = g["segment_ids"];
  in.attention_mask = g["attention_mask"];
  return in;
}

void classifier_golden(DType dtype, const Bounds& bounds) {
  const Golden g("golden_seq_cls.safetensors");
  nn::LoadReport report;
  auto model = model::load_classifier(kTwinDir + "/seq_cls", 3, Device::cpu(), /*seed=*/1, &report);
  CHECK(report.missing.empty());  // the classifier is HF's, read from the file
  if (dtype != DType::f32) model->to_dtype(dtype);
  Comparison cmp(std::string("seq_cls") + (dtype == DType::f64 ? " (f64)" : " (f32)"));
  const nn::BertInputs in = inputs_of(g);
  nn::Context ctx = nn::Context::train(1, 0);  // dropout is 0: the training path
  Var logits = model->forward(in, ctx);
  cmp.check("logits", logits.value(), g["logits"], bounds.tensor_forward);
  Var loss = model->loss(logits, g["labels"]);
  cmp.scalar("loss", loss.value().item(), g["loss"].item(), bounds.loss);
  loss.backward();
  const auto params = model->named_parameters();
  check_gradients(params, g, bounds.tensor_gradient, cmp);
  check_adamw(params, g, bounds.adam_loss, cmp, [&](int64_t step) {
    nn::Context c = nn::Context::train(1, step);
    return model->loss(model->forward(in, c), g["labels"]);
  });
}

void span_golden(DType dtype, const Bounds& bounds) {
  const Golden g("golden_qa.safetensors");
  nn::LoadReport report;
  auto model = model::load_span_extractor(kTwinDir + "/qa", Device::cpu(), /*seed=*/1, &report);
  CHECK(report.missing.empty());
  if (dtype != DType::f32) model->to_dtype(dtype);
  Comparison cmp(std::string("qa") + (dtype == DType::f64 ? " (f64)" : " (f32)"));
  const nn::BertInputs in = inputs_of(g);
  nn::Context ctx = nn::Context::train(1, 0);
  nn::SpanLogits logits = model->forward(in, ctx);
  cmp.check("start_logits", logits.start.value(), g["start_logits"], bounds.tensor_forward);
  cmp.check("end_logits", logits.end.value(), g["end_logits"], bounds.tensor_forward);
  // Row 2's start (40) lies past the window: clamped to L and ignored, as HF does.
  REQUIRE(g["start_positions"].to_vector<int64_t>()[2] > in.input_ids.size(1));
  Var loss = model->loss(logits, g["start_positions"], g["end_positions"]);
  cmp.scalar("loss", loss.value().item(), g["loss"].item(), bounds.loss);
  loss.backward();
  const auto params = model->named_parameters();
  // Zero by the algebra of a softmax over positions: a row's d loss / d logits
  // (softmax - one-hot) sums to 0 over the positions, and an ignored row
  // contributes nothing, so the bias added to every position's logit, and the
  // last LayerNorm's bias (which reaches every position's logit through the
  // same qa_outputs weights), have gradient 0.
  check_gradients(params, g, bounds.tensor_gradient, cmp,
                  {"qa_outputs.bias", "bert.encoder.layer.1.output.LayerNorm.bias"});
  check_adamw(params, g, bounds.adam_loss, cmp, [&](int64_t step) {
    nn::Context c = nn::Context::train(1, step);
    return model->loss(model->forward(in, c), g["start_positions"], g["end_positions"]);
  });
}

}  // namespace

TEST_CASE("SequenceClassifier matches HuggingFace's BertForSequenceClassification (f32)", "[golden][finetune]") {
  classifier_golden(DType::f32, kF32);
}
TEST_CASE("SequenceClassifier in f64 matches the golden values to their f32 rounding", "[golden][finetune]") {
  classifier_golden(DType::f64, kF64);
}
TEST_CASE("SpanExtractor matches HuggingFace's BertForQuestionAnswering (f32)", "[golden][finetune]") {
  span_golden(DType::f32, kF32);
}
TEST_CASE("SpanExtractor in f64 matches the golden values to their f32 rounding", "[golden][finetune]") {
  span_golden(DType::f64, kF64);
}
