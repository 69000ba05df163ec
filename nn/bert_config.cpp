#include "nn/bert_config.h"

#include <algorithm>

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

// The architectures (transformers classes) ordo has the heads of, per model_type.
const std::vector<std::pair<std::string, std::vector<std::string>>>& supported_architectures() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> s = {
      {"bert", {"BertModel", "BertForMaskedLM", "BertForPreTraining", "BertLMHeadModel",
                "BertForSequenceClassification", "BertForQuestionAnswering"}},
      {"roberta", {"RobertaModel", "RobertaForMaskedLM", "RobertaForCausalLM", "RobertaForSequenceClassification",
                   "RobertaForQuestionAnswering"}},
      {"gpt2", {"GPT2Model", "GPT2LMHeadModel", "GPT2ForSequenceClassification", "GPT2ForQuestionAnswering"}}};
  return s;
}

// The config's model_type (what its architectures say when it has none; "bert"
// when neither is there, as ordo's first checkpoints), checked before any
// other key: a model ordo does not implement is named, not misread as BERT.
std::string model_type_of(const json::Value& object, const std::string& where) {
  std::string type, named;
  if (const json::Value* t = object.find("model_type")) {
    ORDO_CHECK(t->is_string(), where, ": 'model_type' must be a string, got ", json::dump(*t));
    type = t->as_string();
  }
  std::vector<std::string> architectures;
  if (const json::Value* a = object.find("architectures"); a && a->is_array())
    for (const json::Value& name : a->as_array())
      if (name.is_string()) architectures.push_back(name.as_string()), named += (named.empty() ? "" : ", ") + name.as_string();
  if (type.empty()) {
    type = "bert";
    for (const auto& [family, classes] : supported_architectures())
      for (const std::string& arch : architectures)
        if (std::find(classes.begin(), classes.end(), arch) != classes.end()) type = family;
    // No model_type and an architecture ordo does not know: not taken for BERT.
    if (!architectures.empty() && type == "bert" &&
        std::none_of(architectures.begin(), architectures.end(), [](const std::string& a) { return a.rfind("Bert", 0) == 0; }))
      type = "?";
  }
  auto family = std::find_if(supported_architectures().begin(), supported_architectures().end(),
                             [&](const auto& f) { return f.first == type; });
  ORDO_CHECK(family != supported_architectures().end(), where, ": ",
             type == "?" ? std::string("the model") : "model_type '" + type + "'",
             named.empty() ? std::string() : " (" + named + ")",
             " is not a model ordo implements; ordo reads ", supported_models());
  for (const std::string& arch : architectures)
    ORDO_CHECK(std::find(family->second.begin(), family->second.end(), arch) != family->second.end(), where,
               ": architecture '", arch, "' is not one ordo has the heads of; ordo reads ", supported_models());
  return type;
}

