// Scalars added to the attention scores, one per head (after the
// 1/sqrt(d_h) scaling of the contextual term, which they do not get):
//
//   s_ij = q_i . k_j / sqrt(d_h) + b_ij^h
//
// t5_bias     b_ij^h = R_h[bucket(r)], r = p_j - p_i (Chen et al. 2021, Eq. 4;
//             Raffel et al. 2020). T5's bidirectional log-bucketing: half the
//             buckets for each sign of r, exact below half/2, logarithmic up to
//             max_distance, the last bucket of a side open-ended. Chen et al.
//             write bucket(i - j); T5's code (and ordo) bucket
//             memory_position - query_position = j - i: keys after the query
//             take the upper half of the buckets. One table per head shared
//             across layers by default (share = layers).
// rel_scalar  b_ij^h = R_h[r], one scalar per distance, no bucketing or
//             clipping, a table per layer and head (Chen et al. 2021, Eq. 8 and
//             11, REL-SCALAR). Chen et al. index by i - j; the table is learned,
//             so ordo indexes it by r = j - i (its row r holds their R_{-r}).
//             The table spans r in [-max_distance, max_distance].
// abs_scalar  b_ij^h = (P_h P_h^T)_{p_i p_j}, P_h in R^{Lmax x rank} learned, a
//             low-rank absolute term per layer and head (Chen et al. 2021,
//             Eq. 7, ABS-SCALAR; rank d_h by default, Table 12 also uses 2 d_h).
// alibi       b_ij^h = -m_h |r|, m_h Press et al.'s geometric slopes (Press et
//             al. 2022; the locality/symmetry paper, section 5). Press et al.
//             bias a causal model by -m_h (i - j) for j <= i; an encoder sees
//             both sides, and the symmetric -m_h |j - i| is the bidirectional
//             form ordo takes (EQUATIONS.md, alibi). Fixed by default; `learned` slopes start at
//             the geometric ones.
//
// Every learned table takes share = none | heads | layers | all (Chen et al.
// 2021, section 4.4.1). Segments per head (Eq. 9-11) are in pe/segments.h.
#pragma once

#include <memory>
#include <vector>

#include "base/config.h"
#include "nn/bert_config.h"
#include "nn/position.h"
#include "pe/common.h"

namespace ordo::pe {

// ---- t5_bias -------------------------------------------------------------------------------

// T5's bidirectional bucket of a relative distance r = j - i (Raffel et al.'s
// _relative_position_bucket with bidirectional=True, relative_position = r):
//   half = num_buckets / 2, exact = half / 2, n = |r|
//   bucket = (r > 0 ? half : 0) + (n < exact ? n
//            : min(half - 1, exact + floor(log(n / exact) / log(max_distance / exact) * (half - exact))))
// With 32 buckets and max distance 128: n = 0..7 exact, then 8-11 -> 8, 12-15 -> 9,
// 16-22 -> 10, 23-31 -> 11, 32-45 -> 12, 46-63 -> 13, 64-90 -> 14, 91+ -> 15;
// bucket 16 (r > 0 with n = 0) never occurs.
int64_t t5_bucket(int64_t r, int64_t num_buckets, int64_t max_distance);

class T5Bias : public nn::PositionEncoding {
 public:
  // Options: num_buckets (32), max_distance (128), share (layers).
  T5Bias(const nn::BertConfig& config, FieldReader& options, Device device);
  std::string name() const override { return "t5_bias"; }
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override;
  bool reads_query_key() const override { return false; }  // a term of the positions alone
  // R_h as the fused attention's table, rows by bucket.
  std::string fused_support() const override { return ""; }
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;
  // bucket(p_j - p_i) for every (b, i, j): [batch, L, L] i64.
  Tensor buckets(const Tensor& positions) const;
  const TableSet& tables() const { return tables_; }

 private:
  int64_t num_buckets_, max_distance_;
  Share share_;
  Tensor lut_;  // bucket of n = |r| for n = 0 .. max_distance, i64 (the sign added after)
  TableSet tables_;
};

// ---- rel_scalar ----------------------------------------------------------------------------

class RelativeScalar : public nn::PositionEncoding {
 public:
  // Options: max_distance (max_position_embeddings - 1), share (none).
  RelativeScalar(const nn::BertConfig& config, FieldReader& options, Device device);
  std::string name() const override { return "rel_scalar"; }
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override;
  bool reads_query_key() const override { return false; }  // a term of the positions alone
  std::string fused_support() const override { return ""; }
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;
  const TableSet& tables() const { return tables_; }

 private:
  int64_t max_distance_;
  Share share_;
  TableSet tables_;  // [2 max_distance + 1] each, row r + max_distance
};

// ---- abs_scalar ----------------------------------------------------------------------------

class AbsoluteScalar : public nn::PositionEncoding {
 public:
  // Options: rank (d_h), max_position (max_position_embeddings), share (none).
  AbsoluteScalar(const nn::BertConfig& config, FieldReader& options, Device device);
  std::string name() const override { return "abs_scalar"; }
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override;
  bool reads_query_key() const override { return false; }  // a term of the positions alone
  // (P_h P_h^T)_{p_i p_j} as the fused attention's E_i . F_j with E = F = P_h[p].
  std::string fused_support() const override;
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;
  int64_t max_position() const override { return rows_ - 1; }
  // P_h[p_i] for positions [B, L]: [B, heads, L, rank] (checked against the table).
  Var rows_at(const nn::AttentionState& s) const;
  const TableSet& tables() const { return tables_; }

 private:
  int64_t rows_, rank_;
  Share share_;
  TableSet tables_;  // P_h [max_position, rank] each
};

// ---- alibi ---------------------------------------------------------------------------------

// Press et al.'s slopes for n heads (their get_slopes): for n a power of 2 the
// geometric sequence m_h = 2^(-8h/n), h = 1..n; otherwise, with c the largest
// power of 2 below n, the c slopes for c heads followed by every other slope
// of the 2c-head sequence (the 1st, 3rd, ...), n - c of them.
std::vector<double> alibi_slopes(int64_t heads);

class Alibi : public nn::PositionEncoding {
 public:
  // Options: learned (false); with learned, share (none).
  Alibi(const nn::BertConfig& config, FieldReader& options, Device device);
  std::string name() const override { return "alibi"; }
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override;
  bool reads_query_key() const override { return false; }  // a term of the positions alone
  // softmax_j(-m_h |r|): the linear biases made an attention distribution, as
  // the locality/symmetry paper (section 5) does for ALiBi-Seq.
  Var positional_weights(const nn::AttentionState& s) override;
  // -m_h |r| as the fused attention's table, one row per distance the batch has.
  std::string fused_support() const override { return ""; }
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;
  // The slopes layer `layer` uses, [heads].
  Var slopes(int layer, DType dtype) const;
  bool learned() const { return learned_; }
  const TableSet* offsets() const { return offsets_.get(); }

 private:
  // -m_h |r| as [batch, heads, L, L] in `dtype`.
  Var biases(const nn::AttentionState& s, DType dtype) const;
  int64_t heads_;
  Device device_;
  bool learned_;
  // Learned slopes are m_h + d_{layer,h}: offsets initialised to 0, so the
  // slopes start geometric and each update is the slope's own.
  std::unique_ptr<TableSet> offsets_;
};

}  // namespace ordo::pe
