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

#include "tensor/cuda/attention_terms.cuh"
#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

namespace {

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
  if (attention_runs_on_tiles(terms, t.d)) return attention_forward_tiles(out, out_operand, lse, q, k, v, t, ctx);
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
  if (attention_runs_on_tiles(terms, t.d)) {
    const bool tables_on_tiles = attention_table_grads_on_tiles(terms);
    attention_backward_tiles(grads, tables_on_tiles, dsum, gout, q, k, v, out, lse, t, ctx);
    if (!tables_on_tiles) table_grads(grads, t, gout, q, k, v, lse, dsum, ctx);
    return;
  }
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
