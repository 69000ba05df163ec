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
#include <mma.h>

#include <type_traits>

#include "tensor/cuda/attention_terms.cuh"

namespace ordo::cuda {

namespace {

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
__device__ Window pair_window(const Terms& t, int64_t b, int64_t i0, int queries, int64_t j0, int keys) {
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
__device__ void clear(MovedPairs<true>& m) {
  for (int e = threadIdx.x % kWarp; e < kSide * kWindow; e += kWarp) m.by_distance[e / kWindow][e % kWindow] = 0.0f;
  for (int e = threadIdx.x % kWarp; e < kSide * kStep; e += kWarp) m.rows[e / kStep][e % kStep] = -1;
}

// Row r's pair (i, j) with this lane's key takes `value` (pair: i < L and
// j < J). Every lane takes part, the window the same for all.
__device__ void move_pair(MovedPairs<true>& m, const Terms& t, const Table& table, const Window& w, int r, bool pair,
                          int64_t b, int64_t i, int64_t j, float value) {
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

// ---- forward ----------------------------------------------------------------------------------

template <int D, bool kVectors>
struct ForwardTiles {
  static constexpr int kWarps = kVectors ? 1 : kForwardWarps;
  static constexpr int kQueries = kSide * kWarps;
  alignas(32) bf16 queries[kQueries][D];
  alignas(32) bf16 keys[kStep][D];
  alignas(32) bf16 values[kStep][D];
  alignas(32) float scores[kQueries][kStep];
  alignas(32) bf16 probs[kQueries][kStep];  // P~ = exp(s - m) z, this step's keys
  alignas(32) float out[kQueries][D];       // O, unnormalised
  // m and l per query, two copies: a step reads one and writes the other.
  alignas(32) float row_max[2][kQueries];
  alignas(32) float row_sum[2][kQueries];
  // Shaw's relative vectors: the window, q_i . A[row] per pair, P~ moved to the distances.
  WindowTiles<D, kVectors, kSide> window;
  std::conditional_t<kVectors, float[kSide][kStep], char> qa;
  MovedPairs<kVectors> moved;
};

template <int D, bool kVectors>
__global__ void __launch_bounds__(ForwardTiles<D, kVectors>::kWarps * kWarp) attention_forward_tiles_kernel(
    GradRows out, Rows<uint16_t> out16, float* lse, HeadRows q, HeadRows k, HeadRows v, Terms t) {
  using Tiles = ForwardTiles<D, kVectors>;
  __shared__ Tiles s;
  const int64_t b = blockIdx.z, h = blockIdx.y, first = blockIdx.x * Tiles::kQueries;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, row0 = warp * kSide;
  const bool rope = t.rotary != nullptr;
  load_operand<D>(s.queries, Tiles::kQueries, q, b, h, first, t.L, t, rope);
  for (int e = threadIdx.x; e < Tiles::kQueries * D; e += blockDim.x) s.out[e / D][e % D] = 0.0f;
  if (threadIdx.x < Tiles::kQueries) {
    s.row_max[0][threadIdx.x] = -INFINITY;
    s.row_sum[0][threadIdx.x] = 0.0f;
  }
  Terms::Draw draw;
  int now = 0;  // which copy of m and l this step reads
  for (int64_t j0 = 0; j0 < t.J; j0 += kStep, now ^= 1) {
    __syncthreads();  // the last step's keys and values are read (at the first: the queries written)
    load_operand<D>(s.keys, kStep, k, b, h, j0, t.J, t, rope);
    load_operand<D>(s.values, kStep, v, b, h, j0, t.J, t, false);
    Window window;
    if constexpr (kVectors) {  // the block is one warp
      window = pair_window(t, b, first, kSide, j0, kStep);
      if (t.query_vectors.data != nullptr) load_window<D>(s.window.rows, kWindow, window, t.query_vectors, t, h);
      if (t.value_vectors.data != nullptr) clear(s.moved);
    }
    __syncthreads();
    if (after_every_query(t, j0, first + row0, s.row_max[now] + row0)) {
      // Masked for every row of the warp, which has seen a key: adds nothing; m and l carry over.
      if (lane < kSide && first + row0 + lane < t.L) {
        s.row_max[now ^ 1][row0 + lane] = s.row_max[now][row0 + lane];
        s.row_sum[now ^ 1][row0 + lane] = s.row_sum[now][row0 + lane];
      }
      continue;
    }
    warp_product<D, kStep, true, false>(&s.scores[row0][0], kStep, &s.queries[row0][0], D, &s.keys[0][0], D);
    if constexpr (kVectors)
      if (t.query_vectors.data != nullptr)
        vector_dots<D, kSide>(s.qa, false, s.window, s.queries, t.query_vectors, window, t, b, h, first, j0, true);
    __syncwarp();
    const int64_t j = j0 + lane;
    for (int r = row0; r < row0 + kSide; ++r) {
      const int64_t i = first + r;
      if (i >= t.L) {  // the same for every lane
        s.probs[r][lane] = to_bf16(0.0f);
        continue;
      }
      float qa = 0.0f;
      if constexpr (kVectors)
        if (t.query_vectors.data != nullptr) qa = s.qa[r - row0][lane];
      const float score = j < t.J ? pair_score(t, s.scores[r][lane], qa, b, h, i, j) : -INFINITY;
      const float m_old = s.row_max[now][r];
      const float m_new = fmaxf(m_old, warp_max(score));  // finite: this step has a key
      const float p = j < t.J ? expf(score - m_new) : 0.0f;
      const float rescale = expf(m_old - m_new);  // 0 at the first step (m_old = -inf)
      const float l = s.row_sum[now][r] * rescale + warp_sum(p);
      if (lane == 0) {
        s.row_max[now ^ 1][r] = m_new;
        s.row_sum[now ^ 1][r] = l;
      }
      const float dropped = j < t.J ? p * t.dropout_factor(b, h, i, j, draw) : 0.0f;  // P~
      s.probs[r][lane] = to_bf16(dropped);
      for (int x = lane; x < D; x += kWarp) s.out[r][x] *= rescale;
      if constexpr (kVectors)  // o_i gains sum_j P~_ij V[row]
        if (t.value_vectors.data != nullptr)
          move_pair(s.moved, t, t.value_vectors, window, r - row0, j < t.J, b, i, j, dropped);
    }
    __syncwarp();  // the rescaled rows and P~ are visible to the warp's product
    warp_product<kStep, D, false, true>(&s.out[row0][0], D, &s.probs[row0][0], kStep, &s.values[0][0], D);
    if constexpr (kVectors)
      if (t.value_vectors.data != nullptr) {  // the window's rows of V in place of A's (read by now)
        load_window<D>(s.window.rows, kWindow, window, t.value_vectors, t, h);
        add_moved_product<D>(s.out, s.moved, s.window.rows, t.value_vectors, window, h);
      }
  }
  __syncthreads();  // the last step's m and l (lane 0's) and O (the product's) are visible
  for (int r = row0; r < row0 + kSide; ++r) {
    const int64_t i = first + r;
    if (i >= t.L) break;
    const float l = s.row_sum[now][r], inv = 1.0f / l;
    for (int x = lane; x < D; x += kWarp) {
      const float o = s.out[r][x] * inv;
      out.at(b, h, i)[x] = o;
      if (out16.data != nullptr) out16.at(b, h, i)[x] = bf16_bits(o);
    }
    if (lane == 0) lse[(b * t.H + h) * t.L + i] = s.row_max[now][r] + logf(l);
  }
}

// ---- backward by query rows ------------------------------------------------------------------------

// What the backward by query rows forms beyond dq and D: nothing, the
// tables' gradients binned, or Shaw's relative vectors (their window).
enum class QueryExtra { none, tables, vectors };

// Where the backward by query rows bins the tables' gradients: the scalar
// table's rows first, then the gate's (the wanted ones; 0 rows: not wanted),
// each block's bins written to partials [B, H, blocks, table_rows + gate_rows].
struct TileTables {
  float* partials = nullptr;
  int table_rows = 0, gate_rows = 0;
};

// A warp's bins of the tables' gradients (empty without tables).
template <bool kTables>
struct TableBins {
  alignas(32) float sums[kBackwardWarps][kTileTableBins];
  alignas(32) float stage[kBackwardWarps][kWarp];
};
template <>
struct TableBins<false> {};

// Shaw's relative vectors by query rows: the window's operands, q_i . A[row]
// per pair, and the pairs' query_scale dS moved to their distances (for dq).
template <int D, bool kVectors>
struct QueryVectorTiles {
  WindowTiles<D, true, kSide> window;
  alignas(32) float qa[kSide][kStep];
  MovedPairs<true> moved;
};
template <int D>
struct QueryVectorTiles<D, false> {};

template <int D, QueryExtra kExtra>
struct QueryGradTiles {
  static constexpr bool kTables = kExtra == QueryExtra::tables, kVectors = kExtra == QueryExtra::vectors;
  static constexpr int kWarps = kVectors ? 1 : kBackwardWarps;
  static constexpr int kQueries = kSide * kWarps;
  alignas(32) bf16 queries[kQueries][D];
  alignas(32) bf16 grads[kQueries][D];  // dO
  alignas(32) bf16 keys[kStep][D];
  alignas(32) bf16 values[kStep][D];
  alignas(32) float scores[kQueries][kStep];
  alignas(32) float dp[kQueries][kStep];
  alignas(32) bf16 ds[kQueries][kStep];  // scale g dS
  alignas(32) float dq[kQueries][D];
  alignas(32) float lse[kQueries];
  alignas(32) float dsum[kQueries];
  TableBins<kTables> tables;
  QueryVectorTiles<D, kVectors> vectors;
};

template <int D, QueryExtra kExtra>
__global__ void __launch_bounds__(QueryGradTiles<D, kExtra>::kWarps * kWarp) attention_query_grads_tiles_kernel(
    GradRows gq, float* dsum, HeadRows gout, HeadRows q, HeadRows k, HeadRows v, HeadRows out, const float* lse,
    Terms t, TileTables tables) {
  using Tiles = QueryGradTiles<D, kExtra>;
  constexpr bool kTables = Tiles::kTables, kVectors = Tiles::kVectors;
  __shared__ Tiles s;
  const int64_t b = blockIdx.z, h = blockIdx.y, bh = b * t.H + h, first = blockIdx.x * Tiles::kQueries;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, row0 = warp * kSide;
  const bool rope = t.rotary != nullptr;
  load_operand<D>(s.queries, Tiles::kQueries, q, b, h, first, t.L, t, rope);
  load_operand<D>(s.grads, Tiles::kQueries, gout, b, h, first, t.L, t, false);
  for (int e = threadIdx.x; e < Tiles::kQueries * D; e += blockDim.x) s.dq[e / D][e % D] = 0.0f;
  const int bins = tables.table_rows + tables.gate_rows;
  if constexpr (kTables)
    for (int e = lane; e < bins; e += kWarp) s.tables.sums[warp][e] = 0.0f;
  // D_i = dO_i . o_i (FP32, as given) and lse_i, per row of the warp.
  for (int r = row0; r < row0 + kSide; ++r) {
    const int64_t i = first + r;
    if (i >= t.L) break;
    float partial = 0.0f;
    for (int x = lane; x < D; x += kWarp) partial += gout.at(b, h, i)[x] * out.at(b, h, i)[x];
    const float d_i = warp_sum(partial);
    if (lane == 0) {
      s.dsum[r] = d_i;
      s.lse[r] = lse[bh * t.L + i];
      dsum[bh * t.L + i] = d_i;
    }
  }
  Terms::Draw draw;
  for (int64_t j0 = 0; j0 < t.J; j0 += kStep) {
    __syncthreads();  // the last step's keys and values are read (at the first: the rows written)
    load_operand<D>(s.keys, kStep, k, b, h, j0, t.J, t, rope);
    load_operand<D>(s.values, kStep, v, b, h, j0, t.J, t, false);
    Window window;
    if constexpr (kVectors) {  // the block is one warp
      window = pair_window(t, b, first, kSide, j0, kStep);
      clear(s.vectors.moved);
    }
    __syncthreads();
    if (after_every_query(t, j0, first + row0, s.lse + row0)) continue;  // P = 0 and dS = 0 for the warp's rows
    warp_product<D, kStep, true, false>(&s.scores[row0][0], kStep, &s.queries[row0][0], D, &s.keys[0][0], D);
    warp_product<D, kStep, true, false>(&s.dp[row0][0], kStep, &s.grads[row0][0], D, &s.values[0][0], D);
    if constexpr (kVectors) {
      auto& win = s.vectors.window;
      if (t.value_vectors.data != nullptr) {  // dP_ij gains dO_i . V[row]
        load_window<D>(win.rows, kWindow, window, t.value_vectors, t, h);
        __syncwarp();
        vector_dots<D, kSide>(s.dp, true, win, s.grads, t.value_vectors, window, t, b, h, first, j0, true);
      }
      if (t.query_vectors.data != nullptr) {  // A's rows last: dq's product reads them
        load_window<D>(win.rows, kWindow, window, t.query_vectors, t, h);
        __syncwarp();
        vector_dots<D, kSide>(s.vectors.qa, false, win, s.queries, t.query_vectors, window, t, b, h, first, j0, true);
      }
    }
    __syncwarp();
    const int64_t j = j0 + lane;
    for (int r = row0; r < row0 + kSide; ++r) {
      const int64_t i = first + r;
      float ds = 0.0f;  // dS_ij, the gradient of s_ij
      if (i < t.L && j < t.J) {
        float qa = 0.0f;
        if constexpr (kVectors)
          if (t.query_vectors.data != nullptr) qa = s.vectors.qa[r - row0][lane];
        const float p = expf(pair_score(t, s.scores[r][lane], qa, b, h, i, j) - s.lse[r]);
        ds = p * (t.dropout_factor(b, h, i, j, draw) * s.dp[r][lane] - s.dsum[r]);
      }
      s.ds[r][lane] = to_bf16(i < t.L && j < t.J ? scaled_ds(t, ds, b, h, i, j) : 0.0f);
      if constexpr (kTables) {
        // d s_ij / d T[row] = 1 and d s_ij / d G[row] = scale c_ij (c = q_i . k_j, the tile's).
        const int64_t row = i < t.L && j < t.J ? t.row(b, i, j) : -1;
        if (tables.table_rows > 0)
          add_to_bins(s.tables.sums[warp], s.tables.stage[warp], row >= 0 && row < tables.table_rows ? int(row) : -1, ds);
        if (tables.gate_rows > 0)
          add_to_bins(s.tables.sums[warp], s.tables.stage[warp],
                      row >= 0 && row < tables.gate_rows ? tables.table_rows + int(row) : -1,
                      t.scale * ds * s.scores[r][lane]);
      }
      if constexpr (kVectors)  // d s_ij / d q_i gains query_scale A[row]
        if (t.query_vectors.data != nullptr)
          move_pair(s.vectors.moved, t, t.query_vectors, window, r - row0, i < t.L && j < t.J, b, i, j,
                    t.query_scale * ds);
    }
    __syncwarp();
    warp_product<kStep, D, false, true>(&s.dq[row0][0], D, &s.ds[row0][0], kStep, &s.keys[0][0], D);
    if constexpr (kVectors)
      if (t.query_vectors.data != nullptr)  // dq += (query_scale dS_w) A_w
        add_moved_product<D>(&s.dq[row0], s.vectors.moved, s.vectors.window.rows, t.query_vectors, window, h);
  }
  __syncwarp();  // the product's dQ is visible to every lane
  store_rows<D>(gq, s.dq, row0, b, h, first, t.L, t, rope);
  if constexpr (kTables) {
    __syncthreads();  // every warp's bins are final
    float* block_sums = tables.partials + (bh * gridDim.x + blockIdx.x) * bins;
    for (int e = threadIdx.x; e < bins; e += blockDim.x) {
      float sum = 0.0f;
      for (int w = 0; w < kBackwardWarps; ++w) sum += s.tables.sums[w][e];
      block_sums[e] = sum;
    }
  }
}

// The tables' gradients from the blocks' bins: a thread per (head, bin) sums
// partials [B, H, blocks, bins] in (b, block) order — over (b, h, block) for
// a table the heads share (written by head 0's thread). Bins [0, table_rows)
// go to gtable [Ht, table_rows], the rest to ggate [Ht, gate_rows].
__global__ void tile_table_grads_kernel(float* gtable, bool table_shared, float* ggate, bool gate_shared,
                                        const float* partials, TileTables tables, int64_t B, int64_t H,
                                        int64_t blocks) {
  const int64_t bins = tables.table_rows + tables.gate_rows;
  for (int64_t n = global_thread_index(); n < H * bins; n += grid_thread_count()) {
    const int64_t h = n / bins, e = n % bins;
    const bool of_table = e < tables.table_rows, shared = of_table ? table_shared : gate_shared;
    if (shared && h != 0) continue;
    float sum = 0.0f;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t hh = shared ? 0 : h; hh < (shared ? H : h + 1); ++hh)
        for (int64_t block = 0; block < blocks; ++block) sum += partials[((b * H + hh) * blocks + block) * bins + e];
    if (of_table)
      gtable[h * tables.table_rows + e] = sum;
    else
      ggate[h * tables.gate_rows + e - tables.table_rows] = sum;
  }
}

// ---- backward by key rows ------------------------------------------------------------------------

template <int D, bool kVectors>
struct KeyGradTiles {
  static constexpr int kWarps = kVectors ? 1 : kBackwardWarps;
  static constexpr int kKeys = kSide * kWarps;
  alignas(32) bf16 keys[kKeys][D];
  alignas(32) bf16 values[kKeys][D];
  alignas(32) bf16 queries[kStep][D];
  alignas(32) bf16 grads[kStep][D];  // dO
  alignas(32) float scores[kKeys][kStep];  // S^T
  alignas(32) float dp[kKeys][kStep];      // dP^T
  alignas(32) bf16 probs[kKeys][kStep];    // P~^T
  alignas(32) bf16 ds[kKeys][kStep];       // (scale g dS)^T
  alignas(32) float dk[kKeys][D];
  alignas(32) float dv[kKeys][D];
  alignas(32) float lse[kStep];
  alignas(32) float dsum[kStep];
  WindowTiles<D, kVectors, kStep> window;  // G for the step's 32 queries
  std::conditional_t<kVectors, float[kSide][kStep], char> qa;  // q_i . A[row] per pair
};

template <int D, bool kVectors>
__global__ void __launch_bounds__(KeyGradTiles<D, kVectors>::kWarps * kWarp) attention_key_grads_tiles_kernel(
    GradRows gk, GradRows gv, HeadRows gout, HeadRows q, HeadRows k, HeadRows v, const float* lse, const float* dsum,
    Terms t) {
  using Tiles = KeyGradTiles<D, kVectors>;
  __shared__ Tiles s;
  const int64_t b = blockIdx.z, h = blockIdx.y, bh = b * t.H + h, first = blockIdx.x * Tiles::kKeys;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, row0 = warp * kSide;
  const bool rope = t.rotary != nullptr;
  load_operand<D>(s.keys, Tiles::kKeys, k, b, h, first, t.J, t, rope);
  load_operand<D>(s.values, Tiles::kKeys, v, b, h, first, t.J, t, false);
  for (int e = threadIdx.x; e < Tiles::kKeys * D; e += blockDim.x) s.dk[e / D][e % D] = s.dv[e / D][e % D] = 0.0f;
  Terms::Draw draw;
  for (int64_t i0 = 0; i0 < t.L; i0 += kStep) {
    __syncthreads();  // the last step's queries and dO are read (at the first: the keys written)
    load_operand<D>(s.queries, kStep, q, b, h, i0, t.L, t, rope);
    load_operand<D>(s.grads, kStep, gout, b, h, i0, t.L, t, false);
    if (threadIdx.x < kStep) {
      const int64_t i = i0 + threadIdx.x;
      s.lse[threadIdx.x] = i < t.L ? lse[bh * t.L + i] : 0.0f;
      s.dsum[threadIdx.x] = i < t.L ? dsum[bh * t.L + i] : 0.0f;
    }
    Window window;
    if constexpr (kVectors) window = pair_window(t, b, i0, kStep, first, kSide);  // the block is one warp
    __syncthreads();
    // Causal: queries all before the warp's keys, each having seen a key, give P = 0 and dS = 0.
    if (t.causal && i0 + kStep - 1 < first + row0 &&
        warp_all(i0 + lane < t.L ? s.lse[lane] : INFINITY, [](float a, float b) { return fminf(a, b); }) > kSeenKey)
      continue;
    warp_product<D, kStep, true, false>(&s.scores[row0][0], kStep, &s.keys[row0][0], D, &s.queries[0][0], D);
    warp_product<D, kStep, true, false>(&s.dp[row0][0], kStep, &s.values[row0][0], D, &s.grads[0][0], D);
    if constexpr (kVectors) {
      if (t.value_vectors.data != nullptr) {  // dP_ij gains dO_i . V[row]
        load_window<D>(s.window.rows, kWindow, window, t.value_vectors, t, h);
        __syncwarp();
        vector_dots<D, kStep>(s.dp, true, s.window, s.grads, t.value_vectors, window, t, b, h, i0, first, false);
      }
      if (t.query_vectors.data != nullptr) {
        load_window<D>(s.window.rows, kWindow, window, t.query_vectors, t, h);
        __syncwarp();
        vector_dots<D, kStep>(s.qa, false, s.window, s.queries, t.query_vectors, window, t, b, h, i0, first, false);
      }
    }
    __syncwarp();
    const int64_t i = i0 + lane;
    for (int r = row0; r < row0 + kSide; ++r) {
      const int64_t j = first + r;
      float pt = 0.0f, ds = 0.0f;
      if (i < t.L && j < t.J) {
        float qa = 0.0f;
        if constexpr (kVectors)
          if (t.query_vectors.data != nullptr) qa = s.qa[r - row0][lane];
        const float p = expf(pair_score(t, s.scores[r][lane], qa, b, h, i, j) - s.lse[lane]);
        const float z = t.dropout_factor(b, h, i, j, draw);
        pt = p * z;
        ds = scaled_ds(t, p * (z * s.dp[r][lane] - s.dsum[lane]), b, h, i, j);
      }
      s.probs[r][lane] = to_bf16(pt);
      s.ds[r][lane] = to_bf16(ds);
    }
    __syncwarp();
    warp_product<kStep, D, false, true>(&s.dv[row0][0], D, &s.probs[row0][0], kStep, &s.grads[0][0], D);
    warp_product<kStep, D, false, true>(&s.dk[row0][0], D, &s.ds[row0][0], kStep, &s.queries[0][0], D);
  }
  __syncwarp();  // the products' dK and dV are visible to every lane
  store_rows<D>(gk, s.dk, row0, b, h, first, t.J, t, rope);
  store_rows<D>(gv, s.dv, row0, b, h, first, t.J, t, false);
}

// ---- Shaw's relative vectors: A's and V's gradients by distance ------------------------------------------

constexpr int kDistances = 16;              // distances a block takes
constexpr int kReach = kStep + kDistances;  // the keys a step's 32 queries meet at those 16 distances (47, rounded up)

template <int D>
struct DistanceTiles {
  alignas(32) bf16 queries[kStep][D];
  alignas(32) bf16 grads[kStep][D];  // dO
  alignas(32) bf16 keys[kReach][D];
  alignas(32) bf16 values[kReach][D];
  alignas(32) bf16 vectors[kDistances][D];     // A's rows of the block's distances
  alignas(32) bf16 value_vectors[kDistances][D];  // V's
  alignas(32) float scores[kStep][kReach];     // q_i . k_j, query r and key r + c at distance first + c
  alignas(32) float dp[kStep][kReach];
  alignas(32) float dots[kStep][kDistances];   // dO_i . V[row], then q_i . A[row]
  alignas(32) bf16 ds[kDistances][kStep];      // (query_scale dS)^T, then P~^T
  alignas(32) float da[kDistances][D];
  alignas(32) float dv[kDistances][D];
  alignas(32) float lse[kStep];
  alignas(32) float dsum[kStep];
};

// By distance (consecutive positions: p_j - p_i = j - i): a block, one warp,
// per 16 distances from first = 16 blockIdx.x - (L - 1) and head h sums
// query_scale dS_ij q_i (A's) and P~_ij dO_i (V's) over the pairs of each
// distance of every batch element, into by_distance_a and by_distance_v [H,
// 2 L - 1, d] (each where wanted; one writer per element).
template <int D>
__global__ void __launch_bounds__(kWarp) attention_vector_grads_tiles_kernel(float* by_distance_a,
                                                                           float* by_distance_v, HeadRows gout,
                                                                           HeadRows q, HeadRows k, HeadRows v,
                                                                           const float* lse, const float* dsum,
                                                                           Terms t) {
  __shared__ DistanceTiles<D> s;
  const int64_t h = blockIdx.y, first = static_cast<int64_t>(blockIdx.x) * kDistances - (t.L - 1);
  const int lane = threadIdx.x;
  const Window rows{first, true};  // the block's distances: rows of A and V
  load_window<D>(s.vectors, kDistances, rows, t.query_vectors, t, h);
  load_window<D>(s.value_vectors, kDistances, rows, t.value_vectors, t, h);
  for (int e = lane; e < kDistances * D; e += kWarp) s.da[e / D][e % D] = s.dv[e / D][e % D] = 0.0f;
  const bool keys = t.query_vectors.data != nullptr, values = t.value_vectors.data != nullptr;
  Terms::Draw draw;
  for (int64_t b = 0; b < t.B; ++b) {
    const int64_t bh = b * t.H + h;
    for (int64_t i0 = 0; i0 < t.L; i0 += kStep) {
      const int64_t j0 = i0 + first;  // query i0 + r meets key j0 + r + c at distance first + c
      if (j0 + kReach <= 0 || j0 >= t.J) continue;  // no key in reach
      // Causal: the pairs of a positive distance are masked, P = 0 where the row has seen a key.
      if (t.causal && first > 0 &&
          warp_all(i0 + lane < t.L ? lse[bh * t.L + i0 + lane] : INFINITY, [](float a, float e) { return fminf(a, e); }) >
              kSeenKey)
        continue;
      __syncwarp();  // the last step's tiles are read
      load_operand<D>(s.queries, kStep, q, b, h, i0, t.L, t, false);
      load_operand<D>(s.grads, kStep, gout, b, h, i0, t.L, t, false);
      load_operand<D>(s.keys, kReach, k, b, h, j0, t.J, t, false);
      load_operand<D>(s.values, kReach, v, b, h, j0, t.J, t, false);
      s.lse[lane] = i0 + lane < t.L ? lse[bh * t.L + i0 + lane] : 0.0f;
      s.dsum[lane] = i0 + lane < t.L ? dsum[bh * t.L + i0 + lane] : 0.0f;
      __syncwarp();
      for (int m = 0; m < kStep; m += kSide) {
        warp_product<D, kReach, true, false>(&s.scores[m][0], kReach, &s.queries[m][0], D, &s.keys[0][0], D);
        warp_product<D, kReach, true, false>(&s.dp[m][0], kReach, &s.grads[m][0], D, &s.values[0][0], D);
      }
      const int64_t i = i0 + lane;
      if (values) {  // dP_ij gains dO_i . V[row]
        for (int m = 0; m < kStep; m += kSide)
          warp_product<D, kDistances, true, false>(&s.dots[m][0], kDistances, &s.grads[m][0], D,
                                                   &s.value_vectors[0][0], D);
        __syncwarp();
        for (int c = 0; c < kDistances; ++c) s.dp[lane][lane + c] += s.dots[lane][c];
        __syncwarp();
      }
      if (keys)
        for (int m = 0; m < kStep; m += kSide)
          warp_product<D, kDistances, true, false>(&s.dots[m][0], kDistances, &s.queries[m][0], D, &s.vectors[0][0], D);
      __syncwarp();
      float dropped[kDistances];  // P~ of the lane's pairs
      for (int c = 0; c < kDistances; ++c) {
        const int64_t j = j0 + lane + c;
        float ds = 0.0f;
        dropped[c] = 0.0f;
        if (i < t.L && j >= 0 && j < t.J) {
          const float qa = keys ? s.dots[lane][c] : 0.0f;
          const float p = expf(pair_score(t, s.scores[lane][lane + c], qa, b, h, i, j) - s.lse[lane]);
          const float z = t.dropout_factor(b, h, i, j, draw);
          ds = p * (z * s.dp[lane][lane + c] - s.dsum[lane]);
          dropped[c] = p * z;
        }
        s.ds[c][lane] = to_bf16(t.query_scale * ds);
      }
      __syncwarp();
      if (by_distance_a != nullptr)
        warp_product<kStep, D, false, true>(&s.da[0][0], D, &s.ds[0][0], kStep, &s.queries[0][0], D);
      if (by_distance_v != nullptr) {
        __syncwarp();  // the last product's operands are read
        for (int c = 0; c < kDistances; ++c) s.ds[c][lane] = to_bf16(dropped[c]);
        __syncwarp();
        warp_product<kStep, D, false, true>(&s.dv[0][0], D, &s.ds[0][0], kStep, &s.grads[0][0], D);
      }
    }
  }
  __syncwarp();  // the products' sums are visible to every lane
  const int64_t distances = 2 * t.L - 1;
  for (int e = lane; e < kDistances * D; e += kWarp) {
    const int n = e / D, c = e % D;
    const int64_t at = first + n + t.L - 1;
    if (at >= distances) continue;
    if (by_distance_a != nullptr) by_distance_a[(h * distances + at) * t.d + c] = s.da[n][c];
    if (by_distance_v != nullptr) by_distance_v[(h * distances + at) * t.d + c] = s.dv[n][c];
  }
}

// A's (or V's) gradient [Ht, rows, d] from by_distance [H, 2 L - 1, d]: a thread per
// (table head, x) adds the distances in increasing order to their rows (over
// the heads that share the table, in order): one writer per element.
__global__ void tile_vector_grads_kernel(float* grad, int64_t rows, bool shared, const float* by_distance, Terms t) {
  const int64_t heads = shared ? 1 : t.H, distances = 2 * t.L - 1;
  for (int64_t n = global_thread_index(); n < heads * t.d; n += grid_thread_count()) {
    const int64_t table_head = n / t.d, x = n % t.d;
    float* column = grad + table_head * rows * t.d + x;
    for (int64_t r = 0; r < rows; ++r) column[r * t.d] = 0.0f;
    for (int64_t at = 0; at < distances; ++at) {
      const int64_t given = at - (t.L - 1) - t.first_distance;
      const int64_t row = given >= 0 && given < t.rows_given ? t.row_of[given] : -1;
      if (row < 0 || row >= rows) continue;
      float sum = 0.0f;
      for (int64_t h = shared ? 0 : table_head; h < (shared ? t.H : table_head + 1); ++h)
        sum += by_distance[(h * distances + at) * t.d + x];
      column[row * t.d] += sum;
    }
  }
}

// A grid of blocks of `rows` queries (or keys) over n of them, per head and batch element.
dim3 grid_of(int64_t n, int rows, const Terms& t) {
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

}  // namespace

void attention_forward_tiles(const Tensor& out, const Tensor& out_operand, const Tensor& lse, const Tensor& q,
                             const Tensor& k, const Tensor& v, const Terms& t, DeviceContext& ctx) {
  with_tile_width(t.d, [&](auto width) {
    auto launch = [&](auto with_vectors) {
      constexpr bool kVectors = decltype(with_vectors)::value;
      constexpr int kWidth = decltype(width)::value;  // D, which the launch's own lambda cannot reach
      using Tiles = ForwardTiles<kWidth, kVectors>;
      ORDO_LAUNCH(attention_forward_tiles_kernel<kWidth ORDO_COMMA kVectors>, grid_of(t.L, Tiles::kQueries, t),
                  Tiles::kWarps * kWarp, 0, ctx.stream, head_rows<float>(out), head_rows<uint16_t>(out_operand),
                  lse.data<float>(), head_rows(q), head_rows(k), head_rows(v), t);
    };
    if (t.query_vectors.data != nullptr || t.value_vectors.data != nullptr)
      launch(std::true_type());
    else
      launch(std::false_type());
  });
  ORDO_CUDA_CHECK_LAUNCH();
}

void attention_backward_tiles(const AttentionGrads& grads, bool with_tables, const Tensor& dsum, const Tensor& gout,
                              const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                              const Terms& t, DeviceContext& ctx) {
  TileTables tables;
  if (with_tables) {
    tables.table_rows = grads.table.defined() ? static_cast<int>(grads.table.size(1)) : 0;
    tables.gate_rows = grads.gate.defined() ? static_cast<int>(grads.gate.size(1)) : 0;
    ORDO_ASSERT(tables.table_rows + tables.gate_rows <= kTileTableBins);
  }
  const int64_t bins = tables.table_rows + tables.gate_rows;
  const bool vectors = t.query_vectors.data != nullptr || t.value_vectors.data != nullptr;
  ORDO_ASSERT(!(vectors && bins > 0));  // attention_table_grads_on_tiles: no table or gate beside the vectors
  with_tile_width(t.d, [&](auto width) {
    constexpr int D = decltype(width)::value;
    auto by_query_rows = [&](auto extra) {
      constexpr QueryExtra kExtra = decltype(extra)::value;
      constexpr int kWidth = decltype(width)::value;  // D, which the launch's own lambda cannot reach
      using Tiles = QueryGradTiles<kWidth, kExtra>;
      ORDO_LAUNCH(attention_query_grads_tiles_kernel<kWidth ORDO_COMMA kExtra>, grid_of(t.L, Tiles::kQueries, t),
                  Tiles::kWarps * kWarp, 0, ctx.stream, head_rows<float>(grads.q), dsum.data<float>(),
                  head_rows(gout), head_rows(q), head_rows(k), head_rows(v), head_rows(out), lse.data<float>(), t,
                  tables);
      ORDO_CUDA_CHECK_LAUNCH();
    };
    using Extra = QueryExtra;
    if (vectors) {
      by_query_rows(std::integral_constant<Extra, Extra::vectors>());
      const Tensor* wanted[] = {&grads.query_vectors, &grads.value_vectors};  // A's, V's
      if (with_tables && (wanted[0]->defined() || wanted[1]->defined())) {  // their gradients by distance
        const int64_t distances = 2 * t.L - 1, each = t.H * distances * t.d;
        const Tensor by_distance = workspace(q.device(), static_cast<size_t>(2 * each) * sizeof(float));
        float* sums[] = {nullptr, nullptr};
        for (int n = 0; n < 2; ++n)
          if (wanted[n]->defined()) sums[n] = static_cast<float*>(by_distance.raw_data()) + n * each;
        ORDO_LAUNCH(attention_vector_grads_tiles_kernel<D>,
                    dim3(static_cast<unsigned>((distances + kDistances - 1) / kDistances), static_cast<unsigned>(t.H)),
                    kWarp, 0, ctx.stream, sums[0], sums[1], head_rows(gout), head_rows(q), head_rows(k), head_rows(v),
                    lse.data<float>(), dsum.data<float>(), t);
        ORDO_CUDA_CHECK_LAUNCH();
        for (int n = 0; n < 2; ++n) {
          if (sums[n] == nullptr) continue;
          const Tensor& g = *wanted[n];
          ORDO_LAUNCH(tile_vector_grads_kernel, grid_for((g.size(0) == 1 ? 1 : t.H) * t.d, kThreads, ctx), kThreads,
                      0, ctx.stream, g.data<float>(), g.size(1), g.size(0) == 1, sums[n], t);
          ORDO_CUDA_CHECK_LAUNCH();
        }
      }
    } else if (bins == 0) {
      by_query_rows(std::integral_constant<Extra, Extra::none>());
    } else {
      const int64_t blocks = grid_of(t.L, QueryGradTiles<D, Extra::tables>::kQueries, t).x;
      const Tensor partials = workspace(q.device(), static_cast<size_t>(t.B * t.H * blocks * bins) * sizeof(float));
      tables.partials = static_cast<float*>(partials.raw_data());
      by_query_rows(std::integral_constant<Extra, Extra::tables>());
      auto data = [](const Tensor& x) { return x.defined() ? x.data<float>() : nullptr; };
      auto shared = [](const Tensor& x) { return x.defined() && x.size(0) == 1; };
      ORDO_LAUNCH(tile_table_grads_kernel, grid_for(t.H * bins, kThreads, ctx), kThreads, 0, ctx.stream,
                  data(grads.table), shared(grads.table), data(grads.gate), shared(grads.gate),
                  tables.partials, tables, t.B, t.H, blocks);
      ORDO_CUDA_CHECK_LAUNCH();
    }
    if (!grads.k.defined() && !grads.v.defined()) return;
    auto by_key_rows = [&](auto with_vectors) {
      constexpr bool kVectors = decltype(with_vectors)::value;
      constexpr int kWidth = decltype(width)::value;
      using Tiles = KeyGradTiles<kWidth, kVectors>;
      ORDO_LAUNCH(attention_key_grads_tiles_kernel<kWidth ORDO_COMMA kVectors>, grid_of(t.J, Tiles::kKeys, t),
                  Tiles::kWarps * kWarp, 0, ctx.stream, head_rows<float>(grads.k), head_rows<float>(grads.v),
                  head_rows(gout), head_rows(q), head_rows(k), head_rows(v), lse.data<float>(), dsum.data<float>(),
                  t);
      ORDO_CUDA_CHECK_LAUNCH();
    };
    if (vectors)
      by_key_rows(std::true_type());
    else
      by_key_rows(std::false_type());
  });
}

}  // namespace ordo::cuda
