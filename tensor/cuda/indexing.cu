// CUDA index_select / index_add (embedding lookup and its backward) and
// gather / scatter_add, all on the [outer, n, inner] layout of kernels.inc.
//
// Out-of-range indices: a kernel never uses one as an address. It records it
// in the device's index-error flag (synchronize() and the next device-to-host
// copy throw ordo::Error) and skips the element (forward kernels write 0).
//
// Determinism of the accumulating backwards. Atomic adds would make the
// order in which repeated indices add up (and so the float result) depend on
// timing. Instead both backwards sort: each contribution gets a destination
// key, a stable radix sort (cub::DeviceRadixSort::SortPairs) groups equal
// keys while keeping their original order, and the contributions of a run of
// equal keys are added in that order onto the destination's old value
// (index_add's: 0). That is the CPU's order exactly, so the results match the
// CPU bit for bit as well as being reproducible. Sorting costs a few passes
// over the keys, small next to moving the values.
//  - index_add sorts the k row indices once (keys = idx[j], values = j), so
//    embedding backward sorts the token ids, not every element. A thread per
//    (outer, piece, inner) sums a piece of a run (at most kIndexAddPiece
//    entries: tensor/backend.h states the cut), then a thread per element
//    of the table writes its row's pieces added up (0 for a row no index
//    names: the table needs no zero fill before).
//  - scatter_add has a different index per element, so it sorts every
//    element by its destination offset.
#include <climits>

#include <cub/device/device_radix_sort.cuh>

#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

namespace {

// ---- forward: moving words ---------------------------------------------------------

// The widest word (16, 8, 4, 2 or 1 bytes) that divides `bytes` and the
// alignment of every pointer: index_select moves whole rows in these.
size_t widest_word(size_t bytes, const void* a, const void* b) {
  const uintptr_t all = bytes | reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b);
  for (size_t w = 16; w > 1; w /= 2)
    if (all % w == 0) return w;
  return 1;
}

// out [outer, k, inner] = x[:, idx, :], inner counted in Words. One thread
// per output word, grid-stride; consecutive threads copy consecutive words of
// a row (coalesced on both sides).
template <class Word>
__global__ void index_select_kernel(Word* out, const Word* x, const int64_t* idx, int64_t outer,
                                    int64_t n, int64_t k, int64_t inner, int* index_error) {
  const int64_t total = outer * k * inner;
  for (int64_t e = global_thread_index(); e < total; e += grid_thread_count()) {
    const int64_t i = e % inner, row = e / inner, j = row % k, o = row / k;
    const int64_t id = idx[j];
    if (id < 0 || id >= n) {
      report_index_error(index_error, IndexErrorSite::index_select);
      out[e] = Word{};
      continue;
    }
    out[e] = x[(o * n + id) * inner + i];
  }
}

template <class Word>
void launch_index_select(const Tensor& out, const Tensor& x, const Tensor& idx, int64_t inner_words) {
  DeviceContext& ctx = context(out);
  const int64_t outer = out.size(0), k = out.size(1), n = x.size(1);
  ORDO_LAUNCH(index_select_kernel, grid_for(outer * k * inner_words, kThreads, ctx), kThreads, 0, ctx.stream,
              static_cast<Word*>(out.raw_data()), static_cast<const Word*>(x.raw_data()), idx.data<int64_t>(),
              outer, n, k, inner_words, ctx.index_error);
  ORDO_CUDA_CHECK_LAUNCH();
}

// embedding_sum's lookups: term t is row ids[t][b * batch[t] + l] of table[t].
struct EmbeddingTerms {
  const float* table[kEmbeddingSumTerms];
  const int64_t* ids[kEmbeddingSumTerms];
  int64_t rows[kEmbeddingSumTerms], batch[kEmbeddingSumTerms];  // batch: L, or 0 (every row alike)
  int count;
};

