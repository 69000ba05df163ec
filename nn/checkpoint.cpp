#include "nn/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/file_io.h"
#include "nn/hf_layout.h"
#include "tensor/safetensors.h"

namespace ordo::nn {

namespace {


bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A buffer HF writes that ordo has no parameter for.
bool ignored_name(const std::string& name) { return name == "bert.embeddings.position_ids"; }

// HF's BertEmbeddings keeps its absolute table with position_embedding_type
// relative_key and relative_key_query but never adds it (BertEmbeddings.forward
// adds it only for "absolute"); ordo's rpe_shaw and huang_m4 models have none.
const char* kUnusedAbsoluteTable = "bert.embeddings.position_embeddings.weight";
bool unused_absolute_table(Module& model, const BertConfig& config) {
  return config.position_embedding_type != "absolute" && model.find_parameter(kUnusedAbsoluteTable) == nullptr;
}

bool starts_with_any(const std::string& name, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& prefix) { return name.rfind(prefix, 0) == 0; });
}

// The copies HF may write of tied parameters, and what each is a copy of.
const std::vector<std::pair<std::string, std::string>>& tied_copies() {
  static const std::vector<std::pair<std::string, std::string>> copies = {
      {"cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"},
      {"cls.predictions.decoder.bias", "cls.predictions.bias"}};
  return copies;
}

// A weight that is NaN or Inf makes everything computed from it meaningless
// (a probe would print OPR 0 beside "nan"): refused, naming the first such
// element of the first such tensor.
void check_finite(const NamedTensors& tensors, const std::string& where) {
  for (const auto& [name, t] : tensors) {
    if (!is_floating(t.dtype())) continue;
    const std::vector<double> values = t.to_doubles();
    auto bad = std::find_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); });
    if (bad == values.end()) continue;
    throw Error(detail::cat(where, ": tensor '", name, "' holds ", std::isnan(*bad) ? "nan" : *bad > 0 ? "inf" : "-inf",
                            " at element ", bad - values.begin(), " (of ", values.size(), "); the checkpoint is damaged"));
  }
}

}  // namespace

std::string canonical_name(const std::string& checkpoint_name) {
  std::string name = checkpoint_name;
  // A BertModel checkpoint has no "bert." prefix; the heads (pretraining
  // "cls.", fine-tuning "classifier." and "qa_outputs.") never do.
  bool head = false;
  for (const char* prefix : {"bert.", "cls.", "classifier.", "qa_outputs."}) head |= name.rfind(prefix, 0) == 0;
  if (!head) name = "bert." + name;
  // TF-era LayerNorm names.
  if (ends_with(name, "LayerNorm.gamma")) name.replace(name.size() - 5, 5, "weight");
  if (ends_with(name, "LayerNorm.beta")) name.replace(name.size() - 4, 4, "bias");
  return name;
}

void save_model(const std::string& dir, PretrainingModel& model) {
  save_weights(dir, model, model.bert.config(), architecture(model));
}

void save_weights(const std::string& dir, Module& model, const BertConfig& bert_config, const std::string& architecture,
                  const json::Value& extra_config) {
  make_directories(dir);
  NamedTensors tensors;
  for (const auto& [name, p] : model.named_parameters()) tensors.emplace_back(name, p->var.value());
  // Untied, HF adds the decoder's own bias: the head's bias is written there too.
  if (const Parameter* bias = model.find_parameter("cls.predictions.bias");
      bias && model.find_parameter("cls.predictions.decoder.weight"))
    tensors.emplace_back("cls.predictions.decoder.bias", bias->var.value());
  // HF's names and shapes exactly: the absolute table HF's relative types keep
  // unused is written as zeros, so transformers loads the checkpoint with no
  // missing key (and nothing it computes depends on the values).
  if (unused_absolute_table(model, bert_config)) {
    DType dtype = tensors.empty() ? DType::f32 : tensors.front().second.dtype();
    tensors.emplace_back(kUnusedAbsoluteTable, Tensor::zeros({bert_config.max_position_embeddings,
                                                              bert_config.hidden_size}, dtype, Device::cpu()));
  }
  safetensors::save(dir + "/model.safetensors", to_hf_layout(bert_config, std::move(tensors)), {{"format", "pt"}});
  json::Value config = config_to_json(bert_config);
  config["architectures"] = json::Value::array();
  config["architectures"].push_back(hf_architecture(bert_config, architecture));
  if (extra_config.is_object())
    for (const auto& [key, value] : extra_config.items()) config[key] = value;
  write_file_atomic(dir + "/config.json", json::dump(config, 2) + "\n");
}

