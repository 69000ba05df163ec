// safetensors reader/writer and the atomic file I/O under it. Expected bytes
// and values are worked out by hand from the format description and IEEE 754;
// tests/data/golden.safetensors comes from the reference implementation
// (tests/data/make_safetensors_golden.py).
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <csignal>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "tensor/safetensors.h"
#include "tensor/tensor.h"
#include "tests/helpers.h"

namespace st = ordo::safetensors;
namespace fs = std::filesystem;
using ordo::DType;
using ordo::Shape;
using ordo::Tensor;

namespace {

using ordo::test::TempDir;

std::string le64(uint64_t n) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
  return out;
}

// A file made of the given header text (not padded) and data bytes.
std::string file_with(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

std::string load_error(const std::string& bytes) {
  try {
    st::load_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  } catch (const ordo::Error& e) {
    return e.what();
  }
  return "";
}

std::vector<std::pair<std::string, Tensor>> load_string(const std::string& bytes) {
  return st::load_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

const std::string kPrefix = "safetensors: (in memory): ";

}  // namespace

TEST_CASE("safetensors: the bytes of a tiny file, worked out by hand", "[safetensors]") {
  // The header, compact: 54 characters (counted by hand), padded with two
  // spaces to 56, the next multiple of 8.
  const std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  REQUIRE(header.size() == 54);
  std::string expected(std::string("\x38\0\0\0\0\0\0\0", 8));  // 56, little-endian u64
  expected += header + "  ";
  // 1.0f = 0x3F800000 and -2.0f = 0xC0000000, least significant byte first.
  expected += std::string("\x00\x00\x80\x3F\x00\x00\x00\xC0", 8);
  REQUIRE(expected.size() == 72);

  Tensor x = Tensor::from_vector<float>({1.0f, -2.0f});
  CHECK(st::serialize({{"x", x}}) == expected);

  auto loaded = load_string(expected);
  REQUIRE(loaded.size() == 1);
  CHECK(loaded[0].first == "x");
  CHECK(loaded[0].second.dtype() == DType::f32);
  CHECK(loaded[0].second.shape() == Shape{2});
  CHECK(loaded[0].second.to_vector<float>() == std::vector<float>{1.0f, -2.0f});

  st::Header h = st::parse_header(reinterpret_cast<const uint8_t*>(expected.data()), expected.size());
  CHECK(h.data_start == 64);
  REQUIRE(h.entries.size() == 1);
  CHECK(h.entries[0].begin == 0);
  CHECK(h.entries[0].end == 8);
}

TEST_CASE("safetensors: metadata comes first in the header, in the order given", "[safetensors]") {
  // 54 + 25 characters for "__metadata__":{"k":"v"}, = 79, padded to 80.
  std::string bytes = st::serialize({{"x", Tensor::from_vector<float>({1.0f, -2.0f})}},
                                    {{"k", "v"}});
  CHECK(bytes.substr(0, 8) == le64(80));
  CHECK(bytes.substr(8, 80) ==
        R"({"__metadata__":{"k":"v"},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} )");

  std::vector<std::pair<std::string, std::string>> meta = {{"zeta", "1"}, {"alpha", "two"}};
  std::string with_meta = st::serialize({}, meta);
  st::Header h = st::parse_header(reinterpret_cast<const uint8_t*>(with_meta.data()), with_meta.size());
  CHECK(h.entries.empty());
  CHECK(h.metadata == meta);
}

TEST_CASE("safetensors: reads the reference implementation's file", "[safetensors]") {
  auto tensors = st::load(std::string(ORDO_SOURCE_DIR) + "/tests/data/golden.safetensors");
  // The reference writer orders tensors by alignment, then name; ordo returns
  // them in the order their bytes lie in the file.
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors) names.push_back(name);
  CHECK(names == std::vector<std::string>{"ids", "bias", "empty", "scalar", "weight", "counts",
                                          "half", "mask"});
  auto get = [&](const std::string& name) {
    for (const auto& [n, t] : tensors)
      if (n == name) return t;
    FAIL("no tensor " << name);
    return Tensor();
  };
  CHECK(get("weight").shape() == Shape{2, 3});
  CHECK(get("weight").to_vector<float>() == std::vector<float>{1.0f, -2.0f, 0.5f, 0.25f, 3.0f, -0.125f});
  CHECK(get("bias").to_vector<double>() == std::vector<double>{0.1, -1e-300, 2.5});
  CHECK(get("half").dtype() == DType::f16);
  CHECK(get("half").to(DType::f32).to_vector<float>() == std::vector<float>{1.5f, -65504.0f});
  CHECK(get("ids").to_vector<int64_t>() ==
        std::vector<int64_t>{0, -1, INT64_C(1) << 40, -(INT64_C(1) << 62)});
  CHECK(get("counts").to_vector<int32_t>() == std::vector<int32_t>{7, -8, 2147483647});
  CHECK(get("mask").shape() == Shape{2, 2});
  CHECK(get("mask").to_vector<uint8_t>() == std::vector<uint8_t>{0, 1, 255, 7});
  CHECK(get("empty").shape() == Shape{0, 3});
  CHECK(get("scalar").shape() == Shape{});
  CHECK(get("scalar").item() == 42.0);

  std::string bytes = ordo::read_file(std::string(ORDO_SOURCE_DIR) + "/tests/data/golden.safetensors");
  st::Header h = st::parse_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  CHECK(h.metadata == std::vector<std::pair<std::string, std::string>>{
                          {"format", "np"}, {"note", "golden file for ordo"}});
}

