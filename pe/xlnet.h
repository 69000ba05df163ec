// xlnet: the relative attention of Transformer-XL and XLNet (Dai et al. 2019;
// Yang et al. 2019), as Huang et al. 2020 (Eq. 10) and Chen et al. 2021
// (section 2.2.2) write it, in EQUATIONS.md's notation (r_ij = p_j - p_i):
//
//     s_ij = ((q_i + u) . k_j + (q_i + v) . (R_{i-j} W^R)) / sqrt(d_h)      (Huang et al., Eq. 10)
//
//   R_x in R^D: the fixed sinusoid of Vaswani et al. at x = i - j = -r_ij
//   (the papers' sign, flipped once, here), R_x = (sin(w_m x), cos(w_m x))_m,
//   w_m = 10000^(-2m/D), D the hidden size; W^R in R^{D x H d_h} learned,
//   giving each head its vector R_{i-j} W^R_h in R^{d_h}; u, v in R^{d_h} learned.
//
// Readings, where the papers leave it open:
//  - Huang's Eq. 10 prints W^K where its text names a learnable W^R, and Chen
//    writes W_K R_{i-j}; ordo follows Transformer-XL: a projection W^R of R
//    of its own, one per layer (Transformer-XL's r_net), as "learnable W^R" says.
//  - u and v: one pair per head (Transformer-XL's r_w_bias, r_r_bias are
//    [heads, d_h]) and per layer (XLNet unties them across layers, untie_r):
//    share = none by default; share sets other layouts, and W^R follows its
//    layer half (per layer for none/heads, one for all layers for layers/all).
//  - Transformer-XL concatenates [sin | cos]; ordo interleaves the pairs, a
//    fixed permutation of R's coordinates that W^R absorbs.
//  - biases: false drops u and v (Huang et al. found them unstable in BERT and
//    trained without them); clip k clamps |r| <= k (Transformer-XL's clamp_len).
//
// Memory beyond plain q.k: q + v [B, H, L, d]; the location term's transient
// [B, H, L, R] + [B, H, L, L] (R the distances a batch spans, 2L - 1 for
// consecutive positions); R W^R [R, H d]; idx [B, L, L] i64 kept for the backward.
#pragma once

#include <memory>

#include "pe/relative.h"

namespace ordo::pe {

class XLNetRelative : public nn::PositionEncoding {
 public:
  XLNetRelative(const nn::BertConfig& config, Share share, int64_t clip, bool biases, Device device);
  std::string name() const override { return "xlnet"; }
  std::string module_path() const override { return ""; }
  // (u . k_j + (q_i + v) . (R_{i-j} W^R)) / sqrt(d_h): Eq. 10 less the q_i . k_j
  // that attention computes itself.
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override;
  // Fused: (q_i + v) . A_r as q_i . A_r plus the table v . A_r, and u . k_j
  // as the positional product E_i . F_j with E = 1, F_j = u . k_j.
  std::string fused_support() const override { return ""; }
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;

  // R_{i-j} W^R for the rows `rows` stands for, [H, R, d_h] (layer `layer`).
  Var location_vectors(int layer, const DistanceRows& rows, DType dtype, Device device,
                       MatmulPrecision precision) const;
  const DistanceSpec& distances() const { return spec_; }

 private:
  int64_t heads_, head_dim_, hidden_;
  bool biases_;
  DistanceSpec spec_;
  std::vector<nn::Parameter*> projections_;  // W^R [H d_h, D] (a Linear weight), per layer or one
  std::optional<TableSet> u_, v_;           // [d_h] per table
};

std::unique_ptr<nn::PositionEncoding> make_xlnet(const nn::BertConfig& config, FieldReader& options, Device device);

}  // namespace ordo::pe
