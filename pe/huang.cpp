// Huang et al. 2020, methods 1-4 (section 3.5); r_ij = p_j - p_i:
//   m1  s_ij = (q_i . k_j) w_{|r_ij|} / sqrt(d_h)                        (Eq. 11-12)
//   m2  s_ij = (q_i . k_j) w_{r_ij} / sqrt(d_h)                          (Eq. 13, 12)
//   m3  s_ij = sum_d q_id k_jd a_{r_ij,d} / sqrt(d_h)                    (Eq. 14-15)
//   m4  s_ij = (q_i . k_j + q_i . a_{r_ij} + k_j . a_{r_ij}) / sqrt(d_h)  (Eq. 16)
// Readings, sharing, initial values and memory: pe/huang.h.
#include "pe/huang.h"

namespace ordo::pe {

// ---- methods 1 and 2 ----------------------------------------------------------------------

HuangScalar::HuangScalar(const nn::BertConfig& c, const RelativeOptions& o, bool signed_distance, Device device)
    : signed_(signed_distance),
      spec_(o.spec(signed_distance ? RowLayout::signed_table : RowLayout::magnitude_table)),
      tables_(*this, o.share, c.num_hidden_layers, c.num_attention_heads, {spec_.table_rows()}, nn::Init::ones(),
              device, relative_table_names(o.share, c.num_attention_heads, "distance_gate")) {
  keep_out_of_decay(*this, tables_, o.share, c.num_attention_heads, "distance_gate");
}

Var HuangScalar::gates(int layer, const Tensor& positions, const nn::Context* ctx) {
  DistanceRows rows = spec_.rows(positions, name(), false, ctx);
  Var w = layer_rows(tables_, layer, rows);  // [R] shared by the heads, or [H, R]
  // w as the rows of an embedding table [R, H or 1], looked up per pair:
  // [B, L, L, H or 1], then heads first (a view).
  Var table = w.dim() == 1 ? unsqueeze(w, 1) : transpose(w, 0, 1);
  return permute(embedding(table, rows.idx), {0, 3, 1, 2});
}

Var HuangScalar::contextual_scores(const nn::AttentionState& s, const Var& q, const Var& k) {
  // The gates of the positions alone: once for a batch of identical rows, broadcast over it.
  const Var w = gates(s.layer, distinct_position_rows(*s.positions, s.ctx), s.ctx);
  return mul(matmul(q, k, false, true, 1.0, s.ctx->precision), w);  // (q_i . k_j) w_{r_ij}
}

nn::PositionEncoding::OffsetVectors HuangScalar::offset_vectors(int layer, int64_t span) const {
  return table_offset_vectors(tables_, spec_, layer, span, "w_r (" + name() + " distance gate");
}

void HuangScalar::fused_terms(const nn::AttentionState& s, const Var&, const Var&, FusedTerms& out) {
  DistanceRows rows = spec_.fused_rows(*this, s, out);
  out.vars.gate = per_head_table(layer_rows(tables_, s.layer, rows, s.ctx), 2);
}

// ---- method 3 -----------------------------------------------------------------------------------

HuangProduct::HuangProduct(const nn::BertConfig& c, const RelativeOptions& o, Device device)
    : spec_(o.spec(RowLayout::signed_table)),
      tables_(*this, o.share, c.num_hidden_layers, c.num_attention_heads, {spec_.table_rows(), c.head_dim()},
              nn::Init::ones(), device, relative_table_names(o.share, c.num_attention_heads, "distance_gate")) {
  keep_out_of_decay(*this, tables_, o.share, c.num_attention_heads, "distance_gate");
}

Var HuangProduct::contextual_scores(const nn::AttentionState& s, const Var& q, const Var& k) {
  DistanceRows rows = spec_.rows(*s.positions, name(), false, s.ctx);
  Var a = layer_rows(tables_, s.layer, rows, s.ctx);
  if (a.dim() == 2) a = expand(unsqueeze(a, 0), {s.heads, a.size(0), a.size(1)});  // one table for every head
  return relative_product(q, k, a, rows.idx);  // sum_d q_id k_jd a_{r_ij,d}, pair by pair
}

nn::PositionEncoding::OffsetVectors HuangProduct::offset_vectors(int layer, int64_t span) const {
  return table_offset_vectors(tables_, spec_, layer, span, "a_r (" + name() + " distance gate");
}

void HuangProduct::fused_terms(const nn::AttentionState& s, const Var&, const Var&, FusedTerms& out) {
  DistanceRows rows = spec_.fused_rows(*this, s, out);
  out.vars.product = per_head_table(layer_rows(tables_, s.layer, rows, s.ctx), 3);
}

// ---- method 4 -----------------------------------------------------------------------------------

HuangInteraction::HuangInteraction(const nn::BertConfig& c, const RelativeOptions& o, Device device)
    : spec_(o.spec(RowLayout::signed_table)),
      tables_(*this, o.share, c.num_hidden_layers, c.num_attention_heads, {spec_.table_rows(), c.head_dim()},
              nn::Init::normal(c.initializer_range), device,
              relative_table_names(o.share, c.num_attention_heads, "distance_embedding")) {}

Var HuangInteraction::score_bias(const nn::AttentionState& s, const Var& q, const Var& k) {
  DistanceRows rows = spec_.vector_rows(*s.positions, name(), /*with_transpose=*/true, s.ctx);
  Var a = layer_rows(tables_, s.layer, rows, s.ctx);
  const double scale = score_scale(s);
  return add(query_vector_term(q, a, rows, scale, s.ctx->precision),
             key_vector_term(k, a, rows, scale, s.ctx->precision));
}

nn::PositionEncoding::OffsetVectors HuangInteraction::offset_vectors(int layer, int64_t span) const {
  return table_offset_vectors(tables_, spec_, layer, span, "a_r (" + name() + " distance embedding");
}

void HuangInteraction::fused_terms(const nn::AttentionState& s, const Var&, const Var&, FusedTerms& out) {
  DistanceRows rows = spec_.fused_rows(*this, s, out);
  Var a = per_head_table(layer_rows(tables_, s.layer, rows, s.ctx), 3);
  out.vars.query_vectors = out.vars.key_vectors = a;
  out.terms.query_scale = out.terms.key_scale = score_scale(s);
}

// ---- factories ------------------------------------------------------------------------------------

std::unique_ptr<nn::PositionEncoding> make_huang_m1(const nn::BertConfig& c, FieldReader& options, Device device) {
  return std::make_unique<HuangScalar>(c, read_relative_options(c, options, "huang_m1", Share::heads, {true, false, true}),
                                       false, device);
}

std::unique_ptr<nn::PositionEncoding> make_huang_m2(const nn::BertConfig& c, FieldReader& options, Device device) {
  return std::make_unique<HuangScalar>(c, read_relative_options(c, options, "huang_m2", Share::heads, {}), true, device);
}

std::unique_ptr<nn::PositionEncoding> make_huang_m3(const nn::BertConfig& c, FieldReader& options, Device device) {
  return std::make_unique<HuangProduct>(c, read_relative_options(c, options, "huang_m3", Share::heads, {}), device);
}

std::unique_ptr<nn::PositionEncoding> make_huang_m4(const nn::BertConfig& c, FieldReader& options, Device device) {
  return std::make_unique<HuangInteraction>(c, read_relative_options(c, options, "huang_m4", Share::heads, {}), device);
}

}  // namespace ordo::pe
