// pe/common.h: integer_range, the extremes every table's bounds check reads
// (positions, distances, segment ids).
#include "pe/common.h"
#include "tests/helpers.h"

using namespace ordo;
using ordo::test::i64;

namespace {

using Range = std::pair<int64_t, int64_t>;

// Hand-written positions [2, 3]: extremes -7 and 9.
Tensor hand_written_positions() { return i64({4, -7, 2, 0, 9, -3}, {2, 3}); }

}  // namespace

TEST_CASE("integer_range: the smallest and largest entry of a positions tensor, of any view", "[pe]") {
  Tensor p = hand_written_positions();
  CHECK(pe::integer_range(p) == Range(-7, 9));
  // Non-contiguous views see only their own entries: columns 0 and 2 hold
  // 4, 2 / 0, -3; column 2 holds 2, -3; the transpose holds them all.
  Tensor every_other_column = p.slice(1, 0, 3, 2);
  REQUIRE_FALSE(every_other_column.is_contiguous());
  CHECK(pe::integer_range(every_other_column) == Range(-3, 4));
  Tensor last_column = p.select(1, 2);
  REQUIRE_FALSE(last_column.is_contiguous());
  CHECK(pe::integer_range(last_column) == Range(-3, 2));
  CHECK(pe::integer_range(p.transpose(0, 1)) == Range(-7, 9));
  // Exact beyond 2^53, where a double could not tell big from big - 1.
  const int64_t big = (int64_t{1} << 53) + 1;
  CHECK(pe::integer_range(i64({big - 1, -big, big}, {3})) == Range(-big, big));
  CHECK(pe::integer_range(i64({5}, {1, 1})) == Range(5, 5));
}

TEST_CASE("integer_range refuses what has no integer extremes", "[pe][errors]") {
  CHECK_THROWS_WITH(pe::integer_range(test::f64({1, 2}, {2})), Catch::Contains("expected i64"));
  CHECK_THROWS_WITH(pe::integer_range(Tensor::zeros({2, 0}, DType::i64)), Catch::Contains("empty"));
}

#ifdef ORDO_HAS_CUDA
TEST_CASE("integer_range on CUDA: the same extremes, views included (no f64 on the device)", "[pe][cuda]") {
  Tensor p = hand_written_positions().to(Device::cuda(0));
  CHECK(pe::integer_range(p) == Range(-7, 9));
  CHECK(pe::integer_range(p.slice(1, 0, 3, 2)) == Range(-3, 4));
  CHECK(pe::integer_range(p.transpose(0, 1)) == Range(-7, 9));
}
#endif
