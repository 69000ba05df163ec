#include "base/output.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
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
  if (!fs::exists(fs::symlink_status(path, ec))) return;
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

void check_output(const std::string& given, OutputKind kind, bool overwrite, const std::vector<InputPath>& inputs,
                  const std::string& flag) {
  // Refuses '..' through a missing folder and a file above the output; past
  // it, the kernel resolves the path to the same place as resolve_output_path.
  resolve_output_path(given, flag);
  ORDO_CHECK(kind == OutputKind::folder || given.back() != '/', flag, " '", given,
             "' ends in '/', which names a folder; give the path of a file");
  // The output as StagedFolder replaces it: "thesis.txt/" is the file thesis.txt
  // (asked about with the slash, it would seem not to exist, and be replaced).
  const std::string path = without_trailing_slashes(given);
  check_kind(path, kind, flag);
  // What the command reads, before the question of --overwrite: no --overwrite replaces it.
  for (const InputPath& input : inputs) check_spares(path, input, flag);
  check_overwrite(path, kind, overwrite, flag);
}

std::string resolve_output_path(const std::string& given, const std::string& flag) {
  ORDO_CHECK(!given.empty(), "flag ", flag, " needs a path");
  const fs::path path = fs::absolute(without_trailing_slashes(given));
  std::vector<std::string> parts;
  for (const fs::path& part : path.relative_path()) parts.push_back(part.string());
  fs::path at = path.root_path();  // resolved so far: physical while it exists
  bool missing = false;
  for (size_t k = 0; k < parts.size(); ++k) {
    const std::string& part = parts[k];
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      ORDO_CHECK(!missing, flag, " '", given, "': '..' follows '", at.string(), "', which does not exist: the path ",
                 "would make that folder and climb out of it again, onto whatever is there, unchecked. Write the path "
                 "without '..' (or make the folder first)");
      at = at.parent_path();
      continue;
    }
    at /= part;
    if (missing || k + 1 == parts.size()) continue;  // the last part is the output itself, a link included
    struct stat st;
    if (::lstat(at.c_str(), &st) != 0) {
      ORDO_CHECK(errno == ENOENT, flag, " '", given, "': cannot read '", at.string(), "': ", std::strerror(errno));
      missing = true;
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      std::error_code ec;
      const fs::path target = fs::canonical(at, ec);  // where the kernel goes on, and where '..' climbs from
      ORDO_CHECK(!ec, flag, " '", given, "': '", at.string(), "' is a symbolic link to a place that does not exist");
      ORDO_CHECK(::stat(target.c_str(), &st) == 0 && S_ISDIR(st.st_mode), flag, " '", given, "': '", at.string(),
                 "' is a file, not a folder");
      at = target;
      continue;
    }
    ORDO_CHECK(S_ISDIR(st.st_mode), flag, " '", given, "': '", at.string(), "' is a file, not a folder");
  }
  return at.string();
}

void check_output_spares(const std::string& path, const std::vector<InputPath>& inputs, const std::string& flag) {
  for (const InputPath& input : inputs) check_spares(path, input, flag);
}

void check_path_name(const std::string& name, const std::string& where) {
  ORDO_CHECK(!name.empty(), where, ": the name is empty; it names a folder ordo writes");
  ORDO_CHECK(name.size() <= 200, where, ": '", name.substr(0, 40), "...' is ", name.size(),
             " bytes long; a name that becomes a folder's has at most 200");
  for (const char ch : name) {
    const bool safe = std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '+' ||
                      ch == '=' || ch == '.';
    ORDO_CHECK(safe, where, ": '", name, "' holds the character '", std::string(1, ch), "' (byte ",
               static_cast<int>(static_cast<unsigned char>(ch)), "); it names a folder ordo writes, so it may hold only ",
               "letters, digits, '_', '-', '+', '=' and '.'");
  }
  ORDO_CHECK(name[0] != '.', where, ": '", name, "' begins with '.'; it names a folder ordo writes, which must not be ",
             "'.', '..' or hidden");
}

// ---- bookkeeping beside an output --------------------------------------------------------------

