// Helpers for the per-head score terms (t5_bias, rel_scalar, abs_scalar,
// alibi, attenuated, per-head segments): looking a per-head table up by an
// index matrix, naming shared tables, and options every one of them reads.
#pragma once

#include <functional>
#include <string>

#include "pe/common.h"

namespace ordo::pe {

// bias[b, h, i, j] = tables[h, ids[b, i, j]]: tables [heads, n] (a layer's
// tables from TableSet::for_layer), ids [batch, L, L] i64 -> [batch, heads, L, L].
Var per_head_lookup(const Var& tables, const Tensor& ids);

// Parameter names for a TableSet: "<stem>" for share=all, "<stem>.layer_<l>"
// for share=heads, "<stem>.head_<h>" for share=layers and
// "<stem>.layer_<l>.head_<h>" for share=none.
std::function<std::string(int64_t)> table_names(Share share, int64_t heads, const std::string& stem);

// Marks every table of `set` (registered on `owner`) as exempt from AdamW's
// weight decay: parameters that are not weights to shrink towards 0
// (slopes, locality and symmetry knobs, frequency offsets).
void exclude_from_decay(nn::Module& owner, const TableSet& set);

// The `share` option of a learned attention-level variant (default `fallback`).
Share read_share(FieldReader& options, Share fallback, const std::string& variant);

// Positions as real numbers of `dtype` (sinusoids, rotations, distances).
Tensor real_positions(const Tensor& positions, DType dtype);

// The fused attention's rows (tensor/attention_terms.h): row_of(r) for every
// distance r = -widest .. widest (the batch's widest, widest_distance), set
// with the positions in out.terms; the rows kept as a constant of `pe`.
void set_fused_rows(const nn::PositionEncoding& pe, nn::PositionEncoding::FusedTerms& out, const nn::AttentionState& s,
                    int64_t widest, const std::function<int64_t(int64_t)>& row_of);

// The largest |p_j - p_i| within any row of positions [batch, L].
// ctx: BertModel::forward's (its InputFacts answer without a device read), or null.
int64_t widest_distance(const Tensor& positions, const nn::Context* ctx = nullptr);

}  // namespace ordo::pe
