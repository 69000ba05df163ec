// ordo's JSON reader and writer: one header, stb-style.
//
// Configs, safetensors headers, metrics and reports all need JSON, and a bare
// GPU machine has no JSON package, so ordo carries its own. Include this header
// anywhere for the declarations; exactly one .cpp (base/json.cpp) defines
// ORDO_JSON_IMPLEMENTATION before including it to compile the implementation.
//
// What it promises:
//  - strict RFC 8259: no comments, trailing commas, bare words, leading zeros,
//    NaN/Infinity, raw control characters in strings or invalid UTF-8; every
//    error names its line and column (both 1-based; columns count characters);
//  - duplicate keys are an error naming the key, and objects keep insertion
//    order, so a config or report reads back in the order it was written;
//  - integers that fit int64 are kept exactly (as_int is exact past 2^53), other
//    numbers are doubles, and dump writes the shortest text that reads back to
//    the same double;
//  - parsing is iterative: nesting is bounded by ParseLimits::max_depth and
//    never by the C++ stack, and input larger than max_bytes is refused.
#ifndef ORDO_TENSOR_JSON_H
#define ORDO_TENSOR_JSON_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "base/error.h"

namespace ordo::json {

enum class Type { null, boolean, number, string, array, object };
const char* type_name(Type t);  // "null", "boolean", "number", ...

namespace detail {
class Parser;
class Writer;
[[noreturn]] void throw_integer_too_large(unsigned long long n);
}  // namespace detail

class Value {
 public:
  using Member = std::pair<std::string, Value>;

  Value() = default;  // null
  Value(std::nullptr_t) {}
  Value(bool b) : data_(b) {}
  // Every integer type (int, int64_t, size_t, ...) is kept exactly; an unsigned
  // value above INT64_MAX throws rather than silently becoming a double.
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Value(T n) : data_(static_cast<int64_t>(n)) {
    if constexpr (std::is_unsigned_v<T>) {
      if (static_cast<unsigned long long>(n) > static_cast<unsigned long long>(INT64_MAX))
        detail::throw_integer_too_large(n);
    }
  }
  Value(double d) : data_(d) {}
  Value(const char* s) : data_(std::string(s)) {}
  Value(std::string s) : data_(std::move(s)) {}
  Value(std::string_view s) : data_(std::string(s)) {}

  static Value array() { Value v; v.data_ = Array(); return v; }
  static Value object() { Value v; v.data_ = Object(); return v; }

  Type type() const {
    constexpr Type types[] = {Type::null,   Type::boolean, Type::number, Type::number,
                              Type::string, Type::array,   Type::object};
    return types[data_.index()];
  }
  bool is_null() const { return type() == Type::null; }
  bool is_bool() const { return type() == Type::boolean; }
  bool is_number() const { return type() == Type::number; }
  bool is_string() const { return type() == Type::string; }
  bool is_array() const { return type() == Type::array; }
  bool is_object() const { return type() == Type::object; }

  // Typed access; each throws ordo::Error naming the expected and actual type.
  bool as_bool() const { expect(Type::boolean); return std::get<bool>(data_); }
  double as_number() const {
    expect(Type::number);
    return holds_int() ? static_cast<double>(std::get<int64_t>(data_)) : std::get<double>(data_);
  }
  int64_t as_int() const;  // exact: throws unless the number is an integer that fits int64
  const std::string& as_string() const { expect(Type::string); return std::get<std::string>(data_); }
  const std::vector<Value>& as_array() const { expect(Type::array); return std::get<Array>(data_); }
  std::vector<Value>& as_array() { expect(Type::array); return std::get<Array>(data_); }

  // Objects: members in insertion order.
  const std::vector<Member>& items() const { expect(Type::object); return std::get<Object>(data_); }
  bool contains(const std::string& key) const { return find(key) != nullptr; }
  const Value* find(const std::string& key) const;  // nullptr if absent
  Value* find(const std::string& key);
  const Value& operator[](const std::string& key) const;  // throws "missing key 'k'"
  Value& operator[](const std::string& key);  // inserts null if absent; null becomes an object
  bool erase(const std::string& key);          // removes the member; false if absent

