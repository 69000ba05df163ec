// Shared machinery of the CPU kernels: OpenMP loops and dtype dispatch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include "tensor/backend.h"
#include "tensor/indexer.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace ordo::cpu {

inline int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Calls body(begin, end) on consecutive ranges covering [0, n), in parallel
// when there is at least `grain` work per thread. Ranges are fixed by n and
// the thread count only (static schedule), so results are reproducible.
template <class Body>
void parallel_for(int64_t n, int64_t grain, Body body) {
  if (n <= 0) return;
  int64_t chunks = std::min<int64_t>(max_threads(), std::max<int64_t>(1, n / std::max<int64_t>(grain, 1)));
  if (chunks <= 1) {
    body(int64_t(0), n);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(static_cast<int>(chunks))
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    if (begin < end) body(begin, end);
  }
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// A contiguous 64-byte-aligned scratch buffer of `count` T (the matrix
// products' packed operands).
template <class T>
struct Buffer {
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data;
  explicit Buffer(int64_t count) {
    size_t bytes = static_cast<size_t>(round_up(std::max<int64_t>(count, 1) * sizeof(T), 64));
    data.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
    ORDO_CHECK(data != nullptr, "gemm: out of host memory for ", bytes, " bytes of packing buffer");
  }
  T* get() const { return data.get(); }
};

// Work sizes below which a loop stays on one thread (thread wake-up costs
// several microseconds; these keep each thread busy for longer than that).
constexpr int64_t kElementwiseGrain = 32768;
constexpr int64_t kRowGrain = 16;

// Walks the linear range [begin, end) of an indexer's shape one innermost run
// at a time: body(offsets, count, inner_strides) with count <= inner size.
template <int N, class Body>
void for_each_run(const Indexer<N>& ix, int64_t begin, int64_t end, Body body) {
  int64_t inner = ix.inner_size();
  int64_t inner_strides[N];
  for (int k = 0; k < N; ++k) inner_strides[k] = ix.inner_stride(k);
  int64_t linear = begin;
  while (linear < end) {
    int64_t offsets[N];
    ix.offsets(linear, offsets);
    int64_t count = std::min(end - linear, inner - linear % inner);
    body(offsets, count, inner_strides);
    linear += count;
  }
}

// Sums value(0) + ... + value(n-1) in eight interleaved lanes of Acc (value
// j into lane j mod 8, in order), combined in a fixed order at the end: the
// result depends on n and the values alone, never on threads. Blocks of 64
// values are first computed into a buffer, a loop GCC vectorises whatever
// value() is, then added to the eight lanes as one vector (the lanes written
// out element by element compiled to scalar adds: 2.5% of an evaluation at
// length 384 for a plain row sum); the same additions in the same order.
template <class Acc, class Value>
Acc lane_sum(int64_t n, Value value) {
  typedef Acc Lanes __attribute__((vector_size(8 * sizeof(Acc))));
  constexpr int kBlock = 64;
  Lanes acc = {};
  int64_t j = 0;
  for (; j + kBlock <= n; j += kBlock) {
    Acc block[kBlock];
    for (int i = 0; i < kBlock; ++i) block[i] = static_cast<Acc>(value(j + i));
    for (int i = 0; i < kBlock; i += 8) {
      Lanes v;
      std::memcpy(&v, block + i, sizeof(v));
      acc += v;
    }
  }
  Acc lane[8];
  std::memcpy(lane, &acc, sizeof(lane));
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) lane[k] += static_cast<Acc>(value(j + k));
  for (int k = 0; j < n; ++j, ++k) lane[k] += static_cast<Acc>(value(j));
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

template <class T>
T row_sum(const T* x, int64_t n) {
  return lane_sum<T>(n, [x](int64_t j) { return x[j]; });
}

// The maximum of a contiguous row, in eight lanes as lane_sum (element j to
// lane j mod 8; the lanes combined 0..7 at the end). NaN in the row gives NaN.
// Written on GCC's vector types: with `? :` on floats GCC will not turn the
// lanes into a vector maximum by itself (no -ffinite-math-only), and the
// scalar loop was 8% of an evaluation at length 384.
template <class T>
T row_max(const T* x, int64_t n) {
  typedef T Lanes __attribute__((vector_size(8 * sizeof(T))));
  const T lowest = -std::numeric_limits<T>::infinity();
  Lanes lane = {lowest, lowest, lowest, lowest, lowest, lowest, lowest, lowest};
  decltype(lane != lane) nan = {};  // all-ones in a lane that saw NaN
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    Lanes v;
    std::memcpy(&v, x + j, sizeof(v));
    nan |= v != v;
    lane = v > lane ? v : lane;
  }
  T l[8];
  std::memcpy(l, &lane, sizeof(l));
  bool any_nan = false;
  for (int k = 0; k < 8; ++k) any_nan |= nan[k] != 0;
  for (int k = 0; j < n; ++j, ++k) {
    any_nan |= x[j] != x[j];
    l[k] = x[j] > l[k] ? x[j] : l[k];
  }
  T m = l[0];
  for (int k = 1; k < 8; ++k) m = l[k] > m ? l[k] : m;
  return any_nan ? std::numeric_limits<T>::quiet_NaN() : m;
}

