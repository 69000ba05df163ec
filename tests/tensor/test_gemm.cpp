// cpu::gemm (the BLAS when built with one) and ordo's own kernel gemm_own,
// against a naive triple loop in long double.
//
// Error bound. Each c[i][j] is alpha * (a sum of k products) + beta * c0. In
// any summation order with fused or separate multiply-adds, every product
// passes through at most k roundings in the sum, plus one per KC block where
// blocked kernels add partial sums into C (k/KC + 1 <= k for KC >= 2), plus
// the alpha and beta updates: at most 2k + 4 roundings of relative size
// u = eps / 2. So (Higham, "Accuracy and Stability of Numerical Algorithms",
// Sec. 3.1, first order)
//   |c - exact| <= (k + 2) * eps * (|alpha| * sum_p |a_ip| |b_pj| + |beta| |c0_ij|).
// The bound is per element and scales with the magnitudes actually summed, so
// a missing, doubled or misplaced term (of size ~|a||b|, about 1/4 here)
// exceeds it by orders of magnitude for every k tested. The reference in
// long double (64-bit mantissa) is exact enough not to matter for f64.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tensor/backend.h"
#include "tensor/cpu/cpu_paths.h"
#include "tensor/cpu/gemm_own.h"

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace ordo;

namespace {

struct Case {
  int64_t m, n, k;
  bool ta = false, tb = false;
  int64_t batch = 1;
  bool share_a = false, share_b = false;  // batch_stride 0
  int64_t pad = 0;                        // extra columns of ld beyond the stored width
  double alpha = 1, beta = 0;
};

std::string describe(const Case& c) {
  return detail::cat("m=", c.m, " n=", c.n, " k=", c.k, " trans_a=", c.ta, " trans_b=", c.tb,
                     " batch=", c.batch, " share_a=", c.share_a, " share_b=", c.share_b,
                     " pad=", c.pad, " alpha=", c.alpha, " beta=", c.beta);
}

// One operand: `count` matrices of rows x cols (the stored shape), row stride
// cols + pad, consecutive matrices a little apart so batch_stride is not the
// matrix size.
template <class T>
MatrixBatch random_operand(int64_t rows, int64_t cols, bool trans, int64_t batch, bool shared,
                           int64_t pad, std::mt19937& rng) {
  int64_t ld = cols + pad;
  int64_t stride = shared ? 0 : rows * ld + 3;
  int64_t count = shared ? 1 : batch;
  std::vector<T> values(static_cast<size_t>((count - 1) * stride + rows * ld));
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (auto& v : values) v = static_cast<T>(uniform(rng));
  return MatrixBatch{Tensor::from_vector(values), trans, ld, stride};
}

template <class T>
T element(const MatrixBatch& x, int64_t index, int64_t r, int64_t col) {
  const T* p = x.t.data<T>() + index * x.batch_stride;
  return x.trans ? p[col * x.ld + r] : p[r * x.ld + col];
}

struct Path {
  const char* name;
  void (*run)(const Tensor&, const MatrixBatch&, const MatrixBatch&, int64_t, int64_t, int64_t,
              int64_t, double, double);
};

void cpu_gemm_fp32(const Tensor& c, const MatrixBatch& a, const MatrixBatch& b, int64_t batch, int64_t m, int64_t n,
                   int64_t k, double alpha, double beta) {
  cpu::gemm(c, a, b, batch, m, n, k, alpha, beta, MatmulPrecision::fp32);
}

// Both paths in a build with a BLAS; the own kernel alone otherwise (where
// cpu::gemm is the own kernel too).
std::vector<Path> paths() {
  std::vector<Path> out{{"gemm_own", cpu::gemm_own}};
  if (cpu::blas_compiled()) out.push_back({"cpu::gemm (BLAS)", cpu_gemm_fp32});
  return out;
}

// Runs every path on the same fresh random inputs and checks every element
// against the naive product with the bound above.
template <class T>
void check_all_paths(const Case& cs, uint32_t seed) {
  INFO(describe(cs) << " dtype=" << dtype_name(dtype_of<T>::value));
  std::mt19937 rng(seed);
  MatrixBatch a = cs.ta ? random_operand<T>(cs.k, cs.m, true, cs.batch, cs.share_a, cs.pad, rng)
                        : random_operand<T>(cs.m, cs.k, false, cs.batch, cs.share_a, cs.pad, rng);
  MatrixBatch b = cs.tb ? random_operand<T>(cs.n, cs.k, true, cs.batch, cs.share_b, cs.pad, rng)
                        : random_operand<T>(cs.k, cs.n, false, cs.batch, cs.share_b, cs.pad, rng);
  // beta == 0: C starts as NaN, which must not reach the result.
  std::vector<T> c0(static_cast<size_t>(cs.batch * cs.m * cs.n));
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (auto& v : c0) v = cs.beta == 0 ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(uniform(rng));

  const long double eps = std::numeric_limits<T>::epsilon();
  std::vector<long double> expected(c0.size()), bound(c0.size());
  for (int64_t bi = 0; bi < cs.batch; ++bi) {
    for (int64_t i = 0; i < cs.m; ++i) {
      for (int64_t j = 0; j < cs.n; ++j) {
        long double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < cs.k; ++p) {
          long double x = element<T>(a, bi, i, p), y = element<T>(b, bi, p, j);
          sum += x * y;
          magnitude += std::fabs(x * y);
        }
        size_t at = static_cast<size_t>((bi * cs.m + i) * cs.n + j);
        expected[at] = cs.alpha * sum;
        long double scale = std::fabs(cs.alpha) * magnitude;
        if (cs.beta != 0) {
          expected[at] += cs.beta * static_cast<long double>(c0[at]);
          scale += std::fabs(cs.beta * static_cast<long double>(c0[at]));
        }
        bound[at] = (cs.k + 2) * eps * scale;
      }
    }
  }

