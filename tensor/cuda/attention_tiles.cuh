// What the fused attention's tensor-core kernels share (attention_tiles.cu:
// the forward; attention_tiles_backward.cu: the backward and the tables' and
// Shaw's vectors' gradients): the tile shapes, wmma's warp products, the
// operand loads and stores, the window of distances for Shaw's vectors and
// the grid. The algorithm, for both:
//
// CUDA kernels of the fused attention on tensor cores: q . k, P~ v and the
// backward's products as nvcuda::wmma's 16 x 16 x 16 tiles, bf16 operands
// with FP32 sums, for the attention whose position terms add a scalar per
// (query, key) pair: attention_runs_on_tiles (tensor/attention_terms.h; the
// equations there). The rest takes attention.cu's FP32 kernels.
//
// FlashAttention-2's algorithm (Dao 2023), the tile products on tensor cores
// and everything between them — the position terms, the online softmax,
// dropout — on CUDA cores through shared memory: an accumulator tile's
// elements are spread over the lanes in a way CUDA leaves unspecified, so
// the products are stored to shared memory and read back a pair per lane.
//  - forward: a block per (64 queries, head, batch), a warp per 16 queries;
//    per tile of 32 keys S = Q K^T, a lane per key: s_ij, the running max m
//    and sum l (the online softmax), O = O exp(m_old - m) + P~ V;
//  - backward by query rows (32 a block): S = Q K^T and dP = dO V^T again,
//    dS = P (z dP - D) a lane per key, dQ += (scale g dS) K; it writes
//    D_i = dO_i . o_i for the next two;
//  - backward by key rows (32 a block), a lane per query: S^T = K Q^T,
//    dP^T = V dO^T, dV += P~^T dO, dK += (scale g dS)^T Q;
//  - the tables' and gates' gradients (attention_table_grads_on_tiles): the
//    backward by query rows adds each pair's dS (the gate's: scale c dS) to
//    its warp's bin of the pair's table row in shared memory — the lanes
//    that share a row summed in lane order by the first of them — and writes
//    its block's bins; a last kernel sums the blocks' in (b, h, block) order.
//    Otherwise attention.cu's FP32 pass over the pairs sorted by table row.
//  - Shaw's relative keys and values (query vectors A: s_ij += query_scale
//    q_i . A[row]; value vectors V: o_i += sum_j P~_ij V[row]): a block is
//    one warp (16 queries or keys), and per step the distances p_j - p_i of
//    its pairs, which at consecutive positions span 47, are a window of
//    kWindow rows of A or V (looked up through row_of) loaded as bf16:
//    G = Q A_w^T (a tile product) gives q_i . A[row] for each pair by its
//    distance (dO V_w^T the V term of dP), o += P~_w V_w and dq +=
//    (query_scale dS_w) A_w, P~_w and dS_w the pairs' values moved to their
//    distances (summed in lane order where two keys share one). Pairs whose
//    distances do not fit a window (positions far from consecutive) take
//    those products in FP32 from the bf16 operands and the tables' rows.
//    A's and V's gradients at consecutive positions: the pairs of one
//    distance are a diagonal, and a block (one warp) per 16 distances and
//    head walks the batch and the queries 32 at a time — S and dP over the
//    48 keys the step's pairs reach, dS and P~ a lane per query, dA_delta +=
//    (query_scale dS)^T Q and dV_delta += P~^T dO tile products — then a
//    last kernel per table adds the distances into its rows in order.
//    Otherwise attention.cu's FP32 pass over the sorted pairs.
// Rounded to bf16, as the unfused bf16 attention rounds them: q, k, v and
// dO as they are loaded (q and k after RoPE's rotation), P~ before P~ V and
// P~^T dO, scale g dS before its two products (and, beyond what it rounds,
// P~ moved to the distances before its product with V's rows). The scores, the softmax's
// statistics, dP, D and every sum are FP32. Determinism: each output element
// has one writer; a tile's sums run in a fixed order.
//
// Causal: a warp skips the steps whose pairs are all masked (after_every_query).
// Not tuned beyond that: the tiles go through shared memory (no register
// fragments across steps, no cp.async).
#pragma once

#include <mma.h>

#include <type_traits>

#include "tensor/cuda/attention_terms.cuh"

