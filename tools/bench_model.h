// What the model benchmarks (`ordo bench train`, `ordo bench pe`) share: a
// config named like the repository's configs/ files, and a random batch.
#pragma once

#include <cstdint>
#include <string>

#include "nn/bert.h"

namespace ordo::bench {

// A config name ("tiny") is a file of the repository's configs/ folder; a
// path is itself. An error names both places looked at.
std::string resolve_config(const std::string& name);

// Random token ids above the special tokens and every 7th position an MLM
// target (~15%), from Philox: the values do not change the work done.
nn::BertInputs random_batch(int64_t batch, int64_t length, int64_t vocab, Device device, Tensor& labels);

}  // namespace ordo::bench