TEST_CASE("safetensors: every dtype round-trips through a file", "[safetensors]") {
  TempDir dir;
  // Values chosen to be exact in each type: bf16 keeps 8 significant bits,
  // f16 keeps 11 and tops out at 65504.
  std::vector<float> bf16_values = {1.0f, -2.5f, 0.15625f, 65536.0f, -0.0f};
  std::vector<float> f16_values = {0.5f, -1.75f, 1024.0f, 65504.0f, 6.103515625e-05f};
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"f32", Tensor::from_vector<float>({1.5f, -3.25f, 1e-30f, 3.4e38f}, {2, 2})},
      {"f64", Tensor::from_vector<double>({0.1, -1e-300, 5e-324}, {3})},
      {"bf16", Tensor::from_vector<float>(bf16_values).to(DType::bf16)},
      {"f16", Tensor::from_vector<float>(f16_values).to(DType::f16)},
      {"i64", Tensor::from_vector<int64_t>({INT64_MIN, -1, 0, INT64_MAX}, {1, 4})},
      {"i32", Tensor::from_vector<int32_t>({INT32_MIN, 5, INT32_MAX}, {3, 1})},
      {"u8", Tensor::from_vector<uint8_t>({0, 128, 255}, {3})},
      {"empty", Tensor::empty({2, 0, 5}, DType::f64)},
  };
  std::vector<std::pair<std::string, std::string>> meta = {{"step", "100"}, {"pe", "rope"}};
  const std::string path = dir.file("all.safetensors");
  st::save(path, tensors, meta);

  auto loaded = st::load(path);
  REQUIRE(loaded.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    INFO(tensors[i].first);
    CHECK(loaded[i].first == tensors[i].first);  // written, so read, in the order given
    CHECK(loaded[i].second.dtype() == tensors[i].second.dtype());
    CHECK(loaded[i].second.shape() == tensors[i].second.shape());
  }
  CHECK(loaded[0].second.to_vector<float>() == std::vector<float>{1.5f, -3.25f, 1e-30f, 3.4e38f});
  CHECK(loaded[1].second.to_vector<double>() == std::vector<double>{0.1, -1e-300, 5e-324});
  CHECK(loaded[2].second.to(DType::f32).to_vector<float>() == bf16_values);
  CHECK(loaded[3].second.to(DType::f32).to_vector<float>() == f16_values);
  CHECK(loaded[4].second.to_vector<int64_t>() == std::vector<int64_t>{INT64_MIN, -1, 0, INT64_MAX});
  CHECK(loaded[5].second.to_vector<int32_t>() == std::vector<int32_t>{INT32_MIN, 5, INT32_MAX});
  CHECK(loaded[6].second.to_vector<uint8_t>() == std::vector<uint8_t>{0, 128, 255});
  CHECK(loaded[7].second.numel() == 0);

  std::string bytes = ordo::read_file(path);
  CHECK(st::parse_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()).metadata == meta);
  CHECK(dir.names() == std::vector<std::string>{"all.safetensors"});  // no temporary left behind
}

