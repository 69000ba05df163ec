// Relative vectors inside attention: the learned vectors of Shaw et al. and
// NEZHA's sinusoidal ones, fixed or with learned frequencies; and what the
// whole family (pe/xlnet.h, pe/huang.h) shares: distances mapped to table
// rows, table names by sharing mode, and the attention terms built from
// per-distance vectors without a [batch, heads, L, L, d_h] tensor.
//
// EQUATIONS.md's notation: per head q_i, k_j, v_j in R^{d_h}; r_ij = p_j - p_i (key
// position minus query position, from the explicit positions).
//
// rpe_shaw  Shaw et al. 2018, as Huang et al. 2020 write it (Eq. 7-9), with
//           values as Chen et al. 2021 (section 2.2.2) and Wang et al. 2021 (Eq. 5, "RPE"):
//               s_ij = q_i . (k_j + a^K_{c(r_ij)}) / sqrt(d_h)          (Huang et al., Eq. 7)
//               o_i  = sum_j alpha_ij (v_j + a^V_{c(r_ij)})              (option value: true)
//               c(r) = max(-k, min(k, r))                                (Huang et al., Eq. 8-9)
//           a^K, a^V in R^{d_h} learned. Chen et al. write clip(i - j, k): the
//           same table read the other way round; ordo keeps Huang's j - i.
//           Without clipping the table holds |r| <= max_distance.
// rpe_sin   NEZHA's functional relative positions (Wei et al. 2019; Wang et al.
//           2021, Table 1, "fixed sinusoidal RPE"), used as a^K and a^V:
//               a_r = P(r),  P(r)_{2m} = sin(w_m r),  P(r)_{2m+1} = cos(w_m r),
//               w_m = 10000^(-2m/d_h),  m = 0 .. d_h/2 - 1
// rpe_sin_learnable  the same with the d_h/2 frequencies w_m learned,
//           initialised to the fixed ones (Wang et al. 2021, Table 1, "learnable
//           sinusoidal RPE", section 3.1).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pe/common.h"

