// FieldReader's integer reading at the edges of int64: a number beyond it is
// a range error with the value, not a cast (undefined behaviour in C++, found
// by fuzz_run_config under UBSan: 2.2e69 converted to int64); a field of
// the wrong type named with the type it must be.
#include "base/config.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Contains;

namespace {
int64_t read(const std::string& value, int64_t min = 0, int64_t max = 10) {
  const json::Value object = json::parse("{\"n\": " + value + "}");
  FieldReader r(object, "cfg");
  return r.integer("n", 0, min, max);
}
}  // namespace

TEST_CASE("config: integers beyond int64 are range errors, fractions are not integers", "[config]") {
  for (const char* huge : {"2.2e69", "-1e19", "1e300", "9223372036854775808.0", "-9.3e18"})
    CHECK_THROWS_WITH(read(huge), Contains("cfg: 'n' must be between 0 and 10, got"));
  CHECK_THROWS_WITH(read("1.5"), Contains("'n' must be an integer, got 1.5"));
  CHECK_THROWS_WITH(read("11"), Contains("must be between 0 and 10, got 11"));
  CHECK(read("7") == 7);
  CHECK(read("7.0") == 7);
  CHECK(read("9007199254740993", 0, INT64_MAX) == 9007199254740993);  // exact beyond 2^53: kept as an integer
  CHECK(read("-9223372036854775808", INT64_MIN, 0) == INT64_MIN);
}

TEST_CASE("config: a field of the wrong type names the type wanted and the value given", "[config]") {
  const json::Value object = json::parse(R"({"list": "a", "table": [1], "name": 3})");
  FieldReader r(object, "cfg");
  CHECK_THROWS_WITH(r.array("list"), "cfg: 'list' must be an array, got string (\"a\")");
  CHECK_THROWS_WITH(r.object("table"), "cfg: 'table' must be an object, got array ([1])");
  CHECK_THROWS_WITH(r.string("name", ""), "cfg: 'name' must be a string, got number (3)");
}