  // Arrays: indices are bounds-checked.
  const Value& operator[](size_t i) const;
  Value& operator[](size_t i);
  void push_back(Value v);  // null becomes an array

  size_t size() const;  // array or object length

  // Deep equality. Objects compare as sets of members (order ignored); numbers
  // compare by value, so 1 == 1.0, and -0.0 == 0.0 as for doubles.
  friend bool operator==(const Value& a, const Value& b);
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

 private:
  friend class detail::Parser;
  friend class detail::Writer;
  using Array = std::vector<Value>;
  using Object = std::vector<Member>;

  bool holds_int() const { return std::holds_alternative<int64_t>(data_); }
  void expect(Type t) const {
    if (type() != t) throw_type_error(t);
  }
  [[noreturn]] void throw_type_error(Type expected) const;

  // A number is held as int64_t when the text (or the C++ value) was an
  // integer that fits, else as double. One variant keeps a Value at 40 bytes,
  // which bounds the memory a large hostile document can make parse use.
  std::variant<std::monostate, bool, int64_t, double, std::string, Array, Object> data_;
};

struct ParseLimits {
  size_t max_bytes = size_t{1} << 28;  // 256 MiB
  int max_depth = 512;                 // arrays and objects nested at most this deep
};

// Throws ordo::Error("json: line L, column C: <what>").
Value parse(std::string_view text, const ParseLimits& limits = {});
// A JSON file parsed; every error names the file ("runs/a/trainer_state.json:
// json: line 1, column 9: ...", or the system's reason it cannot be read).
Value parse_file(const std::string& path, const ParseLimits& limits = {});

// indent < 0: compact, one line. indent >= 0: one member per line, nested
// levels indented by `indent` spaces. Throws ordo::Error for NaN or infinity
// (JSON has no such numbers: write them as strings) and for strings that are
// not valid UTF-8.
std::string dump(const Value& v, int indent = -1);

// Where two values first differ, as a dotted path of object keys ("train.lr"):
// a key of either object missing from the other, or the first unequal leaf
// (arrays compare whole). "" when equal; "(the whole value)" when they differ
// at the top.
std::string first_difference(const Value& a, const Value& b);

}  // namespace ordo::json

#endif  // ORDO_TENSOR_JSON_H

// ============================================================================
// Implementation: compiled once, in the .cpp that defines ORDO_JSON_IMPLEMENTATION.
// ============================================================================
#if defined(ORDO_JSON_IMPLEMENTATION) && !defined(ORDO_JSON_IMPLEMENTED)
#define ORDO_JSON_IMPLEMENTED

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <system_error>

namespace ordo::json {

const char* type_name(Type t) {
  switch (t) {
    case Type::null: return "null";
    case Type::boolean: return "boolean";
    case Type::number: return "number";
    case Type::string: return "string";
    case Type::array: return "array";
    case Type::object: return "object";
  }
  return "?";
}

namespace detail {

void throw_integer_too_large(unsigned long long n) {
  throw Error("json: the integer " + std::to_string(n) + " does not fit int64");
}

// Length of the well-formed UTF-8 sequence starting at p (1 to 4), or 0 when the
// bytes there are not one: overlong forms, UTF-16 surrogates (U+D800..DFFF),
// code points past U+10FFFF, stray continuation bytes and truncated sequences
// are all rejected, following the table of well-formed byte sequences in the
// Unicode standard (chapter 3, table 3-7).
inline size_t utf8_sequence_length(const unsigned char* p, size_t available) {
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < available && p[i] >= lo && p[i] <= hi;
  };
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;  // not a surrogate
  if (c >= 0xE1 && c <= 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;  // <= U+10FFFF
  return 0;
}

inline void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A short, printable description of the byte at s[pos] for error messages.
inline std::string describe_at(std::string_view s, size_t pos) {
  if (pos >= s.size()) return "end of input";
  unsigned char c = static_cast<unsigned char>(s[pos]);
  if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
  return buf;
}

// At most `limit` bytes of text, for quoting user input in messages.
inline std::string excerpt(std::string_view text, size_t limit = 40) {
  if (text.size() <= limit) return std::string(text);
  return std::string(text.substr(0, limit)) + "...";
}

// The parser keeps its own stack of open arrays and objects instead of
// recursing, so hostile nesting ends in an error at max_depth, not in a stack
// overflow.
class Parser {
 public:
  Parser(std::string_view text, const ParseLimits& limits) : s_(text), limits_(limits) {}

