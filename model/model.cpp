#include "model/model.h"

#include <algorithm>
#include <string>
#include <vector>

#include "nn/checkpoint.h"
#include "nn/hf_layout.h"
#include "pe/registry.h"
#include "tensor/safetensors.h"

namespace ordo::model {

std::unique_ptr<nn::PretrainingModel> build_model(const nn::BertConfig& config, Device device, bool nsp,
                                                  uint64_t seed) {
  auto model = std::make_unique<nn::PretrainingModel>(config, pe::make_position_encoding(config, device), device, nsp);
  nn::initialize_bert(*model, seed);
  return model;
}

std::unique_ptr<nn::PretrainingModel> load_model(const std::string& dir, Device device, bool nsp, uint64_t seed) {
  nn::BertConfig config = nn::load_config(dir);
  auto model = build_model(config, device, nsp, seed);
  std::string path = dir + "/model.safetensors";
  std::vector<std::string> fresh;
  if (nsp) fresh = {"bert.pooler.", "cls.seq_relationship."};
  nn::FileTensors origins;
  nn::load_weights(*model, config, nn::from_hf_layout(config, safetensors::load(path), &origins), path, fresh, {},
                   &origins);
  return model;
}

std::unique_ptr<nn::PretrainingModel> load_model(const std::string& dir, Device device, nn::LoadReport* report) {
  nn::Checkpoint checkpoint = nn::read_checkpoint(dir);
  auto model = build_model(checkpoint.config, device, checkpoint.nsp, /*seed=*/0);
  // A bare encoder (HF's BertModel, RobertaModel, GPT2Model with an untied
  // head) has no LM head: it stays as initialised and is listed as missing;
  // a head the checkpoint holds in part is an error, as any missing tensor.
  const std::vector<std::string> fresh =
      checkpoint.lm_head ? std::vector<std::string>{} : std::vector<std::string>{"cls.predictions."};
  // A fine-tuned model's task head (ordo's or HF's classifier, span head) is
  // left out and listed: what reads the encoder (ordo analyze) reads it too.
  const std::vector<std::string> task_heads = {"classifier.", "qa_outputs."};
  nn::LoadReport r =
      nn::load_weights(*model, checkpoint.config, checkpoint.tensors, checkpoint.weights_path, fresh, task_heads,
                       &checkpoint.file_tensors);
  if (report) *report = r;
  return model;
}

namespace {

// fresh: the parameters the checkpoint may lack; unused: its tensors the model may leave out.
// new_head: the checkpoint's task head (the first of `fresh`) is left out and
// the model's starts anew.
template <class Model, class... Args>
std::unique_ptr<Model> load_task_model(nn::Checkpoint checkpoint, Device device, uint64_t seed, nn::LoadReport* report,
                                       const std::vector<std::string>& fresh, const std::vector<std::string>& unused,
                                       bool new_head, Args... args) {
  std::vector<std::string> left_out = unused;
  if (new_head) left_out.push_back(fresh[0]);
  if (checkpoint.config.decoder) left_out.push_back("bert.pooler.");  // a decoder's classifier reads no pooler
  auto model = std::make_unique<Model>(checkpoint.config, pe::make_position_encoding(checkpoint.config, device), device,
                                       args...);
  nn::initialize_bert(*model, model->bert, seed);
  if (new_head)
    checkpoint.tensors.erase(std::remove_if(checkpoint.tensors.begin(), checkpoint.tensors.end(),
                                            [&](const auto& t) { return t.first.rfind(fresh[0], 0) == 0; }),
                             checkpoint.tensors.end());
  nn::LoadReport r =
      nn::load_weights(*model, checkpoint.config, checkpoint.tensors, checkpoint.weights_path, fresh, left_out,
                       &checkpoint.file_tensors);
  if (report) *report = r;
  return model;
}

}  // namespace

std::unique_ptr<nn::SequenceClassifier> load_classifier(const std::string& dir, int num_labels, Device device,
                                                        uint64_t seed, nn::LoadReport* report, bool new_head) {
  nn::Checkpoint checkpoint = nn::read_checkpoint(dir, /*keep_pooler=*/true);
  if (!new_head)  // a head trained for another label set does not fit: say so, and how to start a new one
    for (const auto& [name, tensor] : checkpoint.tensors)
      if (nn::canonical_name(name) == "classifier.weight" && tensor.dim() == 2)
        ORDO_CHECK(tensor.shape()[0] == num_labels, dir, " holds a classifier trained for ", tensor.shape()[0],
                   " label(s) (", name, ") and this task has ", num_labels,
                   ": give --new-head to fine-tune the encoder with a new classifier (initialised, listed as new)");
  return load_task_model<nn::SequenceClassifier>(std::move(checkpoint), device, seed, report,
                                                 {"classifier.", "bert.pooler."}, {"cls."}, new_head, num_labels);
}

std::unique_ptr<nn::SpanExtractor> load_span_extractor(const std::string& dir, Device device, uint64_t seed,
                                                       nn::LoadReport* report, bool new_head) {
  return load_task_model<nn::SpanExtractor>(nn::read_checkpoint(dir, /*keep_pooler=*/true), device, seed, report,
                                            {"qa_outputs."}, {"cls.", "bert.pooler."}, new_head);
}

}  // namespace ordo::model