namespace ordo::cuda::tiles {

namespace wmma = nvcuda::wmma;
using bf16 = __nv_bfloat16;

constexpr int kSide = 16;           // a wmma tile's side: the queries (or keys) of a warp
constexpr int kStep = 32;           // keys (or queries) per step of the loops: a lane each
constexpr int kForwardWarps = 4;    // 64 queries a block
constexpr int kBackwardWarps = 2;   // 32 queries (or keys) a block
constexpr unsigned kAllLanes = 0xffffffffu;

using FragmentA = wmma::fragment<wmma::matrix_a, kSide, kSide, kSide, bf16, wmma::row_major>;
using FragmentC = wmma::fragment<wmma::accumulator, kSide, kSide, kSide, float>;
template <bool kTransposed>
using FragmentB = wmma::fragment<wmma::matrix_b, kSide, kSide, kSide, bf16,
                                 std::conditional_t<kTransposed, wmma::col_major, wmma::row_major>>;

__device__ __forceinline__ bf16 to_bf16(float x) { return __ushort_as_bfloat16(bf16_bits(x)); }

// Every lane gets combine over the warp's 32 values (a butterfly: each step
// combines two equal partial results, so every lane ends with the same bits).
template <class Combine>
__device__ __forceinline__ float warp_all(float v, Combine combine) {
  for (int offset = 16; offset > 0; offset /= 2) v = combine(v, __shfl_xor_sync(kAllLanes, v, offset));
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  return warp_all(v, [](float a, float b) { return fmaxf(a, b); });
}
__device__ __forceinline__ float warp_sum(float v) {
  return warp_all(v, [](float a, float b) { return a + b; });
}

// c [16, N] (row-major, ldc) = a [16, K] (row-major, lda) times b: [K, N]
// row-major (ldb), or with kTransposed the transpose of bt [N, K]
// (row-major, ldb); kAccumulate adds to c instead. A warp's product: every
// lane takes part.
template <int K, int N, bool kTransposed, bool kAccumulate>
__device__ __forceinline__ void warp_product(float* c, int ldc, const bf16* a, int lda, const bf16* b, int ldb) {
  for (int n = 0; n < N; n += kSide) {
    FragmentC sum;
    if (kAccumulate)
      wmma::load_matrix_sync(sum, c + n, ldc, wmma::mem_row_major);
    else
      wmma::fill_fragment(sum, 0.0f);
    for (int k = 0; k < K; k += kSide) {
      FragmentA fa;
      FragmentB<kTransposed> fb;
      wmma::load_matrix_sync(fa, a + k, lda);
      wmma::load_matrix_sync(fb, kTransposed ? b + n * ldb + k : b + k * ldb + n, ldb);
      wmma::mma_sync(sum, fa, fb, sum);
    }
    wmma::store_matrix_sync(c + n, sum, ldc, wmma::mem_row_major);
  }
}

// Element x of row `row` (d wide) rotated by RoPE at position p (back: the
// inverse rotation, for a gradient): Terms::rotate's pairs, one element.
__device__ __forceinline__ float rotated(const Terms& t, const float* row, int x, int64_t p, bool back) {
  const int half = static_cast<int>(t.d / 2);
  const bool first = t.rotary_half ? x < half : x % 2 == 0;
  const int m = t.rotary_half ? (first ? x : x - half) : x / 2;
  const int ia = t.rotary_half ? m : 2 * m, ib = t.rotary_half ? m + half : 2 * m + 1;
  const float angle = static_cast<float>(p) * t.rotary[m];
  const float c = cosf(angle), s = back ? -sinf(angle) : sinf(angle);
  const float a = row[ia], e = row[ib];
  return first ? a * c - e * s : a * s + e * c;
}

// Rows [first, first + rows) of x for (b, h) as bf16 operands, zeros before
// 0 and from `end` on; `rotate`: by RoPE at their positions first. Every thread of the
// block takes part.
template <int D>
__device__ void load_operand(bf16 (*tile)[D], int rows, const HeadRows& x, int64_t b, int64_t h, int64_t first,
                             int64_t end, const Terms& t, bool rotate) {
  for (int e = threadIdx.x; e < rows * D; e += blockDim.x) {
    const int r = e / D, c = e % D;
    const int64_t n = first + r;
    float value = 0.0f;
    if (n >= 0 && n < end) {
      const float* row = x.at(b, h, n);
      value = rotate ? rotated(t, row, c, t.positions[b * t.L + n], false) : row[c];
    }
    tile[r][c] = to_bf16(value);
  }
}

// The warp's rows of an accumulator, from `first + row0` up to `end`, into
// g (when wanted), rotated back by RoPE at their positions (`rotate`: a
// gradient of a rotated q or k). Every lane takes part.
template <int D>
__device__ void store_rows(const GradRows& g, const float (*acc)[D], int row0, int64_t b, int64_t h, int64_t first,
                           int64_t end, const Terms& t, bool rotate) {
  if (g.data == nullptr) return;
  for (int r = row0; r < row0 + kSide; ++r) {
    const int64_t n = first + r;
    if (n >= end) break;
    for (int x = threadIdx.x % kWarp; x < D; x += kWarp)
      g.at(b, h, n)[x] = rotate ? rotated(t, acc[r], x, t.positions[b * t.L + n], true) : acc[r][x];
  }
}

// Adds each lane's value to bins[bin] (bin < 0: none): the lanes that share
// a bin are summed in lane order by the first of them, which adds the sum —
// a fixed order and one writer per bin, with no atomics. stage: the warp's
// 32 floats of shared memory. Every lane takes part.
__device__ __forceinline__ void add_to_bins(float* bins, float* stage, int bin, float value) {
  const int lane = threadIdx.x % kWarp;
  const unsigned same = __match_any_sync(kAllLanes, bin);
  stage[lane] = value;
  __syncwarp();  // the lanes' values are visible to the first of each group
  if (bin >= 0 && lane == __ffs(static_cast<int>(same)) - 1) {
    float sum = 0.0f;
    for (unsigned rest = same; rest != 0; rest &= rest - 1) sum += stage[__ffs(static_cast<int>(rest)) - 1];
    bins[bin] += sum;
  }
  __syncwarp();  // the stage is read, and the bins written, before the next pairs'
}

// s_ij of a pair whose q_i . k_j is c and q_i . A[row] is qa (the terms of
// attention_runs_on_tiles: scalars, and Shaw's query vectors).
__device__ __forceinline__ float pair_score(const Terms& t, float c, float qa, int64_t b, int64_t h, int64_t i,
                                            int64_t j) {
  Terms::Dots dots;
  dots.c = c;
  dots.qa = qa;
  return t.score(dots, b, h, i, j, t.row(b, i, j));
}

// ---- Shaw's relative vectors: the window of distances ---------------------------------------------

constexpr int kWindow = 48;  // distances a window holds: 16 queries and 32 keys at consecutive positions span 47

// The distances p_j - p_i of a warp's pairs — queries [i0, i0 + queries),
// keys [j0, j0 + keys), those from L (J) on left out — from `first` on;
// fits: all within kWindow of it (true, with first 0, when there are none).
struct Window {
  int64_t first = 0;
  bool fits = true;
};

__device__ __forceinline__ int64_t warp_min(int64_t v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const int64_t other = __shfl_xor_sync(kAllLanes, v, offset);
    v = other < v ? other : v;
  }
  return v;
}
__device__ __forceinline__ int64_t warp_max(int64_t v) { return -warp_min(-v); }

