#include "nn/position.h"

#include <cmath>

namespace ordo::nn {

double PositionEncoding::score_scale(const AttentionState& s) const {
  return 1.0 / std::sqrt(static_cast<double>(s.head_dim));
}

}  // namespace ordo::nn
