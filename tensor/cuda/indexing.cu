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
//    embedding backward sorts the token ids, not every element; embedding_sum's
//    backward sorts its tables' ids together (RowSums: each table its own
//    range of keys), one sort and two kernels for all three; the fused
//    embeddings' front (embedding_layernorm) writes those keys in its
//    LayerNorm backward's launch instead of a keys kernel. A thread per
//    (outer, piece, inner) sums a piece of a run (at most kIndexAddPiece
//    entries: tensor/backend.h states the cut), then a thread per element
//    of the table writes its row's pieces added up (0 for a row no index
//    names: the table needs no zero fill before).
//  - scatter_add has a different index per element, so it sorts every
//    element by its destination offset.
#include <climits>

#include <cub/device/device_radix_sort.cuh>

#include "tensor/cuda/column_sums.cuh"
#include "tensor/cuda/cuda_common.cuh"
#include "tensor/cuda/rows.cuh"

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

// Element c of row (b, l): the terms' elements added in order (0 with an
// out-of-range id, reported).
__device__ __forceinline__ float embedding_sum_at(const EmbeddingTerms& terms, int64_t b, int64_t l, int64_t c,
                                                  int64_t d, int* index_error) {
  float sum = 0.0f;
  for (int t = 0; t < terms.count; ++t) {
    const int64_t id = terms.ids[t][b * terms.batch[t] + l];
    if (id < 0 || id >= terms.rows[t]) {
      report_index_error(index_error, IndexErrorSite::embedding_sum);
      return 0.0f;
    }
    const float x = terms.table[t][id * d + c];
    sum = t == 0 ? x : sum + x;  // the first term as it is (0 + -0 would be +0)
  }
  return sum;
}

// out[b, l, c] = the terms' elements added in order, one thread per element.
__global__ void embedding_sum_kernel(float* out, EmbeddingTerms terms, int64_t rows, int64_t length, int64_t d,
                                     int* index_error) {
  for (int64_t e = global_thread_index(); e < rows * d; e += grid_thread_count()) {
    const int64_t row = e / d;
    out[e] = embedding_sum_at(terms, row / length, row % length, e % d, d, index_error);
  }
}

// embedding_layernorm: per row, s = the terms' sum written in one pass that
// also sums it; then LayerNorm's row through dropout (rows.cuh).
template <bool kWarpPerRow>
__global__ void embedding_layernorm_kernel(float* y, uint16_t* y16, float* s, float* mean, float* rstd,
                                           EmbeddingTerms terms, const float* gamma, const float* beta, int64_t rows,
                                           int64_t length, int64_t d, double eps, DropoutMask dropout,
                                           int* index_error) {
  using Threads = RowThreads<kWarpPerRow>;
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
    float* sr = s + row * d;
    double sum = 0.0;
    for (int64_t j = Threads::lane(); j < d; j += Threads::width()) {
      sr[j] = embedding_sum_at(terms, row / length, row % length, j, d, index_error);
      sum += sr[j];
    }
    layernorm_row<Threads>(y + row * d, mean, rstd, row, sr, gamma, beta, d, eps, sum, y16 ? y16 + row * d : nullptr,
                           dropout);
  }
}

