// The AMX bf16 product (tensor/cpu/gemm_amx.h) against naive loops.
//
// The emulated tile unit runs the kernel's packing, blocking and epilogue
// with each element an FP32 sum over k in order, so it must equal, bit for
// bit, the naive loop that sums the same exact products (a product of two
// bf16 values is exact in f32) in the same order: any misplaced, missing or
// doubled element of the packed layouts shows. alpha and beta are powers of
// two, so alpha s + beta c is exact up to its one rounding however the
// compiler contracts it.
//
// The hardware's tiles sum in their own order: each element within
// k u sum |a b| (u = 2^-24) of the exact sum, as any FP32 sum of k exact
// products (Higham, Sec. 3.1), and the same bits on any thread count.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "tensor/backend.h"
#include "tensor/cpu/gemm_amx.h"
#include "tensor/dtype.h"
#include "tests/helpers.h"

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace ordo;

namespace {

struct AmxCase {
  int64_t m, n, k;
  bool ta = false, tb = false;
  int64_t batch = 1;
  bool share_b = false;  // B's batch_stride 0
  int64_t pad = 0;       // columns of ld beyond the stored width
};

// A stored operand: rows x (cols + pad) per matrix, `count` matrices.
struct Stored {
  MatrixBatch mb;
  const uint16_t* bits;
  uint16_t at(int64_t index, int64_t row, int64_t col) const {  // (row, col) of op(X) in matrix index
    const int64_t r = mb.trans ? col : row, c = mb.trans ? row : col;
    return bits[index * mb.batch_stride + r * mb.ld + c];
  }
};

Stored stored(int64_t rows, int64_t cols, bool trans, int64_t count, bool shared, int64_t pad, uint64_t seed) {
  const int64_t stored_rows = trans ? cols : rows, stored_cols = (trans ? rows : cols) + pad;
  const Tensor t = test::random_tensor({shared ? 1 : count, stored_rows, stored_cols}, seed, DType::f32).to(DType::bf16);
  MatrixBatch mb{t, trans, stored_cols, shared ? 0 : stored_rows * stored_cols};
  return {mb, static_cast<const uint16_t*>(t.raw_data())};
}

struct Run {
  Stored a, b;
  std::vector<float> c0;  // C before the product
};

Run make_run(const AmxCase& s, uint64_t seed) {
  Run r{stored(s.m, s.k, s.ta, s.batch, false, s.pad, seed), stored(s.k, s.n, s.tb, s.batch, s.share_b, s.pad, seed + 1),
        test::random_tensor({s.batch, s.m, s.n}, seed + 2, DType::f32).to_vector<float>()};
  return r;
}

std::vector<float> product(const AmxCase& s, const Run& r, double alpha, double beta, cpu::TileUnit unit,
                           cpu::Packing packing = cpu::Packing::automatic) {
  Tensor c = Tensor::from_vector(r.c0, {s.batch, s.m, s.n});
  if (beta == 0) c.fill_(std::nan(""));  // beta = 0 must not read C
  cpu::gemm_amx(c, r.a.mb, r.b.mb, s.batch, s.m, s.n, s.k, alpha, beta, unit, packing);
  return c.to_vector<float>();
}

// The naive loop: f32 sums over k in order, then alpha s + beta c.
std::vector<float> naive(const AmxCase& s, const Run& r, float alpha, float beta) {
  std::vector<float> out(r.c0.size());
  for (int64_t i = 0; i < s.batch; ++i)
    for (int64_t row = 0; row < s.m; ++row)
      for (int64_t col = 0; col < s.n; ++col) {
        float sum = 0.0f;
        for (int64_t e = 0; e < s.k; ++e)
          sum += bf16_to_f32(r.a.at(i, row, e)) * bf16_to_f32(r.b.at(s.share_b ? 0 : i, e, col));
        const size_t at = static_cast<size_t>((i * s.m + row) * s.n + col);
        out[at] = alpha * sum + (beta == 0.0f ? 0.0f : beta * r.c0[at]);
      }
  return out;
}

const AmxCase kCases[] = {
    {1, 1, 1},                                   // all padding but one element
    {33, 17, 31},                                // every edge: a row past a block, k short of a tile
    {32, 32, 32},                                // exactly one block
    {70, 50, 65, true, false},                   // A transposed
    {45, 40, 70, false, true},                   // B transposed
    {37, 33, 40, true, true, 1, false, 3},       // both, ld past the width
    {20, 36, 48, false, false, 3, false, 5},     // a batch, each its own B, ld past the width
    {20, 36, 48, false, true, 4, true},          // a batch sharing one B
    {300, 70, 100},                              // three row tasks, threads share the packed B
    {40, 24, 64, false, false, 5, false, 0},     // more matrices than threads: a thread per matrix
    {50, 48, 97, true, true, 2, false, 1},       // AVX-512 blocks (16 x 16 words) beside scalar edges, odd ld
    {64, 64, 128, true, false},                  // only whole vector blocks
    {96, 40, 64},                                // A read in place: whole blocks, k whole tiles
    {75, 33, 96, false, true, 2, false, 7},      // in place beside a packed last block, ld past the width
    {40, 50, 1600, true, false},                 // k in three chunks (768, 768, 64 values), sums carried over
    {64, 32, 1536},                              // two whole chunks, read in place
};

int64_t work(const AmxCase& s) { return s.batch * s.m * s.n * s.k; }

}  // namespace

