// CUDA kernels of the relative-position ops (tensor/kernels.inc), checked
// against the CPU kernels (tensor/cpu/relative.cpp) by tests/tensor/test_cuda_pe.cpp.
//
// Layout: idx [B, L, J] holds the table row of (query i, key j) and is shared
// by the H heads; x, g, s are [B, H, L, J or R]; q [B, H, L, D], k [B, H, J, D],
// a [H, R, D]. Nothing here makes a [B, H, L, J, D] tensor.
//
// Determinism: no float atomics anywhere. Every output element has one
// writer, which adds its terms in a fixed order:
//  - relative_gather: a thread per output element (a copy).
//  - relative_scatter: a warp per row (b, h, i), walking j in steps of 32.
//    In each step the lanes whose j fall on the same row r form a group
//    (__match_any_sync); the group's lowest lane adds the group's values in
//    lane order onto out[r]. Steps run in increasing j. The order is fixed
//    by the index alone; where a row's indices are all distinct (consecutive
//    positions without clipping) it is exactly the CPU's order.
//  - relative_product: a warp per (b, h, i), each lane summing its d (lane,
//    lane + 32, ...) in order, the lanes' sums added by a fixed shuffle tree.
//  - its backward: gq a thread per (b, h, i, d) summing over j in order, gk a
//    thread per (b, h, j, d) summing over i in order (the CPU's orders), and
//    ga in two passes: a thread per (b, h, r, d) summing batch element b's
//    pairs with idx = r in increasing (i, j) — the pairs grouped by r with a
//    stable radix sort of idx (cub), so each thread walks its own stretch of
//    a run — then a thread per (h, r, d) adding the B sums in order. This is
//    the CPU's order too.
//  - band_scores, band_apply: a thread per output element, summing over d
//    (over j) in order; band_table_grad a thread per (b, h', t, d) summing
//    batch element b's pairs in increasing (h, i), then a thread per (h', t,
//    d) adding the B sums in order (the CPU's BLAS products sum in their own
//    order: the two agree within rounding).
// An out-of-range index is never used as an address: the kernel records it
// in the device's index-error flag (the next synchronize or copy to the host
// throws) and skips the term (forward outputs get 0).
#include <climits>

#include <cub/device/device_radix_sort.cuh>

#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

namespace {

constexpr int kWarp = 32;

__device__ __forceinline__ bool valid_row(int64_t r, int64_t rows, int* index_error) {
  if (r >= 0 && r < rows) return true;
  report_index_error(index_error, IndexErrorSite::relative);
  return false;
}

// ---- relative_gather ---------------------------------------------------------------

// out[b,h,i,j] = x[b,h,i,idx[b,i,j]], one thread per output element.
__global__ void gather_kernel(float* out, const float* x, const int64_t* idx, int64_t H, int64_t L, int64_t J,
                              int64_t R, int64_t total, int* index_error) {
  for (int64_t e = global_thread_index(); e < total; e += grid_thread_count()) {
    const int64_t j = e % J, row = e / J;  // row = (b, h, i)
    const int64_t i = row % L, b = row / (H * L);
    const int64_t r = idx[(b * L + i) * J + j];
    out[e] = valid_row(r, R, index_error) ? x[row * R + r] : 0.0f;
  }
}

// ---- relative_scatter --------------------------------------------------------------

// out[b,h,i,r] = sum over j with idx[b,i,j] = r of g[b,h,i,j]: a warp per row
// (b, h, i); see the file comment for the order of the sums. The row loop is
// uniform across a warp (every lane has the same warp index), so the whole
// warp takes part in every __match_any_sync / __shfl_sync.
__global__ void scatter_kernel(float* out, const float* g, const int64_t* idx, int64_t H, int64_t L, int64_t J,
                               int64_t R, int64_t rows, int* index_error) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const int64_t first = global_thread_index() / kWarp, warps = grid_thread_count() / kWarp;
  for (int64_t row = first; row < rows; row += warps) {
    const int64_t i = row % L, b = row / (H * L);
    const int64_t* ir = idx + (b * L + i) * J;
    const float* gr = g + row * J;
    float* o = out + row * R;
    for (int64_t r = lane; r < R; r += kWarp) o[r] = 0.0f;
    __syncwarp();  // the zeros are visible to the lanes that add below
    for (int64_t j0 = 0; j0 < J; j0 += kWarp) {
      const int64_t j = j0 + lane;
      int64_t r = -1;  // -1: no term (past the row's end, or an invalid index)
      float v = 0.0f;
      if (j < J) {
        const int64_t candidate = ir[j];
        if (valid_row(candidate, R, index_error)) {
          r = candidate;
          v = gr[j];
        }
      }
      const unsigned group = __match_any_sync(0xffffffffu, static_cast<unsigned long long>(r));
      float sum = 0.0f;
#pragma unroll
      for (int src = 0; src < kWarp; ++src) {
        const float w = __shfl_sync(0xffffffffu, v, src);
        if (group & (1u << src)) sum += w;
      }
      if (r >= 0 && lane == __ffs(static_cast<int>(group)) - 1) o[r] += sum;
      __syncwarp();  // this step's adds land before the next step's
    }
  }
}

