// CPU AdamW update, fused: one pass over param, grad, m and v.
// The formula is AdamWStep's (tensor/backend.h), PyTorch's AdamW.
#include <cmath>

#include "tensor/cpu/common.h"

namespace ordo::cpu {

void adamw(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
           const AdamWStep& s) {
  const double bias1 = 1.0 - std::pow(s.beta1, static_cast<double>(s.step));
  const double bias2 = 1.0 - std::pow(s.beta2, static_cast<double>(s.step));
  dispatch_float(param.dtype(), "adamw", [&](auto tag) {
    using T = decltype(tag);
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    T* ms = m.data<T>();
    T* vs = v.data<T>();
    const T lr = T(s.lr), b1 = T(s.beta1), b2 = T(s.beta2), eps = T(s.eps), wd = T(s.weight_decay);
    const T scale = T(s.grad_scale), inv_bias1 = T(1.0 / bias1), inv_sqrt_bias2 = T(1.0 / std::sqrt(bias2));
    parallel_for(param.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        T gi = g[i] * scale;
        ms[i] = b1 * ms[i] + (T(1) - b1) * gi;
        vs[i] = b2 * vs[i] + (T(1) - b2) * gi * gi;
        T update = (ms[i] * inv_bias1) / (std::sqrt(vs[i]) * inv_sqrt_bias2 + eps);
        p[i] -= lr * (wd * p[i] + update);
      }
    });
  });
}

}  // namespace ordo::cpu
