// The model configuration: HuggingFace's BertConfig fields, so an HF
// config.json reads and writes directly, plus ordo's own position-encoding
// and architecture fields.
#pragma once

#include <cstdint>
#include <string>

#include "base/json.h"

namespace ordo::nn {

struct BertConfig {
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
  int64_t type_vocab_size = 2;
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-12;
  int64_t pad_token_id = 0;
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
  // Segments (Chen et al. 2021, Eq. 9-11): "input" adds BERT's token-type
  // embedding to the input; "per_head" has none and adds S_ij =
  // Seg_h[seg(i), seg(j)] to every head's scores instead (pe/segments.h),
  // its tables shared as segment_share says (none | heads | layers | all).
  std::string segment = "input";
  std::string segment_share = "none";

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
};

// Reads a config object strictly: unknown keys, wrong types and values out of
// range are errors naming the key. `hf_lenient` also accepts (and ignores) the
// bookkeeping fields HuggingFace writes into config.json ("architectures",
// "model_type", "transformers_version", ...).
BertConfig config_from_json(const json::Value& object, const std::string& where, bool hf_lenient = false);
// An HF-style config.json object (with model_type "bert") carrying ordo's fields too.
json::Value config_to_json(const BertConfig& config);
// Cross-field checks: heads divide the hidden size, pe and position_embedding_type agree, ...
void validate(const BertConfig& config, const std::string& where);

}  // namespace ordo::nn
