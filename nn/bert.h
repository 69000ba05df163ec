// BERT (Devlin et al. 2019), laid out module by module as HuggingFace's
// BertModel so every parameter carries HF's name, with the position
// encoding behind the seam of nn/position.h.
//
//   embeddings:  x = LayerNorm(word[ids] + token_type[segments] + pe.input_embedding(positions))
//   layer (post-LN, BERT):  a = LayerNorm(x + Dropout(SelfAttention(x) W_o))
//                           y = LayerNorm(a + Dropout(act(a W_1) W_2))
//   layer (pre-LN option):  a = x + Dropout(SelfAttention(LN(x)) W_o);  y = a + Dropout(FFN(LN(a)))
//
// The same stack with a causal mask is the GPT-style decoder of the
// encoder-vs-decoder comparison (Wang & Chen 2020). RoBERTa and GPT-2 are this
// model with options (nn/bert_config.h, nn/hf_layout.h): RoBERTa = BERT with
// one segment and positions from row 2; GPT-2 = pre-LN, causal, no
// embedding LayerNorm, no segments, the LM head h E^T:
//   x = word[ids] + P[positions];  a = x + Attn(LN_1(x));  y = a + FFN(LN_2(a));  out = LN_f(y)
#pragma once

#include <optional>

#include <memory>
#include <string>
#include <vector>

#include "nn/bert_config.h"
#include "nn/layers.h"
#include "nn/position.h"

namespace ordo::nn {

// One batch on the model's device: every tensor [batch, length] i64.
struct BertInputs {
  Tensor input_ids;
  Tensor segment_ids;     // undefined: all 0
  Tensor positions;       // undefined: 0..length-1 in every row
  Tensor attention_mask;  // undefined: every token real; else 1 real / 0 padding
  // The facts of positions and segment_ids, given by whoever made them on the
  // host (the training loop); else BertModel::forward reads them once.
  std::optional<InputFacts> facts;
  // attention_bias(attention_mask, ..., causal false) in the model's dtype on
  // its device, made on the host with the batch (the training loop: one copy
  // in with it, no launch in the step); undefined: the forward makes it. A
  // decoder makes its causal mask in the forward either way.
  Tensor padding_bias;
};

// What a forward pass can hand back besides the last hidden state, for
// auditing (ordo forward) and probing.
struct ForwardTrace {
  // hidden_states[0] = embeddings, [l] = after layer l; in a pre-LN model the
  // last one after the final LayerNorm (HF GPT-2's hidden_states[-1]).
  bool keep_hidden_states = false;
  bool keep_attentions = false;     // attentions[l-1] = layer l's softmax [batch, heads, L, L]
  // scores[l-1] = layer l's pre-softmax scores s_ij [batch, heads, L, L], every
  // score term included, the padding (and causal) mask not added; for the
  // unnormalised pictures of identical word probing (Wang et al. 2021, App. J).
  bool keep_scores = false;
  std::vector<Tensor> hidden_states;
  std::vector<Tensor> attentions;
  std::vector<Tensor> scores;
};

// Heads [B, H, L, d] -> [B, L, H d], the input of a product (the output
// projection): under bf16 products the layout copy writes its bf16 operand.
// from_product: t is matmul_to_operand's output and nothing else reads it;
// then the product that takes the result writes its gradient in bf16.
Var merge_heads(const Var& t, MatmulPrecision precision, bool from_product = false);

// HF "attention.self": the three projections, and the attention itself.
class SelfAttention : public Module {
 public:
  SelfAttention(const BertConfig& c, Device device);
  // x [batch, L, hidden] -> context [batch, L, hidden]; with first_row_only
  // the queries of row 0 alone, [batch, 1, hidden], for an encoding that puts
  // nothing in the attention (the caller's condition).
  Var forward(const Var& x, const Var& padding_mask, PositionEncoding& pe, int layer,
              const Tensor& positions, const Tensor& segments, Context& ctx, ForwardTrace* trace,
              bool first_row_only = false) const;
  Linear& query;
  Linear& key;
  Linear& value;

 private:
  struct Heads {
    Var q, k, v;  // [batch, heads, L, head_dim]
  };
  // fused: one product for the three (linear_stacked), which needs q, k and v
  // all to get a gradient (an ablation may leave q and k out: it projects
  // them one by one, so that their weights get none, as unfused).
  // to_products (with fused): q, k and v feed the attention's products and
  // nothing else, so they are made as the products take them (split_heads:
  // the biases added, the heads laid out and rounded in one pass).
  Heads project(const Var& input, const Context& ctx, bool fused, bool to_products = false) const;
  // forward()'s attention as the fused op (see fused_attention_enabled below).
  Var fused_attention(const Heads& h, const Var& padding_mask, PositionEncoding& pe, const AttentionState& s) const;
  // softmax_j(scores + mask), kept in the trace as asked, then dropout.
  // scores_is_product: the scores are q k^T's product alone (no term added);
  // probs_to_products: the probabilities feed P v alone (no value term).
  // Under bf16 products, the gradient of the scores and the dropped
  // probabilities are then written in bf16, as the products take them.
  Var attention_probs(const Var& scores, const Var& padding_mask, Context& ctx, ForwardTrace* trace,
                      bool scores_is_product, bool probs_to_products) const;
  // The two departures from forward's one softmax over added terms.
  Var ablated_attention(const Var& x, const Var& padding_mask, PositionEncoding& pe, const AttentionState& s,
                        Ablation ablate, ForwardTrace* trace) const;
  Var sequence_attention(const Var& x, const Var& padding_mask, PositionEncoding& pe, const AttentionState& s,
                         Ablation ablate, ForwardTrace* trace) const;

