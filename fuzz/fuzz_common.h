// What the libFuzzer targets share: the input as a string, a scratch file
// for the readers that take a path, and the one rule of every target — an
// ordo::Error is the reader doing its job; anything else (a crash, a sanitizer
// report, another exception, a hang) is a bug that libFuzzer keeps.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

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

// The input cut into `count` parts at the line "#ordo-file#" (a target that
// reads several files: their bytes in order, a separator between); parts
// missing from the input are empty, the last takes the rest.
inline std::vector<std::string> parts(const uint8_t* data, size_t size, size_t count) {
  const std::string input = text(data, size), separator = "\n#ordo-file#\n";
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < count; ++i) {
    size_t end = i + 1 < count ? input.find(separator, start) : std::string::npos;
    if (end == std::string::npos) end = input.size();
    out.push_back(input.substr(start, end - start));
    start = std::min(end + separator.size(), input.size());
  }
  return out;
}

}  // namespace ordo::fuzz
