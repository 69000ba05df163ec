// The checkpoint layouts of the HF families: see nn/hf_layout.h.
#include "nn/hf_layout.h"

#include <cstdlib>
#include <map>

#include "base/error.h"
#include "tensor/ops.h"

namespace ordo::nn {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Replaces a leading `from` with `to`; false when `name` does not start with it.
bool swap_prefix(std::string& name, const std::string& from, const std::string& to) {
  if (!starts_with(name, from)) return false;
  name = to + name.substr(from.size());
  return true;
}

// RoBERTa's names <-> ordo's: (RoBERTa prefix, ordo prefix), most specific first.
const std::vector<std::pair<std::string, std::string>>& roberta_names() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"lm_head.dense.", "cls.predictions.transform.dense."},
      {"lm_head.layer_norm.", "cls.predictions.transform.LayerNorm."},
      {"lm_head.decoder.", "cls.predictions.decoder."},
      {"lm_head.bias", "cls.predictions.bias"},
      {"classifier.dense.", "bert.pooler.dense."},
      {"classifier.out_proj.", "classifier."},
      {"roberta.", "bert."}};
  return names;
}

// Records where ordo's tensor `ours` came from (when `origins` is wanted).
void note_origin(FileTensors* origins, const std::string& ours, const std::string& raw, const Tensor& t,
                 const std::string& part = "") {
  if (origins && ours != raw) (*origins)[ours] = FileTensor{raw, t.shape(), part};
}

NamedTensors roberta_from(NamedTensors tensors, FileTensors* origins) {
  for (auto& [name, t] : tensors) {
    const std::string raw = name;
    for (const auto& [theirs, ours] : roberta_names())
      if (swap_prefix(name, theirs, ours)) break;
    note_origin(origins, name, raw, t);
  }
  return tensors;
}

NamedTensors roberta_to(NamedTensors tensors) {
  // BERT's pooler is RoBERTa's classification head's dense layer where there
  // is a classifier on it; else RobertaModel's pooler.
  bool classifier = false;
  for (const auto& named : tensors) classifier |= starts_with(named.first, "classifier.");
  for (auto& [name, t] : tensors) {
    if (classifier && swap_prefix(name, "bert.pooler.dense.", "classifier.dense.")) continue;
    if (swap_prefix(name, "classifier.", "classifier.out_proj.")) continue;
    for (const auto& [theirs, ours] : roberta_names()) {
      if (theirs.rfind("classifier.", 0) == 0) continue;  // handled above
      if (swap_prefix(name, ours, theirs)) break;
    }
  }
  return tensors;
}

// GPT-2: "h.N.<rest>" -> (N, rest); false for other names.
bool gpt2_layer(const std::string& name, std::string& layer, std::string& rest) {
  if (!starts_with(name, "h.")) return false;
  const size_t dot = name.find('.', 2);
  if (dot == std::string::npos || dot == 2) return false;
  layer = name.substr(2, dot - 2);
  rest = name.substr(dot + 1);
  return layer.find_first_not_of("0123456789") == std::string::npos;
}

// The per-layer GPT-2 tensors that are one ordo tensor transposed (Conv1D
// weights [in, out]) or renamed (biases, LayerNorms).
const std::vector<std::pair<std::string, std::string>>& gpt2_layer_names() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"ln_1.", "attention_LayerNorm."}, {"ln_2.", "output_LayerNorm."},
      {"attn.c_proj.", "attention.output.dense."}, {"mlp.c_fc.", "intermediate.dense."},
      {"mlp.c_proj.", "output.dense."}};
  return names;
}
const std::vector<std::pair<std::string, std::string>>& gpt2_model_names() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"wte.", "bert.embeddings.word_embeddings."}, {"wpe.", "bert.embeddings.position_embeddings."},
      {"ln_f.", "bert.encoder.final_LayerNorm."}, {"lm_head.", "cls.predictions.decoder."},
      {"score.", "classifier."}};
  return names;
}
// The heads, which sit beside "transformer." rather than in it.
bool gpt2_head(const std::string& name) { return starts_with(name, "lm_head.") || starts_with(name, "score."); }

bool is_conv1d_weight(const std::string& rest) {
  return rest == "attn.c_proj.weight" || rest == "mlp.c_fc.weight" || rest == "mlp.c_proj.weight";
}

Tensor transposed(const Tensor& t) { return t.transpose(0, 1).contiguous(); }