TEST_CASE("safetensors: half-precision bytes, worked out by hand", "[safetensors]") {
  // bf16 is the top half of an f32: 1.0f = 0x3F800000 -> 0x3F80; -2.5f =
  // 0xC0200000 -> 0xC020. f16: 1.0 = 0x3C00; -2.0 = 0xC000. Little-endian.
  std::string bf16 = st::serialize({{"b", Tensor::from_vector<float>({1.0f, -2.5f}).to(DType::bf16)}});
  CHECK(bf16.substr(bf16.size() - 4) == std::string("\x80\x3F\x20\xC0", 4));
  std::string f16 = st::serialize({{"h", Tensor::from_vector<float>({1.0f, -2.0f}).to(DType::f16)}});
  CHECK(f16.substr(f16.size() - 4) == std::string("\x00\x3C\x00\xC0", 4));

  auto loaded = load_string(file_with(R"({"b":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})",
                                      std::string("\x80\x3F\x20\xC0", 4)));
  CHECK(loaded[0].second.dtype() == DType::bf16);
  CHECK(loaded[0].second.to(DType::f32).to_vector<float>() == std::vector<float>{1.0f, -2.5f});
}

TEST_CASE("safetensors: BOOL tensors (older GPT-2 files' causal masks) read as U8", "[safetensors]") {
  auto loaded = load_string(file_with(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                                      std::string("\x01\x00\x01", 3)));
  CHECK(loaded[0].second.dtype() == DType::u8);
  CHECK(loaded[0].second.to_vector<uint8_t>() == std::vector<uint8_t>{1, 0, 1});
}

TEST_CASE("safetensors: non-contiguous tensors are written densely", "[safetensors]") {
  Tensor m = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor transposed = m.transpose(0, 1);                  // [[1,4],[2,5],[3,6]]
  Tensor strided = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6}).slice(0, 1, 7, 2);  // 1 3 5
  Tensor broadcast = Tensor::from_vector<double>({7.0, 8.0}, {1, 2}).expand({3, 2});
  REQUIRE_FALSE(transposed.is_contiguous());
  REQUIRE_FALSE(strided.is_contiguous());

  auto loaded = load_string(st::serialize({{"t", transposed}, {"s", strided}, {"b", broadcast}}));
  CHECK(loaded[0].second.shape() == Shape{3, 2});
  CHECK(loaded[0].second.to_vector<float>() == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(loaded[1].second.to_vector<int64_t>() == std::vector<int64_t>{1, 3, 5});
  CHECK(loaded[2].second.shape() == Shape{3, 2});
  CHECK(loaded[2].second.to_vector<double>() == std::vector<double>{7, 8, 7, 8, 7, 8});
}