  Value run() {
    if (s_.size() > limits_.max_bytes)
      throw Error("json: the input is " + std::to_string(s_.size()) +
                  " bytes, more than the limit of " + std::to_string(limits_.max_bytes));
    // RFC 8259 lets a reader ignore a UTF-8 byte order mark; editors add one.
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;

    std::vector<Frame> stack;
    for (;;) {
      // Read one value; an array or object with content opens a frame instead.
      skip_whitespace();
      Value v;
      char c = pos_ < s_.size() ? s_[pos_] : '\0';
      if (pos_ >= s_.size()) {
        fail(pos_, stack.empty() ? "expected a JSON value, found end of input"
                                 : "unexpected end of input: expected a value");
      } else if (c == '[' || c == '{') {
        if (static_cast<int>(stack.size()) >= limits_.max_depth)
          fail(pos_, "arrays and objects nested deeper than the limit of " +
                         std::to_string(limits_.max_depth));
        ++pos_;
        skip_whitespace();
        char close = c == '[' ? ']' : '}';
        if (pos_ < s_.size() && s_[pos_] == close) {
          ++pos_;
          v = c == '[' ? Value::array() : Value::object();
        } else {
          stack.emplace_back();
          stack.back().container = c == '[' ? Value::array() : Value::object();
          if (c == '{') read_key(stack.back());
          continue;
        }
      } else if (c == '"') {
        v = Value(read_string());
      } else if (c == '-' || is_digit(c)) {
        v = read_number();
      } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        v = read_word();
      } else {
        fail(pos_, "unexpected " + describe_at(s_, pos_) + ": expected a value");
      }

      // Hand the finished value to its container, closing every container
      // that ends right after it.
      for (;;) {
        if (stack.empty()) {
          skip_whitespace();
          if (pos_ != s_.size())
            fail(pos_, "unexpected " + describe_at(s_, pos_) + " after the JSON value");
          return v;
        }
        Frame& f = stack.back();
        bool is_object = f.container.is_object();
        char close = is_object ? '}' : ']';
        if (is_object) {
          std::get<Value::Object>(f.container.data_).emplace_back(std::move(f.key), std::move(v));
        } else {
          std::get<Value::Array>(f.container.data_).push_back(std::move(v));
        }
        skip_whitespace();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          skip_whitespace();
          if (pos_ < s_.size() && (s_[pos_] == ']' || s_[pos_] == '}'))
            fail(pos_, std::string("trailing comma before '") + s_[pos_] + "'");
          if (is_object) read_key(f);
          break;
        }
        if (pos_ < s_.size() && s_[pos_] == close) {
          ++pos_;
          if (is_object) check_duplicate_keys(f);
          v = std::move(f.container);
          stack.pop_back();
          continue;
        }
        fail(pos_, std::string("expected ',' or '") + close + "' after " +
                       (is_object ? "an object member" : "an array element") + ", found " +
                       describe_at(s_, pos_));
      }
    }
  }

 private:
  struct Frame {
    Value container;                  // the array or object being filled
    std::string key;                  // objects: the key of the value being read
    std::vector<size_t> key_offsets;  // objects: where each key starts, for errors
  };

