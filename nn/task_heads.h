// The fine-tuning models on top of BertModel, named as HuggingFace's, so that
// their checkpoints move both ways:
//
//   BertForSequenceClassification ("bert" with its pooler, "classifier"):
//     logits = classifier(dropout(pooler(h)))                       [batch, num_labels]
//     loss   = cross-entropy over the classes, or, with num_labels = 1
//              (regression: STS-B), the mean squared error against the score.
//     The dropout is hidden_dropout_prob (HF's classifier_dropout unset).
//     On a causal decoder (config.decoder; HF's BertLMHeadModel has no pooler)
//     h is instead the hidden state of each row's last real token, the one
//     that has seen the whole input, as GPT2ForSequenceClassification reads it:
//       logits = classifier(dropout(h_last))
//
//   BertForQuestionAnswering ("bert" without a pooler, "qa_outputs"):
//     (start, end) = qa_outputs(h) split on its last axis          [batch, L] each
//     loss = (CE(start, s) + CE(end, e)) / 2, the gold positions clamped to
//            [0, L] and L ignored (HF's rule for a position past the window);
//            SQuAD v2.0's "no answer" is position 0, the [CLS] token.
//     Padding positions are scored like any other, as HF does. On a causal
//     decoder each token's logits see the tokens before it only (the question
//     comes first, so every context token has seen it).
#pragma once

#include <memory>

#include "nn/bert.h"

namespace ordo::nn {

class SequenceClassifier : public Module {
 public:
  SequenceClassifier(const BertConfig& config, std::unique_ptr<PositionEncoding> pe, Device device, int num_labels);
  Var forward(const BertInputs& inputs, Context& ctx) const;  // [batch, num_labels]
  // labels: i64 [batch] class ids, or (num_labels = 1) the gold scores [batch] in any float dtype.
  Var loss(const Var& logits, const Tensor& labels) const;
  bool regression() const { return num_labels == 1; }

  BertModel& bert;
  Linear& classifier;
  const int num_labels;
};

struct SpanLogits {
  Var start, end;  // [batch, L]
};

class SpanExtractor : public Module {
 public:
  SpanExtractor(const BertConfig& config, std::unique_ptr<PositionEncoding> pe, Device device);
  SpanLogits forward(const BertInputs& inputs, Context& ctx) const;
  // start/end positions: i64 [batch], token indices into the window.
  Var loss(const SpanLogits& logits, const Tensor& start_positions, const Tensor& end_positions) const;

  BertModel& bert;
  Linear& qa_outputs;
};

}  // namespace ordo::nn