TEST_CASE("safetensors: the writer refuses bad names", "[safetensors]") {
  Tensor t = Tensor::from_vector<float>({1.0f});
  CHECK_THROWS_WITH(st::serialize({{"", t}}), "safetensors: a tensor name must not be empty");
  CHECK_THROWS_WITH(st::serialize({{"__metadata__", t}}),
                    "safetensors: '__metadata__' is reserved and cannot name a tensor");
  CHECK_THROWS_WITH(st::serialize({{"a", t}, {"b", t}, {"a", t}}),
                    "safetensors: duplicate tensor name 'a'");
  CHECK_THROWS_WITH(st::serialize({{"a", t}}, {{"k", "1"}, {"k", "2"}}),
                    "safetensors: duplicate metadata key 'k'");
  CHECK_THROWS_WITH(st::serialize({{"a", Tensor()}}), "safetensors: tensor 'a' is undefined");
}

TEST_CASE("safetensors: zero-size tensors and empty files", "[safetensors]") {
  // Zero-byte tensors may share an offset; the data buffer may be empty.
  auto loaded = load_string(file_with(
      R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"I64","shape":[3,0],"data_offsets":[0,0]}})",
      ""));
  REQUIRE(loaded.size() == 2);
  CHECK(loaded[1].second.shape() == Shape{3, 0});
  CHECK(load_string(file_with("{}", "")).empty());
  CHECK(load_string(st::serialize({})).empty());
  CHECK(st::serialize({}) == le64(8) + "{}      ");
}