  int64_t heads_, head_dim_;
  double dropout_;
};

// HF "attention.output" and "output": a projection, dropout, the residual
// and (post-LN) the LayerNorm of the sum.
class ResidualOutput : public Module {
 public:
  ResidualOutput(int64_t in, const BertConfig& c, Device device);
  // norm(residual + dropout(h W + b)); post-LN and ctx.fused: the bias,
  // dropout, residual and LayerNorm in one kernel (residual_layernorm).
  Var forward(const Var& h, const Var& residual, Context& ctx) const;
  Linear& dense;
  LayerNorm* norm = nullptr;  // "LayerNorm" (HF's name); absent in a pre-LN layer

 private:
  double dropout_;
};

class Attention : public Module {
 public:
  Attention(const BertConfig& c, Device device);
  SelfAttention& self;
  ResidualOutput& output;
};

class Intermediate : public Module {
 public:
  Intermediate(const BertConfig& c, Device device);
  // act(x W + b); fused (ctx.fused), the bias and activation in one kernel
  // whose output is stored as the next product takes it.
  Var forward(const Var& x, const Context& ctx) const {
    return linear_activation(dense, act_, x, ctx, /*as_operand=*/true);
  }
  Linear& dense;

 private:
  Activation act_;
};

class EncoderLayer : public Module {
 public:
  EncoderLayer(const BertConfig& c, Device device);
  // first_row_only: the output's row 0 alone, [batch, 1, hidden] (see
  // BertModel::forward_first_row, which decides when that applies).
  Var forward(const Var& x, const Var& padding_mask, PositionEncoding& pe, int layer,
              const Tensor& positions, const Tensor& segments, Context& ctx, ForwardTrace* trace,
              bool first_row_only = false) const;
  Attention& attention;
  Intermediate& intermediate;
  ResidualOutput& output;

 private:
  bool pre_ln_;
  // Pre-LN only: the LayerNorms in front of the two sublayers.
  LayerNorm* attention_norm_ = nullptr;
  LayerNorm* ffn_norm_ = nullptr;
};

class Embeddings : public Module {
 public:
  Embeddings(const BertConfig& c, Device device);
  Embedding& word_embeddings;
  // Absent with segment = per_head (segments then act in every head,
  // pe/segments.h) and with type_vocab_size 0 (GPT-2).
  Embedding* token_type_embeddings;
  LayerNorm* norm;  // "LayerNorm"; absent without embedding_layer_norm (GPT-2)
};

class Encoder : public Module {
 public:
  Encoder(const BertConfig& c, Device device);
  std::vector<EncoderLayer*> layers;  // registered as "layer.0", "layer.1", ...
};

class Pooler : public Module {
 public:
  Pooler(const BertConfig& c, Device device);
  // tanh(h_[CLS] W + b)
  Var forward(const Var& sequence, const Context& ctx) const;
  Linear& dense;
};

class BertModel : public Module {
 public:
  // `pe` is registered at the path the variant names (HF's
  // "embeddings.position_embeddings" for the learned absolute table).
  BertModel(const BertConfig& config, std::unique_ptr<PositionEncoding> pe, Device device,
            bool with_pooler);
  // The last hidden state [batch, L, hidden].
  Var forward(const BertInputs& inputs, Context& ctx, ForwardTrace* trace = nullptr) const;
  // For a caller that reads position 0 alone (the pooler's [CLS]): in
  // inference (no training, no gradient, no trace) with an encoding that puts
  // nothing in the attention, the last layer computes that row alone — its
  // keys and values still from every row — and the result is [batch, 1,
  // hidden]; otherwise forward()'s [batch, L, hidden]. Row 0 is the same
  // either way, to the products' rounding at another shape.
  Var forward_first_row(const BertInputs& inputs, Context& ctx) const;

  const BertConfig& config() const { return config_; }
  Device device() const { return device_; }
  PositionEncoding& position_encoding() const { return *pe_; }
  Embeddings& embeddings;
  Encoder& encoder;
  Pooler* pooler = nullptr;
  LayerNorm* final_norm = nullptr;  // pre-LN only ("encoder.final_LayerNorm")

