#include "plot/png.h"

#include <algorithm>
#include <array>
#include <cstdlib>

#include "base/error.h"
#include "base/file_io.h"

namespace ordo::png {

// ---- checksums ---------------------------------------------------------------------------

uint32_t crc32(std::string_view data, uint32_t crc) {
  // The reflected polynomial 0xEDB88320, one table of 256 entries.
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  uint32_t c = crc ^ 0xFFFFFFFFu;
  for (unsigned char byte : data) c = table[(c ^ byte) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t adler32(std::string_view data, uint32_t adler) {
  const uint32_t mod = 65521;
  uint32_t a = adler & 0xFFFF, b = adler >> 16;
  size_t i = 0;
  while (i < data.size()) {
    // 5552 bytes keep b below 2^32 before the reduction (zlib's NMAX).
    size_t end = std::min(data.size(), i + 5552);
    for (; i < end; ++i) {
      a += static_cast<unsigned char>(data[i]);
      b += a;
    }
    a %= mod;
    b %= mod;
  }
  return (b << 16) | a;
}

// ---- deflate tables (RFC 1951, 3.2.5) --------------------------------------------------------

namespace {

const uint16_t kLengthBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                  31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
const uint8_t kLengthExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
const uint16_t kDistBase[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
                                193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
const uint8_t kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

// ---- the encoder ------------------------------------------------------------------------------

// Bits go out least significant first; Huffman codes most significant bit first.
class BitWriter {
 public:
  void bits(uint32_t value, int count) {
    acc_ |= static_cast<uint64_t>(value) << n_;
    n_ += count;
    while (n_ >= 8) {
      out_ += static_cast<char>(acc_ & 0xFF);
      acc_ >>= 8;
      n_ -= 8;
    }
  }
  void code(uint32_t code, int length) {
    uint32_t reversed = 0;
    for (int i = 0; i < length; ++i) reversed |= ((code >> i) & 1u) << (length - 1 - i);
    bits(reversed, length);
  }
  std::string finish() {
    if (n_ > 0) out_ += static_cast<char>(acc_ & 0xFF);
    acc_ = 0;
    n_ = 0;
    return std::move(out_);
  }

 private:
  std::string out_;
  uint64_t acc_ = 0;
  int n_ = 0;
};

// The fixed literal/length code (RFC 1951, 3.2.6).
void fixed_literal(BitWriter& w, int symbol) {
  if (symbol <= 143) w.code(0x30 + symbol, 8);
  else if (symbol <= 255) w.code(0x190 + symbol - 144, 9);
  else if (symbol <= 279) w.code(symbol - 256, 7);
  else w.code(0xC0 + symbol - 280, 8);
}

void fixed_match(BitWriter& w, int length, int distance) {
  int lc = 28;
  while (kLengthBase[lc] > length) --lc;
  fixed_literal(w, 257 + lc);
  w.bits(static_cast<uint32_t>(length - kLengthBase[lc]), kLengthExtra[lc]);
  int dc = 29;
  while (kDistBase[dc] > distance) --dc;
  w.code(static_cast<uint32_t>(dc), 5);
  w.bits(static_cast<uint32_t>(distance - kDistBase[dc]), kDistExtra[dc]);
}

// One final fixed-Huffman block with greedy LZ77 matches.
std::string deflate_fixed(std::string_view data) {
  const int kWindow = 32768, kMinMatch = 3, kMaxMatch = 258, kChain = 64, kHashBits = 15;
  const size_t n = data.size();
  const auto* s = reinterpret_cast<const uint8_t*>(data.data());
  std::vector<int32_t> head(size_t{1} << kHashBits, -1), prev(kWindow, -1);
  auto hash = [&](size_t i) {
    uint32_t h = (static_cast<uint32_t>(s[i]) << 16) | (static_cast<uint32_t>(s[i + 1]) << 8) | s[i + 2];
    return (h * 2654435761u) >> (32 - kHashBits);
  };
  auto insert = [&](size_t i) {
    if (i + kMinMatch > n) return;
    uint32_t h = hash(i);
    prev[i % kWindow] = head[h];
    head[h] = static_cast<int32_t>(i);
  };
  BitWriter w;
  w.bits(1, 1);  // BFINAL
  w.bits(1, 2);  // BTYPE = 01, fixed Huffman
  size_t i = 0;
  while (i < n) {
    int best_len = 0, best_dist = 0;
    if (i + kMinMatch <= n) {
      int32_t cand = head[hash(i)];
      const int max_len = static_cast<int>(std::min<size_t>(kMaxMatch, n - i));
      for (int chain = 0; cand >= 0 && chain < kChain; ++chain) {
        const size_t c = static_cast<size_t>(cand);
        if (i - c > static_cast<size_t>(kWindow)) break;
        int len = 0;
        while (len < max_len && s[c + len] == s[i + len]) ++len;
        if (len > best_len) {
          best_len = len;
          best_dist = static_cast<int>(i - c);
          if (len == max_len) break;
        }
        const int32_t next = prev[c % kWindow];
        if (next >= cand) break;  // the slot was reused by a newer position
        cand = next;
      }
    }
    if (best_len >= kMinMatch) {
      fixed_match(w, best_len, best_dist);
      for (int k = 0; k < best_len; ++k) insert(i + k);
      i += static_cast<size_t>(best_len);
    } else {
      fixed_literal(w, s[i]);
      insert(i);
      ++i;
    }
  }
  fixed_literal(w, 256);  // end of block
  return w.finish();
}

// Stored blocks of at most 65535 bytes.
std::string deflate_stored(std::string_view data) {
  std::string out;
  size_t at = 0;
  do {
    const size_t len = std::min<size_t>(65535, data.size() - at);
    const bool last = at + len == data.size();
    out += static_cast<char>(last ? 1 : 0);  // BFINAL, BTYPE = 00, padding to the byte
    out += static_cast<char>(len & 0xFF);
    out += static_cast<char>(len >> 8);
    out += static_cast<char>(~len & 0xFF);
    out += static_cast<char>((~len >> 8) & 0xFF);
    out.append(data.substr(at, len));
    at += len;
  } while (at < data.size());
  return out;
}

void put_be32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xFF);
}

uint32_t get_be32(std::string_view b, size_t at) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(b[at])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(b[at + 1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(b[at + 2])) << 8) | static_cast<uint8_t>(b[at + 3]);
}

// ---- the decoder (after Mark Adler's puff.c: canonical codes decoded bit by bit) -----------------

class BitReader {
 public:
  explicit BitReader(std::string_view in) : in_(in) {}
  uint32_t bits(int count) {
    uint64_t v = buf_;
    while (n_ < count) {
      ORDO_CHECK(pos_ < in_.size(), "inflate: the stream ends early");
      v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[pos_++])) << n_;
      n_ += 8;
    }
    buf_ = v >> count;
    n_ -= count;
    return static_cast<uint32_t>(v & ((uint64_t{1} << count) - 1));
  }
  void align() {
    buf_ = 0;
    n_ = 0;
  }
  size_t position() const { return pos_; }
  void skip(size_t n) { pos_ += n; }
  std::string_view input() const { return in_; }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  uint64_t buf_ = 0;
  int n_ = 0;
};

