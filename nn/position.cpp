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

namespace {

// The cache's key: what the constant is, byte for byte.
template <class T>
std::string constant_key(const std::vector<T>& values, const Shape& shape, DType dtype, Device device) {
  std::string key = std::string(dtype_name(dtype)) + "|" + device.str() + "|";
  for (int64_t d : shape) key += std::to_string(d) + ",";
  key += "|";
  key.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  return key;
}

}  // namespace

const Tensor& PositionEncoding::constant(const std::vector<double>& values, const Shape& shape, DType dtype,
                                         Device device) const {
  const std::string key = constant_key(values, shape, dtype, device);
  std::lock_guard<std::mutex> lock(constants_mutex_);
  auto it = constants_.find(key);
  if (it == constants_.end()) it = constants_.emplace(key, Tensor::from_vector(values, shape).to(dtype).to(device)).first;
  return it->second;
}

const Tensor& PositionEncoding::constant(const std::vector<int64_t>& values, const Shape& shape, Device device) const {
  const std::string key = constant_key(values, shape, DType::i64, device);
  std::lock_guard<std::mutex> lock(constants_mutex_);
  auto it = constants_.find(key);
  if (it == constants_.end()) it = constants_.emplace(key, Tensor::from_vector(values, shape, device)).first;
  return it->second;
}

}  // namespace ordo::nn
