#include "base/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "base/file_io.h"

namespace ordo {

namespace fs = std::filesystem;

namespace {

// True when `inner` is `outer` or lies inside it (symbolic links in the
// parts that exist resolved, so two spellings of one folder compare equal).
bool holds(const std::string& outer, const std::string& inner) {
  std::error_code ec;
  const fs::path o = fs::weakly_canonical(fs::absolute(outer), ec);
  const fs::path i = fs::weakly_canonical(fs::absolute(inner), ec);
  const fs::path relative = i.lexically_relative(o);
  return !relative.empty() && *relative.begin() != "..";
}

// A folder above `path` that exists must be a folder: "runs/a.txt/probe" is
// refused now, not when the first write fails.
void check_parents(const std::string& path, const std::string& flag) {
  fs::path p = fs::absolute(path).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "runs/a/" names runs/a
  for (fs::path q = p.parent_path();; q = q.parent_path()) {
    std::error_code ec;
    if (fs::exists(q, ec)) {
      ORDO_CHECK(fs::is_directory(q, ec), flag, " '", path, "': '", q.string(), "' is a file, not a folder");
      return;
    }
    if (q == q.parent_path()) return;
  }
}

std::string without_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// The outermost of `folder` and its parents that does not exist yet ("" when it does).
std::string outermost_missing(const std::string& folder) {
  fs::path p = fs::absolute(folder), missing;
  while (!p.empty() && !fs::exists(p)) {
    missing = p;
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
  return missing.string();
}

void move(const std::string& from, const std::string& to) {
  ORDO_CHECK(std::rename(from.c_str(), to.c_str()) == 0, "cannot move ", from, " to ", to, ": ", std::strerror(errno));
}

// The previous output, once replaced. Failing to remove it loses nothing
// (the new output is in place), so it is said, not thrown.
void remove_previous(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec)
    std::fprintf(stderr, "ordo: note: the previous output, moved to %s, could not be removed: %s\n", path.c_str(),
                 ec.message().c_str());
}

}  // namespace

void check_output(const std::string& path, OutputKind kind, bool overwrite, const std::string& flag) {
  ORDO_CHECK(!path.empty(), "flag ", flag, " needs a path");
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) {
    check_parents(path, flag);
    return;
  }
  const bool is_folder = fs::is_directory(path, ec);  // a link to a folder counts as one
  if (kind == OutputKind::file) {
    ORDO_CHECK(!is_folder, flag, " '", path, "' is a folder; give the path of a file");
    ORDO_CHECK(overwrite, flag, " '", path, "' already exists; give --overwrite to replace it, or name another file");
    return;
  }
  ORDO_CHECK(is_folder, flag, " '", path, fs::is_regular_file(path, ec) ? "' is a file, not a folder" : "' exists and is not a folder",
             "; give a folder (a file is not replaced by a folder, even with --overwrite)");
  ORDO_CHECK(!holds(path, fs::current_path(ec).string()), flag, " '", path,
             "' holds the current folder; replacing it would remove the folder you are in: name another folder");
  if (fs::is_empty(path, ec)) return;  // nothing in it to lose
  ORDO_CHECK(overwrite, flag, " '", path,
             "' already exists and is not empty; give --overwrite to replace it (everything in it), or name another folder");
}

void check_output_spares(const std::string& out, const std::string& input, const std::string& input_flag,
                         const std::string& flag) {
  if (out.empty() || input.empty() || !holds(out, input)) return;
  const bool same = holds(input, out);
  throw Error(detail::cat(flag, " '", out, same ? "' is " : "' holds ", input_flag, " '", input,
                          "', which this command reads; writing the output there would delete it: name another output"));
}

StagedFolder::StagedFolder(const std::string& out) : out_(without_trailing_slashes(out)) {
  ORDO_CHECK(!out_.empty(), "no output folder given");
  const fs::path parent = fs::path(out_).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  created_ = outermost_missing(folder);
  make_directories(folder);
  std::string pattern = out_ + ".new-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    const int err = errno;
    std::error_code ignored;
    if (!created_.empty()) fs::remove_all(created_, ignored);
    throw Error(detail::cat("cannot create the folder ", pattern, " to build ", out_, " in: ", std::strerror(err)));
  }
  staging_ = pattern;
  // mkdtemp makes the folder private (0700); the output gets a new folder's
  // usual permissions. (umask can only be read by setting it; nothing else
  // creates files while an output is being staged.)
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(staging_.c_str(), 0777 & ~mask);
}

StagedFolder::StagedFolder(StagedFolder&& other) noexcept
    : out_(std::move(other.out_)), staging_(std::move(other.staging_)), created_(std::move(other.created_)),
      committed_(other.committed_) {
  other.staging_.clear();  // the moved-from object removes nothing
}

StagedFolder::~StagedFolder() {
  if (committed_ || staging_.empty()) return;
  std::error_code ignored;  // a destructor reports nothing; the failure that brought us here is reported
  fs::remove_all(created_.empty() ? staging_ : created_, ignored);
}

void StagedFolder::commit() {
  ORDO_CHECK(!committed_ && !staging_.empty(), "the output ", out_, " is already in place");
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(out_, ec))) {
    move(staging_, out_);
    committed_ = true;
    return;
  }
#ifdef RENAME_EXCHANGE
  // One step: the new folder in place and the old one where the new one was.
  if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, out_.c_str(), RENAME_EXCHANGE) == 0) {
    committed_ = true;
    remove_previous(staging_);
    return;
  }
  // Not supported by this file system: two renames, the old output restored if the second fails.
#endif
  const std::string aside = out_ + ".old-" + staging_.substr(staging_.size() - 6);
  move(out_, aside);
  try {
    move(staging_, out_);
  } catch (const Error&) {
    std::rename(aside.c_str(), out_.c_str());
    throw;
  }
  committed_ = true;
  remove_previous(aside);
}

void write_folder(const std::string& out, const std::vector<std::pair<std::string, std::string>>& files) {
  StagedFolder staged(out);
  for (const auto& [name, bytes] : files) {
    const std::string path = staged.path() + "/" + name;
    make_directories(fs::path(path).parent_path().string());
    write_file_atomic(path, bytes);
  }
  staged.commit();
}

}  // namespace ordo
