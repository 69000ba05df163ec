// Documents that point into the code stay true to it: EQUATIONS.md and
// docs/tour.md name functions as `path/to/file.cpp: Name::function` (or a
// free function or class name after the colon), and a test checks that each
// exists where it says.
//
// The check is textual: the file exists and holds the definition: a line
// outside a comment that names "Name::function(" (or, unqualified, "X(") and
// does not end in ';', or for a type "class X" / "struct X".
#pragma once

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace ordo::test {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct CodeReference {
  std::string file, name;
};

// Every `dir/file.ext: Name` in a document, Name an identifier, possibly qualified.
inline std::vector<CodeReference> code_references(const std::string& text) {
  static const std::regex pattern(R"(`([A-Za-z0-9_./-]+\.(?:cpp|h|cu|cuh|inc|py)): ([A-Za-z_][A-Za-z0-9_:~]*)`)");
  std::vector<CodeReference> refs;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it)
    refs.push_back({(*it)[1].str(), (*it)[2].str()});
  return refs;
}

inline bool defines(const std::string& source, const std::string& name) {
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

// The references among `refs` that do not hold: "file: Name (why)", one per line.
inline std::string broken_references(const std::string& root, const std::vector<CodeReference>& refs) {
  std::string broken;
  for (const CodeReference& r : refs) {
    const std::string source = read_text(root + "/" + r.file);
    if (source.empty()) broken += "  " + r.file + ": " + r.name + " (no such file)\n";
    else if (!defines(source, r.name)) broken += "  " + r.file + ": " + r.name + " (not defined there)\n";
  }
  return broken;
}

}  // namespace ordo::test
