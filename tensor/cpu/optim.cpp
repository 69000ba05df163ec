// CPU AdamW updates, fused: one pass over param, grad, m and v per tensor
// (adamw), or over every parameter at once (the multi-tensor step: chunk
// sums of squares, the global norm and clip factor, the update). The formula
// is AdamWStep's (tensor/backend.h), PyTorch's AdamW, in one function both use.
#include <cmath>
#include <type_traits>

#include "tensor/cpu/common.h"

namespace ordo::cpu {

namespace {

// One element's update; the constants rounded to T once, as the CUDA
// kernels do (1 - beta too: computed from the rounded beta it would lose
// 1 - 0.999f's digits, 1.3e-5 relative).
template <class T>
struct AdamWElement {
  T lr, b1, b2, eps, wd, scale, inv_bias1, inv_sqrt_bias2, one_minus_b1, one_minus_b2;

  AdamWElement(double lr, double beta1, double beta2, double eps, double wd, T scale, double inv_bias1,
               double inv_sqrt_bias2)
      : lr(T(lr)), b1(T(beta1)), b2(T(beta2)), eps(T(eps)), wd(T(wd)), scale(scale), inv_bias1(T(inv_bias1)),
        inv_sqrt_bias2(T(inv_sqrt_bias2)), one_minus_b1(T(1.0 - beta1)), one_minus_b2(T(1.0 - beta2)) {}

  void operator()(T& p, T g, T& m, T& v) const {
    T gi = g * scale;
    m = b1 * m + one_minus_b1 * gi;
    v = b2 * v + one_minus_b2 * gi * gi;
    T update = (m * inv_bias1) / (std::sqrt(v) * inv_sqrt_bias2 + eps);
    p -= lr * (wd * p + update);
  }
};

}  // namespace

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
    const AdamWElement<T> update(s.lr, s.beta1, s.beta2, s.eps, s.weight_decay, T(s.grad_scale), 1.0 / bias1,
                                 1.0 / std::sqrt(bias2));
    parallel_for(param.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) update(p[i], g[i], ms[i], vs[i]);
    });
  });
}

void global_norm_and_clip(const Tensor& out, const Tensor& partials, const std::vector<Tensor>& tensors,
                          const Tensor& chunks, double max_norm) {
  const int64_t* table = chunks.data<int64_t>();
  double* p = partials.data<double>();
  dispatch_float(tensors.front().dtype(), "global_norm_and_clip", [&](auto tag) {
    using T = decltype(tag);
    parallel_for(chunks.size(0), 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        const T* x = tensors[table[3 * c]].template data<T>() + table[3 * c + 1];
        double sum = 0;
        for (int64_t i = 0; i < table[3 * c + 2]; ++i) sum += static_cast<double>(x[i]) * x[i];
        p[c] = sum;
      }
    });
    double total = 0;
    for (int64_t c = 0; c < partials.numel(); ++c) total += p[c];
    const double norm = std::sqrt(total);
    const double scale = max_norm > 0 && norm > max_norm ? max_norm / (norm + 1e-6) : 1.0;
    out.data<T>()[0] = static_cast<T>(norm);
    out.data<T>()[1] = static_cast<T>(scale);
  });
}

void adamw_multi(const AdamWTensors& t, const Tensor& norm_and_clip, const Tensor& schedule,
                 const AdamWConstants& c) {
  const int64_t* table = t.chunks.data<int64_t>();
  const int64_t* layout = t.layout.data<int64_t>();
  const double* sched = schedule.data<double>();
  dispatch_float(t.params.front().dtype(), "adamw_multi", [&](auto tag) {
    using T = decltype(tag);
    const T norm = norm_and_clip.data<T>()[0];
    if (!std::isfinite(norm)) return;
    const AdamWElement<T> update(sched[0], c.beta1, c.beta2, c.eps, 0.0, norm_and_clip.data<T>()[1], sched[1],
                                 sched[2]);
    parallel_for(t.chunks.size(0), 1, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        const int64_t tensor = table[3 * k], first = table[3 * k + 1], n = table[3 * k + 2];
        AdamWElement<T> u = update;
        u.wd = layout[kAdamWLayoutColumns * tensor + 3] != 0 ? T(c.weight_decay) : T(0);
        T* p = t.params[tensor].template data<T>() + first;
        const T* g = t.grads[tensor].template data<T>() + first;
        T* m = t.m[tensor].template data<T>() + first;
        T* v = t.v[tensor].template data<T>() + first;
        for (int64_t i = 0; i < n; ++i) u(p[i], g[i], m[i], v[i]);
        if constexpr (std::is_same_v<T, float>) {
          if (!t.rounded[tensor].defined()) continue;
          uint16_t* rounded = static_cast<uint16_t*>(t.rounded[tensor].raw_data()) + first;
          for (int64_t i = 0; i < n; ++i) rounded[i] = f32_to_bf16(p[i]);
        }
      }
    });
  });
}

}  // namespace ordo::cpu
