// What the fused pieces' tests share (test_fused.cpp: the layer pieces;
// test_fused_bf16.cpp: their bf16 operands and outputs): random f32 inputs
// and the bound of column sums summed in another order.
#pragma once

#include <cmath>

#include "tests/helpers.h"

namespace fused_test {

using namespace ordo;

constexpr double kU = 0x1p-24;

inline Tensor rand_f32(const Shape& shape, uint64_t seed, double low = -1, double high = 1) {
  return test::random_tensor(shape, seed, DType::f32, low, high);
}

// The column sums' bound: an f32 sum of `rows` terms against any other order, rows u sum |x|.
inline void check_column_sums(const Tensor& got, const Tensor& want, const Tensor& terms, const char* what) {
  INFO(what);
  const int64_t n = terms.size(-1), rows = terms.numel() / n;
  const std::vector<double> g = got.to_doubles(), w = want.to_doubles(), t = terms.to_doubles();
  for (int64_t j = 0; j < n; ++j) {
    double magnitude = 0;
    for (int64_t r = 0; r < rows; ++r) magnitude += std::fabs(t[r * n + j]);
    CHECK(std::fabs(g[j] - w[j]) <= 2 * static_cast<double>(rows) * kU * magnitude);
  }
}

}  // namespace fused_test