  // Line and column are worked out only when an error is reported.
  [[noreturn]] void fail(size_t pos, const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < s_.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(s_[i]);
      if (c == '\n') {
        ++line;
        column = 1;
      } else if ((c & 0xC0) != 0x80) {  // continuation bytes do not start a character
        ++column;
      }
    }
    throw Error("json: line " + std::to_string(line) + ", column " + std::to_string(column) +
                ": " + what);
  }

  void skip_whitespace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
      ++pos_;
  }

  void read_key(Frame& f) {
    skip_whitespace();
    if (pos_ >= s_.size() || s_[pos_] != '"')
      fail(pos_, "expected a key in double quotes, found " + describe_at(s_, pos_));
    f.key_offsets.push_back(pos_);
    f.key = read_string();
    skip_whitespace();
    if (pos_ >= s_.size() || s_[pos_] != ':')
      fail(pos_, "expected ':' after the key '" + excerpt(f.key) + "', found " +
                     describe_at(s_, pos_));
    ++pos_;
  }

  // Sorting the key indices finds duplicates in O(n log n): a hostile object
  // with many keys cannot make this quadratic. The error points at the
  // earliest second occurrence in the text.
  void check_duplicate_keys(const Frame& f) const {
    const auto& members = std::get<Value::Object>(f.container.data_);
    if (members.size() < 2) return;
    std::vector<size_t> order(members.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return members[a].first < members[b].first; });
    size_t first_repeat = members.size();
    for (size_t i = 1; i < order.size(); ++i) {
      if (members[order[i]].first == members[order[i - 1]].first)
        first_repeat = std::min(first_repeat, order[i]);
    }
    if (first_repeat < members.size())
      fail(f.key_offsets[first_repeat],
           "duplicate key '" + excerpt(members[first_repeat].first) + "'");
  }

  uint32_t read_hex4(size_t escape_start) {
    if (s_.size() - pos_ < 4) fail(escape_start, "\\u must be followed by four hex digits");
    uint32_t cp = 0;
    for (int i = 0; i < 4; ++i) {
      char h = s_[pos_ + i];
      uint32_t digit;
      if (h >= '0' && h <= '9') digit = h - '0';
      else if (h >= 'a' && h <= 'f') digit = h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') digit = h - 'A' + 10;
      else fail(escape_start, "\\u must be followed by four hex digits");
      cp = cp * 16 + digit;
    }
    pos_ += 4;
    return cp;
  }

  void read_escape(std::string& out) {
    size_t start = pos_;  // at the backslash
    if (s_.size() - pos_ < 2) fail(start, "unterminated string");
    char e = s_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case '"': out += '"'; return;
      case '\\': out += '\\'; return;
      case '/': out += '/'; return;
      case 'b': out += '\b'; return;
      case 'f': out += '\f'; return;
      case 'n': out += '\n'; return;
      case 'r': out += '\r'; return;
      case 't': out += '\t'; return;
      case 'u': break;
      default: fail(start, "invalid escape: \\ followed by " + describe_at(s_, start + 1));
    }
    uint32_t cp = read_hex4(start);
    if (cp >= 0xDC00 && cp <= 0xDFFF)
      fail(start, "unpaired surrogate: \\u" + excerpt(s_.substr(start + 2, 4)) +
                      " is a low surrogate with no high surrogate before it");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      // A high surrogate must be followed at once by a low one: \uD83D\uDE00.
      size_t low_start = pos_;
      if (s_.size() - pos_ < 2 || s_[pos_] != '\\' || s_[pos_ + 1] != 'u')
        fail(start, "unpaired surrogate: \\u" + excerpt(s_.substr(start + 2, 4)) +
                        " must be followed by a low surrogate \\uDC00..\\uDFFF");
      pos_ += 2;
      uint32_t low = read_hex4(low_start);
      if (low < 0xDC00 || low > 0xDFFF)
        fail(start, "unpaired surrogate: \\u" + excerpt(s_.substr(start + 2, 4)) +
                        " must be followed by a low surrogate \\uDC00..\\uDFFF");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(out, cp);
  }

  std::string read_string() {
    size_t start = pos_++;  // at the opening quote
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail(start, "unterminated string");
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c == '\\') {
        read_escape(out);
      } else if (c < 0x20) {
        fail(pos_, "raw control character (" + describe_at(s_, pos_) +
                       ") in a string: write it as an escape such as \\n or \\u001F");
      } else if (c < 0x80) {
        size_t end = pos_;
        while (end < s_.size()) {
          unsigned char d = static_cast<unsigned char>(s_[end]);
          if (d < 0x20 || d >= 0x80 || d == '"' || d == '\\') break;
          ++end;
        }
        out.append(s_.data() + pos_, end - pos_);
        pos_ = end;
      } else {
        size_t n = utf8_sequence_length(reinterpret_cast<const unsigned char*>(s_.data()) + pos_,
                                        s_.size() - pos_);
        if (n == 0) fail(pos_, "invalid UTF-8 (" + describe_at(s_, pos_) + ") in a string");
        out.append(s_.data() + pos_, n);
        pos_ += n;
      }
    }
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? — checked here, converted by
  // std::from_chars, which is exact and independent of the C locale.
  Value read_number() {
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    if (pos_ >= s_.size() || !is_digit(s_[pos_]))
      fail(pos_, "expected a digit after '-', found " + describe_at(s_, pos_));
    if (s_[pos_] == '0') {
      ++pos_;
      if (pos_ < s_.size() && is_digit(s_[pos_]))
        fail(start, "leading zeros are not allowed in numbers");
    } else {
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    }
    size_t mantissa_end = pos_;
    bool integral = true;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (pos_ >= s_.size() || !is_digit(s_[pos_]))
        fail(pos_, "expected a digit after the decimal point, found " + describe_at(s_, pos_));
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
      mantissa_end = pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ >= s_.size() || !is_digit(s_[pos_]))
        fail(pos_, "expected a digit in the exponent, found " + describe_at(s_, pos_));
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    }
    const char* first = s_.data() + start;
    const char* last = s_.data() + pos_;
    if (integral) {
      int64_t n = 0;
      if (std::from_chars(first, last, n).ec == std::errc()) return Value(n);
      // Past int64: kept as the nearest double.
    }
    double d = 0.0;
    if (std::from_chars(first, last, d).ec == std::errc::result_out_of_range) {
      // from_chars reports both overflow and underflow this way. A number
      // too small for a double is zero (as every JSON reader has it); one too
      // large has no double and no JSON writer could have meant infinity.
      if (decimal_exponent(start, mantissa_end) >= 0)
        fail(start, "the number " + excerpt(s_.substr(start, pos_ - start)) +
                        " is too large for a double");
      d = s_[start] == '-' ? -0.0 : 0.0;
    }
    return Value(d);
  }

  // For a number already checked against the grammar, the power of ten of its
  // first significant digit (e.g. 0.05e3 -> 1), saturating far beyond any
  // double's range; used only to tell overflow from underflow.
  int64_t decimal_exponent(size_t start, size_t mantissa_end) const {
    int64_t position = 0;  // power of ten of the first significant digit
    bool found = false;
    size_t i = start + (s_[start] == '-' ? 1 : 0);
    size_t int_digits = 0;
    while (i + int_digits < mantissa_end && is_digit(s_[i + int_digits])) ++int_digits;
    for (size_t k = 0; k < int_digits && !found; ++k) {
      if (s_[i + k] != '0') {
        position = static_cast<int64_t>(int_digits - 1 - k);
        found = true;
      }
    }
    for (size_t k = i + int_digits + 1; k < mantissa_end && !found; ++k) {
      if (s_[k] != '0') {
        position = -static_cast<int64_t>(k - (i + int_digits));
        found = true;
      }
    }
    int64_t exponent = 0;
    size_t e = mantissa_end;
    if (e < pos_) {  // [eE][+-]?digits
      ++e;
      bool negative = s_[e] == '-';
      if (s_[e] == '+' || s_[e] == '-') ++e;
      for (; e < pos_; ++e) exponent = std::min<int64_t>(exponent * 10 + (s_[e] - '0'), 1 << 30);
      if (negative) exponent = -exponent;
    }
    return position + exponent;
  }

  Value read_word() {
    size_t start = pos_;
    while (pos_ < s_.size() &&
           ((s_[pos_] >= 'a' && s_[pos_] <= 'z') || (s_[pos_] >= 'A' && s_[pos_] <= 'Z') ||
            is_digit(s_[pos_]) || s_[pos_] == '_'))
      ++pos_;
    std::string_view word = s_.substr(start, pos_ - start);
    if (word == "true") return Value(true);
    if (word == "false") return Value(false);
    if (word == "null") return Value();
    fail(start, "invalid literal '" + excerpt(word) +
                    "' (JSON's literals are true, false and null; strings need double quotes)");
  }

  std::string_view s_;
  ParseLimits limits_;
  size_t pos_ = 0;
};

}  // namespace detail

