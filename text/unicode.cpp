#include "text/unicode.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace ordo::text::unicode {
namespace {

// Entry types of the generated tables (see scripts/gen_unicode_tables.py).
struct PropertyRange {
  uint32_t start;  // the range runs to the next entry's start
  uint16_t flags;
};
struct CombiningRange {
  uint32_t first, last;
  uint8_t ccc;
};
struct LowerRun {
  uint32_t first, last, stride;
  int32_t delta;
};
struct LowerSpecial {
  uint32_t cp;
  uint32_t lowered[4];
  uint8_t length;
};
struct Decomposition {
  uint32_t cp;
  uint32_t parts[4];
  uint8_t length;
};
struct Composition {
  uint32_t first, second, composite;
};

#include "text/unicode_tables.inc"

// Flag bits of kPropertyRanges (must match the generator).
constexpr uint16_t kControl = 1, kPunct = 2, kZs = 4, kMn = 8, kPySpace = 16, kCaseIgnorable = 32,
                   kCased = 64, kAlnum = 128, kLetter = 256, kNumber = 512;

uint16_t lookup_flags(char32_t cp) {
  const auto* end = kPropertyRanges + std::size(kPropertyRanges);
  const auto* it = std::upper_bound(kPropertyRanges, end, cp,
                                    [](char32_t c, const PropertyRange& r) { return c < r.start; });
  return it == kPropertyRanges ? 0 : (it - 1)->flags;
}

// Latin-1 is most of real text: its flags come from a table built at start-up.
const std::array<uint16_t, 256> kLatin1Flags = [] {
  std::array<uint16_t, 256> t{};
  for (char32_t cp = 0; cp < 256; ++cp) t[cp] = lookup_flags(cp);
  return t;
}();

inline uint16_t flags(char32_t cp) { return cp < 256 ? kLatin1Flags[cp] : lookup_flags(cp); }

// Hangul syllables decompose and compose algorithmically (Unicode 14, section 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
              kSCount = kLCount * kNCount;

void decompose_one(char32_t cp, std::u32string& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    int s = static_cast<int>(cp - kSBase);
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const auto* end = kDecomposition + std::size(kDecomposition);
  const auto* it = std::lower_bound(kDecomposition, end, cp,
                                    [](const Decomposition& d, char32_t c) { return d.cp < c; });
  if (it != end && it->cp == cp) {
    out.append(it->parts, it->parts + it->length);
  } else {
    out.push_back(cp);
  }
}

// Canonical ordering: within each run of non-starters, a stable sort by
// combining class (insertion sort: the runs are a few characters long).
void canonical_order(std::u32string& s, size_t from) {
  for (size_t i = from + 1; i < s.size(); ++i) {
    int ccc = combining_class(s[i]);
    if (ccc == 0) continue;
    size_t j = i;
    while (j > from && combining_class(s[j - 1]) > ccc) {
      std::swap(s[j - 1], s[j]);
      --j;
    }
  }
}

// The primary composite of a pair, or 0.
char32_t compose_pair(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount) {
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  }
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 &&
      second > kTBase && second < kTBase + kTCount) {
    return first + (second - kTBase);
  }
  const auto* end = kComposition + std::size(kComposition);
  const auto* it = std::lower_bound(kComposition, end, std::make_pair(first, second),
                                    [](const Composition& c, const std::pair<char32_t, char32_t>& key) {
                                      return std::make_pair(char32_t(c.first), char32_t(c.second)) < key;
                                    });
  return (it != end && it->first == first && it->second == second) ? it->composite : 0;
}

// One code point's simple lower-case mapping, or itself.
char32_t lower_simple(char32_t cp) {
  if (cp < 128) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  const auto* end = kLowerRuns + std::size(kLowerRuns);
  const auto* it = std::upper_bound(kLowerRuns, end, cp,
                                    [](char32_t c, const LowerRun& r) { return c < r.first; });
  if (it == kLowerRuns) return cp;
  const LowerRun& run = *(it - 1);
  if (cp > run.last || (cp - run.first) % run.stride != 0) return cp;
  return static_cast<char32_t>(static_cast<int64_t>(cp) + run.delta);
}