namespace ordo::pe {

// ---- distances to rows ----------------------------------------------------------------

// How a variant turns a (clipped) distance r into a row of its table.
enum class RowLayout {
  // Rows 0 .. 2 reach, row = reach - r. This is HuggingFace's layout (HF
  // indexes by query - key = -r: row (i - j) + reach), used for every signed
  // table so that rpe_shaw and huang_m4 checkpoints are HF's relative_key and
  // relative_key_query ones, and one layout serves the whole family.
  signed_table,
  // Rows 0 .. reach, row = |r| (Huang et al. 2020, method 1, Eq. 11).
  magnitude_table,
  // No table: the rows are the distances the batch has, ascending
  // (row p is the distance min_distance + p). For functions of r (sinusoids).
  functional,
};

// The rows one batch uses: its pairs' rows, trimmed to the span they cover so
// that per-distance work is O(rows used), not O(table).
struct DistanceRows {
  Tensor idx;                // [B, L, L] i64: row of pair (i, j) minus `first`
  Tensor idx_t;              // idx transposed: idx_t[b, j, i] = idx[b, i, j] (key-side terms)
  // Banded rows (vector_rows(), in place of idx): every row of positions
  // counts up by one, so pair (i, j) has the distance j - i and the row
  // band[j - i + L - 1] minus `first`, [2L - 1] entries.
  std::vector<int64_t> band;
  int64_t first = 0;         // the batch uses rows first .. first + count - 1
  int64_t count = 0;
  int64_t min_distance = 0;  // functional layout: row p stands for r = min_distance + p
};

struct DistanceSpec {
  RowLayout layout = RowLayout::signed_table;
  int64_t clip = -1;  // k >= 0: r is clipped to [-k, k] first; -1: no clipping
  int64_t reach = 0;  // tables: the largest |r| held (k when clipping, else max_distance)
  bool has_table() const { return layout != RowLayout::functional; }
  int64_t table_rows() const { return layout == RowLayout::signed_table ? 2 * reach + 1 : reach + 1; }
  // r_ij = p_j - p_i of positions [B, L], clipped, mapped to rows, trimmed.
  // A distance beyond a table's reach is an error naming the variant and the
  // options that bound it (max_distance, clip).
  // ctx: BertModel::forward's, whose InputFacts give the distances' range
  // without reading them back from a device; null: read from the tensor.
  DistanceRows rows(const Tensor& positions, const std::string& variant, bool with_transpose = false,
                    const nn::Context* ctx = nullptr) const;
  // The rows of the per-distance vector terms below: banded when the
  // forward's positions count up by one in every row (InputFacts::consecutive)
  // on the CPU under FP32 or bf16 products (the band ops round their operands
  // as bf16 products do), where a matrix product per query over its
  // window of the table does half the arithmetic of Q A^T over every row
  // (2L - 1 of them) and needs no index; rows() otherwise (and with
  // set_banded_terms(false)). On CUDA the fused attention carries these terms.
  DistanceRows vector_rows(const Tensor& positions, const std::string& variant, bool with_transpose,
                           const nn::Context* ctx) const;
  // The same rows for the fused attention: a table of distance -> row (minus
  // `first`) made on the host from the batch's widest distance, set in
  // out.terms (no [B, L, L] index), kept as a constant of `pe` (the variant
  // asking, whose name the errors give); first and count as rows() gives them,
  // or with `whole_table` (a table's layout) every row: first 0, count
  // table_rows() — the attention then takes the table untrimmed and writes
  // its whole gradient (zero in the rows the batch does not reach), where
  // a trimmed table's gradient is padded back by one more launch.
  DistanceRows fused_rows(const nn::PositionEncoding& pe, const nn::AttentionState& s,
                          nn::PositionEncoding::FusedTerms& out, bool whole_table = false) const;

