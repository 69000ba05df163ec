// What the tests of the output policy (base/output.h) compare: a folder's
// whole tree before and after a command, and a command made to fail in the
// middle of its writes.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "base/file_io.h"
#include "tests/helpers.h"

namespace ordo::test {

// Every entry under `dir` by its path relative to it, with a file's bytes (a
// folder as "<folder>", a link as "<link to TARGET>"): two equal snapshots
// mean the tree is byte for byte the same, no entry added or removed.
inline std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    std::string relative = std::filesystem::relative(entry.path(), dir).string();
    if (entry.is_symlink()) files[relative] = "<link to " + std::filesystem::read_symlink(entry.path()).string() + ">";
    else if (entry.is_directory()) files[relative] = "<folder>";
    else files[relative] = read_file(entry.path().string());
  }
  return files;
}

// Runs the ordo binary with files limited to `bytes` (a multiple of 512:
// the shell's ulimit -f counts 512-byte blocks; 0 fails every write) and
// SIGXFSZ ignored, so a write past the limit fails with EFBIG ("File too
// large") the way a full disk fails one: a failure after every check has passed.
inline CommandResult run_ordo_with_file_limit(const std::string& args, int bytes) {
  return run_ordo(args, "trap '' XFSZ; ulimit -f " + std::to_string(bytes / 512) + "; ");
}

}  // namespace ordo::test
