// Models as a config or a checkpoint describes them: BERT, RoBERTa or GPT-2
// with the configured position encoding (pe/registry.h) and the heads asked
// for (pretraining, sequence classification, span extraction), built afresh
// or loaded from a checkpoint directory of any family ordo reads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "nn/checkpoint.h"
#include "nn/heads.h"
#include "nn/task_heads.h"

namespace ordo::model {

// BERT with its pretraining heads and the configured position encoding,
// parameters initialised from Philox(seed) as BERT initialises them.
std::unique_ptr<nn::PretrainingModel> build_model(const nn::BertConfig& config, Device device, bool nsp,
                                                  uint64_t seed);
// A model read from a checkpoint directory (config.json + model.safetensors).
// With nsp, a checkpoint without the NSP head (an MLM-only one) is accepted
// and the head initialised from `seed`.
std::unique_ptr<nn::PretrainingModel> load_model(const std::string& dir, Device device, bool nsp,
                                                 uint64_t seed = 0);
// A model read from a checkpoint directory with the heads the checkpoint
// holds (nn::read_checkpoint): MLM, MLM+NSP or a causal decoder, as saved;
// BERT, RoBERTa or GPT-2 (config.json's model_type). A bare encoder (no
// cls.predictions.*: HF's BertModel as all-MiniLM-L6-v2 ships it) loads
// too: its LM head is left as initialised and `report->missing` lists it,
// for a command that needs the logits to say they are absent. A fine-tuned
// model (ordo finetune's best/, HF's ...ForSequenceClassification or
// ...ForQuestionAnswering) loads as such a bare encoder, its task head
// (classifier.*, qa_outputs.*) left out and listed in `report->unused`.
std::unique_ptr<nn::PretrainingModel> load_model(const std::string& dir, Device device,
                                                 nn::LoadReport* report = nullptr);

// A fine-tuning model (nn/task_heads.h) from a checkpoint directory: an ordo
// run's (MLM or MLM+NSP), HF's BertForPreTraining/BertForMaskedLM, a bare
// BertModel (names without "bert.", with a pooler or without: what
// sentence-transformers and AutoModel.save_pretrained write) or a fine-tuned
// model of the same kind. The pretraining heads are left out; the task head
// (and, for a classifier, a pooler the checkpoint lacks) start from
// Philox(seed). `report` (optional) says what was initialised and left out.
// A causal decoder keeps its mask: its classifier reads the last real token
// (nn/task_heads.h), without a pooler. A checkpoint's classifier trained for
// another number of labels is refused, naming both counts, unless new_head:
// then the checkpoint's task head is left out and a new one initialised.
std::unique_ptr<nn::SequenceClassifier> load_classifier(const std::string& dir, int num_labels, Device device,
                                                        uint64_t seed, nn::LoadReport* report = nullptr,
                                                        bool new_head = false);
std::unique_ptr<nn::SpanExtractor> load_span_extractor(const std::string& dir, Device device, uint64_t seed,
                                                       nn::LoadReport* report = nullptr, bool new_head = false);

}  // namespace ordo::model