std::string architecture(const PretrainingModel& model) {
  if (model.bert.config().decoder) return "BertLMHeadModel";
  return model.seq_relationship ? "BertForPreTraining" : "BertForMaskedLM";
}

BertConfig load_config(const std::string& dir) {
  std::string path = dir + "/config.json";
  json::Value value;
  value = json::parse_file(path);
  return config_from_json(value, path, /*hf_lenient=*/true);
}

Checkpoint read_checkpoint(const std::string& dir, bool keep_pooler) {
  Checkpoint c;
  c.config = load_config(dir);
  c.weights_path = dir + "/model.safetensors";
  c.tensors = from_hf_layout(c.config, safetensors::load(c.weights_path), &c.file_tensors);
  check_finite(c.tensors, c.weights_path);
  c.lm_head = std::any_of(c.tensors.begin(), c.tensors.end(), [](const auto& named) {
    return canonical_name(named.first).rfind("cls.predictions.", 0) == 0;
  });
  const bool nsp_weights = std::any_of(c.tensors.begin(), c.tensors.end(), [](const auto& named) {
    return canonical_name(named.first) == "cls.seq_relationship.weight";
  });
  c.nsp = nsp_weights && !c.config.decoder;
  if (!c.nsp && !keep_pooler) {
    c.tensors.erase(std::remove_if(c.tensors.begin(), c.tensors.end(),
                                   [](const auto& named) { return canonical_name(named.first).rfind("bert.pooler.", 0) == 0; }),
                    c.tensors.end());
  }
  return c;
}

void load_weights(PretrainingModel& model, const NamedTensors& tensors, const std::string& where,
                  const std::vector<std::string>& may_be_missing) {
  load_weights(model, model.bert.config(), tensors, where, may_be_missing, {});
}

