// The one-way rule of the folders, headers included: a file in folder F may
// include "G/..." only when G is F or a floor F stands on (directly or
// through others). The link step catches an upward call into a .cpp; this
// test also catches an upward include of a header-only piece (a template, an
// inline function, a struct), which would link. The table is the build's own
// (ORDO_LAYERS, written by ordo_layer() in CMakeLists.txt), so the two cannot
// disagree.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Layers = std::map<std::string, std::set<std::string>>;

// "base:|tensor:base|train:pe,text,synth|..." -> folder -> direct floors.
Layers parse_layers(const std::string& table) {
  Layers layers;
  std::stringstream entries(table);
  std::string entry;
  while (std::getline(entries, entry, '|')) {
    if (entry.empty()) continue;
    const size_t colon = entry.find(':');
    std::set<std::string>& below = layers[entry.substr(0, colon)];
    std::stringstream deps(entry.substr(colon + 1));
    std::string d;
    while (std::getline(deps, d, ',')) if (!d.empty()) below.insert(d);
  }
  return layers;
}

// Every floor a folder stands on, itself included.
std::set<std::string> reachable(const Layers& layers, const std::string& folder) {
  std::set<std::string> seen{folder};
  std::vector<std::string> todo{folder};
  while (!todo.empty()) {
    const std::string f = todo.back();
    todo.pop_back();
    auto it = layers.find(f);
    if (it == layers.end()) continue;
    for (const std::string& d : it->second)
      if (seen.insert(d).second) todo.push_back(d);
  }
  return seen;
}

}  // namespace

TEST_CASE("the layer table's closure follows every chain down") {
  const Layers l = parse_layers("base:|tensor:base|text:base|train:tensor,text|tools:train");
  CHECK(reachable(l, "tools") == std::set<std::string>{"tools", "train", "tensor", "text", "base"});
  CHECK(reachable(l, "text") == std::set<std::string>{"text", "base"});
  CHECK(reachable(l, "base") == std::set<std::string>{"base"});
}

TEST_CASE("every include points down the floors (or stays in its own folder)") {
  namespace fs = std::filesystem;
  const Layers layers = parse_layers(ORDO_LAYERS);
  REQUIRE(layers.size() >= 12);  // base .. tools: a table that failed to arrive checks nothing
  const std::regex include_re(R"re(^\s*#\s*include\s*"([a-z_]+)/)re");
  int files = 0, includes = 0;
  std::vector<std::string> violations;
  for (const auto& [folder, below] : layers) {
    const fs::path dir = fs::path(ORDO_SOURCE_DIR) / folder;
    REQUIRE(fs::is_directory(dir));
    const std::set<std::string> allowed = reachable(layers, folder);
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".cuh" && ext != ".inc"))
        continue;
      ++files;
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        std::smatch m;
        if (!std::regex_search(line, m, include_re)) continue;
        const std::string target = m[1];
        if (!layers.count(target)) continue;  // not a folder of ordo's (e.g. "catch2/...")
        ++includes;
        if (!allowed.count(target))
          violations.push_back(fs::relative(e.path(), ORDO_SOURCE_DIR).string() + ":" + std::to_string(n) +
                               ": " + folder + "/ includes " + target + "/ (above it)");
      }
    }
  }
  INFO(files << " files, " << includes << " includes of ordo's folders");
  CHECK(files > 100);
  for (const std::string& v : violations) UNSCOPED_INFO(v);
  CHECK(violations.empty());
}

namespace {

// The README's folder map: rows "| `folder/` | what it holds | floor, floor |"
// ("—" or nothing for none) -> folder -> the floors it names.
Layers readme_folder_table(const std::string& readme) {
  static const std::regex row(R"re(^\|\s*`([a-z_]+)/`\s*\|[^|]*\|([^|]*)\|\s*$)re");
  Layers table;
  std::istringstream lines(readme);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    std::set<std::string>& floors = table[m[1]];
    static const std::regex word("[a-z_]+");
    const std::string named = m[2];
    for (auto it = std::sregex_iterator(named.begin(), named.end(), word); it != std::sregex_iterator(); ++it)
      floors.insert(it->str());
  }
  return table;
}

}  // namespace

TEST_CASE("the README's folder map names every floor the build has, standing on what the build says") {
  std::ifstream in(std::string(ORDO_SOURCE_DIR) + "/README.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const Layers readme = readme_folder_table(text.str());
  const Layers build = parse_layers(ORDO_LAYERS);
  REQUIRE(build.size() >= 12);
  for (const auto& [folder, floors] : build) {
    INFO("folder " << folder << "/");
    REQUIRE(readme.count(folder) == 1);  // a row for it in the README's table
    CHECK(readme.at(folder) == floors);  // its "stands on" cell: the build's direct floors
  }
  // A row beyond the build's floors (tests/, scripts/, fuzz/) stands on nothing the table checks.
  for (const auto& [folder, floors] : readme) {
    INFO("README row " << folder << "/");
    CHECK((build.count(folder) == 1 || floors.empty()));
  }
}

TEST_CASE("the README folder map's reader takes the floors from the last cell") {
  const Layers t = readme_folder_table(
      "| folder | what | stands on |\n|---|---|---|\n"
      "| `train/` | the loop (`loop.h`: one step) | pe, parallel, text |\n"
      "| `base/` | errors, JSON | — |\n"
      "| `tests/` | Catch2 tests | |\n"
      "not a row: | `x/` | y | z |\n");
  CHECK(t == Layers{{"train", {"pe", "parallel", "text"}}, {"base", {}}, {"tests", {}}});
}