// Every lane of the warp takes part (queries, keys <= 32).
__device__ inline Window pair_window(const Terms& t, int64_t b, int64_t i0, int queries, int64_t j0, int keys) {
  const int lane = threadIdx.x % kWarp;
  const int64_t* p = t.positions + b * t.L;
  constexpr int64_t kNone = int64_t(1) << 62;
  const bool query = lane < queries && i0 + lane < t.L, key = lane < keys && j0 + lane < t.J;
  const int64_t query_low = warp_min(query ? p[i0 + lane] : kNone), query_high = warp_max(query ? p[i0 + lane] : -kNone);
  const int64_t key_low = warp_min(key ? p[j0 + lane] : kNone), key_high = warp_max(key ? p[j0 + lane] : -kNone);
  Window w;
  if (query_low == kNone || key_low == kNone) return w;
  w.first = key_low - query_high;
  w.fits = key_high - query_low - w.first < kWindow;
  return w;
}

// The window's rows of a table (A or V) as bf16 operands, `count` of them
// from distance first: row n that of distance first + n (zeros for a
// distance without a row, and for every row when the pairs do not fit: a
// pair reports its own row's index error). Every thread takes part.
template <int D>
__device__ void load_window(bf16 (*rows)[D], int count, const Window& w, const Table& table, const Terms& t,
                            int64_t h) {
  for (int e = threadIdx.x; e < count * D; e += blockDim.x) {
    const int n = e / D, c = e % D;
    float value = 0.0f;
    const int64_t at = w.first + n - t.first_distance;
    if (w.fits && at >= 0 && at < t.rows_given) {
      const int64_t r = t.row_of[at];
      if (r >= 0 && r < table.rows) value = table.at(h, r)[c];
    }
    rows[n][c] = to_bf16(value);
  }
}

