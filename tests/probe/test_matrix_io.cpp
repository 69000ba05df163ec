// Reading the matrices `ordo metrics` is handed (probe/probe_matrix.h): CSV
// and .npy, the .npy bytes written by hand here from NumPy's format
// description (magic, version, little-endian header length, a dict literal
// padded to a multiple of 64 bytes and ended by '\n', then the data), and
// every bad input ending in an error that names the file, row and column.
// Also the `ordo metrics` command itself.
#include <cstring>
#include <limits>

#include "base/json.h"
#include "probe/indicators.h"
#include "probe/probe_matrix.h"
#include "tests/helpers.h"

using namespace ordo;
using ordo::Matrix;

namespace {

// An .npy file: version `major`.0, the given dict, the raw data bytes.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;  // magic 6 + version 2 + length 2 or 4
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const size_t n = header.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  return out + header + data;
}

// Little-endian bytes of the values (this machine is little-endian, checked below).
std::string f8_bytes(const std::vector<double>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8);
}
std::string f4_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

bool little_endian() {
  const uint32_t one = 1;
  char c;
  std::memcpy(&c, &one, 1);
  return c == 1;
}

// The 2 x 3 matrix [[1, 2, 3], [4, 5, 6.5]] used by the layout tests.
void require_2x3(const Matrix& m) {
  REQUIRE(m.rows == 2);
  REQUIRE(m.cols == 3);
  CHECK(m.data == std::vector<double>{1, 2, 3, 4, 5, 6.5});
}

}  // namespace

TEST_CASE("matrix files: CSV", "[probe][matrix_io]") {
  require_2x3(probe::parse_csv_matrix("1,2,3\n4,5,6.5\n", "m.csv"));
  // Spaces around values, CRLF line ends, no final newline, trailing empty lines.
  require_2x3(probe::parse_csv_matrix(" 1 , 2,3\r\n4,\t5 ,6.5", "m.csv"));
  require_2x3(probe::parse_csv_matrix("1,2,3\n4,5,6.5\n\n\n", "m.csv"));
  // Exponents and a leading '+' are numbers as strtod reads them.
  Matrix e = probe::parse_csv_matrix("1e-3,+2.5E1\n0,0.125\n", "e.csv");
  CHECK(e.data == std::vector<double>{1e-3, 25, 0, 0.125});
  // A round trip through to_csv keeps float32 values (%.9g): the text read
  // back rounds to the same float (the double nearest the 9 digits is not the
  // float itself, so compare as floats).
  Matrix r(3, 3);
  std::vector<double> v = test::random_values(9, 7, 0, 1);
  for (size_t k = 0; k < 9; ++k) r.data[k] = static_cast<float>(v[k]);
  Matrix back = probe::parse_csv_matrix(probe::to_csv(r), "r.csv");
  for (size_t k = 0; k < 9; ++k) CHECK(static_cast<float>(back.data[k]) == static_cast<float>(r.data[k]));
  // Doubles keep 9 significant digits.
  Matrix d = Matrix::from_rows({{1.0 / 3}});
  CHECK(probe::parse_csv_matrix(probe::to_csv(d), "d.csv").data[0] == Approx(1.0 / 3).epsilon(1e-9));
}

