// Stand-in for CUDA's cuda_fp16.h under the emulator: the conversions ordo's
// kernels use, through the compiler's _Float16 (IEEE binary16, conversions
// rounding to nearest even, as __float2half_rn).
#pragma once

#include <cstdint>
#include <cstring>

struct __half {
  unsigned short bits;
};

inline __half __ushort_as_half(unsigned short bits) { return __half{bits}; }
inline unsigned short __half_as_ushort(__half h) { return h.bits; }

inline float __half2float(__half h) {
  _Float16 f;
  std::memcpy(&f, &h.bits, 2);
  return static_cast<float>(f);
}

inline __half __float2half_rn(float x) {
  const _Float16 f = static_cast<_Float16>(x);
  __half h;
  std::memcpy(&h.bits, &f, 2);
  return h;
}
