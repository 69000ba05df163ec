// ordo's JSON reader and writer. Every expected value here is worked out by
// hand from RFC 8259, Unicode's UTF-8 table and IEEE 754, not taken from the
// code's output.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "base/json.h"
#include "base/json_numbers.h"

using ordo::json::dump;
using ordo::json::parse;
using ordo::json::ParseLimits;
using ordo::json::Type;
using ordo::json::Value;

namespace {

// The message of the ordo::Error that parse(text) throws ("" if none).
std::string parse_error(const std::string& text, const ParseLimits& limits = {}) {
  try {
    parse(text, limits);
  } catch (const ordo::Error& e) {
    return e.what();
  }
  return "";
}

std::string parse_string(const std::string& text) { return parse(text).as_string(); }

uint64_t bits_of(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}

}  // namespace

TEST_CASE("json: literals, numbers and strings parse to their types", "[json]") {
  CHECK(parse("null").is_null());
  CHECK(parse("true").as_bool() == true);
  CHECK(parse("false").as_bool() == false);
  CHECK(parse(" \t\r\n 42 \n").as_int() == 42);
  CHECK(parse("-7").as_int() == -7);
  CHECK(parse("0").as_int() == 0);
  CHECK(parse("2.5").as_number() == 2.5);
  CHECK(parse("-1.25e2").as_number() == -125.0);
  CHECK(parse("1E+2").as_number() == 100.0);
  CHECK(parse("\"hi\"").as_string() == "hi");
  CHECK(parse("[]").size() == 0);
  CHECK(parse("{}").size() == 0);
  CHECK(parse("[1, \"a\", null]").type() == Type::array);
  // A UTF-8 byte order mark may be ignored (RFC 8259 section 8.1).
  CHECK(parse("\xEF\xBB\xBF[1]")[0].as_int() == 1);
}