// ---- relative_product and its backward ------------------------------------------------

// s[b,h,i,j] = alpha sum_d q_id k_jd a_{r,d}: a warp per row (b, h, i), its
// lanes over d (q_i held in registers), reading k_j and a_r a whole row at a
// time (coalesced); each pair's lane sums are added by a fixed shuffle tree,
// and lane j % 32 keeps pair j's sum, so the row is written 32 keys at once.
// (A thread per key, as before, read its own k and a rows 32 rows apart in
// every step of d: 64 cache lines a warp-load.)
__global__ void product_kernel(float* s, const float* q, const float* k, const float* a, const int64_t* idx,
                               int64_t H, int64_t L, int64_t J, int64_t D, int64_t R, int64_t rows, float alpha,
                               int* index_error) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const int64_t first = global_thread_index() / kWarp, warps = grid_thread_count() / kWarp;
  for (int64_t row = first; row < rows; row += warps) {  // uniform across the warp
    const int64_t i = row % L, h = (row / L) % H, b = row / (H * L);
    const float* qi = q + row * D;
    const float* kb = k + (b * H + h) * J * D;
    const float* ah = a + h * R * D;
    const int64_t* ir = idx + (b * L + i) * J;
    for (int64_t j0 = 0; j0 < J; j0 += kWarp) {
      float mine = 0.0f;  // lane t: the sum of pair j0 + t
      const int64_t j1 = j0 + kWarp < J ? j0 + kWarp : J;
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t r = ir[j];
        float part = 0.0f;
        if (valid_row(r, R, index_error)) {
          const float* kj = kb + j * D;
          const float* ar = ah + r * D;
          for (int64_t d = lane; d < D; d += kWarp) part += qi[d] * kj[d] * ar[d];
        }
#pragma unroll
        for (int offset = kWarp / 2; offset > 0; offset /= 2) part += __shfl_xor_sync(0xffffffffu, part, offset);
        if (lane == j - j0) mine = part;
      }
      if (j0 + lane < J) s[row * J + j0 + lane] = alpha * mine;
    }
  }
}

// gq[b,h,i,d] = alpha sum_j gs_ij k_jd a_{r_ij,d}: a block per row (b, h, i), a thread per d
// (consecutive threads read consecutive d of k_j and a_r), j in order.
__global__ void grad_q_kernel(float* gq, const float* gs, const float* k, const float* a, const int64_t* idx,
                              int64_t H, int64_t L, int64_t J, int64_t D, int64_t R, int64_t rows, float alpha,
                              int* index_error) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t i = row % L, h = (row / L) % H, b = row / (H * L);
    const float* kb = k + (b * H + h) * J * D;
    const float* ah = a + h * R * D;
    const int64_t* ir = idx + (b * L + i) * J;
    const float* gr = gs + row * J;
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
      float acc = 0.0f;
      for (int64_t j = 0; j < J; ++j) {
        const int64_t r = ir[j];
        if (valid_row(r, R, index_error)) acc += gr[j] * kb[j * D + d] * ah[r * D + d];
      }
      gq[row * D + d] = alpha * acc;
    }
  }
}

