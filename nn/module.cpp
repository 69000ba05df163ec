#include "nn/module.h"

#include <algorithm>

#include "tensor/ops.h"

namespace ordo::nn {

InputFacts input_facts(const int64_t* positions, const int64_t* segments, int64_t batch, int64_t length) {
  InputFacts f;
  if (batch <= 0 || length <= 0) return f;
  f.position_min = f.position_max = positions[0];
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t* row = positions + b * length;
    auto [lo, hi] = std::minmax_element(row, row + length);
    f.position_min = std::min(f.position_min, *lo);
    f.position_max = std::max(f.position_max, *hi);
    f.widest = std::max(f.widest, *hi - *lo);
    if (b > 0 && !std::equal(row, row + length, positions)) f.rows_identical = false;
    for (int64_t i = 1; i < length && f.consecutive; ++i) f.consecutive = row[i] == row[0] + i;
  }
  if (segments) {
    auto [lo, hi] = std::minmax_element(segments, segments + batch * length);
    f.segment_min = *lo;
    f.segment_max = *hi;
  }
  return f;
}

Parameter& Module::add_parameter(const std::string& name, const Shape& shape, Init init, bool decay,
                                 Device device) {
  for (const auto& p : parameters_)
    ORDO_CHECK(p.first != name, "parameter '", name, "' is registered twice");
  auto param = std::make_unique<Parameter>();
  param->var = Var(Tensor::zeros(shape, DType::f32, device), true, name);
  param->init = init;
  param->decay = decay;
  Parameter& ref = *param;
  parameters_.emplace_back(name, std::move(param));
  return ref;
}

void Module::collect(const std::string& prefix, std::vector<NamedParameter>& out) {
  for (auto& [name, p] : parameters_) out.emplace_back(prefix + name, p.get());
  // A child registered under "" lends its parameters to this module's names
  // (a composite position encoding whose parts choose their own paths).
  for (auto& [name, child] : children_) child->collect(name.empty() ? prefix : prefix + name + ".", out);
}

std::vector<NamedParameter> Module::named_parameters() {
  std::vector<NamedParameter> out;
  collect("", out);
  return out;
}

Parameter* Module::find_parameter(const std::string& name) {
  for (auto& [full, p] : named_parameters())
    if (full == name) return p;
  return nullptr;
}

int64_t Module::parameter_count() {
  int64_t n = 0;
  for (auto& [name, p] : named_parameters()) n += p->var.numel();
  return n;
}

void Module::to_dtype(DType dtype) {
  for (auto& [name, p] : named_parameters()) p->var = Var(p->var.value().to(dtype), true, p->var.name());
}

void join_parameters(const std::vector<Parameter*>& params) {
  ORDO_CHECK(!params.empty(), "join_parameters: no parameter");
  const Tensor& first = params[0]->var.value();
  ORDO_CHECK(first.dim() >= 1, "join_parameters: a scalar parameter has no rows");
  Shape shape = first.shape();
  shape[0] = 0;
  for (const Parameter* p : params) {
    const Tensor& t = p->var.value();
    ORDO_CHECK(t.dtype() == first.dtype() && t.device() == first.device() && t.dim() == first.dim() &&
                   std::equal(t.shape().begin() + 1, t.shape().end(), first.shape().begin() + 1),
               "join_parameters: ", p->var.name(), " ", shape_str(t.shape()), " does not stack under ",
               params[0]->var.name(), " ", shape_str(first.shape()));
    shape[0] += t.size(0);
  }
  const Tensor block = Tensor::empty(shape, first.dtype(), first.device());
  int64_t at = 0;
  for (Parameter* p : params) {
    const Tensor rows = block.slice(0, at, at + p->var.size(0));
    rows.copy_from(p->var.value());
    p->var = Var(rows, true, p->var.name());
    at += rows.size(0);
  }
}

const Parameter* pack_product_weights(Module& module) {
  std::vector<Parameter*> weights;
  for (auto& [name, p] : module.named_parameters())
    if (p->product_weight && p->var.dtype() == DType::f32) weights.push_back(p);
  if (weights.empty()) return nullptr;
  // Each weight starts 8 elements aligned (16 bytes of the bf16 rounding),
  // except one that continued the weight before it (a join), which still does.
  constexpr int64_t kAlign = 8;
  std::vector<int64_t> at(weights.size());
  int64_t end = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const Tensor& t = weights[i]->var.value();
    ORDO_CHECK(t.device() == weights[0]->var.device(), "pack_product_weights: ", weights[i]->var.name(), " is on ",
               t.device().str(), ", ", weights[0]->var.name(), " on ", weights[0]->var.device().str());
    const Tensor* before = i > 0 ? &weights[i - 1]->var.value() : nullptr;
    const bool continues = before && t.shares_storage_with(*before) && before->is_contiguous() &&
                           t.is_contiguous() && t.offset() == before->offset() + before->numel();
    at[i] = continues ? end : (end + kAlign - 1) / kAlign * kAlign;
    end = at[i] + t.numel();
  }
  const Tensor block = Tensor::zeros({end}, DType::f32, weights[0]->var.device());  // gaps rounded too: zeros
  for (size_t i = 0; i < weights.size(); ++i) {
    Parameter* p = weights[i];
    const Tensor place = block.slice(0, at[i], at[i] + p->var.numel()).view(p->var.shape());
    place.copy_from(p->var.value());
    p->var = Var(place, true, p->var.name());
  }
  return weights[0];
}

uint64_t init_stream(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h | (1ull << 63);  // the top bit keeps init streams apart from dropout streams
}

void initialize(Module& module, uint64_t seed) {
  for (auto& [name, p] : module.named_parameters()) {
    const Tensor& value = p->var.value();
    switch (p->init.kind) {
      case Init::Kind::zeros: value.fill_(0); break;
      case Init::Kind::ones: value.fill_(1); break;
      case Init::Kind::constant: value.fill_(p->init.value); break;
      case Init::Kind::normal: normal_(value, 0, p->init.value, seed, init_stream(name)); break;
      case Init::Kind::values:
        ORDO_CHECK(p->init.values.shape() == value.shape(), "initialize: ", name, " starts from values of shape ",
                   shape_str(p->init.values.shape()), ", not its own ", shape_str(value.shape()));
        value.copy_from(p->init.values.to(value.dtype()).to(value.device()));
        break;
    }
  }
}

}  // namespace ordo::nn
