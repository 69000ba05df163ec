// ordo's JSON reader and writer: the declarations. The values, writing and
// comparing are in base/json.cpp, reading in base/json_parse.cpp.
//
// Configs, safetensors headers, metrics and reports all need JSON, and a bare
// GPU machine has no JSON package, so ordo carries its own.
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
std::string with_article(Type t);  // "a null", "a number", "an array": for messages

namespace detail {
class Parser;
class Writer;
[[noreturn]] void throw_integer_too_large(unsigned long long n);
// Length of the well-formed UTF-8 sequence starting at p (1 to 4), or 0 when
// the bytes there are not one (json_parse.cpp): what reading and writing accept.
size_t utf8_sequence_length(const unsigned char* p, size_t available);
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

// Runs `read`, which reads what the file at `path` holds, and names the file
// in any ordo::Error it throws: a value of the wrong type or a missing key
// ("json: missing key 'seed'") then says which file it is in. A message that
// names the file already keeps its one mention.
std::string naming_file(const std::string& path, const std::string& message);
template <class Read>
decltype(auto) reading_file(const std::string& path, Read&& read) {
  try {
    return read();
  } catch (const Error& e) {
    throw Error(naming_file(path, e.what()));
  }
}

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
