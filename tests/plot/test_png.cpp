// ordo's own PNG writer (plot/png.h) and pictures (plot/plot.h)
// against independent references: the published check values of CRC-32 and
// Adler-32, zlib itself (when the build found it) in both directions, the
// test's own PNG reader (tests/plot/png_check.h), and matplotlib's viridis
// end points.
#include <set>

#include "plot/plot.h"
#include "plot/png.h"
#include "tests/helpers.h"
#include "tests/plot/png_check.h"

using namespace ordo;

namespace {

std::string random_bytes(size_t n, uint64_t seed) {
  std::vector<double> v = test::random_values(static_cast<int64_t>(n), seed, 0, 256);
  std::string s(n, '\0');
  for (size_t k = 0; k < n; ++k) s[k] = static_cast<char>(static_cast<int>(v[k]));
  return s;
}

// Text with long repeats (LZ77 matches at many distances) past the 32 KiB window.
std::string repetitive(size_t n) {
  std::string s;
  for (int k = 0; s.size() < n; ++k) s += "the word " + std::to_string(k % 97) + " and again the word; ";
  return s.substr(0, n);
}

png::Image random_image(int w, int h, uint64_t seed) {
  png::Image im(w, h);
  std::string b = random_bytes(im.rgb.size(), seed);
  for (size_t k = 0; k < b.size(); ++k) im.rgb[k] = static_cast<uint8_t>(b[k]);
  return im;
}

png::Image gradient_image(int w, int h) {
  png::Image im(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &im.rgb[static_cast<size_t>((y * w + x) * 3)];
      p[0] = static_cast<uint8_t>(x * 255 / std::max(1, w - 1));
      p[1] = static_cast<uint8_t>(y * 255 / std::max(1, h - 1));
      p[2] = static_cast<uint8_t>((x + y) % 7 * 30);
    }
  return im;
}

}  // namespace

TEST_CASE("png: CRC-32 and Adler-32 check values", "[probe][png]") {
  CHECK(png::crc32("123456789") == 0xCBF43926u);  // the catalogue check value of CRC-32/ISO-HDLC
  CHECK(png::crc32("") == 0u);
  CHECK(png::adler32("Wikipedia") == 0x11E60398u);  // RFC 1950's worked example, as Wikipedia gives it
  CHECK(png::adler32("") == 1u);
  // Running CRC: two halves continue into the whole.
  CHECK(png::crc32("6789", png::crc32("12345")) == 0xCBF43926u);
  // Against the test's own table-driven CRC on random data.
  const std::string r = random_bytes(5000, 3);
  CHECK(png::crc32(r) == png_check::crc32(r));
}

TEST_CASE("png: zlib streams both ways", "[probe][png]") {
  for (const std::string& data : {std::string(), std::string("a"), random_bytes(1000, 1), random_bytes(70000, 2),
                                  repetitive(100000), std::string(200000, 'z')}) {
    INFO("size " << data.size());
    const std::string z = png::zlib_compress(data);
    CHECK(png::zlib_decompress(z) == data);
#ifdef ORDO_TEST_HAS_ZLIB
    // zlib inflates what ordo wrote ...
    std::vector<uint8_t> out(data.size() + 1);
    uLongf out_len = out.size();
    REQUIRE(uncompress(out.data(), &out_len, reinterpret_cast<const Bytef*>(z.data()), z.size()) == Z_OK);
    CHECK(std::string(reinterpret_cast<const char*>(out.data()), out_len) == data);
    // ... and ordo inflates what zlib writes: stored (0), fixed/dynamic (1, 9) blocks.
    for (int level : {0, 1, 6, 9}) {
      uLongf cap = compressBound(data.size());
      std::vector<uint8_t> zz(cap);
      REQUIRE(compress2(zz.data(), &cap, reinterpret_cast<const Bytef*>(data.data()), data.size(), level) == Z_OK);
      CHECK(png::zlib_decompress(std::string(reinterpret_cast<const char*>(zz.data()), cap)) == data);
    }
#endif
  }
  // Repetitive data compresses (matches are found), random data does not grow much (stored blocks).
  CHECK(png::zlib_compress(repetitive(100000)).size() < 20000);
  CHECK(png::zlib_compress(random_bytes(70000, 2)).size() < 70000 + 70000 / 1000 + 64);
}

