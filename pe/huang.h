// The four relative position embeddings of Huang et al. 2020 (section 3.5),
// in EQUATIONS.md's notation (per head q_i, k_j in R^{d_h}; r_ij = p_j - p_i):
//
// huang_m1  s_ij = (q_i . k_j) w_{|r_ij|} / sqrt(d_h),  one scalar per |r|, no clipping    (Eq. 11-12)
// huang_m2  s_ij = (q_i . k_j) w_{r_ij} / sqrt(d_h),    one scalar per signed r            (Eq. 13, 12)
// huang_m3  s_ij = sum_d q_id k_jd a_{r_ij, d} / sqrt(d_h),  a_r in R^{d_h}                (Eq. 14-15)
// huang_m4  s_ij = (q_i . k_j + q_i . a_{r_ij} + k_j . a_{r_ij}) / sqrt(d_h)               (Eq. 16)
//           = ((q_i + a_{r_ij}) . (k_j + a_{r_ij}) - a_{r_ij} . a_{r_ij}) / sqrt(d_h)      (Eq. 17)
//           HF's relative_key_query (which Huang et al. contributed to transformers).
//
// Tables hold |r| <= max_distance (default max_position_embeddings - 1: the
// paper's n - 1); methods 2-4 also take clip k (the paper's section 4.3 varies
// k for method 4), method 1 none ("We do not apply the clipping value k").
// Signed tables are laid out as HF's (row = reach - r, pe/relative.h).
//
// Sharing: Huang et al.'s Table 1 counts a table per layer and head
// (share = none: m1 m h n, m2 m h (2n - 1), m3 and m4 m h (2n - 1) d);
// their HF implementation of method 4 shares one table per layer across its
// heads. ordo's default is share = heads for all four (HF compatibility for
// m4, one rule for the family); configs reproducing Table 1 set share = none.
//
// Initial values: the scalars of methods 1-2 and the vectors of method 3
// multiply q_i . k_j (a gate, in the paper's word), so they start at 1
// (attention starts as plain q.k) and are kept out of weight decay, as
// LayerNorm gains are; method 4's vectors are added terms and start as HF's,
// normal(0, initializer_range).
//
// Memory beyond plain q.k (B batch, H heads, L length, R the rows a batch
// uses, <= 2L - 1 for consecutive positions):
//   m1, m2  the gate per pair W [B, L, L, H] and the product (q.k) W, both kept
//           for the backward: 2 [B, H, L, L] per layer; idx [B, L, L] i64.
//   m3      none: the three-way product runs pair by pair (relative_product),
//           its output replaces q.k; idx [B, L, L] i64 and contiguous q, k, a
//           copies kept for the backward. No [B, H, L, L, d] buffer.
//   m4      transient [B, H, L, R] + [B, H, L, L] for each of the query and key
//           terms; idx and its transpose, [B, L, L] i64 each.
#pragma once

#include <memory>

#include "pe/relative.h"

namespace ordo::pe {

// Methods 1 and 2: a scalar gate per distance on q_i . k_j.
class HuangScalar : public nn::PositionEncoding {
 public:
  // signed_distance: method 2 (w_r), else method 1 (w_|r|).
  HuangScalar(const nn::BertConfig& config, const RelativeOptions& options, bool signed_distance, Device device);
  std::string name() const override { return signed_ ? "huang_m2" : "huang_m1"; }
  std::string module_path() const override { return ""; }
  // (q_i . k_j) w_{r_ij} before the 1/sqrt(d_h) that attention applies (Eq. 12).
  Var contextual_scores(const nn::AttentionState& s, const Var& q, const Var& k) override;
  // w as the fused attention's gate.
  std::string fused_support() const override { return ""; }
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;
  // The gate of every pair, [B, H or 1, L, L].
  Var gates(int layer, const Tensor& positions, const nn::Context* ctx = nullptr);
  // w_r of layer `layer`'s first table as vectors of width 1 (method 1: w_|r| for each signed r).
  OffsetVectors offset_vectors(int layer, int64_t span) const override;
  const DistanceSpec& distances() const { return spec_; }
  const TableSet& tables() const { return tables_; }

 private:
  bool signed_;
  DistanceSpec spec_;
  TableSet tables_;  // [rows] per table
};

// Method 3: the three-way product q_i * k_j * a_r summed over d.
class HuangProduct : public nn::PositionEncoding {
 public:
  HuangProduct(const nn::BertConfig& config, const RelativeOptions& options, Device device);
  std::string name() const override { return "huang_m3"; }
  std::string module_path() const override { return ""; }
  // sum_d q_id k_jd a_{r_ij, d} before the 1/sqrt(d_h) (Eq. 15), pair by pair.
  Var contextual_scores(const nn::AttentionState& s, const Var& q, const Var& k) override;
  // a_r of layer `layer`'s first table.
  OffsetVectors offset_vectors(int layer, int64_t span) const override;
  // a as the fused attention's product.
  std::string fused_support() const override { return ""; }
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;
  const DistanceSpec& distances() const { return spec_; }
  const TableSet& tables() const { return tables_; }

 private:
  DistanceSpec spec_;
  TableSet tables_;  // [rows, d_h] per table
};

// Method 4: q.k + q.a_r + k.a_r.
class HuangInteraction : public nn::PositionEncoding {
 public:
  HuangInteraction(const nn::BertConfig& config, const RelativeOptions& options, Device device);
  std::string name() const override { return "huang_m4"; }
  // Tables under HF's names, so relative_key_query checkpoints map one to one.
  std::string module_path() const override { return ""; }
  // (q_i . a_{r_ij} + k_j . a_{r_ij}) / sqrt(d_h), added to q_i . k_j / sqrt(d_h) (Eq. 16).
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override;
  // a_r of layer `layer`'s first table (Huang et al.'s Fig. 4 draws layer 1, head 1).
  OffsetVectors offset_vectors(int layer, int64_t span) const override;
  // a as the fused attention's query and key vectors.
  std::string fused_support() const override { return ""; }
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;
  const DistanceSpec& distances() const { return spec_; }
  const TableSet& tables() const { return tables_; }

 private:
  DistanceSpec spec_;
  TableSet tables_;  // [rows, d_h] per table: HF's distance_embedding
};

std::unique_ptr<nn::PositionEncoding> make_huang_m1(const nn::BertConfig& config, FieldReader& options, Device device);
std::unique_ptr<nn::PositionEncoding> make_huang_m2(const nn::BertConfig& config, FieldReader& options, Device device);
std::unique_ptr<nn::PositionEncoding> make_huang_m3(const nn::BertConfig& config, FieldReader& options, Device device);
std::unique_ptr<nn::PositionEncoding> make_huang_m4(const nn::BertConfig& config, FieldReader& options, Device device);

}  // namespace ordo::pe
