// CUDA random draws and dropout, element i keyed by Philox(seed, stream, i)
// with base/philox.h's functions, the very code the CPU kernels run
// (tensor/cpu/random.cpp), so both devices draw the same numbers:
//  - uniform and dropout masks: bit-identical (integer Philox, exact
//    conversions, and the affine map below rounded exactly as the CPU's);
//  - normal and truncated normal: Box-Muller in double, where CUDA's log and
//    cos may differ from the host's libm in the last bit of the double, so
//    the f32 result can (rarely) differ by one f32 ulp.
//
// The affine maps a + (b - a) u and a + b z go through philox::shift_scale,
// one fused multiply-add on both backends, so they round identically.
#include "base/philox.h"
#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

namespace {

// One thread per element, grid-stride.
template <RandomDist kDist>
__global__ void random_kernel(float* out, int64_t n, double a, double b, uint64_t seed,
                              uint64_t stream) {
  for (int64_t i = global_thread_index(); i < n; i += grid_thread_count()) {
    const uint64_t index = static_cast<uint64_t>(i);
    double value;
    if constexpr (kDist == RandomDist::uniform) {
      const double u = philox::uniform_f32(philox::draw(seed, stream, index).x[0]);
      value = philox::shift_scale(a, b - a, u);
    } else if constexpr (kDist == RandomDist::normal) {
      const philox::Words w = philox::draw(seed, stream, index);
      value = philox::shift_scale(a, b, philox::normal_from(w.x[0], w.x[1]));
    } else {
      value = philox::shift_scale(a, b, philox::truncated_normal(seed, stream, index));
    }
    out[i] = static_cast<float>(value);
  }
}

// An element written as f32, or rounded to bf16 (Out = uint16_t, its bits).
__device__ __forceinline__ void store_as(float* out, float v) { *out = v; }
__device__ __forceinline__ void store_as(uint16_t* out, float v) { *out = bf16_bits(v); }

// out[i] = keep(i) ? x[i] * scale : 0 with philox::dropout_keep (element i
// takes word i % 4 of draw i / 4), in f32 or rounded to bf16 (Out). packed:
// out and x 16-byte aligned; each thread moves four elements at a time,
// which share one draw, then the tail one by one.
template <class Out>
__global__ void dropout_kernel(Out* out, const float* x, int64_t n, bool packed, uint64_t threshold,
                               float scale, uint64_t seed, uint64_t stream_offset, const int64_t* stream_base) {
  const uint64_t stream = stream_offset + (stream_base ? static_cast<uint64_t>(*stream_base) : 0);
  auto keep = [&](int64_t i) { return philox::dropout_keep(seed, stream, static_cast<uint64_t>(i), threshold); };
  int64_t begin = 0;
  if (packed) {
    constexpr int P = Pack<float>::kSize;
    const int64_t packs = n / P;
    for (int64_t v = global_thread_index(); v < packs; v += grid_thread_count()) {
      static_assert(P == 4, "a pack is the four elements of one Philox draw");
      Pack<float> values = Pack<float>::load(x + v * P);
      const philox::Words w = philox::draw(seed, stream, static_cast<uint64_t>(v));
#pragma unroll
      for (int e = 0; e < P; ++e)
        values.v[e] = philox::dropout_keep(w, static_cast<uint64_t>(v * P + e), threshold) ? values.v[e] * scale : 0.0f;
      if constexpr (std::is_same<Out, float>::value) {
        values.store(out + v * P);
      } else {
#pragma unroll
        for (int e = 0; e < P; ++e) store_as(out + v * P + e, values.v[e]);
      }
    }
    begin = packs * P;
  }
  for (int64_t i = begin + global_thread_index(); i < n; i += grid_thread_count())
    store_as(out + i, keep(i) ? x[i] * scale : 0.0f);
}

}  // namespace

void random(const Tensor& out, RandomDist dist, double a, double b, uint64_t seed, uint64_t stream) {
  require_f32(out.dtype(), "random");
  const int64_t n = out.numel();
  if (n == 0) return;
  DeviceContext& ctx = context(out);
  float* o = out.data<float>();
  const unsigned grid = grid_for(n, kThreads, ctx);
  switch (dist) {
    case RandomDist::uniform:
      ORDO_LAUNCH(random_kernel<RandomDist::uniform>, grid, kThreads, 0, ctx.stream, o, n, a, b, seed, stream);
      break;
    case RandomDist::normal:
      ORDO_LAUNCH(random_kernel<RandomDist::normal>, grid, kThreads, 0, ctx.stream, o, n, a, b, seed, stream);
      break;
    case RandomDist::trunc_normal:
      ORDO_LAUNCH(random_kernel<RandomDist::trunc_normal>, grid, kThreads, 0, ctx.stream, o, n, a, b, seed,
                  stream);
      break;
  }
  ORDO_CUDA_CHECK_LAUNCH();
}

void dropout(const Tensor& out, const Tensor& x, double p, const PhiloxStream& stream) {
  require_f32(x.dtype(), "dropout");
  const int64_t n = out.numel();
  if (n == 0) return;
  DeviceContext& ctx = context(out);
  const uint64_t threshold = philox::dropout_threshold(p);
  const float scale = static_cast<float>(1.0 / (1.0 - p));  // the CPU's rounding
  const float* xs = x.data<float>();
  auto launch = [&](auto* o) {
    using Out = std::remove_pointer_t<decltype(o)>;
    const bool packed = aligned16(o) && aligned16(xs);
    const int64_t threads_needed = packed ? n / Pack<float>::kSize + 1 : n;
    ORDO_LAUNCH(dropout_kernel<Out>, grid_for(threads_needed, kThreads, ctx), kThreads, 0, ctx.stream, o, xs, n,
                packed, threshold, scale, stream.seed, stream.offset, stream_base(stream));
  };
  if (out.dtype() == DType::bf16) {
    launch(static_cast<uint16_t*>(out.raw_data()));
  } else {
    require_f32(out.dtype(), "dropout (out)");
    launch(out.data<float>());
  }
  ORDO_CUDA_CHECK_LAUNCH();
}

}  // namespace ordo::cuda