namespace {

constexpr const char* kMarker = ".ordo-bookkeeping";  // inside a bookkeeping folder: whose it is

std::string base_name(const std::string& out) { return fs::path(without_trailing_slashes(out)).filename().string(); }

std::string marker_text(const std::string& out, const std::string& kind) {
  return "ordo " + kind + " folder of " + base_name(out) + "\n";
}

// A bookkeeping folder's marker, opened when it is a regular file (never
// through a link) that reads `expected`: -1 otherwise.
int open_marker(const fs::path& folder, const std::string& expected) {
  const int fd = ::open((folder / kMarker).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st;
  char buf[1024];
  const ssize_t n = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? ::pread(fd, buf, sizeof buf, 0) : -1;
  if (n < 0 || std::string(buf, static_cast<size_t>(n)) != expected) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::string bookkeeping_path(const std::string& out, const std::string& kind) {
  const fs::path p(without_trailing_slashes(out));
  return (p.parent_path() / ("." + p.filename().string() + ".ordo-" + kind)).string();
}

BookkeepingFolder::BookkeepingFolder(const std::string& out, const std::string& kind) {
  std::string pattern = bookkeeping_path(out, kind) + "-XXXXXX";
  ORDO_CHECK(::mkdtemp(pattern.data()) != nullptr, "cannot create the folder ", pattern, " beside ", out, ": ",
             std::strerror(errno));
  path_ = pattern;
  const std::string text = marker_text(out, kind.substr(0, kind.find('-')));
  marker_fd_ = ::open((path_ + "/" + kMarker).c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (marker_fd_ < 0 || ::flock(marker_fd_, LOCK_EX | LOCK_NB) != 0 ||
      ::pwrite(marker_fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    const int err = errno;
    if (marker_fd_ >= 0) ::close(marker_fd_);
    std::error_code ignored;
    fs::remove_all(path_, ignored);
    throw Error(detail::cat("cannot write ", pattern, "/", kMarker, ": ", std::strerror(err)));
  }
}

BookkeepingFolder::BookkeepingFolder(BookkeepingFolder&& other) noexcept
    : path_(std::move(other.path_)), marker_fd_(other.marker_fd_) {
  other.path_.clear();
  other.marker_fd_ = -1;
}

BookkeepingFolder::~BookkeepingFolder() {
  if (marker_fd_ >= 0) ::close(marker_fd_);
  marker_fd_ = -1;
  std::error_code ignored;  // a destructor reports nothing; the failure that brought us here is reported
  if (!path_.empty()) fs::remove_all(path_, ignored);
  path_.clear();
}

void BookkeepingFolder::release() {
  if (marker_fd_ < 0) return;
  ::unlink((path_ + "/" + kMarker).c_str());
  ::close(marker_fd_);
  marker_fd_ = -1;
  path_.clear();
}

int64_t remove_stale_bookkeeping(const std::string& out, const std::string& kind) {
  const fs::path prefix(bookkeeping_path(out, kind) + "-");
  const fs::path dir = prefix.parent_path().empty() ? fs::path(".") : prefix.parent_path();
  const std::string start = prefix.filename().string(), expected = marker_text(out, kind);
  int64_t removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(start, 0) != 0 || !fs::is_directory(e.symlink_status(ec))) continue;
    const int fd = open_marker(e.path(), expected);
    if (fd < 0) continue;  // not provably ordo's, for this output: not ours to remove
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) removed += fs::remove_all(e.path(), ec) > 0;  // its maker has ended
    ::close(fd);
  }
  return removed;
}

StagedFolder::StagedFolder(const std::string& out) {
  ORDO_CHECK(!without_trailing_slashes(out).empty(), "no output folder given");
  // The physical place (no '..' through a folder about to be made): every
  // name derived from it keeps its meaning when the output, once swapped in,
  // replaces a link that the given spelling went through ("in/../in").
  out_ = resolve_output_path(without_trailing_slashes(out), "the output");
  const fs::path parent = fs::path(out_).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  created_ = outermost_missing(folder);
  make_directories(folder);
  if (const int64_t removed = remove_stale_bookkeeping(out_, "new"))
    std::fprintf(stderr, "ordo: note: removed %lld unfinished staging folder(s) of %s left by a process that was stopped\n",
                 static_cast<long long>(removed), out_.c_str());
  try {
    folder_.emplace(out_, "new");
  } catch (const Error&) {
    std::error_code ignored;
    if (!created_.empty()) fs::remove_all(created_, ignored);
    throw;
  }
  staging_ = folder_->path();
  // mkdtemp makes the folder private (0700); the output gets a new folder's
  // usual permissions. (umask can only be read by setting it; nothing else
  // creates files while an output is being staged.)
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(staging_.c_str(), 0777 & ~mask);
}

StagedFolder::StagedFolder(StagedFolder&& other) noexcept
    : out_(std::move(other.out_)), folder_(std::move(other.folder_)), staging_(std::move(other.staging_)),
      created_(std::move(other.created_)), committed_(other.committed_) {
  other.folder_.reset();
  other.staging_.clear();  // the moved-from object removes nothing
}

StagedFolder::~StagedFolder() {
  if (committed_ || staging_.empty()) return;
  std::error_code ignored;  // a destructor reports nothing; the failure that brought us here is reported
  fs::remove_all(created_.empty() ? staging_ : created_, ignored);
}

namespace {

// rename() that never replaces what is at `to` (an empty folder included)
// where the kernel can say so; 0 or an errno.
int rename_no_replace(const std::string& from, const std::string& to) {
#ifdef RENAME_NOREPLACE
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return errno;
#endif
  struct stat st;
  if (::lstat(to.c_str(), &st) == 0) return EEXIST;
  return std::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

}  // namespace

void StagedFolder::commit() {
  ORDO_CHECK(!committed_ && !staging_.empty(), "the output ", out_, " is already in place");
  std::error_code ec;
  const fs::file_status there = fs::symlink_status(out_, ec);
  ORDO_CHECK(!fs::exists(there) || fs::is_directory(there) || fs::is_symlink(there), "'", out_,
             "' is a file, not a folder; a folder output never replaces it");
  folder_->release();  // its marker goes: the folder is about to be the output
  if (!fs::exists(there)) {
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
    remove_previous(rename_no_replace(staging_, previous_name()) == 0 ? previous_name() : staging_);
    return;
  }
  // Not supported by this file system: two renames, the old output restored if the second fails.
#endif
  const std::string aside = previous_name();
  const int err = rename_no_replace(out_, aside);
  ORDO_CHECK(err == 0, "cannot move ", out_, " to ", aside, ": ", std::strerror(err));
  try {
    move(staging_, out_);
  } catch (const Error&) {
    std::rename(aside.c_str(), out_.c_str());
    throw;
  }
  committed_ = true;
  remove_previous(aside);
}

bool StagedFolder::commit_if_absent() {
  ORDO_CHECK(!committed_ && !staging_.empty(), "the output ", out_, " is already in place");
  folder_->release();
  int err = rename_no_replace(staging_, out_);
  std::error_code ec;
  // An empty folder there holds nothing: rename() takes its place, or fails if it was filled meanwhile.
  if (err == EEXIST && fs::is_directory(fs::symlink_status(out_, ec)) && fs::is_empty(out_, ec))
    err = std::rename(staging_.c_str(), out_.c_str()) == 0 ? 0 : errno;
  if (err == EEXIST || err == ENOTEMPTY) return false;
  ORDO_CHECK(err == 0, "cannot move ", staging_, " to ", out_, ": ", std::strerror(err));
  committed_ = true;
  return true;
}

std::string StagedFolder::previous_name() const {
  return bookkeeping_path(out_, "previous") + "-" + staging_.substr(staging_.size() - 6);
}

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

namespace {

// The first line of every lock file ordo writes: what a file must begin with
// before ordo takes it over as a lock left by a process that ended.
constexpr const char* kLockHeader = "ordo output lock\n";

// Opens the lock file at `path`, made if missing (`*created`), never through
// a symbolic link; -1 when it vanished meanwhile (try again).
int open_lock_file(const std::string& path, bool* created) {
  *created = true;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0 && errno == EEXIST) {
    *created = false;
    fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return -1;
  }
  ORDO_CHECK(fd >= 0 || errno != ELOOP, "the lock file ", path, " is a symbolic link; ordo never writes through one ",
             "(it would overwrite the file it points to): remove the link, or name another output");
  struct stat st;
  const bool regular = fd >= 0 ? ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) : errno != EISDIR;
  if (!regular) {
    if (fd >= 0) ::close(fd);
    throw Error(detail::cat("the lock file ", path, " exists and is not a regular file: move it away, or name another output"));
  }
  ORDO_CHECK(fd >= 0, "cannot open the lock file ", path, ": ", std::strerror(errno));
  return fd;
}

bool same_file(const std::string& path, int fd) {
  struct stat at_path, held;
  return ::lstat(path.c_str(), &at_path) == 0 && ::fstat(fd, &held) == 0 && at_path.st_ino == held.st_ino &&
         at_path.st_dev == held.st_dev;
}

}  // namespace

bool OutputLock::take(const std::string& out, const std::string& command, std::string* owner) {
  // The physical place, as for a staged folder: the lock's name keeps its
  // meaning whatever the output, once written, replaces.
  path_ = bookkeeping_path(resolve_output_path(out, "the output"), "lock");
  const std::string folder = fs::path(path_).parent_path().empty() ? "." : fs::path(path_).parent_path().string();
  if (created_.empty()) created_ = outermost_missing(folder);
  make_directories(folder);
  // A lock file removed by its owner between our open() and flock() is no
  // longer the lock: try again on the file now at the path.
  for (int attempt = 0; attempt < 100; ++attempt) {
    bool created = false;
    const int fd = open_lock_file(path_, &created);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string contents = read_descriptor(fd);
      ::close(fd);
      ORDO_CHECK(err == EWOULDBLOCK, "cannot lock ", path_, ": ", std::strerror(err));
      *owner = describe_owner(contents);
      return false;
    }
    if (!same_file(path_, fd)) {
      ::close(fd);
      continue;
    }
    // Empty: made by a process that has not written it yet (or was killed doing so): nothing to lose.
    const std::string previous = read_descriptor(fd);
    if (!created && !previous.empty() && previous.rfind(kLockHeader, 0) != 0) {
      ::close(fd);
      throw Error(detail::cat(path_, " exists and is not an ordo lock file (it does not begin '",
                              std::string(kLockHeader, std::strlen(kLockHeader) - 1),
                              "'); ordo leaves it alone: move it away, or name another output"));
    }
    if (!previous.empty()) stale_owner_ = describe_owner(previous);  // its owner ended without removing it
    const std::string mine = std::string(kLockHeader) + "pid=" + std::to_string(::getpid()) + "\nhost=" + this_host() +
                             "\ncommand=" + command + "\nsince=" + now_utc() + "\n";
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
  // While still held: a waiting process then finds no file, or a new one. Only
  // the file this lock holds: one put in its place meanwhile is not ordo's to remove.
  if (same_file(path_, fd_)) ::unlink(path_.c_str());
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