// The slot of the pair (i, j) in a window: its distance from the window's first.
__device__ __forceinline__ int64_t window_slot(const Terms& t, const Window& w, int64_t b, int64_t i, int64_t j) {
  return t.positions[b * t.L + j] - t.positions[b * t.L + i] - w.first;
}

// x . W[row] of the pair (i, j), i < L and j < J, x the pair's query (for A)
// or dO row (for V): from G (`dots`: that row of the window's products X
// W_w^T) by the pair's distance, or where the pairs do not fit a window in
// FP32 from x's bf16 row and W's row.
template <int D>
__device__ float vector_dot(const Terms& t, const Table& table, const Window& w, const float* dots, const bf16* x,
                            int64_t b, int64_t h, int64_t i, int64_t j) {
  if (w.fits) return dots[window_slot(t, w, b, i, j)];
  const float* row = t.entry(table, h, t.row(b, i, j));
  if (row == nullptr) return 0.0f;
  float sum = 0.0f;
  ORDO_UNROLL_BY(4)  // the rare path: few registers
  for (int c = 0; c < D; ++c) sum += __bfloat162float(x[c]) * row[c];
  return sum;
}

// The window's operands: its rows of A (or V) and G = X W_w^T for `kRows` rows of X.
template <int D, bool kVectors, int kRows>
struct WindowTiles {
  alignas(32) bf16 rows[kWindow][D];
  alignas(32) float dots[kRows][kWindow];
};
template <int D, int kRows>
struct WindowTiles<D, false, kRows> {};

// A value per pair of a warp's 16 rows (dS for A, P~ for V), moved to the
// pair's distance in the window (summed in lane order where keys share one)
// or, beyond a window, kept by key with the pair's table row.
template <bool kVectors>
struct MovedPairs {
  alignas(32) float by_distance[kSide][kWindow];
  alignas(32) bf16 by_distance16[kSide][kWindow];
  alignas(32) float by_key[kSide][kStep];
  alignas(32) int32_t rows[kSide][kStep];
  alignas(32) float stage[kWarp];
};
template <>
struct MovedPairs<false> {};

// Every lane takes part.
__device__ inline void clear(MovedPairs<true>& m) {
  for (int e = threadIdx.x % kWarp; e < kSide * kWindow; e += kWarp) m.by_distance[e / kWindow][e % kWindow] = 0.0f;
  for (int e = threadIdx.x % kWarp; e < kSide * kStep; e += kWarp) m.rows[e / kStep][e % kStep] = -1;
}

// Row r's pair (i, j) with this lane's key takes `value` (pair: i < L and
// j < J). Every lane takes part, the window the same for all.
__device__ inline void move_pair(MovedPairs<true>& m, const Terms& t, const Table& table, const Window& w, int r,
                                 bool pair, int64_t b, int64_t i, int64_t j, float value) {
  if (w.fits) {
    add_to_bins(m.by_distance[r], m.stage, pair ? static_cast<int>(window_slot(t, w, b, i, j)) : -1, value);
  } else {
    const int64_t row = pair ? t.row(b, i, j) : -1;
    m.by_key[r][threadIdx.x % kWarp] = value;
    m.rows[r][threadIdx.x % kWarp] = row >= 0 && row < table.rows ? static_cast<int32_t>(row) : -1;
  }
}

