// The fused attention's backward on tensor-core tiles (the algorithm:
// attention_tiles.cuh): dq by query rows (with the tables' and gates'
// gradients binned per block, or Shaw's vectors' window), the blocks' bins
// summed, dk and dv by key rows, and Shaw's A's and V's gradients by
// distance. The forward: attention_tiles.cu.
#include "tensor/cuda/attention_tiles.cuh"

namespace ordo::cuda {

namespace {

using namespace tiles;

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

}  // namespace

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