  for (const Path& path : paths()) {
    INFO("path: " << path.name);
    Tensor c = Tensor::from_vector(c0, {cs.batch, cs.m, cs.n});
    path.run(c, a, b, cs.batch, cs.m, cs.n, cs.k, cs.alpha, cs.beta);
    std::vector<T> got = c.to_vector<T>();
    int64_t failures = 0;
    for (size_t at = 0; at < got.size(); ++at) {
      long double err = std::fabs(static_cast<long double>(got[at]) - expected[at]);
      if (!(err <= bound[at]) && failures++ < 5) {  // NaN fails too
        FAIL_CHECK("c[" << at << "] (flat) = " << got[at] << ", expected "
                        << static_cast<double>(expected[at]) << " (error "
                        << static_cast<double>(err) << ", bound " << static_cast<double>(bound[at])
                        << ")");
      }
    }
    CHECK(failures == 0);
  }
}

}  // namespace

TEST_CASE("gemm: every trans combination and odd sizes match the naive product", "[gemm]") {
  const int64_t sizes[] = {1, 3, 17, 65};
  const double alphas[] = {1, -0.5, 2.5};
  const double betas[] = {0, 1, -1.5};
  uint32_t seed = 1;
  for (int t = 0; t < 4; ++t) {
    for (int64_t m : sizes) {
      for (int64_t n : sizes) {
        for (int64_t k : sizes) {
          Case cs{m, n, k, (t & 1) != 0, (t & 2) != 0};
          cs.alpha = alphas[seed % 3];
          cs.beta = betas[(seed / 3) % 3];
          check_all_paths<float>(cs, seed);
          check_all_paths<double>(cs, seed);
          ++seed;
        }
      }
    }
  }
}

