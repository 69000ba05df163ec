// Reading JSON (base/json.h): the iterative parser behind json::parse, strict
// RFC 8259 with every error naming its line and column.
#include "base/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <system_error>

namespace ordo::json {

namespace detail {

// Length of the well-formed UTF-8 sequence starting at p (1 to 4), or 0 when the
// bytes there are not one: overlong forms, UTF-16 surrogates (U+D800..DFFF),
// code points past U+10FFFF, stray continuation bytes and truncated sequences
// are all rejected, following the table of well-formed byte sequences in the
// Unicode standard (chapter 3, table 3-7).
size_t utf8_sequence_length(const unsigned char* p, size_t available) {
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

Value parse(std::string_view text, const ParseLimits& limits) {
  return detail::Parser(text, limits).run();
}

}  // namespace ordo::json