// gk[b,h,j,d] = alpha sum_i gs_ij q_id a_{r_ij,d}: a block per key row (b, h, j), a thread per d, i in order.
__global__ void grad_k_kernel(float* gk, const float* gs, const float* q, const float* a, const int64_t* idx,
                              int64_t H, int64_t L, int64_t J, int64_t D, int64_t R, int64_t rows, float alpha,
                              int* index_error) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {  // row = (b, h, j)
    const int64_t j = row % J, h = (row / J) % H, b = row / (H * J);
    const float* qb = q + (b * H + h) * L * D;
    const float* gsb = gs + (b * H + h) * L * J;
    const float* ah = a + h * R * D;
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
      float acc = 0.0f;
      for (int64_t i = 0; i < L; ++i) {
        const int64_t r = idx[(b * L + i) * J + j];
        if (valid_row(r, R, index_error)) acc += gsb[i * J + j] * qb[i * D + d] * ah[r * D + d];
      }
      gk[row * D + d] = alpha * acc;
    }
  }
}

// Sort keys for ga: the row of each pair e = (b, i, j), or R (sorted last,
// never read) for an invalid index; the values are the pairs' positions.
__global__ void pair_keys_kernel(uint32_t* keys, int32_t* pairs, const int64_t* idx, int64_t count, int64_t R,
                                 int* index_error) {
  for (int64_t e = global_thread_index(); e < count; e += grid_thread_count()) {
    const int64_t r = idx[e];
    keys[e] = static_cast<uint32_t>(valid_row(r, R, index_error) ? r : R);
    pairs[e] = static_cast<int32_t>(e);
  }
}

// The first position in [begin, end) of the sorted pairs whose pair is at
// least `pair` (within a run of one row the pairs increase).
__device__ __forceinline__ int64_t first_pair_at_least(const int32_t* pairs, int64_t begin, int64_t end, int32_t pair) {
  while (begin < end) {
    const int64_t mid = begin + (end - begin) / 2;
    if (pairs[mid] < pair) begin = mid + 1; else end = mid;
  }
  return begin;
}

// ga's first pass: pieces[b,h,r,d] = sum over the pairs (i, j) of batch
// element b with idx = r, in increasing (i, j), of gs_ij q_id k_jd. A thread
// per (b, h, r, d): r's run in the stably sorted pairs holds them in
// increasing (b, i, j), so batch element b's are one stretch of it. Cut by
// batch element, a thread walks at most L J pairs (L - |r| where positions
// count up), where one thread per (h, r, d) walked all B of them.
__global__ void grad_a_pieces_kernel(float* pieces, const float* gs, const float* q, const float* k,
                                     const uint32_t* keys, const int32_t* pairs, int64_t count, int64_t B, int64_t H,
                                     int64_t L, int64_t J, int64_t D, int64_t R) {
  const int64_t total = B * H * R * D;
  const int32_t per_batch = static_cast<int32_t>(L * J), width = static_cast<int32_t>(J);  // count <= INT_MAX
  for (int64_t e = global_thread_index(); e < total; e += grid_thread_count()) {
    const int64_t d = e % D, r = (e / D) % R, bh = e / (R * D), b = bh / H;
    const int64_t run_begin = first_at_least(keys, count, static_cast<uint32_t>(r));
    const int64_t run_end = first_at_least(keys, count, static_cast<uint32_t>(r + 1));
    const int32_t first = static_cast<int32_t>(b) * per_batch;
    const int64_t begin = first_pair_at_least(pairs, run_begin, run_end, first);
    const int64_t end = first_pair_at_least(pairs, begin, run_end, first + per_batch);
    const float* gsb = gs + bh * L * J;
    const float* qb = q + bh * L * D + d;
    const float* kb = k + bh * J * D + d;
    float acc = 0.0f;
    for (int64_t p = begin; p < end; ++p) {
      const int32_t pair = pairs[p] - first, i = pair / width, j = pair - i * width;
      acc += gsb[pair] * qb[static_cast<int64_t>(i) * D] * kb[static_cast<int64_t>(j) * D];
    }
    pieces[e] = acc;
  }
}

// The second pass of ga and of band_table_grad: out[e] = alpha times the B
// batch elements' pieces[b, e] added in order, a thread per e (alpha = 1 is
// exact: the same bits as the plain sum).
__global__ void add_batch_pieces_kernel(float* out, const float* pieces, int64_t B, int64_t per_batch, float alpha) {
  for (int64_t e = global_thread_index(); e < per_batch; e += grid_thread_count()) {
    float acc = 0.0f;
    for (int64_t b = 0; b < B; ++b) acc += pieces[b * per_batch + e];
    out[e] = alpha * acc;
  }
}