// ---- Value ----------------------------------------------------------------------

namespace {
// "an array", "a number": type names with their article, for messages.
std::string with_article(Type t) {
  bool vowel = t == Type::array || t == Type::object;
  return std::string(vowel ? "an " : "a ") + type_name(t);
}
}  // namespace

void Value::throw_type_error(Type expected) const {
  throw Error("json: expected " + with_article(expected) + ", got " + with_article(type()));
}

int64_t Value::as_int() const {
  expect(Type::number);
  if (holds_int()) return std::get<int64_t>(data_);
  // 2^63 is exactly representable; every double in [-2^63, 2^63) that has no
  // fraction converts to int64 exactly.
  double d = std::get<double>(data_);
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == std::trunc(d))) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    throw Error(std::string("json: expected an integer that fits int64, got ") + buf);
  }
  return static_cast<int64_t>(d);
}

const Value* Value::find(const std::string& key) const {
  for (const Member& m : items())
    if (m.first == key) return &m.second;
  return nullptr;
}

Value* Value::find(const std::string& key) {
  return const_cast<Value*>(static_cast<const Value*>(this)->find(key));
}

bool Value::erase(const std::string& key) {
  expect(Type::object);
  Object& members = std::get<Object>(data_);
  auto it = std::find_if(members.begin(), members.end(), [&](const Member& m) { return m.first == key; });
  if (it == members.end()) return false;
  members.erase(it);
  return true;
}

