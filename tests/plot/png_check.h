// An independent reader of the PNG files ordo writes, for the tests: the
// signature, every chunk's CRC-32 (its own table here, from the polynomial
// 0xEDB88320 of ISO 3309), IHDR, IDAT inflated by zlib's uncompress (when
// the build found zlib) and the five row filters undone by hand from the PNG
// specification (ISO/IEC 15948, §9). Nothing of plot/png.cpp is used.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#ifdef ORDO_TEST_HAS_ZLIB
#include <zlib.h>
#endif

#include "tests/helpers.h"

namespace ordo::png_check {

inline uint32_t crc32(const std::string& bytes) {
  static uint32_t table[256];
  static bool ready = false;
  if (!ready) {
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[n] = c;
    }
    ready = true;
  }
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

inline uint32_t be32(const std::string& b, size_t at) {
  return (uint32_t(uint8_t(b[at])) << 24) | (uint32_t(uint8_t(b[at + 1])) << 16) |
         (uint32_t(uint8_t(b[at + 2])) << 8) | uint32_t(uint8_t(b[at + 3]));
}

struct Picture {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  // empty when zlib is not available
};

// Checks the file's structure with REQUIREs and returns the pixels.
inline Picture read(const std::string& bytes, const std::string& what) {
  INFO("PNG " << what);
  REQUIRE(bytes.size() > 8);
  REQUIRE(bytes.compare(0, 8, std::string("\x89PNG\r\n\x1a\n", 8)) == 0);
  Picture p;
  std::string idat;
  size_t at = 8;
  bool ihdr = false, iend = false;
  while (at < bytes.size()) {
    REQUIRE(!iend);  // nothing after IEND
    REQUIRE(at + 12 <= bytes.size());
    const uint32_t len = be32(bytes, at);
    REQUIRE(at + 12 + len <= bytes.size());
    const std::string type = bytes.substr(at + 4, 4);
    const std::string data = bytes.substr(at + 8, len);
    INFO("chunk " << type);
    REQUIRE(crc32(type + data) == be32(bytes, at + 8 + len));
    if (type == "IHDR") {
      REQUIRE(!ihdr);
      REQUIRE(len == 13);
      p.width = be32(data, 0), p.height = be32(data, 4);
      REQUIRE(uint8_t(data[8]) == 8);   // bit depth
      REQUIRE(uint8_t(data[9]) == 2);   // RGB
      REQUIRE(uint8_t(data[12]) == 0);  // not interlaced
      ihdr = true;
    } else if (type == "IDAT") {
      REQUIRE(ihdr);
      idat += data;
    } else if (type == "IEND") {
      iend = true;
    }
    at += 12 + len;
  }
  REQUIRE(ihdr);
  REQUIRE(iend);
  REQUIRE(p.width > 0);
  REQUIRE(p.height > 0);
#ifdef ORDO_TEST_HAS_ZLIB
  const size_t stride = 3 * size_t(p.width);
  std::vector<uint8_t> raw((stride + 1) * p.height);
  uLongf raw_len = raw.size();
  REQUIRE(uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) == Z_OK);
  REQUIRE(raw_len == raw.size());
  // Undo the filters (ISO/IEC 15948 §9.2): a = left, b = up, c = up-left, per byte.
  p.rgb.assign(stride * p.height, 0);
  for (size_t y = 0; y < p.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    REQUIRE(filter <= 4);
    for (size_t x = 0; x < stride; ++x) {
      const int v = raw[y * (stride + 1) + 1 + x];
      const int a = x >= 3 ? p.rgb[y * stride + x - 3] : 0;
      const int b = y > 0 ? p.rgb[(y - 1) * stride + x] : 0;
      const int c = x >= 3 && y > 0 ? p.rgb[(y - 1) * stride + x - 3] : 0;
      int pred = 0;
      if (filter == 1) pred = a;
      else if (filter == 2) pred = b;
      else if (filter == 3) pred = (a + b) / 2;
      else if (filter == 4) {
        const int pp = a + b - c, pa = std::abs(pp - a), pb = std::abs(pp - b), pc = std::abs(pp - c);
        pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      p.rgb[y * stride + x] = uint8_t((v + pred) & 0xFF);
    }
  }
#endif
  return p;
}

}  // namespace ordo::png_check