TEST_CASE("matrix files: CSV errors name the file, row and column", "[probe][matrix_io]") {
  auto error_of = [](const std::string& text) {
    try {
      probe::parse_csv_matrix(text, "bad.csv");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of("") == "bad.csv: the matrix is empty (no rows)");
  CHECK(error_of("\n\n") == "bad.csv: the matrix is empty (no rows)");
  std::string msg = error_of("1,2\n3,x\n");
  CHECK_THAT(msg, Catch::Contains("bad.csv") && Catch::Contains("row 1") && Catch::Contains("line 2") &&
                      Catch::Contains("column 1") && Catch::Contains("'x' is not a number"));
  CHECK_THAT(error_of("1,2\n3,4abc\n"), Catch::Contains("'4abc' is not a number"));
  CHECK_THAT(error_of("1,,2\n"), Catch::Contains("row 0") && Catch::Contains("column 1") &&
                                     Catch::Contains("empty value"));
  CHECK_THAT(error_of("1,2\n3\n"), Catch::Contains("row 1") && Catch::Contains("has 1 values, row 0 has 2"));
  CHECK_THAT(error_of("1,2\n\n3,4\n"), Catch::Contains("row 1 (line 2) is empty"));
  CHECK_THAT(error_of("1,nan\n1,1\n"), Catch::Contains("column 1") && Catch::Contains("not a finite number"));
  CHECK_THAT(error_of("inf,1\n1,1\n"), Catch::Contains("column 0") && Catch::Contains("not a finite number"));
}

TEST_CASE("matrix files: .npy float32 and float64, C and Fortran order, versions 1-3", "[probe][matrix_io]") {
  REQUIRE(little_endian());
  const std::string c_dict_f8 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
  require_2x3(probe::parse_npy_matrix(npy_bytes(c_dict_f8, f8_bytes({1, 2, 3, 4, 5, 6.5})), "a.npy"));
  // Fortran order: columns one after another.
  const std::string f_dict_f8 = "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }";
  require_2x3(probe::parse_npy_matrix(npy_bytes(f_dict_f8, f8_bytes({1, 4, 2, 5, 3, 6.5})), "f.npy"));
  // float32, both orders.
  const std::string c_dict_f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  require_2x3(probe::parse_npy_matrix(npy_bytes(c_dict_f4, f4_bytes({1, 2, 3, 4, 5, 6.5f})), "a4.npy"));
  const std::string f_dict_f4 = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }";
  require_2x3(probe::parse_npy_matrix(npy_bytes(f_dict_f4, f4_bytes({1, 4, 2, 5, 3, 6.5f})), "f4.npy"));
  // Versions 2.0 and 3.0 have a 4-byte header length; key order and quotes are free.
  const std::string reordered = "{\"shape\": (2,3), \"fortran_order\": False, \"descr\": \"<f8\"}";
  require_2x3(probe::parse_npy_matrix(npy_bytes(reordered, f8_bytes({1, 2, 3, 4, 5, 6.5}), 2), "v2.npy"));
  require_2x3(probe::parse_npy_matrix(npy_bytes(c_dict_f8, f8_bytes({1, 2, 3, 4, 5, 6.5}), 3), "v3.npy"));
  // A float32 value that is not a double's: read as that float exactly.
  Matrix third = probe::parse_npy_matrix(
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), }", f4_bytes({1.0f / 3})), "t.npy");
  CHECK(third.data[0] == static_cast<double>(1.0f / 3));
  // to_npy writes what the hand-written reader above describes.
  Matrix m = Matrix::from_rows({{0.5, 0.25}, {0.125, 1}});
  std::string bytes = probe::to_npy(m);
  CHECK(bytes.size() % 64 == 32);  // 64-byte aligned header, then 4 doubles
  CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  CHECK(probe::parse_npy_matrix(bytes, "rt.npy").data == m.data);
}

TEST_CASE("matrix files: .npy errors", "[probe][matrix_io]") {
  auto error_of = [](const std::string& bytes) {
    try {
      probe::parse_npy_matrix(bytes, "bad.npy");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }";
  const std::string data = f8_bytes({1, 2, 3, 4});
  CHECK_THAT(error_of("PK\x03\x04 not numpy"), Catch::Contains("bad.npy") && Catch::Contains("not an .npy file"));
  CHECK_THAT(error_of(npy_bytes(dict, data.substr(0, 24))), Catch::Contains("holds 24 bytes") &&
                                                              Catch::Contains("needs 32"));
  CHECK_THAT(error_of(npy_bytes(dict, data + "x")), Catch::Contains("needs 32"));
  CHECK_THAT(error_of(npy_bytes("{'descr': '>f8', 'fortran_order': False, 'shape': (2, 2), }", data)),
             Catch::Contains("big-endian"));
  CHECK_THAT(error_of(npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }", data)),
             Catch::Contains("'<i8'") && Catch::Contains("float32"));
  CHECK_THAT(error_of(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }", data)),
             Catch::Contains("1 dimensions") && Catch::Contains("2-D"));
  CHECK_THAT(error_of(npy_bytes("{'descr': '<f8', 'shape': (2, 2), }", data)), Catch::Contains("fortran_order"));
  CHECK_THAT(error_of(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), 'x': 1}", data)),
             Catch::Contains("unknown key 'x'"));
  std::string v9 = npy_bytes(dict, data);
  v9[6] = 9;
  CHECK_THAT(error_of(v9), Catch::Contains("version 9.0"));
  std::string long_header = npy_bytes(dict, data);
  long_header[8] = '\xff', long_header[9] = '\x7f';  // claims 32767 header bytes
  CHECK_THAT(error_of(long_header), Catch::Contains("header claims 32767 bytes"));
  // A NaN names its row and column (C order: element 3 is row 1, column 1).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THAT(error_of(npy_bytes(dict, f8_bytes({1, 2, 3, nan}))),
             Catch::Contains("row 1, column 1 is NaN"));
  // Fortran order: element 1 is row 1, column 0.
  CHECK_THAT(error_of(npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }",
                                f8_bytes({1, std::numeric_limits<double>::infinity(), 3, 4}))),
             Catch::Contains("row 1, column 0 is infinite"));
}

