// CUDA kernels of the fused attention (tensor/kernels.inc; the terms and the
// equations: tensor/attention_terms.h), checked against the CPU kernels
// (tensor/cpu/attention.cpp) by tests/tensor/test_attention_cuda.cpp.
//
// FlashAttention's algorithm (Dao et al. 2022; Milakov & Gimelshein 2018 for
// the online softmax), with every position term of pe/ computed where the
// score is: nothing of size [B, H, L, J] is ever written.
//  - forward: a thread per query row; keys in tiles of kTile through shared
//    memory; per tile the running max m and sum l of exp(s - m) are updated
//    and the output accumulator rescaled once (the online softmax); writes o
//    and lse = m + log l.
//  - backward, by query rows: D_i = gout_i . o_i, then the keys again: P from
//    s and lse, dS = P (dP - D); dq, dE and the segment sums per row.
//  - backward, by key rows: the queries in tiles: dk, dv, dF.
//  - the tables' gradients (gate, product, the relative vectors, the scalar
//    table): the (query, key) pairs are stably sorted by their table row
//    (cub's radix sort, as tensor/cuda/relative.cu's), then a warp per (head,
//    row) walks its run in increasing (b, i, j), 32 pairs at a time: a lane
//    recomputes each pair's dS, then the lanes add them over d; for tables
//    shared by the heads one warp walks every head in turn.
// q, k and v are read, and their gradients written, through their strides
// (HeadRows, below): where the stacked Q/K/V product lays them out, no copies.
// Determinism: every output has one writer adding its terms in a fixed order;
// no float atomics. The memory beyond q, k, v and o: lse and D [B, H, L], and
// with tables 16 bytes per (b, i, j) pair for the sort (B L J, not B H L J).
//
// These kernels are written for clarity, on CUDA cores (a thread per row, FP32),
// not tuned: no tensor-core tiles, and a relative row read from global memory
// per pair. Heads and E, F up to kHead = 64 wide, up to kMaxSegments segment types.
//
// Registers: each thread keeps its row of q and its accumulators (o, or dq;
// dk and dv) in arrays of the head's width. Indexed at run time they live in
// local memory — ptxas gave the three kernels 576-672 bytes of stack a thread,
// which at base 32 x 128 is gigabytes of traffic a layer, and on an H200 the
// fused step ran 2.3x slower than the unfused one. So each kernel is built
// for heads 64 and 8 wide (with_head_width, below: every loop over d has a
// compile-time trip count, unrolled, the arrays in registers) and once for
// any other width up to kHead (D = 0: d read at run time, the arrays in
// local memory, as before).
#include <climits>
#include <type_traits>

#include <cub/device/device_radix_sort.cuh>

#include "base/philox.h"
#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

