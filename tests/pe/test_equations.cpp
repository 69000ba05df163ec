// EQUATIONS.md stays true to the code: every function it points at exists
// where it says, and every registered variant has its paragraph.
//
// A reference is written `path/to/file.cpp: Name::function` (or a free
// function or class name after the colon). The check is textual: the file
// exists and holds the definition: a line outside a comment that names
// "Name::function(" (or, unqualified, "X(") and does not end in ';', or for
// a type "class X" / "struct X".
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "pe/registry.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Reference {
  std::string file, name;
};

std::vector<Reference> references(const std::string& text) {
  // `dir/file.ext: Name` with Name an identifier, possibly qualified.
  static const std::regex pattern(R"(`([A-Za-z0-9_./-]+\.(?:cpp|h|cu|cuh|inc|py)): ([A-Za-z_][A-Za-z0-9_:~]*)`)");
  std::vector<Reference> refs;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it)
    refs.push_back({(*it)[1].str(), (*it)[2].str()});
  return refs;
}

bool defines(const std::string& source, const std::string& name) {
  if (name.find("::") == std::string::npos &&
      std::regex_search(source, std::regex("\\b(class|struct)\\s+" + name + "\\b")))
    return true;
  // A definition line: not a comment, names X( (a qualified name as written,
  // an unqualified one as a whole word) and does not end in ';' (which a
  // declaration or a call would).
  const bool qualified = name.find("::") != std::string::npos;
  std::regex call("\\b" + name + "\\s*\\(");
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line.compare(first, 2, "//") == 0) continue;
    bool named = qualified ? line.find(name + "(") != std::string::npos : std::regex_search(line, call);
    if (named && line[line.find_last_not_of(" \t")] != ';') return true;
  }
  return false;
}

}  // namespace

TEST_CASE("EQUATIONS.md: every function reference names a file that defines it", "[pe][equations]") {
  const std::string root = ORDO_SOURCE_DIR;
  std::string text = read_text(root + "/EQUATIONS.md");
  REQUIRE_FALSE(text.empty());
  std::vector<Reference> refs = references(text);
  REQUIRE(refs.size() >= 10);  // the parser finds the references at all
  std::vector<std::string> missing;
  for (const Reference& r : refs) {
    std::string source = read_text(root + "/" + r.file);
    if (source.empty()) missing.push_back(r.file + ": " + r.name + " (no such file)");
    else if (!defines(source, r.name)) missing.push_back(r.file + ": " + r.name + " (not defined there)");
  }
  std::string list;
  for (const auto& m : missing) list += "  " + m + "\n";
  INFO(refs.size() << " references; broken:\n" << list);
  CHECK(missing.empty());
}

TEST_CASE("EQUATIONS.md: every registered variant has its paragraph", "[pe][equations]") {
  std::string text = read_text(std::string(ORDO_SOURCE_DIR) + "/EQUATIONS.md");
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
  CHECK(defines(source, "Foo::bar"));
  CHECK_FALSE(defines(source, "Foo::baz"));
  CHECK_FALSE(defines("// Foo::bar(\nx = Foo::bar(1);\n", "Foo::bar"));
  CHECK(defines(source, "helper"));
  CHECK_FALSE(defines("int only_declared(int);\n// only_declared(\n", "only_declared"));
  std::vector<Reference> refs = references("see `pe/a.cpp: A::f` and `nn/b.h: B`, not `plain text`");
  REQUIRE(refs.size() == 2);
  CHECK(refs[0].file == "pe/a.cpp");
  CHECK(refs[0].name == "A::f");
  CHECK(refs[1].name == "B");
}
