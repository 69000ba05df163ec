// libFuzzer target for the output guard (base/output.h): an output path made
// of '..', '.', empty parts, symbolic links (inside the arena, out of it, to a
// file, dangling) and odd names, under a scratch folder laid out afresh for
// every input. Each byte picks a part; the first byte also picks an absolute
// path or one relative to the arena (the current folder).
//
// Properties, against an oracle that walks the same parts over the known
// layout as the kernel does (links followed except the last part, '..'
// climbing from a link's target):
//   - resolve_output_path refuses a path whose '..' follows a missing folder,
//     or that passes through a file or a dangling link; otherwise it returns
//     the oracle's place;
//   - a folder written there (check_output, then write_folder, no
//     --overwrite) lands exactly at that place, and nothing else in the
//     scratch folder changes but the folders made above it: no file of the
//     layout is lost, no bookkeeping is left beside it.
// A property broken aborts (libFuzzer keeps the input); an ordo::Error is the
// guard refusing, which is its job.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/file_io.h"
#include "base/output.h"
#include "fuzz/fuzz_common.h"

namespace fs = std::filesystem;

namespace {

const char* const kParts[] = {"a",     "b",   "full", "empty", "file.txt", "in_link", "out_link", "dangling", "..",
                              ".",     "new", "x y",  "-n",    "\xc3\xa9", "",        "keep.txt", "file_link", ".new"};
constexpr size_t kPartCount = sizeof kParts / sizeof kParts[0];

struct Entry {
  enum Kind { folder, file, link } kind;
  std::string target;  // a link's, absolute
};

const std::string& scratch() {
  static const std::string path = [] {
    std::string p = "/tmp/ordo-fuzz-" + std::to_string(::getpid()) + "-paths";
    fs::create_directories(p);
    return fs::canonical(p).string();
  }();
  return path;
}

// The layout every input starts from, by absolute path.
std::map<std::string, Entry> layout() {
  const std::string s = scratch(), box = s + "/box";
  return {{s, {Entry::folder, ""}},
          {box, {Entry::folder, ""}},
          {box + "/a", {Entry::folder, ""}},
          {box + "/a/b", {Entry::folder, ""}},
          {box + "/full", {Entry::folder, ""}},
          {box + "/full/keep.txt", {Entry::file, ""}},
          {box + "/empty", {Entry::folder, ""}},
          {box + "/file.txt", {Entry::file, ""}},
          {box + "/in_link", {Entry::link, box + "/a/b"}},
          {box + "/out_link", {Entry::link, s + "/outside"}},
          {box + "/dangling", {Entry::link, box + "/none"}},
          {box + "/file_link", {Entry::link, box + "/file.txt"}},
          {s + "/outside", {Entry::folder, ""}},
          {s + "/outside/secret.txt", {Entry::file, ""}}};
}

void lay_out(const std::map<std::string, Entry>& entries) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(scratch())) fs::remove_all(e.path(), ec);  // what the last input made too
  for (const auto& [path, e] : entries) {
    if (e.kind == Entry::folder) fs::create_directories(path);
    if (e.kind == Entry::file) std::ofstream(path) << "precious: " << path;
    if (e.kind == Entry::link) fs::create_symlink(e.target, path);
  }
}

// Every entry under the scratch folder: a folder, a file's bytes, a link's target.
std::map<std::string, std::string> snapshot() {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(scratch())) {
    const std::string p = e.path().string();
    if (e.is_symlink()) out[p] = "<link " + fs::read_symlink(e.path()).string() + ">";
    else if (e.is_directory()) out[p] = "<folder>";
    else out[p] = ordo::read_file(p);
  }
  return out;
}

std::string parent(const std::string& path) { return fs::path(path).parent_path().string(); }

