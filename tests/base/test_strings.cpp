#include <catch2/catch.hpp>

#include "base/strings.h"

using ordo::joined;

TEST_CASE("joined puts the separator between items, never before or after", "[base]") {
  CHECK(joined({}) == "");
  CHECK(joined({"a"}) == "a");
  CHECK(joined({"a", "b", "c"}) == "a and b and c");
  CHECK(joined({"tiny", "mini"}, ", ") == "tiny, mini");
  CHECK(joined({"", "b"}, "; ") == "; b");  // an empty first item still takes its separator
}