struct Huffman {
  std::array<int, 16> count{};
  std::vector<int> symbol;
};

Huffman build(const int* lengths, int n) {
  Huffman h;
  for (int s = 0; s < n; ++s) h.count[lengths[s]]++;
  h.count[0] = 0;
  int left = 1;
  for (int len = 1; len < 16; ++len) {
    left = (left << 1) - h.count[len];
    ORDO_CHECK(left >= 0, "inflate: an over-subscribed Huffman code");
  }
  std::array<int, 16> offs{};
  for (int len = 1; len < 15; ++len) offs[len + 1] = offs[len] + h.count[len];
  h.symbol.assign(static_cast<size_t>(n), 0);
  for (int s = 0; s < n; ++s)
    if (lengths[s] != 0) h.symbol[static_cast<size_t>(offs[lengths[s]]++)] = s;
  return h;
}

int decode(BitReader& r, const Huffman& h) {
  int code = 0, first = 0, index = 0;
  for (int len = 1; len < 16; ++len) {
    code |= static_cast<int>(r.bits(1));
    const int count = h.count[len];
    if (code - count < first) return h.symbol[static_cast<size_t>(index + (code - first))];
    index += count;
    first += count;
    first <<= 1;
    code <<= 1;
  }
  throw Error("inflate: a code that is not in the Huffman table");
}