 private:
  // first, count and min_distance for the (clipped) distances lo .. hi, and
  // the table's reach checked; row(c) - first of a clipped distance c.
  DistanceRows span(int64_t lo, int64_t hi, const std::string& variant) const;
  int64_t row(int64_t c, const DistanceRows& span) const;
  // span() of the distances -widest .. widest once clipped; the row of distance r, clipped first.
  DistanceRows clipped_span(int64_t widest, const std::string& variant) const;
  int64_t clipped_row(int64_t r, const DistanceRows& span) const;
};

// Whether vector_rows() may give banded rows (default on); off runs the
// index path everywhere: the reference the banded one is tested against.
void set_banded_terms(bool on);
bool banded_terms_enabled();

// ---- options and tables -------------------------------------------------------------------

// The options the family shares: share (none | heads | layers | all), clip
// (where the paper clips) and max_distance (the reach of an unclipped table,
// default max_position_embeddings - 1 as HF's 2 max_position_embeddings - 1
// rows; larger for extrapolation beyond the training length).
struct RelativeOptions {
  Share share = Share::heads;
  int64_t clip = -1;
  int64_t max_distance = 0;
  DistanceSpec spec(RowLayout layout) const;
};
struct OptionSet {
  bool share = true, clip = true, max_distance = true;
};
RelativeOptions read_relative_options(const nn::BertConfig& config, FieldReader& options, const std::string& variant,
                                      Share default_share, OptionSet allowed);

// Checkpoint names of a variant's tables, registered under module path "":
//   none    encoder.layer.<l>.attention.self.<name>.<h>.weight
//   heads   encoder.layer.<l>.attention.self.<name>.weight   (HF's distance_embedding)
//   layers  encoder.<name>.<h>.weight
//   all     encoder.<name>.weight
std::function<std::string(int64_t)> relative_table_names(Share share, int64_t heads, const std::string& name);

// Stops AdamW's weight decay on the tables (multiplicative gates and frequency
// offsets, whose neutral value is not 0; cf. LayerNorm gains).
void keep_out_of_decay(nn::Module& owner, const TableSet& tables, Share share, int64_t heads, const std::string& name);

// The rows `rows` of layer `layer`'s tables: [count, ...] when the layer's
// heads share one table (one product for all heads), [heads, count, ...] otherwise.
// `ctx`: the forward's, for tables the layers share (TableSet::for_layer).
Var layer_rows(const TableSet& tables, int layer, const DistanceRows& rows, nn::Context* ctx = nullptr);

// The rows of layer `layer`'s first table (its first head's) for the offsets
// -k..k, k = min(span, the table's reach), in ascending offset order, as the
// analyses read them (nn::PositionEncoding::offset_vectors): a signed table's
// row reach - r, a magnitude table's row |r|; a table of scalars gives
// vectors of width 1. `what` names the table for captions ("a^K (rpe_shaw
// key table"); the layer and offsets are appended.
nn::PositionEncoding::OffsetVectors table_offset_vectors(const TableSet& tables, const DistanceSpec& spec, int layer,
                                                         int64_t span, const std::string& what);

// ---- the attention terms of per-distance vectors a_r ([R, d] shared or [H, R, d]) ----------
// None makes a [B, H, L, L, d] tensor; peak extra memory is stated per term.
// With banded rows (vector_rows()) each is one banded op over the vectors
// laid out by distance ([1 or H, 2L - 1, d]): band_scores / band_apply, a
// product per query over its window, no [B, H, L, R] tensor and no index.
// precision: the forward's (nn::Context::precision), for the products and
// the banded ops' operands.

// alpha q_i . a_{r_ij} for every pair, [B, H, L, L]: one product Q A^T
// [B, H, L, R], then the pair's entry picked (relative_gather).
// Peak: [B, H, L, R] + [B, H, L, L] floats, both freed after the forward.
Var query_vector_term(const Var& q, const Var& a, const DistanceRows& rows, double alpha, MatmulPrecision precision);
// alpha k_j . a_{r_ij}, [B, H, L, L]: K A^T [B, H, L(keys), R] gathered with
// the transposed index, then transposed back (a view). Same peak.
Var key_vector_term(const Var& k, const Var& a, const DistanceRows& rows, double alpha, MatmulPrecision precision);
// sum_j alpha_ij a_{r_ij}, [B, H, L, d]: relative_scatter(alpha) [B, H, L, R]
// (the attention mass per distance), times A. The [B, H, L, R] mass is kept
// for the backward of the product.
Var value_vector_term(const Var& probs, const Var& a, const DistanceRows& rows, MatmulPrecision precision);

// The fused attention's tables from a layer's rows (layer_rows(), or the
// vectors a variant computes): [Ht, R] or [Ht, R, w] with Ht = H or 1.
Var per_head_table(const Var& rows, int table_rank);

// ---- rpe_shaw ----------------------------------------------------------------------------

// Memory of the attention beyond plain q.k (B batch, H heads, L length, R the
// rows a batch uses, R <= 2L - 1 for consecutive positions, <= 2k + 1 when
// clipped): idx [B, L, L] i64 kept for the backward; the key term's transient
// [B, H, L, R] + [B, H, L, L]; with values, the [B, H, L, R] attention mass
// per distance kept for the backward, per layer.
class ShawRelative : public nn::PositionEncoding {
 public:
  ShawRelative(const nn::BertConfig& config, const RelativeOptions& options, bool values, Device device);
  std::string name() const override { return "rpe_shaw"; }
  // Tables under HF's names (table_names), so relative_key checkpoints map one to one.
  std::string module_path() const override { return ""; }
  // q_i . a^K_{c(r_ij)} / sqrt(d_h), added to q_i . k_j / sqrt(d_h) (Huang et al., Eq. 7).
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override;
  // sum_j alpha_ij a^V_{c(r_ij)} (Chen et al. 2021, section 2.2.2); undefined without values.
  Var value_term(const nn::AttentionState& s, const Var& probs) override;
  bool has_value_term() const override { return values_.has_value(); }
  // a^K (and a^V) as the fused attention's query (and value) vectors.
  std::string fused_support() const override { return ""; }
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;
  // a^K_r of layer `layer`'s first key table, |r| <= min(span, the table's reach).
  OffsetVectors offset_vectors(int layer, int64_t span) const override;

