#include "nn/task_heads.h"

#include <algorithm>

#include "autograd/ops.h"

namespace ordo::nn {

SequenceClassifier::SequenceClassifier(const BertConfig& config, std::unique_ptr<PositionEncoding> pe, Device device,
                                       int num_labels)
    : bert(add_module("bert", std::make_unique<BertModel>(config, std::move(pe), device,
                                                          /*with_pooler=*/!config.decoder))),
      // GPT-2's (GPT2ForSequenceClassification's score) has no bias.
      classifier(add_module("classifier", std::make_unique<Linear>(config.hidden_size, num_labels,
                                                                   config.initializer_range, device,
                                                                   /*bias=*/config.model_type != "gpt2"))),
      num_labels(num_labels) {
  ORDO_CHECK(num_labels >= 1, "a sequence classifier needs at least 1 label (1: regression), got ", num_labels);
}

namespace {

// The hidden state of each row's last real token [batch, H]: under a causal
// mask the only one that has seen the whole input. Padding may sit anywhere
// after it; a row without a real token is refused.
Var last_real_token(const Var& hidden, const Tensor& attention_mask) {
  const int64_t batch = hidden.size(0), length = hidden.size(1), width = hidden.size(2);
  std::vector<int64_t> rows(static_cast<size_t>(batch), length - 1);
  if (attention_mask.defined()) {
    const std::vector<double> mask = attention_mask.to_doubles();
    for (int64_t b = 0; b < batch; ++b) {
      int64_t last = length - 1;
      while (last >= 0 && mask[static_cast<size_t>(b * length + last)] == 0) --last;
      ORDO_CHECK(last >= 0, "SequenceClassifier: row ", b, " of the batch has no real token");
      rows[static_cast<size_t>(b)] = last;
    }
  }
  for (int64_t b = 0; b < batch; ++b) rows[static_cast<size_t>(b)] += b * length;
  return index_select(reshape(hidden, {batch * length, width}), 0,
                      Tensor::from_vector(rows, {batch}, hidden.device()));
}

}  // namespace

Var SequenceClassifier::forward(const BertInputs& inputs, Context& ctx) const {
  // The pooler reads [CLS] alone, so the last layer need compute no other
  // row; a decoder reads each row's last real token instead.
  const Var summary = bert.config().decoder ? last_real_token(bert.forward(inputs, ctx), inputs.attention_mask)
                                            : bert.pooler->forward(bert.forward_first_row(inputs, ctx), ctx);
  return classifier.forward(dropout(summary, bert.config().hidden_dropout_prob, ctx), ctx);
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
}

SpanLogits SpanExtractor::forward(const BertInputs& inputs, Context& ctx) const {
  Var logits = qa_outputs.forward(bert.forward(inputs, ctx), ctx);  // [batch, L, 2]
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