// Threads of a block whose threads run over d: D rounded up to whole warps, at most 1024.
int threads_for_width(int64_t D) {
  return static_cast<int>(std::min<int64_t>(1024, std::max<int64_t>(kWarp, (D + kWarp - 1) / kWarp * kWarp)));
}

// ga through a stable sort of the pairs by row (see grad_a_pieces_kernel).
void grad_a(const Tensor& ga, const Tensor& gs, const Tensor& q, const Tensor& k, const Tensor& idx, float alpha) {
  DeviceContext& ctx = context(ga);
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), D = q.size(3), J = k.size(2), R = ga.size(1);
  const int64_t count = B * L * J;
  ORDO_CHECK(count <= INT_MAX, "relative_product_backward on CUDA: ", count,
             " (query, key) pairs exceed the 2^31 - 1 the sort takes");
  ORDO_CHECK(R < static_cast<int64_t>(UINT32_MAX), "relative_product_backward on CUDA: ", R, " table rows");
  int end_bit = 1;
  while (end_bit < 32 && (static_cast<uint64_t>(R) >> end_bit) != 0) ++end_bit;
  const int items = static_cast<int>(count);
  size_t temp_bytes = 0;
  ORDO_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, static_cast<const uint32_t*>(nullptr),
                                                  static_cast<uint32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                                  static_cast<int32_t*>(nullptr), items, 0, end_bit, ctx.stream));
  // One allocation: keys in, keys out, pairs in, pairs out, cub's temporary storage.
  const size_t array_bytes = (static_cast<size_t>(count) * 4 + 255) / 256 * 256;
  Tensor storage = workspace(ga.device(), 4 * array_bytes + temp_bytes);
  char* base = static_cast<char*>(storage.raw_data());
  auto* keys_in = reinterpret_cast<uint32_t*>(base);
  auto* keys_out = reinterpret_cast<uint32_t*>(base + array_bytes);
  auto* pairs_in = reinterpret_cast<int32_t*>(base + 2 * array_bytes);
  auto* pairs_out = reinterpret_cast<int32_t*>(base + 3 * array_bytes);
  ORDO_LAUNCH(pair_keys_kernel, grid_for(count, kThreads, ctx), kThreads, 0, ctx.stream, keys_in, pairs_in,
              idx.data<int64_t>(), count, R, ctx.index_error);
  ORDO_CUDA_CHECK_LAUNCH();
  before_launch(ctx.stream);
  ORDO_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(base + 4 * array_bytes, temp_bytes, keys_in, keys_out, pairs_in,
                                                  pairs_out, items, 0, end_bit, ctx.stream));
  after_sort("cub radix sort (relative pairs)", ctx.stream);
  const int64_t per_batch = H * R * D, total = B * per_batch;
  if (per_batch == 0) return;
  const Tensor pieces = workspace(ga.device(), static_cast<size_t>(total) * sizeof(float));
  float* piece_data = static_cast<float*>(pieces.raw_data());
  ORDO_LAUNCH(grad_a_pieces_kernel, grid_for(total, kThreads, ctx), kThreads, 0, ctx.stream, piece_data,
              gs.data<float>(), q.data<float>(), k.data<float>(), keys_out, pairs_out, count, B, H, L, J, D, R);
  ORDO_CUDA_CHECK_LAUNCH();
  ORDO_LAUNCH(add_batch_pieces_kernel, grid_for(per_batch, kThreads, ctx), kThreads, 0, ctx.stream, ga.data<float>(),
              piece_data, B, per_batch, alpha);
  ORDO_CUDA_CHECK_LAUNCH();
}

// ---- banded terms (consecutive positions) ---------------------------------------------
// table [Ht, 2L - 1, D]: head h reads table h (Ht = H) or table 0 (Ht = 1);
// row t stands for the distance t - (L - 1).

