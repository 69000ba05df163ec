#include "pe/attenuated.h"

#include <cmath>

#include "autograd/ops.h"
#include "pe/per_head.h"

namespace ordo::pe {

Var attenuated_kernel(const Tensor& positions, const Var& w, const Var& s, DType dtype) {
  const int64_t heads = w.size(0);
  Tensor r = relative_distances(positions);                               // [B, L, L], r = p_j - p_i
  Tensor r2 = pow(r.to(dtype), 2.0).unsqueeze(1);                         // l_ij^2, [B, 1, L, L]
  Tensor after = gt(r, Tensor::scalar(0, DType::i64, r.device())).to(dtype).unsqueeze(1);  // i < j
  Var w4 = reshape(w, {1, heads, 1, 1});
  Var s4 = reshape(s, {1, heads, 1, 1});
  // a_ij = -w l^2 * (s on the keys after the query, 1 before; the diagonal is 0 either way).
  Var side = where(after, s4, Var(Tensor::scalar(1.0, dtype, r.device())));
  Var a = neg(mul(mul(w4, Var(r2)), side));
  return softmax(a);  // over j: each row of delta sums to 1
}

Attenuated::Attenuated(const nn::BertConfig& c, FieldReader& o, Device device)
    : heads_(c.num_attention_heads),
      device_(device),
      w0_(o.number("w", 0.011, 1e-12, 1e12)),
      s0_(o.number("s", 1.0, 0, 1e12)) {
  if (!o.boolean("learned", false)) return;
  learn_ = o.string("learn", "matrix", {"matrix", "kernel"}) == "matrix" ? Learn::matrix : Learn::kernel;
  Share share = read_share(o, Share::none, "attenuated");
  if (learn_ == Learn::kernel) {
    log_w_ = std::make_unique<TableSet>(*this, share, c.num_hidden_layers, heads_, Shape{1},
                                        nn::Init::constant(std::log(w0_)), device, table_names(share, heads_, "log_w"));
    s_ = std::make_unique<TableSet>(*this, share, c.num_hidden_layers, heads_, Shape{1}, nn::Init::constant(s0_),
                                    device, table_names(share, heads_, "s"));
    exclude_from_decay(*this, *log_w_);
    exclude_from_decay(*this, *s_);
    return;
  }
  rows_ = o.integer("max_position", c.max_position_embeddings, 1, 4096);
  // D(0): Eq. 9 over positions 0 .. Lmax-1, computed in f64 on the CPU once;
  // initialize() copies it into every table (in the model's dtype and device).
  std::vector<double> steps(static_cast<size_t>(rows_));
  for (int64_t p = 0; p < rows_; ++p) steps[static_cast<size_t>(p)] = static_cast<double>(p);
  Tensor positions = Tensor::from_vector(steps, {1, rows_}).to(DType::i64);
  Var one_head_w(Tensor::full({1}, w0_, DType::f64, Device::cpu()));
  Var one_head_s(Tensor::full({1}, s0_, DType::f64, Device::cpu()));
  Tensor start = attenuated_kernel(positions, one_head_w, one_head_s, DType::f64).value().reshape({rows_, rows_});
  matrix_ = std::make_unique<TableSet>(*this, share, c.num_hidden_layers, heads_, Shape{rows_, rows_},
                                       nn::Init::from(start.contiguous()), device, table_names(share, heads_, "delta"));
}

Var Attenuated::locality(int layer, DType dtype) const {
  if (learn_ != Learn::kernel) return Var(Tensor::full({heads_}, w0_, dtype, device_));
  return exp(reshape(log_w_->for_layer(layer), {heads_}));
}

Var Attenuated::symmetry(int layer, DType dtype) const {
  if (learn_ != Learn::kernel) return Var(Tensor::full({heads_}, s0_, dtype, device_));
  return reshape(s_->for_layer(layer), {heads_});
}

Var Attenuated::weights(const nn::AttentionState& s, DType dtype) const {
  const Tensor positions = distinct_position_rows(*s.positions, s.ctx);  // once for identical rows
  if (learn_ != Learn::matrix) return attenuated_kernel(positions, locality(s.layer, dtype), symmetry(s.layer, dtype), dtype);
  auto [smallest, largest] = position_range(positions, s.ctx);
  ORDO_CHECK(smallest >= 0 && largest < rows_, "attenuated (learn = matrix): position ",
             largest >= rows_ ? largest : smallest, " is outside its ", rows_, " x ", rows_,
             " matrix (positions 0..", rows_ - 1, "); raise the option max_position (default "
             "max_position_embeddings) or use learn = kernel, which works at any position");
  // D_h[p_i, p_j]: the pair's index into the flattened matrix, p_i * Lmax + p_j.
  Tensor rows = mul(positions, Tensor::scalar(static_cast<double>(rows_), DType::i64, positions.device()));
  Tensor ids = add(rows.unsqueeze(2), positions.unsqueeze(1));  // [B, L, L]
  Var tables = reshape(matrix_->for_layer(s.layer, s.ctx), {heads_, rows_ * rows_});
  return per_head_lookup(tables, ids);
}

Var Attenuated::score_bias(const nn::AttentionState& s, const Var&, const Var&) { return weights(s, s.dtype); }

std::string Attenuated::fused_support() const {
  switch (learn_) {
    case Learn::none: return "";
    case Learn::kernel:
      return "attenuated with learned w and s: delta is a softmax over each row of the distance kernel, a dense "
             "[B, H, L, L] term whose gradient the fused kernels do not form (they take a fixed dense term only)";
    case Learn::matrix: break;
  }
  return "attenuated with a learned delta matrix (learn = matrix): a dense [B, H, L, L] term looked up by position "
         "pair, whose gradient the fused kernels do not form (they take a fixed dense term only)";
}

void Attenuated::fused_terms(const nn::AttentionState& s, const Var& q, const Var&, FusedTerms& out) {
  // delta depends on the positions alone: [1, H, L, L] for a batch of identical rows.
  out.terms.dense_bias = weights(s, q.dtype()).value();
}

Var Attenuated::positional_weights(const nn::AttentionState& s) { return weights(s, s.dtype); }

}  // namespace ordo::pe