// Where the kernel puts the output named by `parts` from the arena (nullopt:
// it must be refused); "" when the walk leaves the scratch folder, where the
// oracle knows nothing.
std::optional<std::string> oracle(const std::vector<std::string>& parts, const std::map<std::string, Entry>& entries) {
  std::string at = scratch() + "/box";
  bool missing = false;
  size_t last = parts.size();
  while (last > 0 && parts[last - 1].empty()) --last;  // trailing slashes are dropped
  for (size_t k = 0; k < last; ++k) {
    const std::string& part = parts[k];
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (missing) return std::nullopt;
      at = parent(at);
      if (at.size() < scratch().size()) return "";
      continue;
    }
    at += "/" + part;
    if (missing) continue;
    const auto it = entries.find(at);
    if (at.compare(0, scratch().size(), scratch()) != 0) return "";
    if (it == entries.end()) {
      missing = true;
      continue;
    }
    if (k + 1 == last) break;
    if (it->second.kind == Entry::file) return std::nullopt;
    if (it->second.kind == Entry::link) {
      const auto target = entries.find(it->second.target);
      if (target == entries.end() || target->second.kind != Entry::folder) return std::nullopt;
      at = it->second.target;
    }
  }
  return at;
}

[[noreturn]] void broken(const std::string& what, const std::string& path) {
  std::fprintf(stderr, "property broken: %s\n  path: %s\n", what.c_str(), path.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 24) return 0;
  const std::map<std::string, Entry> entries = layout();
  lay_out(entries);
  const bool absolute = data[0] & 1;
  std::vector<std::string> parts;
  for (size_t i = 1; i < size; ++i) parts.push_back(kParts[data[i] % kPartCount]);
  // Both ways lead from the arena: SCRATCH/box/PARTS, or ./PARTS from inside it.
  std::string path = absolute ? scratch() + "/box/" : "./";
  for (size_t i = 0; i < parts.size(); ++i) path += (i ? "/" : "") + parts[i];
  // Relative paths start in the arena; libFuzzer's own (corpus, artifacts) in the folder it was started in.
  struct InArena {
    std::string home = fs::current_path().string();
    InArena() {
      if (::chdir((scratch() + "/box").c_str()) != 0) std::abort();
    }
    ~InArena() {
      if (::chdir(home.c_str()) != 0) std::abort();
    }
  } in_arena;

  const std::optional<std::string> expected = oracle(parts, entries);
  std::string resolved;
  try {
    resolved = ordo::resolve_output_path(path);
  } catch (const ordo::Error&) {
    return 0;  // refused: never wrong (the writing below checks that what is taken lands right)
  }
  if (!expected) broken("taken, but '..' follows a missing folder, or a part above the last is no folder", path);
  if (expected->empty()) return 0;  // outside the scratch folder: nothing is written there
  if (resolved != *expected) broken("resolved to " + resolved + ", the kernel's place is " + *expected, path);

  const auto before = snapshot();
  try {
    ordo::check_output(path, ordo::OutputKind::folder, /*overwrite=*/false, {});
    ordo::write_folder(path, {{"fuzz-written.txt", "new"}});
  } catch (const ordo::Error&) {
    if (snapshot() != before) broken("a refused or failed write changed the scratch folder", path);
    return 0;
  }
  if (!ordo::file_exists(resolved + "/fuzz-written.txt")) broken("the output is not at " + resolved, path);
  const auto after = snapshot();
  auto expected_change = [&](const std::string& p) {
    if (p == resolved || p.rfind(resolved + "/", 0) == 0) return true;  // the output itself
    return !before.count(p) && resolved.rfind(p + "/", 0) == 0;        // a folder made above it
  };
  for (const auto& [p, v] : before)
    if ((!after.count(p) || after.at(p) != v) && !expected_change(p)) broken("changed or removed: " + p, path);
  for (const auto& [p, v] : after)
    if (!before.count(p) && !expected_change(p)) broken("left beside the output: " + p, path);
  if (before.count(resolved) && before.at(resolved) != "<folder>" && before.at(resolved).rfind("<link", 0) != 0)
    broken("a file was replaced by a folder: " + resolved, path);
  for (const auto& [p, v] : before)  // nothing that held something was replaced without --overwrite
    if (p.rfind(resolved + "/", 0) == 0 && (!after.count(p) || after.at(p) != v)) broken("lost: " + p, path);
  return 0;
}
