#include "base/output.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
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

// Refuses an output that is, or holds, `input`, since replacing the output would delete it.
void check_spares(const std::string& out, const InputPath& input, const std::string& flag) {
  if (out.empty() || input.path.empty() || !holds(out, input.path)) return;
  const bool same = holds(input.path, out);
  throw Error(detail::cat(flag, " '", out, same ? "' is " : "' holds ", input.given_by, " '", input.path,
                          "', which this command reads; writing the output there would delete it: name another output"));
}

// The output's kind and place: what no --overwrite can change.
void check_kind(const std::string& path, OutputKind kind, const std::string& flag) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) {
    check_parents(path, flag);
    return;
  }
  const bool is_folder = fs::is_directory(path, ec);  // a link to a folder counts as one
  if (kind == OutputKind::file) {
    ORDO_CHECK(!is_folder, flag, " '", path, "' is a folder; give the path of a file");
    return;
  }
  ORDO_CHECK(is_folder, flag, " '", path, fs::is_regular_file(path, ec) ? "' is a file, not a folder" : "' exists and is not a folder",
             "; give a folder (a file is not replaced by a folder, even with --overwrite)");
  ORDO_CHECK(!holds(path, fs::current_path(ec).string()), flag, " '", path,
             "' holds the current folder; replacing it would remove the folder you are in: name another folder");
}

// Something in the output to lose: replaced only with --overwrite. (An empty folder holds nothing.)
void check_overwrite(const std::string& path, OutputKind kind, bool overwrite, const std::string& flag) {
  std::error_code ec;
  if (overwrite || !fs::exists(fs::symlink_status(path, ec))) return;
  if (kind == OutputKind::file)
    throw Error(detail::cat(flag, " '", path, "' already exists; give --overwrite to replace it, or name another file"));
  if (fs::is_empty(path, ec)) return;
  throw Error(detail::cat(flag, " '", path, "' already exists and is not empty; give --overwrite to replace it ",
                          "(everything in it), or name another folder"));
}

}  // namespace

void check_output(const std::string& path, OutputKind kind, bool overwrite, const std::vector<InputPath>& inputs,
                  const std::string& flag) {
  ORDO_CHECK(!path.empty(), "flag ", flag, " needs a path");
  check_kind(path, kind, flag);
  // What the command reads, before the question of --overwrite: no --overwrite replaces it.
  for (const InputPath& input : inputs) check_spares(path, input, flag);
  check_overwrite(path, kind, overwrite, flag);
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
    // The old output now sits under the staging name, which says "new": it
    // takes a name that says what it is before its removal is tried, so
    // whatever a failed removal leaves is never taken for a new output.
    remove_previous(std::rename(staging_.c_str(), previous_name().c_str()) == 0 ? previous_name() : staging_);
    return;
  }
  // Not supported by this file system: two renames, the old output restored if the second fails.
#endif
  const std::string aside = previous_name();
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

std::string StagedFolder::previous_name() const { return out_ + ".previous-" + staging_.substr(staging_.size() - 6); }

// ---- OutputLock ------------------------------------------------------------------------------

namespace {

std::string this_host() {
  char name[256] = "";
  ::gethostname(name, sizeof name - 1);
  return name;
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// What a lock file says of its owner, as one phrase: "pid 4711 on host a (ordo pretrain, since T)".
std::string describe_owner(const std::string& contents) {
  std::string pid, host, command, since;
  size_t start = 0;
  while (start < contents.size()) {
    size_t end = contents.find('\n', start);
    if (end == std::string::npos) end = contents.size();
    const std::string line = contents.substr(start, end - start);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) {
      const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
      if (key == "pid") pid = value;
      else if (key == "host") host = value;
      else if (key == "command") command = value;
      else if (key == "since") since = value;
    }
    start = end + 1;
  }
  if (pid.empty()) return "another process";
  return "pid " + pid + " on host " + host + " (" + command + ", since " + since + ")";
}

std::string read_descriptor(int fd) {
  std::string text;
  char buf[512];
  ssize_t n;
  off_t at = 0;
  while ((n = ::pread(fd, buf, sizeof buf, at)) > 0) text.append(buf, static_cast<size_t>(n)), at += n;
  return text;
}

}  // namespace

bool OutputLock::take(const std::string& out, const std::string& command, std::string* owner) {
  path_ = without_trailing_slashes(out) + ".lock";
  const std::string folder = fs::path(path_).parent_path().empty() ? "." : fs::path(path_).parent_path().string();
  if (created_.empty()) created_ = outermost_missing(folder);
  make_directories(folder);
  // A lock file removed by its owner between our open() and flock() is no
  // longer the lock: try again on the file now at the path.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    ORDO_CHECK(fd >= 0, "cannot open the lock file ", path_, ": ", std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string contents = read_descriptor(fd);
      ::close(fd);
      ORDO_CHECK(err == EWOULDBLOCK, "cannot lock ", path_, ": ", std::strerror(err));
      *owner = describe_owner(contents);
      return false;
    }
    struct stat at_path, held;
    if (::stat(path_.c_str(), &at_path) != 0 || ::fstat(fd, &held) != 0 || at_path.st_ino != held.st_ino ||
        at_path.st_dev != held.st_dev) {
      ::close(fd);
      continue;
    }
    const std::string previous = read_descriptor(fd);
    if (!previous.empty()) stale_owner_ = describe_owner(previous);  // its owner ended without removing it
    const std::string mine = "pid=" + std::to_string(::getpid()) + "\nhost=" + this_host() + "\ncommand=" + command +
                             "\nsince=" + now_utc() + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, mine.data(), mine.size(), 0) != static_cast<ssize_t>(mine.size())) {
      const int err = errno;
      fd_ = fd;
      release();  // nothing of the failed attempt is left behind
      throw Error(detail::cat("cannot write the lock file ", path_, ": ", std::strerror(err)));
    }
    fd_ = fd;
    return true;
  }
  throw Error(detail::cat("cannot lock ", path_, ": it keeps being replaced"));
}

OutputLock::OutputLock(const std::string& out, const std::string& command) {
  std::string owner;
  if (!take(out, command, &owner)) {
    remove_created();
    throw Error(detail::cat("'", out, "' is being written by another ordo process: ", owner, " holds ", path_,
                            ". Wait for it to finish, or stop it; a lock whose process has ended is taken over"));
  }
}

std::unique_ptr<OutputLock> OutputLock::try_take(const std::string& out, const std::string& command,
                                                 std::string* owner) {
  std::unique_ptr<OutputLock> lock(new OutputLock());
  std::string holder;
  if (lock->take(out, command, &holder)) return lock;
  lock->remove_created();
  if (owner) *owner = holder;
  return nullptr;
}

OutputLock::~OutputLock() { release(); }

void OutputLock::release() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still held: a waiting process then finds no file, or a new one
  ::close(fd_);
  fd_ = -1;
  remove_created();
}

void OutputLock::remove_created() {
  if (created_.empty()) return;
  // The folders made for the lock, when nothing else was put in them.
  std::error_code ec;
  for (fs::path p = fs::path(path_).parent_path(); !p.empty(); p = p.parent_path()) {
    if (!fs::is_empty(p, ec) || !fs::remove(p, ec)) break;
    if (fs::absolute(p) == fs::path(created_)) break;
  }
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
