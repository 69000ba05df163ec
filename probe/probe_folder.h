// The folder `ordo probe --out DIR` writes, from a checkpoint: what the
// command and the experiment runner (experiment/runner.h) both make.
//
// For each probed layer K:
//   attention_layerK.csv    the softmax attention averaged over heads and words (L x L)
//   scores_layerK.csv       the pre-softmax scores averaged likewise (Wang et al. App. J)
//   attention_layerK.svg, scores_layerK.svg   their heatmaps
//   attention_heads_layerK.svg  each head's attention, averaged over the words
// and
//   indicators.json         {"layer_K": {"with_special": {...}, "without_special": {...}}, ...}
//   probe.json              what was probed: checkpoint, variant, words, length, layers, seed, files
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "nn/bert_config.h"
#include "probe/probe.h"
#include "tensor/tensor.h"

namespace ordo::probe {

struct ProbeRequest {
  std::string checkpoint;  // a checkpoint directory, or a run directory (its latest checkpoint)
  std::string vocab;       // "": the checkpoint's own, else its run's
  std::string layers = "1";  // a layer number (1-based) or "all"
  ProbeOptions options;      // its layers are taken from `layers`
  Device device;
};

// A layer's text as written, before any model says how many it has: a layer
// number from 1, or "all" (0); an error naming `what` otherwise.
int layer_number(const std::string& text, const std::string& what);

// The request's layers as numbers: "all" or one layer K in 1..layers;
// an error naming the flag --layer otherwise.
std::vector<int> parse_layers(const std::string& text, int64_t layers);

// The request's settings against a model config before any model exists (an
// experiment checks them for every config before its first run): the layers
// within the model's, and an explicit length within the positions its PE
// reaches. An error naming `where` (the config) and the setting.
void check_probe_settings(const ProbeRequest& request, const nn::BertConfig& config, const std::string& where);

// The checkpoint probed and every file of its folder, rendered in memory.
struct ProbeFolder {
  std::string checkpoint;  // the checkpoint directory probed
  std::string vocab;       // the vocabulary read
  std::string variant;     // its model.pe
  ProbeResult result;
  std::vector<std::pair<std::string, std::string>> files;  // (name, bytes)
};

// Resolves, loads and probes the request's checkpoint and renders the folder:
// nothing is written (write_folder(out, folder.files) writes it whole).
ProbeFolder probe_folder(const ProbeRequest& request);

}  // namespace ordo::probe
