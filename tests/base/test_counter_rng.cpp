// ordo's one generator of draws outside the kernels (base/counter_rng.h): its
// words are Philox's (whose known answers tests/tensor/test_philox.cpp
// checks), read in order from (key << 24); the distributions are checked
// against their definitions with bounds that the usual mistakes (a biased
// integer, a naive shuffle) break.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "base/counter_rng.h"
#include "base/philox.h"

using namespace ordo;

TEST_CASE("counter rng: key k reads the Philox words of its stream from element k * 2^24", "[rng]") {
  CounterRng first(7, 9), third(7, 9, 2);
  for (uint64_t element = 0; element < 3; ++element) {
    const philox::Words expected = philox::draw(7, 9, element);
    for (uint32_t word : expected.x) CHECK(first.next_u32() == word);
  }
  const philox::Words keyed = philox::draw(7, 9, uint64_t{2} << 24);
  for (uint32_t word : keyed.x) CHECK(third.next_u32() == word);
  CHECK_THROWS_WITH(CounterRng(7, 9, uint64_t{1} << 40), Catch::Contains("beyond 2^40"));
}

TEST_CASE("counter rng: uniforms and normals are Philox's formulas on consecutive words", "[rng]") {
  const philox::Words w = philox::draw(3, 4, 0);
  CounterRng rng(3, 4);
  CHECK(rng.uniform() == philox::uniform_f64(w.x[0], w.x[1]));
  CHECK(rng.normal() == philox::normal_from(w.x[2], w.x[3]));
  const philox::Words next = philox::draw(3, 4, 1);
  CHECK(rng.uniform32() == static_cast<double>(next.x[0]) / 4294967296.0);
  CHECK(rng.chance(1.0));   // every word is below 2^32
  CHECK_FALSE(rng.chance(0.0));
}

TEST_CASE("counter rng: streams, seeds and epochs draw different words", "[rng]") {
  auto words = [](uint64_t seed, uint64_t stream) {
    CounterRng rng(seed, stream);
    std::vector<uint32_t> w;
    for (int i = 0; i < 8; ++i) w.push_back(rng.next_u32());
    return w;
  };
  const uint64_t plan = rng_stream(RngPurpose::plan);
  CHECK(plan == uint64_t{2} << 40);  // text's streams keep the values their draws were made with
  CHECK(rng_stream(RngPurpose::mask, 3) == ((uint64_t{4} << 40) | 3));
  CHECK(words(1, plan) == words(1, plan));
  CHECK(words(1, plan) != words(2, plan));
  CHECK(words(1, plan) != words(1, rng_stream(RngPurpose::plan, 1)));
  CHECK(words(1, plan) != words(1, rng_stream(RngPurpose::probe_folds)));
}

TEST_CASE("counter rng: below(n) is exactly uniform, even where multiply-shift alone is not", "[rng]") {
  // n = 3 * 2^30: multiply-shift alone maps two of every four words to the
  // results j with j % 3 == 0 (probability 1/2); exact draws give 1/3 each.
  const int64_t n = int64_t{3} << 30;
  CounterRng rng(11, 1);
  std::array<int, 3> by_residue{};
  const int draws = 30000;
  for (int i = 0; i < draws; ++i) {
    const int64_t j = rng.below(n);
    REQUIRE(j >= 0);
    REQUIRE(j < n);
    ++by_residue[j % 3];
  }
  // Binomial(30000, 1/3): sd 82; 6 sd = 490, against the 5000 of the bias.
  for (int count : by_residue) CHECK(std::abs(count - draws / 3) < 490);

  // n = 2^32 takes every word as it is; n = 1 has one result.
  CounterRng whole(5, 6), reference(5, 6);
  for (int i = 0; i < 8; ++i) CHECK(whole.below(int64_t{1} << 32) == reference.next_u32());
  CHECK(whole.below(1) == 0);
  CHECK(whole.randint(4, 4) == 4);
  CHECK_THROWS_WITH(whole.below(0), Catch::Contains("below 0"));
  CHECK_THROWS(whole.below((int64_t{1} << 32) + 1));
}

TEST_CASE("counter rng: a shuffle gives each order of three items equally often", "[rng]") {
  // A naive shuffle (a pick among all n at every step) gives some orders
  // 5/27 and others 4/27 of the time: 11111 or 8889 of 60000 against 10000.
  CounterRng rng(2, 8);
  std::map<std::vector<int>, int> seen;
  const int shuffles = 60000;
  for (int i = 0; i < shuffles; ++i) {
    std::vector<int> items = {0, 1, 2};
    shuffle(items, rng);
    ++seen[items];
  }
  REQUIRE(seen.size() == 6);
  // Binomial(60000, 1/6): sd 91; 5 sd = 456.
  for (const auto& [order, count] : seen) CHECK(std::abs(count - shuffles / 6) < 456);
}

TEST_CASE("shuffled order is a permutation fixed by seed and stream", "[rng]") {
  auto a = shuffled_order(1000, CounterRng(1, 5));
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 1000; ++i) REQUIRE(sorted[i] == i);
  CHECK(a == shuffled_order(1000, CounterRng(1, 5)));
  CHECK(a != shuffled_order(1000, CounterRng(2, 5)));
  CHECK(a != shuffled_order(1000, CounterRng(1, 6)));
}
