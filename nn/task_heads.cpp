#include "nn/task_heads.h"

#include <algorithm>

#include "autograd/ops.h"

namespace ordo::nn {

SequenceClassifier::SequenceClassifier(const BertConfig& config, std::unique_ptr<PositionEncoding> pe, Device device,
                                       int num_labels)
    : bert(add_module("bert", std::make_unique<BertModel>(config, std::move(pe), device, /*with_pooler=*/true))),
      classifier(add_module("classifier",
                            std::make_unique<Linear>(config.hidden_size, num_labels, config.initializer_range, device))),
      num_labels(num_labels) {
  ORDO_CHECK(num_labels >= 1, "a sequence classifier needs at least 1 label (1: regression), got ", num_labels);
  ORDO_CHECK(!config.decoder, "sequence classification reads the pooled [CLS] vector of an encoder, not a decoder");
}

Var SequenceClassifier::forward(const BertInputs& inputs, Context& ctx) const {
  Var pooled = bert.pooler->forward(bert.forward(inputs, ctx));
  return classifier.forward(dropout(pooled, bert.config().hidden_dropout_prob, ctx));
}

Var SequenceClassifier::loss(const Var& logits, const Tensor& labels) const {
  const int64_t batch = logits.size(0);
  check_shape(labels, {batch}, "SequenceClassifier", "labels");
  if (!regression()) {
    check_dtype(labels, DType::i64, "SequenceClassifier", "labels");
    return cross_entropy(logits, labels.to(logits.device()));
  }
  // MSE(logits.squeeze(), labels): mean over the batch of (prediction - score)^2.
  Var error = sub(reshape(logits, {batch}), Var(labels.to(logits.device()).to(logits.dtype())));
  return mean(mul(error, error));
}

SpanExtractor::SpanExtractor(const BertConfig& config, std::unique_ptr<PositionEncoding> pe, Device device)
    : bert(add_module("bert", std::make_unique<BertModel>(config, std::move(pe), device, /*with_pooler=*/false))),
      qa_outputs(add_module("qa_outputs", std::make_unique<Linear>(config.hidden_size, 2, config.initializer_range, device))) {
  ORDO_CHECK(!config.decoder, "span extraction reads every token of an encoder, not a decoder");
}

SpanLogits SpanExtractor::forward(const BertInputs& inputs, Context& ctx) const {
  Var logits = qa_outputs.forward(bert.forward(inputs, ctx));  // [batch, L, 2]
  return {select(logits, 2, 0), select(logits, 2, 1)};
}

Var SpanExtractor::loss(const SpanLogits& logits, const Tensor& start_positions, const Tensor& end_positions) const {
  const int64_t batch = logits.start.size(0), length = logits.start.size(1);
  // HF: positions outside the window are clamped to L, which the loss ignores.
  auto clamped = [&](const Tensor& positions, const char* name) {
    check_shape(positions, {batch}, "SpanExtractor", name);
    check_dtype(positions, DType::i64, "SpanExtractor", name);
    std::vector<int64_t> p = positions.to_vector<int64_t>();
    for (int64_t& x : p) x = std::clamp<int64_t>(x, 0, length);
    return Tensor::from_vector(p, {batch}, logits.start.device());
  };
  Var start = cross_entropy(logits.start, clamped(start_positions, "start_positions"), /*ignore_index=*/length);
  Var end = cross_entropy(logits.end, clamped(end_positions, "end_positions"), /*ignore_index=*/length);
  return affine(add(start, end), 0.5);
}

}  // namespace ordo::nn
