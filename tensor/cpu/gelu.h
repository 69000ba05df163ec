// GELU (erf form) over rows of f32, the CPU kernels' one way to compute it:
// bias + GELU and its backward (fused.cpp), the unary op and its backward
// (elementwise.cpp) all call these, so the fused and unfused paths compute
// GELU alike.
//
// With AVX-512 (and cpu::vector_path() avx512, not in the deterministic mode:
// tensor/cpu/cpu_paths.h) the rows run sixteen elements at a time in intrinsics (gelu.cpp):
// Phi(x) = erfc(-x / sqrt 2) / 2 by the same Chebyshev fit as
// vector_math.h's verfc, but 1 / (1 + z/2) as the reciprocal estimate plus one
// Newton step and exp's 2^n by scalef — GCC's vectorisation of the scalar
// formula (a division, integer bit tricks for 2^n, selects) took ~65
// instructions per 16 elements and made GELU compute-bound. The remainder of
// a row runs through the same vector code under a mask, so an element's
// value does not depend on where it sits in a row, and every kernel gives
// the same bits. Elsewhere the rows run math::Gelu element by element (the
// kernels' loops as before, GCC's vectorisation of vector_math.h). The two
// differ in the last bits, both within vector_math.h's stated accuracy for
// Phi (tests/tensor/test_gelu.cpp).
#pragma once

#include <cstdint>
#include <type_traits>

#include "tensor/elementwise_math.h"

namespace ordo::cpu {

// Whether a kernel computing activation F on T runs its rows through the
// functions below: GELU (erf form) in f32, in every kernel alike.
template <class F, class T>
constexpr bool uses_gelu_row = std::is_same_v<F, math::Gelu> && std::is_same_v<T, float>;

// y[j] = GELU(x[j] + bias[j]) for j < n; bias null: GELU(x[j]).
void gelu_row(float* y, const float* x, const float* bias, int64_t n);

// gx[j] = gy[j] GELU'(x[j] + bias[j]), GELU'(u) = Phi(u) + u phi(u); bias null: u = x[j].
void gelu_backward_row(float* gx, const float* gy, const float* x, const float* bias, int64_t n);

// True where the rows above run the AVX-512 code: the build's -march has
// AVX-512F, cpu::vector_path() is avx512 and the deterministic mode is off.
bool gelu_rows_vectorised();

// The rows as builds without AVX-512 run them (math::Gelu element by element),
// here on every build so that tests check both.
void gelu_row_portable(float* y, const float* x, const float* bias, int64_t n);
void gelu_backward_row_portable(float* gx, const float* gy, const float* x, const float* bias, int64_t n);

}  // namespace ordo::cpu
