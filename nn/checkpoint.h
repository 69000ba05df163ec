// Model checkpoints that move both ways between ordo and HuggingFace:
//   DIR/config.json        HF's config of the model's family (BertConfig's
//                          fields + ordo's pe fields; RoBERTa's; GPT2Config's)
//   DIR/model.safetensors  every parameter under its HF name
//                          ("bert.embeddings.word_embeddings.weight", ...,
//                          "cls.predictions.bias"; Linear weights [out, in];
//                          RoBERTa's and GPT-2's names and shapes for those
//                          families, nn/hf_layout.h)
// so transformers.BertForMaskedLM.from_pretrained(DIR) reads an ordo
// checkpoint with absolute PE, and ordo reads HF BERT, RoBERTa and GPT-2
// checkpoints (config.json's model_type says which; others are refused).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/heads.h"
#include "nn/hf_layout.h"

namespace ordo::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// transformers' class for the heads a model holds: BertForPreTraining (MLM
// and NSP), BertForMaskedLM (MLM alone), BertLMHeadModel (a causal decoder).
std::string architecture(const PretrainingModel& model);

// Writes DIR/config.json (naming architecture(model) in "architectures") and
// DIR/model.safetensors, each atomically (DIR is created when missing). With position_embedding_type relative_key or
// relative_key_query the file also holds HF's unused absolute table (zeros),
// so its names and shapes are exactly those HF writes.
void save_model(const std::string& dir, PretrainingModel& model);
// The same for any model on a BertModel "bert" (the fine-tuning models):
// `architecture` names its transformers class in config.json, which also
// gets the members of `extra_config` (num_labels, id2label, ...).
void save_weights(const std::string& dir, Module& model, const BertConfig& config, const std::string& architecture,
                  const json::Value& extra_config = json::Value());

BertConfig load_config(const std::string& dir);

// A checkpoint read whole: its config, its tensors and the heads they hold.
struct Checkpoint {
  BertConfig config;
  NamedTensors tensors;      // in ordo's names and shapes (nn/hf_layout.h)
  bool nsp = false;          // the NSP head (with the pooler it reads)
  bool lm_head = false;      // tensors of the LM head (cls.predictions.*): a bare encoder has none
  std::string weights_path;  // DIR/model.safetensors, for messages
  FileTensors file_tensors;  // the file's own tensor behind each renamed one (RoBERTa, GPT-2), for messages
};
// The causal LM head comes from the config (is_decoder); the NSP head from
// the weights (cls.seq_relationship.*), not from "architectures": HF's
// bert-base-uncased names BertForMaskedLM while holding it, and so did ordo's
// MLM+NSP checkpoints before they were named right. A decoder has no NSP
// head. Without one, a pooler the checkpoint holds (HF's BertModel writes
// it) is dropped: nothing would read it. A NaN or Inf in any tensor is an
// error naming the tensor and the element.
// keep_pooler: keep the pooler of a checkpoint without the NSP head (a
// fine-tuned classifier reads it).
Checkpoint read_checkpoint(const std::string& dir, bool keep_pooler = false);

// Copies checkpoint tensors into the model's parameters. Accepted as HF
// writes them: names with or without the "bert." prefix, the legacy
// LayerNorm "gamma"/"beta", the "embeddings.position_ids" buffer (ignored),
// the tied "cls.predictions.decoder.weight/bias" (present or not), and with
// position_embedding_type relative_key / relative_key_query the absolute
// "embeddings.position_embeddings.weight" HF keeps but never uses (save_model
// writes it as zeros for HF). Errors
// name the checkpoint and the tensor: a parameter the checkpoint lacks
// (unless its name starts with one of `may_be_missing`), a tensor the model
// does not have, a shape that differs; a tensor renamed from another layout
// (`origins`: RoBERTa's, GPT-2's) by the file's own name.
void load_weights(PretrainingModel& model, const NamedTensors& tensors, const std::string& where,
                  const std::vector<std::string>& may_be_missing = {});

// The same for any model on a BertModel named "bert" (the fine-tuning models
// of nn/task_heads.h), configured by `config`. Checkpoint tensors whose name
// starts with one of `may_be_unused` (the pretraining heads "cls." a
// classifier drops) are left out rather than refused. Says what it did.
struct LoadReport {
  std::vector<std::string> missing;  // parameters kept at their initial values (matched may_be_missing)
  std::vector<std::string> unused;   // checkpoint tensors left out (matched may_be_unused)
};
LoadReport load_weights(Module& model, const BertConfig& config, const NamedTensors& tensors, const std::string& where,
                        const std::vector<std::string>& may_be_missing, const std::vector<std::string>& may_be_unused,
                        const FileTensors* origins = nullptr);

// The checkpoint's name for an ordo parameter name after normalising: what
// load_weights matches on (exposed for tests).
std::string canonical_name(const std::string& checkpoint_name);

}  // namespace ordo::nn
