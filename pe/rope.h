// Rotary position embedding (Su et al. 2021, RoFormer, Eq. 34; named in the
// locality/symmetry paper, section 3.3): q and k of every head are rotated,
// pair of dimensions by pair, by an angle proportional to their position,
//
//   theta_i = base^(-2i/d_h),  i = 0 .. d_h/2 - 1   (base 10000)
//   (q'_{a}, q'_{b}) = (q_a cos(p theta_i) - q_b sin(p theta_i),
//                       q_a sin(p theta_i) + q_b cos(p theta_i))
//
// with p the query's position for q and the key's for k, and then
// s_ij = q'_i . k'_j / sqrt(d_h). A rotation by p_i and one by p_j leave
// q'_i . k'_j = sum_i Re[(q_a + i q_b)(k_a - i k_b) e^{-i (p_j - p_i) theta_i}]: the scores depend on the
// positions through p_j - p_i only (relative), and any position value works.
//
// Pairing (option `pairing`): "interleaved" (default) pairs dimensions
// (2i, 2i+1) as the RoFormer paper writes its rotation matrix and as ordo's
// sinusoids interleave sin and cos; "half" pairs (i, i + d_h/2) as GPT-NeoX
// and HuggingFace's LLaMA do (rotate_half), for checkpoints made that way.
// The two are the same model up to a fixed permutation of W^Q's and W^K's
// output columns.
#pragma once

#include <utility>
#include <vector>

#include "base/config.h"
#include "nn/bert_config.h"
#include "nn/position.h"

namespace ordo::pe {

class Rotary : public nn::PositionEncoding {
 public:
  // Options: base (10000), pairing ("interleaved" | "half").
  Rotary(const nn::BertConfig& config, FieldReader& options, Device device);
  std::string name() const override { return "rope"; }
  void rotate(const nn::AttentionState& s, Var& q, Var& k) override;
  // The rotation as the fused attention's: its kernels rotate q and k as
  // they load them (the frequencies and the pairing), not rotate().
  std::string fused_support() const override { return ""; }
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;
  // x [batch, heads, L, d_h] rotated by positions [batch, L].
  Var rotated(const Var& x, const Tensor& positions) const;
  // cos and sin of the angles p theta_i, [batch, L, d_h / 2] each: p in
  // `dtype` times theta_i, rounded, then the cos and sin ops.
  std::pair<Tensor, Tensor> angle_tables(const Tensor& positions, int64_t batch, int64_t length, DType dtype,
                                         Device device) const;
  bool interleaved() const { return interleaved_; }
  // theta_i = base^(-2i/d_h), i = 0 .. d_h/2 - 1, in `dtype` on `device`:
  // made on the first call for each and kept, so that a steady step copies
  // nothing from the host (a CUDA graph's capture refuses such a copy).
  Tensor frequencies(DType dtype, Device device) const;

 private:
  int64_t head_dim_;
  double base_;
  bool interleaved_;
};

}  // namespace ordo::pe