__global__ void band_scores_kernel(float* out, const float* x, const float* table, int64_t H, int64_t L, int64_t D,
                                   int64_t Ht, int64_t total) {
  for (int64_t e = global_thread_index(); e < total; e += grid_thread_count()) {
    const int64_t j = e % L, row = e / L;  // row = (b, h, i)
    const int64_t i = row % L, h = (row / L) % H;
    const float* xi = x + row * D;
    const float* w = table + ((Ht == 1 ? 0 : h) * (2 * L - 1) + j - i + L - 1) * D;
    float acc = 0.0f;
    for (int64_t d = 0; d < D; ++d) acc += xi[d] * w[d];
    out[e] = acc;
  }
}

__global__ void band_apply_kernel(float* out, const float* p, const float* table, int64_t H, int64_t L, int64_t D,
                                  int64_t Ht, int64_t total) {
  for (int64_t e = global_thread_index(); e < total; e += grid_thread_count()) {
    const int64_t d = e % D, row = e / D;  // row = (b, h, i)
    const int64_t i = row % L, h = (row / L) % H;
    const float* pi = p + row * L;
    const float* w = table + ((Ht == 1 ? 0 : h) * (2 * L - 1) + L - 1 - i) * D + d;
    float acc = 0.0f;
    for (int64_t j = 0; j < L; ++j) acc += pi[j] * w[j * D];
    out[e] = acc;
  }
}

// band_table_grad's first pass: pieces[b, ht, t, d] = batch element b's sum
// over its heads (all H with one table, head ht with a table per head) and
// queries i, in increasing (h, i), of g[b, h, i, j] y[b, h, i, d] with j =
// t + i - (L - 1): a thread per (b, ht, t, d), so a thread's chain is H L
// adds at most, where a thread per (ht, t, d) over the whole batch made B H L.
__global__ void band_table_pieces_kernel(float* pieces, const float* g, const float* y, int64_t H, int64_t L,
                                         int64_t D, int64_t Ht, int64_t total) {
  const int64_t T = 2 * L - 1;
  for (int64_t e = global_thread_index(); e < total; e += grid_thread_count()) {
    const int64_t d = e % D, t = (e / D) % T, ht = (e / (D * T)) % Ht, b = e / (D * T * Ht);
    // Query i meets row t at key j = t + i - (L - 1), for i in [lo, hi).
    const int64_t lo = t < L - 1 ? L - 1 - t : 0, hi = t < L ? L : 2 * L - 1 - t;
    float acc = 0.0f;
    for (int64_t h = (Ht == 1 ? 0 : ht); h < (Ht == 1 ? H : ht + 1); ++h) {
      const int64_t bh = b * H + h;
      for (int64_t i = lo; i < hi; ++i) acc += g[(bh * L + i) * L + t + i - (L - 1)] * y[(bh * L + i) * D + d];
    }
    pieces[e] = acc;
  }
}

}  // namespace

void band_scores(const Tensor& out, const Tensor& x, const Tensor& table) {
  require_f32(x.dtype(), "band_scores");
  DeviceContext& ctx = context(out);
  const int64_t total = out.numel();
  if (total == 0) return;
  ORDO_LAUNCH(band_scores_kernel, grid_for(total, kThreads, ctx), kThreads, 0, ctx.stream, out.data<float>(),
              x.data<float>(), table.data<float>(), x.size(1), x.size(2), x.size(3), table.size(0), total);
  ORDO_CUDA_CHECK_LAUNCH();
}

void band_apply(const Tensor& out, const Tensor& p, const Tensor& table) {
  require_f32(p.dtype(), "band_apply");
  DeviceContext& ctx = context(out);
  const int64_t total = out.numel();
  if (total == 0) return;
  ORDO_LAUNCH(band_apply_kernel, grid_for(total, kThreads, ctx), kThreads, 0, ctx.stream, out.data<float>(),
              p.data<float>(), table.data<float>(), p.size(1), p.size(2), out.size(3), table.size(0), total);
  ORDO_CUDA_CHECK_LAUNCH();
}

void band_table_grad(const Tensor& out, const Tensor& g, const Tensor& y) {
  require_f32(g.dtype(), "band_table_grad");
  DeviceContext& ctx = context(out);
  const int64_t per_batch = out.numel(), B = g.size(0), total = B * per_batch;
  if (per_batch == 0) return;
  const Tensor pieces = workspace(out.device(), static_cast<size_t>(total) * sizeof(float));
  float* piece_data = static_cast<float*>(pieces.raw_data());
  ORDO_LAUNCH(band_table_pieces_kernel, grid_for(total, kThreads, ctx), kThreads, 0, ctx.stream, piece_data,
              g.data<float>(), y.data<float>(), g.size(1), g.size(2), y.size(3), out.size(0), total);
  ORDO_CUDA_CHECK_LAUNCH();
  ORDO_LAUNCH(add_batch_pieces_kernel, grid_for(per_batch, kThreads, ctx), kThreads, 0, ctx.stream,
              out.data<float>(), piece_data, B, per_batch, 1.0f);
  ORDO_CUDA_CHECK_LAUNCH();
}

