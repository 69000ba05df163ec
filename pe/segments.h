// Segment encoding per head (Chen et al. 2021, Eq. 9-11), the model option
// segment = per_head: no segment (token type) embedding at the input; each
// head adds instead
//
//   S_ij = Seg_h[seg(i), seg(j)]                        (Eq. 9, 10)
//   s_ij = q_i . k_j / sqrt(d_h) + (positional terms) + S_ij   (Eq. 11 with REL-SCALAR, Eq. 7 with ABS-SCALAR)
//
// k^2 learned scalars per head (k = type_vocab_size), a table per layer and
// head by default (segment_share = none; heads / layers / all share them as
// the position tables are shared, Chen et al. section 4.4.1).
//
// It wraps the configured position encoding (any of them: 001 pairs it with
// REL-SCALAR and ABS-SCALAR, and its Tables 10-11 with input-level
// positions), forwards every hook to it and adds S to its score bias. The
// registry wraps it when the config asks for per-head segments.
#pragma once

#include <memory>

#include "nn/bert_config.h"
#include "nn/position.h"
#include "pe/common.h"

namespace ordo::pe {

class PerHeadSegments : public nn::PositionEncoding {
 public:
  PerHeadSegments(const nn::BertConfig& config, std::unique_ptr<nn::PositionEncoding> inner, Device device);
  // The position encoding's name: segments are a separate model option.
  std::string name() const override { return inner_.name(); }
  std::string module_path() const override { return ""; }  // the parts keep their own names
  bool adds_segment_scores() const override { return true; }

  Var input_embedding(const Tensor& positions, nn::Context& ctx) override { return inner_.input_embedding(positions, ctx); }
  InputLookup input_lookup(const Tensor& positions, nn::Context& ctx) override {
    return inner_.input_lookup(positions, ctx);
  }
  void rotate(const nn::AttentionState& s, Var& q, Var& k) override { inner_.rotate(s, q, k); }
  Var contextual_scores(const nn::AttentionState& s, const Var& q, const Var& k) override {
    return inner_.contextual_scores(s, q, k);
  }
  double score_scale(const nn::AttentionState& s) const override { return inner_.score_scale(s); }
  // The position encoding's bias (if any) + S.
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override;
  Var value_term(const nn::AttentionState& s, const Var& probs) override { return inner_.value_term(s, probs); }
  bool has_value_term() const override { return inner_.has_value_term(); }
  bool reads_query_key() const override { return inner_.reads_query_key(); }
  Var positional_weights(const nn::AttentionState& s) override { return inner_.positional_weights(s); }
  // The encoding's fused terms (none when it acts only at the input) and S
  // as the fused attention's segment table.
  std::string fused_support() const override;
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;
  int64_t max_position() const override { return inner_.max_position(); }
  OffsetVectors offset_vectors(int layer, int64_t span) const override { return inner_.offset_vectors(layer, span); }
  LearnedFrequencies learned_frequencies(int layer) const override { return inner_.learned_frequencies(layer); }

  // S for one layer, [batch, heads, L, L]; segments undefined means all 0.
  Var segment_scores(const nn::AttentionState& s) const;
  nn::PositionEncoding& inner() const { return inner_; }
  const TableSet& tables() const { return tables_; }

 private:
  nn::PositionEncoding& adopt(std::unique_ptr<nn::PositionEncoding> inner);
  nn::PositionEncoding& inner_;
  int64_t types_;
  TableSet tables_;  // Seg_h as [k * k] each, entry a * k + b
};

}  // namespace ordo::pe
