// ordo's one generator of random draws outside the tensor kernels: a cursor
// into the Philox4x32-10 stream (seed, stream) of base/philox.h, so a draw is
// the same on every platform and standard library (unlike std::
// distributions and std::shuffle, whose use of the generator is left to the
// implementation).
//
// A CounterRng starts at one `key` (a document, an example, a fold) of its
// stream: draw k of key is word k % 4 of element (key << 24) + k / 4. Nothing
// is carried between keys, so any document's plan or any example's mask can
// be regenerated on its own, in any order — what exact resumption of
// pretraining needs. A key has 2^26 words before it runs into the next key's.
//
// Each purpose draws from its own stream (rng_stream): two purposes under one
// seed never see the same words.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/philox.h"

namespace ordo {

// Every purpose of the project's draws, in one list so no two share a stream.
// (The synthetic grammar keys its documents by stream = document index, far
// below 2^40; the tensor kernels' streams are the nn layer's own.)
enum class RngPurpose : uint64_t {
  split = 1,              // text: a document's held-out or training split
  plan = 2,               // text: a document's pretraining instances
  shuffle = 3,            // text: the order of an epoch's instances or windows
  mask = 4,               // text: an example's masked positions and replacements
  probe_words = 5,        // probe: the words of identical-word probing
  probe_folds = 6,        // probe: the cross-validation folds over positions
  probe_pairs = 7,        // probe: a fold's sample of training pairs
  held_out_positions = 8, // probe: which positions of a held-out window are predicted
  held_out_masks = 9,     // probe: what replaces a predicted position
  gaussian_control = 10,  // probe: the random table of the chance-level control
  finetune_order = 11,    // train: the order of a fine-tuning epoch's examples
};

// The stream of `purpose` in `epoch`: each epoch of a purpose its own.
inline uint64_t rng_stream(RngPurpose purpose, int64_t epoch = 0) {
  return (static_cast<uint64_t>(purpose) << 40) | static_cast<uint64_t>(epoch);
}

class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t stream, uint64_t key = 0) : seed_(seed), stream_(stream), base_(key << 24) {
    ORDO_CHECK(key < (uint64_t{1} << 40), "random-draw key ", key, " is beyond 2^40");
  }

  uint32_t next_u32() {
    if (used_ == 4) {
      words_ = philox::draw(seed_, stream_, base_ + block_++);
      used_ = 0;
    }
    return words_.x[used_++];
  }
  // Uniform in [0, 1) with 53 bits from two words, as Python's random.random().
  double uniform() {
    const uint32_t high = next_u32();
    return philox::uniform_f64(high, next_u32());
  }
  // Uniform in [0, 1) in steps of 2^-32 from one word: half the draws of
  // uniform(), for the synthetic grammar's many small choices.
  double uniform32() { return next_u32() * 0x1p-32; }
  // True with probability p (to within 2^-32).
  bool chance(double p) { return uniform32() < p; }
  // A standard normal from two words (philox::normal_from: Box-Muller).
  double normal() {
    const uint32_t w0 = next_u32();
    return philox::normal_from(w0, next_u32());
  }
  // Uniform integer in [0, n), 0 < n <= 2^32, exactly: Lemire's multiply-
  // shift, redrawing the (at most n - 1 in 2^32) words that would favour
  // some results ("Fast random integer generation in an interval", 2019).
  int64_t below(int64_t n) {
    ORDO_CHECK(n > 0 && n <= (int64_t{1} << 32), "a uniform integer below ", n, " is not drawn (0 < n <= 2^32)");
    const uint64_t range = static_cast<uint64_t>(n);
    uint64_t product = next_u32() * range;
    if (static_cast<uint32_t>(product) < range) {
      const uint64_t rejected = ((uint64_t{1} << 32) - range) % range;  // 2^32 mod n
      while (static_cast<uint32_t>(product) < rejected) product = next_u32() * range;
    }
    return static_cast<int64_t>(product >> 32);
  }
  // Uniform integer in [lo, hi], as Python's random.randint.
  int64_t randint(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }

 private:
  uint64_t seed_, stream_, base_;
  uint64_t block_ = 0;
  philox::Words words_{};
  int used_ = 4;
};

// Fisher-Yates (Durstenfeld's, from the back): position i takes a uniform
// pick of items[0..i], so every order is equally likely.
template <class T>
void shuffle(std::vector<T>& items, CounterRng& rng) {
  for (int64_t i = static_cast<int64_t>(items.size()) - 1; i > 0; --i) std::swap(items[i], items[rng.below(i + 1)]);
}

// 0 .. n-1 in an order drawn from `rng` (shuffle).
std::vector<int64_t> shuffled_order(int64_t n, CounterRng rng);

}  // namespace ordo