void inflate_codes(BitReader& r, std::string& out, const Huffman& lit, const Huffman& dist) {
  for (;;) {
    int symbol = decode(r, lit);
    if (symbol < 256) {
      out += static_cast<char>(symbol);
    } else if (symbol == 256) {
      return;
    } else {
      symbol -= 257;
      ORDO_CHECK(symbol < 29, "inflate: length code ", symbol + 257, " is invalid");
      const size_t len = kLengthBase[symbol] + r.bits(kLengthExtra[symbol]);
      const int ds = decode(r, dist);
      ORDO_CHECK(ds < 30, "inflate: distance code ", ds, " is invalid");
      const size_t d = kDistBase[ds] + r.bits(kDistExtra[ds]);
      ORDO_CHECK(d <= out.size(), "inflate: a distance of ", d, " reaches before the start of the data");
      for (size_t k = 0; k < len; ++k) out += out[out.size() - d];
    }
  }
}

std::string inflate(BitReader& r) {
  std::string out;
  for (bool last = false; !last;) {
    last = r.bits(1) == 1;
    const uint32_t type = r.bits(2);
    if (type == 0) {
      r.align();
      const std::string_view in = r.input();
      const size_t at = r.position();
      ORDO_CHECK(at + 4 <= in.size(), "inflate: a stored block's header is cut off");
      const uint32_t len = static_cast<uint8_t>(in[at]) | (static_cast<uint8_t>(in[at + 1]) << 8);
      const uint32_t nlen = static_cast<uint8_t>(in[at + 2]) | (static_cast<uint8_t>(in[at + 3]) << 8);
      ORDO_CHECK(len == (~nlen & 0xFFFF), "inflate: a stored block's length does not match its complement");
      ORDO_CHECK(at + 4 + len <= in.size(), "inflate: a stored block is cut off");
      out.append(in.substr(at + 4, len));
      r.skip(4 + len);
    } else if (type == 1) {
      static const std::pair<Huffman, Huffman> fixed = [] {
        int lengths[288];
        for (int s = 0; s < 288; ++s) lengths[s] = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
        int dl[30];
        std::fill(dl, dl + 30, 5);
        return std::make_pair(build(lengths, 288), build(dl, 30));
      }();
      inflate_codes(r, out, fixed.first, fixed.second);
    } else if (type == 2) {
      const int nlen = static_cast<int>(r.bits(5)) + 257, ndist = static_cast<int>(r.bits(5)) + 1;
      const int ncode = static_cast<int>(r.bits(4)) + 4;
      ORDO_CHECK(nlen <= 286 && ndist <= 30, "inflate: a dynamic block with too many codes");
      static const int order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
      int lengths[320] = {};
      for (int k = 0; k < ncode; ++k) lengths[order[k]] = static_cast<int>(r.bits(3));
      const Huffman lencode = build(lengths, 19);
      int index = 0;
      while (index < nlen + ndist) {
        int symbol = decode(r, lencode);
        if (symbol < 16) {
          lengths[index++] = symbol;
          continue;
        }
        int value = 0, repeat;
        if (symbol == 16) {
          ORDO_CHECK(index > 0, "inflate: a repeat with no previous length");
          value = lengths[index - 1];
          repeat = 3 + static_cast<int>(r.bits(2));
        } else if (symbol == 17) {
          repeat = 3 + static_cast<int>(r.bits(3));
        } else {
          repeat = 11 + static_cast<int>(r.bits(7));
        }
        ORDO_CHECK(index + repeat <= nlen + ndist, "inflate: code lengths overrun the table");
        while (repeat--) lengths[index++] = value;
      }
      ORDO_CHECK(lengths[256] != 0, "inflate: a dynamic block without an end-of-block code");
      inflate_codes(r, out, build(lengths, nlen), build(lengths + nlen, ndist));
    } else {
      throw Error("inflate: block type 3 is invalid");
    }
  }
  return out;
}

}  // namespace