LoadReport load_weights(Module& model, const BertConfig& config, const NamedTensors& tensors, const std::string& where,
                        const std::vector<std::string>& may_be_missing, const std::vector<std::string>& may_be_unused,
                        const FileTensors* origins) {
  // The file's tensor behind one of ordo's names: what messages name.
  auto origin = [&](const std::string& name) -> const FileTensor* {
    if (!origins) return nullptr;
    auto it = origins->find(name);
    return it == origins->end() ? nullptr : &it->second;
  };
  auto file_name = [&](const std::string& name) { return origin(name) ? origin(name)->name : name; };
  LoadReport report;
  std::map<std::string, const Tensor*> by_name;
  std::map<std::string, const Tensor*> copies;  // tied copies, checked after loading
  std::vector<std::string> unexpected;
  const bool skip_absolute = unused_absolute_table(model, config);
  for (const auto& [raw, t] : tensors) {
    std::string name = canonical_name(raw);
    if (ignored_name(name) || (skip_absolute && name == kUnusedAbsoluteTable)) continue;
    if (starts_with_any(name, may_be_unused) && model.find_parameter(name) == nullptr) {
      report.unused.push_back(name);
      continue;
    }
    // A copy of a tied parameter, unless the model has the parameter itself (untied).
    bool is_copy = model.find_parameter(name) == nullptr &&
                   std::any_of(tied_copies().begin(), tied_copies().end(), [&](const auto& c) { return c.first == name; });
    ORDO_CHECK((is_copy ? copies : by_name).emplace(name, &t).second, where, ": tensor '", file_name(raw),
               "' appears twice (after normalising its name)");
  }
  // A checkpoint may carry the MLM bias only under the decoder's name. The
  // decoder's bias is the one HF adds (BertLMPredictionHead, RobertaLMHead:
  // decoder(h)); tied to "bias" it is a copy, untied it is the head's bias
  // and "bias" is left unused.
  const bool untied = model.find_parameter("cls.predictions.decoder.weight") != nullptr;
  if (copies.count("cls.predictions.decoder.bias") && (untied || !by_name.count("cls.predictions.bias"))) {
    by_name["cls.predictions.bias"] = copies["cls.predictions.decoder.bias"];
    copies.erase("cls.predictions.decoder.bias");
  }
  std::vector<std::string> missing;
  for (const auto& [name, p] : model.named_parameters()) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      (starts_with_any(name, may_be_missing) ? report.missing : missing).push_back(name);
      continue;
    }
    const Tensor& t = *it->second;
    if (t.shape() != p->var.shape()) {
      const FileTensor* file = origin(name);
      if (file && !file->part.empty())
        throw Error(detail::cat(where, ": tensor '", file->name, "' has shape ", shape_str(file->shape), ": ",
                                file->part, ", that is ", shape_str(t.shape()), " where the model expects ",
                                shape_str(p->var.shape()), " (does config.json match the weights?)"));
      throw Error(detail::cat(where, ": tensor '", file_name(name), "' has shape ", shape_str(t.shape()),
                              ", the model expects ", shape_str(p->var.shape())));
    }
    ORDO_CHECK(is_floating(t.dtype()), where, ": tensor '", file_name(name), "' has dtype ", dtype_name(t.dtype()),
               ", expected a floating-point type");
    p->var.value().copy_from(t.to(p->var.dtype()));
    by_name.erase(it);
  }
  for (const auto& [name, t] : by_name) unexpected.push_back(file_name(name));
  auto list = [](const std::vector<std::string>& names) {
    std::string s;
    for (size_t i = 0; i < names.size() && i < 8; ++i) s += (i ? ", " : "") + names[i];
    return names.size() > 8 ? s + ", ... (" + std::to_string(names.size()) + " in all)" : s;
  };
  ORDO_CHECK(missing.empty(), where, ": the checkpoint lacks ", missing.size(), " parameters of the model: ",
             list(missing), " (does its config match the model's?)");
  ORDO_CHECK(unexpected.empty(), where, ": the checkpoint has ", unexpected.size(),
             " tensors the model does not: ", list(unexpected), " (does its config match the model's?)");
  // A tied model (tie_word_embeddings, HF's default) projects onto the word
  // embeddings: a copy of them in the checkpoint must hold their values (to
  // the coarser precision: an f16 copy of an f32 table is the same table), or
  // the model that wrote it had an output layer of its own.
  for (const auto& [copy, original] : tied_copies()) {
    auto it = copies.find(copy);
    Parameter* p = model.find_parameter(original);
    if (it == copies.end() || p == nullptr) continue;
    const Tensor& t = *it->second;
    ORDO_CHECK(t.shape() == p->var.shape() && is_floating(t.dtype()), where, ": tensor '", file_name(copy),
               "' has shape ", shape_str(t.shape()), " and dtype ", dtype_name(t.dtype()), ", but the model ties it to '",
               file_name(original), "' (", shape_str(p->var.shape()), ")");
    // Compared on the host (the parameter may be on a GPU), in the coarser dtype of the two.
    const DType common = dtype_size(t.dtype()) < dtype_size(p->var.dtype()) ? t.dtype() : p->var.dtype();
    const std::vector<double> theirs = t.to(common).to_doubles();
    const std::vector<double> ours = p->var.value().to(Device::cpu()).to(common).to_doubles();
    const auto differ = std::mismatch(theirs.begin(), theirs.end(), ours.begin());
    if (differ.first == theirs.end()) continue;
    const int64_t at = differ.first - theirs.begin();
    const std::string element =
        t.dim() == 2 ? detail::cat("[", at / t.size(1), ", ", at % t.size(1), "]") : detail::cat("[", at, "]");
    throw Error(detail::cat(where, ": tensor '", file_name(copy), "' differs from '", file_name(original),
                            "' (first at ", element, ": ", *differ.first, " against ",
                            *differ.second, "), yet the config ties the two (tie_word_embeddings true, the default). "
                            "If the model's output layer is its own, say \"tie_word_embeddings\": false in its "
                            "config.json"));
  }
  return report;
}

}  // namespace ordo::nn
