// What the fused attention's CUDA kernels share (tensor/cuda/attention.cu:
// a thread per row on CUDA cores; tensor/cuda/attention_tiles.cu: tensor-core
// tiles): the terms of tensor/attention_terms.h as the kernels read them, and
// q, k, v addressed through their strides.
#pragma once

#include "base/philox.h"
#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

constexpr int kHead = kFusedAttentionMaxWidth;  // widest head (and E, F) the kernels take
constexpr int kRows = 32;                        // rows (threads) per block
constexpr int kTile = 8;                         // keys (or queries) per shared-memory tile
constexpr int kMaxSegments = kFusedAttentionMaxSegments;
constexpr int kWarp = 32;
constexpr float kLowest = -3.40282347e38f;  // nn::attention_bias's mask value
// A running max above this has seen a key that is not masked: a masked key
// (score about kLowest) then has probability exp(kLowest - m) = 0 exactly,
// so the causal kernels may skip the keys after the query.
constexpr float kSeenKey = -1e30f;

// The head widths with kernels of their own (see the top of the file); any
// other width up to kHead takes the kernels built with D = 0.
template <int D>
constexpr int kArrayWidth = D > 0 ? D : kHead;
// How far the loops over d unroll: whole for a built width, by 4 for D = 0.
template <int D>
constexpr int kUnroll = D > 0 ? D : 4;

// A per-head table [Ht, R, w] as the kernels read it.
struct Table {
  const float* data = nullptr;
  int64_t rows = 0, width = 1, head_stride = 0;  // head_stride 0: one table for every head
  __device__ const float* at(int64_t h, int64_t row) const { return data + h * head_stride + row * width; }
};

inline Table table_of(const Tensor& t) {
  Table x;
  if (!t.defined()) return x;
  x.data = t.data<float>();
  x.rows = t.size(1);
  x.width = t.dim() == 3 ? t.size(2) : 1;
  x.head_stride = t.size(0) == 1 ? 0 : x.rows * x.width;
  return x;
}

// [B or 1, H or 1, ...] strides of a broadcast term (0 where it broadcasts).
struct Broadcast {
  const float* data = nullptr;
  int64_t batch = 0, head = 0;
};

inline Broadcast broadcast_of(const Tensor& t) {
  Broadcast x;
  if (!t.defined()) return x;
  x.data = t.data<float>();
  x.batch = t.size(0) == 1 ? 0 : t.stride(0);
  x.head = t.size(1) == 1 ? 0 : t.stride(1);
  return x;
}

// q, k or v [B, H, N, d] (or a gradient of one) as the kernels address it:
// row (b, h, n) at data + b batch + h head + n row, its d elements
// contiguous — any such view, so that q, k and v are read where the stacked
// Q/K/V product wrote them ([B, L, 3, H, d] viewed per head), and their
// gradients written where that product's backward reads them, without copies.
template <class T>
struct Rows {
  T* data;
  int64_t batch, head, row;
  __device__ __forceinline__ T* at(int64_t b, int64_t h, int64_t n) const {
    return data + b * batch + h * head + n * row;
  }
};
using HeadRows = Rows<const float>;
using GradRows = Rows<float>;  // data null: not wanted

template <class T = const float>
inline Rows<T> head_rows(const Tensor& t) {
  if (!t.defined()) return {nullptr, 0, 0, 0};
  ORDO_ASSERT(t.dim() == 4 && (t.size(3) <= 1 || t.stride(3) == 1));
  return {static_cast<T*>(t.raw_data()), t.stride(0), t.stride(1), t.stride(2)};
}

// Everything the kernels read besides q, k, v.
struct Terms {
  int64_t B, H, L, J, d, e = 0;
  float scale, query_scale, key_scale, pos_scale;
  Table gate, product, query_vectors, key_vectors, table, value_vectors, segment_table;
  const int64_t* positions = nullptr;
  const int64_t* row_of = nullptr;
  int64_t rows_given = 0, first_distance = 0;
  int64_t cls_row = -1;
  Broadcast pos_query, pos_key, key_bias, dense_bias;
  const int64_t* segments = nullptr;
  int64_t segment_types = 0;
  bool causal = false;
  const float* rotary = nullptr;  // RoPE's frequencies [d/2]
  bool rotary_half = false;
  bool dropout = false;
  uint64_t threshold = 0, seed = 0, stream = 0;
  const int64_t* stream_base = nullptr;  // added to stream when set (a CUDA graph's replays)
  float keep_scale = 1;
  int* index_error = nullptr;

