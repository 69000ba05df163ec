// The position-encoding variants by name, as the model config selects them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/bert_config.h"
#include "nn/position.h"

namespace ordo::pe {

// The variant config.pe names, with config.pe_options; an unknown name is an
// error listing the known ones.
std::unique_ptr<nn::PositionEncoding> make_position_encoding(const nn::BertConfig& config, Device device);
const std::vector<std::string>& variant_names();

}  // namespace ordo::pe
