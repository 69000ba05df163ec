// xlnet (Transformer-XL / XLNet relative attention), Huang et al. 2020, Eq. 10:
//     s_ij = ((q_i + u) . k_j + (q_i + v) . (R_{i-j} W^R)) / sqrt(d_h)
// with R_{i-j} the fixed sinusoid at i - j = -r_ij. The readings taken are
// listed in pe/xlnet.h.
#include "pe/xlnet.h"

namespace ordo::pe {

XLNetRelative::XLNetRelative(const nn::BertConfig& c, Share share, int64_t clip, bool biases, Device device)
    : heads_(c.num_attention_heads), head_dim_(c.head_dim()), hidden_(c.hidden_size), biases_(biases) {
  ORDO_CHECK(hidden_ % 2 == 0, "xlnet: the hidden size must be even for (sin, cos) pairs, got ", hidden_);
  spec_.layout = RowLayout::functional;
  spec_.clip = clip;
  const nn::Init init = nn::Init::normal(c.initializer_range);
  const bool per_layer = share == Share::none || share == Share::heads;
  for (int64_t l = 0; l < (per_layer ? c.num_hidden_layers : 1); ++l) {
    std::string name = per_layer ? "encoder.layer." + std::to_string(l) + ".attention.self.xlnet_r.weight"
                                 : "encoder.xlnet_r.weight";
    projections_.push_back(&add_parameter(name, {heads_ * head_dim_, hidden_}, init, true, device));
  }
  if (biases) {
    u_.emplace(*this, share, c.num_hidden_layers, heads_, Shape{head_dim_}, init, device,
               relative_table_names(share, heads_, "xlnet_u"));
    v_.emplace(*this, share, c.num_hidden_layers, heads_, Shape{head_dim_}, init, device,
               relative_table_names(share, heads_, "xlnet_v"));
  }
}

Var XLNetRelative::location_vectors(int layer, const DistanceRows& rows, DType dtype, Device device,
                                   MatmulPrecision precision) const {
  // Row p stands for r = min_distance + p; XLNet's R is indexed by i - j = -r.
  std::vector<double> i_minus_j(static_cast<size_t>(rows.count));
  for (int64_t p = 0; p < rows.count; ++p) i_minus_j[static_cast<size_t>(p)] = -static_cast<double>(rows.min_distance + p);
  const Tensor& x = constant(i_minus_j, {rows.count}, dtype, device);
  Tensor R = sinusoid(x, Var(sinusoid_frequencies(*this, hidden_, dtype, device))).value();  // [R, D], fixed
  const nn::Parameter& w = *projections_[projections_.size() == 1 ? 0 : static_cast<size_t>(layer)];
  Var projected = linear(Var(R), w.var, Var(), false, precision);  // [R, H d]: R_x W^R
  return permute(reshape(projected, {rows.count, heads_, head_dim_}), {1, 0, 2});  // [H, R, d]
}

Var XLNetRelative::score_bias(const nn::AttentionState& s, const Var& q, const Var& k) {
  DistanceRows rows = spec_.vector_rows(*s.positions, name(), false, s.ctx);
  const double scale = score_scale(s);
  const MatmulPrecision precision = s.ctx->precision;
  Var location_query = q;
  if (biases_) location_query = add(q, reshape(v_->for_layer(s.layer, s.ctx), {heads_, 1, head_dim_}));  // q_i + v
  Var location = query_vector_term(location_query, location_vectors(s.layer, rows, q.dtype(), q.device(), precision),
                                   rows, scale, precision);
  if (!biases_) return location;
  // u . k_j, the same for every query: [B, H, 1, L], broadcast over i.
  Var content_bias = transpose(
      matmul(k, reshape(u_->for_layer(s.layer, s.ctx), {heads_, head_dim_, 1}), false, false, scale, precision), 2, 3);
  return add(location, content_bias);
}

void XLNetRelative::fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) {
  DistanceRows rows = spec_.fused_rows(*this, s, out);
  const double scale = score_scale(s);
  const MatmulPrecision precision = s.ctx->precision;
  Var a = location_vectors(s.layer, rows, q.dtype(), q.device(), precision);  // [H, R, d]
  out.vars.query_vectors = a;
  out.terms.query_scale = scale;
  if (!biases_) return;
  // v . A_r per head, [H, R]; u . k_j, [B, H, L, 1] against E = 1.
  out.vars.table = affine(reshape(matmul(a, reshape(v_->for_layer(s.layer, s.ctx), {heads_, head_dim_, 1}), false,
                                         false, 1.0, precision),
                                  {heads_, rows.count}),
                          scale);
  out.vars.pos_query = Var(Tensor::ones({1, heads_, q.size(2), 1}, q.dtype(), q.device()));
  out.vars.pos_key = matmul(k, reshape(u_->for_layer(s.layer, s.ctx), {heads_, head_dim_, 1}), false, false, 1.0,
                            precision);
  out.terms.pos_scale = scale;
}

std::unique_ptr<nn::PositionEncoding> make_xlnet(const nn::BertConfig& c, FieldReader& options, Device device) {
  RelativeOptions o = read_relative_options(c, options, "xlnet", Share::none, {true, true, false});
  bool biases = options.boolean("biases", true);
  return std::make_unique<XLNetRelative>(c, o.share, o.clip, biases, device);
}

}  // namespace ordo::pe
