// Counter-based random draws for the data path, on base/philox.h.
//
// A CounterRng is a cursor into the Philox stream (seed, stream) at one `key`
// (a document or example index): draw k of key is element (key << 24) + k/4 of
// that stream. Nothing is carried between keys, so any document's plan or any
// example's mask can be regenerated on its own, in any order — what exact
// resumption of pretraining needs.
#pragma once

#include <cstdint>

#include "base/error.h"
#include "base/philox.h"

namespace ordo::text {

// What a stream of draws is for; each purpose and epoch gets its own stream.
enum class RngPurpose : uint64_t { split = 1, plan = 2, shuffle = 3, mask = 4 };

inline uint64_t rng_stream(RngPurpose purpose, int64_t epoch) {
  return (static_cast<uint64_t>(purpose) << 40) | static_cast<uint64_t>(epoch);
}

class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t stream, uint64_t key) : seed_(seed), stream_(stream), base_(key << 24) {
    ORDO_CHECK(key < (uint64_t{1} << 40), "random-draw key ", key, " is beyond 2^40");
  }

  uint32_t next_u32() {
    if (used_ == 4) {
      words_ = philox::draw(seed_, stream_, base_ + block_++);
      used_ = 0;
    }
    return words_.x[used_++];
  }
  // Uniform in [0, 1) with 53 bits, as Python's random.random().
  double uniform() {
    uint32_t a = next_u32();
    return philox::uniform_f64(a, next_u32());
  }
  // Uniform integer in [0, n), n > 0 (64-bit multiply-shift; bias below n / 2^32).
  int64_t below(int64_t n) { return static_cast<int64_t>((static_cast<uint64_t>(next_u32()) * static_cast<uint64_t>(n)) >> 32); }
  // Uniform integer in [lo, hi], as Python's random.randint.
  int64_t randint(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }

 private:
  uint64_t seed_, stream_, base_;
  uint64_t block_ = 0;
  philox::Words words_{};
  int used_ = 4;
};

}  // namespace ordo::text
