// CUDA copy (any strides on both sides, casts between any two dtypes) and fill.
//
// Casts go through double, exactly as the CPU copy does (tensor/cpu/copy.cpp):
// double holds every value of every ordo dtype (i64 up to 2^53), so a cast
// rounds once, at the store. Between f32, bf16 and f16 float holds every
// value too, and the cast goes through float: the same single rounding.
// Narrowing to bf16 ports the CPU's bit-exact rounding; narrowing to f16 uses
// CUDA's round-to-nearest-even conversion, which gives the CPU's result for
// every non-NaN value (a NaN stays a NaN, possibly with another payload).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <type_traits>

#include "tensor/cuda/cuda_common.cuh"
#include "tensor/dispatch.h"
#include "tensor/elementwise_math.h"

namespace ordo::cuda {

namespace {

// A cast goes through the narrowest type that holds every value of both
// sides exactly: float between f32, bf16 and f16 (no conversion to double and
// back on the way), double otherwise.
template <class T>
constexpr bool kFloatFamily = std::is_same_v<T, float> || std::is_same_v<T, BF16> || std::is_same_v<T, F16>;
template <class D, class S>
using Wide = std::conditional_t<kFloatFamily<D> && kFloatFamily<S>, float, double>;

template <class W, class T>
__device__ __forceinline__ W load(const T* p) { return static_cast<W>(*p); }
template <class W>
__device__ __forceinline__ W load(const BF16* p) { return __bfloat162float(__ushort_as_bfloat16(p->bits)); }
template <class W>
__device__ __forceinline__ W load(const F16* p) { return __half2float(__ushort_as_half(p->bits)); }

template <class T, class W>
__device__ __forceinline__ void store(T* p, W v) {
  if constexpr (std::is_same_v<T, W>) {
    *p = v;
  } else {
    *p = math::cast_from_double<T>(static_cast<double>(v));
  }
}
template <class W>
__device__ __forceinline__ void store(BF16* p, W v) { p->bits = bf16_bits(static_cast<float>(v)); }
template <class W>
__device__ __forceinline__ void store(F16* p, W v) {
  p->bits = __half_as_ushort(__float2half_rn(static_cast<float>(v)));
}

// One element: bits moved as they are when both sides are the same word, else cast.
template <class D, class S>
__device__ __forceinline__ void copy_element(D* dst, const S* src) {
  if constexpr (std::is_same_v<D, S>) {
    *dst = *src;
  } else {
    store(dst, load<Wide<D, S>>(src));
  }
}

// The unsigned word of T's size: same-dtype copies and fills move these bits unconverted.
template <size_t N> struct WordOfSize;
template <> struct WordOfSize<1> { using type = uint8_t; };
template <> struct WordOfSize<2> { using type = uint16_t; };
template <> struct WordOfSize<4> { using type = uint32_t; };
template <> struct WordOfSize<8> { using type = uint64_t; };
template <class T>
using WordOf = typename WordOfSize<sizeof(T)>::type;

// dst[ix.offsets(i)[0]] = cast(src[ix.offsets(i)[1]]), one thread per element
// in a grid-stride loop. Same-dtype copies instantiate D = S = an unsigned
// word of the element's size, so they move bits without conversion.
// kNarrow: offsets computed with 32-bit division.
template <bool kNarrow, class D, class S>
__global__ void copy_kernel(D* dst, const S* src, Indexer<2> ix) {
  for (int64_t i = global_thread_index(); i < ix.numel; i += grid_thread_count()) {
    int64_t offsets[2];
    if constexpr (kNarrow) {
      offsets_u32(ix, static_cast<uint32_t>(i), offsets);
    } else {
      ix.offsets(i, offsets);
    }
    copy_element(dst + offsets[0], src + offsets[1]);
  }
}

// n elements of T starting at p (16-byte aligned), moved with 16-byte accesses.
template <class T, int n>
struct alignas(16) Chunk {
  static_assert(n * sizeof(T) % 16 == 0, "a chunk is whole 16-byte words");
  T v[n];
  __device__ __forceinline__ void load(const T* p) {
#pragma unroll
    for (int w = 0; w < static_cast<int>(n * sizeof(T) / 16); ++w)
      reinterpret_cast<int4*>(v)[w] = reinterpret_cast<const int4*>(p)[w];
  }
  __device__ __forceinline__ void store(T* p) const {
#pragma unroll
    for (int w = 0; w < static_cast<int>(n * sizeof(T) / 16); ++w)
      reinterpret_cast<int4*>(p)[w] = reinterpret_cast<const int4*>(v)[w];
  }
};

// Elements a thread of copy_rows_kernel moves: 16 bytes of the narrower side.
template <class D, class S>
constexpr int kChunk = static_cast<int>(16 / (sizeof(D) < sizeof(S) ? sizeof(D) : sizeof(S)));

// The copies of a training step (a cast to bf16, q/k/v out of the stacked
// product, heads merged and split) keep the innermost axis contiguous on both
// sides. Here a thread moves kChunk consecutive elements of one row: the
// row's offsets are computed once per chunk instead of once per element (the
// per-element division made copy_kernel a quarter of a base step on an H200,
// at a fifth of the bandwidth), and with kAligned (every row start 16-byte
// aligned on both sides) a whole chunk moves with 16-byte loads and stores.
// `rows` indexes the outer axes; rows.numel * chunks_per_row < 2^32.
template <bool kAligned, class D, class S>
__global__ void copy_rows_kernel(D* dst, const S* src, Indexer<2> rows, uint32_t inner,
                                 uint32_t chunks_per_row) {
  constexpr int n = kChunk<D, S>;
  const int64_t chunks = rows.numel * chunks_per_row;
  for (int64_t i = global_thread_index(); i < chunks; i += grid_thread_count()) {
    const auto c = static_cast<uint32_t>(i);
    const uint32_t first = c % chunks_per_row * n;
    int64_t offsets[2];
    offsets_u32(rows, c / chunks_per_row, offsets);
    D* d = dst + offsets[0] + first;
    const S* s = src + offsets[1] + first;
    if (kAligned && first + n <= inner) {
      Chunk<S, n> in;
      Chunk<D, n> out;
      in.load(s);
#pragma unroll
      for (int j = 0; j < n; ++j) copy_element(&out.v[j], &in.v[j]);
      out.store(d);
    } else {
      const uint32_t count = inner - first < static_cast<uint32_t>(n) ? inner - first : n;
      for (uint32_t j = 0; j < count; ++j) copy_element(d + j, s + j);
    }
  }
}

// Whether every row of `rows` (the outer axes) starts 16-byte aligned in operand k.
bool rows_aligned16(const Indexer<2>& rows, int k, const void* base, size_t element_size) {
  if (!aligned16(base)) return false;
  for (int d = 0; d < rows.ndim; ++d)
    if (rows.stride[k][d] * static_cast<int64_t>(element_size) % 16 != 0) return false;
  return true;
}

template <class D, class S>
void launch_copy(const Tensor& dst, const Tensor& src) {
  DeviceContext& ctx = context(dst);
  Indexer<2> ix = make_indexer<2>(dst.shape(), {&dst.strides(), &src.strides()});
  D* d = static_cast<D*>(dst.raw_data());
  const S* s = static_cast<const S*>(src.raw_data());
  if (ix.ndim > 0 && ix.inner_stride(0) == 1 && ix.inner_stride(1) == 1 && ix.numel <= kNarrowIndexLimit) {
    Indexer<2> rows = ix;  // the outer axes; the innermost is the chunks' loop
    rows.ndim -= 1;
    rows.numel = ix.numel / ix.inner_size();
    const auto inner = static_cast<uint32_t>(ix.inner_size());
    const uint32_t chunks_per_row = (inner + kChunk<D, S> - 1) / kChunk<D, S>;
    const unsigned grid = grid_for(rows.numel * chunks_per_row, kThreads, ctx);
    if (rows_aligned16(rows, 0, d, sizeof(D)) && rows_aligned16(rows, 1, s, sizeof(S))) {
      ORDO_LAUNCH(copy_rows_kernel<true>, grid, kThreads, 0, ctx.stream, d, s, rows, inner, chunks_per_row);
    } else {
      ORDO_LAUNCH(copy_rows_kernel<false>, grid, kThreads, 0, ctx.stream, d, s, rows, inner, chunks_per_row);
    }
    ORDO_CUDA_CHECK_LAUNCH();
    return;
  }
  const unsigned grid = grid_for(ix.numel, kThreads, ctx);
  if (ix.numel <= kNarrowIndexLimit) {
    ORDO_LAUNCH(copy_kernel<true>, grid, kThreads, 0, ctx.stream, d, s, ix);
  } else {
    ORDO_LAUNCH(copy_kernel<false>, grid, kThreads, 0, ctx.stream, d, s, ix);
  }
  ORDO_CUDA_CHECK_LAUNCH();
}

// Writes one word pattern over n words (a grid-stride loop).
template <class Word>
__global__ void fill_kernel(Word* out, int64_t n, Word pattern) {
  for (int64_t i = global_thread_index(); i < n; i += grid_thread_count()) out[i] = pattern;
}

template <class Word>
void launch_fill(const Tensor& out, Word pattern) {
  DeviceContext& ctx = context(out);
  const int64_t n = out.numel();
  ORDO_LAUNCH(fill_kernel, grid_for(n, kThreads, ctx), kThreads, 0, ctx.stream,
              static_cast<Word*>(out.raw_data()), n, pattern);
  ORDO_CUDA_CHECK_LAUNCH();
}

// The stored bits of `value` in dtype T, converted on the host exactly as the CPU fill does.
template <class T>
T host_value(double value) { return math::cast_from_double<T>(value); }
template <>
BF16 host_value<BF16>(double value) { return BF16{f32_to_bf16(static_cast<float>(value))}; }
template <>
F16 host_value<F16>(double value) { return F16{f32_to_f16(static_cast<float>(value))}; }

}  // namespace

void copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype()) {
    if (dst.is_contiguous() && src.is_contiguous()) {
      detail::copy_bytes(dst.raw_data(), dst.device(), src.raw_data(), src.device(),
                         static_cast<size_t>(dst.numel()) * dtype_size(dst.dtype()));
      return;
    }
    dispatch_any(dst.dtype(), [&](auto tag) {
      using Word = WordOf<decltype(tag)>;
      launch_copy<Word, Word>(dst, src);
    });
    return;
  }
  dispatch_any(dst.dtype(), [&](auto d) {
    dispatch_any(src.dtype(), [&](auto s) { launch_copy<decltype(d), decltype(s)>(dst, src); });
  });
}

