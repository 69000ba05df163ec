#include "pe/absolute.h"

#include "pe/common.h"
#include "tensor/ops.h"

namespace ordo::pe {

LearnedAbsolute::LearnedAbsolute(const nn::BertConfig& config, Device device)
    : table_(add_parameter("weight", {config.max_position_embeddings, config.hidden_size},
                           nn::Init::normal(config.initializer_range), true, device)),
      offset_(config.position_offset) {}

Var LearnedAbsolute::input_embedding(const Tensor& positions, nn::Context& ctx) {
  const InputLookup lookup = input_lookup(positions, ctx);
  return embedding(lookup.table, lookup.rows);  // P[p_i + offset]
}

nn::PositionEncoding::InputLookup LearnedAbsolute::input_lookup(const Tensor& positions, nn::Context& ctx) {
  const int64_t rows = table_.var.size(0) - offset_;
  auto [smallest, largest] = position_range(positions, &ctx);
  // With an offset, -1 is a padding token's position (its row is the padding row).
  const int64_t lowest = offset_ > 0 ? -1 : 0;
  ORDO_CHECK(smallest >= lowest && largest < rows, "ape_learned: position ", largest >= rows ? largest : smallest,
             " is outside the learned table of ", rows, " positions (0..", rows - 1,
             offset_ > 0 ? ", rows from " + std::to_string(offset_) : std::string(),
             "); an absolute table cannot extrapolate — raise max_position_embeddings or use a relative variant");
  if (offset_ == 0) return {table_.var, positions};
  std::vector<int64_t> rows_of = positions.to(Device::cpu()).contiguous().to_vector<int64_t>();
  for (int64_t& r : rows_of) r += offset_;
  return {table_.var, Tensor::from_vector(rows_of, positions.shape()).to(positions.device())};
}

}  // namespace ordo::pe