TEST_CASE("gemm: sizes that cross the own kernel's cache blocks", "[gemm]") {
  // 129 and 200+: several MR x NR tiles with ragged edges; k = 260 and 600
  // span two and three KC blocks (later blocks add to C); m = 389 splits into
  // several MC blocks; n = 4100 spans two NC panels.
  const Case cases[] = {
      {129, 129, 129},
      {200, 300, 260, false, true, 1, false, false, 0, 1.5, -0.5},
      {389, 40, 600, true, false, 1, false, false, 0, -1, 1},
      {7, 4100, 3, true, true, 1, false, false, 0, 1, 0},
      {130, 70, 257, false, false, 1, false, false, 5, 0.5, 2},
  };
  for (const Case& cs : cases) {
    check_all_paths<float>(cs, 7);
    check_all_paths<double>(cs, 8);
  }
}

TEST_CASE("gemm: batches, shared operands (batch_stride 0) and padded rows", "[gemm]") {
  // batch 9 of small matrices: the threads take whole matrices; batch 2 of
  // larger ones: the threads share each matrix.
  const Case cases[] = {
      {17, 33, 65, false, false, 9, false, false, 0, 1, 0},
      {17, 33, 65, true, false, 9, true, false, 3, 1, 1},
      {33, 17, 20, false, true, 9, false, true, 1, -2, 0.5},
      {65, 3, 129, true, true, 9, true, false, 2, 1, 0},
      {150, 140, 130, false, true, 2, false, true, 4, 1, -1},
      {150, 140, 130, true, false, 3, true, false, 0, 0.5, 0},
      {1, 1, 1, false, false, 5, false, false, 0, 1, 0},
  };
  uint32_t seed = 100;
  for (const Case& cs : cases) {
    check_all_paths<float>(cs, seed);
    check_all_paths<double>(cs, seed + 1);
    seed += 2;
  }
}

TEST_CASE("gemm: beta = 0 ignores NaN in C, k = 0 and alpha = 0 only scale C", "[gemm]") {
  for (const Path& path : paths()) {
    INFO("path: " << path.name);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    // beta = 0: the NaN already in C must not leak into the result.
    Tensor a = Tensor::from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2});
    Tensor c = Tensor::full({1, 2, 2}, nan, DType::f64);
    path.run(c, {a, false, 2, 0}, {a, false, 2, 0}, 1, 2, 2, 2, 1, 0);
    CHECK(c.to_vector<double>() == std::vector<double>{7, 10, 15, 22});

    // k = 0: the product is empty, C = beta * C (and 0 for beta = 0, even over NaN).
    Tensor empty = Tensor::empty({0}, DType::f64);
    Tensor c1 = Tensor::from_vector(std::vector<double>{1, -2, 3, 4}, {1, 2, 2});
    path.run(c1, {empty, false, 0, 0}, {empty, false, 2, 0}, 1, 2, 2, 0, 1, 3);
    CHECK(c1.to_vector<double>() == std::vector<double>{3, -6, 9, 12});
    Tensor c2 = Tensor::full({1, 2, 2}, nan, DType::f64);
    path.run(c2, {empty, false, 0, 0}, {empty, false, 2, 0}, 1, 2, 2, 0, 1, 0);
    CHECK(c2.to_vector<double>() == std::vector<double>{0, 0, 0, 0});

    // alpha = 0: A and B are not read (BLAS semantics), so their NaNs do not matter.
    Tensor bad = Tensor::full({2, 2}, nan, DType::f64);
    Tensor c3 = Tensor::from_vector(std::vector<double>{1, 2, 3, 4}, {1, 2, 2});
    path.run(c3, {bad, false, 2, 0}, {bad, true, 2, 0}, 1, 2, 2, 2, 0, -1);
    CHECK(c3.to_vector<double>() == std::vector<double>{-1, -2, -3, -4});
  }
}

TEST_CASE("gemm: a broadcast row (ld 0), which CBLAS cannot express, falls back to the own kernel", "[gemm]") {
  // A is [3, 4] with every row the same stored row: ld = 0.
  Tensor row = Tensor::from_vector(std::vector<float>{1, 2, 3, 4});
  Tensor b = Tensor::from_vector(std::vector<float>{1, 0, 0, 1, 1, 1, 2, -1}, {4, 2});
  for (const Path& path : paths()) {
    INFO("path: " << path.name);
    Tensor c = Tensor::empty({1, 3, 2});
    path.run(c, {row, false, 0, 0}, {b, false, 2, 0}, 1, 3, 2, 4, 1, 0);
    // [1 2 3 4] @ b = [1 + 3 + 8, 2 + 3 - 4]
    CHECK(c.to_vector<float>() == std::vector<float>{12, 1, 12, 1, 12, 1});
  }
}

