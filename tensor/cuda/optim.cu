// CUDA AdamW update, fused: one pass reads param, grad, m and v and writes
// param, m and v. The formula and its constants are the CPU's
// (tensor/cpu/optim.cpp): bias corrections in double on the host, rounded to
// f32 once, the per-element arithmetic in f32. (nvcc fuses some multiply-adds
// the CPU rounds twice, so the two backends agree to a few f32 ulps.)
#include <cmath>

#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

namespace {

struct AdamWConstants {
  float lr, beta1, beta2, eps, weight_decay, grad_scale, inv_bias1, inv_sqrt_bias2;
};

__device__ __forceinline__ void adamw_element(float& p, float g, float& m, float& v,
                                              const AdamWConstants& c) {
  const float gi = g * c.grad_scale;
  m = c.beta1 * m + (1.0f - c.beta1) * gi;
  v = c.beta2 * v + (1.0f - c.beta2) * gi * gi;
  const float update = (m * c.inv_bias1) / (sqrtf(v) * c.inv_sqrt_bias2 + c.eps);
  p -= c.lr * (c.weight_decay * p + update);
}

// Elementwise over n contiguous elements, grid-stride. kPacked: all four
// arrays 16-byte aligned, four elements per load/store, then the tail.
template <bool kPacked>
__global__ void adamw_kernel(float* param, const float* grad, float* m, float* v, int64_t n,
                             AdamWConstants c) {
  int64_t begin = 0;
  if constexpr (kPacked) {
    constexpr int P = Pack<float>::kSize;
    const int64_t packs = n / P;
    for (int64_t i = global_thread_index(); i < packs; i += grid_thread_count()) {
      Pack<float> p = Pack<float>::load(param + i * P), g = Pack<float>::load(grad + i * P),
                  mp = Pack<float>::load(m + i * P), vp = Pack<float>::load(v + i * P);
#pragma unroll
      for (int e = 0; e < P; ++e) adamw_element(p.v[e], g.v[e], mp.v[e], vp.v[e], c);
      p.store(param + i * P);
      mp.store(m + i * P);
      vp.store(v + i * P);
    }
    begin = packs * P;
  }
  for (int64_t i = begin + global_thread_index(); i < n; i += grid_thread_count())
    adamw_element(param[i], grad[i], m[i], v[i], c);
}

}  // namespace

void adamw(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
           const AdamWStep& s) {
  require_f32(param.dtype(), "adamw");
  const int64_t n = param.numel();
  if (n == 0) return;
  DeviceContext& ctx = context(param);
  const double bias1 = 1.0 - std::pow(s.beta1, static_cast<double>(s.step));
  const double bias2 = 1.0 - std::pow(s.beta2, static_cast<double>(s.step));
  const AdamWConstants c{static_cast<float>(s.lr),           static_cast<float>(s.beta1),
                         static_cast<float>(s.beta2),        static_cast<float>(s.eps),
                         static_cast<float>(s.weight_decay), static_cast<float>(s.grad_scale),
                         static_cast<float>(1.0 / bias1),    static_cast<float>(1.0 / std::sqrt(bias2))};
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  float* ms = m.data<float>();
  float* vs = v.data<float>();
  if (aligned16(p) && aligned16(g) && aligned16(ms) && aligned16(vs)) {
    ORDO_LAUNCH(adamw_kernel<true>, grid_for(n / Pack<float>::kSize + 1, kThreads, ctx), kThreads, 0,
                ctx.stream, p, g, ms, vs, n, c);
  } else {
    ORDO_LAUNCH(adamw_kernel<false>, grid_for(n, kThreads, ctx), kThreads, 0, ctx.stream, p, g, ms, vs, n, c);
  }
  ORDO_CUDA_CHECK_LAUNCH();
}

}  // namespace ordo::cuda