TEST_CASE("matrix files: read_matrix_file and check_attention_matrix", "[probe][matrix_io]") {
  test::TempDir dir("matrix-io");
  // .npy by extension and by magic bytes (under a .csv name).
  const std::string bytes = npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
                                      f8_bytes({1, 2, 3, 4, 5, 6.5}));
  require_2x3(probe::read_matrix_file(dir.write("a.npy", bytes)));
  require_2x3(probe::read_matrix_file(dir.write("disguised.csv", bytes)));
  require_2x3(probe::read_matrix_file(dir.write("a.csv", "1,2,3\n4,5,6.5\n")));
  CHECK_THROWS_WITH(probe::read_matrix_file(dir / "missing.csv"), Catch::Contains("missing.csv"));

  CHECK_NOTHROW(probe::check_attention_matrix(Matrix::from_rows({{0, 1}, {0.5, 0.5}}), "ok.csv"));
  CHECK_THROWS_WITH(probe::check_attention_matrix(Matrix(2, 3, 0.1), "m.csv"),
                    Catch::Contains("m.csv") && Catch::Contains("2 x 3") && Catch::Contains("square"));
  CHECK_THROWS_WITH(probe::check_attention_matrix(Matrix(0, 0), "m.csv"), Catch::Contains("m.csv: the matrix is empty"));
  CHECK_THROWS_WITH(probe::check_attention_matrix(Matrix::from_rows({{0.5, 0.5}, {1.5, -0.5}}), "m.csv"),
                    Catch::Contains("m.csv: row 1, column 1 is -0.5") && Catch::Contains("non-negative"));
}

// ---- ordo metrics ---------------------------------------------------------------------------

TEST_CASE("ordo metrics: the keys, the values, inf", "[probe][metrics_cli]") {
  test::TempDir dir("metrics");
  // The 3 x 3 matrix of test_indicators.cpp, worked by hand there.
  const std::string file = dir.write("a.csv", "0.1,0.2,0.7\n0.3,0.3,0.4\n0.5,0.3,0.2\n");
  test::CommandResult r = test::run_ordo("metrics --attention " + file);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json::Value j = json::parse(r.output);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"translation_invariance", "translation_invariance_no_special",
                                         "monotonicity", "monotonicity_first_k", "symmetry_sd",
                                         "direction_balance", "locality", "symmetry"});
  CHECK(j["translation_invariance"].as_number() == Approx(2.0 / 13).epsilon(1e-12));
  CHECK(j["monotonicity"].as_number() == Approx(0.8).epsilon(1e-12));
  CHECK(j["symmetry_sd"].as_number() == Approx(0.4 / 3).epsilon(1e-12));
  CHECK(j["direction_balance"].as_number() == Approx(11.0 / 13).epsilon(1e-12));
  CHECK(j["locality"].as_number() == Approx(0.5).epsilon(1e-12));
  // --first-k 1 and --offset-range 1 reach the indicators.
  r = test::run_ordo("metrics --attention " + file + " --first-k 1 --offset-range 1");
  REQUIRE(r.exit_code == 0);
  j = json::parse(r.output);
  CHECK(j["monotonicity_first_k"].as_number() == Approx(0.75).epsilon(1e-12));
  CHECK(j["direction_balance"].as_number() == Approx(1.0).epsilon(1e-12));

  // A causal matrix, as .npy: DB is printed as the string "inf".
  const std::string npy = dir.write(
      "causal.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
                              f4_bytes({1, 0, 0.5f, 0.5f})));
  r = test::run_ordo("metrics --attention " + npy);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("\"direction_balance\":\"inf\""));
  CHECK(json::parse(r.output)["direction_balance"].as_string() == "inf");
}

TEST_CASE("ordo metrics: bad input exits non-zero with a clear message", "[probe][metrics_cli]") {
  test::TempDir dir("metrics-bad");
  struct Case {
    std::string args, expected;
  };
  const std::string neg = dir.write("neg.csv", "0.5,0.5\n1.2,-0.2\n");
  const std::string rect = dir.write("rect.csv", "0.5,0.5,0\n0.5,0.5,0\n");
  const std::string word = dir.write("word.csv", "0.5,0.5\n0.5,half\n");
  const std::string empty = dir.write("empty.csv", "");
  const Case cases[] = {
      {"--attention " + neg, "neg.csv: row 1, column 1 is -0.2"},
      {"--attention " + rect, "rect.csv: the matrix is 2 x 3"},
      {"--attention " + word, "word.csv: row 1 (line 2), column 1: 'half' is not a number"},
      {"--attention " + empty, "empty.csv: the matrix is empty"},
      {"--attention " + dir / "nothing.csv", "nothing.csv"},
      {"", "attention"},
      {"--attention " + neg + " --first-k 0", "first-k"},
      {"--attention " + neg + " --offset-range x", "offset-range"},
      {"--attention " + neg + " --bogus 1", "bogus"},
      {"--attention " + neg + " extra", "unexpected argument 'extra'"},
  };
  for (const Case& c : cases) {
    test::CommandResult r = test::run_ordo("metrics " + c.args);
    INFO("ordo metrics " << c.args << "\n" << r.output);
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.output, Catch::Contains(c.expected));
  }
}
