// CPU random draws and dropout, element i keyed by Philox(seed, stream, i)
// exactly as the CUDA kernels (tensor/philox.h holds the shared formulas).
#include "tensor/cpu/common.h"
#include "tensor/philox.h"

namespace ordo::cpu {

void random(const Tensor& out, RandomDist dist, double a, double b, uint64_t seed, uint64_t stream) {
  dispatch_float(out.dtype(), "random", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    parallel_for(out.numel(), kElementwiseGrain / 8, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        double z;
        if (dist == RandomDist::trunc_normal) {
          z = philox::truncated_normal(seed, stream, static_cast<uint64_t>(i));
        } else {
          philox::Words w = philox::draw(seed, stream, static_cast<uint64_t>(i));
          if (dist == RandomDist::uniform) {
            double u = sizeof(T) == 4 ? philox::uniform_f32(w.x[0]) : philox::uniform_f64(w.x[0], w.x[1]);
            o[i] = static_cast<T>(philox::shift_scale(a, b - a, u));
            continue;
          }
          z = philox::normal_from(w.x[0], w.x[1]);
        }
        o[i] = static_cast<T>(philox::shift_scale(a, b, z));
      }
    });
  });
}

void dropout(const Tensor& out, const Tensor& x, double p, uint64_t seed, uint64_t stream) {
  const uint64_t threshold = philox::dropout_threshold(p);
  dispatch_float(out.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    const T scale = static_cast<T>(1.0 / (1.0 - p));
    const T* xs = x.data<T>();
    T* o = out.data<T>();
    const int64_t n = out.numel();
    // Groups of four elements share one Philox draw (philox::dropout_keep).
    parallel_for((n + 3) / 4, kElementwiseGrain / 32, [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) {
        philox::Words w = philox::draw(seed, stream, static_cast<uint64_t>(g));
        for (int64_t i = 4 * g; i < std::min(n, 4 * g + 4); ++i)
          o[i] = philox::dropout_keep(w, static_cast<uint64_t>(i), threshold) ? xs[i] * scale : T(0);
      }
    });
  });
}

}  // namespace ordo::cpu
