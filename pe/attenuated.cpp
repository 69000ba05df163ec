#include "pe/attenuated.h"

#include <cmath>

#include "autograd/ops.h"
#include "pe/per_head.h"

namespace ordo::pe {

Attenuated::Attenuated(const nn::BertConfig& c, FieldReader& o, Device device)
    : heads_(c.num_attention_heads),
      device_(device),
      w0_(o.number("w", 0.011, 1e-12, 1e12)),
      s0_(o.number("s", 1.0, 0, 1e12)),
      learned_(o.boolean("learned", false)) {
  if (!learned_) return;
  Share share = read_share(o, Share::none, "attenuated");
  log_w_ = std::make_unique<TableSet>(*this, share, c.num_hidden_layers, heads_, Shape{1}, nn::Init::constant(std::log(w0_)),
                                      device, table_names(share, heads_, "log_w"));
  s_ = std::make_unique<TableSet>(*this, share, c.num_hidden_layers, heads_, Shape{1}, nn::Init::constant(s0_), device,
                                  table_names(share, heads_, "s"));
  exclude_from_decay(*this, *log_w_);
  exclude_from_decay(*this, *s_);
}

Var Attenuated::locality(int layer, DType dtype) const {
  if (!learned_) return Var(Tensor::full({heads_}, w0_, dtype, device_));
  return exp(reshape(log_w_->for_layer(layer), {heads_}));
}

Var Attenuated::symmetry(int layer, DType dtype) const {
  if (!learned_) return Var(Tensor::full({heads_}, s0_, dtype, device_));
  return reshape(s_->for_layer(layer), {heads_});
}

Var Attenuated::weights(const nn::AttentionState& s, DType dtype) const {
  Tensor r = relative_distances(*s.positions);                            // [B, L, L], r = p_j - p_i
  Tensor r2 = pow(r.to(dtype), 2.0).unsqueeze(1);                         // l_ij^2, [B, 1, L, L]
  Tensor after = gt(r, Tensor::scalar(0, DType::i64, r.device())).to(dtype).unsqueeze(1);  // i < j
  Var w = reshape(locality(s.layer, dtype), {1, heads_, 1, 1});
  Var sym = reshape(symmetry(s.layer, dtype), {1, heads_, 1, 1});
  // a_ij = -w l^2 * (s on the keys after the query, 1 before; the diagonal is 0 either way).
  Var side = where(after, sym, Var(Tensor::scalar(1.0, dtype, r.device())));
  Var a = neg(mul(mul(w, Var(r2)), side));
  return softmax(a);  // over j: each row of delta sums to 1
}

Var Attenuated::score_bias(const nn::AttentionState& s, const Var& q, const Var&) { return weights(s, q.dtype()); }

std::string Attenuated::fused_support() const {
  if (!learned_) return "";
  return "attenuated with learned w and s: delta is a softmax over each row of the distance kernel, a dense [B, H, L, L]"
         " term whose gradient the fused kernels do not form (they take a fixed dense term only)";
}

void Attenuated::fused_terms(const nn::AttentionState& s, const Var& q, const Var&, FusedTerms& out) {
  // delta depends on the positions alone: for a batch of identical rows
  // (pretraining) it is computed once, [1, H, L, L].
  Tensor first = s.positions->slice(0, 0, 1).contiguous();
  nn::AttentionState one = s;
  if (s.ctx && s.ctx->facts && s.ctx->facts->rows_identical) one.positions = &first;
  out.terms.dense_bias = weights(one, q.dtype()).value();
}

Var Attenuated::positional_weights(const nn::AttentionState& s) { return weights(s, s.dtype); }

}  // namespace ordo::pe
