// The position-encoding variants by name, as the model config selects them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/heads.h"

namespace ordo::pe {

// The variant config.pe names, with config.pe_options; an unknown name is an
// error listing the known ones.
std::unique_ptr<nn::PositionEncoding> make_position_encoding(const nn::BertConfig& config, Device device);
const std::vector<std::string>& variant_names();

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
// holds (nn::read_checkpoint): MLM, MLM+NSP or a causal decoder, as saved.
std::unique_ptr<nn::PretrainingModel> load_model(const std::string& dir, Device device);

}  // namespace ordo::pe