std::string zlib_compress(std::string_view data) {
  std::string body = deflate_fixed(data);
  std::string stored = deflate_stored(data);
  if (stored.size() < body.size()) body.swap(stored);
  std::string out;
  out += static_cast<char>(0x78);  // CM = 8 (deflate), CINFO = 7 (32 KiB window)
  out += static_cast<char>(0x01);  // FLEVEL 0, no dictionary; (0x78 * 256 + 0x01) % 31 == 0
  out += body;
  put_be32(out, adler32(data));
  return out;
}

std::string zlib_decompress(std::string_view stream) {
  ORDO_CHECK(stream.size() >= 6, "zlib: a stream of ", stream.size(), " bytes is too short");
  const uint8_t cmf = static_cast<uint8_t>(stream[0]), flg = static_cast<uint8_t>(stream[1]);
  ORDO_CHECK((cmf & 0x0F) == 8 && (cmf >> 4) <= 7, "zlib: not a deflate stream (CMF ", int(cmf), ")");
  ORDO_CHECK((cmf * 256 + flg) % 31 == 0, "zlib: the header check bits are wrong");
  ORDO_CHECK(!(flg & 0x20), "zlib: a preset dictionary is not supported");
  BitReader r(stream.substr(2));
  std::string out = inflate(r);
  const size_t end = 2 + r.position();
  ORDO_CHECK(end + 4 <= stream.size(), "zlib: the Adler-32 is missing");
  ORDO_CHECK(get_be32(stream, end) == adler32(out), "zlib: the Adler-32 does not match the data");
  return out;
}

// ---- PNG ------------------------------------------------------------------------------------

