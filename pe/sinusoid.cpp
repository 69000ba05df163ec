#include "pe/sinusoid.h"

#include "pe/common.h"
#include "pe/per_head.h"

namespace ordo::pe {

SinusoidalAbsolute::SinusoidalAbsolute(const nn::BertConfig& config, bool learnable, double amplitude, Device device)
    : learnable_(learnable), amplitude_(amplitude), dim_(config.hidden_size), device_(device) {
  ORDO_CHECK(dim_ % 2 == 0, name(), ": hidden_size must be even (sin and cos pairs), got ", dim_);
  if (learnable_) {
    offsets_ = &add_parameter("frequency_offsets", {dim_ / 2}, nn::Init::zeros(), /*decay=*/false, device);
  }
}

Var SinusoidalAbsolute::frequencies() const {
  if (!learnable_) {
    DType dtype = device_.is_cpu() ? DType::f64 : DType::f32;
    return Var(sinusoid_frequencies(*this, dim_, dtype, device_));
  }
  // w = w^fixed + d, in the offsets' dtype (f32 in training, f64 in checks).
  const Var& d = offsets_->var;
  return add(Var(sinusoid_frequencies(*this, dim_, d.dtype(), d.device())), d);
}

nn::PositionEncoding::LearnedFrequencies SinusoidalAbsolute::learned_frequencies(int) const {
  if (!learnable_) return {};
  LearnedFrequencies f;
  f.fixed = sinusoid_frequencies(dim_, DType::f64, Device::cpu());
  f.learned = add(f.fixed, offsets_->var.value().to(Device::cpu()).to(DType::f64));
  f.source = name() + " (D = " + std::to_string(dim_) + ")";
  return f;
}

Var SinusoidalAbsolute::input_embedding(const Tensor& positions, nn::Context&) {
  Var w = frequencies();
  // P_{p,2i} = sin(w_i p), P_{p,2i+1} = cos(w_i p) for every position value:
  // scaled or longer-than-training positions need no special case.
  Var p = sinusoid(real_positions(positions, w.dtype()), w);
  return amplitude_ == 1 ? p : affine(p, amplitude_);
}

}  // namespace ordo::pe
