// The guides that point into the code or quote the binary stay true to them:
// docs/tour.md names functions that exist where it says
// (tests/doc_references.h), and docs/cli.md is exactly what
// scripts/write_cli_docs.sh writes from this build's help.
#include <regex>

#include "tests/doc_references.h"
#include "tests/helpers.h"

using namespace ordo;

TEST_CASE("docs/tour.md: 10-15 stops, every function it names defined where it says", "[docs]") {
  const std::string root = ORDO_SOURCE_DIR;
  const std::string text = test::read_text(root + "/docs/tour.md");
  REQUIRE_FALSE(text.empty());
  // A stop opens a paragraph with "**N. Title.**".
  static const std::regex stop(R"(\n\*\*([0-9]+)\. )");
  int stops = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), stop); it != std::sregex_iterator(); ++it) {
    ++stops;
    CHECK(std::stoi((*it)[1].str()) == stops);  // numbered in order, none skipped
  }
  CHECK(stops >= 10);
  CHECK(stops <= 15);
  const std::vector<test::CodeReference> refs = test::code_references(text);
  REQUIRE(refs.size() >= static_cast<size_t>(stops));  // at least one function a stop
  const std::string broken = test::broken_references(root, refs);
  INFO(refs.size() << " references; broken:\n" << broken);
  CHECK(broken.empty());
}

TEST_CASE("docs/tour.md's check fails on a function that is not where it says", "[docs]") {
  const std::string root = ORDO_SOURCE_DIR;
  const std::vector<test::CodeReference> refs = test::code_references(
      "`autograd/var.cpp: Var::backward` and `autograd/var.cpp: Var::backwards` and `nn/no_such.cpp: f`");
  REQUIRE(refs.size() == 3);
  CHECK(test::broken_references(root, {refs[0]}).empty());
  CHECK(test::broken_references(root, {refs[1]}) == "  autograd/var.cpp: Var::backwards (not defined there)\n");
  CHECK(test::broken_references(root, {refs[2]}) == "  nn/no_such.cpp: f (no such file)\n");
}

TEST_CASE("docs/cli.md is the commands' help as scripts/write_cli_docs.sh writes it", "[docs]") {
  const std::string root = ORDO_SOURCE_DIR;
  test::TempDir dir("cli-docs");
  const std::string written = dir.path + "/cli.md";
  const test::CommandResult r =
      test::run_command("sh -c '" + root + "/scripts/write_cli_docs.sh " + ORDO_BINARY + " > " + written + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string expected = test::read_text(written);
  REQUIRE(expected.find("## ordo pretrain") != std::string::npos);  // the script found the commands
  INFO("docs/cli.md differs from the help: run scripts/write_cli_docs.sh build/ordo > docs/cli.md");
  CHECK(test::read_text(root + "/docs/cli.md") == expected);
}