TEST_CASE("png: damaged zlib streams are errors", "[probe][png]") {
  const std::string data = repetitive(5000);
  std::string z = png::zlib_compress(data);
  std::string bad_adler = z;
  bad_adler.back() = static_cast<char>(bad_adler.back() ^ 1);
  CHECK_THROWS_AS(png::zlib_decompress(bad_adler), Error);
  CHECK_THROWS_AS(png::zlib_decompress(z.substr(0, z.size() / 2)), Error);
  std::string bad_header = z;
  bad_header[0] = 0x79;  // not deflate with a 32 KiB window / a wrong check
  CHECK_THROWS_AS(png::zlib_decompress(bad_header), Error);
  CHECK_THROWS_AS(png::zlib_decompress(""), Error);
}

TEST_CASE("png: encoded images read back with an independent reader", "[probe][png]") {
  for (const png::Image& im : {random_image(1, 1, 1), random_image(37, 5, 2), gradient_image(200, 90),
                               png::Image(64, 64, 12, 34, 56)}) {
    INFO(im.width << " x " << im.height);
    const std::string bytes = png::encode(im);
    png_check::Picture p = png_check::read(bytes, "encoded");
    CHECK(p.width == static_cast<uint32_t>(im.width));
    CHECK(p.height == static_cast<uint32_t>(im.height));
#ifdef ORDO_TEST_HAS_ZLIB
    CHECK(p.rgb == im.rgb);
#endif
    png::Image back = png::decode(bytes);
    CHECK(back.width == im.width);
    CHECK(back.rgb == im.rgb);
    // A flipped bit in a chunk is caught by its CRC.
    std::string damaged = bytes;
    damaged[bytes.size() / 2] = static_cast<char>(damaged[bytes.size() / 2] ^ 0x10);
    CHECK_THROWS_AS(png::decode(damaged), Error);
  }
}

TEST_CASE("png: viridis and the heatmap's colours", "[probe][png]") {
  // matplotlib's viridis runs from #440154 to #fde725.
  plot::Rgb lo = plot::viridis(0), hi = plot::viridis(1);
  CHECK((lo.r == 0x44 && lo.g == 0x01 && lo.b == 0x54));
  CHECK((hi.r == 0xfd && hi.g == 0xe7 && hi.b == 0x25));
  plot::Rgb clamped = plot::viridis(2);
  CHECK((clamped.r == hi.r && clamped.g == hi.g && clamped.b == hi.b));
  // Perceptually ordered: luminance rises along the map.
  double prev = -1;
  for (int k = 0; k <= 10; ++k) {
    plot::Rgb c = plot::viridis(k / 10.0);
    const double y = 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b;
    CHECK(y > prev);
    prev = y;
  }
  // A heatmap of a matrix with a minimum and a maximum shows both ends of the map.
  Matrix m(6, 6, 0.5);
  m(0, 0) = 0;
  m(5, 5) = 1;
  plot::HeatmapStyle style;
  style.title = "test";
  style.colorbar_label = "attention";
  png::Image im = plot::heatmap(m, style);
  std::set<uint32_t> colours;
  for (size_t q = 0; q + 2 < im.rgb.size(); q += 3) colours.insert(im.rgb[q] << 16 | im.rgb[q + 1] << 8 | im.rgb[q + 2]);
  CHECK(colours.count(0x440154u) == 1);
  CHECK(colours.count(0xfde725u) == 1);
  CHECK(colours.size() > 50);  // the colour bar's gradient, text, the cells
  png_check::read(png::encode(im), "heatmap");
}