// out[b, l, c] = the terms' elements added in order, one thread per element.
__global__ void embedding_sum_kernel(float* out, EmbeddingTerms terms, int64_t rows, int64_t length, int64_t d,
                                     int* index_error) {
  for (int64_t e = global_thread_index(); e < rows * d; e += grid_thread_count()) {
    const int64_t c = e % d, row = e / d, b = row / length, l = row % length;
    float sum = 0.0f;
    for (int t = 0; t < terms.count; ++t) {
      const int64_t id = terms.ids[t][b * terms.batch[t] + l];
      if (id < 0 || id >= terms.rows[t]) {
        report_index_error(index_error, IndexErrorSite::embedding_sum);
        sum = 0.0f;
        break;
      }
      const float x = terms.table[t][id * d + c];
      sum = t == 0 ? x : sum + x;  // the first term as it is (0 + -0 would be +0)
    }
    out[e] = sum;
  }
}

// out[o, j, i] = x[o, idx[o, j, i], i], one thread per element.
template <class Word>
__global__ void gather_kernel(Word* out, const Word* x, const int64_t* idx, int64_t outer, int64_t n,
                              int64_t k, int64_t inner, int* index_error) {
  const int64_t total = outer * k * inner;
  for (int64_t e = global_thread_index(); e < total; e += grid_thread_count()) {
    const int64_t i = e % inner, o = e / (k * inner);
    const int64_t id = idx[e];
    if (id < 0 || id >= n) {
      report_index_error(index_error, IndexErrorSite::gather);
      out[e] = Word{};
      continue;
    }
    out[e] = x[(o * n + id) * inner + i];
  }
}

template <class Word>
void launch_gather(const Tensor& out, const Tensor& x, const Tensor& idx) {
  DeviceContext& ctx = context(out);
  const int64_t outer = out.size(0), k = out.size(1), inner = out.size(2), n = x.size(1);
  ORDO_LAUNCH(gather_kernel, grid_for(out.numel(), kThreads, ctx), kThreads, 0, ctx.stream,
              static_cast<Word*>(out.raw_data()), static_cast<const Word*>(x.raw_data()), idx.data<int64_t>(),
              outer, n, k, inner, ctx.index_error);
  ORDO_CUDA_CHECK_LAUNCH();
}

template <class Fn>
void dispatch_word(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 16: return fn(int4{});
    case 8: return fn(uint64_t{});
    case 4: return fn(uint32_t{});
    case 2: return fn(uint16_t{});
    default: return fn(uint8_t{});
  }
}

// ---- backward: sort by destination, add each run in order ------------------------------

// Keys of the contributions, the sentinel `invalid_key` (sorted last, never
// applied) for an out-of-range index; values = the contribution's position.
// index_add: one key per index-list entry j, the destination row idx[j].
__global__ void row_keys_kernel(uint64_t* keys, int64_t* positions, const int64_t* idx, int64_t k,
                                int64_t n, int* index_error) {
  for (int64_t j = global_thread_index(); j < k; j += grid_thread_count()) {
    const int64_t id = idx[j];
    const bool ok = id >= 0 && id < n;
    if (!ok) report_index_error(index_error, IndexErrorSite::index_add);
    keys[j] = ok ? static_cast<uint64_t>(id) : static_cast<uint64_t>(n);
    positions[j] = j;
  }
}

// scatter_add: one key per element e = (o, j, i) of g, its destination offset in gx.
__global__ void element_keys_kernel(uint64_t* keys, int64_t* positions, const int64_t* idx,
                                     int64_t outer, int64_t n, int64_t k, int64_t inner,
                                     int* index_error) {
  const int64_t total = outer * k * inner, invalid = outer * n * inner;
  for (int64_t e = global_thread_index(); e < total; e += grid_thread_count()) {
    const int64_t i = e % inner, o = e / (k * inner), id = idx[e];
    const bool ok = id >= 0 && id < n;
    if (!ok) report_index_error(index_error, IndexErrorSite::scatter_add);
    keys[e] = static_cast<uint64_t>(ok ? (o * n + id) * inner + i : invalid);
    positions[e] = e;
  }
}