// GPT2Config's keys (transformers' configuration_gpt2.py) as ordo's options:
// a pre-LN causal decoder without an embedding LayerNorm or segments, the LM
// head h E^T, positions from 0 in a learned table.
BertConfig gpt2_config_from_json(const json::Value& object, const std::string& where) {
  FieldReader r(object, where);
  BertConfig c;
  const int64_t big = int64_t{1} << 31;
  c.model_type = "gpt2";
  c.vocab_size = r.integer("vocab_size", 50257, 1, big);
  c.max_position_embeddings = r.integer("n_positions", 1024, 1, 1 << 24);
  c.hidden_size = r.integer("n_embd", 768, 1, 1 << 20);
  c.num_hidden_layers = r.integer("n_layer", 12, 1, 1024);
  c.num_attention_heads = r.integer("n_head", 12, 1, 1 << 16);
  c.intermediate_size = 4 * c.hidden_size;  // n_inner null: 4 n_embd
  if (const json::Value* inner = object.find("n_inner"); inner && !inner->is_null())
    c.intermediate_size = r.integer("n_inner", c.intermediate_size, 1, 1 << 22);
  else
    r.ignore({"n_inner"});
  c.hidden_act = r.string("activation_function", "gelu_new", {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "tanh"});
  c.hidden_dropout_prob = r.number("resid_pdrop", 0.1, 0, 0.99);
  // GPT-2 drops the embeddings with embd_pdrop; ordo uses one rate for both
  // (they are equal in every GPT-2 checkpoint; nothing differs at inference).
  r.number("embd_pdrop", c.hidden_dropout_prob, 0, 0.99);
  c.attention_probs_dropout_prob = r.number("attn_pdrop", 0.1, 0, 0.99);
  c.layer_norm_eps = r.number("layer_norm_epsilon", 1e-5, 1e-30, 1);
  c.initializer_range = r.number("initializer_range", 0.02, 0, 10);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", true);
  ORDO_CHECK(r.boolean("scale_attn_weights", true), where, ": scale_attn_weights false (scores without 1/sqrt(d_h)) is not supported");
  ORDO_CHECK(!r.boolean("scale_attn_by_inverse_layer_idx", false), where,
             ": scale_attn_by_inverse_layer_idx true is not supported");
  ORDO_CHECK(!r.boolean("add_cross_attention", false), where, ": add_cross_attention true (an encoder-decoder) is not supported");
  r.boolean("reorder_and_upcast_attn", false);  // only the dtype of the product: f32 either way here
  r.ignore({"architectures", "model_type", "transformers_version", "torch_dtype", "dtype", "use_cache",
            "bos_token_id", "eos_token_id", "pad_token_id", "_name_or_path", "n_ctx", "summary_type",
            "summary_use_proj", "summary_activation", "summary_proj_to_labels", "summary_first_dropout",
            "task_specific_params", "gradient_checkpointing", "output_past", "id2label", "label2id",
            "_num_labels", "n_special", "predict_special_tokens"});
  r.finish();
  c.decoder = true;
  c.pre_layer_norm = true;
  c.embedding_layer_norm = false;
  c.lm_head = "linear";
  c.type_vocab_size = 0;
  c.pad_token_id = -1;
  validate(c, where);
  return c;
}

}  // namespace

std::string supported_models() {
  std::string s;
  const auto& families = supported_architectures();
  for (size_t i = 0; i < families.size(); ++i) {
    s += i == 0 ? "" : i + 1 == families.size() ? " and " : ", ";
    s += families[i].first + " (";
    for (size_t k = 0; k < families[i].second.size(); ++k) s += (k ? ", " : "") + families[i].second[k];
    s += ")";
  }
  return s;
}

BertConfig config_from_json(const json::Value& object, const std::string& where, bool hf_lenient) {
  const std::string type = hf_lenient && object.is_object() ? model_type_of(object, where) : "bert";
  if (type == "gpt2") return gpt2_config_from_json(object, where);
  FieldReader r(object, where);
  BertConfig c;
  c.model_type = type;
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
  c.type_vocab_size = r.integer("type_vocab_size", c.type_vocab_size, 0, 1 << 16);
  c.initializer_range = r.number("initializer_range", c.initializer_range, 0, 10);
  c.layer_norm_eps = r.number("layer_norm_eps", c.layer_norm_eps, 1e-30, 1);
  c.pad_token_id = r.integer("pad_token_id", c.pad_token_id, -1, big);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", c.tie_word_embeddings);
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
  c.embedding_layer_norm = r.boolean("embedding_layer_norm", c.embedding_layer_norm);
  c.lm_head = r.string("lm_head", c.lm_head, {"transform", "linear"});
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
              "pooler_type", "output_past", "chunk_size_feed_forward",
              // a fine-tuned model's (BertForSequenceClassification, ordo finetune's best/)
              "finetuning_task", "id2label", "label2id", "problem_type", "num_labels"});
  }
  r.finish();
  // RoBERTa's positions start after its padding row: row p + pad_token_id + 1
  // (RobertaConfig's pad_token_id is 1 when the file does not say).
  if (c.model_type == "roberta") {
    if (!object.contains("pad_token_id")) c.pad_token_id = 1;
    c.position_offset = c.pad_token_id + 1;
  }
  validate(c, where);
  return c;
}

