// Edge values behave identically on both devices, as tensor/kernels.inc
// ("Edge values") states once: NaN and +inf in softmax, log-softmax and
// cross-entropy rows, rows entirely -inf, and float -> integer casts of NaN
// and out-of-range values. The expected values are worked by hand below.
// The CPU runs everywhere; the [cuda] case where a GPU is (emulated in CI).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tensor/cpu/common.h"
#include "tensor/ops.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Element by element: NaN where NaN is expected, the same infinity, else
// within a few f32 roundings (the finite values are O(1)).
void require_values(const Tensor& got, const std::vector<double>& expected, const std::string& what) {
  INFO(what);
  std::vector<double> v = got.to(Device::cpu()).to_doubles();
  REQUIRE(v.size() == expected.size());
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("[" << i << "] got " << v[i] << ", expected " << expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(v[i]));
    } else if (std::isinf(expected[i])) {
      CHECK(v[i] == expected[i]);
    } else {
      CHECK(std::fabs(v[i] - expected[i]) <= 1e-6);
    }
  }
}

// Rows of 4 logits (f32):
//   0: NaN inside a row of -inf           -> every output NaN
//   1: entirely -inf                      -> softmax 0s, log-softmax -inf, lse -inf
//   2: +inf among finite values           -> every output NaN (inf - inf)
//   3: two +inf                           -> every output NaN
//   4: NaN among finite values            -> every output NaN
//   5: [0, 0, -inf, ln 3]                 -> exp: 1, 1, 0, 3 (sum 5): 0.2, 0.2, 0, 0.6
Tensor edge_rows(Device device) {
  return Tensor::from_vector(std::vector<double>{-kInf, kNaN, -kInf, -kInf,  //
                                                 -kInf, -kInf, -kInf, -kInf,  //
                                                 1, kInf, 2, -kInf,           //
                                                 kInf, kInf, 0, 1,            //
                                                 0, kNaN, 1, 2,               //
                                                 0, 0, -kInf, std::log(3.0)},
                             {6, 4})
      .to(DType::f32)
      .to(device);
}

std::vector<double> row_of(double v) { return {v, v, v, v}; }

std::vector<double> rows(std::vector<std::vector<double>> parts) {
  std::vector<double> all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

void check_softmax_edges(Device device) {
  const Tensor x = edge_rows(device);
  const double l2 = std::log(0.2), l6 = std::log(0.6);
  require_values(softmax(x), rows({row_of(kNaN), row_of(0), row_of(kNaN), row_of(kNaN), row_of(kNaN),
                                   {0.2, 0.2, 0, 0.6}}),
                 "softmax");
  require_values(log_softmax(x), rows({row_of(kNaN), row_of(-kInf), row_of(kNaN), row_of(kNaN), row_of(kNaN),
                                       {l2, l2, -kInf, l6}}),
                 "log-softmax");
  // The mask is added first: a NaN under a masked (-inf) position still
  // makes its row NaN; a row whose every position is masked gives 0s.
  Tensor finite = Tensor::from_vector(std::vector<double>{kNaN, 1, 2, 3, 0, 1, 2, 3}, {2, 4}).to(DType::f32).to(device);
  Tensor mask = Tensor::from_vector(std::vector<double>{-kInf, 0, 0, -kInf, -kInf, -kInf, -kInf, -kInf}, {2, 4})
                    .to(DType::f32)
                    .to(device);
  require_values(softmax(finite, mask), rows({row_of(kNaN), row_of(0)}), "masked softmax");
}

void check_cross_entropy_edges(Device device) {
  const Tensor x = edge_rows(device);
  auto targets = [&](std::vector<int64_t> t) { return Tensor::from_vector(t, {6}).to(device); };
  // lse per row: NaN where softmax is NaN, log 0 = -inf for the all -inf row,
  // ln 5 for the last.
  CrossEntropyResult all = cross_entropy(x, targets({0, 0, 0, 0, 0, 3}));
  require_values(all.lse, {kNaN, -kInf, kNaN, kNaN, kNaN, std::log(5.0)}, "lse");
  require_values(all.loss, {kNaN}, "the mean over rows with NaN");
  // Ignored rows do not reach the loss, NaN or not: only row 5 counts,
  // ln 5 - ln 3.
  CrossEntropyResult only_last = cross_entropy(x, targets({-100, -100, -100, -100, -100, 3}));
  require_values(only_last.loss, {std::log(5.0 / 3.0)}, "ignored rows with NaN");
  // The all -inf row with a target: -log(0/0) is NaN.
  CrossEntropyResult masked_row = cross_entropy(x, targets({-100, 2, -100, -100, -100, -100}));
  require_values(masked_row.loss, {kNaN}, "a row entirely -inf");
}

// f32 -> integer casts: truncation toward zero, NaN -> 0, saturation at
// the type's limits.
void check_integer_casts(Device device) {
  const Tensor x = Tensor::from_vector(std::vector<double>{kNaN, kInf, -kInf, 3e9, -3e9, 2.7, -2.7, 300, -1}, {9})
                       .to(DType::f32)
                       .to(device);
  auto as_i64 = [&](DType t) { return x.to(t).to(Device::cpu()).to(DType::i64).to_vector<int64_t>(); };
  const int64_t i64_max = std::numeric_limits<int64_t>::max(), i64_min = std::numeric_limits<int64_t>::min();
  const int64_t i32_max = std::numeric_limits<int32_t>::max(), i32_min = std::numeric_limits<int32_t>::min();
  CHECK(as_i64(DType::i64) == std::vector<int64_t>{0, i64_max, i64_min, 3000000000, -3000000000, 2, -2, 300, -1});
  CHECK(as_i64(DType::i32) == std::vector<int64_t>{0, i32_max, i32_min, i32_max, i32_min, 2, -2, 300, -1});
  CHECK(as_i64(DType::u8) == std::vector<int64_t>{0, 255, 0, 255, 0, 2, 0, 255, 0});
}

void check_edge_values(Device device) {
  SECTION("softmax and log-softmax") { check_softmax_edges(device); }
  SECTION("cross-entropy") { check_cross_entropy_edges(device); }
  SECTION("float to integer casts") { check_integer_casts(device); }
}

}  // namespace