TEST_CASE("json: every string escape", "[json]") {
  CHECK(parse_string(R"("\"\\\/\b\f\n\r\t")") == "\"\\/\b\f\n\r\t");
  CHECK(parse_string(R"("\u0041")") == "A");
  // U+00E9 é = C3 A9; U+20AC € = E2 82 AC (hex digits in either case).
  CHECK(parse_string(R"("\u00e9\u20AC")") == "\xC3\xA9\xE2\x82\xAC");
  // U+0000 is allowed when escaped; the string keeps its length.
  CHECK(parse_string(R"("a\u0000b")") == std::string("a\0b", 3));
  // U+1F600 as the pair D83D DE00: 0x10000 + (0x3D << 10) + 0x200 = 0x1F600,
  // which UTF-8 writes as F0 9F 98 80.
  CHECK(parse_string(R"("\uD83D\uDE00")") == "\xF0\x9F\x98\x80");
  // U+10FFFF, the last code point: DBFF DFFF -> F4 8F BF BF.
  CHECK(parse_string(R"("\uDBFF\uDFFF")") == "\xF4\x8F\xBF\xBF");
  // Raw UTF-8 passes through untouched.
  CHECK(parse_string("\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"") ==
        "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
}

TEST_CASE("json: bad escapes and unpaired surrogates are errors at the backslash", "[json]") {
  CHECK(parse_error(R"("\uD83D")") ==
        "json: line 1, column 2: unpaired surrogate: \\uD83D must be followed by a low "
        "surrogate \\uDC00..\\uDFFF");
  CHECK(parse_error(R"("ab\uD83D\u0041")") ==
        "json: line 1, column 4: unpaired surrogate: \\uD83D must be followed by a low "
        "surrogate \\uDC00..\\uDFFF");
  CHECK(parse_error(R"("\uD83Dx")").rfind("json: line 1, column 2: unpaired surrogate", 0) == 0);
  CHECK(parse_error(R"("\uDE00")") ==
        "json: line 1, column 2: unpaired surrogate: \\uDE00 is a low surrogate with no high "
        "surrogate before it");
  CHECK(parse_error(R"("\u12G4")") ==
        "json: line 1, column 2: \\u must be followed by four hex digits");
  CHECK(parse_error(R"("\u12")") == "json: line 1, column 2: \\u must be followed by four hex digits");
  CHECK(parse_error(R"("a\x")") == "json: line 1, column 3: invalid escape: \\ followed by 'x'");
  CHECK(parse_error(R"("a\')") == "json: line 1, column 3: invalid escape: \\ followed by '''");
}

TEST_CASE("json: raw control characters and invalid UTF-8 in strings are errors", "[json]") {
  CHECK(parse_error("\"a\tb\"") ==
        "json: line 1, column 3: raw control character (byte 0x09) in a string: write it as an "
        "escape such as \\n or \\u001F");
  CHECK(parse_error("[\"x\ny\"]").rfind("json: line 1, column 4: raw control character", 0) == 0);
  // Each of these is ill-formed per Unicode's table of UTF-8 byte sequences.
  const char* bad[] = {
      "\"\xC0\x80\"",          // overlong encoding of U+0000
      "\"\xE0\x80\xAF\"",      // overlong 3-byte form of '/'
      "\"\xED\xA0\x80\"",      // U+D800, a surrogate, encoded directly
      "\"\xF4\x90\x80\x80\"",  // U+110000, past the last code point
      "\"\xE2\x82\"",          // truncated 3-byte sequence
      "\"\x80\"",              // stray continuation byte
      "\"\xFF\"",              // never valid
  };
  for (const char* text : bad) {
    INFO(text);
    CHECK(parse_error(text).rfind("json: line 1, column 2: invalid UTF-8 (byte 0x", 0) == 0);
  }
  // Non-ASCII bytes outside strings are simply unexpected.
  CHECK(parse_error("\xC3\xA9") == "json: line 1, column 1: unexpected byte 0xC3: expected a value");
}

TEST_CASE("json: integers that fit int64 stay exact", "[json]") {
  // 2^53 + 1 has no double; as an int64 it is exact.
  CHECK(parse("9007199254740993").as_int() == INT64_C(9007199254740993));
  CHECK(dump(parse("9007199254740993")) == "9007199254740993");
  CHECK(parse("9223372036854775807").as_int() == std::numeric_limits<int64_t>::max());
  CHECK(parse("-9223372036854775808").as_int() == std::numeric_limits<int64_t>::min());
  CHECK(dump(parse("-9223372036854775808")) == "-9223372036854775808");
  // 2^63 does not fit int64: it becomes the double 2^63, which as_int refuses.
  Value big = parse("9223372036854775808");
  CHECK(big.as_number() == 9223372036854775808.0);
  CHECK_THROWS_WITH(big.as_int(),
                    "json: expected an integer that fits int64, got 9.2233720368547758e+18");
  // A double with no fraction is an integer too; one with a fraction is not.
  CHECK(parse("1e2").as_int() == 100);
  CHECK_THROWS_WITH(parse("1.5").as_int(), "json: expected an integer that fits int64, got 1.5");
  // Every integer type converts exactly; unsigned values past INT64_MAX refuse.
  CHECK(Value(size_t{7}).as_int() == 7);
  CHECK(Value(uint64_t{1} << 62).as_int() == INT64_C(4611686018427387904));
  CHECK_THROWS_WITH(Value(uint64_t{1} << 63),
                    "json: the integer 9223372036854775808 does not fit int64");
}

TEST_CASE("json: doubles round-trip through the shortest text", "[json]") {
  // The shortest decimal that reads back to the same double.
  CHECK(dump(Value(0.1)) == "0.1");
  CHECK(dump(Value(0.1 + 0.2)) == "0.30000000000000004");  // needs all 17 digits
  CHECK(dump(Value(1.0 / 3.0)) == "0.3333333333333333");   // 16 digits suffice
  CHECK(dump(Value(1e-300)) == "1e-300");
  CHECK(dump(Value(5e-324)) == "5e-324");  // the smallest subnormal
  CHECK(dump(Value(DBL_MAX)) == "1.7976931348623157e+308");
  CHECK(dump(Value(2.5)) == "2.5");
  // A double keeps a fraction on output so it reads back as a double, and
  // negative zero keeps its sign.
  CHECK(dump(Value(1.0)) == "1.0");
  CHECK(dump(Value(-0.0)) == "-0.0");
  CHECK(dump(Value(1)) == "1");

  const double values[] = {0.1, 1e-300, 5e-324, DBL_MAX, -0.0, 0.1 + 0.2, 1.0 / 3.0,
                           3.141592653589793, -123.456, 1e22, 4.9406564584124654e-324 * 3};
  for (double d : values) {
    INFO(d);
    CHECK(bits_of(parse(dump(Value(d))).as_number()) == bits_of(d));
  }
  CHECK(std::signbit(parse("-0.0").as_number()));
  CHECK(parse("1.7976931348623157e308").as_number() == DBL_MAX);
  CHECK(parse("5e-324").as_number() == std::numeric_limits<double>::denorm_min());
  // Below the smallest subnormal a number is zero; above DBL_MAX it is an error.
  CHECK(parse("1e-400").as_number() == 0.0);
  CHECK(std::signbit(parse("-1e-400").as_number()));
  CHECK(parse_error("[1e400]") == "json: line 1, column 2: the number 1e400 is too large for a double");
}

TEST_CASE("json: NaN and infinity cannot be written", "[json]") {
  CHECK_THROWS_WITH(dump(Value(std::nan(""))),
                    "json: cannot write NaN: JSON has no such number (write a string)");
  CHECK_THROWS_WITH(dump(Value(-HUGE_VAL)),
                    "json: cannot write -infinity: JSON has no such number (write a string)");
  Value v = Value::object();
  v["loss"] = HUGE_VAL;
  CHECK_THROWS_AS(dump(v), ordo::Error);
}

TEST_CASE("json: syntax errors name their line and column", "[json]") {
  CHECK(parse_error("") == "json: line 1, column 1: expected a JSON value, found end of input");
  CHECK(parse_error("[") == "json: line 1, column 2: unexpected end of input: expected a value");
  CHECK(parse_error("[1,]") == "json: line 1, column 4: trailing comma before ']'");
  CHECK(parse_error("{\"a\":1,}") == "json: line 1, column 8: trailing comma before '}'");
  CHECK(parse_error("[01]") == "json: line 1, column 2: leading zeros are not allowed in numbers");
  CHECK(parse_error("-01") == "json: line 1, column 1: leading zeros are not allowed in numbers");
  CHECK(parse_error("-") == "json: line 1, column 2: expected a digit after '-', found end of input");
  CHECK(parse_error("1.") ==
        "json: line 1, column 3: expected a digit after the decimal point, found end of input");
  CHECK(parse_error("1e+") ==
        "json: line 1, column 4: expected a digit in the exponent, found end of input");
  CHECK(parse_error(".5") == "json: line 1, column 1: unexpected '.': expected a value");
  CHECK(parse_error("+1") == "json: line 1, column 1: unexpected '+': expected a value");
  CHECK(parse_error("// note\n1") == "json: line 1, column 1: unexpected '/': expected a value");
  CHECK(parse_error("[1 /* c */]") ==
        "json: line 1, column 4: expected ',' or ']' after an array element, found '/'");
  CHECK(parse_error("[1 2]") ==
        "json: line 1, column 4: expected ',' or ']' after an array element, found '2'");
  CHECK(parse_error("{\"a\":1 \"b\":2}") ==
        "json: line 1, column 8: expected ',' or '}' after an object member, found '\"'");
  CHECK(parse_error("{a:1}") == "json: line 1, column 2: expected a key in double quotes, found 'a'");
  CHECK(parse_error("{\"a\" 1}") == "json: line 1, column 6: expected ':' after the key 'a', found '1'");
  CHECK(parse_error("'a'") == "json: line 1, column 1: unexpected ''': expected a value");
  CHECK(parse_error("\"abc") == "json: line 1, column 1: unterminated string");
  CHECK(parse_error("[1] x") == "json: line 1, column 5: unexpected 'x' after the JSON value");
  CHECK(parse_error("{} {}") == "json: line 1, column 4: unexpected '{' after the JSON value");
  for (const char* word : {"NaN", "Infinity", "True", "undefined", "nul", "truex"}) {
    CHECK(parse_error(word) == std::string("json: line 1, column 1: invalid literal '") + word +
                                   "' (JSON's literals are true, false and null; strings need "
                                   "double quotes)");
  }
  CHECK(parse_error("-Infinity") == "json: line 1, column 2: expected a digit after '-', found 'I'");
  // Lines count from 1 after each newline; columns count characters, so the
  // two-byte é is one column.
  CHECK(parse_error("{\n  \"a\": 1,\n  \"b\": tru\n}") ==
        "json: line 3, column 8: invalid literal 'tru' (JSON's literals are true, false and "
        "null; strings need double quotes)");
  CHECK(parse_error("[\"\xC3\xA9\", *]") == "json: line 1, column 7: unexpected '*': expected a value");
}

TEST_CASE("json: duplicate keys are an error naming the key", "[json]") {
  CHECK(parse_error("{\"a\":1,\"a\":2}") == "json: line 1, column 8: duplicate key 'a'");
  // The error points at the first key that repeats an earlier one.
  CHECK(parse_error("{\"x\":1,\"y\":2,\"y\":3,\"x\":4}") ==
        "json: line 1, column 14: duplicate key 'y'");
  // The same key in different objects is fine.
  CHECK(parse("[{\"a\":1},{\"a\":2}]")[1]["a"].as_int() == 2);
  // Keys that differ only after an escape are different keys; equal after
  // unescaping are the same.
  CHECK(parse_error("{\"\\u0061\":1,\"a\":2}") == "json: line 1, column 13: duplicate key 'a'");
}

TEST_CASE("json: depth and size limits are errors, not crashes", "[json]") {
  ParseLimits shallow;
  shallow.max_depth = 3;
  CHECK(parse("[[[1]]]", shallow)[0][0][0].as_int() == 1);
  CHECK(parse("[[{}]]", shallow).size() == 1);
  CHECK(parse_error("[[[[1]]]]", shallow) ==
        "json: line 1, column 4: arrays and objects nested deeper than the limit of 3");
  CHECK(parse_error("{\"a\":{\"b\":[{}]}}", shallow) ==
        "json: line 1, column 12: arrays and objects nested deeper than the limit of 3");

  // The default allows 512 levels; a hostile 100000 is refused, not a stack overflow.
  CHECK(parse(std::string(512, '[') + std::string(512, ']')).size() == 1);
  CHECK(parse_error(std::string(513, '[') + std::string(513, ']')) ==
        "json: line 1, column 513: arrays and objects nested deeper than the limit of 512");
  CHECK(parse_error(std::string(100000, '[')).rfind("json: line 1, column 513:", 0) == 0);

  ParseLimits small;
  small.max_bytes = 4;
  CHECK(parse("[12]", small)[0].as_int() == 12);
  CHECK(parse_error("[1, 2]", small) == "json: the input is 6 bytes, more than the limit of 4");
}

TEST_CASE("json: objects keep insertion order", "[json]") {
  const std::string text = R"({"z":1,"a":{"y":true,"b":null},"m":[3,2,1]})";
  Value v = parse(text);
  REQUIRE(v.items().size() == 3);
  CHECK(v.items()[0].first == "z");
  CHECK(v.items()[1].first == "a");
  CHECK(v.items()[2].first == "m");
  CHECK(dump(v) == text);

  Value built;  // null becomes an object on first operator[]
  built["lr"] = 0.001;
  built["batch"] = 32;
  built["name"] = "rope";
  built["lr"] = 0.002;  // replacing keeps the position
  CHECK(dump(built) == R"({"lr":0.002,"batch":32,"name":"rope"})");
}

TEST_CASE("json: pretty printing", "[json]") {
  Value v = parse(R"({"a":[1,2],"b":{},"c":[],"d":{"e":"f"}})");
  CHECK(dump(v, 2) ==
        "{\n"
        "  \"a\": [\n"
        "    1,\n"
        "    2\n"
        "  ],\n"
        "  \"b\": {},\n"
        "  \"c\": [],\n"
        "  \"d\": {\n"
        "    \"e\": \"f\"\n"
        "  }\n"
        "}");
  CHECK(parse(dump(v, 2)) == v);
  CHECK(dump(v, 0) == "{\n\"a\": [\n1,\n2\n],\n\"b\": {},\n\"c\": [],\n\"d\": {\n\"e\": \"f\"\n}\n}");
}

TEST_CASE("json: dump escapes control characters and keeps UTF-8", "[json]") {
  CHECK(dump(Value(std::string("q\"b\\s/\b\f\n\r\t\x01\x1F", 13))) ==
        R"("q\"b\\s/\b\f\n\r\t\u0001\u001F")");
  CHECK(dump(Value(std::string("\0", 1))) == R"("\u0000")");
  CHECK(dump(Value("\xC3\xA9\xF0\x9F\x98\x80")) == "\"\xC3\xA9\xF0\x9F\x98\x80\"");
  CHECK(dump(Value("\x7F")) == "\"\x7F\"");  // DEL is not a control character in JSON
  CHECK_THROWS_WITH(dump(Value("ab\xFF")),
                    "json: cannot write a string that is not valid UTF-8 (byte 0xFF at offset 2)");
  // Keys are strings too.
  Value v;
  v["tab\there"] = 1;
  CHECK(dump(v) == R"({"tab\there":1})");
}

TEST_CASE("json: typed access errors name the expected and actual types", "[json]") {
  Value v = parse(R"({"n":1,"s":"x","a":[true]})");
  CHECK_THROWS_WITH(v["n"].as_string(), "json: expected a string, got a number");
  CHECK_THROWS_WITH(v["s"].as_int(), "json: expected a number, got a string");
  CHECK_THROWS_WITH(v["a"].as_bool(), "json: expected a boolean, got an array");
  CHECK_THROWS_WITH(v["a"][0].as_array(), "json: expected an array, got a boolean");
  CHECK_THROWS_WITH(v["s"].items(), "json: expected an object, got a string");
  CHECK_THROWS_WITH(v.as_number(), "json: expected a number, got an object");
  CHECK_THROWS_WITH(Value().as_bool(), "json: expected a boolean, got a null");

  const Value& c = v;
  CHECK_THROWS_WITH(c["missing"], "json: missing key 'missing'");
  CHECK_THROWS_WITH(c["a"][1], "json: index 1 is out of range for an array of 1");
  CHECK_THROWS_WITH(c["n"][0], "json: expected an array, got a number");
  CHECK_THROWS_WITH(Value(3).size(), "json: expected an array, got a number");
  Value s("x");
  CHECK_THROWS_WITH(s["k"], "json: expected an object, got a string");
  CHECK_THROWS_WITH(s.push_back(1), "json: expected an array, got a string");
}

TEST_CASE("json: building values and comparing them", "[json]") {
  Value list;  // null becomes an array on push_back
  list.push_back(1);
  list.push_back("two");
  list.push_back(Value::object());
  CHECK(list.size() == 3);
  CHECK(dump(list) == R"([1,"two",{}])");
  list[0] = 5;
  CHECK(list[0].as_int() == 5);

  Value obj = parse(R"({"a":1,"b":[1,2]})");
  CHECK(obj.contains("a"));
  CHECK_FALSE(obj.contains("c"));
  CHECK(obj.find("c") == nullptr);
  REQUIRE(obj.find("b") != nullptr);
  CHECK(obj.find("b")->size() == 2);

  // Objects compare as sets of members; numbers by value.
  CHECK(parse(R"({"a":1,"b":2})") == parse(R"({"b":2,"a":1})"));
  CHECK(parse(R"({"a":1,"b":2})") != parse(R"({"a":1,"b":3})"));
  CHECK(parse(R"({"a":1})") != parse(R"({"a":1,"b":2})"));
  CHECK(parse("1") == parse("1.0"));
  CHECK(parse("[1,2]") != parse("[2,1]"));
  CHECK(parse("\"1\"") != parse("1"));
  // 2^53 + 1 as an int64 is not the double 2^53 it would round to.
  CHECK(parse("9007199254740993") != parse("9007199254740992.0"));
  CHECK(parse("9007199254740992") == parse("9007199254740992.0"));
}

namespace json = ordo::json;

TEST_CASE("json: first_difference names the first differing key as a dotted path", "[json]") {
  const json::Value a = json::parse(R"({"model": {"pe": "none", "hidden": 4}, "train": {"lr": 1, "steps": [1, 2]}})");
  CHECK(json::first_difference(a, a).empty());
  CHECK(json::first_difference(a, json::parse(R"({"model": {"pe": "none", "hidden": 4}, "train": {"lr": 2, "steps": [1, 2]}})")) == "train.lr");
  CHECK(json::first_difference(a, json::parse(R"({"model": {"pe": "none"}, "train": {"lr": 1, "steps": [1, 2]}})")) == "model.hidden");
  CHECK(json::first_difference(json::parse(R"({"model": {"pe": "none"}})"), json::parse(R"({"model": {"pe": "none", "x": 1}})")) == "model.x");
  CHECK(json::first_difference(a, json::parse(R"({"model": {"pe": "none", "hidden": 4}, "train": {"lr": 1, "steps": [1, 3]}})")) == "train.steps");
  CHECK(json::first_difference(json::Value(1.0), json::Value(2.0)) == "(the whole value)");
}

TEST_CASE("json numbers: inf, -inf and nan are written as words and read back", "[json]") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(dump(ordo::json::number(inf)) == "\"inf\"");
  CHECK(dump(ordo::json::number(-inf)) == "\"-inf\"");
  CHECK(dump(ordo::json::number(std::nan(""))) == "\"nan\"");
  CHECK(dump(ordo::json::number(0.25)) == "0.25");
  CHECK(ordo::json::to_number(ordo::json::number(inf)) == inf);
  CHECK(ordo::json::to_number(ordo::json::number(-inf)) == -inf);
  CHECK(std::isnan(ordo::json::to_number(ordo::json::number(std::nan("")))));
  CHECK(ordo::json::to_number(parse("0.25")) == 0.25);
  CHECK_THROWS_WITH(ordo::json::to_number(Value("infinity")),
                    "expected a number or \"inf\", got the string \"infinity\"");
  CHECK_THROWS_WITH(ordo::json::to_number(Value(true)), "json: expected a number, got a boolean");
}
