#include "text/utf8.h"

#include "base/error.h"

namespace ordo::text::utf8 {
namespace {

// Decodes one sequence starting at bytes[i]; returns its length, or 0 with
// `reason` set when the bytes there are not a valid sequence.
size_t decode_one(std::string_view bytes, size_t i, char32_t& cp, const char*& reason) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(bytes[k]); };
  unsigned char lead = byte(i);
  if (lead < 0x80) {
    cp = lead;
    return 1;
  }
  size_t length;
  char32_t min;  // the smallest code point this length may encode (below: overlong)
  if (lead >= 0xC0 && lead <= 0xDF) {
    length = 2, min = 0x80, cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, min = 0x800, cp = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF7) {
    length = 4, min = 0x10000, cp = lead & 0x07;
  } else {
    reason = lead < 0xC0 ? "continuation byte without a lead byte" : "byte 0xF8-0xFF never occurs in UTF-8";
    return 0;
  }
  for (size_t k = 1; k < length; ++k) {
    if (i + k >= bytes.size()) {
      reason = "truncated sequence at end of input";
      return 0;
    }
    if ((byte(i + k) & 0xC0) != 0x80) {
      reason = "truncated sequence (expected a continuation byte)";
      return 0;
    }
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min) {
    reason = "overlong encoding";
    return 0;
  }
  if (cp >= 0xD800 && cp <= 0xDFFF) {
    reason = "UTF-16 surrogate code point";
    return 0;
  }
  if (cp > 0x10FFFF) {
    reason = "code point above U+10FFFF";
    return 0;
  }
  return length;
}

template <class Sink>
bool walk(std::string_view bytes, Invalid* invalid, Sink sink) {
  size_t i = 0;
  while (i < bytes.size()) {
    // ASCII runs are the common case: no sequence decoding needed.
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {
      sink(static_cast<char32_t>(bytes[i]));
      ++i;
      continue;
    }
    char32_t cp = 0;
    const char* reason = "";
    size_t length = decode_one(bytes, i, cp, reason);
    if (length == 0) {
      if (invalid) *invalid = Invalid{i, reason};
      return false;
    }
    sink(cp);
    i += length;
  }
  return true;
}

}  // namespace

bool decode(std::string_view bytes, std::u32string& out, Invalid* invalid) {
  out.reserve(out.size() + bytes.size());
  return walk(bytes, invalid, [&](char32_t cp) { out.push_back(cp); });
}

bool valid(std::string_view bytes, Invalid* invalid) {
  return walk(bytes, invalid, [](char32_t) {});
}

std::u32string decode_or_throw(std::string_view bytes, std::string_view where) {
  std::u32string out;
  Invalid invalid;
  ORDO_CHECK(decode(bytes, out, &invalid), "invalid UTF-8 in ", where, " at byte ", invalid.offset, ": ",
             invalid.reason);
  return out;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append(out, cp);
  return out;
}

}  // namespace ordo::text::utf8
