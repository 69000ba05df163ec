// Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror & Shaw,
// "Parallel random numbers: as easy as 1, 2, 3" (SC 2011), and ordo's draws
// built on it. Compiled for the host and for CUDA device code from this one
// file, so both backends draw the same numbers.
//
// ordo's keying: element i of a draw under (seed, stream) is
//   philox(counter = {i_lo, i_hi, stream_lo, stream_hi}, key = {seed_lo, seed_hi}).
// No state is carried between elements: any element can be drawn on its own,
// on any device, in any order, and gives the same value.
#pragma once

#include <cmath>
#include <cstdint>

#include "base/host_device.h"

namespace ordo::philox {

struct Words {
  uint32_t x[4];
};

ORDO_HD void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

// The bijection itself: 10 rounds of the Philox S-box with the key bumped by
// the Weyl constants between rounds (Salmon et al. 2011, section 3.1).
ORDO_HD Words philox4x32_10(Words counter, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // multipliers
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // Weyl key increments
  uint32_t* c = counter.x;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += kW0;
      key1 += kW1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kM0, c[0], hi0, lo0);
    mulhilo(kM1, c[2], hi1, lo1);
    Words next = {{hi1 ^ c[1] ^ key0, lo1, hi0 ^ c[3] ^ key1, lo0}};
    counter = next;
  }
  return counter;
}

// The four words for element `index` of draw (seed, stream).
ORDO_HD Words draw(uint64_t seed, uint64_t stream, uint64_t index) {
  Words counter = {{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                    static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)}};
  return philox4x32_10(counter, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// [0, 1) from the top 24 bits of one word: exactly representable in f32.
ORDO_HD float uniform_f32(uint32_t word) { return static_cast<float>(word >> 8) * 0x1p-24f; }
// [0, 1) with 53 bits from two words: exactly representable in f64.
ORDO_HD double uniform_f64(uint32_t w0, uint32_t w1) {
  uint64_t bits = (static_cast<uint64_t>(w0) << 21) | (w1 >> 11);
  return static_cast<double>(bits) * 0x1p-53;
}

// One standard normal from two words (Box-Muller, cosine branch), computed in
// double on both backends so an f32 result rounds to the same value.
ORDO_HD double normal_from(uint32_t w0, uint32_t w1) {
  double u1 = (static_cast<double>(w0) + 1.0) * 0x1p-32;  // (0, 1]: log is finite
  double u2 = static_cast<double>(w1) * 0x1p-32;           // [0, 1)
  // Global-namespace math: inside namespace ordo the unqualified names would
  // find the Tensor ops first.
  return ::sqrt(-2.0 * ::log(u1)) * ::cos(6.283185307179586477 * u2);
}

// a + scale * z rounded once (a fused multiply-add) on both backends, so a
// host compiler's choice to contract `a + scale * z` or not can never make
// the CPU and the GPU draw different values.
ORDO_HD double shift_scale(double a, double scale, double z) { return ::fma(scale, z, a); }

// A standard normal restricted to [-2, 2] by redrawing: each attempt uses one
// call's four words (two candidates); attempt a changes the top 16 bits of the
// index's high word, which real tensors never reach (2^48 elements).
ORDO_HD double truncated_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  for (uint64_t attempt = 0; attempt < 64; ++attempt) {
    Words w = draw(seed, stream, index | (attempt << 48));
    double z = normal_from(w.x[0], w.x[1]);
    if (z >= -2.0 && z <= 2.0) return z;
    z = normal_from(w.x[2], w.x[3]);
    if (z >= -2.0 && z <= 2.0) return z;
  }
  return 0.0;  // 128 rejections in a row: probability below 1e-170
}

// Dropout keeps element i when its 32-bit word is >= this threshold, so the
// keep probability is exactly 1 - threshold / 2^32.
ORDO_HD uint64_t dropout_threshold(double p) {
  double t = p * 4294967296.0;
  return t <= 0 ? 0 : (t >= 4294967296.0 ? 4294967296ull : static_cast<uint64_t>(t + 0.5));
}

// Dropout masks use all four words of a draw: element i takes word i % 4 of
// draw(seed, stream, i / 4), a quarter of the Philox work of one draw each.
ORDO_HD bool dropout_keep(const Words& w, uint64_t i, uint64_t threshold) { return w.x[i & 3] >= threshold; }
ORDO_HD bool dropout_keep(uint64_t seed, uint64_t stream, uint64_t i, uint64_t threshold) {
  return dropout_keep(draw(seed, stream, i >> 2), i, threshold);
}

}  // namespace ordo::philox