// Packing::automatic packs whole 16 x 16 blocks of words with AVX-512 where
// the CPU has it; Packing::scalar element by element. Both must lay out the
// operands the emulated tiles read as the naive loop does.
TEST_CASE("AMX kernel layout (emulated tiles, both packings): bit for bit the FP32 sum over k in order", "[gemm]") {
  uint64_t seed = 100;
  for (const AmxCase& s : kCases) {
    INFO("m " << s.m << " n " << s.n << " k " << s.k << " ta " << s.ta << " tb " << s.tb << " batch " << s.batch
              << " shared B " << s.share_b << " pad " << s.pad);
    const Run r = make_run(s, seed += 3);
    for (const auto& [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{0.5, 2.0}}) {
      const Tensor expected = Tensor::from_vector(naive(s, r, float(alpha), float(beta)), {s.batch, s.m, s.n});
      for (cpu::Packing packing : {cpu::Packing::automatic, cpu::Packing::scalar}) {
        INFO("alpha " << alpha << " beta " << beta << " packing " << (packing == cpu::Packing::scalar ? "scalar" : "automatic"));
        const std::vector<float> got = product(s, r, alpha, beta, cpu::TileUnit::emulated, packing);
        CHECK(test::bit_identical(Tensor::from_vector(got, {s.batch, s.m, s.n}), expected));
      }
    }
  }
}

// Where the CPU has no AMX-BF16 the test checks that the hardware unit is refused.
TEST_CASE("AMX hardware tiles: FP32 sums of the exact products within k u sum of abs(a b) and the same bits on any "
          "thread count",
          "[gemm]") {
  if (!cpu::amx_available()) {
    WARN("this CPU has no usable AMX-BF16 (" << cpu::amx_description() << "): only the refusal is tested");
    const AmxCase s{4, 4, 4};
    CHECK_THROWS_WITH(product(s, make_run(s, 1), 1.0, 0.0, cpu::TileUnit::hardware),
                      Catch::Contains("gemm (AMX)"));
    return;
  }
  uint64_t seed = 500;
  for (const AmxCase& s : kCases) {
    INFO("m " << s.m << " n " << s.n << " k " << s.k << " ta " << s.ta << " tb " << s.tb << " batch " << s.batch);
    const Run r = make_run(s, seed += 3);
    const std::vector<float> got = product(s, r, 1.0, 0.0, cpu::TileUnit::hardware);
    for (int64_t i = 0; i < s.batch; ++i)
      for (int64_t row = 0; row < s.m; ++row)
        for (int64_t col = 0; col < s.n; ++col) {
          double exact = 0, magnitude = 0;
          for (int64_t e = 0; e < s.k; ++e) {
            const double p = double(bf16_to_f32(r.a.at(i, row, e))) * bf16_to_f32(r.b.at(s.share_b ? 0 : i, e, col));
            exact += p;
            magnitude += std::fabs(p);
          }
          const double g = got[static_cast<size_t>((i * s.m + row) * s.n + col)];
          CHECK(std::fabs(g - exact) <= double(s.k) * 0x1p-24 * magnitude);
        }
#ifdef _OPENMP
    if (work(s) >= 64 * 64 * 64) {  // threaded: 1 and 3 threads split the work differently
      const int threads = omp_get_max_threads();
      for (int t : {1, 3}) {
        omp_set_num_threads(t);
        const std::vector<float> again = product(s, r, 1.0, 0.0, cpu::TileUnit::hardware);
        omp_set_num_threads(threads);
        CHECK(again == got);
      }
    }
#endif
  }
  // cpu::gemm takes bf16 operands to the tiles unless ORDO_AMX=off.
  const AmxCase s{50, 40, 30};
  const Run r = make_run(s, 9);
  Tensor c = Tensor::zeros({1, s.m, s.n});
  cpu::gemm(c, r.a.mb, r.b.mb, 1, s.m, s.n, s.k, 1.0, 0.0, MatmulPrecision::bf16);
  CHECK((c.to_vector<float>() == product(s, r, 1.0, 0.0, cpu::TileUnit::hardware)) == cpu::amx_enabled());
}

TEST_CASE("ORDO_AMX: off sends bf16 products to the FP32 path, a value it does not know is refused", "[gemm]") {
  const test::CommandResult off = test::run_ordo("info", "ORDO_AMX=off ");
  CHECK(off.exit_code == 0);
  CHECK_THAT(off.output, Catch::Contains(cpu::amx_available() ? "bf16 products on the CPU: widened to FP32 (off (ORDO_AMX=off))"
                                                               : "bf16 products on the CPU: widened to FP32 ("));
  const test::CommandResult bad = test::run_ordo("info", "ORDO_AMX=maybe ");
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.output, Catch::Contains("ORDO_AMX: expected on, off or auto, got 'maybe'"));
}
