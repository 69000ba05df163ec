#include "nn/bert.h"

#include <limits>

namespace ordo::nn {

// ---- attention ---------------------------------------------------------------------

SelfAttention::SelfAttention(const BertConfig& c, Device device)
    : query(add_module("query", std::make_unique<Linear>(c.hidden_size, c.hidden_size, c.initializer_range, device))),
      key(add_module("key", std::make_unique<Linear>(c.hidden_size, c.hidden_size, c.initializer_range, device))),
      value(add_module("value", std::make_unique<Linear>(c.hidden_size, c.hidden_size, c.initializer_range, device))),
      heads_(c.num_attention_heads),
      head_dim_(c.head_dim()),
      dropout_(c.attention_probs_dropout_prob) {}

Var SelfAttention::forward(const Var& x, const Var& padding_mask, PositionEncoding& pe, int layer,
                           const Tensor& positions, const Tensor& segments, Context& ctx, ForwardTrace* trace) const {
  const int64_t batch = x.size(0), length = x.size(1);
  // [B, L, H*d] -> [B, H, L, d]: a view; matmul reads it without a copy.
  auto heads = [&](const Var& t) { return permute(reshape(t, {batch, length, heads_, head_dim_}), {0, 2, 1, 3}); };
  Var q = heads(query.forward(x)), k = heads(key.forward(x)), v = heads(value.forward(x));

  AttentionState s{layer, heads_, head_dim_, &positions, &segments, &ctx};
  pe.rotate(s, q, k);
  Var scores = pe.contextual_scores(s, q, k);
  scores = scores.defined() ? affine(scores, pe.score_scale(s))
                            : matmul(q, k, false, true, pe.score_scale(s));  // q_i . k_j / sqrt(d)
  Var bias = pe.score_bias(s, q, k);
  if (bias.defined()) scores = add(scores, bias);
  if (trace && trace->keep_scores) trace->scores.push_back(scores.value());
  Var probs = softmax(scores, padding_mask);
  if (trace && trace->keep_attentions) trace->attentions.push_back(probs.value());
  probs = dropout(probs, dropout_, ctx);

  Var context = matmul(probs, v);  // sum_j a_ij v_j
  Var value_term = pe.value_term(s, probs);
  if (value_term.defined()) context = add(context, value_term);
  return reshape(permute(context, {0, 2, 1, 3}), {batch, length, heads_ * head_dim_});
}

ResidualOutput::ResidualOutput(int64_t in, const BertConfig& c, Device device)
    : dense(add_module("dense", std::make_unique<Linear>(in, c.hidden_size, c.initializer_range, device))),
      dropout_(c.hidden_dropout_prob) {
  if (!c.pre_layer_norm) norm = &add_module("LayerNorm", std::make_unique<LayerNorm>(c.hidden_size, c.layer_norm_eps, device));
}

Var ResidualOutput::forward(const Var& h, const Var& residual, Context& ctx) const {
  Var sum = add(dropout(dense.forward(h), dropout_, ctx), residual);
  return norm ? norm->forward(sum) : sum;
}

Attention::Attention(const BertConfig& c, Device device)
    : self(add_module("self", std::make_unique<SelfAttention>(c, device))),
      output(add_module("output", std::make_unique<ResidualOutput>(c.hidden_size, c, device))) {}

Intermediate::Intermediate(const BertConfig& c, Device device)
    : dense(add_module("dense", std::make_unique<Linear>(c.hidden_size, c.intermediate_size, c.initializer_range, device))),
      act_(parse_activation(c.hidden_act)) {}

// ---- layers ------------------------------------------------------------------------

EncoderLayer::EncoderLayer(const BertConfig& c, Device device)
    : attention(add_module("attention", std::make_unique<Attention>(c, device))),
      intermediate(add_module("intermediate", std::make_unique<Intermediate>(c, device))),
      output(add_module("output", std::make_unique<ResidualOutput>(c.intermediate_size, c, device))),
      pre_ln_(c.pre_layer_norm) {
  if (pre_ln_) {
    attention_norm_ = &add_module("attention_LayerNorm", std::make_unique<LayerNorm>(c.hidden_size, c.layer_norm_eps, device));
    ffn_norm_ = &add_module("output_LayerNorm", std::make_unique<LayerNorm>(c.hidden_size, c.layer_norm_eps, device));
  }
}

Var EncoderLayer::forward(const Var& x, const Var& padding_mask, PositionEncoding& pe, int layer,
                          const Tensor& positions, const Tensor& segments, Context& ctx, ForwardTrace* trace) const {
  Var a_in = pre_ln_ ? attention_norm_->forward(x) : x;
  Var a = attention.self.forward(a_in, padding_mask, pe, layer, positions, segments, ctx, trace);
  Var h = attention.output.forward(a, x, ctx);
  Var f_in = pre_ln_ ? ffn_norm_->forward(h) : h;
  return output.forward(intermediate.forward(f_in), h, ctx);
}

Embeddings::Embeddings(const BertConfig& c, Device device)
    : word_embeddings(add_module("word_embeddings", std::make_unique<Embedding>(c.vocab_size, c.hidden_size,
                                                                               c.initializer_range, device, c.pad_token_id))),
      token_type_embeddings(add_module("token_type_embeddings",
                                       std::make_unique<Embedding>(c.type_vocab_size, c.hidden_size, c.initializer_range, device))),
      norm(add_module("LayerNorm", std::make_unique<LayerNorm>(c.hidden_size, c.layer_norm_eps, device))) {}

Encoder::Encoder(const BertConfig& c, Device device) {
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    layers.push_back(&add_module("layer." + std::to_string(l), std::make_unique<EncoderLayer>(c, device)));
}

Pooler::Pooler(const BertConfig& c, Device device)
    : dense(add_module("dense", std::make_unique<Linear>(c.hidden_size, c.hidden_size, c.initializer_range, device))) {}

Var Pooler::forward(const Var& sequence) const { return tanh(dense.forward(select(sequence, 1, 0))); }

// ---- the model -----------------------------------------------------------------------

BertModel::BertModel(const BertConfig& config, std::unique_ptr<PositionEncoding> pe, Device device, bool with_pooler)
    : embeddings(add_module("embeddings", std::make_unique<Embeddings>(config, device))),
      encoder(add_module("encoder", std::make_unique<Encoder>(config, device))),
      config_(config),
      device_(device) {
  validate(config, "model config");
  ORDO_CHECK(pe != nullptr, "BertModel: no position encoding given");
  if (with_pooler) pooler = &add_module("pooler", std::make_unique<Pooler>(config, device));
  if (config.pre_layer_norm)
    final_norm = &add_module("encoder.final_LayerNorm", std::make_unique<LayerNorm>(config.hidden_size, config.layer_norm_eps, device));
  std::string path = pe->module_path();
  pe_ = &add_module(path, std::move(pe));
}

Var BertModel::forward(const BertInputs& in, Context& ctx, ForwardTrace* trace) const {
  check_dtype(in.input_ids, DType::i64, "BertModel", "input_ids");
  check_dim(in.input_ids, 2, "BertModel", "input_ids");
  const int64_t batch = in.input_ids.size(0), length = in.input_ids.size(1);
  const Shape shape{batch, length};
  for (const Tensor* t : {&in.segment_ids, &in.positions, &in.attention_mask}) {
    if (!t->defined()) continue;
    check_shape(*t, shape, "BertModel", "segment_ids/positions/attention_mask");
    check_dtype(*t, DType::i64, "BertModel", "segment_ids/positions/attention_mask");
  }
  ORDO_CHECK(in.input_ids.device() == device_, "BertModel: inputs are on ", in.input_ids.device().str(),
             ", the model on ", device_.str());
  Tensor positions = in.positions.defined() ? in.positions : default_positions(batch, length, device_);
  Tensor segments = in.segment_ids.defined() ? in.segment_ids : Tensor::zeros(shape, DType::i64, device_);

  // HF's order of the sums: (word + token type) + position.
  Var x = add(embeddings.word_embeddings.forward(in.input_ids), embeddings.token_type_embeddings.forward(segments));
  Var position_vectors = pe_->input_embedding(positions, ctx);
  if (position_vectors.defined()) x = add(x, position_vectors);
  x = dropout(embeddings.norm.forward(x), config_.hidden_dropout_prob, ctx);
  if (trace && trace->keep_hidden_states) trace->hidden_states.push_back(x.value());

  Var mask(attention_bias(in.attention_mask, batch, length, config_.decoder, x.dtype(), device_));
  for (size_t l = 0; l < encoder.layers.size(); ++l) {
    x = encoder.layers[l]->forward(x, mask, *pe_, static_cast<int>(l), positions, segments, ctx, trace);
    if (trace && trace->keep_hidden_states) trace->hidden_states.push_back(x.value());
  }
  return final_norm ? final_norm->forward(x) : x;
}

Tensor default_positions(int64_t batch, int64_t length, Device device) {
  return Tensor::arange(length, DType::i64).unsqueeze(0).expand({batch, length}).contiguous().to(device);
}

Tensor attention_bias(const Tensor& attention_mask, int64_t batch, int64_t length, bool causal, DType dtype,
                      Device device) {
  const double lowest = std::numeric_limits<float>::lowest();
  Tensor bias;
  if (attention_mask.defined()) {
    // (1 - mask) * lowest: 0 for real tokens, lowest for padding; [B, 1, 1, L].
    bias = affine(attention_mask.to(dtype), -lowest, lowest).reshape({batch, 1, 1, length});
  } else {
    bias = Tensor::zeros({batch, 1, 1, length}, dtype, device);
  }
  if (!causal) return bias;
  // Key j after query i is hidden: lowest where j > i.
  std::vector<float> future(static_cast<size_t>(length * length), 0.0f);
  for (int64_t i = 0; i < length; ++i)
    for (int64_t j = i + 1; j < length; ++j) future[i * length + j] = static_cast<float>(lowest);
  Tensor causal_bias = Tensor::from_vector(future, {1, 1, length, length}, device).to(dtype);
  // Adding two lowest values would overflow to -inf: take the minimum instead.
  return minimum(bias, causal_bias);
}

}  // namespace ordo::nn