TEST_CASE("edge values on the CPU: NaN, infinities, all -inf rows, out-of-range casts", "[ops][edge]") {
  check_edge_values(Device::cpu());
}

#ifdef ORDO_HAS_CUDA
TEST_CASE("cuda: edge values as on the CPU: NaN, infinities, all -inf rows, out-of-range casts", "[cuda][edge]") {
  check_edge_values(Device::cuda(0));
}
#endif  // ORDO_HAS_CUDA

// cpu::row_max (softmax's and cross-entropy's first pass) runs eight lanes as
// vectors and the last n mod 8 elements as scalars: every length across both
// parts, NaN or +inf at every index, against a plain loop.
namespace {

template <class T>
void check_row_max() {
  for (int64_t n = 1; n <= 35; ++n) {
    std::vector<T> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = T(std::sin(0.7 * i + n)) * 10 - T(20);  // negative: -inf is not the answer
    T expected = -std::numeric_limits<T>::infinity();
    for (T v : x) expected = std::max(expected, v);
    INFO("n " << n);
    CHECK(cpu::row_max(x.data(), n) == expected);
    for (int64_t at = 0; at < n; ++at) {
      INFO("at " << at);
      std::vector<T> y = x;
      y[at] = std::numeric_limits<T>::quiet_NaN();
      CHECK(std::isnan(cpu::row_max(y.data(), n)));
      y[at] = std::numeric_limits<T>::infinity();
      CHECK(cpu::row_max(y.data(), n) == std::numeric_limits<T>::infinity());
    }
    std::vector<T> all_low(n, -std::numeric_limits<T>::infinity());
    CHECK(cpu::row_max(all_low.data(), n) == -std::numeric_limits<T>::infinity());
  }
}

// cpu::lane_sum (and row_sum on it): value j summed into lane j mod 8 in
// order, the lanes added as ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)): the bits
// of that plain loop, for lengths across its blocks of 64, its groups of 8 and
// its tail, with a plain load and with a computed value in a wider type.
template <class T>
void check_lane_sums() {
  std::vector<int64_t> lengths;
  for (int64_t n = 0; n <= 35; ++n) lengths.push_back(n);
  for (int64_t n : {63, 64, 65, 71, 72, 127, 128, 129, 200, 384, 500}) lengths.push_back(n);
  for (int64_t n : lengths) {
    std::vector<T> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = T(std::sin(1.3 * i + n)) * T(1e3) + T(1) / T(3 + i);
    T lane[8] = {};
    double wide[8] = {};
    for (int64_t i = 0; i < n; ++i) {
      lane[i % 8] += x[i];
      wide[i % 8] += static_cast<double>(x[i]) * x[i] - 0.5;
    }
    const T expected = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    const double expected_wide = ((wide[0] + wide[1]) + (wide[2] + wide[3])) + ((wide[4] + wide[5]) + (wide[6] + wide[7]));
    INFO("n " << n);
    CHECK(cpu::row_sum(x.data(), n) == expected);
    CHECK(cpu::lane_sum<double>(n, [&](int64_t j) { return static_cast<double>(x[j]) * x[j] - 0.5; }) == expected_wide);
  }
}

}  // namespace

TEST_CASE("the CPU lane sums: the eight-lane order to the bit, every length, f32 and f64", "[ops]") {
  check_lane_sums<float>();
  check_lane_sums<double>();
}

TEST_CASE("the CPU row maximum: every length, NaN and +inf at every index, f32 and f64", "[ops][edge]") {
  check_row_max<float>();
  check_row_max<double>();
}
