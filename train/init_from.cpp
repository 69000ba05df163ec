#include "train/init_from.h"

#include <set>

#include "base/error.h"
#include "base/file_io.h"
#include "nn/checkpoint.h"
#include "train/checkpoint_paths.h"

namespace ordo::train {

namespace {

// The vocabulary a checkpoint was trained with: its own vocab.txt, else its
// run's (run_of_checkpoint); empty when neither exists.
std::string checkpoint_vocab(const std::string& checkpoint) {
  if (file_exists(checkpoint + "/vocab.txt")) return checkpoint + "/vocab.txt";
  const std::string run = run_of_checkpoint(checkpoint);
  return !run.empty() && file_exists(run + "/vocab.txt") ? run + "/vocab.txt" : "";
}

}  // namespace

void check_init_from(const RunConfig& c, const nn::BertConfig& model) {
  const std::string& from = c.train.init_from;
  const std::string dir = resolve_checkpoint(from, "train.init_from");
  const nn::BertConfig theirs = nn::load_config(dir);
  auto same = [&](const char* key, const auto& ours, const auto& other) {
    ORDO_CHECK(ours == other, "train.init_from '", from, "': its model has ", key, " = ", other,
               ", this config ", ours, " (model.", key, "); only the position encoding may differ");
  };
  same("hidden_size", model.hidden_size, theirs.hidden_size);
  same("num_hidden_layers", model.num_hidden_layers, theirs.num_hidden_layers);
  same("num_attention_heads", model.num_attention_heads, theirs.num_attention_heads);
  same("intermediate_size", model.intermediate_size, theirs.intermediate_size);
  same("hidden_act", model.hidden_act, theirs.hidden_act);
  same("type_vocab_size", model.type_vocab_size, theirs.type_vocab_size);
  same("decoder", model.decoder, theirs.decoder);
  same("pre_layer_norm", model.pre_layer_norm, theirs.pre_layer_norm);
  // Word ids must mean the words they meant: the run reads the checkpoint's vocabulary.
  const std::string vocab = checkpoint_vocab(dir);
  ORDO_CHECK(!c.data.vocab.empty(), "train.init_from '", from, "' needs data.vocab: the checkpoint's vocabulary",
             vocab.empty() ? std::string(" (its vocab.txt)") : " (" + vocab + ")",
             ", so that each word id means what it meant in the weights");
  ORDO_CHECK(vocab.empty() || read_file(vocab) == read_file(c.data.vocab), "train.init_from '", from,
             "': data.vocab '", c.data.vocab, "' is not the checkpoint's vocabulary ", vocab);
  same("vocab_size", model.vocab_size, theirs.vocab_size);
}

InitFromReport init_from(nn::PretrainingModel& model, const std::string& path) {
  InitFromReport report;
  report.checkpoint = resolve_checkpoint(path, "train.init_from");
  const nn::Checkpoint checkpoint = nn::read_checkpoint(report.checkpoint);
  // The position encoding's parameters, by their names in the model.
  std::set<const nn::Parameter*> own;
  for (const auto& [name, p] : model.bert.position_encoding().named_parameters()) own.insert(p);
  std::vector<std::string> may_be_missing = {"cls.seq_relationship.", "bert.pooler."};
  for (const auto& [name, p] : model.named_parameters())
    if (own.count(p)) may_be_missing.push_back(name);
  const std::vector<std::string> may_be_unused = {"bert.embeddings.position_embeddings.", "cls.seq_relationship.",
                                                  "bert.pooler."};
  nn::LoadReport loaded = nn::load_weights(model, model.bert.config(), checkpoint.tensors,
                                           "train.init_from " + checkpoint.weights_path, may_be_missing, may_be_unused,
                                           &checkpoint.file_tensors);
  report.fresh = std::move(loaded.missing);
  report.unused = std::move(loaded.unused);
  report.copied = static_cast<int64_t>(model.named_parameters().size() - report.fresh.size());
  return report;
}

}  // namespace ordo::train
