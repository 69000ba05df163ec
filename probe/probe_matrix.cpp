#include "probe/probe_matrix.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/file_io.h"

namespace ordo::probe {

Matrix without_special(const Matrix& a) {
  if (a.rows < 3 || a.cols < 3) return Matrix(0, 0);
  Matrix m(a.rows - 2, a.cols - 2);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) m(i, j) = a(i + 1, j + 1);
  return m;
}

Matrix transpose(const Matrix& a) {
  Matrix t(a.cols, a.rows);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) t(j, i) = a(i, j);
  return t;
}

Matrix matmul(const Matrix& a, const Matrix& b) {
  ORDO_CHECK(a.cols == b.rows, "matmul: ", a.rows, "x", a.cols, " times ", b.rows, "x", b.cols);
  Matrix c(a.rows, b.cols);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t k = 0; k < a.cols; ++k) {
      const double x = a(i, k);
      if (x == 0) continue;
      for (int64_t j = 0; j < b.cols; ++j) c(i, j) += x * b(k, j);
    }
  return c;
}

Matrix matmul_nt(const Matrix& a, const Matrix& b) {
  ORDO_CHECK(a.cols == b.cols, "matmul_nt: ", a.rows, "x", a.cols, " times (", b.rows, "x", b.cols, ")^T");
  Matrix c(a.rows, b.rows);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < b.rows; ++j) {
      double s = 0;
      for (int64_t k = 0; k < a.cols; ++k) s += a(i, k) * b(j, k);
      c(i, j) = s;
    }
  return c;
}

// ---- CSV ------------------------------------------------------------------------------

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

Matrix parse_csv_matrix(const std::string& text, const std::string& origin) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
    start = end + 1;
  }
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();  // trailing empty lines
  ORDO_CHECK(!lines.empty(), origin, ": the matrix is empty (no rows)");

  Matrix m;
  m.rows = static_cast<int64_t>(lines.size());
  for (int64_t r = 0; r < m.rows; ++r) {
    const std::string& line = lines[static_cast<size_t>(r)];
    ORDO_CHECK(!trim(line).empty(), origin, ": row ", r, " (line ", r + 1, ") is empty");
    std::vector<double> values;
    size_t pos = 0;
    for (int64_t c = 0;; ++c) {
      size_t comma = line.find(',', pos);
      std::string field = trim(line.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
      ORDO_CHECK(!field.empty(), origin, ": row ", r, " (line ", r + 1, "), column ", c, ": empty value");
      errno = 0;
      char* end = nullptr;
      double v = std::strtod(field.c_str(), &end);
      ORDO_CHECK(end && *end == '\0', origin, ": row ", r, " (line ", r + 1, "), column ", c, ": '", field,
                 "' is not a number");
      ORDO_CHECK(std::isfinite(v), origin, ": row ", r, " (line ", r + 1, "), column ", c, ": '", field,
                 "' is not a finite number (NaN and infinity are refused)");
      values.push_back(v);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    if (r == 0) m.cols = static_cast<int64_t>(values.size());
    ORDO_CHECK(static_cast<int64_t>(values.size()) == m.cols, origin, ": row ", r, " (line ", r + 1, ") has ",
               values.size(), " values, row 0 has ", m.cols);
    m.data.insert(m.data.end(), values.begin(), values.end());
  }
  return m;
}

std::string to_csv(const Matrix& a) {
  std::string out;
  char buf[40];
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < a.cols; ++j) {
      std::snprintf(buf, sizeof buf, "%s%.9g", j ? "," : "", a(i, j));
      out += buf;
    }
    out += '\n';
  }
  return out;
}

// ---- .npy -------------------------------------------------------------------------------
//
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html:
//   "\x93NUMPY" major minor  header_len (uint16 LE for 1.0, uint32 LE for 2.0/3.0)
//   header: a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), }
//           padded with spaces and ended by '\n'
//   data:   rows * cols values of descr, in C (or Fortran) order

namespace {

const char kNpyMagic[] = "\x93NUMPY";

// The dict literal of an .npy header, read strictly.
class NpyHeader {
 public:
  NpyHeader(const std::string& text, const std::string& origin) : s_(text), origin_(origin) {}

  void parse() {
    skip();
    expect('{');
    bool have_descr = false, have_order = false, have_shape = false;
    for (;;) {
      skip();
      if (peek() == '}') break;
      std::string key = string_literal();
      skip();
      expect(':');
      skip();
      if (key == "descr") {
        ORDO_CHECK(!have_descr, origin_, ": .npy header: 'descr' appears twice");
        descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        ORDO_CHECK(!have_order, origin_, ": .npy header: 'fortran_order' appears twice");
        fortran_order = boolean();
        have_order = true;
      } else if (key == "shape") {
        ORDO_CHECK(!have_shape, origin_, ": .npy header: 'shape' appears twice");
        shape = tuple();
        have_shape = true;
      } else {
        fail("unknown key '" + key + "' (an .npy header holds descr, fortran_order and shape)");
      }
      skip();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip();
      ORDO_CHECK(peek() == '}', origin_, ": .npy header: expected ',' or '}' at character ", i_);
    }
    ++i_;
    skip();
    ORDO_CHECK(i_ == s_.size(), origin_, ": .npy header: text after the closing '}'");
    ORDO_CHECK(have_descr && have_order && have_shape, origin_,
               ": .npy header: needs 'descr', 'fortran_order' and 'shape' (missing ",
               !have_descr ? "descr" : !have_order ? "fortran_order" : "shape", ")");
  }

  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error(origin_ + ": .npy header: " + what); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "' at character " + std::to_string(i_));
    ++i_;
  }
  std::string string_literal() {
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string at character " + std::to_string(i_));
    size_t end = s_.find(q, i_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) return i_ += 4, true;
    if (s_.compare(i_, 5, "False") == 0) return i_ += 5, false;
    fail("fortran_order must be True or False");
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> dims;
    for (;;) {
      skip();
      if (peek() == ')') break;
      size_t begin = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == begin || i_ - begin > 15) fail("shape entries must be non-negative integers");
      dims.push_back(std::stoll(s_.substr(begin, i_ - begin)));
      skip();
      if (peek() == ',') ++i_;
      else if (peek() != ')') fail("expected ',' or ')' in the shape");
    }
    ++i_;
    return dims;
  }

  const std::string& s_;
  const std::string& origin_;
  size_t i_ = 0;
};

