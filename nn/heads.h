// The heads on top of BertModel, named as HuggingFace's BertForPreTraining:
//   cls.predictions      the MLM head: transform (dense, act, LayerNorm), then
//                        logits = h E^T + bias with E the word embeddings (tied),
//                        or its own "decoder.weight" (tie_word_embeddings false);
//                        lm_head "linear" (GPT-2): logits = h E^T alone
//   cls.seq_relationship the NSP classifier on the pooled [CLS] vector
// A decoder stack reuses cls.predictions as its causal LM head (next token).
#pragma once

#include <memory>

#include "nn/bert.h"

namespace ordo::nn {

// Logits kept as the product and the bias it takes (undefined: none), added
// only when they are read: a training step never reads the MLM head's logits,
// whose loss adds the bias as it reads each one (linear_cross_entropy). The
// bias is the parameter itself, read by value(): read the logits before an
// optimizer step changes it (evaluation reads them at once).
struct DeferredLogits {
  Tensor product, bias;
  Tensor value() const;  // product + bias
};

class MlmHead : public Module {
 public:
  MlmHead(const BertConfig& c, Device device);
  // hidden [N, hidden] -> logits [N, vocab] against the tied word embeddings
  // (or the head's own decoder weight), the products at ctx.precision;
  // ctx.fused: the transform's bias and activation in one kernel, the
  // logits' bias added by the product (linear) rather than after it.
  Var forward(const Var& hidden, const Var& word_embeddings, const Context& ctx) const;
  // The mean cross-entropy of forward's logits against targets (-100:
  // ignored), the logits into *logits when given. Fused with a bias: the
  // decoder's product and the loss as one node (linear_cross_entropy).
  Var loss(const Var& hidden, const Var& word_embeddings, const Tensor& targets, const Context& ctx,
           DeferredLogits* logits) const;
  // The decoder's table: its own weight, or the tied word embeddings.
  const Var& table(const Var& word_embeddings) const { return decoder ? decoder->var : word_embeddings; }
  Linear* transform_dense = nullptr;     // "transform.dense" (lm_head "transform")
  LayerNorm* transform_norm = nullptr;   // "transform.LayerNorm"
  Parameter* bias = nullptr;             // "bias" (lm_head "transform")
  Parameter* decoder = nullptr;          // "decoder.weight" [vocab, hidden], tie_word_embeddings false

 private:
  // The dense, activation and LayerNorm, or hidden as it is.
  Var transform(const Var& hidden, const Context& ctx) const;

  Activation act_;
};

// The losses and counts of one pretraining forward pass.
struct PretrainingOutput {
  Var loss;           // lm + nsp
  Var lm_loss;        // mean cross-entropy over the predicted tokens
  Var nsp_loss;       // undefined without NSP
  DeferredLogits lm_logits;  // [predicted tokens, vocab], made when read (value())
  Tensor lm_targets;  // [predicted tokens] i64
  Tensor nsp_logits;  // [batch, 2]
};

// The predicted positions of a batch on the model's device: row indices
// into the flattened [batch x length] sequence and their targets, [count]
// each. Padded to `pad_to` entries (target -100: ignored by the loss) for a
// fixed shape, as a replayed CUDA graph needs: with rows no label predicts,
// the list then kept ascending and distinct (`ascending`: the head picks the
// rows with select_rows, whose backward is a scatter); with row 0 repeated
// only when pad_to exceeds the rows there are.
struct MlmRows {
  Tensor rows, targets;
  bool ascending = false;
};
// From labels [B, L] (-100: not predicted) on the host or a device (read back).
MlmRows mlm_rows(const Tensor& labels, Device device, int64_t pad_to = 0);

// BERT with its pretraining heads: MLM (optionally + NSP) for an encoder,
// next-token prediction for a decoder.
class PretrainingModel : public Module {
 public:
  PretrainingModel(const BertConfig& config, std::unique_ptr<PositionEncoding> pe, Device device, bool nsp);
  // labels [B, L] i64 (-100: not predicted), on the host or the model's
  // device (the host saves a device round trip); nsp_labels [B] or undefined.
  // Only the predicted rows go through the vocabulary projection, which
  // gives the same loss as projecting every row.
  PretrainingOutput forward(const BertInputs& inputs, const Tensor& labels, const Tensor& nsp_labels,
                            Context& ctx, ForwardTrace* trace = nullptr) const;
  // The same with the predicted rows already on the device (mlm_rows).
  PretrainingOutput forward(const BertInputs& inputs, const MlmRows& predicted, const Tensor& nsp_labels,
                            Context& ctx, ForwardTrace* trace = nullptr) const;
  // Logits for every position [B, L, vocab] (ordo forward, evaluation).
  Var all_logits(const BertInputs& inputs, Context& ctx, ForwardTrace* trace = nullptr) const;

  BertModel& bert;
  MlmHead& predictions;               // "cls.predictions"
  Linear* seq_relationship = nullptr; // "cls.seq_relationship"

 private:
  // One of the model's product weights — the encoder's, the heads' and the
  // decoder's table — packed together (pack_product_weights): a forward
  // rounds them all to bf16 with one cast (OperandRoundingScope), the
  // encoder's own scope then nested in it. Null when none.
  const Parameter* product_weights_ = nullptr;
};

// Sets every parameter from its Init with Philox(seed) and zeroes the [PAD]
// row of the word embeddings, as HF's _init_weights does.
void initialize_bert(PretrainingModel& model, uint64_t seed);
// The same for any model holding `bert` (the fine-tuning models).
void initialize_bert(Module& model, const BertModel& bert, uint64_t seed);

}  // namespace ordo::nn
