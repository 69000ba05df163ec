// CUDA copy (any strides on both sides, casts between any two dtypes) and fill.
//
// Casts go through double, exactly as the CPU copy does (tensor/cpu/copy.cpp):
// double holds every value of every ordo dtype (i64 up to 2^53), so a cast
// rounds once, at the store. Narrowing to bf16 ports the CPU's bit-exact
// rounding; narrowing to f16 uses CUDA's round-to-nearest-even conversion,
// which gives the CPU's result for every non-NaN value (a NaN stays a NaN,
// possibly with another payload).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <type_traits>

#include "tensor/cuda/cuda_common.cuh"
#include "tensor/dispatch.h"
#include "tensor/elementwise_math.h"

namespace ordo::cuda {

namespace {

template <class T>
__device__ __forceinline__ double load(const T* p) { return static_cast<double>(*p); }
template <>
__device__ __forceinline__ double load<BF16>(const BF16* p) {
  return __bfloat162float(__ushort_as_bfloat16(p->bits));
}
template <>
__device__ __forceinline__ double load<F16>(const F16* p) {
  return __half2float(__ushort_as_half(p->bits));
}

template <class T>
__device__ __forceinline__ void store(T* p, double v) { *p = math::cast_from_double<T>(v); }
template <>
__device__ __forceinline__ void store<BF16>(BF16* p, double v) { p->bits = bf16_bits(static_cast<float>(v)); }
template <>
__device__ __forceinline__ void store<F16>(F16* p, double v) {
  p->bits = __half_as_ushort(__float2half_rn(static_cast<float>(v)));
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
    if constexpr (std::is_same_v<D, S>) {
      dst[offsets[0]] = src[offsets[1]];
    } else {
      store(dst + offsets[0], load(src + offsets[1]));
    }
  }
}

template <class D, class S>
void launch_copy(const Tensor& dst, const Tensor& src) {
  DeviceContext& ctx = context(dst);
  Indexer<2> ix = make_indexer<2>(dst.shape(), {&dst.strides(), &src.strides()});
  D* d = static_cast<D*>(dst.raw_data());
  const S* s = static_cast<const S*>(src.raw_data());
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
      DeviceContext& ctx = context(dst);
      ORDO_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(),
                                      static_cast<size_t>(dst.numel()) * dtype_size(dst.dtype()),
                                      cudaMemcpyDeviceToDevice, ctx.stream));
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

}  // namespace ordo::cuda