  // RoPE: row x [d] of a query or key at position p rotated in place (back, for a gradient).
  __device__ void rotate(float* x, int64_t p, bool back) const {
    const int64_t half = d / 2;
    for (int64_t m = 0; m < half; ++m) {
      const float angle = static_cast<float>(p) * rotary[m];
      const float c = cosf(angle), s = back ? -sinf(angle) : sinf(angle);
      const int64_t ia = rotary_half ? m : 2 * m, ib = rotary_half ? m + half : 2 * m + 1;
      const float a = x[ia], e = x[ib];
      x[ia] = a * c - e * s;
      x[ib] = a * s + e * c;
    }
  }

  __device__ const float* pos_row(const Broadcast& x, int64_t b, int64_t h, int64_t i) const {
    return x.data + b * x.batch + h * x.head + i * e;
  }

  // The row of the relative terms for (b, i, j); -1 when there is none (or
  // the distance is outside the rows given: recorded as an index error).
  __device__ int64_t row(int64_t b, int64_t i, int64_t j) const {
    if (row_of == nullptr) return -1;
    const int64_t at = positions[b * L + j] - positions[b * L + i] - first_distance;
    if (at < 0 || at >= rows_given) {
      report_index_error(index_error, IndexErrorSite::relative);
      return -1;
    }
    return row_of[at];
  }
  // TUPE's [CLS] reset: the pair's row of the scalar table in place of T[row] and E.F, or -1.
  __device__ int64_t reset_row(int64_t i, int64_t j) const {
    if (cls_row < 0) return -1;
    return i == 0 ? cls_row : j == 0 ? cls_row + 1 : -1;
  }
  // A table row that exists, or nullptr (an index error when it does not).
  __device__ const float* entry(const Table& t, int64_t h, int64_t r) const {
    if (t.data == nullptr || r < 0) return nullptr;
    if (r >= t.rows) {
      report_index_error(index_error, IndexErrorSite::relative);
      return nullptr;
    }
    return t.at(h, r);
  }

  // The pair's dot products, which the callers form over d: the contextual
  // term c (q.k, or sum q k W), q.A, k.B and E.F.
  struct Dots {
    float c = 0, qa = 0, kb = 0, ef = 0;
  };

  // s_ij from its dot products, and the terms that need none.
  __device__ float score(const Dots& dots, int64_t b, int64_t h, int64_t i, int64_t j, int64_t r) const {
    float c = dots.c;
    if (const float* g = entry(gate, h, r)) c *= *g;
    float s = scale * c + query_scale * dots.qa + key_scale * dots.kb;
    const int64_t reset = reset_row(i, j);
    if (reset >= 0) {
      if (const float* t = entry(table, h, reset)) s += *t;
    } else {
      if (const float* t = entry(table, h, r)) s += *t;
      s += pos_scale * dots.ef;
    }
    if (segment_table.data != nullptr) {
      const int64_t* seg = segments + b * L;
      if (const float* u = entry(segment_table, h, seg[i] * segment_types + seg[j])) s += *u;
    }
    float m = key_bias.data != nullptr ? key_bias.data[b * key_bias.batch + h * key_bias.head + j] : 0.0f;
    if (causal && j > i) m = fminf(m, kLowest);
    if (dense_bias.data != nullptr) m += dense_bias.data[b * dense_bias.batch + h * dense_bias.head + i * J + j];
    return s + m;
  }

  // keep / (1 - p) of the probability (b, h, i, j), as the dropout kernel
  // draws it: element e takes word e % 4 of Philox draw e / 4, which
  // `last` keeps for the next keys of the row.
  struct Draw {
    uint64_t index = ~uint64_t(0);
    philox::Words words;
  };
  __device__ float dropout_factor(int64_t b, int64_t h, int64_t i, int64_t j, Draw& last) const {
    if (!dropout) return 1.0f;
    const uint64_t element = static_cast<uint64_t>(((b * H + h) * L + i) * J + j);
    if (element / 4 != last.index) {
      last.index = element / 4;
      last.words = philox::draw(seed, stream + (stream_base ? static_cast<uint64_t>(*stream_base) : 0), last.index);
    }
    return philox::dropout_keep(last.words, element, threshold) ? keep_scale : 0.0f;
  }
};