void relative_gather(const Tensor& out, const Tensor& x, const Tensor& idx) {
  require_f32(x.dtype(), "relative_gather");
  DeviceContext& ctx = context(out);
  const int64_t H = out.size(1), L = out.size(2), J = out.size(3), R = x.size(3), total = out.numel();
  if (total == 0) return;
  ORDO_LAUNCH(gather_kernel, grid_for(total, kThreads, ctx), kThreads, 0, ctx.stream, out.data<float>(),
              x.data<float>(), idx.data<int64_t>(), H, L, J, R, total, ctx.index_error);
  ORDO_CUDA_CHECK_LAUNCH();
}

void relative_scatter(const Tensor& out, const Tensor& g, const Tensor& idx) {
  require_f32(g.dtype(), "relative_scatter");
  DeviceContext& ctx = context(out);
  const int64_t B = g.size(0), H = g.size(1), L = g.size(2), J = g.size(3), R = out.size(3);
  const int64_t rows = B * H * L;
  if (rows == 0 || R == 0) return;
  // kThreads is a multiple of the warp size, so every warp is whole.
  ORDO_LAUNCH(scatter_kernel, grid_for(rows * kWarp, kThreads, ctx), kThreads, 0, ctx.stream, out.data<float>(),
              g.data<float>(), idx.data<int64_t>(), H, L, J, R, rows, ctx.index_error);
  ORDO_CUDA_CHECK_LAUNCH();
}

void relative_product(const Tensor& s, const Tensor& q, const Tensor& k, const Tensor& a, const Tensor& idx,
                      double alpha) {
  require_f32(q.dtype(), "relative_product");
  DeviceContext& ctx = context(s);
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), D = q.size(3), J = k.size(2), R = a.size(1);
  const int64_t rows = B * H * L;
  if (rows == 0 || J == 0) return;
  ORDO_LAUNCH(product_kernel, grid_for(rows * kWarp, kThreads, ctx), kThreads, 0, ctx.stream, s.data<float>(),
              q.data<float>(), k.data<float>(), a.data<float>(), idx.data<int64_t>(), H, L, J, D, R, rows,
              static_cast<float>(alpha), ctx.index_error);
  ORDO_CUDA_CHECK_LAUNCH();
}

void relative_product_backward(const Tensor& gq, const Tensor& gk, const Tensor& ga, const Tensor& gs,
                               const Tensor& q, const Tensor& k, const Tensor& a, const Tensor& idx,
                               double alpha) {
  require_f32(q.dtype(), "relative_product_backward");
  DeviceContext& ctx = context(q);
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), D = q.size(3), J = k.size(2), R = a.size(1);
  const float scale = static_cast<float>(alpha);
  const int threads = threads_for_width(D);
  if (gq.defined() && gq.numel() > 0) {
    ORDO_LAUNCH(grad_q_kernel, grid_for_rows(B * H * L), threads, 0, ctx.stream, gq.data<float>(),
                gs.data<float>(), k.data<float>(), a.data<float>(), idx.data<int64_t>(), H, L, J, D, R,
                B * H * L, scale, ctx.index_error);
    ORDO_CUDA_CHECK_LAUNCH();
  }
  if (gk.defined() && gk.numel() > 0) {
    ORDO_LAUNCH(grad_k_kernel, grid_for_rows(B * H * J), threads, 0, ctx.stream, gk.data<float>(),
                gs.data<float>(), q.data<float>(), a.data<float>(), idx.data<int64_t>(), H, L, J, D, R,
                B * H * J, scale, ctx.index_error);
    ORDO_CUDA_CHECK_LAUNCH();
  }
  if (ga.defined() && ga.numel() > 0) grad_a(ga, gs, q, k, idx, scale);
}

}  // namespace ordo::cuda