// The first position of the sorted keys[lo, hi) whose key is at least `key`
// (hi when there is none): a binary search.
__device__ __forceinline__ int64_t first_at_least(const uint64_t* keys, int64_t lo, int64_t hi, uint64_t key) {
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// The end of the run of keys equal to keys[p] in the sorted keys[0, count):
// a binary search, so the adding loop below has a known trip count and its
// loads can be issued ahead of the adds (a long run, such as a padding token
// repeated thousands of times, is otherwise one load latency per element).
// (No key is 2^64 - 1: the out-of-range sentinels are the destinations' count.)
__device__ __forceinline__ int64_t run_end(const uint64_t* keys, int64_t p, int64_t count) {
  return first_at_least(keys, p + 1, count, keys[p] + 1);
}

// The end of the piece of index_add's sum that starts at sorted position p
// (tensor/backend.h, kIndexAddPiece): the run's end or the next multiple of
// the piece length, whichever comes first.
__device__ __forceinline__ int64_t piece_end(const uint64_t* keys, int64_t p, int64_t count) {
  const int64_t cut = (p / kIndexAddPiece + 1) * kIndexAddPiece;
  return run_end(keys, p, cut < count ? cut : count);
}

// index_add after sorting, first pass: one thread per (o, p, i) with p a
// sorted position; the thread at the first p of a piece (a run's start, or a
// multiple of kIndexAddPiece inside a run) sums the piece's g[o, positions[q],
// i] in order into pieces[o, p, i].
__global__ void sum_row_pieces_kernel(float* pieces, const float* g, const uint64_t* rows_sorted,
                                      const int64_t* positions, int64_t outer, int64_t n, int64_t k,
                                      int64_t inner) {
  const int64_t total = outer * k * inner;
  for (int64_t e = global_thread_index(); e < total; e += grid_thread_count()) {
    const int64_t i = e % inner, p = (e / inner) % k, o = e / (k * inner);
    const uint64_t row = rows_sorted[p];
    if (row == static_cast<uint64_t>(n) || (p > 0 && rows_sorted[p - 1] == row && p % kIndexAddPiece != 0)) continue;
    const int64_t end = piece_end(rows_sorted, p, k);
    const float* from = g + o * k * inner + i;
    float acc = from[positions[p] * inner];
#pragma unroll 4
    for (int64_t q = p + 1; q < end; ++q) acc += from[positions[q] * inner];
    pieces[e] = acc;
  }
}

// Second pass: one thread per element (o, r, i) of gx writes row r's pieces
// added in order (0 where no entry names r), so gx needs no zero fill first and
// its old contents are never read. The run of r starts at the first sorted key
// not below r (the same search for the row's inner threads). Row skip_row (an
// embedding's padding row, when >= 0) is written 0.
__global__ void write_row_sums_kernel(float* gx, const float* pieces, const uint64_t* rows_sorted, int64_t outer,
                                      int64_t n, int64_t k, int64_t inner, int64_t skip_row, bool onto) {
  const int64_t total = outer * n * inner;
  for (int64_t e = global_thread_index(); e < total; e += grid_thread_count()) {
    const int64_t i = e % inner, o = e / (n * inner);
    const uint64_t row = static_cast<uint64_t>((e / inner) % n);
    const int64_t start = first_at_least(rows_sorted, 0, k, row);
    float acc = onto ? gx[e] : 0.0f;
    if (start < k && rows_sorted[start] == row && static_cast<int64_t>(row) != skip_row) {
      const int64_t end = run_end(rows_sorted, start, k);
      for (int64_t q = start; q < end; q = (q / kIndexAddPiece + 1) * kIndexAddPiece)
        acc += pieces[(o * k + q) * inner + i];
    }
    gx[e] = acc;
  }
}

// scatter_add after sorting: one thread per sorted position; the first of a
// run of equal destinations adds the run's g values in order onto gx.
__global__ void add_element_runs_kernel(float* gx, const float* g, const uint64_t* dst_sorted,
                                        const int64_t* positions, int64_t total, uint64_t invalid) {
  for (int64_t p = global_thread_index(); p < total; p += grid_thread_count()) {
    const uint64_t dst = dst_sorted[p];
    if (dst == invalid || (p > 0 && dst_sorted[p - 1] == dst)) continue;
    const int64_t end = run_end(dst_sorted, p, total);
    float acc = gx[dst];
#pragma unroll 4
    for (int64_t q = p; q < end; ++q) acc += g[positions[q]];
    gx[dst] = acc;
  }
}

// Stable sort of `count` (key, position) pairs by key, keys in [0, max_key];
// only the bits that can be set are sorted. Returns the sorted arrays, which
// live in `storage` (keep it alive until the kernels reading them are issued).
struct SortedPairs {
  const uint64_t* keys;
  const int64_t* positions;
};

// make_keys(keys, positions) launches the kernel that fills the unsorted arrays.
template <class MakeKeys>
SortedPairs sort_pairs(DeviceContext& ctx, Device device, Tensor& storage, int64_t count,
                       uint64_t max_key, MakeKeys make_keys) {
  ORDO_CHECK(count <= INT_MAX, "index backward on CUDA: ", count,
             " index entries exceed the 2^31 - 1 the sort takes");
  int end_bit = 1;
  while (end_bit < 64 && (max_key >> end_bit) != 0) ++end_bit;
  const int items = static_cast<int>(count);
  size_t temp_bytes = 0;
  ORDO_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, static_cast<const uint64_t*>(nullptr),
                                                  static_cast<uint64_t*>(nullptr),
                                                  static_cast<const int64_t*>(nullptr),
                                                  static_cast<int64_t*>(nullptr), items, 0, end_bit,
                                                  ctx.stream));
  // One allocation: keys in, keys out, positions in, positions out, cub's temp.
  const size_t array_bytes = (static_cast<size_t>(count) * 8 + 255) / 256 * 256;
  storage = workspace(device, 4 * array_bytes + temp_bytes);
  char* base = static_cast<char*>(storage.raw_data());
  auto* keys_in = reinterpret_cast<uint64_t*>(base);
  auto* keys_out = reinterpret_cast<uint64_t*>(base + array_bytes);
  auto* positions_in = reinterpret_cast<int64_t*>(base + 2 * array_bytes);
  auto* positions_out = reinterpret_cast<int64_t*>(base + 3 * array_bytes);
  make_keys(keys_in, positions_in);
  before_launch(ctx.stream);
  ORDO_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(base + 4 * array_bytes, temp_bytes, keys_in, keys_out,
                                                  positions_in, positions_out, items, 0, end_bit,
                                                  ctx.stream));
  after_sort("cub radix sort (index)", ctx.stream);
  return {keys_out, positions_out};
}

}  // namespace