// embedding_sum's terms on the device; ids [B, L] or [1, L].
EmbeddingTerms embedding_terms(const std::vector<Tensor>& tables, const std::vector<Tensor>& ids, int64_t L) {
  EmbeddingTerms terms{};
  terms.count = static_cast<int>(tables.size());
  for (int t = 0; t < terms.count; ++t) {
    terms.table[t] = tables[t].data<float>();
    terms.ids[t] = ids[t].data<int64_t>();
    terms.rows[t] = tables[t].size(0);
    terms.batch[t] = ids[t].size(0) == 1 ? 0 : L;
  }
  return terms;
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

// The destination tables of one index_add pass, whose entries share g
// [outer, k, inner]: index_add's one table, or embedding_sum's backward's up to
// kEmbeddingSumTerms (word, token type, position), so that all of them take
// one sort and two kernels. Entry j < k of table t names row
// idx[t][(j / length) * batch[t] + j % length] (index_add: length = k,
// batch 0; embedding_sum: j = b L + l, batch L, or 0 for ids the batch shares).
// Keys: table t owns rows[t] + 1 of them from first_key[t], its last the
// sentinel of its out-of-range entries, so its k entries fill sorted
// positions [t k, (t + 1) k) and their order there is a sort of its own: the
// pieces are cut where tensor/backend.h cuts them, and each table gets the
// bits a separate index_add would give.
struct RowSums {
  float* gx[kEmbeddingSumTerms] = {};
  const int64_t* idx[kEmbeddingSumTerms] = {};
  int64_t rows[kEmbeddingSumTerms] = {}, batch[kEmbeddingSumTerms] = {}, skip_row[kEmbeddingSumTerms] = {};
  bool onto[kEmbeddingSumTerms] = {};
  uint64_t first_key[kEmbeddingSumTerms + 1] = {};     // [count]: one past the last key
  int64_t first_element[kEmbeddingSumTerms + 1] = {};  // table t's elements' place among all tables' (outer n_t inner each)
  int count = 0;
  int64_t length = 1;
  IndexErrorSite site = IndexErrorSite::index_add;

  __device__ int table_of_key(uint64_t key) const {
    int t = 0;
    while (t + 1 < count && key >= first_key[t + 1]) ++t;
    return t;
  }
  __device__ int table_of_element(int64_t e) const {
    int t = 0;
    while (t + 1 < count && e >= first_element[t + 1]) ++t;
    return t;
  }
};

// The key of entry e = (t, j): first_key[t] + its row, or table t's sentinel
// for an out-of-range row; its value the entry's place t k + j.
__device__ __forceinline__ void write_row_key(uint64_t* keys, int64_t* positions, const RowSums& s, int64_t k,
                                              int64_t e, int* index_error) {
  const int t = static_cast<int>(e / k);
  const int64_t j = e % k, id = s.idx[t][(j / s.length) * s.batch[t] + j % s.length];
  const bool ok = id >= 0 && id < s.rows[t];
  if (!ok) report_index_error(index_error, s.site);
  keys[e] = s.first_key[t] + static_cast<uint64_t>(ok ? id : s.rows[t]);
  positions[e] = e;
}

// One key per entry (t, j).
__global__ void row_keys_kernel(uint64_t* keys, int64_t* positions, RowSums s, int64_t k, int* index_error) {
  for (int64_t e = global_thread_index(); e < s.count * k; e += grid_thread_count())
    write_row_key(keys, positions, s, k, e, index_error);
}

// embedding_layernorm's backward, rows of d <= kWarpRowLimit: row r's gs =
// LayerNorm's gx of dropout's backward of gy, and its entries' sort keys
// (one lane a table: entry t k + r); the column sums gamma's and beta's. In
// the launch that fills the keys for add_row_sums' sort.
struct EmbeddingLayerNormBackward {
  static constexpr int kSums = 2;
  LayerNormParamSums norm;  // its x: s; its gy through the dropout mask
  float* gs;
  const float* gamma;
  uint64_t* keys;
  int64_t* positions;
  RowSums sums;
  int64_t entries;  // k, each table's: the batch's B L rows
  int* index_error;
  __device__ __forceinline__ void row(int64_t r) const {
    using Threads = RowThreads<true>;
    const int64_t n = norm.n;
    const float* xr = norm.x + r * n;
    const float* gr = norm.gy + r * n;
    const float m = norm.mean[r], rs = norm.rstd[r];
    const LayerNormRowMeans means = layernorm_backward_means<Threads>(xr, gr, m, rs, gamma, n, norm.dropout, r);
    const uint64_t stream = norm.dropout.on ? norm.dropout.stream() : 0;
    for (int64_t j = Threads::lane(); j < n; j += Threads::width()) {
      const float xhat = (xr[j] - m) * rs;
      const float g = norm.dropout.apply(gr[j], r * n + j, stream);
      gs[r * n + j] = rs * (g * gamma[j] - means.a - xhat * means.c);
    }
    if (Threads::lane() < sums.count) write_row_key(keys, positions, sums, entries, Threads::lane() * entries + r, index_error);
  }
  __device__ __forceinline__ void operator()(int64_t row, int64_t column, double (&s)[2]) const {
    norm.add(row, column, s[0], s[1]);
  }
};

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
template <class Key>
__device__ __forceinline__ int64_t first_at_least(const Key* keys, int64_t lo, int64_t hi, Key key) {
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
// (No key is 2^64 - 1: keys number destinations and sentinels, far fewer.)
__device__ __forceinline__ int64_t run_end(const uint64_t* keys, int64_t p, int64_t count) {
  return first_at_least(keys, p + 1, count, keys[p] + 1);
}

// The end of the piece of a table's sum that starts at sorted position p:
// the run's end or the table's next multiple of the piece length (counted
// from its first sorted position `first`), whichever comes first.
__device__ __forceinline__ int64_t piece_end(const uint64_t* keys, int64_t p, int64_t first, int64_t end) {
  const int64_t cut = first + ((p - first) / kIndexAddPiece + 1) * kIndexAddPiece;
  return run_end(keys, p, cut < end ? cut : end);
}

// First pass: one thread per (o, p, i) with p a sorted position of all the
// tables' entries (K = count k); the thread at the first p of a piece (a
// run's start, or a multiple of kIndexAddPiece inside a run, counted in its
// table) sums the piece's g[o, j, i] in order into pieces[o, p, i].
__global__ void sum_row_pieces_kernel(float* pieces, const float* g, const uint64_t* rows_sorted,
                                      const int64_t* positions, RowSums s, int64_t outer, int64_t k,
                                      int64_t inner) {
  const int64_t K = s.count * k, total = outer * K * inner;
  for (int64_t e = global_thread_index(); e < total; e += grid_thread_count()) {
    const int64_t i = e % inner, p = (e / inner) % K, o = e / (K * inner);
    const uint64_t row = rows_sorted[p];
    const int t = s.table_of_key(row);
    const int64_t first = t * k;
    if (row == s.first_key[t] + static_cast<uint64_t>(s.rows[t]) ||
        (p > first && rows_sorted[p - 1] == row && (p - first) % kIndexAddPiece != 0))
      continue;
    const int64_t end = piece_end(rows_sorted, p, first, first + k);
    const float* from = g + o * k * inner + i;
    float acc = from[(positions[p] % k) * inner];
#pragma unroll 4
    for (int64_t q = p + 1; q < end; ++q) acc += from[(positions[q] % k) * inner];
    pieces[e] = acc;
  }
}

// Second pass: one thread per element (o, r, i) of every table writes row
// r's pieces added in order (0 where no entry names r), so no table needs a
// zero fill first and its old contents are never read (unless onto). Row r's
// run starts at the first sorted key of its table not below its key (the same
// search for the row's inner threads). Row skip_row[t] (an embedding's
// padding row, when >= 0) is written 0, or keeps its value with onto.
__global__ void write_row_sums_kernel(RowSums s, const float* pieces, const uint64_t* rows_sorted, int64_t k,
                                      int64_t inner) {
  const int64_t K = s.count * k;
  for (int64_t e = global_thread_index(); e < s.first_element[s.count]; e += grid_thread_count()) {
    const int t = s.table_of_element(e);
    const int64_t n = s.rows[t], here = e - s.first_element[t];
    const int64_t i = here % inner, o = here / (n * inner), r = (here / inner) % n;
    const uint64_t key = s.first_key[t] + static_cast<uint64_t>(r);
    const int64_t first = t * k, last = first + k;
    const int64_t start = first_at_least(rows_sorted, first, last, key);
    float acc = s.onto[t] ? s.gx[t][here] : 0.0f;
    if (start < last && rows_sorted[start] == key && r != s.skip_row[t]) {
      const int64_t end = run_end(rows_sorted, start, last);
      for (int64_t q = start; q < end; q = first + ((q - first) / kIndexAddPiece + 1) * kIndexAddPiece)
        acc += pieces[(o * K + q) * inner + i];
    }
    s.gx[t][here] = acc;
  }
}

// select_rows: out[j, c] = x[rows[j], c] and its bf16 rounding, one thread
// per element (0 for an out-of-range row, flagged as index_select's).
__global__ void select_rows_kernel(float* out, uint16_t* out16, const float* x, const int64_t* rows, int64_t k,
                                   int64_t n, int64_t d, int* index_error) {
  for (int64_t e = global_thread_index(); e < k * d; e += grid_thread_count()) {
    const int64_t row = rows[e / d];
    const bool ok = row >= 0 && row < n;
    if (!ok) report_index_error(index_error, IndexErrorSite::index_select);
    const float value = ok ? x[row * d + e % d] : 0.0f;
    out[e] = value;
    out16[e] = bf16_bits(value);
  }
}

// select_rows' backward: one thread per element (r, c) of gx finds row r in
// the ascending rows (a binary search) and writes its g element, or 0. The
// threads of the first k rows' first columns check the list (in range,
// ascending, distinct) and flag it otherwise.
__global__ void scatter_rows_kernel(float* gx, const float* g, const int64_t* rows, int64_t n, int64_t k, int64_t d,
                                    int* index_error) {
  for (int64_t e = global_thread_index(); e < n * d; e += grid_thread_count()) {
    const int64_t c = e % d, r = e / d;
    if (c == 0 && r < k && (rows[r] < 0 || rows[r] >= n || (r > 0 && rows[r - 1] >= rows[r])))
      report_index_error(index_error, IndexErrorSite::scatter_rows);
    const int64_t j = first_at_least(rows, 0, k, r);
    gx[e] = j < k && rows[j] == r ? g[j * d + c] : 0.0f;
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
  DeviceContext& ctx = context(out);
  ORDO_LAUNCH(embedding_sum_kernel, grid_for(rows * d, kThreads, ctx), kThreads, 0, ctx.stream, out.data<float>(),
              embedding_terms(tables, ids, L), rows, L, d, ctx.index_error);
  ORDO_CUDA_CHECK_LAUNCH();
}

void gather(const Tensor& out, const Tensor& x, const Tensor& idx) {
  if (out.numel() == 0) return;
  dispatch_word(dtype_size(x.dtype()), [&](auto tag) { launch_gather<decltype(tag)>(out, x, idx); });
}

namespace {

// Table t of a RowSums: gx [outer, n, inner] (contiguous f32), its entries'
// rows idx (see RowSums), skip_row and onto as index_add's.
void add_table(RowSums& s, const Tensor& gx, const Tensor& idx, int64_t batch, int64_t skip_row, bool onto) {
  const int t = s.count++;
  s.gx[t] = gx.data<float>();
  s.idx[t] = idx.data<int64_t>();
  s.rows[t] = gx.size(1);
  s.batch[t] = batch;
  s.skip_row[t] = skip_row;
  s.onto[t] = onto;
  s.first_key[t + 1] = s.first_key[t] + static_cast<uint64_t>(s.rows[t]) + 1;
  s.first_element[t + 1] = s.first_element[t] + gx.numel();
}

// Every table of s gets its entries' g [outer, k, inner] rows added (index_add's
// sum, kernels.inc): one sort of all the tables' keys, the pieces, the rows.
// make_keys(keys, positions) launches the kernel that writes the keys
// (write_row_key's, for every entry).
template <class MakeKeys>
void add_row_sums(DeviceContext& ctx, Device device, const RowSums& s, const float* g, int64_t outer, int64_t k,
                  int64_t inner, MakeKeys make_keys) {
  if (s.first_element[s.count] == 0) return;
  if (k == 0) {  // no entries: every row is 0, or as it is
    ORDO_LAUNCH(write_row_sums_kernel, grid_for(s.first_element[s.count], kThreads, ctx), kThreads, 0, ctx.stream,
                s, static_cast<const float*>(nullptr), static_cast<const uint64_t*>(nullptr), k, inner);
    ORDO_CUDA_CHECK_LAUNCH();
    return;
  }
  const int64_t K = s.count * k;
  Tensor storage;
  SortedPairs sorted = sort_pairs(ctx, device, storage, K, s.first_key[s.count] - 1, make_keys);
  const int64_t total = outer * K * inner;
  // Only the pieces' first positions are written, and only they are read.
  const Tensor pieces = workspace(device, static_cast<size_t>(total) * sizeof(float));
  ORDO_LAUNCH(sum_row_pieces_kernel, grid_for(total, kThreads, ctx), kThreads, 0, ctx.stream,
              static_cast<float*>(pieces.raw_data()), g, sorted.keys, sorted.positions, s, outer, k, inner);
  ORDO_CUDA_CHECK_LAUNCH();
  ORDO_LAUNCH(write_row_sums_kernel, grid_for(s.first_element[s.count], kThreads, ctx), kThreads, 0, ctx.stream, s,
              static_cast<const float*>(pieces.raw_data()), sorted.keys, k, inner);
  ORDO_CUDA_CHECK_LAUNCH();
}

// The keys by their own kernel.
void add_row_sums(DeviceContext& ctx, Device device, const RowSums& s, const float* g, int64_t outer, int64_t k,
                  int64_t inner) {
  add_row_sums(ctx, device, s, g, outer, k, inner, [&](uint64_t* keys, int64_t* positions) {
    ORDO_LAUNCH(row_keys_kernel, grid_for(s.count * k, kThreads, ctx), kThreads, 0, ctx.stream, keys, positions, s, k,
                ctx.index_error);
    ORDO_CUDA_CHECK_LAUNCH();
  });
}

// embedding_sum_backward's tables as one RowSums over gout's B L rows.
RowSums embedding_row_sums(const std::vector<Tensor>& grads, const std::vector<Tensor>& ids,
                           const std::vector<int64_t>& skip_rows, const std::vector<bool>& onto, int64_t L) {
  RowSums s;
  s.length = L > 0 ? L : 1;
  s.site = IndexErrorSite::embedding_sum;
  for (size_t t = 0; t < grads.size(); ++t)
    add_table(s, grads[t].reshape({1, grads[t].size(0), grads[t].size(1)}), ids[t], ids[t].size(0) == 1 ? 0 : L,
              skip_rows[t], onto[t]);
  return s;
}

}  // namespace

void index_add(const Tensor& gx, const Tensor& idx, const Tensor& g, int64_t skip_row, bool onto) {
  require_f32(gx.dtype(), "index_add");
  const int64_t k = g.size(1);
  if (k == 0 && onto) return;  // no entries onto gx: gx as it is
  RowSums s;
  s.length = k > 0 ? k : 1;
  add_table(s, gx, idx, 0, skip_row, onto);
  add_row_sums(context(gx), gx.device(), s, g.data<float>(), gx.size(0), k, gx.size(2));
}

void select_rows(const Tensor& out, const Tensor& out_operand, const Tensor& x, const Tensor& rows) {
  require_f32(x.dtype(), "select_rows");
  if (out.numel() == 0) return;
  DeviceContext& ctx = context(out);
  ORDO_LAUNCH(select_rows_kernel, grid_for(out.numel(), kThreads, ctx), kThreads, 0, ctx.stream, out.data<float>(),
              static_cast<uint16_t*>(out_operand.raw_data()), x.data<float>(), rows.data<int64_t>(), out.size(0),
              x.size(0), x.size(1), ctx.index_error);
  ORDO_CUDA_CHECK_LAUNCH();
}

void scatter_rows(const Tensor& gx, const Tensor& rows, const Tensor& g) {
  require_f32(gx.dtype(), "scatter_rows");
  if (gx.numel() == 0) return;
  DeviceContext& ctx = context(gx);
  ORDO_LAUNCH(scatter_rows_kernel, grid_for(gx.numel(), kThreads, ctx), kThreads, 0, ctx.stream, gx.data<float>(),
              g.data<float>(), rows.data<int64_t>(), gx.size(0), rows.numel(), gx.size(1), ctx.index_error);
  ORDO_CUDA_CHECK_LAUNCH();
}

void embedding_sum_backward(const std::vector<Tensor>& grads, const Tensor& gout, const std::vector<Tensor>& ids,
                            const std::vector<int64_t>& skip_rows, const std::vector<bool>& onto) {
  require_f32(gout.dtype(), "embedding_sum_backward");
  if (grads.empty()) return;
  const int64_t L = gout.size(1);
  add_row_sums(context(gout), gout.device(), embedding_row_sums(grads, ids, skip_rows, onto, L), gout.data<float>(), 1,
               gout.size(0) * L, gout.size(2));
}

void embedding_layernorm(const Tensor& y, const Tensor& s, const Tensor& mean, const Tensor& rstd,
                         const std::vector<Tensor>& tables, const std::vector<Tensor>& ids, const Tensor& gamma,
                         const Tensor& beta, double eps, double p, const PhiloxStream& stream, const Tensor& y16) {
  require_f32(s.dtype(), "embedding_layernorm");
  const int64_t L = s.size(1), d = s.size(2), rows = s.size(0) * L;
  if (d == 0) return;
  DeviceContext& ctx = context(s);
  const EmbeddingTerms terms = embedding_terms(tables, ids, L);
  const DropoutMask dropout = dropout_mask(p, stream);
  uint16_t* y16_data = y16.defined() ? static_cast<uint16_t*>(y16.raw_data()) : nullptr;
  launch_rows(rows, d, ctx, [&](bool warp_per_row, unsigned grid, int threads) {
    if (warp_per_row) {
      ORDO_LAUNCH(embedding_layernorm_kernel<true>, grid, threads, 0, ctx.stream, y.data<float>(), y16_data,
                  s.data<float>(), mean.data<float>(), rstd.data<float>(), terms, gamma.data<float>(),
                  beta.data<float>(), rows, L, d, eps, dropout, ctx.index_error);
    } else {
      ORDO_LAUNCH(embedding_layernorm_kernel<false>, grid, threads, 0, ctx.stream, y.data<float>(), y16_data,
                  s.data<float>(), mean.data<float>(), rstd.data<float>(), terms, gamma.data<float>(),
                  beta.data<float>(), rows, L, d, eps, dropout, ctx.index_error);
    }
  });
}

void embedding_layernorm_backward(const std::vector<Tensor>& grads, const Tensor& ggamma, const Tensor& gbeta,
                                  const Tensor& gs, const Tensor& gy, const Tensor& s, const Tensor& mean,
                                  const Tensor& rstd, const Tensor& gamma, double p, const PhiloxStream& stream,
                                  const std::vector<Tensor>& ids, const std::vector<int64_t>& skip_rows,
                                  const std::vector<bool>& onto) {
  require_f32(gy.dtype(), "embedding_layernorm_backward");
  const int64_t L = s.size(1), d = s.size(2), rows = s.size(0) * L;
  if (d == 0) return;
  if (d > kWarpRowLimit || rows == 0 || grads.empty()) {  // the unfused kernels, one after another
    Tensor g = gy;
    if (p > 0) {
      g = Tensor::empty(gy.shape(), gy.dtype(), gy.device());
      dropout(g, gy, p, stream);
    }
    layernorm_backward(gs, ggamma, gbeta, g, s, mean, rstd, gamma);
    embedding_sum_backward(grads, gs, ids, skip_rows, onto);
    return;
  }
  DeviceContext& ctx = context(s);
  const RowSums sums = embedding_row_sums(grads, ids, skip_rows, onto, L);
  LayerNormParamSums norm{gy.data<float>(), s.data<float>(), mean.data<float>(), rstd.data<float>(), d};
  norm.dropout = dropout_mask(p, stream);
  const ColumnOutputs outs{{ggamma.data<float>(), gbeta.data<float>(), nullptr}};
  // The rows' LayerNorm backward writes the sort's keys too: one launch for both.
  add_row_sums(ctx, s.device(), sums, gs.data<float>(), 1, rows, d, [&](uint64_t* keys, int64_t* positions) {
    rows_and_column_sums(s.device(), ctx, rows, d, outs,
                         EmbeddingLayerNormBackward{norm, gs.data<float>(), gamma.data<float>(), keys, positions, sums,
                                                    rows, ctx.index_error});
  });
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