namespace {

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

Table table_of(const Tensor& t) {
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

Broadcast broadcast_of(const Tensor& t) {
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
Rows<T> head_rows(const Tensor& t) {
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

Terms terms_of(const AttentionTerms& t, const Tensor& q, const Tensor& k, DeviceContext& ctx) {
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

// Rows [first, first + count) of a [rows, width] matrix whose rows lie
// `stride` apart into a shared tile, zeros past the end; every thread of the
// block takes part.
__device__ __forceinline__ void load_tile(float (*tile)[kHead], const float* rows, int64_t first, int64_t count,
                                          int64_t width, int64_t stride) {
  for (int x = threadIdx.x; x < kTile * kHead; x += blockDim.x) {
    const int r = x / kHead, c = x % kHead;
    tile[r][c] = (first + r < count && c < width) ? rows[(first + r) * stride + c] : 0.0f;
  }
}

// RoPE: the rows of a tile (loaded, every thread past a barrier) rotated by
// their positions, a thread per row; every thread takes part.
__device__ __forceinline__ void rotate_tile(float (*tile)[kHead], int64_t first, int64_t count, int64_t b,
                                            const Terms& t) {
  __syncthreads();  // the tile is loaded
  for (int r = threadIdx.x; r < kTile; r += blockDim.x)
    if (first + r < count) t.rotate(tile[r], t.positions[b * t.L + first + r], false);
}

// ---- forward ----------------------------------------------------------------------------------

// A block per (query tile, head, batch), a thread per query row i; D the
// head's width (0: read from t.d).
template <int D>
__global__ void __launch_bounds__(kRows) attention_forward_kernel(GradRows out, Rows<uint16_t> out16, float* lse,
                                                                    HeadRows q, HeadRows k, HeadRows v, Terms t) {
  __shared__ float keys[kTile][kHead], values[kTile][kHead], pos_keys[kTile][kHead];
  const int64_t b = blockIdx.z, h = blockIdx.y, i = blockIdx.x * kRows + threadIdx.x;
  const bool active = i < t.L;
  const int64_t bh = b * t.H + h;
  const int d = D > 0 ? D : static_cast<int>(t.d);
  float qi[kArrayWidth<D>], acc[kArrayWidth<D>];
  const float* ei = nullptr;
  if (active) {
    ORDO_UNROLL_BY((kUnroll<D>))
    for (int x = 0; x < d; ++x) qi[x] = q.at(b, h, i)[x];
    if (t.rotary != nullptr) rotate_row<D>(t, qi, t.positions[b * t.L + i], false);
    if (t.e > 0) ei = t.pos_row(t.pos_query, b, h, i);
  }
  ORDO_UNROLL_BY((kUnroll<D>))
  for (int x = 0; x < kArrayWidth<D>; ++x) acc[x] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  Terms::Draw draw;
  const float* pos_keys_bh = t.e > 0 ? t.pos_row(t.pos_key, b, h, 0) : nullptr;
  for (int64_t j0 = 0; j0 < t.J; j0 += kTile) {
    load_tile(keys, k.at(b, h, 0), j0, t.J, d, k.row);
    load_tile(values, v.at(b, h, 0), j0, t.J, d, v.row);
    if (t.e > 0) load_tile(pos_keys, pos_keys_bh, j0, t.J, t.e, t.e);
    if (t.rotary != nullptr) rotate_tile(keys, j0, t.J, b, t);
    __syncthreads();
    const int count = static_cast<int>(t.J - j0 < kTile ? t.J - j0 : kTile);
    if (active && !(t.causal && j0 > i && m > kSeenKey)) {
      float s[kTile];
      int64_t rows[kTile];
      float tile_max = -INFINITY;
      for (int jj = 0; jj < count; ++jj) {
        const int64_t j = j0 + jj;
        rows[jj] = t.row(b, i, j);
        Terms::Dots dots;
        const float* w = t.entry(t.product, h, rows[jj]);
        const float* a = t.entry(t.query_vectors, h, rows[jj]);
        const float* bv = t.entry(t.key_vectors, h, rows[jj]);
        ORDO_UNROLL_BY((kUnroll<D>))
        for (int x = 0; x < d; ++x) {
          dots.c += qi[x] * keys[jj][x] * (w ? w[x] : 1.0f);
          if (a) dots.qa += qi[x] * a[x];
          if (bv) dots.kb += keys[jj][x] * bv[x];
        }
        for (int x = 0; x < t.e; ++x) dots.ef += ei[x] * pos_keys[jj][x];
        s[jj] = t.score(dots, b, h, i, j, rows[jj]);
        tile_max = fmaxf(tile_max, s[jj]);
      }
      const float m_new = fmaxf(m, tile_max);
      const float rescale = expf(m - m_new);  // 0 at the first tile (m = -inf)
      l *= rescale;
      ORDO_UNROLL_BY((kUnroll<D>))
      for (int x = 0; x < d; ++x) acc[x] *= rescale;
      for (int jj = 0; jj < count; ++jj) {
        const float p = expf(s[jj] - m_new);
        l += p;
        const float pt = p * t.dropout_factor(b, h, i, j0 + jj, draw);
        const float* vv = t.entry(t.value_vectors, h, rows[jj]);
        ORDO_UNROLL_BY((kUnroll<D>))
        for (int x = 0; x < d; ++x) acc[x] += pt * (values[jj][x] + (vv ? vv[x] : 0.0f));
      }
      m = m_new;
    }
    __syncthreads();  // the tiles are reloaded next
  }
  if (!active) return;
  const float inv = 1.0f / l;
  ORDO_UNROLL_BY((kUnroll<D>))
  for (int x = 0; x < d; ++x) out.at(b, h, i)[x] = acc[x] * inv;
  if (out16.data != nullptr) {
    ORDO_UNROLL_BY((kUnroll<D>))
    for (int x = 0; x < d; ++x) out16.at(b, h, i)[x] = bf16_bits(acc[x] * inv);
  }
  lse[bh * t.L + i] = m + logf(l);
}

// ---- backward by query rows ------------------------------------------------------------------------

// dq, dE and the segment sums of row i; D_i = gout_i . o_i is written for
// the key-row kernel. A block per (query tile, head, batch); D the head's
// width (0: read from t.d).
template <int D>
__global__ void __launch_bounds__(kRows) attention_query_grads_kernel(
    GradRows gq, float* gpos_query, float* gsegments, float* dsum, HeadRows gout, HeadRows q, HeadRows k,
    HeadRows v, HeadRows out, const float* lse, Terms t) {
  __shared__ float keys[kTile][kHead], values[kTile][kHead], pos_keys[kTile][kHead];
  __shared__ float go_rows[kRows][kHead + 1], e_grads[kRows][kHead + 1];
  const int64_t b = blockIdx.z, h = blockIdx.y, i = blockIdx.x * kRows + threadIdx.x;
  const bool active = i < t.L;
  const int64_t bh = b * t.H + h, row_index = bh * t.L + i;
  float* go = go_rows[threadIdx.x];
  float* de = e_grads[threadIdx.x];
  const int d = D > 0 ? D : static_cast<int>(t.d);
  float qi[kArrayWidth<D>], dq[kArrayWidth<D>], seg[kMaxSegments];
  float D_i = 0, lse_i = 0;
  const float* ei = nullptr;
  if (active) {
    ORDO_UNROLL_BY((kUnroll<D>))
    for (int x = 0; x < d; ++x) {
      qi[x] = q.at(b, h, i)[x];
      go[x] = gout.at(b, h, i)[x];
      D_i += go[x] * out.at(b, h, i)[x];
    }
    if (t.rotary != nullptr) rotate_row<D>(t, qi, t.positions[b * t.L + i], false);
    dsum[row_index] = D_i;
    lse_i = lse[row_index];
    if (t.e > 0) ei = t.pos_row(t.pos_query, b, h, i);
  }
  ORDO_UNROLL_BY((kUnroll<D>))
  for (int x = 0; x < kArrayWidth<D>; ++x) dq[x] = 0.0f;
  for (int x = 0; x < kHead; ++x) de[x] = 0.0f;
  for (int x = 0; x < kMaxSegments; ++x) seg[x] = 0.0f;
  Terms::Draw draw;
  const float* pos_keys_bh = t.e > 0 ? t.pos_row(t.pos_key, b, h, 0) : nullptr;
  for (int64_t j0 = 0; j0 < t.J; j0 += kTile) {
    load_tile(keys, k.at(b, h, 0), j0, t.J, d, k.row);
    load_tile(values, v.at(b, h, 0), j0, t.J, d, v.row);
    if (t.e > 0) load_tile(pos_keys, pos_keys_bh, j0, t.J, t.e, t.e);
    if (t.rotary != nullptr) rotate_tile(keys, j0, t.J, b, t);
    __syncthreads();
    const int count = static_cast<int>(t.J - j0 < kTile ? t.J - j0 : kTile);
    for (int jj = 0; active && jj < count; ++jj) {
      const int64_t j = j0 + jj, r = t.row(b, i, j);
      const float* w = t.entry(t.product, h, r);
      const float* a = t.entry(t.query_vectors, h, r);
      const float* bv = t.entry(t.key_vectors, h, r);
      const float* vv = t.entry(t.value_vectors, h, r);
      Terms::Dots dots;
      float dpt = 0;  // dP~_ij = gout_i . (v_j + V[row])
      ORDO_UNROLL_BY((kUnroll<D>))
      for (int x = 0; x < d; ++x) {
        dots.c += qi[x] * keys[jj][x] * (w ? w[x] : 1.0f);
        if (a) dots.qa += qi[x] * a[x];
        if (bv) dots.kb += keys[jj][x] * bv[x];
        dpt += go[x] * (values[jj][x] + (vv ? vv[x] : 0.0f));
      }
      for (int x = 0; x < t.e; ++x) dots.ef += ei[x] * pos_keys[jj][x];
      const float p = expf(t.score(dots, b, h, i, j, r) - lse_i);
      const float ds = p * (t.dropout_factor(b, h, i, j, draw) * dpt - D_i);
      const float* g = t.entry(t.gate, h, r);
      const float c = t.scale * ds * (g ? *g : 1.0f);
      ORDO_UNROLL_BY((kUnroll<D>))
      for (int x = 0; x < d; ++x) dq[x] += c * keys[jj][x] * (w ? w[x] : 1.0f) + (a ? t.query_scale * ds * a[x] : 0.0f);
      if (t.e > 0 && t.reset_row(i, j) < 0)
        for (int x = 0; x < t.e; ++x) de[x] += t.pos_scale * ds * pos_keys[jj][x];
      if (t.segment_types > 0) seg[t.segments[b * t.L + j]] += ds;
    }
    __syncthreads();
  }
  if (!active) return;
  if (t.rotary != nullptr) rotate_row<D>(t, dq, t.positions[b * t.L + i], true);  // back to the unrotated q
  if (gq.data != nullptr) {
    float* row = gq.at(b, h, i);
    ORDO_UNROLL_BY((kUnroll<D>))
    for (int x = 0; x < d; ++x) row[x] = dq[x];
  }
  if (gpos_query != nullptr)
    for (int x = 0; x < t.e; ++x) gpos_query[row_index * t.e + x] = de[x];
  if (gsegments != nullptr)
    for (int x = 0; x < t.segment_types; ++x) gsegments[row_index * t.segment_types + x] = seg[x];
}

// ---- backward by key rows ---------------------------------------------------------------------------

// dk, dv and dF of key row j. A block per (key tile, head, batch); the queries
// in tiles; D the head's width (0: read from t.d).
template <int D>
__global__ void __launch_bounds__(kRows) attention_key_grads_kernel(GradRows gk, GradRows gv, float* gpos_key,
                                                                      HeadRows gout, HeadRows q, HeadRows k,
                                                                      HeadRows v,
                                                                      const float* lse, const float* dsum, Terms t) {
  __shared__ float queries[kTile][kHead], go_tile[kTile][kHead], pos_queries[kTile][kHead];
  __shared__ float tile_lse[kTile], tile_dsum[kTile];
  // dv in shared memory beside k_j and dF (a row a thread; the +1 keeps the
  // rows' columns in different banks): with dk in registers as well, a 64-wide
  // head's kernel would spill.
  __shared__ float key_rows[kRows][kHead + 1], f_grads[kRows][kHead + 1], v_grads[kRows][kHead + 1];
  const int64_t b = blockIdx.z, h = blockIdx.y, j = blockIdx.x * kRows + threadIdx.x;
  const bool active = j < t.J;
  const int64_t bh = b * t.H + h;
  float* kj = key_rows[threadIdx.x];
  float* df = f_grads[threadIdx.x];
  float* dv = v_grads[threadIdx.x];
  const int d = D > 0 ? D : static_cast<int>(t.d);
  float dk[kArrayWidth<D>];
  const float* vj = v.at(b, h, j);
  const float* fj = nullptr;
  if (active) {
    for (int x = 0; x < d; ++x) kj[x] = k.at(b, h, j)[x];
    if (t.rotary != nullptr) t.rotate(kj, t.positions[b * t.L + j], false);
    if (t.e > 0) fj = t.pos_row(t.pos_key, b, h, j);
  }
  ORDO_UNROLL_BY((kUnroll<D>))
  for (int x = 0; x < kArrayWidth<D>; ++x) dk[x] = 0.0f;
  for (int x = 0; x < kHead; ++x) dv[x] = 0.0f, df[x] = 0.0f;
  const float* pos_queries_bh = t.e > 0 ? t.pos_row(t.pos_query, b, h, 0) : nullptr;
  for (int64_t i0 = 0; i0 < t.L; i0 += kTile) {
    load_tile(queries, q.at(b, h, 0), i0, t.L, d, q.row);
    load_tile(go_tile, gout.at(b, h, 0), i0, t.L, d, gout.row);
    if (t.e > 0) load_tile(pos_queries, pos_queries_bh, i0, t.L, t.e, t.e);
    if (t.rotary != nullptr) rotate_tile(queries, i0, t.L, b, t);
    if (threadIdx.x < kTile) {
      const int64_t i = i0 + threadIdx.x;
      tile_lse[threadIdx.x] = i < t.L ? lse[bh * t.L + i] : 0.0f;
      tile_dsum[threadIdx.x] = i < t.L ? dsum[bh * t.L + i] : 0.0f;
    }
    __syncthreads();
    const int count = static_cast<int>(t.L - i0 < kTile ? t.L - i0 : kTile);
    for (int ii = 0; active && ii < count; ++ii) {
      const int64_t i = i0 + ii, r = t.row(b, i, j);
      const float* w = t.entry(t.product, h, r);
      const float* a = t.entry(t.query_vectors, h, r);
      const float* bv = t.entry(t.key_vectors, h, r);
      const float* vv = t.entry(t.value_vectors, h, r);
      Terms::Dots dots;
      float dpt = 0;
      ORDO_UNROLL_BY((kUnroll<D>))
      for (int x = 0; x < d; ++x) {
        dots.c += queries[ii][x] * kj[x] * (w ? w[x] : 1.0f);
        if (a) dots.qa += queries[ii][x] * a[x];
        if (bv) dots.kb += kj[x] * bv[x];
        dpt += go_tile[ii][x] * (vj[x] + (vv ? vv[x] : 0.0f));
      }
      for (int x = 0; x < t.e; ++x) dots.ef += pos_queries[ii][x] * fj[x];
      const float p = expf(t.score(dots, b, h, i, j, r) - tile_lse[ii]);
      Terms::Draw draw;  // the queries of a key are J elements apart: no draw to share
      const float z = t.dropout_factor(b, h, i, j, draw);
      const float ds = p * (z * dpt - tile_dsum[ii]);
      const float* g = t.entry(t.gate, h, r);
      const float c = t.scale * ds * (g ? *g : 1.0f);
      ORDO_UNROLL_BY((kUnroll<D>))
      for (int x = 0; x < d; ++x) {
        dv[x] += p * z * go_tile[ii][x];
        dk[x] += c * queries[ii][x] * (w ? w[x] : 1.0f) + (bv ? t.key_scale * ds * bv[x] : 0.0f);
      }
      if (t.e > 0 && t.reset_row(i, j) < 0)
        for (int x = 0; x < t.e; ++x) df[x] += t.pos_scale * ds * pos_queries[ii][x];
    }
    __syncthreads();
  }
  if (!active) return;
  const int64_t row_index = bh * t.J + j;
  if (t.rotary != nullptr) rotate_row<D>(t, dk, t.positions[b * t.L + j], true);  // back to the unrotated k
  if (gk.data != nullptr) {
    float* row = gk.at(b, h, j);
    ORDO_UNROLL_BY((kUnroll<D>))
    for (int x = 0; x < d; ++x) row[x] = dk[x];
  }
  if (gv.data != nullptr) {
    float* row = gv.at(b, h, j);
    ORDO_UNROLL_BY((kUnroll<D>))
    for (int x = 0; x < d; ++x) row[x] = dv[x];
  }
  if (gpos_key != nullptr)
    for (int x = 0; x < t.e; ++x) gpos_key[row_index * t.e + x] = df[x];
}

// ---- the tables' gradients --------------------------------------------------------------------------

// The table row of each pair e = (b, i, j) (the [CLS] reset's rows where it
// applies), or `none` (sorted last, never read); the values are the pairs.
__global__ void attention_pair_rows_kernel(uint32_t* keys, int32_t* pairs, int64_t count, uint32_t none, Terms t) {
  for (int64_t e = global_thread_index(); e < count; e += grid_thread_count()) {
    const int64_t j = e % t.J, i = (e / t.J) % t.L, b = e / (t.L * t.J);
    const int64_t reset = t.reset_row(i, j);
    const int64_t r = reset >= 0 ? reset : t.row(b, i, j);
    keys[e] = r >= 0 && r < none ? static_cast<uint32_t>(r) : none;
    pairs[e] = static_cast<int32_t>(e);
  }
}

// Where a table's gradient goes: [Ht, rows, w] (nothing where data is null).
struct TableOut {
  float* data = nullptr;
  int64_t rows = 0, head_stride = 0;  // head_stride 0: one gradient for every head (a shared table)
  __device__ void write(int64_t h, int64_t r, int64_t x, int64_t width, float value) const {
    if (data != nullptr && r < rows) data[h * head_stride + r * width + x] = value;
  }
};
struct TableGrads {
  TableOut gate, product, query_vectors, key_vectors, table, value_vectors;
};

// A warp per (row r, heads h0 .. h0 + heads - 1) walks the pairs of row r in
// increasing (b, i, j) for each head in turn, 32 pairs at a time: first each
// lane recomputes one pair's P~ and dS (its dot products over d, in order),
// then every lane adds the 32 pairs' terms, in pair order, to the dimensions
// it holds (x, x + 32); lane 0 the scalars. heads = H when every table is
// shared by the heads (their sum is then the gradient), else 1.
__global__ void __launch_bounds__(kWarp) attention_table_grads_kernel(TableGrads g, int64_t heads,
                                                                        const uint32_t* keys, const int32_t* pairs,
                                                                        int64_t count, HeadRows gout,
                                                                        HeadRows q, HeadRows k, HeadRows v,
                                                                        const float* lse, const float* dsum, Terms t) {
  __shared__ float pair_ds[kWarp], pair_pt[kWarp], pair_qk[kWarp];
  __shared__ int64_t pair_of[kWarp];
  const int64_t r = blockIdx.x, h0 = blockIdx.y * heads;
  const int lane = threadIdx.x;
  constexpr int kPerLane = kHead / kWarp;
  float gw[kPerLane] = {}, ga[kPerLane] = {}, gb[kPerLane] = {}, gvv[kPerLane] = {};
  float ggate = 0, gtable = 0;
  const int64_t begin = first_at_least(keys, count, static_cast<uint32_t>(r));
  const int64_t end = first_at_least(keys, count, static_cast<uint32_t>(r + 1));
  for (int64_t h = h0; h < h0 + heads; ++h) {
    for (int64_t p0 = begin; p0 < end; p0 += kWarp) {
      const int n = static_cast<int>(end - p0 < kWarp ? end - p0 : kWarp);
      if (lane < n) {  // this lane's pair: its dS
        const int64_t pair = pairs[p0 + lane];
        const int64_t j = pair % t.J, i = (pair / t.J) % t.L, b = pair / (t.L * t.J), bh = b * t.H + h;
        const float* qi = q.at(b, h, i);
        const float* kj = k.at(b, h, j);
        const float* vj = v.at(b, h, j);
        const float* go = gout.at(b, h, i);
        const int64_t rel = t.reset_row(i, j) >= 0 ? -1 : r;  // the vector tables' row (none under the reset)
        const float* w = t.entry(t.product, h, rel);
        const float* a = t.entry(t.query_vectors, h, rel);
        const float* bv = t.entry(t.key_vectors, h, rel);
        const float* vv = t.entry(t.value_vectors, h, rel);
        Terms::Dots dots;
        float qk = 0, dpt = 0;
        for (int x = 0; x < t.d; ++x) {
          qk += qi[x] * kj[x];
          dots.c += qi[x] * kj[x] * (w ? w[x] : 1.0f);
          if (a) dots.qa += qi[x] * a[x];
          if (bv) dots.kb += kj[x] * bv[x];
          dpt += go[x] * (vj[x] + (vv ? vv[x] : 0.0f));
        }
        if (t.e > 0) {
          const float* ei = t.pos_row(t.pos_query, b, h, i);
          const float* fj = t.pos_row(t.pos_key, b, h, j);
          for (int x = 0; x < t.e; ++x) dots.ef += ei[x] * fj[x];
        }
        const float prob = expf(t.score(dots, b, h, i, j, rel) - lse[bh * t.L + i]);
        Terms::Draw draw;
        const float z = t.dropout_factor(b, h, i, j, draw);
        pair_ds[lane] = prob * (z * dpt - dsum[bh * t.L + i]);
        pair_pt[lane] = prob * z;
        pair_qk[lane] = qk;
        pair_of[lane] = pair;
      }
      __syncwarp();  // the pairs' dS are visible to every lane
      for (int m = 0; m < n; ++m) {
        const float ds = pair_ds[m];
        const int64_t pair = pair_of[m];
        const int64_t j = pair % t.J, i = (pair / t.J) % t.L, b = pair / (t.L * t.J);
        if (lane == 0) {
          gtable += ds;
          ggate += t.scale * ds * pair_qk[m];
        }
        for (int c = 0; c < kPerLane; ++c) {
          const int x = lane + c * kWarp;
          if (x >= t.d) break;
          const float qx = q.at(b, h, i)[x], kx = k.at(b, h, j)[x];
          gw[c] += t.scale * ds * qx * kx;
          ga[c] += t.query_scale * ds * qx;
          gb[c] += t.key_scale * ds * kx;
          gvv[c] += pair_pt[m] * gout.at(b, h, i)[x];
        }
      }
      __syncwarp();  // every lane has read the slots before the next pairs overwrite them
    }
  }
  if (lane == 0) {
    g.table.write(h0, r, 0, 1, gtable);
    g.gate.write(h0, r, 0, 1, ggate);
  }
  for (int c = 0; c < kPerLane; ++c) {
    const int x = lane + c * kWarp;
    if (x >= t.d) break;
    g.product.write(h0, r, x, t.d, gw[c]);
    g.query_vectors.write(h0, r, x, t.d, ga[c]);
    g.key_vectors.write(h0, r, x, t.d, gb[c]);
    g.value_vectors.write(h0, r, x, t.d, gvv[c]);
  }
}

// The pairs stably sorted by table row; `storage` keeps the arrays alive.
struct SortedPairs {
  Tensor storage;
  const uint32_t* keys;
  const int32_t* pairs;
  int64_t count;
};

SortedPairs sort_pairs(const Terms& t, int64_t rows, DeviceContext& ctx, Device device) {
  const int64_t count = t.B * t.L * t.J;
  ORDO_CHECK(count <= INT_MAX, "attention_backward on CUDA: ", count, " (query, key) pairs exceed the 2^31 - 1 the sort takes");
  ORDO_CHECK(rows < static_cast<int64_t>(UINT32_MAX), "attention_backward on CUDA: ", rows, " table rows");
  const uint32_t none = static_cast<uint32_t>(rows);
  int end_bit = 1;
  while (end_bit < 32 && (static_cast<uint64_t>(none) >> end_bit) != 0) ++end_bit;
  const int items = static_cast<int>(count);
  size_t temp_bytes = 0;
  ORDO_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, static_cast<const uint32_t*>(nullptr),
                                                  static_cast<uint32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                                  static_cast<int32_t*>(nullptr), items, 0, end_bit, ctx.stream));
  const size_t array_bytes = (static_cast<size_t>(count) * 4 + 255) / 256 * 256;
  SortedPairs s{workspace(device, 4 * array_bytes + temp_bytes), nullptr, nullptr, count};
  char* base = static_cast<char*>(s.storage.raw_data());
  auto* keys_in = reinterpret_cast<uint32_t*>(base);
  auto* keys_out = reinterpret_cast<uint32_t*>(base + array_bytes);
  auto* pairs_in = reinterpret_cast<int32_t*>(base + 2 * array_bytes);
  auto* pairs_out = reinterpret_cast<int32_t*>(base + 3 * array_bytes);
  ORDO_LAUNCH(attention_pair_rows_kernel, grid_for(count, kThreads, ctx), kThreads, 0, ctx.stream, keys_in, pairs_in,
              count, none, t);
  ORDO_CUDA_CHECK_LAUNCH();
  before_launch(ctx.stream);
  ORDO_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(base + 4 * array_bytes, temp_bytes, keys_in, keys_out, pairs_in,
                                                  pairs_out, items, 0, end_bit, ctx.stream));
  after_sort("cub radix sort (attention pairs)", ctx.stream);
  s.keys = keys_out;
  s.pairs = pairs_out;
  return s;
}

// grads of the tables from the sorted pairs: per head, then summed over the
// heads (in order) for a table the heads share.
void table_grads(const AttentionGrads& grads, const Terms& t, const Tensor& gout, const Tensor& q, const Tensor& k,
                 const Tensor& v, const Tensor& lse, const Tensor& dsum, DeviceContext& ctx) {
  const Tensor* wanted[] = {&grads.gate, &grads.product, &grads.query_vectors, &grads.key_vectors, &grads.table,
                            &grads.value_vectors};
  int64_t rows = 0;
  bool all_shared = true;
  for (const Tensor* g : wanted) {
    if (!g->defined()) continue;
    rows = std::max(rows, g->size(1));
    all_shared = all_shared && g->size(0) == 1;
  }
  if (rows == 0) return;
  SortedPairs sorted = sort_pairs(t, rows, ctx, q.device());
  // Each gradient written in place, but a shared table's when the warps take
  // one head each: per head first [H, rows, w], then summed in head order.
  TableGrads g;
  TableOut* outs[] = {&g.gate, &g.product, &g.query_vectors, &g.key_vectors, &g.table, &g.value_vectors};
  Tensor per_head[6];
  for (int n = 0; n < 6; ++n) {
    const Tensor& out = *wanted[n];
    if (!out.defined()) continue;
    const int64_t width = out.dim() == 3 ? out.size(2) : 1;
    if (all_shared || out.size(0) != 1) {
      *outs[n] = {out.data<float>(), out.size(1), out.size(0) == 1 ? 0 : out.size(1) * width};
    } else {
      per_head[n] = Tensor::empty({t.H, out.size(1), width}, DType::f32, q.device());
      *outs[n] = {per_head[n].data<float>(), out.size(1), out.size(1) * width};
    }
  }
  const int64_t heads = all_shared ? t.H : 1;
  ORDO_LAUNCH(attention_table_grads_kernel, dim3(static_cast<unsigned>(rows), static_cast<unsigned>(t.H / heads)),
              kWarp, 0, ctx.stream, g, heads, sorted.keys, sorted.pairs, sorted.count, head_rows(gout),
              head_rows(q), head_rows(k), head_rows(v), lse.data<float>(), dsum.data<float>(), t);
  ORDO_CUDA_CHECK_LAUNCH();
  for (int n = 0; n < 6; ++n)
    if (per_head[n].defined())
      reduce(ReduceOp::sum, *wanted[n], per_head[n], 1, t.H, per_head[n].numel() / t.H, 0);
}

// Calls f(std::integral_constant<int, D>) with D the head width d when the
// kernels are built for it, else D = 0 (any width up to kHead). Each width
// built costs compile time (nvcc: about 18 s more per width), so only these.
template <class F>
void with_head_width(int64_t d, F&& f) {
  switch (d) {
    case 8: return f(std::integral_constant<int, 8>());  // the kernel tests' width: they run this path
    case 64: return f(std::integral_constant<int, 64>());  // every shipped config's (tiny to base)
    default: return f(std::integral_constant<int, 0>());
  }
}

}  // namespace

void attention_forward(const Tensor& out, const Tensor& out_operand, const Tensor& lse, const Tensor& q,
                       const Tensor& k, const Tensor& v, const AttentionTerms& terms) {
  require_f32(q.dtype(), "attention_forward");
  DeviceContext& ctx = context(q);
  const Terms t = terms_of(terms, q, k, ctx);
  const dim3 grid(static_cast<unsigned>((t.L + kRows - 1) / kRows), static_cast<unsigned>(t.H),
                  static_cast<unsigned>(t.B));
  with_head_width(t.d, [&](auto width) {
    ORDO_LAUNCH(attention_forward_kernel<decltype(width)::value>, grid, kRows, 0, ctx.stream, head_rows<float>(out),
                head_rows<uint16_t>(out_operand), lse.data<float>(), head_rows(q), head_rows(k), head_rows(v), t);
  });
  ORDO_CUDA_CHECK_LAUNCH();
}

void attention_backward(const AttentionGrads& grads, const Tensor& gout, const Tensor& q, const Tensor& k,
                        const Tensor& v, const Tensor& out, const Tensor& lse, const AttentionTerms& terms) {
  require_f32(q.dtype(), "attention_backward");
  DeviceContext& ctx = context(q);
  const Terms t = terms_of(terms, q, k, ctx);
  auto ptr = [](const Tensor& x) { return x.defined() ? x.data<float>() : nullptr; };
  Tensor dsum = Tensor::empty({t.B, t.H, t.L}, DType::f32, q.device());  // D_i = gout_i . o_i
  const unsigned query_tiles = static_cast<unsigned>((t.L + kRows - 1) / kRows);
  const unsigned key_tiles = static_cast<unsigned>((t.J + kRows - 1) / kRows);
  const bool key_rows = grads.k.defined() || grads.v.defined() || grads.pos_key.defined();
  with_head_width(t.d, [&](auto width) {
    ORDO_LAUNCH(attention_query_grads_kernel<decltype(width)::value>, dim3(query_tiles, static_cast<unsigned>(t.H), static_cast<unsigned>(t.B)),
                kRows, 0, ctx.stream, head_rows<float>(grads.q), ptr(grads.pos_query), ptr(grads.segment_rows), dsum.data<float>(),
                head_rows(gout), head_rows(q), head_rows(k), head_rows(v), head_rows(out), lse.data<float>(), t);
    ORDO_CUDA_CHECK_LAUNCH();
    if (!key_rows) return;
    ORDO_LAUNCH(attention_key_grads_kernel<decltype(width)::value>, dim3(key_tiles, static_cast<unsigned>(t.H), static_cast<unsigned>(t.B)),
                kRows, 0, ctx.stream, head_rows<float>(grads.k), head_rows<float>(grads.v), ptr(grads.pos_key),
                head_rows(gout),
                head_rows(q), head_rows(k), head_rows(v), lse.data<float>(), dsum.data<float>(), t);
    ORDO_CUDA_CHECK_LAUNCH();
  });
  table_grads(grads, t, gout, q, k, v, lse, dsum, ctx);
}

}  // namespace ordo::cuda
