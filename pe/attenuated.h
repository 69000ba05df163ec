// The attenuated encoding (the locality/symmetry paper, section 3.3, Eq. 9):
// a Gaussian kernel over the relative distance, made an attention
// distribution over the keys,
//
//   delta_ij = softmax_j(a_ij),   a_ij = -s w l_ij^2   for i <= j
//                                 a_ij =   -w l_ij^2   for i >  j
//
// and its learnable form A* (section 3.3, App. B.5), the paper's: delta is a
// matrix over positions, D[p_i, p_j], learned entry by entry and initialised
// from Eq. 9 —
//
//   delta_ij = D_h[p_i, p_j],   D_h in R^{Lmax x Lmax},   D_h(0) = Eq. 9 at positions 0 .. Lmax-1
//
// one D per layer and head (BERT-A*, share = none: 512 x 512 x 12 x 12 = 37.7M
// values at BERT-base) or one per layer shared by its heads (BERT-A*-s,
// share = heads: 3.1M), as App. B.5 counts them.
//
// l_ij is the relative distance (squared, so its sign does not matter: ordo
// uses r = p_j - p_i), w > 0 sets the locality and s the symmetry. "i <= j"
// is the key at or after the query, r >= 0 in EQUATIONS.md's notation: s
// scales the kernel on the keys that follow (s = 1: delta symmetric around
// the query; s < 1: flatter after it, s > 1: steeper). At r = 0 both sides
// give a = 0, so which side the diagonal belongs to changes nothing.
//
// delta enters attention added to the scaled scores, as the paper's Listing 1
// injects it (scores = q.k / sqrt(d) + pe):  s_ij = q_i . k_j / sqrt(d_h) + delta_ij,
// and it is the positional attention of the sequence combination (Eq. 10,
// Listing 2: "scores = pe"): positional_weights() returns delta itself.
//
// Options: w (0.011: an interior row of a long sequence then has the
// paper's Eq. 7 locality of 0.17, pre-trained BERT's value the paper matches,
// and s = 1 its symmetry of 1.0), s (1), learned (false), and when learned:
//   learn = "matrix" (the paper's A*, the default): D's entries, max_position
//     rows and columns (default max_position_embeddings); the initial D is
//     Eq. 9's softmax over all Lmax keys, as the paper pre-computes it for its
//     sequences padded to 512 (Listing 1), so a shorter sequence's row sums to
//     less than 1 (a fixed delta's softmax runs over the keys as given).
//     Decayed by AdamW as every weight matrix is (pytorchic-bert, the paper's
//     tool, exempts only biases and LayerNorm).
//   learn = "kernel" (ordo's two-knob form): w and s themselves, per head
//     and layer or shared; works at any length, 2 values per table. w is kept
//     as log w so it stays > 0; both exempt from weight decay.
//   share = none (A*) | heads (A*-s) | layers | all.
// The fixed form's softmax runs over the keys of the sequence as given
// (padding included; the attention's mask removes padded keys afterwards).
#pragma once

#include <memory>

#include "base/config.h"
#include "nn/bert_config.h"
#include "nn/position.h"
#include "pe/common.h"

namespace ordo::pe {

// Eq. 9 for every (query, key) pair of `positions` [B, L]: softmax_j of
// -w r^2 (keys before the query) and -s w r^2 (keys at or after it), w and s
// [heads] each: [B, heads, L, L] in `dtype`.
Var attenuated_kernel(const Tensor& positions, const Var& w, const Var& s, DType dtype);

class Attenuated : public nn::PositionEncoding {
 public:
  enum class Learn { none, matrix, kernel };

  Attenuated(const nn::BertConfig& config, FieldReader& options, Device device);
  std::string name() const override { return "attenuated"; }
  // + delta_ij (Listing 1).
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override;
  bool reads_query_key() const override { return false; }  // a term of the positions alone
  // delta itself: the positional attention of CA(PA(X)) (Eq. 10).
  Var positional_weights(const nn::AttentionState& s) override;
  // The matrix form looks positions up: the last it has; -1 otherwise.
  int64_t max_position() const override { return learn_ == Learn::matrix ? rows_ - 1 : -1; }
  // Fixed delta as the fused attention's dense term ([1, H, L, L] when every
  // row of positions is the same); a learned one cannot be fused.
  std::string fused_support() const override;
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;
  // delta for one layer, [batch, heads, L, L] in `dtype`.
  Var weights(const nn::AttentionState& s, DType dtype) const;
  // The kernel's knobs layer `layer` uses, [heads] each (fixed or learn = kernel).
  Var locality(int layer, DType dtype) const;  // w
  Var symmetry(int layer, DType dtype) const;  // s
  Learn learn() const { return learn_; }
  bool learned() const { return learn_ != Learn::none; }
  // learn = matrix: D's rows and columns (Lmax) and the tables.
  int64_t matrix_size() const { return rows_; }
  const TableSet* matrix_tables() const { return matrix_.get(); }
  const TableSet* log_locality_tables() const { return log_w_.get(); }
  const TableSet* symmetry_tables() const { return s_.get(); }

 private:
  int64_t heads_;
  Device device_;
  double w0_, s0_;
  Learn learn_ = Learn::none;
  int64_t rows_ = 0;
  std::unique_ptr<TableSet> log_w_, s_;  // learn = kernel: [1] each
  std::unique_ptr<TableSet> matrix_;     // learn = matrix: [Lmax, Lmax] each
};

}  // namespace ordo::pe