NamedTensors gpt2_from(const NamedTensors& tensors, FileTensors* origins) {
  NamedTensors out;
  for (const auto& [raw, t] : tensors) {
    std::string name = raw, layer, rest;
    swap_prefix(name, "transformer.", "");
    if (gpt2_layer(name, layer, rest)) {
      const std::string ours = "bert.encoder.layer." + layer + ".";
      if (rest == "attn.bias" || rest == "attn.masked_bias") continue;  // causal-mask buffers
      if (rest == "attn.c_attn.weight" || rest == "attn.c_attn.bias") {
        const bool weight = rest == "attn.c_attn.weight";
        ORDO_CHECK(t.dim() == (weight ? 2 : 1) && t.size(-1) % 3 == 0, "GPT-2 tensor '", raw, "' has shape ",
                   shape_str(t.shape()), ", expected ", weight ? "[hidden, 3 hidden]" : "[3 hidden]");
        const int64_t h = t.size(-1) / 3;
        const char* parts[] = {"query", "key", "value"};
        for (int k = 0; k < 3; ++k) {
          Tensor part = t.slice(t.dim() - 1, k * h, (k + 1) * h);
          out.emplace_back(ours + "attention.self." + parts[k] + (weight ? ".weight" : ".bias"),
                           weight ? transposed(part) : part.contiguous());
          note_origin(origins, out.back().first, raw, t,
                      std::string("its ") + parts[k] + (weight ? " columns, transposed" : " third"));
        }
        continue;
      }
      bool renamed = false;
      for (const auto& [theirs, mine] : gpt2_layer_names()) {
        if (!starts_with(rest, theirs)) continue;
        const std::string to = ours + mine + rest.substr(theirs.size());
        ORDO_CHECK(!is_conv1d_weight(rest) || t.dim() == 2, "GPT-2 tensor '", raw, "' has shape ", shape_str(t.shape()),
                   ", expected a 2-D Conv1D weight");
        out.emplace_back(to, is_conv1d_weight(rest) ? transposed(t) : t);
        note_origin(origins, to, raw, t, is_conv1d_weight(rest) ? "transposed" : "");
        renamed = true;
        break;
      }
      if (!renamed) out.emplace_back(raw, t);  // unknown: load_weights names it
      continue;
    }
    bool renamed = false;
    for (const auto& [theirs, mine] : gpt2_model_names())
      if (swap_prefix(name, theirs, mine)) {
        out.emplace_back(name, t);
        note_origin(origins, name, raw, t);
        renamed = true;
        break;
      }
    if (!renamed) out.emplace_back(raw, t);
  }
  return out;
}

NamedTensors gpt2_to(const NamedTensors& tensors) {
  NamedTensors out;
  // q, k, v of each layer, joined into c_attn when the layer's three are there.
  std::map<std::string, std::map<std::string, Tensor>> qkv;  // "N.weight"/"N.bias" -> part -> tensor
  for (const auto& [raw, t] : tensors) {
    std::string name = raw;
    if (swap_prefix(name, "bert.encoder.layer.", "")) {
      const size_t dot = name.find('.');
      const std::string layer = name.substr(0, dot), rest = name.substr(dot + 1);
      const std::string self = "attention.self.";
      if (starts_with(rest, self)) {
        const std::string part = rest.substr(self.size(), rest.find('.', self.size()) - self.size());
        const std::string kind = rest.substr(rest.rfind('.') + 1);
        qkv[layer + "." + kind][part] = t;
        continue;
      }
      bool renamed = false;
      for (const auto& [theirs, mine] : gpt2_layer_names()) {
        if (!starts_with(rest, mine)) continue;
        const std::string to = theirs + rest.substr(mine.size());
        out.emplace_back("transformer.h." + layer + "." + to, is_conv1d_weight(to) ? transposed(t) : t);
        renamed = true;
        break;
      }
      ORDO_CHECK(renamed, "tensor '", raw, "' has no place in GPT-2's layout");
      continue;
    }
    bool renamed = false;
    for (const auto& [theirs, mine] : gpt2_model_names())
      if (swap_prefix(name, mine, theirs)) {
        out.emplace_back(gpt2_head(name) ? name : "transformer." + name, t);
        renamed = true;
        break;
      }
    if (!renamed) out.emplace_back(raw, t);
  }
  for (auto& [key, parts] : qkv) {
    const std::string layer = key.substr(0, key.find('.')), kind = key.substr(key.find('.') + 1);
    ORDO_CHECK(parts.size() == 3 && parts.count("query") && parts.count("key") && parts.count("value"),
               "layer ", layer, ": GPT-2's c_attn needs the query, key and value ", kind);
    std::vector<Tensor> joined;
    for (const char* p : {"query", "key", "value"}) joined.push_back(kind == "weight" ? transposed(parts[p]) : parts[p]);
    out.emplace_back("transformer.h." + layer + ".attn.c_attn." + kind, concat(joined, kind == "weight" ? 1 : 0));
  }
  return out;
}

}  // namespace

NamedTensors from_hf_layout(const BertConfig& config, NamedTensors tensors, FileTensors* origins) {
  if (config.model_type == "roberta") return roberta_from(std::move(tensors), origins);
  if (config.model_type == "gpt2") return gpt2_from(tensors, origins);
  return tensors;
}

NamedTensors to_hf_layout(const BertConfig& config, NamedTensors tensors) {
  if (config.model_type == "roberta") return roberta_to(std::move(tensors));
  if (config.model_type == "gpt2") return gpt2_to(tensors);
  return tensors;
}

std::string hf_architecture(const BertConfig& config, const std::string& bert_architecture) {
  if (config.model_type == "bert") return bert_architecture;
  const std::string rest = bert_architecture.substr(0, 4) == "Bert" ? bert_architecture.substr(4) : bert_architecture;
  if (config.model_type == "roberta") {
    ORDO_CHECK(rest != "ForPreTraining", "RoBERTa has no next-sentence head (", bert_architecture,
               "): a roberta model is saved without one");
    return "Roberta" + (rest == "LMHeadModel" ? std::string("ForCausalLM") : rest);
  }
  if (rest == "LMHeadModel" || rest == "ForMaskedLM") return "GPT2LMHeadModel";
  return "GPT2" + rest;
}

}  // namespace ordo::nn