void index_select(const Tensor& out, const Tensor& x, const Tensor& idx) {
  if (out.numel() == 0) return;
  const size_t row_bytes = static_cast<size_t>(out.size(2)) * dtype_size(x.dtype());
  const size_t word = widest_word(row_bytes, out.raw_data(), x.raw_data());
  dispatch_word(word, [&](auto tag) {
    launch_index_select<decltype(tag)>(out, x, idx, static_cast<int64_t>(row_bytes / word));
  });
}

void embedding_sum(const Tensor& out, const std::vector<Tensor>& tables, const std::vector<Tensor>& ids) {
  require_f32(out.dtype(), "embedding_sum");
  if (out.numel() == 0) return;
  const int64_t L = out.size(1), d = out.size(2), rows = out.size(0) * L;
  EmbeddingTerms terms{};
  terms.count = static_cast<int>(tables.size());
  for (int t = 0; t < terms.count; ++t) {
    terms.table[t] = tables[t].data<float>();
    terms.ids[t] = ids[t].data<int64_t>();
    terms.rows[t] = tables[t].size(0);
    terms.batch[t] = ids[t].size(0) == 1 ? 0 : L;
  }
  DeviceContext& ctx = context(out);
  ORDO_LAUNCH(embedding_sum_kernel, grid_for(rows * d, kThreads, ctx), kThreads, 0, ctx.stream, out.data<float>(),
              terms, rows, L, d, ctx.index_error);
  ORDO_CUDA_CHECK_LAUNCH();
}

