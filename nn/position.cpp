#include "nn/position.h"

#include <cmath>

namespace ordo::nn {

Ablation parse_ablation(const std::string& name, const std::string& where) {
  if (name == "none") return Ablation::none;
  if (name == "contextual") return Ablation::contextual;
  if (name == "positional") return Ablation::positional;
  throw Error(where + ": ablation '" + name + "' is not one of none, contextual, positional");
}

const char* ablation_name(Ablation a) {
  switch (a) {
    case Ablation::none: return "none";
    case Ablation::contextual: return "contextual";
    case Ablation::positional: return "positional";
  }
  return "?";
}

double PositionEncoding::score_scale(const AttentionState& s) const {
  return 1.0 / std::sqrt(static_cast<double>(s.head_dim));
}

}  // namespace ordo::nn
