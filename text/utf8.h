// UTF-8 decoding and encoding with strict validation (RFC 3629): overlong
// forms, UTF-16 surrogates (U+D800..U+DFFF), code points above U+10FFFF,
// stray continuation bytes and truncated sequences are all errors.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ordo::text::utf8 {

// Where and why a byte string is not UTF-8.
struct Invalid {
  size_t offset = 0;       // byte offset of the offending sequence's first byte
  const char* reason = "";  // e.g. "overlong encoding"
};

// Appends the code points of `bytes` to `out`. Returns false and fills `invalid`
// (leaving `out` holding the code points before the error) on invalid input.
bool decode(std::string_view bytes, std::u32string& out, Invalid* invalid = nullptr);

// decode() that throws ordo::Error "invalid UTF-8 in <where> at byte N: <reason>".
std::u32string decode_or_throw(std::string_view bytes, std::string_view where);

// Whether `bytes` is valid UTF-8 (without building the code points).
bool valid(std::string_view bytes, Invalid* invalid = nullptr);

// Appends the UTF-8 encoding of a code point (which must be a scalar value).
void append(std::string& out, char32_t cp);
std::string encode(std::u32string_view cps);

}  // namespace ordo::text::utf8
