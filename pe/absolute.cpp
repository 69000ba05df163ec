#include "pe/absolute.h"

#include "pe/common.h"
#include "tensor/ops.h"

namespace ordo::pe {

LearnedAbsolute::LearnedAbsolute(const nn::BertConfig& config, Device device)
    : table_(add_parameter("weight", {config.max_position_embeddings, config.hidden_size},
                           nn::Init::normal(config.initializer_range), true, device)) {}

Var LearnedAbsolute::input_embedding(const Tensor& positions, nn::Context& ctx) {
  const int64_t rows = table_.var.size(0);
  auto [smallest, largest] = position_range(positions, &ctx);
  ORDO_CHECK(smallest >= 0 && largest < rows, "ape_learned: position ", largest >= rows ? largest : smallest,
             " is outside the learned table of ", rows, " positions (0..", rows - 1,
             "); an absolute table cannot extrapolate — raise max_position_embeddings or use a relative variant");
  return embedding(table_.var, positions);  // P[p_i]
}

}  // namespace ordo::pe