const Value& Value::operator[](const std::string& key) const {
  const Value* v = find(key);
  if (!v) throw Error("json: missing key '" + key + "'");
  return *v;
}

Value& Value::operator[](const std::string& key) {
  if (is_null()) data_ = Object();
  if (Value* v = find(key)) return *v;
  Object& members = std::get<Object>(data_);
  members.emplace_back(key, Value());
  return members.back().second;
}

const Value& Value::operator[](size_t i) const {
  const Array& elements = as_array();
  if (i >= elements.size())
    throw Error("json: index " + std::to_string(i) + " is out of range for an array of " +
                std::to_string(elements.size()));
  return elements[i];
}

Value& Value::operator[](size_t i) {
  return const_cast<Value&>(static_cast<const Value&>(*this)[i]);
}

void Value::push_back(Value v) {
  if (is_null()) data_ = Array();
  as_array().push_back(std::move(v));
}

size_t Value::size() const {
  if (is_object()) return items().size();
  return as_array().size();
}

bool operator==(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Type::null: return true;
    case Type::boolean: return a.as_bool() == b.as_bool();
    case Type::number: {
      if (a.holds_int() && b.holds_int()) return std::get<int64_t>(a.data_) == std::get<int64_t>(b.data_);
      if (!a.holds_int() && !b.holds_int()) return std::get<double>(a.data_) == std::get<double>(b.data_);
      // An int64 and a double are equal only when the double is exactly that
      // integer; converting the int64 to double instead could round.
      int64_t n = std::get<int64_t>((a.holds_int() ? a : b).data_);
      double d = std::get<double>((a.holds_int() ? b : a).data_);
      return d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == std::trunc(d) &&
             static_cast<int64_t>(d) == n;
    }
    case Type::string: return a.as_string() == b.as_string();
    case Type::array: return a.as_array() == b.as_array();
    case Type::object: {
      const Value::Object& am = a.items();
      const Value::Object& bm = b.items();
      if (am.size() != bm.size()) return false;
      for (size_t i = 0; i < am.size(); ++i) {
        // Same order is the common case; otherwise look the key up.
        const Value* other = bm[i].first == am[i].first ? &bm[i].second : b.find(am[i].first);
        if (!other || !(am[i].second == *other)) return false;
      }
      return true;
    }
  }
  return false;
}

// ---- parse and dump ------------------------------------------------------------------

