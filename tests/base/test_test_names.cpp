// ctest runs each test case by its name (catch_discover_tests), and CMake
// reads a ';' in a name as a list separator: such a case is split into
// names that match nothing, and never runs. Every name is checked here.
#include <catch2/catch.hpp>

#include <string>

TEST_CASE("no test case's name holds a semicolon, which would keep ctest from running it", "[base]") {
  const auto& tests = Catch::getRegistryHub().getTestCaseRegistry().getAllTests();
  REQUIRE(tests.size() > 100);
  for (const Catch::TestCase& test : tests) {
    INFO(test.name);
    CHECK(test.name.find(';') == std::string::npos);
  }
}
