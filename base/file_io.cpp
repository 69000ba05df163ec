#include "base/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include "base/error.h"

namespace ordo {

namespace {

std::string reason(int err) { return std::system_category().message(err); }

// Closes a file descriptor on every path out of a function.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now and reports close's own error: on some filesystems (NFS) a
  // failed write only shows up here.
  int close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

std::string parent_directory(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Creates a fresh temporary file next to path. O_EXCL makes the name ours
// alone; the pid and a counter make a clash with another writer unlikely,
// and a clash only costs another try.
int create_temporary(const std::string& path, std::string* temp_path) {
  static std::atomic<unsigned long> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    *temp_path = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    int fd = ::open(temp_path->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

std::string read_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw Error("cannot read '" + path + "': " + reason(errno));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) throw Error("cannot read '" + path + "': " + reason(errno));
  if (S_ISDIR(st.st_mode)) throw Error("cannot read '" + path + "': it is a directory");

  std::string bytes;
  if (S_ISREG(st.st_mode)) bytes.reserve(static_cast<size_t>(st.st_size));
  // Read to the end rather than trusting st_size: pipes and /proc files report 0.
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot read '" + path + "': " + reason(errno));
    }
    if (n == 0) return bytes;
    bytes.append(buffer, static_cast<size_t>(n));
  }
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  std::string temp;
  Fd fd(create_temporary(path, &temp));
  if (fd.get() < 0)
    throw Error("cannot write '" + path + "': " + reason(errno) +
                " (creating a temporary file in " + parent_directory(path) + ")");

  // Any failure from here on removes the temporary file; the target has not
  // been touched yet.
  auto fail = [&](const std::string& step, int err) {
    ::unlink(temp.c_str());
    throw Error("cannot write '" + path + "': " + reason(err) + " (" + step + ")");
  };
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd.get(), p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("writing " + temp, errno);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) fail("flushing " + temp + " to disk", errno);
  if (fd.close() != 0) fail("closing " + temp, errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) fail("renaming " + temp + " over it", errno);

  // Make the rename itself durable. The new file is already complete and in
  // place, so a directory that refuses fsync (some filesystems do) is no
  // reason to report failure.
  int dir = ::open(parent_directory(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

InputFile::InputFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw Error("cannot read '" + path + "': " + reason(errno));
  struct stat st;
  int err = ::fstat(fd_, &st) != 0 ? errno : 0;
  if (err == 0 && S_ISREG(st.st_mode)) {
    size_ = static_cast<uint64_t>(st.st_size);
    return;
  }
  ::close(fd_);
  if (err != 0) throw Error("cannot read '" + path + "': " + reason(err));
  throw Error("cannot read '" + path + "': " +
              (S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file"));
}

InputFile::~InputFile() { ::close(fd_); }

void InputFile::read_at(uint64_t offset, void* dst, size_t n) const {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot read '" + path_ + "': " + reason(errno));
    }
    if (got == 0)
      throw Error("cannot read '" + path_ + "': the file ended at byte " + std::to_string(offset) +
                  ", before the " + std::to_string(n) + " more bytes expected (was it truncated?)");
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool directory_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

void make_directories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  ORDO_CHECK(!ec, "cannot create directory '", path, "': ", ec.message());
  ORDO_CHECK(directory_exists(path), "'", path, "' exists and is not a directory");
}

}  // namespace ordo
