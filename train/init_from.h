// train.init_from: a pretraining run that starts from another model's
// weights with its own position encoding — Wang et al. 2021 §4: "the
// pre-trained BERT-base-uncased checkpoint is used to train by replacing the
// original absolute PE module with a new PE variant" (their Table 6's
// BERT-base rows are not trained from scratch).
#pragma once

#include <string>
#include <vector>

#include "nn/heads.h"
#include "train/pretrain.h"

namespace ordo::train {

// Checked before the run writes anything: the checkpoint (or run) exists, its
// model has this config's width, depth, heads and feed-forward size, and its
// vocabulary is the run's (data.vocab must name it: the same ids must mean the
// same words). Errors say which key differs and what the checkpoint holds.
void check_init_from(const RunConfig& c, const nn::BertConfig& model);

// What the warm start took and left.
struct InitFromReport {
  std::string checkpoint;          // the checkpoint read (a run's latest)
  int64_t copied = 0;              // parameters copied
  std::vector<std::string> fresh;  // parameters kept as initialised (the new PE's, a head the checkpoint lacks)
  std::vector<std::string> unused; // checkpoint tensors left out (the absolute table a relative PE does not read)
};

// Copies into `model` every parameter outside its position encoding from the
// checkpoint (each must be there, with its shape); the position encoding's
// parameters where the checkpoint holds them under the same name (the learned
// APE keeps BERT's table; its shape must match, so model.max_position_embeddings
// is the checkpoint's), else they keep their initialisation. The checkpoint's
// absolute table is left out when the model has none; an NSP head and pooler
// the model does not train (objective mlm) are left out, and ones the
// checkpoint lacks are initialised.
InitFromReport init_from(nn::PretrainingModel& model, const std::string& path);

}  // namespace ordo::train