TEST_CASE("safetensors: every kind of lie is refused with a clear message", "[safetensors]") {
  const std::string f32x2 = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string eight(8, '\0');

  SECTION("the file is too short or the header length is wrong") {
    CHECK(load_error("") == kPrefix + "the file is 0 bytes, too short for the 8-byte header length");
    CHECK(load_error(std::string(5, '\0')) ==
          kPrefix + "the file is 5 bytes, too short for the 8-byte header length");
    CHECK(load_error(le64(1000) + "{}") ==
          kPrefix + "the header length is 1000 bytes, but the file has only 2 bytes after the "
                    "length (truncated file?)");
    CHECK(load_error(le64(UINT64_MAX) + "{}") ==
          kPrefix + "the header length is 18446744073709551615 bytes, over the limit of "
                    "104857600 (not a safetensors file?)");
    CHECK(load_error(le64(0)) ==
          kPrefix + "header: json: line 1, column 1: expected a JSON value, found end of input");
  }

  SECTION("the header is not a JSON object of well-formed entries") {
    CHECK(load_error(file_with("{\"a\":", "")) ==
          kPrefix + "header: json: line 1, column 6: unexpected end of input: expected a value");
    CHECK(load_error(file_with("[1]", "")) == kPrefix + "the header must be a JSON object, got [1]");
    CHECK(load_error(file_with("{\"\":" + f32x2 + "}", eight)) ==
          kPrefix + "a tensor name must not be empty");
    CHECK(load_error(file_with(R"({"a":1})", "")) ==
          kPrefix + "tensor 'a': expected an object with dtype, shape and data_offsets, got 1");
    CHECK(load_error(file_with(R"({"a":{"dtype":"F32","shape":[2]}})", eight)) ==
          kPrefix + "tensor 'a': missing field 'data_offsets'");
    CHECK(load_error(file_with(
              R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"order":"C"}})", eight)) ==
          kPrefix + "tensor 'a': unexpected field 'order' (a tensor has exactly dtype, shape and "
                    "data_offsets)");
    CHECK(load_error(file_with("{\"a\":" + f32x2 + ",\"a\":" + f32x2 + "}", eight)) ==
          kPrefix + "header: json: line 1, column 55: duplicate key 'a'");
  }

  SECTION("dtypes") {
    CHECK(load_error(file_with(R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})",
                               std::string(2, '\0'))) ==
          kPrefix + "tensor 'a': unknown dtype 'F8_E4M3' (ordo reads F32, F64, BF16, F16, I64, I32, U8 and BOOL)");
    CHECK(load_error(file_with(R"({"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", eight)) ==
          kPrefix + "tensor 'a': dtype must be a string, got 4");
  }

  SECTION("shapes") {
    CHECK(load_error(file_with(R"({"a":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,8]}})",
                               eight)) ==
          kPrefix + "tensor 'a': shape [2,-1] dim 1 must be a non-negative integer, got -1");
    CHECK(load_error(file_with(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}})",
                               eight)) ==
          kPrefix + "tensor 'a': shape [1.5] dim 0 must be a non-negative integer, got 1.5");
    CHECK(load_error(file_with(R"({"a":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})",
                               eight)) ==
          kPrefix + "tensor 'a': shape [\"2\"] dim 0 must be a non-negative integer, got \"2\"");
    CHECK(load_error(file_with(R"({"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", eight)) ==
          kPrefix + "tensor 'a': shape must be an array, got 2");
    // 2^32 * 2^32 = 2^64 elements: the product overflows int64.
    CHECK(load_error(file_with(
              R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", "")) ==
          kPrefix + "tensor 'a': shape [4294967296,4294967296] has more elements than fit int64");
    // No elements, but strides for this shape would overflow all the same.
    CHECK(load_error(file_with(
              R"({"a":{"dtype":"U8","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}})", "")) ==
          kPrefix + "tensor 'a': shape [0,4294967296,4294967296] has more elements than fit int64");
    // 2^62 elements fit int64, but 2^62 * 4 bytes do not fit 64 bits.
    CHECK(load_error(file_with(
              R"({"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", "")) ==
          kPrefix + "tensor 'a': shape [4611686018427387904] has more bytes than fit 64 bits");
  }

  SECTION("offsets that do not match the dtype and shape") {
    CHECK(load_error(file_with(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight)) ==
          kPrefix + "tensor 'a': data_offsets [0, 8] hold 8 bytes, but F32 with shape [3] needs 12");
    CHECK(load_error(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", eight)) ==
          kPrefix + "tensor 'a': data_offsets [8, 0] end before they begin");
    CHECK(load_error(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,16]}})", eight)) ==
          kPrefix + "tensor 'a': data_offsets must be an array [begin, end], got [0,8,16]");
    CHECK(load_error(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", eight)) ==
          kPrefix + "tensor 'a': data_offsets begin must be a non-negative integer, got -8");
  }

  SECTION("offsets that do not tile the data buffer") {
    const std::string a04 = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
    CHECK(load_error(file_with(
              "{" + a04 + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[2,10]}})",
              std::string(10, '\0'))) ==
          kPrefix + "tensor 'b' (data_offsets [2, 10]) overlaps tensor 'a' (data_offsets [0, 4])");
    CHECK(load_error(file_with(
              "{" + a04 + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
              std::string(12, '\0'))) ==
          kPrefix + "bytes [4, 8) of the data buffer belong to no tensor (a gap before tensor 'b')");
    CHECK(load_error(file_with(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight)) ==
          kPrefix + "bytes [0, 4) of the data buffer belong to no tensor (a gap before tensor 'b')");
    // The data is cut short: the file ends inside tensor 'a'.
    CHECK(load_error(file_with("{\"a\":" + f32x2 + "}", std::string(6, '\0'))) ==
          kPrefix + "tensor 'a': data_offsets [0, 8] run past the end of the data buffer, which "
                    "has 6 bytes (truncated file?)");
    // 8 + 54 header bytes + 8 bytes of data = 70 accounted for, 72 in the file.
    CHECK(load_error(file_with("{\"a\":" + f32x2 + "}", std::string(10, '\0'))) ==
          kPrefix + "the file has trailing bytes after the last tensor's data: it is 72 bytes, "
                    "the header accounts for 70");
    CHECK(load_error(file_with("{}", "x")) ==
          kPrefix + "the file has trailing bytes after the last tensor's data: it is 11 bytes, "
                    "the header accounts for 10");
  }

  SECTION("metadata") {
    CHECK(load_error(file_with(R"({"__metadata__":[]})", "")) ==
          kPrefix + "__metadata__ must be an object of strings, got []");
    CHECK(load_error(file_with(R"({"__metadata__":{"step":100}})", "")) ==
          kPrefix + "__metadata__: the value of 'step' must be a string, got 100");
  }
}