Image::Image(int w, int h, uint8_t r, uint8_t g, uint8_t b) : width(w), height(h) {
  ORDO_CHECK(w > 0 && h > 0 && w <= (1 << 15) && h <= (1 << 15), "png::Image: size ", w, " x ", h, " is out of range");
  rgb.resize(static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
  for (size_t i = 0; i < rgb.size(); i += 3) rgb[i] = r, rgb[i + 1] = g, rgb[i + 2] = b;
}

namespace {

const char kSignature[] = "\x89PNG\r\n\x1a\n";

void chunk(std::string& out, const char* type, const std::string& data) {
  put_be32(out, static_cast<uint32_t>(data.size()));
  std::string body = std::string(type, 4) + data;
  out += body;
  put_be32(out, crc32(body));
}

int paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

// Filter type `f` of byte x of a row (RFC 2083 / PNG 9.2), bpp = 3.
int predictor(int f, const uint8_t* row, const uint8_t* up, size_t x) {
  const int a = x >= 3 ? row[x - 3] : 0, b = up ? up[x] : 0, c = (up && x >= 3) ? up[x - 3] : 0;
  switch (f) {
    case 0: return 0;
    case 1: return a;
    case 2: return b;
    case 3: return (a + b) / 2;
    default: return paeth(a, b, c);
  }
}

}  // namespace

std::string encode(const Image& image) {
  ORDO_CHECK(image.width > 0 && image.height > 0 &&
                 image.rgb.size() == static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3,
             "png::encode: the image is ", image.width, " x ", image.height, " with ", image.rgb.size(), " bytes");
  const size_t stride = static_cast<size_t>(image.width) * 3;
  std::string raw;
  raw.reserve((stride + 1) * static_cast<size_t>(image.height));
  std::string best, trial(stride, '\0');
  for (int y = 0; y < image.height; ++y) {
    const uint8_t* row = image.rgb.data() + static_cast<size_t>(y) * stride;
    const uint8_t* up = y > 0 ? row - stride : nullptr;
    long best_cost = -1;
    int best_filter = 0;
    for (int f = 0; f < 5; ++f) {
      long cost = 0;
      for (size_t x = 0; x < stride; ++x) {
        const uint8_t v = static_cast<uint8_t>(row[x] - predictor(f, row, up, x));
        trial[x] = static_cast<char>(v);
        cost += std::abs(static_cast<int>(static_cast<int8_t>(v)));
      }
      if (best_cost < 0 || cost < best_cost) best_cost = cost, best_filter = f, best = trial;
    }
    raw += static_cast<char>(best_filter);
    raw += best;
  }
  std::string ihdr;
  put_be32(ihdr, static_cast<uint32_t>(image.width));
  put_be32(ihdr, static_cast<uint32_t>(image.height));
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8 bits, RGB, deflate, adaptive filters, no interlace
  std::string out(kSignature, 8);
  chunk(out, "IHDR", ihdr);
  chunk(out, "IDAT", zlib_compress(raw));
  chunk(out, "IEND", "");
  return out;
}

Image decode(std::string_view bytes) {
  ORDO_CHECK(bytes.size() >= 8 && bytes.substr(0, 8) == std::string_view(kSignature, 8), "png: no PNG signature");
  size_t at = 8;
  bool have_header = false, ended = false;
  int width = 0, height = 0;
  std::string idat;
  while (!ended) {
    ORDO_CHECK(at + 12 <= bytes.size(), "png: the file ends inside a chunk");
    const uint32_t len = get_be32(bytes, at);
    ORDO_CHECK(len <= bytes.size() - at - 12, "png: a chunk of ", len, " bytes runs past the end of the file");
    const std::string_view type = bytes.substr(at + 4, 4), data = bytes.substr(at + 8, len);
    ORDO_CHECK(get_be32(bytes, at + 8 + len) == crc32(bytes.substr(at + 4, 4 + len)), "png: chunk '",
               std::string(type), "' has a wrong CRC");
    at += 12 + len;
    if (type == "IHDR") {
      ORDO_CHECK(!have_header && len == 13, "png: a bad or repeated IHDR");
      width = static_cast<int>(get_be32(data, 0));
      height = static_cast<int>(get_be32(data, 4));
      ORDO_CHECK(width > 0 && height > 0 && width <= (1 << 15) && height <= (1 << 15), "png: size ", width, " x ",
                 height, " is out of range");
      ORDO_CHECK(data.substr(8, 5) == std::string_view("\x08\x02\x00\x00\x00", 5),
                 "png: only 8-bit RGB, non-interlaced images are read");
      have_header = true;
    } else if (type == "IDAT") {
      ORDO_CHECK(have_header, "png: IDAT before IHDR");
      idat.append(data);
    } else if (type == "IEND") {
      ended = true;
    } else {
      ORDO_CHECK(type[0] >= 'a' && type[0] <= 'z', "png: unknown critical chunk '", std::string(type), "'");
    }
  }
  ORDO_CHECK(have_header, "png: no IHDR");
  const std::string raw = zlib_decompress(idat);
  const size_t stride = static_cast<size_t>(width) * 3;
  ORDO_CHECK(raw.size() == (stride + 1) * static_cast<size_t>(height), "png: the image data holds ", raw.size(),
             " bytes, ", width, " x ", height, " RGB needs ", (stride + 1) * static_cast<size_t>(height));
  Image image;
  image.width = width;
  image.height = height;
  image.rgb.resize(stride * static_cast<size_t>(height));
  for (int y = 0; y < height; ++y) {
    const int f = static_cast<uint8_t>(raw[static_cast<size_t>(y) * (stride + 1)]);
    ORDO_CHECK(f <= 4, "png: row ", y, " has filter type ", f);
    uint8_t* row = image.rgb.data() + static_cast<size_t>(y) * stride;
    const uint8_t* up = y > 0 ? row - stride : nullptr;
    const char* in = raw.data() + static_cast<size_t>(y) * (stride + 1) + 1;
    for (size_t x = 0; x < stride; ++x)
      row[x] = static_cast<uint8_t>(static_cast<uint8_t>(in[x]) + predictor(f, row, up, x));
  }
  return image;
}

void write(const std::string& path, const Image& image) { write_file_atomic(path, encode(image)); }

}  // namespace ordo::png
