#include "nn/bert_config.h"

#include "base/config.h"

namespace ordo::nn {

namespace {
// HF's position_embedding_type for the pe variants it has, and back. HF's
// relative types are one layout of ordo's variant: one table per layer shared
// by its heads, 2 max_position_embeddings - 1 rows (max_distance
// max_position_embeddings - 1), no clipping, and for relative_key keys only.
// Other options make a model HF cannot express: "absolute" then, as for every
// variant HF lacks.
bool hf_relative_options(const BertConfig& c, bool may_have_values) {
  const json::Value& o = c.pe_options;
  if (!o.is_object()) return o.is_null();
  for (const auto& [key, value] : o.items()) {
    if (key == "share" && value.is_string() && value.as_string() == "heads") continue;
    if (key == "value" && may_have_values && value.is_bool() && !value.as_bool()) continue;
    if (key == "max_distance" && value.is_number() && value.as_number() == double(c.max_position_embeddings - 1))
      continue;
    return false;
  }
  return true;
}
std::string hf_type_of(const BertConfig& c) {
  if (c.pe == "rpe_shaw" && hf_relative_options(c, true)) return "relative_key";
  if (c.pe == "huang_m4" && hf_relative_options(c, false)) return "relative_key_query";
  return "absolute";
}
}  // namespace

BertConfig config_from_json(const json::Value& object, const std::string& where, bool hf_lenient) {
  FieldReader r(object, where);
  BertConfig c;
  const int64_t big = int64_t{1} << 31;
  c.vocab_size = r.integer("vocab_size", c.vocab_size, 1, big);
  c.hidden_size = r.integer("hidden_size", c.hidden_size, 1, 1 << 20);
  c.num_hidden_layers = r.integer("num_hidden_layers", c.num_hidden_layers, 1, 1024);
  c.num_attention_heads = r.integer("num_attention_heads", c.num_attention_heads, 1, 1 << 16);
  c.intermediate_size = r.integer("intermediate_size", c.intermediate_size, 1, 1 << 22);
  c.hidden_act = r.string("hidden_act", c.hidden_act, {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "tanh"});
  c.hidden_dropout_prob = r.number("hidden_dropout_prob", c.hidden_dropout_prob, 0, 0.99);
  c.attention_probs_dropout_prob = r.number("attention_probs_dropout_prob", c.attention_probs_dropout_prob, 0, 0.99);
  c.max_position_embeddings = r.integer("max_position_embeddings", c.max_position_embeddings, 1, 1 << 24);
  c.type_vocab_size = r.integer("type_vocab_size", c.type_vocab_size, 1, 1 << 16);
  c.initializer_range = r.number("initializer_range", c.initializer_range, 0, 10);
  c.layer_norm_eps = r.number("layer_norm_eps", c.layer_norm_eps, 1e-30, 1);
  c.pad_token_id = r.integer("pad_token_id", c.pad_token_id, 0, big);
  bool has_hf_type = r.has("position_embedding_type");
  c.position_embedding_type = r.string("position_embedding_type", c.position_embedding_type,
                                       {"absolute", "relative_key", "relative_key_query"});
  bool has_pe = r.has("pe");
  c.pe = r.string("pe", c.pe);
  if (const json::Value* options = r.object("pe_options")) c.pe_options = *options;
  bool has_decoder = r.has("decoder");
  c.decoder = r.boolean("decoder", c.decoder);
  // HF's name for the same switch (BertLMHeadModel's config has is_decoder
  // true): an HF decoder checkpoint must load as a decoder, not an encoder.
  const bool has_is_decoder = r.has("is_decoder");
  const bool hf_decoder = r.boolean("is_decoder", false);
  if (has_is_decoder) {
    ORDO_CHECK(!has_decoder || hf_decoder == c.decoder, where, ": is_decoder ", hf_decoder ? "true" : "false",
               " contradicts decoder ", c.decoder ? "true" : "false");
    c.decoder = hf_decoder;
  }
  c.pre_layer_norm = r.boolean("pre_layer_norm", c.pre_layer_norm);
  c.word_embedding_scale = r.number("word_embedding_scale", c.word_embedding_scale, 1e-6, 1e6);
  c.segment = r.string("segment", c.segment, {"input", "per_head"});
  bool has_segment_share = r.has("segment_share");
  c.segment_share = r.string("segment_share", c.segment_share, {"none", "heads", "layers", "all"});
  ORDO_CHECK(!has_segment_share || c.segment == "per_head", where,
             ": segment_share applies to segment \"per_head\" (the per-head segment tables), but segment is \"",
             c.segment, "\"");
  // An HF config names its position embedding only through position_embedding_type.
  if (has_hf_type && !has_pe) {
    if (c.position_embedding_type == "relative_key") c.pe = "rpe_shaw";
    if (c.position_embedding_type == "relative_key_query") c.pe = "huang_m4";
  }
  if (!has_hf_type) c.position_embedding_type = hf_type_of(c);
  if (hf_lenient) {
    r.ignore({"architectures", "model_type", "transformers_version", "torch_dtype", "dtype", "use_cache",
              "classifier_dropout", "gradient_checkpointing", "add_cross_attention",
              "bos_token_id", "eos_token_id", "_name_or_path", "directionality", "pooler_fc_size",
              "pooler_num_attention_heads", "pooler_num_fc_layers", "pooler_size_per_head",
              "pooler_type", "output_past", "tie_word_embeddings", "chunk_size_feed_forward",
              // a fine-tuned model's (BertForSequenceClassification, ordo finetune's best/)
              "finetuning_task", "id2label", "label2id", "problem_type", "num_labels"});
  }
  r.finish();
  validate(c, where);
  return c;
}

void validate(const BertConfig& c, const std::string& where) {
  ORDO_CHECK(c.hidden_size % c.num_attention_heads == 0, where, ": num_attention_heads ",
             c.num_attention_heads, " does not divide hidden_size ", c.hidden_size);
  ORDO_CHECK(c.pad_token_id < c.vocab_size, where, ": pad_token_id ", c.pad_token_id,
             " is outside the vocabulary of ", c.vocab_size);
  ORDO_CHECK(c.position_embedding_type == "absolute" || hf_type_of(c) == c.position_embedding_type, where,
             ": position_embedding_type '", c.position_embedding_type, "' needs pe '",
             c.position_embedding_type == "relative_key" ? "rpe_shaw" : "huang_m4",
             "' with HF's layout (share heads, no clip, max_distance max_position_embeddings - 1",
             c.position_embedding_type == "relative_key" ? ", keys only" : "", "), got '", c.pe, "' with pe_options ",
             json::dump(c.pe_options));
  ORDO_CHECK(c.segment == "input" || c.segment == "per_head", where, ": segment '", c.segment,
             "' is not one of input, per_head");
  ORDO_CHECK(c.segment_share == "none" || c.segment_share == "heads" || c.segment_share == "layers" ||
                 c.segment_share == "all",
             where, ": segment_share '", c.segment_share, "' is not one of none, heads, layers, all");
}

json::Value config_to_json(const BertConfig& c) {
  json::Value o = json::Value::object();
  o["model_type"] = "bert";
  o["vocab_size"] = c.vocab_size;
  o["hidden_size"] = c.hidden_size;
  o["num_hidden_layers"] = c.num_hidden_layers;
  o["num_attention_heads"] = c.num_attention_heads;
  o["intermediate_size"] = c.intermediate_size;
  o["hidden_act"] = c.hidden_act;
  o["hidden_dropout_prob"] = c.hidden_dropout_prob;
  o["attention_probs_dropout_prob"] = c.attention_probs_dropout_prob;
  o["max_position_embeddings"] = c.max_position_embeddings;
  o["type_vocab_size"] = c.type_vocab_size;
  o["initializer_range"] = c.initializer_range;
  o["layer_norm_eps"] = c.layer_norm_eps;
  o["pad_token_id"] = c.pad_token_id;
  o["position_embedding_type"] = c.position_embedding_type;
  // ordo's `decoder` is written as HF's is_decoder only: transformers reads a
  // "decoder" key as an encoder-decoder model's sub-config and fails on a bool.
  o["is_decoder"] = c.decoder;
  o["pe"] = c.pe;
  o["pe_options"] = c.pe_options;
  o["pre_layer_norm"] = c.pre_layer_norm;
  if (c.word_embedding_scale != 1.0) o["word_embedding_scale"] = c.word_embedding_scale;
  o["segment"] = c.segment;
  if (c.segment == "per_head") o["segment_share"] = c.segment_share;
  return o;
}

}  // namespace ordo::nn
