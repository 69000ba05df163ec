// Whole-file reads and atomic writes.
//
// Everything ordo writes into a run directory (checkpoints, configs, metrics
// snapshots, reports) goes through write_file_atomic, so a crash or a full disk
// leaves either the old file or the new one, never half of one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ordo {

// The file's bytes. Throws ordo::Error naming the path and the system's reason
// (e.g. "No such file or directory"); a directory is refused.
std::string read_file(const std::string& path);

// Writes bytes to a temporary file in the target's directory, flushes it to
// disk (fsync), then renames it over path, which readers therefore see either
// whole or not at all. On any failure the temporary file is removed, the old
// target (if any) is left untouched, and ordo::Error names the path. A new
// file gets the usual permissions (0666 less the umask). When path is a
// symbolic link, the link itself is replaced.
void write_file_atomic(const std::string& path, std::string_view bytes);

// True when path names a regular file (following symbolic links).
bool file_exists(const std::string& path);
// True when path names a directory.
bool directory_exists(const std::string& path);
// Creates path and any missing parents (mkdir -p); ordo::Error naming the
// path when it cannot, or when it exists and is not a directory.
void make_directories(const std::string& path);

// A regular file opened for reading pieces of it at given offsets, so that a
// large file (a checkpoint) can be read straight into its final buffers.
// Every failure, including a short read, throws ordo::Error naming the path.
class InputFile {
 public:
  explicit InputFile(const std::string& path);  // refuses anything but a regular file
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }  // as it was when opened
  void read_at(uint64_t offset, void* dst, size_t n) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace ordo
