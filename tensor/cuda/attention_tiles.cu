// The fused attention's forward on tensor-core tiles: a block per (64
// queries, head, batch), a warp per 16 queries, S = Q K^T per step of 32
// keys, the online softmax and O = O exp(m_old - m) + P~ V (the algorithm:
// attention_tiles.cuh; the backward: attention_tiles_backward.cu).
#include "tensor/cuda/attention_tiles.cuh"

namespace ordo::cuda {

namespace {

using namespace tiles;

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

}  // namespace ordo::cuda