BertConfig with_overrides(const BertConfig& base, const json::Value& overrides, const std::string& where) {
  ORDO_CHECK(overrides.is_object(), where, " must be an object of model config keys, got ", json::dump(overrides));
  // base in BERT's keys (a GPT-2's too: its options are ordo's fields there),
  // with ordo's names: decoder rather than HF's is_decoder, and no
  // position_embedding_type, which follows from pe.
  BertConfig as_bert = base;
  as_bert.model_type = "bert";
  as_bert.position_offset = 0;
  const json::Value base_json = config_to_json(as_bert);  // held: items() refers into it
  json::Value merged = json::Value::object();
  for (const auto& [key, value] : base_json.items())
    if (key != "model_type" && key != "is_decoder" && key != "position_embedding_type") merged[key] = value;
  merged["decoder"] = base.decoder;
  if (overrides.contains("pe") && !overrides.contains("pe_options")) merged["pe_options"] = json::Value::object();
  for (const auto& [key, value] : overrides.items()) merged[key] = value;
  BertConfig c = config_from_json(merged, where);
  c.model_type = base.model_type;
  if (c.model_type == "roberta") c.position_offset = c.pad_token_id + 1;
  validate(c, where);
  return c;
}

void validate(const BertConfig& c, const std::string& where) {
  ORDO_CHECK(c.hidden_size % c.num_attention_heads == 0, where, ": num_attention_heads ",
             c.num_attention_heads, " does not divide hidden_size ", c.hidden_size);
  ORDO_CHECK(c.pad_token_id < c.vocab_size, where, ": pad_token_id ", c.pad_token_id,
             " is outside the vocabulary of ", c.vocab_size);
  ORDO_CHECK(c.model_type == "bert" || c.model_type == "roberta" || c.model_type == "gpt2", where, ": model_type '",
             c.model_type, "' is not one of bert, roberta, gpt2");
  ORDO_CHECK(c.model_type == "bert" || (c.pe == "ape_learned" && c.segment == "input"), where, ": a ", c.model_type,
             " checkpoint holds a learned absolute table and input segments; pe '", c.pe, "' with segment '", c.segment,
             "' has no ", c.model_type, " layout");
  ORDO_CHECK(c.position_offset >= 0 && (c.position_offset == 0 || c.pe == "ape_learned"), where,
             ": position_offset ", c.position_offset, " applies to the learned absolute table (pe ape_learned)");
  ORDO_CHECK(c.position_offset < c.max_position_embeddings, where, ": position_offset ", c.position_offset,
             " leaves no row of the ", c.max_position_embeddings, "-row position table");
  ORDO_CHECK(c.lm_head == "transform" || c.lm_head == "linear", where, ": lm_head '", c.lm_head,
             "' is not one of transform, linear");
  ORDO_CHECK(c.type_vocab_size > 0 || c.segment == "input", where, ": segment 'per_head' needs type_vocab_size >= 1");
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

namespace {

json::Value gpt2_config_to_json(const BertConfig& c) {
  json::Value o = json::Value::object();
  o["model_type"] = "gpt2";
  o["vocab_size"] = c.vocab_size;
  o["n_positions"] = c.max_position_embeddings;
  o["n_embd"] = c.hidden_size;
  o["n_layer"] = c.num_hidden_layers;
  o["n_head"] = c.num_attention_heads;
  o["n_inner"] = c.intermediate_size;
  o["activation_function"] = c.hidden_act;
  o["resid_pdrop"] = c.hidden_dropout_prob;
  o["embd_pdrop"] = c.hidden_dropout_prob;
  o["attn_pdrop"] = c.attention_probs_dropout_prob;
  o["layer_norm_epsilon"] = c.layer_norm_eps;
  o["initializer_range"] = c.initializer_range;
  o["tie_word_embeddings"] = c.tie_word_embeddings;
  return o;
}

}  // namespace

json::Value config_to_json(const BertConfig& c) {
  if (c.model_type == "gpt2") return gpt2_config_to_json(c);
  json::Value o = json::Value::object();
  o["model_type"] = c.model_type;
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
  // The options BERT's layout does not have, only where they are set (a
  // config of every earlier ordo checkpoint reads the same).
  if (!c.tie_word_embeddings) o["tie_word_embeddings"] = false;
  if (!c.embedding_layer_norm) o["embedding_layer_norm"] = false;
  if (c.lm_head != "transform") o["lm_head"] = c.lm_head;
  o["segment"] = c.segment;
  if (c.segment == "per_head") o["segment_share"] = c.segment_share;
  return o;
}

}  // namespace ordo::nn
