// exp, erf, erfc and the normal CDF for f32 on the CPU, written so that GCC
// vectorises the loops that call them (no calls, no branches: selects and
// bit casts only). libm's expf/erff are scalar calls, and made softmax, GELU
// and cross-entropy compute-bound at a tenth of memory bandwidth.
//
// Accuracy (checked against double-precision libm in tests/tensor/test_vector_math.cpp):
//   vexp    Cody-Waite reduction + Cephes' degree-6 polynomial: within 2 ulp;
//           0 below ln(FLT_MIN) = -87.3365 (where expf turns subnormal), +inf
//           above ln(FLT_MAX) = 88.7228 as expf; NaN in, NaN out
//   verfc   Numerical Recipes' Chebyshev fit (erfcc; 1.2e-7 in exact arithmetic):
//           relative error < 5e-7 + x^2 2^-23 in f32, the second term from
//           rounding z^2 before exp(-z^2) (about 4e-6 in the far tail)
//   verf    odd Taylor series below 0.5 (within 2 ulp), 1 - erfc above:
//           relative error < 5e-7, erfc's error where it is largest (x = 0.5)
//   vnormal_cdf  Phi(x) = erfc(-x / sqrt 2) / 2: relative error < 5e-7 + x^2 2^-23
//           on both tails (no 1 + erf cancellation for negative x)
#pragma once

#include <cstdint>
#include <cstring>

namespace ordo::cpu {

inline float bits_to_float(int32_t i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}

inline float vexp(float x) {
  const float kLog2e = 1.44269504088896341f;
  const float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;  // ln 2 split so n*hi is exact
  const float kRound = 12582912.0f;                               // 1.5 * 2^23: adding it rounds to an integer
  // Below kLow, the float nearest ln(FLT_MIN), expf turns subnormal: flushed
  // to 0. From kLow to kHigh, n = round(x log2 e) stays within [-126, 128],
  // where 2^n's exponent bits are in range, and e * 2^n itself overflows to
  // +inf past ln(FLT_MAX) = 88.7228, as expf does.
  const float kLow = -87.33654f, kHigh = 88.76f;
  // NaN fails both comparisons and lands on kLow: it must not reach the cast
  // to int (undefined for NaN); it is given back as NaN at the end.
  float clamped = x > kLow ? (x < kHigh ? x : kHigh) : kLow;
  float n = (clamped * kLog2e + kRound) - kRound;
  float r = clamped - n * kLn2Hi - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float e = p * r * r + r + 1.0f;
  // e * 2^n, as e * 2^(n-1) * 2 for n > 0 so that 2^(n-1) is finite at n = 128.
  int32_t k = static_cast<int32_t>(n);
  int32_t k1 = k > 0 ? k - 1 : k;
  float scaled = e * bits_to_float((k1 + 127) << 23) * (k > 0 ? 2.0f : 1.0f);
  float result = x < kLow ? 0.0f : scaled;
  return x != x ? x : result;  // NaN stays NaN
}

// erfc for z >= 0: t exp(-z^2 + poly(t)), t = 1 / (1 + z/2) (Press et al.,
// Numerical Recipes, erfcc; fractional error below 1.2e-7 everywhere in exact
// arithmetic).
inline float verfc_nonnegative(float z) {
  float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * vexp(-z * z + p);
}

inline float verfc(float x) {
  float a = x < 0 ? -x : x;
  float e = verfc_nonnegative(a);
  return x < 0 ? 2.0f - e : e;
}

inline float verf(float x) {
  float a = x < 0 ? -x : x;
  // |x| < 0.5: the Taylor series 2/sqrt(pi) sum (-1)^k x^(2k+1) / (k! (2k+1)), to x^15.
  float z = x * x;
  float s = -1.0f / 75600.0f;  // the x^15 term: 1 / (7! 15)
  s = s * z + 1.0f / 9360.0f;
  s = s * z - 1.0f / 1320.0f;
  s = s * z + 1.0f / 216.0f;
  s = s * z - 1.0f / 42.0f;
  s = s * z + 1.0f / 10.0f;
  s = s * z - 1.0f / 3.0f;
  s = s * z + 1.0f;
  float small = 1.12837916709551257f * x * s;
  float big = 1.0f - verfc_nonnegative(a);
  big = x < 0 ? -big : big;
  return a < 0.5f ? small : big;
}

// Phi(x), the standard normal CDF.
inline float vnormal_cdf(float x) { return 0.5f * verfc(-0.70710678118654752f * x); }

}  // namespace ordo::cpu