// CPython's Final_Sigma test for the capital sigma at text[i]: preceded by a
// cased letter and not followed by one, skipping case-ignorable characters.
bool final_sigma(std::u32string_view text, size_t i) {
  size_t j = i;
  while (j > 0 && (flags(text[j - 1]) & kCaseIgnorable)) --j;
  if (j == 0 || !(flags(text[j - 1]) & kCased)) return false;
  size_t k = i + 1;
  while (k < text.size() && (flags(text[k]) & kCaseIgnorable)) ++k;
  return k == text.size() || !(flags(text[k]) & kCased);
}

}  // namespace

const char* version() { return kUnicodeVersion; }

bool is_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  return flags(cp) & kControl;
}

bool is_whitespace(char32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || (flags(cp) & kZs);
}

bool is_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) {
    return true;
  }
  return flags(cp) & kPunct;
}

bool is_chinese_char(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) ||
         (cp >= 0x2B820 && cp <= 0x2CEAF) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_nonspacing_mark(char32_t cp) { return flags(cp) & kMn; }

bool is_python_space(char32_t cp) { return flags(cp) & kPySpace; }

bool is_alnum(char32_t cp) { return flags(cp) & kAlnum; }
bool is_letter(char32_t cp) { return flags(cp) & kLetter; }
bool is_number(char32_t cp) { return flags(cp) & kNumber; }
// Oniguruma's Unicode \s: \t \n \v \f \r, NEL, and the separators Zs, Zl (U+2028), Zp (U+2029).
bool is_regex_space(char32_t cp) {
  return (cp >= 0x9 && cp <= 0xD) || cp == 0x85 || cp == 0x2028 || cp == 0x2029 || (flags(cp) & kZs);
}

int combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto* end = kCombiningClass + std::size(kCombiningClass);
  const auto* it = std::upper_bound(kCombiningClass, end, cp,
                                    [](char32_t c, const CombiningRange& r) { return c < r.first; });
  if (it == kCombiningClass || cp > (it - 1)->last) return 0;
  return (it - 1)->ccc;
}

void lower(std::u32string_view text, std::u32string& out) {
  for (size_t i = 0; i < text.size(); ++i) {
    char32_t cp = text[i];
    if (cp == 0x03A3) {
      out.push_back(final_sigma(text, i) ? 0x03C2 : 0x03C3);
      continue;
    }
    if (cp >= 128) {
      const auto* end = kLowerSpecial + std::size(kLowerSpecial);
      const auto* it = std::find_if(kLowerSpecial, end, [&](const LowerSpecial& s) { return s.cp == cp; });
      if (it != end) {
        out.append(it->lowered, it->lowered + it->length);
        continue;
      }
    }
    out.push_back(lower_simple(cp));
  }
}

void nfd(std::u32string_view text, std::u32string& out) {
  size_t from = out.size();
  for (char32_t cp : text) {
    // Below U+00C0 nothing decomposes and every combining class is 0.
    if (cp < 0xC0) {
      out.push_back(cp);
    } else {
      decompose_one(cp, out);
    }
  }
  canonical_order(out, from);
}

void nfc(std::u32string_view text, std::u32string& out) {
  // Text below U+0300 is already in NFC: nothing there decomposes to more than
  // itself under NFC, and no combining mark or composable second lies there.
  if (std::all_of(text.begin(), text.end(), [](char32_t cp) { return cp < 0x300; })) {
    out.append(text);
    return;
  }
  std::u32string decomposed;
  nfd(text, decomposed);
  long starter = -1;  // index in `out` of the last starter, -1 before the first
  for (char32_t cp : decomposed) {
    int ccc = combining_class(cp);
    if (starter >= 0) {
      size_t last = out.size() - 1;
      bool adjacent = static_cast<long>(last) == starter;
      int last_ccc = adjacent ? 0 : combining_class(out[last]);
      // Blocked when something between the starter and cp has class 0 or >= cp's.
      if (adjacent || (last_ccc != 0 && last_ccc < ccc)) {
        if (char32_t composite = compose_pair(out[starter], cp)) {
          out[starter] = composite;
          continue;
        }
      }
    }
    if (ccc == 0) starter = static_cast<long>(out.size());
    out.push_back(cp);
  }
}

}  // namespace ordo::text::unicode
