// JSON values (base/json.h): access, comparison, writing (dump), the first
// difference of two values, and reading a file; the parser is json_parse.cpp.
#include "base/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <system_error>

#include "base/file_io.h"

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

}  // namespace detail

// ---- Value ----------------------------------------------------------------------

std::string with_article(Type t) {
  bool vowel = t == Type::array || t == Type::object;
  return std::string(vowel ? "an " : "a ") + type_name(t);
}

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

std::string naming_file(const std::string& path, const std::string& message) {
  return message.compare(0, path.size() + 1, path + ":") == 0 ? message : path + ": " + message;
}

Value parse_file(const std::string& path, const ParseLimits& limits) {
  const std::string text = read_file(path);  // its errors name the path
  return reading_file(path, [&] { return parse(text, limits); });
}

}  // namespace ordo::json