// acc [16, D] += the moved values times their table rows: in the window the
// tile product (moved values by distance, bf16) W_w, W_w the window's rows
// of the table (`rows`); beyond it FP32, over the keys in order. Every lane
// takes part, after a __syncwarp that follows the moves.
template <int D>
__device__ void add_moved_product(float (*acc)[D], MovedPairs<true>& m, const bf16 (*rows)[D], const Table& table,
                                  const Window& w, int64_t h) {
  const int lane = threadIdx.x % kWarp;
  if (w.fits) {
    for (int e = lane; e < kSide * kWindow; e += kWarp)
      m.by_distance16[e / kWindow][e % kWindow] = to_bf16(m.by_distance[e / kWindow][e % kWindow]);
    __syncwarp();
    warp_product<kWindow, D, false, true>(&acc[0][0], D, &m.by_distance16[0][0], kWindow, &rows[0][0], D);
  } else {
    __syncwarp();  // acc (a product's) is visible to every lane
    for (int r = 0; r < kSide; ++r)
      for (int x = lane; x < D; x += kWarp) {
        float sum = 0.0f;
        for (int key = 0; key < kStep; ++key)
          if (m.rows[r][key] >= 0) sum += m.by_key[r][key] * table.at(h, m.rows[r][key])[x];
        acc[r][x] += sum;
      }
  }
}

// x . W[row] for each pair of a warp's tile with a table of vectors per pair,
// into pairs (`add`: onto them): G = X W_w^T (`x` the rows' bf16 operands,
// `rows` the window's rows of W) and a lookup by distance, or FP32 dot
// products beyond a window. by_row: x's rows are the tile's rows (r) and the
// keys its lanes, else x's rows are the lanes (the backward by key rows, 32
// queries) and the tile's rows the keys. Every lane takes part; the window's
// rows of W loaded and visible.
template <int D, int kRows>
__device__ void vector_dots(float (*pairs)[kStep], bool add, WindowTiles<D, true, kRows>& win, const bf16 (*x)[D],
                            const Table& table, const Window& w, const Terms& t, int64_t b, int64_t h, int64_t i0,
                            int64_t j0, bool by_row) {
  const int lane = threadIdx.x % kWarp;
  if (w.fits)
    for (int m = 0; m < kRows; m += kSide)
      warp_product<D, kWindow, true, false>(&win.dots[m][0], kWindow, &x[m][0], D, &win.rows[0][0], D);
  __syncwarp();
  for (int r = 0; r < kSide; ++r) {
    const int64_t i = by_row ? i0 + r : i0 + lane, j = by_row ? j0 + lane : j0 + r;
    const int xr = by_row ? r : lane;
    const float dot = i < t.L && j < t.J ? vector_dot<D>(t, table, w, win.dots[xr], x[xr], b, h, i, j) : 0.0f;
    pairs[r][lane] = add ? pairs[r][lane] + dot : dot;
  }
  __syncwarp();
}

// scale g_ij dS_ij: what multiplies k_j into dq_i and q_i into dk_j.
__device__ __forceinline__ float scaled_ds(const Terms& t, float ds, int64_t b, int64_t h, int64_t i, int64_t j) {
  const float* g = t.entry(t.gate, h, t.row(b, i, j));
  return t.scale * ds * (g ? *g : 1.0f);
}

// Causal: whether the keys from `j0` on follow all 16 queries from `i0` (the
// warp's; those from t.L on do not count) and each of those rows has seen a
// key — its running max m (or its lse) above kSeenKey — so that a masked key,
// its score about kLowest, has probability exp(kLowest - m) = 0 exactly: the
// warp may skip the step. m (or lse) are the rows' values, the same for every
// lane (a warp-uniform answer).
__device__ __forceinline__ bool after_every_query(const Terms& t, int64_t j0, int64_t i0, const float* m) {
  if (!t.causal || j0 <= i0 + kSide - 1) return false;
  for (int r = 0; r < kSide && i0 + r < t.L; ++r)
    if (!(m[r] > kSeenKey)) return false;
  return true;
}

// A grid of blocks of `rows` queries (or keys) over n of them, per head and batch element.
inline dim3 grid_of(int64_t n, int rows, const Terms& t) {
  return dim3(static_cast<unsigned>((n + rows - 1) / rows), static_cast<unsigned>(t.H), static_cast<unsigned>(t.B));
}

// Calls f(std::integral_constant<int, D>) for the head widths the tiles are built for.
template <class F>
void with_tile_width(int64_t d, F&& f) {
  switch (d) {
    case 16: return f(std::integral_constant<int, 16>());  // the kernel tests' width
    case 64: return f(std::integral_constant<int, 64>());  // every shipped config's
  }
  ORDO_CHECK(false, "attention on tensor-core tiles: heads ", d, " wide (the tiles take 16 or 64)");
}

}  // namespace ordo::cuda::tiles
