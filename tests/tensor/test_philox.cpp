// Philox4x32-10: the known-answer vectors of its specification, and ordo's
// keying of draws by (seed, stream, element index).
#include <cmath>
#include <vector>

#include "base/philox.h"
#include "tensor/backend.h"
#include "tensor/ops.h"
#include "tests/helpers.h"

using namespace ordo;

TEST_CASE("Philox4x32-10 reproduces the Random123 known-answer vectors", "[philox]") {
  // Salmon et al. 2011 / Random123 kat_vectors, "philox4x32 10" lines.
  struct Kat {
    philox::Words counter;
    uint32_t key0, key1;
    philox::Words expected;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
      {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu,
       {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
      {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u,
       {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
  };
  for (const Kat& k : kats) {
    philox::Words out = philox::philox4x32_10(k.counter, k.key0, k.key1);
    for (int i = 0; i < 4; ++i) CHECK(out.x[i] == k.expected.x[i]);
  }
}

TEST_CASE("draws are keyed by (seed, stream, index) and nothing else", "[philox]") {
  // Element i of a draw is the same whether drawn alone or inside a larger tensor.
  Tensor big = Tensor::empty({1000}, DType::f64);
  uniform_(big, 0, 1, 5, 9);
  std::vector<double> v = big.to_doubles();
  for (uint64_t i : {0ull, 1ull, 517ull, 999ull}) {
    philox::Words w = philox::draw(5, 9, i);
    CHECK(v[i] == philox::uniform_f64(w.x[0], w.x[1]));
  }
  // The counter layout: index in words 0-1, stream in words 2-3, seed as the key.
  philox::Words direct = philox::philox4x32_10({{7, 0, 3, 0}}, 11, 0);
  philox::Words keyed = philox::draw(11, 3, 7);
  for (int i = 0; i < 4; ++i) CHECK(direct.x[i] == keyed.x[i]);
  // f32 uniforms use the top 24 bits: exactly representable, in [0, 1).
  CHECK(philox::uniform_f32(0xffffffffu) == 1.0f - 0x1p-24f);
  CHECK(philox::uniform_f32(0) == 0.0f);
}

TEST_CASE("the dropout threshold keeps exactly 1 - p of the 32-bit words", "[philox]") {
  CHECK(philox::dropout_threshold(0.0) == 0);
  CHECK(philox::dropout_threshold(0.5) == 2147483648ull);
  CHECK(philox::dropout_threshold(1.0) == 4294967296ull);
  CHECK(philox::dropout_threshold(0.1) == 429496730ull);  // round(0.1 * 2^32)
}

TEST_CASE("the same seed gives bit-identical draws on every run", "[philox][determinism]") {
  Tensor a = Tensor::empty({4096}, DType::f32), b = Tensor::empty({4096}, DType::f32);
  normal_(a, 0, 0.02, 123, 4);
  normal_(b, 0, 0.02, 123, 4);
  CHECK(ordo::test::bit_identical(a, b));
  trunc_normal_(a, 0, 1, 123, 5);
  trunc_normal_(b, 0, 1, 123, 5);
  CHECK(ordo::test::bit_identical(a, b));
  normal_(b, 0, 1, 124, 5);
  CHECK_FALSE(ordo::test::bit_identical(a, b));
}

TEST_CASE("the CPU dropout mask is philox::dropout_keep element by element", "[philox]") {
  // Sizes around the kernel's blocks of 32 elements and 8 draws, and a seed
  // and stream with high words set (the vector path carries into them).
  const uint64_t seed = 0x123456789abcdef0ull, stream = 0xfedcba9876543210ull;
  for (int64_t n : {1, 3, 31, 32, 33, 100, 1025, 4133}) {
    Tensor ones = Tensor::ones({n}, DType::f64);
    std::vector<double> y = dropout(ones, 0.3, seed, stream).to_doubles();
    const uint64_t threshold = philox::dropout_threshold(0.3);
    for (int64_t i = 0; i < n; ++i) {
      bool kept = philox::dropout_keep(seed, stream, static_cast<uint64_t>(i), threshold);
      INFO("n " << n << ", element " << i);
      CHECK(y[i] == (kept ? 1.0 / 0.7 : 0.0));
    }
  }
}

TEST_CASE("the CPU dropout of f32 is philox::dropout_keep and x * scale in f32, element by element", "[philox]") {
  // f32 runs whole blocks of 64 elements (16 draws) in vectors where the CPU
  // has AVX-512, the rest element by element: sizes around those blocks and
  // the kernel's chunks of 2048, several rates, in place (pretraining's
  // residual dropout is), and into bf16 (the attention's dropped
  // probabilities for the P.V product): the f32 value rounded to nearest even.
  const uint64_t seed = 0x0f1e2d3c4b5a6978ull, stream = 0x8877665544332211ull;
  for (double p : {0.1, 0.3, 0.5, 0.9}) {
    for (int64_t n : {1, 63, 64, 65, 127, 128, 129, 1000, 4160}) {
      std::vector<double> xs(n);
      for (int64_t i = 0; i < n; ++i) xs[i] = std::sin(0.37 * i) * 3 + 0.001 * i;
      const Tensor x = Tensor::from_vector(xs, {n}).to(DType::f32);
      const std::vector<double> x32 = x.to_doubles();
      const uint64_t threshold = philox::dropout_threshold(p);
      const float scale = static_cast<float>(1.0 / (1.0 - p));
      for (bool in_place : {false, true}) {
        INFO("p " << p << ", n " << n << (in_place ? ", in place" : ""));
        Tensor y = x.clone();
        if (in_place)
          cpu::dropout(y, y, p, PhiloxStream{seed, stream, Tensor()});  // the backend kernel, out = x
        else
          y = dropout(x, p, seed, stream);
        const std::vector<double> got = y.to_doubles();
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; ++i) {
          const bool kept = philox::dropout_keep(seed, stream, static_cast<uint64_t>(i), threshold);
          const float expected = kept ? static_cast<float>(x32[i]) * scale : 0.0f;
          wrong += !(static_cast<float>(got[i]) == expected && std::signbit(got[i]) == std::signbit(expected));
        }
        CHECK(wrong == 0);
      }
      INFO("p " << p << ", n " << n << ", into bf16");
      const Tensor y16 = Tensor::empty({n}, DType::bf16);
      cpu::dropout(y16, x, p, PhiloxStream{seed, stream, Tensor()});
      const uint16_t* bits = static_cast<const uint16_t*>(y16.raw_data());
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; ++i) {
        const bool kept = philox::dropout_keep(seed, stream, static_cast<uint64_t>(i), threshold);
        wrong += bits[i] != f32_to_bf16(kept ? static_cast<float>(x32[i]) * scale : 0.0f);
      }
      CHECK(wrong == 0);
    }
  }
}