TEST_CASE("gemm_own: results do not depend on the thread count or on batching", "[gemm]") {
  std::mt19937 rng(42);
  const int64_t m = 150, n = 70, k = 300, batch = 4;
  MatrixBatch a = random_operand<float>(m, k, false, batch, false, 1, rng);
  MatrixBatch b = random_operand<float>(n, k, true, batch, false, 0, rng);
  auto run = [&](int64_t count, int64_t first) {
    Tensor c = Tensor::empty({count, m, n});
    MatrixBatch a1 = a, b1 = b;
    a1.t = a.t.slice(0, first * a.batch_stride, a.t.numel());
    b1.t = b.t.slice(0, first * b.batch_stride, b.t.numel());
    cpu::gemm_own(c, a1, b1, count, m, n, k, 1.25, 0);
    return c.to_vector<float>();
  };
  std::vector<float> all = run(batch, 0);
  // Matrix by matrix (the team shares each matrix) against the whole batch.
  for (int64_t i = 0; i < batch; ++i) {
    std::vector<float> one = run(1, i);
    CHECK(std::equal(one.begin(), one.end(), all.begin() + i * m * n));
  }
#ifdef _OPENMP
  int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  std::vector<float> serial = run(batch, 0);
  omp_set_num_threads(threads);
  CHECK(serial == all);
  // An odd thread count changes how rows are split into blocks.
  omp_set_num_threads(3);
  std::vector<float> three = run(batch, 0);
  omp_set_num_threads(threads);
  CHECK(three == all);
#endif
}

TEST_CASE("gemm: the BLAS switch", "[gemm]") {
  CHECK(cpu::use_blas() == cpu::blas_compiled());
  if (cpu::blas_compiled()) {
    cpu::set_use_blas(false);
    CHECK_FALSE(cpu::use_blas());
    cpu::set_use_blas(true);
    CHECK(cpu::use_blas());
  } else {
    CHECK_THROWS_AS(cpu::set_use_blas(true), Error);
    cpu::set_use_blas(false);
    CHECK_FALSE(cpu::use_blas());
  }
}

