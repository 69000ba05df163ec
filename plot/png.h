// PNG files of ordo's own: the pictures of probing and reports, no library.
//
//   zlib (RFC 1950) around deflate (RFC 1951): the encoder writes one
//   fixed-Huffman block with LZ77 matches (greedy, hash chains over a 32 KiB
//   window), or stored blocks when those come out smaller; the decoder
//   inflates stored, fixed and dynamic blocks (so it also reads what zlib
//   itself writes) and checks the Adler-32.
//   PNG (ISO/IEC 15948): 8-bit RGB, non-interlaced, each row filtered with
//   the filter (None, Sub, Up, Average, Paeth) whose output has the smallest
//   sum of absolute values; one IDAT chunk; CRC-32 on every chunk. The
//   decoder reads that format (any filters, any number of IDAT chunks) and
//   checks every CRC: enough to read back what encode writes, in the tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ordo::png {

// CRC-32 (ISO 3309, as PNG and gzip use it): crc32("123456789") = 0xCBF43926.
// Pass the previous result to continue a running CRC.
uint32_t crc32(std::string_view data, uint32_t crc = 0);
// Adler-32 (RFC 1950): adler32("Wikipedia") = 0x11E60398.
uint32_t adler32(std::string_view data, uint32_t adler = 1);

// A zlib stream of `data`.
std::string zlib_compress(std::string_view data);
// The bytes a zlib stream holds; ordo::Error for anything malformed (bad
// header, a code that is not in the table, a distance before the start, a
// wrong Adler-32, truncation).
std::string zlib_decompress(std::string_view stream);

// An 8-bit RGB picture, rows top to bottom, 3 bytes a pixel.
struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
  Image() = default;
  Image(int w, int h, uint8_t r = 255, uint8_t g = 255, uint8_t b = 255);
};

std::string encode(const Image& image);
// Reads 8-bit RGB, non-interlaced PNG (what encode writes); ordo::Error otherwise.
Image decode(std::string_view bytes);
// encode, then write_file_atomic.
void write(const std::string& path, const Image& image);

}  // namespace ordo::png
