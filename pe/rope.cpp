#include "pe/rope.h"

#include <cmath>
#include <vector>

#include "autograd/ops.h"

namespace ordo::pe {

Rotary::Rotary(const nn::BertConfig& c, FieldReader& o, Device)
    : head_dim_(c.head_dim()),
      base_(o.number("base", 10000.0, 1.0 + 1e-9, 1e300)),
      interleaved_(o.string("pairing", "interleaved", {"interleaved", "half"}) == "interleaved") {
  ORDO_CHECK(head_dim_ % 2 == 0, "rope: the head width must be even (dimensions rotate in pairs), got ", head_dim_);
}

Tensor Rotary::frequencies(DType dtype, Device device) const {
  const int64_t half = head_dim_ / 2;
  std::vector<double> theta(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) theta[i] = std::pow(base_, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim_));
  return constant(theta, {half}, dtype, device);
}

std::pair<Tensor, Tensor> Rotary::angle_tables(const Tensor& positions, int64_t batch, int64_t length, DType dtype,
                                               Device device) const {
  const Tensor angles = mul(positions.to(dtype).reshape({batch, length, 1}), frequencies(dtype, device));
  return {cos(angles), sin(angles)};
}

Var Rotary::rotated(const Var& x, const Tensor& positions) const {
  ORDO_CHECK(x.size(3) == head_dim_, "rope: expected a head width of ", head_dim_, ", got ", x.size(3));
  const auto [cosines, sines] = angle_tables(positions, x.size(0), x.size(2), x.dtype(), x.device());
  // Each pair (a, b) -> (a cos - b sin, a sin + b cos), the pairs interleaved
  // or the two halves, in one op (tensor/ops.h rotary).
  return rotary(x, cosines, sines, !interleaved_);
}

void Rotary::fused_terms(const nn::AttentionState& s, const Var& q, const Var&, FusedTerms& out) {
  out.terms.positions = *s.positions;
  out.terms.rotary = frequencies(q.dtype(), q.device());
  out.terms.rotary_half = !interleaved_;
}

// q and k share the positions: their angles' cos and sin are computed once.
void Rotary::rotate(const nn::AttentionState& s, Var& q, Var& k) {
  ORDO_CHECK(q.size(3) == head_dim_ && k.size(3) == head_dim_, "rope: expected a head width of ", head_dim_,
             ", got ", q.size(3), " and ", k.size(3));
  const auto [cosines, sines] = angle_tables(*s.positions, q.size(0), q.size(2), q.dtype(), q.device());
  q = rotary(q, cosines, sines, !interleaved_);
  k = rotary(k, cosines, sines, !interleaved_);
}

}  // namespace ordo::pe