// The deterministic mode's product (tensor/cpu/cpu_paths.h): each element of
// C is fma(a_p, b_p, s) for p = 0 .. k-1 from s = 0, then alpha s, then
// beta c0 added in one FMA. The same bits on the AVX2 and AVX-512 paths, on
// 1, 2 and 3 threads, across the kernel's KC blocks (k up to 600), and with
// zero products inserted anywhere in k (a product over rows, some of them
// padding that nothing predicts).
TEST_CASE("gemm_own: each element is one FMA chain over k in order, on every path, thread count and padding",
          "[gemm][determinism]") {
  std::vector<cpu::VectorPath> vector_paths{cpu::VectorPath::avx2};
  if (cpu::avx512_path_available()) vector_paths.push_back(cpu::VectorPath::avx512);
  const cpu::VectorPath original_path = cpu::vector_path();
#ifdef _OPENMP
  const int original_threads = omp_get_max_threads();
#endif
  std::mt19937 rng(20261202);
  for (const Case& cs : {Case{37, 45, 600, false, true, 2, false, false, 1, 0.75, 0.5},
                         Case{5, 70, 257, true, false, 3, false, false, 0, 1, 0},
                         Case{130, 33, 40, false, false, 1, false, false, 2, -1.5, 0}}) {
    INFO(describe(cs));
    MatrixBatch a = cs.ta ? random_operand<float>(cs.k, cs.m, true, cs.batch, false, cs.pad, rng)
                          : random_operand<float>(cs.m, cs.k, false, cs.batch, false, cs.pad, rng);
    MatrixBatch b = cs.tb ? random_operand<float>(cs.n, cs.k, true, cs.batch, false, cs.pad, rng)
                          : random_operand<float>(cs.k, cs.n, false, cs.batch, false, cs.pad, rng);
    std::vector<float> c0(static_cast<size_t>(cs.batch * cs.m * cs.n));
    std::uniform_real_distribution<float> uniform(-1, 1);
    for (float& v : c0) v = uniform(rng);
    // The chain, written from the definition.
    std::vector<float> expected(c0.size());
    for (int64_t bi = 0; bi < cs.batch; ++bi)
      for (int64_t i = 0; i < cs.m; ++i)
        for (int64_t j = 0; j < cs.n; ++j) {
          float s = 0;
          for (int64_t p = 0; p < cs.k; ++p) s = std::fma(element<float>(a, bi, i, p), element<float>(b, bi, p, j), s);
          const size_t at = static_cast<size_t>((bi * cs.m + i) * cs.n + j);
          const float scaled = static_cast<float>(cs.alpha) * s;
          expected[at] = cs.beta == 0 ? scaled : std::fma(static_cast<float>(cs.beta), c0[at], scaled);
        }
    // The same product with rows of zeros in B (and anything in A's matching
    // columns) at every third place of k: k grows, the sums must not change.
    const int64_t padded_k = cs.k + (cs.k + 2) / 3;
    std::vector<float> ap(static_cast<size_t>(cs.batch * cs.m * padded_k)), bp(static_cast<size_t>(cs.batch * padded_k * cs.n));
    for (int64_t bi = 0; bi < cs.batch; ++bi)
      for (int64_t p = 0, q = 0; q < padded_k; ++q) {
        const bool pad_here = q % 4 == 3 || p == cs.k;
        for (int64_t i = 0; i < cs.m; ++i)
          ap[static_cast<size_t>((bi * cs.m + i) * padded_k + q)] = pad_here ? uniform(rng) : element<float>(a, bi, i, p);
        for (int64_t j = 0; j < cs.n; ++j)
          bp[static_cast<size_t>((bi * padded_k + q) * cs.n + j)] = pad_here ? 0.0f : element<float>(b, bi, p, j);
        if (!pad_here) ++p;
      }
    const MatrixBatch a_padded{Tensor::from_vector(ap), false, padded_k, cs.m * padded_k};
    const MatrixBatch b_padded{Tensor::from_vector(bp), false, cs.n, padded_k * cs.n};
    for (cpu::VectorPath vp : vector_paths) {
      cpu::set_vector_path(vp);
      for (int threads : {1, 2, 3}) {
#ifdef _OPENMP
        omp_set_num_threads(threads);
#endif
        INFO((vp == cpu::VectorPath::avx512 ? "avx512" : "avx2") << ", " << threads << " thread(s)");
        Tensor c = Tensor::from_vector(c0, {cs.batch, cs.m, cs.n});
        cpu::gemm_own(c, a, b, cs.batch, cs.m, cs.n, cs.k, cs.alpha, cs.beta);
        CHECK(c.to_vector<float>() == expected);
        Tensor padded = Tensor::from_vector(c0, {cs.batch, cs.m, cs.n});
        cpu::gemm_own(padded, a_padded, b_padded, cs.batch, cs.m, cs.n, padded_k, cs.alpha, cs.beta);
        CHECK(padded.to_vector<float>() == expected);
        // cpu::gemm in the deterministic mode is this product, the BLAS left out.
        const cpu::DeterministicScope deterministic;
        Tensor through_gemm = Tensor::from_vector(c0, {cs.batch, cs.m, cs.n});
        cpu::gemm(through_gemm, a, b, cs.batch, cs.m, cs.n, cs.k, cs.alpha, cs.beta, MatmulPrecision::fp32);
        CHECK(through_gemm.to_vector<float>() == expected);
      }
    }
  }
  cpu::set_vector_path(original_path);
#ifdef _OPENMP
  omp_set_num_threads(original_threads);
#endif
}
