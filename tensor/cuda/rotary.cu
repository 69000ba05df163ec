// CUDA kernel of RoPE's rotation (kernels.inc rotary; Su et al. 2021,
// Eq. 34): each pair (a, b) of position p turned by angle p theta_i, whose
// cosine and sine the caller gives,
//   (a, b) -> (a cos - b sin, a sin + b cos),
// and by -angle for the backward: one launch where the unfused ops take
// six or more (four products, a difference, a sum, the pairs put back
// together). Unlike the CPU kernel, nvcc may fuse a product into the sum, so
// the values agree with the CPU's within a few units in the last place, not
// bit for bit.
#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

namespace {

struct RotaryShape {
  int64_t heads, length, w;  // w = d / 2 pairs a row
  int64_t s0, s1, s2, s3;    // x's strides
  bool half, inverse;
};

// A thread per pair (b, h, l, i): x's two members read where the view has
// them, y's written contiguously.
__global__ void rotary_kernel(float* y, const float* x, const float* cosines, const float* sines, int64_t pairs,
                              RotaryShape r) {
  for (int64_t t = global_thread_index(); t < pairs; t += grid_thread_count()) {
    const int64_t i = t % r.w, row = t / r.w;
    const int64_t l = row % r.length, h = row / r.length % r.heads, b = row / (r.length * r.heads);
    const int64_t at = (b * r.length + l) * r.w + i;
    const float c = cosines[at], s = r.inverse ? -sines[at] : sines[at];
    const int64_t first = r.half ? i : 2 * i, second = r.half ? i + r.w : 2 * i + 1;
    const float* xr = x + b * r.s0 + h * r.s1 + l * r.s2;
    const float a = xr[first * r.s3], bb = xr[second * r.s3];
    float* yr = y + row * 2 * r.w;
    yr[first] = a * c - bb * s;
    yr[second] = a * s + bb * c;
  }
}

}  // namespace

void rotary(const Tensor& y, const Tensor& x, const Tensor& cosines, const Tensor& sines, bool half, bool inverse) {
  require_f32(x.dtype(), "rotary");
  const int64_t w = x.size(3) / 2, pairs = x.numel() / 2;
  if (pairs == 0) return;
  DeviceContext& ctx = context(x);
  const RotaryShape shape{x.size(1), x.size(2), w, x.stride(0), x.stride(1), x.stride(2), x.stride(3), half, inverse};
  ORDO_LAUNCH(rotary_kernel, grid_for(pairs, kThreads, ctx), kThreads, 0, ctx.stream, y.data<float>(),
              x.data<float>(), cosines.data<float>(), sines.data<float>(), pairs, shape);
  ORDO_CUDA_CHECK_LAUNCH();
}

}  // namespace ordo::cuda
