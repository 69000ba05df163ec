// What the CUDA-against-CPU tests share (test_cuda.cpp, test_cuda_layers.cpp,
// test_cuda_indexing.cpp): the devices, random inputs, and the checks of a
// CUDA result against the CPU's with their bounds.
//
// Tolerances. u = 2^-24 is the unit roundoff of f32. Each check states its
// bound and why next to it. Where a result is a sum of n terms, the bound
// uses Higham & Mary's probabilistic analysis ("A new approach to
// probabilistic rounding error analysis", SIAM J. Sci. Comput. 41(5), 2019):
// with independent rounding errors, |computed - exact| <= lambda sqrt(n) u
// sum|terms| except with probability about 2n exp(-lambda^2 / 2); lambda = 8
// makes a failure from rounding alone below 1e-10 per element, while a
// missing, doubled or misplaced term (of relative size ~1/n) still fails it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tensor/backend.h"
#include "tensor/device_runtime.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"
#include "tests/helpers.h"

namespace cuda_vs_cpu {

using namespace ordo;
using ordo::test::bit_identical;
using ordo::test::random_tensor;
using ordo::test::require_close;

const Device kGpu = Device::cuda(0);
const Device kCpu = Device::cpu();
constexpr double kU = 0x1p-24;  // unit roundoff of f32

// The probabilistic bound on a sum of n terms, relative to sum|terms| (lambda = 8).
inline double sum_bound(int64_t n) { return 8 * std::sqrt(static_cast<double>(std::max<int64_t>(n, 1))) * kU; }
// Two f32 computations of one sum (CPU and CUDA, in different orders), each
// within sum_bound(n) of the exact sum, are within twice that of each other.
inline double pair_bound(int64_t n) { return 2 * sum_bound(n); }

inline Tensor rand_f32(const Shape& shape, uint64_t seed, double low = -1, double high = 1) {
  return random_tensor(shape, seed, DType::f32, low, high);
}

inline Tensor gpu(const Tensor& t) { return t.to(kGpu); }

inline Tensor i64_tensor(const std::vector<int64_t>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape);
}

// n integers uniform in [low, high] from a seeded std::mt19937_64.
inline std::vector<int64_t> random_ints(int64_t n, uint64_t seed, int64_t low, int64_t high) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> dist(low, high);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

// A CUDA result against the CPU's, every element within atol + rtol |cpu|.
inline void check_close(const Tensor& on_gpu, const Tensor& on_cpu, double rtol, double atol,
                 const std::string& what) {
  INFO(what);
  REQUIRE(on_gpu.device().is_cuda());
  REQUIRE(on_cpu.device().is_cpu());
  require_close(on_gpu, on_cpu, rtol, atol, what);
}

// The same with a bound per element (tolerance[i] for element i, row-major).
inline void check_within(const Tensor& on_gpu, const Tensor& expected, const std::vector<double>& tolerance,
                  const std::string& what) {
  INFO(what);
  REQUIRE(on_gpu.device().is_cuda());
  REQUIRE(on_gpu.shape() == expected.shape());
  std::vector<double> got = on_gpu.to_doubles(), want = expected.to_doubles();
  REQUIRE(tolerance.size() == want.size());
  int violations = 0;
  std::ostringstream bad;
  for (size_t i = 0; i < want.size(); ++i) {
    const bool ok = std::fabs(got[i] - want[i]) <= tolerance[i] || (std::isinf(want[i]) && got[i] == want[i]);
    if (!ok && violations++ < 5)
      bad << "  [" << i << "] got " << got[i] << ", expected " << want[i] << " +- " << tolerance[i] << "\n";
  }
  INFO("violations: " << violations << "\n" << bad.str());
  REQUIRE(violations == 0);
}

// Bit-for-bit equality of a CUDA result with the CPU's.
inline void check_identical(const Tensor& on_gpu, const Tensor& on_cpu, const std::string& what) {
  INFO(what);
  REQUIRE(on_gpu.device().is_cuda());
  REQUIRE(on_gpu.shape() == on_cpu.shape());
  REQUIRE(bit_identical(on_gpu, on_cpu));
}

}  // namespace cuda_vs_cpu