uint32_t read_le(const std::string& b, size_t at, int bytes) {
  uint32_t v = 0;
  for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | static_cast<uint8_t>(b[at + static_cast<size_t>(k)]);
  return v;
}

}  // namespace

Matrix parse_npy_matrix(const std::string& bytes, const std::string& origin) {
  ORDO_CHECK(bytes.size() >= 10 && bytes.compare(0, 6, kNpyMagic, 6) == 0, origin,
             ": not an .npy file (it does not start with \\x93NUMPY)");
  const int major = static_cast<uint8_t>(bytes[6]), minor = static_cast<uint8_t>(bytes[7]);
  ORDO_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, origin, ": .npy version ", major, ".", minor,
             " is not one ordo reads (1.0, 2.0, 3.0)");
  const size_t len_bytes = major == 1 ? 2 : 4;
  ORDO_CHECK(bytes.size() >= 8 + len_bytes, origin, ": .npy file ends inside its header length");
  const size_t header_len = read_le(bytes, 8, static_cast<int>(len_bytes));
  const size_t data_start = 8 + len_bytes + header_len;
  ORDO_CHECK(data_start <= bytes.size(), origin, ": .npy header claims ", header_len, " bytes, the file has only ",
             bytes.size() - 8 - len_bytes, " after the length");
  std::string header = bytes.substr(8 + len_bytes, header_len);
  ORDO_CHECK(!header.empty() && header.back() == '\n', origin, ": .npy header does not end with a newline");
  NpyHeader h(header, origin);
  h.parse();

  size_t item = 0;
  if (h.descr == "<f4" || h.descr == "=f4") item = 4;
  else if (h.descr == "<f8" || h.descr == "=f8") item = 8;
  else if (h.descr == ">f4" || h.descr == ">f8")
    throw Error(origin + ": .npy dtype '" + h.descr + "' is big-endian; save it little-endian ('<f4' or '<f8')");
  else
    throw Error(origin + ": .npy dtype '" + h.descr + "': expected float32 ('<f4') or float64 ('<f8')");
  ORDO_CHECK(h.shape.size() == 2, origin, ": .npy array has ", h.shape.size(),
             " dimensions; an attention matrix is 2-D (L x L)");
  const int64_t rows = h.shape[0], cols = h.shape[1];
  ORDO_CHECK(rows <= (int64_t{1} << 24) && cols <= (int64_t{1} << 24), origin, ": .npy shape (", rows, ", ", cols,
             ") is too large");
  const size_t need = static_cast<size_t>(rows * cols) * item;
  ORDO_CHECK(bytes.size() - data_start == need, origin, ": .npy data holds ", bytes.size() - data_start,
             " bytes; shape (", rows, ", ", cols, ") of ", h.descr, " needs ", need);
  Matrix m(rows, cols);
  const char* p = bytes.data() + data_start;
  for (int64_t k = 0; k < rows * cols; ++k) {
    double v;
    if (item == 4) {
      float f;
      std::memcpy(&f, p + k * 4, 4);
      v = f;
    } else {
      std::memcpy(&v, p + k * 8, 8);
    }
    // C order: k = i * cols + j; Fortran order: k = j * rows + i.
    const int64_t i = h.fortran_order ? k % rows : k / cols, j = h.fortran_order ? k / rows : k % cols;
    ORDO_CHECK(std::isfinite(v), origin, ": row ", i, ", column ", j, " is ", std::isnan(v) ? "NaN" : "infinite",
               " (NaN and infinity are refused)");
    m(i, j) = v;
  }
  return m;
}

std::string to_npy(const Matrix& a) {
  char dict[128];
  std::snprintf(dict, sizeof dict, "{'descr': '<f8', 'fortran_order': False, 'shape': (%lld, %lld), }",
                static_cast<long long>(a.rows), static_cast<long long>(a.cols));
  std::string header = dict;
  // Pad so that magic + version + length + header is a multiple of 64, ending in '\n'.
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out(kNpyMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(a.data.data()), a.data.size() * sizeof(double));
  return out;
}

Matrix read_matrix_file(const std::string& path) {
  std::string bytes = read_file(path);
  const bool npy_name = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
  if (npy_name || bytes.compare(0, 6, kNpyMagic, 6) == 0) return parse_npy_matrix(bytes, path);
  return parse_csv_matrix(bytes, path);
}

void check_attention_matrix(const Matrix& a, const std::string& origin) {
  ORDO_CHECK(!a.empty(), origin, ": the matrix is empty");
  ORDO_CHECK(a.square(), origin, ": the matrix is ", a.rows, " x ", a.cols,
             "; an attention matrix is square (L x L)");
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) {
      ORDO_CHECK(std::isfinite(a(i, j)), origin, ": row ", i, ", column ", j, " is not a finite number");
      ORDO_CHECK(a(i, j) >= 0, origin, ": row ", i, ", column ", j, " is ", a(i, j),
                 "; attention values are non-negative (the indicators are defined for softmax outputs)");
    }
}

}  // namespace ordo::probe
