// The model configuration: HuggingFace's BertConfig fields, so an HF
// config.json reads and writes directly, plus ordo's own position-encoding
// and architecture fields.
#pragma once

#include <cstdint>
#include <string>

#include "base/json.h"

namespace ordo::nn {

struct BertConfig {
  // The HF family whose checkpoint layout (config.json keys, tensor names)
  // the model reads and writes (nn/hf_layout.h): "bert", "roberta" or "gpt2".
  // All three are this one model with the options below.
  std::string model_type = "bert";

  // HuggingFace BertConfig
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  std::string hidden_act = "gelu";
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;  // 0: no segment embedding (GPT-2)
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-12;
  int64_t pad_token_id = 0;  // -1: no padding row in the word embeddings (GPT-2)
  bool tie_word_embeddings = true;  // the LM head projects onto the word embeddings (else its own decoder.weight)
  // HF's "absolute", "relative_key" or "relative_key_query"; kept consistent with `pe`.
  std::string position_embedding_type = "absolute";

  // ordo
  std::string pe = "ape_learned";             // the position-encoding variant (pe/ registry)
  json::Value pe_options = json::Value::object();  // the variant's options
  bool decoder = false;                        // causal self-attention (GPT-style stack)
  bool pre_layer_norm = false;                 // LayerNorm before each sublayer instead of after
  // The token embeddings multiplied by this before the position and segment
  // ones are added: Vaswani et al. 2017 (§3.4) use sqrt(hidden_size) beside
  // their unscaled sinusoid; BERT, 1. Not an HF BertConfig field: a model
  // with another scale is not an HF BERT (transformers would ignore it).
  double word_embedding_scale = 1.0;
  bool embedding_layer_norm = true;            // LayerNorm of the embedding sum (GPT-2 has none)
  // The LM head: "transform" (dense, activation, LayerNorm, then h E^T + b:
  // BERT, RoBERTa) or "linear" (h E^T alone, no bias: GPT-2).
  std::string lm_head = "transform";
  // The learned table's row for position p is p + position_offset (RoBERTa:
  // padding_idx + 1 = 2, from its pad_token_id; its rows 0..1 are never used
  // by real tokens). Positions themselves still count from 0.
  int64_t position_offset = 0;
  // Segments (Chen et al. 2021, Eq. 9-11): "input" adds BERT's token-type
  // embedding to the input; "per_head" has none and adds S_ij =
  // Seg_h[seg(i), seg(j)] to every head's scores instead (pe/segments.h),
  // its tables shared as segment_share says (none | heads | layers | all).
  std::string segment = "input";
  std::string segment_share = "none";

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
};

// Reads a config object strictly: unknown keys, wrong types and values out of
// range are errors naming the key. `hf_lenient` reads an HF config.json: its
// model_type and architectures first — bert, roberta (BERT's keys; positions
// offset by pad_token_id + 1) and gpt2 (GPT2Config's keys: n_embd, n_layer,
// ...) are read, any other model (XLNet, DeBERTa, T5, ...) is refused naming
// what it is and what ordo reads — and it also accepts (and ignores) the
// bookkeeping fields HuggingFace writes ("transformers_version", ...).
BertConfig config_from_json(const json::Value& object, const std::string& where, bool hf_lenient = false);
// `base` with the keys of `overrides` (a run config's "model" keys: hidden_size,
// num_hidden_layers, pe, decoder, ...) replaced, read as strictly as a run
// config: an unknown key or a bad value is an error naming it under `where`.
// The family (model_type) and its position offset are base's; a new pe
// without pe_options starts with none (options belong to their variant).
// What `ordo finetune --from-scratch --set model.KEY=V` builds.
BertConfig with_overrides(const BertConfig& base, const json::Value& overrides, const std::string& where);
// An HF config.json object of the config's model_type (bert and roberta with
// ordo's fields too; gpt2 in GPT2Config's keys).
json::Value config_to_json(const BertConfig& config);
// The models ordo reads, for messages: "bert (BertModel, ...), roberta (...) and gpt2 (...)".
std::string supported_models();
// Cross-field checks: heads divide the hidden size, pe and position_embedding_type agree, ...
void validate(const BertConfig& config, const std::string& where);

}  // namespace ordo::nn
