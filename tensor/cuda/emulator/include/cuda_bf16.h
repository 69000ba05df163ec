// Stand-in for CUDA's cuda_bf16.h under the emulator: the conversions ordo's
// kernels use. A bfloat16 is the upper half of an IEEE binary32, so widening
// it is exact.
#pragma once

#include <cstdint>
#include <cstring>

struct __nv_bfloat16 {
  unsigned short bits;
};

inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) { return __nv_bfloat16{bits}; }

inline float __bfloat162float(__nv_bfloat16 b) {
  const uint32_t wide = static_cast<uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}