void gather(const Tensor& out, const Tensor& x, const Tensor& idx) {
  if (out.numel() == 0) return;
  dispatch_word(dtype_size(x.dtype()), [&](auto tag) { launch_gather<decltype(tag)>(out, x, idx); });
}

void index_add(const Tensor& gx, const Tensor& idx, const Tensor& g, int64_t skip_row, bool onto) {
  require_f32(gx.dtype(), "index_add");
  const int64_t outer = gx.size(0), n = gx.size(1), inner = gx.size(2), k = g.size(1);
  if (gx.numel() == 0 || (k == 0 && onto)) return;  // no entries onto gx: gx as it is
  DeviceContext& ctx = context(gx);
  if (k == 0) {  // no entries: every row is 0
    ORDO_LAUNCH(write_row_sums_kernel, grid_for(gx.numel(), kThreads, ctx), kThreads, 0, ctx.stream,
                gx.data<float>(), static_cast<const float*>(nullptr), static_cast<const uint64_t*>(nullptr), outer,
                n, int64_t{0}, inner, skip_row, false);
    ORDO_CUDA_CHECK_LAUNCH();
    return;
  }
  Tensor storage;
  SortedPairs sorted = sort_pairs(ctx, gx.device(), storage, k, static_cast<uint64_t>(n),
                                  [&](uint64_t* keys, int64_t* positions) {
    ORDO_LAUNCH(row_keys_kernel, grid_for(k, kThreads, ctx), kThreads, 0, ctx.stream, keys, positions,
                idx.data<int64_t>(), k, n, ctx.index_error);
    ORDO_CUDA_CHECK_LAUNCH();
  });
  const int64_t total = outer * k * inner;
  // Only the pieces' first positions are written, and only they are read.
  const Tensor pieces = workspace(gx.device(), static_cast<size_t>(total) * sizeof(float));
  ORDO_LAUNCH(sum_row_pieces_kernel, grid_for(total, kThreads, ctx), kThreads, 0, ctx.stream,
              static_cast<float*>(pieces.raw_data()), g.data<float>(), sorted.keys, sorted.positions, outer, n, k,
              inner);
  ORDO_CUDA_CHECK_LAUNCH();
  ORDO_LAUNCH(write_row_sums_kernel, grid_for(gx.numel(), kThreads, ctx), kThreads, 0, ctx.stream,
              gx.data<float>(), static_cast<const float*>(pieces.raw_data()), sorted.keys, outer, n, k, inner,
              skip_row, onto);
  ORDO_CUDA_CHECK_LAUNCH();
}

void scatter_add(const Tensor& gx, const Tensor& idx, const Tensor& g) {
  require_f32(gx.dtype(), "scatter_add");
  const int64_t outer = gx.size(0), n = gx.size(1), inner = gx.size(2), k = g.size(1);
  const int64_t total = outer * k * inner;
  if (total == 0) return;
  DeviceContext& ctx = context(gx);
  const uint64_t invalid = static_cast<uint64_t>(outer * n * inner);
  Tensor storage;
  SortedPairs sorted = sort_pairs(ctx, gx.device(), storage, total, invalid,
                                  [&](uint64_t* keys, int64_t* positions) {
    ORDO_LAUNCH(element_keys_kernel, grid_for(total, kThreads, ctx), kThreads, 0, ctx.stream, keys, positions,
                idx.data<int64_t>(), outer, n, k, inner, ctx.index_error);
    ORDO_CUDA_CHECK_LAUNCH();
  });
  ORDO_LAUNCH(add_element_runs_kernel, grid_for(total, kThreads, ctx), kThreads, 0, ctx.stream,
              gx.data<float>(), g.data<float>(), sorted.keys, sorted.positions, total, invalid);
  ORDO_CUDA_CHECK_LAUNCH();
}

}  // namespace ordo::cuda
