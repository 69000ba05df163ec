#include "nn/heads.h"

namespace ordo::nn {

// RoBERTa's head applies the erf GELU whatever hidden_act says (RobertaLMHead: gelu(x)).
MlmHead::MlmHead(const BertConfig& c, Device device)
    : act_(parse_activation(c.model_type == "roberta" ? "gelu" : c.hidden_act)) {
  if (c.lm_head == "transform") {
    transform_dense = &add_module("transform.dense",
                                  std::make_unique<Linear>(c.hidden_size, c.hidden_size, c.initializer_range, device));
    transform_norm = &add_module("transform.LayerNorm", std::make_unique<LayerNorm>(c.hidden_size, c.layer_norm_eps, device));
    bias = &add_parameter("bias", {c.vocab_size}, Init::zeros(), false, device);
  }
  if (!c.tie_word_embeddings)
    decoder = &add_parameter("decoder.weight", {c.vocab_size, c.hidden_size}, Init::normal(c.initializer_range), true, device);
}

Var MlmHead::transform(const Var& hidden, const Context& ctx) const {
  if (!transform_dense) return hidden;
  if (ctx.fused && transform_dense->bias) {  // the bias, activation and LayerNorm in one kernel
    return bias_activation_layernorm(transform_dense->product(hidden, ctx), transform_dense->bias->var,
                                     activation_op(act_), transform_norm->weight.var, transform_norm->bias.var,
                                     transform_norm->eps, ctx.precision);
  }
  return transform_norm->forward(linear_activation(*transform_dense, act_, hidden, ctx, /*as_operand=*/false));
}

Var MlmHead::forward(const Var& hidden, const Var& word_embeddings, const Context& ctx) const {
  const Var h = transform(hidden, ctx);
  const Var& table = this->table(word_embeddings);
  const MatmulPrecision p = ctx.precision;
  if (bias == nullptr) return matmul(h, table, false, true, 1.0, p);
  return ctx.fused ? linear(h, table, bias->var, false, p) : add(matmul(h, table, false, true, 1.0, p), bias->var);
}

Tensor DeferredLogits::value() const { return bias.defined() ? add(product, bias) : product; }

Var MlmHead::loss(const Var& hidden, const Var& word_embeddings, const Tensor& targets, const Context& ctx,
                  DeferredLogits* logits) const {
  if (ctx.fused && bias) {
    if (logits) logits->bias = bias->var.value();
    return linear_cross_entropy(transform(hidden, ctx), table(word_embeddings), bias->var, targets, -100,
                                logits ? &logits->product : nullptr, ctx.precision);
  }
  const Var z = forward(hidden, word_embeddings, ctx);
  if (logits) *logits = DeferredLogits{z.value(), Tensor()};
  return cross_entropy(z, targets);
}

PretrainingModel::PretrainingModel(const BertConfig& config, std::unique_ptr<PositionEncoding> pe, Device device,
                                   bool nsp)
    : bert(add_module("bert", std::make_unique<BertModel>(config, std::move(pe), device, nsp))),
      predictions(add_module("cls.predictions", std::make_unique<MlmHead>(config, device))) {
  ORDO_CHECK(!(nsp && config.decoder), "next-sentence prediction needs an encoder, not a decoder");
  if (nsp) seq_relationship = &add_module("cls.seq_relationship",
                                          std::make_unique<Linear>(config.hidden_size, 2, config.initializer_range, device));
  // The decoder's table (the tied word embeddings, or its own weight) is a
  // product's operand every forward, as the Linears' weights are.
  Parameter& table = predictions.decoder ? *predictions.decoder : bert.embeddings.word_embeddings.weight;
  table.product_weight = true;
  product_weights_ = pack_product_weights(*this);
}

// The rows that are predicted (label != -100), found on the host: labels
// given on the host cost no round trip to a device, which the training
// loop's batches (made on the host) use; labels on a device are read back.
MlmRows mlm_rows(const Tensor& labels, Device device, int64_t pad_to) {
  check_dtype(labels, DType::i64, "PretrainingModel", "labels");
  std::vector<int64_t> flat = labels.to_vector<int64_t>(), rows, targets;
  for (int64_t i = 0; i < labels.numel(); ++i) {
    if (flat[i] != -100) {
      rows.push_back(i);
      targets.push_back(flat[i]);
    }
  }
  ORDO_CHECK(pad_to == 0 || static_cast<int64_t>(rows.size()) <= pad_to, "a batch predicts ", rows.size(),
             " positions, more than the ", pad_to, " its fixed shape holds");
  const bool ascending = pad_to <= labels.numel();
  if (ascending) {
    // The padding takes the first rows nothing predicts, merged into the list in row order.
    std::vector<int64_t> padded_rows, padded_targets;
    size_t next = 0;
    for (int64_t i = 0; i < labels.numel(); ++i) {
      const bool predicted = next < rows.size() && rows[next] == i;
      if (!predicted && static_cast<int64_t>(rows.size() + padded_rows.size() - next) >= pad_to) continue;
      padded_rows.push_back(i);
      padded_targets.push_back(predicted ? targets[next++] : -100);
    }
    rows.swap(padded_rows);
    targets.swap(padded_targets);
  } else {
    rows.resize(static_cast<size_t>(pad_to), 0);
    targets.resize(rows.size(), -100);
  }
  const int64_t count = static_cast<int64_t>(rows.size());
  return {Tensor::from_vector(rows, {count}, device), Tensor::from_vector(targets, {count}, device), ascending};
}

PretrainingOutput PretrainingModel::forward(const BertInputs& inputs, const Tensor& labels, const Tensor& nsp_labels,
                                            Context& ctx, ForwardTrace* trace) const {
  const int64_t batch = inputs.input_ids.size(0), length = inputs.input_ids.size(1);
  check_shape(labels, {batch, length}, "PretrainingModel", "labels");
  return forward(inputs, mlm_rows(labels, bert.device()), nsp_labels, ctx, trace);
}

PretrainingOutput PretrainingModel::forward(const BertInputs& inputs, const MlmRows& predicted,
                                            const Tensor& nsp_labels, Context& ctx, ForwardTrace* trace) const {
  const int64_t batch = inputs.input_ids.size(0), length = inputs.input_ids.size(1);
  check_dtype(predicted.rows, DType::i64, "PretrainingModel", "predicted rows");
  check_shape(predicted.targets, predicted.rows.shape(), "PretrainingModel", "predicted targets");
  const OperandRoundingScope rounded(product_weights_ ? product_weights_->var.value() : Tensor(), ctx.precision,
                                     ctx.rounded_weights);
  Var sequence = bert.forward(inputs, ctx, trace);
  const int64_t hidden = sequence.size(-1);
  PretrainingOutput out;
  out.lm_targets = predicted.targets;
  const Var flat = reshape(sequence, {batch * length, hidden});
  Var picked = predicted.ascending ? select_rows(flat, predicted.rows) : index_select(flat, 0, predicted.rows);
  // The transform's LayerNorm writes its output's rounding beside it for the
  // decoder (no cast of h), whose table was rounded with the other weights.
  out.lm_loss = predictions.loss(picked, bert.embeddings.word_embeddings.weight.var, out.lm_targets, ctx,
                                 &out.lm_logits);
  out.loss = out.lm_loss;
  if (seq_relationship && nsp_labels.defined()) {
    check_shape(nsp_labels, {batch}, "PretrainingModel", "nsp_labels");
    Var nsp_logits = seq_relationship->forward(bert.pooler->forward(sequence, ctx), ctx);
    out.nsp_logits = nsp_logits.value();
    out.nsp_loss = cross_entropy(nsp_logits, nsp_labels);
    out.loss = add(out.loss, out.nsp_loss);
  }
  return out;
}

Var PretrainingModel::all_logits(const BertInputs& inputs, Context& ctx, ForwardTrace* trace) const {
  const OperandRoundingScope rounded(product_weights_ ? product_weights_->var.value() : Tensor(), ctx.precision,
                                     ctx.rounded_weights);
  Var sequence = bert.forward(inputs, ctx, trace);
  return predictions.forward(sequence, bert.embeddings.word_embeddings.weight.var, ctx);
}

void initialize_bert(PretrainingModel& model, uint64_t seed) { initialize_bert(model, model.bert, seed); }

void initialize_bert(Module& model, const BertModel& bert, uint64_t seed) {
  initialize(model, seed);
  const Embedding& words = bert.embeddings.word_embeddings;
  if (words.padding_idx >= 0) words.weight.var.value().select(0, words.padding_idx).fill_(0);
}

}  // namespace ordo::nn