Value parse(std::string_view text, const ParseLimits& limits) {
  return detail::Parser(text, limits).run();
}

namespace detail {

// Recursion here is bounded by the value's own depth, which for parsed values
// is at most ParseLimits::max_depth.
class Writer {
 public:
  explicit Writer(int indent) : indent_(indent) {}

  void value(const Value& v, int level) {
    switch (v.type()) {
      case Type::null: out += "null"; return;
      case Type::boolean: out += v.as_bool() ? "true" : "false"; return;
      case Type::number:
        if (v.holds_int()) {
          char buf[24];
          out.append(buf, std::to_chars(buf, buf + sizeof buf, std::get<int64_t>(v.data_)).ptr);
        } else {
          number(std::get<double>(v.data_));
        }
        return;
      case Type::string: string(v.as_string()); return;
      case Type::array: {
        const Value::Array& elements = v.as_array();
        out += '[';
        for (size_t i = 0; i < elements.size(); ++i) {
          if (i) out += ',';
          newline(level + 1);
          value(elements[i], level + 1);
        }
        if (!elements.empty()) newline(level);
        out += ']';
        return;
      }
      case Type::object: {
        const Value::Object& members = v.items();
        out += '{';
        for (size_t i = 0; i < members.size(); ++i) {
          if (i) out += ',';
          newline(level + 1);
          string(members[i].first);
          out += indent_ < 0 ? ":" : ": ";
          value(members[i].second, level + 1);
        }
        if (!members.empty()) newline(level);
        out += '}';
        return;
      }
    }
  }

  std::string out;

 private:
  void newline(int level) {
    if (indent_ < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent_) * static_cast<size_t>(level), ' ');
  }

  void number(double d) {
    if (std::isnan(d))
      throw Error("json: cannot write NaN: JSON has no such number (write a string)");
    if (std::isinf(d))
      throw Error(std::string("json: cannot write ") + (d > 0 ? "" : "-") +
                  "infinity: JSON has no such number (write a string)");
    // to_chars without a precision gives the shortest text that reads back as
    // the same double (0.1 -> "0.1", not 0.10000000000000001).
    char buf[32];
    char* end = std::to_chars(buf, buf + sizeof buf, d).ptr;
    std::string_view text(buf, static_cast<size_t>(end - buf));
    out += text;
    // A double with no fraction still reads back as a double (1.0, not 1),
    // and keeps its sign (-0.0, not 0).
    if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
  }

  void string(const std::string& s) {
    out += '"';
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    for (size_t i = 0; i < s.size();) {
      unsigned char c = p[i];
      if (c >= 0x80) {  // kept as is once known to be valid UTF-8
        size_t n = utf8_sequence_length(p + i, s.size() - i);
        if (n == 0) {
          char buf[96];
          std::snprintf(buf, sizeof buf,
                        "json: cannot write a string that is not valid UTF-8 (byte 0x%02X at "
                        "offset %zu)",
                        c, i);
          throw Error(buf);
        }
        out.append(s, i, n);
        i += n;
        continue;
      }
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04X", c);
            out += buf;
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
    }
    out += '"';
  }

  int indent_;
};

}  // namespace detail

std::string dump(const Value& v, int indent) {
  detail::Writer writer(indent);
  writer.value(v, 0);
  return std::move(writer.out);
}

namespace detail {

inline std::string first_difference_at(const Value& a, const Value& b, const std::string& path) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [key, value] : a.items()) {
      const std::string here = path.empty() ? key : path + "." + key;
      if (!b.contains(key)) return here;
      std::string inner = first_difference_at(value, b[key], here);
      if (!inner.empty()) return inner;
    }
    for (const auto& [key, value] : b.items())
      if (!a.contains(key)) return path.empty() ? key : path + "." + key;
    return "";
  }
  return a == b ? "" : (path.empty() ? "(the whole value)" : path);
}

}  // namespace detail

std::string first_difference(const Value& a, const Value& b) { return detail::first_difference_at(a, b, ""); }

}  // namespace ordo::json

#endif  // ORDO_JSON_IMPLEMENTATION