// RoPE's rotation of a thread's own row x [d] (Terms::rotate with every index
// known at compile time when D > 0, so that x may stay in registers).
template <int D>
__device__ __forceinline__ void rotate_row(const Terms& t, float* x, int64_t p, bool back) {
  if constexpr (D == 0) {
    t.rotate(x, p, back);
  } else {
    constexpr int half = D / 2;
    ORDO_UNROLL_BY((kUnroll<D>))
    for (int m = 0; m < half; ++m) {
      const float angle = static_cast<float>(p) * t.rotary[m];
      const float c = cosf(angle), s = back ? -sinf(angle) : sinf(angle);
      auto turn = [c, s](float& a, float& e) {
        const float a0 = a, e0 = e;
        a = a0 * c - e0 * s;
        e = a0 * s + e0 * c;
      };
      // Two branches, each with constant indices (a select between the two
      // addresses would be an address known only at run time).
      if (t.rotary_half)
        turn(x[m], x[m + half]);
      else
        turn(x[2 * m], x[2 * m + 1]);
    }
  }
}

inline Terms terms_of(const AttentionTerms& t, const Tensor& q, const Tensor& k, DeviceContext& ctx) {
  Terms x;
  x.B = q.size(0), x.H = q.size(1), x.L = q.size(2), x.J = k.size(2), x.d = q.size(3);
  x.scale = static_cast<float>(t.scale), x.query_scale = static_cast<float>(t.query_scale);
  x.key_scale = static_cast<float>(t.key_scale), x.pos_scale = static_cast<float>(t.pos_scale);
  x.gate = table_of(t.gate), x.product = table_of(t.product), x.query_vectors = table_of(t.query_vectors);
  x.key_vectors = table_of(t.key_vectors), x.table = table_of(t.table), x.value_vectors = table_of(t.value_vectors);
  x.segment_table = table_of(t.segment_table);
  if (t.positions.defined()) x.positions = t.positions.data<int64_t>();
  if (t.rotary.defined()) {
    x.rotary = t.rotary.data<float>();
    x.rotary_half = t.rotary_half;
  }
  if (t.row_of.defined()) {
    x.row_of = t.row_of.data<int64_t>();
    x.rows_given = t.row_of.numel();
    x.first_distance = t.first_distance;
  }
  x.cls_row = t.cls_row;
  if (t.pos_query.defined()) {
    x.e = t.pos_query.size(3);
    x.pos_query = broadcast_of(t.pos_query);
    x.pos_key = broadcast_of(t.pos_key);
  }
  x.key_bias = broadcast_of(t.key_bias);
  x.dense_bias = broadcast_of(t.dense_bias);
  if (t.segment_table.defined()) {
    x.segments = t.segments.data<int64_t>();
    x.segment_types = t.segment_types;
  }
  x.causal = t.causal;
  x.dropout = t.dropout > 0;
  x.threshold = philox::dropout_threshold(t.dropout);
  x.keep_scale = static_cast<float>(1.0 / (1.0 - t.dropout));  // the dropout kernel's rounding
  x.seed = t.seed, x.stream = t.stream;
  if (t.stream_base.defined()) x.stream_base = t.stream_base.data<int64_t>();
  x.index_error = ctx.index_error;
  ORDO_CHECK(x.d <= kHead && x.e <= kHead, "attention on CUDA: heads ", x.d, " wide and E, F ", x.e,
             " wide; the fused kernels take up to ", kHead);
  ORDO_CHECK(x.segment_types <= kMaxSegments, "attention on CUDA: ", x.segment_types,
             " segment types; the fused kernels take up to ", kMaxSegments);
  return x;
}
// The attention on tensor-core tiles (tensor/cuda/attention_tiles.cu), where
// attention_runs_on_tiles: attention_forward's and attention_backward's work,
// the tables' and gates' gradients with it when with_tables (where
// attention_table_grads_on_tiles; dsum: D_i = dO_i . o_i [B, H, L], written).
void attention_forward_tiles(const Tensor& out, const Tensor& out_operand, const Tensor& lse, const Tensor& q,
                             const Tensor& k, const Tensor& v, const Terms& t, DeviceContext& ctx);
void attention_backward_tiles(const AttentionGrads& grads, bool with_tables, const Tensor& dsum, const Tensor& gout,
                              const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                              const Terms& t, DeviceContext& ctx);

}  // namespace ordo::cuda
