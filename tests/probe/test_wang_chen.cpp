// probe/wang_chen.h's reading of Figures 1 and 3 in numbers: the mean cosine
// of two positions d apart, against the sinusoid's closed form and tables
// made by hand.
#include <cmath>

#include "probe/analysis_position.h"
#include "probe/wang_chen.h"
#include "tests/helpers.h"

using namespace ordo;

TEST_CASE("cosine by offset: the sinusoid's closed form, and tables made by hand", "[probe][wang_chen]") {
  // Each (sin, cos) pair of frequency w contributes cos(w d) to P_i . P_{i+d} and 1 to |P|^2, so the cosine of
  // positions d apart is (2/D) sum_k cos(w_k d) at every i, w_k = 10000^(-2k/D) (Vaswani et al. 2017).
  const int64_t rows = 40, dim = 16;
  const std::vector<double> profile = probe::cosine_by_offset(probe::sinusoid_table(rows, probe::sinusoid_frequencies(dim)));
  REQUIRE(profile.size() == static_cast<size_t>(rows - 1));
  for (int64_t d = 1; d < rows; ++d) {
    double expected = 0;
    for (int64_t k = 0; k < dim / 2; ++k) expected += std::cos(std::pow(10000.0, -2.0 * k / dim) * d);
    expected *= 2.0 / dim;
    INFO("d = " << d);
    CHECK(profile[d - 1] == Approx(expected).margin(1e-12));
  }
  // Every row the same vector: 1 at every offset. Rows alternating between two orthogonal vectors: 0 at odd
  // offsets, 1 at even ones.
  Matrix same(5, 3, 0.0), alternating(6, 2, 0.0);
  for (int64_t i = 0; i < 5; ++i) same(i, 0) = 1, same(i, 1) = 2, same(i, 2) = -1;
  for (int64_t i = 0; i < 6; ++i) alternating(i, i % 2) = 3;
  for (double v : probe::cosine_by_offset(same)) CHECK(v == Approx(1.0));
  const std::vector<double> alt = probe::cosine_by_offset(alternating);
  REQUIRE(alt.size() == 5);
  for (size_t d = 1; d <= 5; ++d) CHECK(alt[d - 1] == Approx(d % 2 ? 0.0 : 1.0));
}
