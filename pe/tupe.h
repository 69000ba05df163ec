// TUPE, Transformer with Untied Positional Encoding (Ke et al. 2021), as
// Chen et al. 2021 write it (Eq. 5) and the locality/symmetry paper (Eq. 3, 13):
//
//   s_ij = (x_i W^Q)(x_j W^K)^T / sqrt(2 d_h)                      contextual
//        + Reset_theta( (p_i U^Q)(p_j U^K)^T / sqrt(2 d_h) + b[bucket(j - i)], i, j )   positional
//
// per head h, with
//   p_i        a learned absolute position vector P[pos_i] in R^D (P in R^{Lmax x D}),
//              NOT added to the input: position enters only through this term;
//   U^Q, U^K   learned D x D projections split into heads as W^Q, W^K are, so
//              head h uses its d_h columns (Ke et al.: "different heads use
//              different projections"); P, U^Q and U^K are shared by all layers,
//              so the positional term is one [H, L, L] matrix for every layer
//              (Ke et al. compute it once and reuse it in each layer);
//   b          T5's bucketed relative bias, one scalar per bucket and head, shared
//              by all layers (TUPE-R; `relative: false` is TUPE-A without it),
//              not scaled by 1/sqrt(2 d_h); buckets as pe/scalar_bias.h: t5_bucket;
//   sqrt(2 d_h) Ke et al.'s scale: the two terms each get half the variance.
//
// Reset_theta, the untied [CLS] (Ke et al.; Chen et al. 2021, Eq. 5): the
// positional term of every pair involving the [CLS] token is replaced by a
// learned scalar per head,
//   Reset_theta(v, i, j) = theta_1   if i is [CLS]        (cls -> others, the whole row, [CLS] -> [CLS] included)
//                        = theta_2   if j is [CLS], i not  (others -> cls, the rest of the column)
//                        = v         otherwise.
// The row and column replaced are the sequence's first token (index 0, where
// BERT puts [CLS]), whatever position number it carries. The reset acts on
// the whole positional term, absolute and relative together, as Chen et al.'s
// Eq. 5 writes it. Ke et al.'s released code gets the two values from two extra
// rows of P through the same U^Q, U^K (theta_1 = p_0 U^Q . p_0 U^K, theta_2 =
// p_1 U^Q . p_1 U^K, plus two extra relative buckets); ordo learns theta_1 and
// theta_2 directly ("cls" [H, 2]), as the paper's Reset_theta states.
// `cls_reset: false` turns the reset off (e.g. a decoder without [CLS]).
// Ke et al.'s code also LayerNorms P before projecting; the papers' equations
// do not, and ordo follows the equations.
//
// Options: relative (true: TUPE-R), num_buckets (32), max_distance (128), cls_reset (true).
#pragma once

#include "base/config.h"
#include "nn/bert_config.h"
#include "nn/position.h"
#include "pe/common.h"

namespace ordo::pe {

class Tupe : public nn::PositionEncoding {
 public:
  Tupe(const nn::BertConfig& config, FieldReader& options, Device device);
  std::string name() const override { return "tupe"; }
  // 1 / sqrt(2 d_h) on q_i . k_j (Ke et al.).
  double score_scale(const nn::AttentionState& s) const override;
  // The positional term (the same Var for every layer: its parameters are shared).
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override;
  bool reads_query_key() const override { return false; }  // a term of the positions alone
  // Fused: p_i U^Q . p_j U^K as E_i . F_j, b and theta as the table (the
  // buckets' rows, then theta_1 and theta_2 for the [CLS] reset).
  std::string fused_support() const override { return ""; }
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;
  int64_t max_position() const override { return table_.var.size(0) - 1; }

  // The positional term for positions [batch, L]: [1 or batch, heads, L, L]
  // (1 when every row of positions is the same, as in pretraining).
  // ctx: BertModel::forward's (see nn::InputFacts; its precision for the
  // products), or null (fp32 products).
  Var positional_term(const Tensor& positions, const nn::Context* ctx = nullptr) const;
  // bucket(p_j - p_i) for every (b, i, j) of positions [batch, L]: [batch, L, L] i64.
  Tensor buckets(const Tensor& positions) const;

  // p_i U^Q and p_j U^K per head, [1 or batch, heads, L, d_h], for positions [batch, L].
  std::pair<Var, Var> projections(const Tensor& positions, const nn::Context* ctx = nullptr) const;

  bool relative() const { return bias_ != nullptr; }
  bool cls_reset() const { return cls_reset_; }
  int64_t num_buckets() const { return num_buckets_; }
  int64_t max_distance() const { return max_distance_; }

 private:
  int64_t heads_, head_dim_;
  int64_t num_buckets_, max_distance_;
  bool cls_reset_;
  nn::Parameter& table_;      // "position_embeddings" P [max_position_embeddings, D]
  nn::Parameter& query_;      // "position_query" U^Q as a Linear weight [D_out, D_in]: p U^Q = linear(p, weight)
  nn::Parameter& key_;        // "position_key" U^K
  nn::Parameter& cls_;        // "cls" [H, 2]: theta_1 (cls -> others), theta_2 (others -> cls)
  nn::Parameter* bias_ = nullptr;  // "relative_attention_bias" [num_buckets, H] (TUPE-R)
  Tensor lut_;                // bucket of r = -n for n = 0 .. max_distance (the upper side added after)
};

}  // namespace ordo::pe
