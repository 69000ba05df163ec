// GELU's rows (tensor/cpu/gelu.h): AVX-512 intrinsics where the build has
// them and cpu::vector_path() is avx512 (not in the deterministic mode),
// math::Gelu element by element elsewhere.
#include "tensor/cpu/gelu.h"

#include "tensor/cpu/cpu_paths.h"

#include "tensor/elementwise_math.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace ordo::cpu {

// The portable rows: math::Gelu element by element, in loops GCC vectorises
// (with vector_math.h's selects). It finishes a row with a scalar loop that
// may contract multiply-adds differently, so there an element's last bit can
// depend on its place in the row.
void gelu_row_portable(float* y, const float* x, const float* bias, int64_t n) {
  if (bias) {
    for (int64_t j = 0; j < n; ++j) y[j] = math::Gelu::f(x[j] + bias[j], {});
  } else {
    for (int64_t j = 0; j < n; ++j) y[j] = math::Gelu::f(x[j], {});
  }
}

void gelu_backward_row_portable(float* gx, const float* gy, const float* x, const float* bias, int64_t n) {
  if (bias) {
    for (int64_t j = 0; j < n; ++j) gx[j] = gy[j] * math::Gelu::df(x[j] + bias[j], 0.0f, {});
  } else {
    for (int64_t j = 0; j < n; ++j) gx[j] = gy[j] * math::Gelu::df(x[j], 0.0f, {});
  }
}

#if defined(__AVX512F__)
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as their unused
// merge source and then warn, where they are inlined, that it is
// uninitialised (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

__m512 splat(float v) { return _mm512_set1_ps(v); }

// exp(x) for x <= ~1e-7 and not NaN (the arguments below): vector_math.h's
// vexp — Cody-Waite reduction, Cephes' degree-6 polynomial, 0 below
// ln(FLT_MIN) — with 2^n applied by scalef instead of exponent bits.
__m512 exp_of_nonpositive(__m512 x) {
  const __m512 low = splat(-87.33654f);
  const __m512 c = _mm512_max_ps(x, low);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(c, splat(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, splat(0.693359375f), c);  // ln 2 split so n * hi is exact
  r = _mm512_fnmadd_ps(n, splat(-2.12194440e-4f), r);
  __m512 p = splat(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, splat(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, splat(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, splat(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, splat(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, splat(5.0000001201e-1f));
  const __m512 e = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, splat(1.0f)));
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, low, _CMP_GE_OQ), _mm512_scalef_ps(e, n));
}

// erfc(z) for z >= 0: t exp(-z^2 + poly(t)), t = 1 / (1 + z/2) (Numerical
// Recipes' erfcc, as verfc_nonnegative). t from the reciprocal estimate
// (relative error 2^-14) and one Newton step (about 2^-28 before rounding).
// z is capped at 10, where erfc is already flushed to 0 (erfc(9.3) < FLT_MIN),
// so that 1 + z/2 stays finite; NaN becomes 10 too (the callers multiply by x,
// which gives the NaN back).
__m512 erfc_of_nonnegative(__m512 z) {
  z = _mm512_min_ps(z, splat(10.0f));
  const __m512 d = _mm512_fmadd_ps(z, splat(0.5f), splat(1.0f));
  const __m512 t0 = _mm512_rcp14_ps(d);
  const __m512 t = _mm512_fmadd_ps(t0, _mm512_fnmadd_ps(d, t0, splat(1.0f)), t0);
  __m512 p = splat(0.17087277f);
  p = _mm512_fmadd_ps(p, t, splat(-0.82215223f));
  p = _mm512_fmadd_ps(p, t, splat(1.48851587f));
  p = _mm512_fmadd_ps(p, t, splat(-1.13520398f));
  p = _mm512_fmadd_ps(p, t, splat(0.27886807f));
  p = _mm512_fmadd_ps(p, t, splat(-0.18628806f));
  p = _mm512_fmadd_ps(p, t, splat(0.09678418f));
  p = _mm512_fmadd_ps(p, t, splat(0.37409196f));
  p = _mm512_fmadd_ps(p, t, splat(1.00002368f));
  p = _mm512_fmadd_ps(p, t, splat(-1.26551223f));
  return _mm512_mul_ps(t, exp_of_nonpositive(_mm512_fnmadd_ps(z, z, p)));
}

// Phi(x) = erfc(-x / sqrt 2) / 2, from erfc(|x| / sqrt 2): e / 2 for x < 0,
// (2 - e) / 2 above (no cancellation on the negative tail).
__m512 normal_cdf(__m512 x) {
  const __m512 e = erfc_of_nonnegative(_mm512_mul_ps(_mm512_abs_ps(x), splat(0.70710678118654752f)));
  const __m512 upper = _mm512_mul_ps(_mm512_sub_ps(splat(2.0f), e), splat(0.5f));
  return _mm512_mask_mov_ps(upper, _mm512_cmp_ps_mask(x, splat(0.0f), _CMP_LT_OQ), _mm512_mul_ps(e, splat(0.5f)));
}

// The j-th block of 16 (or the masked rest) of x + bias.
__m512 load_sum(const float* x, const float* bias, int64_t j, __mmask16 m) {
  const __m512 v = _mm512_maskz_loadu_ps(m, x + j);
  return bias ? _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + j)) : v;
}

// body(j, mask) over a row of n in blocks of 16, the last under a mask.
template <class Body>
void for_blocks(int64_t n, const Body& body) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) body(j, static_cast<__mmask16>(0xffff));
  if (j < n) body(j, static_cast<__mmask16>((1u << (n - j)) - 1u));
}

void gelu_row_avx512(float* y, const float* x, const float* bias, int64_t n) {
  for_blocks(n, [&](int64_t j, __mmask16 m) {
    const __m512 u = load_sum(x, bias, j, m);
    _mm512_mask_storeu_ps(y + j, m, _mm512_mul_ps(u, normal_cdf(u)));
  });
}

void gelu_backward_row_avx512(float* gx, const float* gy, const float* x, const float* bias, int64_t n) {
  for_blocks(n, [&](int64_t j, __mmask16 m) {
    const __m512 u = load_sum(x, bias, j, m);
    // Phi(u) + u phi(u), phi(u) = exp(-u^2 / 2) / sqrt(2 pi).
    const __m512 density = exp_of_nonpositive(_mm512_mul_ps(_mm512_mul_ps(u, splat(-0.5f)), u));
    const __m512 slope =
        _mm512_fmadd_ps(_mm512_mul_ps(u, splat(static_cast<float>(math::kInvSqrt2Pi))), density, normal_cdf(u));
    _mm512_mask_storeu_ps(gx + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, gy + j), slope));
  });
}

}  // namespace

#pragma GCC diagnostic pop

#endif

bool gelu_rows_vectorised() {
#if defined(__AVX512F__)
  return vector_path() == VectorPath::avx512 && !deterministic();
#else
  return false;
#endif
}

void gelu_row(float* y, const float* x, const float* bias, int64_t n) {
#if defined(__AVX512F__)
  if (gelu_rows_vectorised()) return gelu_row_avx512(y, x, bias, n);
#endif
  gelu_row_portable(y, x, bias, n);
}

void gelu_backward_row(float* gx, const float* gy, const float* x, const float* bias, int64_t n) {
#if defined(__AVX512F__)
  if (gelu_rows_vectorised()) return gelu_backward_row_avx512(gx, gy, x, bias, n);
#endif
  gelu_backward_row_portable(gx, gy, x, bias, n);
}

}  // namespace ordo::cpu