TEST_CASE("safetensors: load names the file in its errors", "[safetensors]") {
  TempDir dir;
  const std::string path = dir.file("lie.safetensors");
  ordo::write_file_atomic(path, file_with(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                                          std::string(8, '\0')));
  CHECK_THROWS_WITH(st::load(path), "safetensors: '" + path +
                                        "': tensor 'a': data_offsets [0, 8] hold 8 bytes, but F32 "
                                        "with shape [3] needs 12");
  ordo::write_file_atomic(path, "abc");
  CHECK_THROWS_WITH(st::load(path), "safetensors: '" + path +
                                        "': the file is 3 bytes, too short for the 8-byte header "
                                        "length");
  CHECK_THROWS_WITH(st::load(dir.file("missing.safetensors")),
                    "cannot read '" + dir.file("missing.safetensors") + "': No such file or directory");
}

TEST_CASE("file_io: atomic writes, reads and their errors", "[safetensors][file_io]") {
  TempDir dir;
  const std::string path = dir.file("config.json");
  CHECK_FALSE(ordo::file_exists(path));
  ordo::write_file_atomic(path, "first");
  CHECK(ordo::file_exists(path));
  CHECK(ordo::read_file(path) == "first");
  ordo::write_file_atomic(path, std::string("sec\0nd", 6));  // replaces, binary-safe
  CHECK(ordo::read_file(path) == std::string("sec\0nd", 6));
  ordo::write_file_atomic(path, "");
  CHECK(ordo::read_file(path).empty());
  CHECK(dir.names() == std::vector<std::string>{"config.json"});

  CHECK_FALSE(ordo::file_exists(dir.file("")));  // a directory is not a file
  CHECK_THROWS_WITH(ordo::read_file(dir.file("")), "cannot read '" + dir.file("") +
                                                       "': it is a directory");
  CHECK_THROWS_WITH(ordo::read_file(dir.file("nope")),
                    "cannot read '" + dir.file("nope") + "': No such file or directory");
  const std::string orphan = dir.file("no/such/dir/x.json");
  CHECK_THROWS_WITH(ordo::write_file_atomic(orphan, "x"),
                    "cannot write '" + orphan + "': No such file or directory (creating a temporary "
                    "file in " + dir.file("no/such/dir") + ")");

  // Renaming a file over a directory fails: the temporary file goes, the
  // directory stays.
  fs::create_directory(dir.file("subdir"));
  CHECK_THROWS_WITH(ordo::write_file_atomic(dir.file("subdir"), "x"),
                    Catch::Matchers::StartsWith("cannot write '" + dir.file("subdir") +
                                                "': Is a directory (renaming "));
  CHECK(fs::is_directory(dir.file("subdir")));
  CHECK(dir.names().size() == 2);
}

TEST_CASE("file_io: a write that fails halfway leaves the old file whole", "[safetensors][file_io]") {
  TempDir dir;
  const std::string path = dir.file("checkpoint.safetensors");
  ordo::write_file_atomic(path, "old contents");

  // Cap this process's file size at 1000 bytes, so writing 5000 fails with
  // EFBIG part way through (SIGXFSZ ignored so the write returns the error).
  struct rlimit saved;
  REQUIRE(getrlimit(RLIMIT_FSIZE, &saved) == 0);
  auto saved_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit capped = saved;
  capped.rlim_cur = 1000;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &capped) == 0);
  std::string message;
  try {
    ordo::write_file_atomic(path, std::string(5000, 'n'));
  } catch (const ordo::Error& e) {
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, saved_handler);

  CHECK_THAT(message, Catch::Matchers::StartsWith("cannot write '" + path + "': File too large (writing "));
  CHECK(ordo::read_file(path) == "old contents");
  CHECK(dir.names() == std::vector<std::string>{"checkpoint.safetensors"});
}
