// CPU kernel of RoPE's rotation (kernels.inc rotary; Su et al. 2021,
// Eq. 34): each pair (a, b) of position p turned by angle p theta_i, whose
// cosine and sine the caller gives,
//   (a, b) -> (a cos - b sin, a sin + b cos),
// and by -angle for the backward.
//
// The unfused ops this replaces multiply, subtract and add in separate
// kernels, so every product is rounded before the sum. The compiler must not
// contract a c - b s into a fused multiply-add here (GCC contracts across
// statements by default), or the values would differ from theirs in the
// last bit: the row loop is compiled with contraction off.
#include <algorithm>

#include "tensor/cpu/common.h"

namespace ordo::cpu {

namespace {

// One row of d = 2 w values: y (contiguous) from x (elements x_stride
// apart), pair i the members (2i, 2i + 1), or (i, i + w) with `half`, turned
// by the angle whose cosine and sine are c[i] and s[i] (by its negative with
// `inverse`: the sine negated, exactly).
template <class T>
#if !defined(__clang__)
__attribute__((optimize("fp-contract=off")))
#endif
void turn_row(T* y, const T* x, int64_t x_stride, const T* c, const T* s, int64_t w, bool half, bool inverse) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  for (int64_t i = 0; i < w; ++i) {
    const int64_t first = half ? i : 2 * i, second = half ? i + w : 2 * i + 1;
    const T a = x[first * x_stride], b = x[second * x_stride], sine = inverse ? -s[i] : s[i];
    y[first] = a * c[i] - b * sine;
    y[second] = a * sine + b * c[i];
  }
}

}  // namespace

void rotary(const Tensor& y, const Tensor& x, const Tensor& cosines, const Tensor& sines, bool half,
            bool inverse) {
  const int64_t heads = x.size(1), length = x.size(2), d = x.size(3), w = d / 2;
  dispatch_float(x.dtype(), "rotary", [&](auto tag) {
    using T = decltype(tag);
    // [B L, w] each, shared by the heads.
    const T* c = cosines.data<T>();
    const T* s = sines.data<T>();
    const T* xs = x.data<T>();
    T* ys = y.data<T>();
    const int64_t s0 = x.stride(0), s1 = x.stride(1), s2 = x.stride(2), s3 = x.stride(3);
    parallel_for(y.numel() / std::max<int64_t>(d, 1), std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(d, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t row = begin; row < end; ++row) {
                     const int64_t l = row % length, h = row / length % heads, b = row / (length * heads);
                     const int64_t at = (b * length + l) * w;
                     turn_row(ys + row * d, xs + b * s0 + h * s1 + l * s2, s3, c + at, s + at, w, half, inverse);
                   }
                 });
  });
}

}  // namespace ordo::cpu
