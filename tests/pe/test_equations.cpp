// EQUATIONS.md stays true to the code: every function it points at exists
// where it says (tests/doc_references.h), and every registered variant has
// its paragraph.
#include <regex>
#include <set>
#include <sstream>

#include "pe/registry.h"
#include "tests/doc_references.h"
#include "tests/helpers.h"

using namespace ordo;

TEST_CASE("EQUATIONS.md: every function reference names a file that defines it", "[pe][equations]") {
  const std::string root = ORDO_SOURCE_DIR;
  const std::string text = test::read_text(root + "/EQUATIONS.md");
  REQUIRE_FALSE(text.empty());
  const std::vector<test::CodeReference> refs = test::code_references(text);
  REQUIRE(refs.size() >= 10);  // the parser finds the references at all
  const std::string broken = test::broken_references(root, refs);
  INFO(refs.size() << " references; broken:\n" << broken);
  CHECK(broken.empty());
}

TEST_CASE("EQUATIONS.md: every registered variant has its paragraph", "[pe][equations]") {
  std::string text = test::read_text(std::string(ORDO_SOURCE_DIR) + "/EQUATIONS.md");
  std::set<std::string> headings;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("### ", 0) != 0) continue;
    // "### name" or "### name, other" or "### `name`": every identifier on the line counts.
    static const std::regex word("[a-z0-9_]+");
    std::string rest = line.substr(4);
    for (auto it = std::sregex_iterator(rest.begin(), rest.end(), word); it != std::sregex_iterator(); ++it)
      headings.insert(it->str());
  }
  std::vector<std::string> missing;
  for (const std::string& v : pe::variant_names())
    if (!headings.count(v)) missing.push_back(v);
  std::string list;
  for (const auto& m : missing) list += " " + m;
  INFO("variants without a '### name' heading:" << list);
  CHECK(missing.empty());
}

TEST_CASE("the reference checker itself: a known definition is found, a made-up one is not", "[pe][equations]") {
  std::string source = "// Foo::bar( in a comment\nVar Foo::bar(int x) {\n}\nint helper(int);\nint helper(int a) {\n";
  CHECK(test::defines(source, "Foo::bar"));
  CHECK_FALSE(test::defines(source, "Foo::baz"));
  CHECK_FALSE(test::defines("// Foo::bar(\nx = Foo::bar(1);\n", "Foo::bar"));
  CHECK(test::defines(source, "helper"));
  CHECK_FALSE(test::defines("int only_declared(int);\n// only_declared(\n", "only_declared"));
  const std::vector<test::CodeReference> refs =
      test::code_references("see `pe/a.cpp: A::f` and `nn/b.h: B`, not `plain text`");
  REQUIRE(refs.size() == 2);
  CHECK(refs[0].file == "pe/a.cpp");
  CHECK(refs[0].name == "A::f");
  CHECK(refs[1].name == "B");
}