  const DistanceSpec& distances() const { return spec_; }
  const TableSet& key_tables() const { return keys_; }
  const TableSet* value_tables() const { return values_ ? &*values_ : nullptr; }

 private:
  DistanceSpec spec_;
  TableSet keys_;
  std::optional<TableSet> values_;
};

// ---- rpe_sin, rpe_sin_learnable ---------------------------------------------------------------

// Memory as rpe_shaw (P(r) for the rows used is [R, d_h], or [H, R, d_h] with
// per-head learned frequencies).
class SinusoidRelative : public nn::PositionEncoding {
 public:
  // learnable: rpe_sin_learnable (frequencies w = w_fixed + delta, delta learned
  // from 0, shared as `share` says); otherwise rpe_sin (no parameters).
  SinusoidRelative(const nn::BertConfig& config, bool learnable, Share share, int64_t clip, bool values,
                   Device device);
  std::string name() const override { return learnable_ ? "rpe_sin_learnable" : "rpe_sin"; }
  std::string module_path() const override { return ""; }
  // q_i . P(c(r_ij)) / sqrt(d_h).
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override;
  // sum_j alpha_ij P(c(r_ij)); undefined without values.
  Var value_term(const nn::AttentionState& s, const Var& probs) override;
  bool has_value_term() const override { return values_; }
  // P(r) as the fused attention's query (and value) vectors.
  std::string fused_support() const override { return ""; }
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override;

  // The frequencies w_m of layer `layer`: [d_h/2] (fixed, or shared by the
  // layer's heads) or [heads, d_h/2]; w_fixed + delta summed in f64 on the
  // CPU, so the fixed part is not rounded to the parameters' dtype.
  Tensor frequencies(int layer) const;
  // P(r) for the rows `rows` stands for: [R, d_h] or [H, R, d_h].
  Var vectors(int layer, const DistanceRows& rows, DType dtype, Device device) const;
  const DistanceSpec& distances() const { return spec_; }

  // P(r) of layer `layer`'s first head, |r| <= span (and <= the clip).
  OffsetVectors offset_vectors(int layer, int64_t span) const override;
  // rpe_sin_learnable only: w_fixed and the first head's learned w of layer `layer`.
  LearnedFrequencies learned_frequencies(int layer) const override;

 private:
  Var frequency_var(int layer, DType dtype, Device device) const;
  // vectors() of the forward's layer s.layer: one Var a forward where every
  // layer has the same P(r) (Context::layer_shared).
  Var layer_vectors(const nn::AttentionState& s, const DistanceRows& rows, DType dtype, Device device) const;
  // delta of layer `layer`: [d_h/2] or [heads, d_h/2] (learnable only).
  Var layer_offsets(int layer) const;

  bool learnable_, values_;
  int64_t head_dim_;
  DistanceSpec spec_;
  std::optional<TableSet> offsets_;  // delta [d_h/2] per table (rpe_sin_learnable)
};

// Factories for the registry; each reads its own option keys.
std::unique_ptr<nn::PositionEncoding> make_rpe_shaw(const nn::BertConfig& config, FieldReader& options, Device device);
std::unique_ptr<nn::PositionEncoding> make_rpe_sin(const nn::BertConfig& config, FieldReader& options, Device device);
std::unique_ptr<nn::PositionEncoding> make_rpe_sin_learnable(const nn::BertConfig& config, FieldReader& options,
                                                             Device device);

}  // namespace ordo::pe
