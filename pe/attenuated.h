// The attenuated encoding (the locality/symmetry paper, section 3.3, Eq. 9):
// a Gaussian kernel over the relative distance, made an attention
// distribution over the keys,
//
//   delta_ij = softmax_j(a_ij),   a_ij = -s w l_ij^2   for i <= j
//                                 a_ij =   -w l_ij^2   for i >  j
//
// with l_ij the relative distance (squared, so its sign does not matter:
// ordo uses r = p_j - p_i), w > 0 setting the locality and s the symmetry.
// "i <= j" is the key at or after the query, r >= 0 in EQUATIONS.md's notation: s
// scales the kernel on the keys that follow (s = 1: delta symmetric around
// the query; s < 1: flatter after it, s > 1: steeper). At r = 0 both sides
// give a = 0, so which side the diagonal belongs to changes nothing. The
// softmax runs over the keys of the sequence as given (padding included; the
// attention's mask removes padded keys afterwards).
//
// delta enters attention added to the scaled scores, as the paper's Listing 1
// injects it (scores = q.k / sqrt(d) + pe):  s_ij = q_i . k_j / sqrt(d_h) + delta_ij,
// and it is the positional attention of the sequence combination (Eq. 10,
// Listing 2): positional_weights() returns delta itself.
//
// Options: w (0.011: an interior row of a long sequence then has the
// paper's Eq. 7 locality of 0.17, pre-trained BERT's value the paper matches,
// and s = 1 its symmetry of 1.0), s (1), learned (false). Learned, w and s
// are per head and layer (BERT-A*, share = none) or shared by the heads of a
// layer (BERT-A*-s, share = heads); layers / all share further. A learned w
// is kept as log w, so it stays > 0 as Eq. 9 requires; both start at the
// option values and are exempt from weight decay.
//
// The paper's appendix counts 512 x 512 learned values per positional head
// (B.5): its learnable A* appears to learn delta's entries, initialised from
// Eq. 9. ordo learns the kernel's two knobs instead (EQUATIONS.md, attenuated),
// which keeps delta a function of r and works at any length.
#pragma once

#include <memory>

#include "base/config.h"
#include "nn/bert_config.h"
#include "nn/position.h"
#include "pe/common.h"

namespace ordo::pe {

class Attenuated : public nn::PositionEncoding {
 public:
  Attenuated(const nn::BertConfig& config, FieldReader& options, Device device);
  std::string name() const override { return "attenuated"; }
  // + delta_ij (Listing 1).
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override;
  // delta itself: the positional attention of CA(PA(X)) (Eq. 10).
  Var positional_weights(const nn::AttentionState& s) override;
  // Fixed delta as the fused attention's dense term ([1, H, L, L] when every
  // row of positions is the same); a learned one cannot be fused.
  std::string fused_support() const override;
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;
  // delta for one layer, [batch, heads, L, L] in `dtype`.
  Var weights(const nn::AttentionState& s, DType dtype) const;
  // The knobs layer `layer` uses, [heads] each.
  Var locality(int layer, DType dtype) const;  // w
  Var symmetry(int layer, DType dtype) const;  // s
  bool learned() const { return learned_; }
  const TableSet* log_locality_tables() const { return log_w_.get(); }
  const TableSet* symmetry_tables() const { return s_.get(); }

 private:
  int64_t heads_;
  Device device_;
  double w0_, s0_;
  bool learned_;
  std::unique_ptr<TableSet> log_w_, s_;  // learned only: [1] each
};

}  // namespace ordo::pe