void fill(const Tensor& out, double value) {
  if (out.numel() == 0) return;
  dispatch_any(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Word = WordOf<T>;
    const T stored = host_value<T>(value);
    Word pattern;
    std::memcpy(&pattern, &stored, sizeof(Word));
    if constexpr (sizeof(Word) == 1) {
      DeviceContext& ctx = context(out);
      ORDO_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), pattern, static_cast<size_t>(out.numel()),
                                      ctx.stream));
    } else {
      launch_fill(out, pattern);
    }
  });
}

// out's element e = (o, i, r) of [outer, n, inner]: g's (o, (i - start) /
// step, r) on the slice's indices, else zero bits; a thread an element,
// grid-stride.
template <class Word>
__global__ void pad_slice_kernel(Word* out, const Word* g, int64_t total, int64_t n, int64_t inner, int64_t count,
                                 int64_t start, int64_t step) {
  for (int64_t e = global_thread_index(); e < total; e += grid_thread_count()) {
    const int64_t r = e % inner, row = e / inner, i = row % n, o = row / n, from = i - start;
    const bool in_slice = from >= 0 && from % step == 0 && from / step < count;
    out[e] = in_slice ? g[(o * count + from / step) * inner + r] : Word{0};
  }
}

void pad_slice(const Tensor& out, const Tensor& g, int64_t outer, int64_t n, int64_t inner, int64_t start,
               int64_t step) {
  const int64_t total = out.numel();
  if (total == 0) return;
  DeviceContext& ctx = context(out);
  const int64_t count = g.numel() / (outer * inner);
  const unsigned grid = grid_for(total, kThreads, ctx);
  auto launch = [&](auto word) {
    using Word = decltype(word);
    ORDO_LAUNCH(pad_slice_kernel<Word>, grid, kThreads, 0, ctx.stream, static_cast<Word*>(out.raw_data()),
                static_cast<const Word*>(g.raw_data()), total, n, inner, count, start, step);
    ORDO_CUDA_CHECK_LAUNCH();
  };
  switch (dtype_size(out.dtype())) {
    case 1: return launch(uint8_t{});
    case 2: return launch(uint16_t{});
    case 4: return launch(uint32_t{});
    case 8: return launch(uint64_t{});
  }
}

}  // namespace ordo::cuda
