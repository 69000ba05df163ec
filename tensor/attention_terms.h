// What the fused attention computes (tensor/kernels.inc: attention_forward,
// attention_backward): softmax attention whose scores carry any of the
// position terms the variants of pe/ produce, in one kernel per direction
// that never writes the [B, H, L, J] scores or probabilities.
//
// Per batch b, head h, query i, key j; q, k, v [B, H, L or J, d]; r the
// relative distance positions[b, j] - positions[b, i] and row = row_of[r -
// first_distance] the row of the variant's tables that distance uses:
//
//   s_ij  = scale c_ij                                   the contextual term
//         + query_scale q_i . A[row] + key_scale k_j . B[row]  relative vectors (Shaw, rpe_sin, XLNet, Huang m4)
//         + T[row]                                       a scalar per distance (T5, rel_scalar, ALiBi, TUPE-R, XLNet)
//         + pos_scale E_i . F_j                          an absolute positional product (abs_scalar, TUPE)
//         + U[segment_i * segment_types + segment_j]     per-head segments (Chen et al. 2021, Eq. 9)
//         + m_ij + dense_bias_ij                         the mask; a fixed [L, J] term (attenuated)
//   m_ij  = key_bias_j (the padding mask: 0 or lowest), min(key_bias_j, lowest) where causal and
//           j > i (nn::attention_bias's masks), lowest the most negative f32
//   c_ij  = q_i . k_j, or (q_i . k_j) G[row] (gate: Huang m1, m2),
//           or sum_d q_id k_jd W[row, d] (product: Huang m3)
//   P_ij  = softmax_j(s_ij);  P~_ij = P_ij keep_ij / (1 - p)  (dropout: keep as tensor/kernels.inc's
//           dropout of the [B, H, L, J] probabilities under (seed, stream))
//   o_i   = sum_j P~_ij (v_j + V[row])                   value vectors (Shaw, rpe_sin)
//   lse_i = log sum_j exp(s_ij), for the backward.
//
// RoPE (rotary defined, [d/2] frequencies theta_m): q_i and k_j are first
// rotated, pair of dimensions by pair, by the angles positions[b, i] theta_m
// and positions[b, j] theta_m (pairs (2m, 2m + 1), or (m, m + d/2) with
// rotary_half), as pe/rope.h defines it; the kernels rotate them as they load
// them, and their gradients back.
//
// TUPE's [CLS] reset (cls_row >= 0): in the pairs of the first query (i = 0)
// the terms T[row] and E.F are replaced by T[cls_row], in those of the first
// key below it (j = 0 < i) by T[cls_row + 1].
//
// Tables are [Ht, R] (scalars) or [Ht, R, d] (vectors) with Ht = H or 1 (one
// table for every head). E and F are [B or 1, H, L or J, e]; key_bias [B or
// 1, H or 1, J]; dense_bias [B or 1, H or 1, L, J]. An undefined tensor is an
// absent term. Every term is contiguous (q, k, v: tensor/kernels.inc).
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace ordo {

// What the CUDA kernels take (tensor/cuda/attention.cu): heads and E, F up
// to this wide, up to this many segment types. The CPU kernels take any.
constexpr int64_t kFusedAttentionMaxWidth = 64;
constexpr int64_t kFusedAttentionMaxSegments = 8;

struct AttentionTerms {
  double scale = 1.0;
  Tensor gate, product;  // at most one
  Tensor query_vectors, key_vectors, table, value_vectors;
  double query_scale = 1.0, key_scale = 1.0;
  Tensor pos_query, pos_key;
  double pos_scale = 1.0;
  int64_t cls_row = -1;
  Tensor segments, segment_table;  // [B, L] i64 ids, [Ht, types^2]
  int64_t segment_types = 0;
  Tensor key_bias, dense_bias;
  bool causal = false;
  Tensor rotary;  // [d/2], the positions' dtype of q
  bool rotary_half = false;
  // The rows of the relative terms: positions [B, L] i64, row_of [n] i64.
  Tensor positions, row_of;
  int64_t first_distance = 0;
  // Every row of positions counts up by one (p_j - p_i = j - i:
  // nn::InputFacts::consecutive), so that the pairs of one distance are a
  // diagonal (the tiles' gradients of Shaw's relative vectors take them so).
  bool consecutive_positions = false;
  double dropout = 0;
  uint64_t seed = 0, stream = 0;
  // When defined, one i64 on q's device added to `stream` when the kernels
  // run (backend.h's PhiloxStream::base: a step replayed from a CUDA graph
  // draws the next step's masks).
  Tensor stream_base;
  // bf16 products (train.precision = bf16): where attention_runs_on_tiles,
  // the CUDA kernels take q, k, v, dO and the probabilities as bf16 operands
  // of tensor-core products with FP32 sums. The CPU's kernels ignore it.
  bool bf16_products = false;

  // Whether a term reads a table row per pair (then positions and row_of are needed).
  // (RoPE needs positions too.)
  bool has_rows() const {
    return gate.defined() || product.defined() || query_vectors.defined() || key_vectors.defined() ||
           value_vectors.defined() || (table.defined() && row_of.defined());
  }
};

// Whether the CUDA kernels run this attention on tensor-core tiles
// (tensor/cuda/attention_tiles.cu): bf16 products asked for, heads of a
// width the tiles are built for, and terms that add a scalar per pair (the
// tables, the gates, RoPE, the masks, a dense bias, dropout) or Shaw's
// relative vectors q_i . A[row] and sum_j P~_ij V[row] (query and value
// vectors as wide as the heads, without RoPE) — no other vectors per pair
// (XLNet's and Huang et al.'s key vectors, method 3's product, TUPE's E.F)
// and no per-head segments, which take the FP32 kernels.
inline bool attention_runs_on_tiles(const AttentionTerms& t, int64_t head_width) {
  auto unfit = [&](const Tensor& vectors) {
    return vectors.defined() && (vectors.size(-1) != head_width || t.rotary.defined());
  };
  return t.bf16_products && (head_width == 64 || head_width == 16) && !t.product.defined() &&
         !unfit(t.query_vectors) && !unfit(t.value_vectors) && !t.key_vectors.defined() && !t.pos_query.defined() &&
         !t.segment_table.defined();
}

// How many table rows (the scalar table's and the gate's together) the
// tiles' backward bins in shared memory (4 bytes each, per warp); with more,
// or under TUPE's [CLS] reset, the tables' gradients take attention.cu's
// FP32 pass over the sorted pairs instead.
constexpr int64_t kTileTableBins = 1024;

// Whether the tables' gradients of an attention that runs on tiles are
// formed on the tiles too (tensor/cuda/attention_tiles.cu): the scalar
// tables' and gates' binned per warp by table row in the backward by query
// rows; Shaw's relative vectors' (query and value vectors) by distance, a
// diagonal of pairs at a time, at consecutive positions and without a scalar
// table or gate beside them. Otherwise attention.cu's FP32 pass over the
// sorted pairs.
inline bool attention_table_grads_on_tiles(const AttentionTerms& t) {
  if (t.query_vectors.defined() || t.value_vectors.defined())
    return t.consecutive_positions && !t.table.defined() && !t.gate.defined();
  const int64_t rows = (t.table.defined() ? t.table.size(1) : 0) + (t.gate.defined() ? t.gate.size(1) : 0);
  return t.cls_row < 0 && rows <= kTileTableBins;
}

// The gradients attention_backward writes, each where defined (preallocated,
// contiguous, overwritten): q, k, v and the tables in their own shapes; E, F
// as [B, H, L or J, e] and the segment terms per query row as [B, H, L,
// segment_types] (sum_j dS_ij over the keys of each segment), which the op
// reduces to the shapes of its inputs. The masks and dense_bias take none.
struct AttentionGrads {
  Tensor q, k, v;
  Tensor gate, product, query_vectors, key_vectors, table, value_vectors;
  Tensor pos_query, pos_key, segment_rows;
  Tensor segment_table;  // the op's result (from segment_rows); no kernel writes it
};

}  // namespace ordo