// n f32 values rounded to bf16 (nearest even) into out: a kernel's row or
// chunk, written while it is still in the cache.
inline void round_into_bf16(uint16_t* out, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = f32_to_bf16(x[i]);
}

// x (f32) rounded to bf16 into out (the same element count).
inline void round_to_bf16(const Tensor& out, const Tensor& x) {
  uint16_t* o = static_cast<uint16_t*>(out.raw_data());
  const float* xs = x.data<float>();
  parallel_for(x.numel(), kElementwiseGrain,
               [&](int64_t begin, int64_t end) { round_into_bf16(o + begin, xs + begin, end - begin); });
}

// out [n] = the sums over rows of x [rows, n], each column in row order, in f64.
// Threads take blocks of columns and walk the rows, so the inner loop reads
// a row's columns contiguously (vectorised) with each column's order kept.
// With `rounded` (f32 x), x's bf16 rounding is written there as it is read.
template <class T>
inline void column_sums(T* out, const T* x, int64_t rows, int64_t n, uint16_t* rounded = nullptr) {
  constexpr int64_t kBlock = 256;  // columns summed at once: their f64 partial sums stay in L1
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  parallel_for(blocks, 1, [&](int64_t first, int64_t last) {
    double sum[kBlock];
    for (int64_t block = first; block < last; ++block) {
      const int64_t j0 = block * kBlock, width = std::min(kBlock, n - j0);
      std::fill(sum, sum + width, 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = x + r * n + j0;
        for (int64_t j = 0; j < width; ++j) sum[j] += row[j];
        if constexpr (std::is_same_v<T, float>)
          if (rounded)
            round_into_bf16(rounded + r * n + j0, row, width);
      }
      for (int64_t j = 0; j < width; ++j) out[j0 + j] = static_cast<T>(sum[j]);
    }
  });
}

// Where a kernel whose output may be bf16 writes its f32 values: out itself,
// or (bf16 out) a scratch tensor that finish_rounded rounds into out — the
// values the f32 kernel computes, rounded once.
inline Tensor f32_target(const Tensor& out) {
  return out.dtype() == DType::bf16 ? Tensor::empty(out.shape(), DType::f32) : out;
}
inline void finish_rounded(const Tensor& out, const Tensor& target) {
  if (out.dtype() == DType::bf16) round_to_bf16(out, target);
}

// Calls fn(T{}) with T = float or double for an f32/f64 dtype.
template <class Fn>
void dispatch_float(DType dtype, const char* kernel, Fn&& fn) {
  switch (dtype) {
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    default: throw Error(detail::cat(kernel, ": dtype ", dtype_name(dtype), " is not supported (f32 or f64)"));
  }
}

// float, double or int64_t.
template <class Fn>
void dispatch_numeric(DType dtype, const char* kernel, Fn&& fn) {
  switch (dtype) {
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    case DType::i64: return fn(int64_t{});
    default: throw Error(detail::cat(kernel, ": dtype ", dtype_name(dtype), " is not supported (f32, f64 or i64)"));
  }
}

}  // namespace ordo::cpu
