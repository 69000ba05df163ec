// What the libFuzzer targets share: the input as a string, a scratch file
// for the readers that take a path, and the one rule of every target — an
// ordo::Error is the reader doing its job; anything else (a crash, a sanitizer
// report, another exception, a hang) is a bug that libFuzzer keeps.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace ordo::fuzz {

inline std::string text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// The bytes written to one file per process (rewritten for every input), so
// that readers which open a path read exactly them.
inline const std::string& scratch_file(const uint8_t* data, size_t size, const char* name) {
  static const std::string path = "/tmp/ordo-fuzz-" + std::to_string(::getpid()) + "-" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace ordo::fuzz