 private:
  Var forward(const BertInputs& inputs, Context& ctx, ForwardTrace* trace, bool first_row_only) const;

  BertConfig config_;
  Device device_;
  PositionEncoding* pe_;
  // One of the encoder's product weights, packed together (pack_product_weights):
  // forward rounds them to bf16 once (OperandRoundingScope). Null when none.
  const Parameter* encoder_weights_ = nullptr;
};

// The ablation a forward pass applies: the model's training-time one
// (pe_options.ablate) or the context's inference-time one; both set and
// different is an error.
Ablation ablation_in_force(const PositionEncoding& pe, const Context& ctx);

// ---- the fused attention (autograd/ops.h: attention) ----
// On a CUDA device, self-attention runs as one fused kernel per direction
// and layer (never forming the [B, H, L, L] scores) wherever it can: the
// scores added in one softmax (combine = add, no ablation), nothing asked of
// them (a trace keeping scores or attentions), heads and the variant's
// positional products up to kFusedAttentionMaxWidth wide, and a variant with
// a fused form (PositionEncoding::fused_support()). Elsewhere, and on the CPU,
// the unfused ops run: the reference (Context::fused = false keeps them on
// CUDA too; Context::fused_attention_on_cpu runs the fused op's CPU kernels,
// for a recording). Which of the two a CUDA device runs (ORDO_FUSED_ATTENTION
// or set_fused_attention): on (1), off (0), or automatic (auto, the default):
// the faster, which today is the unfused ops (measured on an H200 before the
// fused kernels had tensor-core tiles; docs/performance.md). Under bf16 products the
// variants whose terms are scalars per pair, and Shaw's relative keys, run on
// tensor-core tiles (bf16 operands, FP32 sums: tensor/cuda/attention_tiles.cu,
// rounding what the unfused path rounds); the others, and every variant under
// fp32 or tf32, run the FP32 kernels from the f32 q, k and v the projections give.
enum class FusedAttention : uint8_t { automatic, on, off };
FusedAttention fused_attention();
void set_fused_attention(FusedAttention mode);
// Why a model with this encoding and config runs the unfused attention on
// `device` ("" when it runs fused), before any data-dependent condition (a trace).
std::string unfused_attention_reason(const PositionEncoding& pe, const BertConfig& c, Device device);
// One line for a run's header: "fused kernels (CUDA)" or "unfused (why)".
std::string attention_kernels(const PositionEncoding& pe, const BertConfig& c, Device device);

// The attention's memory per layer (bytes; f32) beyond Q, K, V and the
// output, which both need (qkvo, for scale):
//  - unfused: kept for the backward, the probabilities before and after
//    dropout ([B, H, L, L] each); transient, the scores;
//  - fused: kept, o's log-sum-exp [B, H, L], the mask and the terms the
//    variant gives (tables, positional products, a dense term); transient in
//    the backward, D [B, H, L] and, for learned relative tables, the (query,
//    key) pairs sorted by row (16 bytes each: B L L, not B H L L) and the
//    per-head gradients of a shared table beside an unshared one.
// Modeled from the shapes one call makes (the variant's fused_terms on the
// CPU), not measured.
// fused_seconds: the roofline estimate (tensor/roofline.h, H100 SXM, FP32
// CUDA cores) of the fused forward and backward calls with these terms:
// max(bytes / bandwidth, FLOPs / peak) + launch overhead each, a model. The
// fused figures are given for every variant with a fused form, whichever
// attention the switch picks (fused_seconds 0 for one without).
// tiles_seconds: the same under bf16 products where the variant runs on
// tensor-core tiles (tensor/cuda/attention_tiles.cu; 0 where it does not).
struct AttentionMemory {
  double qkvo = 0;
  double unfused_kept = 0, unfused_transient = 0;
  double fused_kept = 0, fused_transient = 0;
  double fused_seconds = 0, tiles_seconds = 0;
  std::string unfused_reason;  // why the unfused ops run ("" when the fused kernels do)
};
AttentionMemory attention_memory(PositionEncoding& pe, const BertConfig& c, int64_t batch, int64_t length,
                                 bool training);

// The additive attention mask [batch, 1, 1|L, L]: 0 where attention is
// allowed, the dtype's lowest value where the key is padding (or, for a
// decoder, in the future), as HF builds it. The fused attention reads a
// [batch, 1, L, L] mask as this causal one: its last row the padding.
Tensor attention_bias(const Tensor& attention_mask, int64_t batch, int64_t length, bool causal, DType dtype,
                      Device device);
// 0..length-1 in each of `batch` rows.
Tensor default_positions(int64_t batch, int64_t length, Device device);
// HF RoBERTa's positions (create_position_ids_from_input_ids), counted from 0:
// a token's position is the number of non-padding tokens before it; a
// padding token (id pad) gets -1, which the offset table maps to its padding row.
Tensor positions_skipping_padding(const Tensor& input_ids, int64_t pad);

}  // namespace ordo::nn
