// The tokenizer's walk again, carrying for every character the span of the
// original text it came from (tokenizer.h: encode_with_offsets). The steps are
// those of BasicTokenizer::split / split_chunk / split_word, in the same order
// and with the same Unicode functions; what each adds is its span rule:
//
//   cleaning        a kept character keeps its own span; dropped ones vanish;
//   NFC             composes across characters, so it runs per segment (a run
//                   that starts at a character below U+0300: nothing there is
//                   ever the second of a composition or reordered, so NFC never
//                   looks across that boundary); a segment NFC leaves alone
//                   keeps its spans, one it changes is cut into groups wherever
//                   NFC of the parts is NFC of the whole, and a character
//                   composed from several gets the span of all of them;
//   lower-casing    a character becomes one or more (U+0130 -> i + U+0307),
//                   all with its span;
//   NFD             each character decomposes with its span, then canonical
//                   ordering moves the marks with their spans;
//   accent strip    marks vanish with their spans;
//   WordPiece       a piece covers the characters it matched (pieces are whole
//                   characters); a word that became [UNK] covers all of it.
//
// Where a step's piecewise result could differ from the whole-word result the
// code checks, and falls back to giving every character the word's (or the
// segment's) whole span: coarser, never wrong. tests/text checks that the ids
// equal encode()'s on every golden sentence.
#include <algorithm>

#include "base/error.h"
#include "text/tokenizer.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace ordo::text {
namespace {

// Characters with the spans they came from.
struct Spanned {
  std::u32string cps;
  std::vector<CharSpan> spans;
  void push(char32_t cp, CharSpan span) {
    cps.push_back(cp);
    spans.push_back(span);
  }
  void clear() {
    cps.clear();
    spans.clear();
  }
};

CharSpan cover(const CharSpan* spans, size_t n) {
  CharSpan all = spans[0];
  for (size_t i = 1; i < n; ++i) {
    all.begin = std::min(all.begin, spans[i].begin);
    all.end = std::max(all.end, spans[i].end);
  }
  return all;
}

// Appends `out_cps`, each with the cover of `spans` (a piece that a step
// changed as a whole).
void push_covered(Spanned& out, std::u32string_view out_cps, const CharSpan* spans, size_t n) {
  const CharSpan all = cover(spans, n);
  for (char32_t cp : out_cps) out.push(cp, all);
}

// NFC of in[begin, end): one segment, nothing in it composes with what is outside.
void nfc_segment(const Spanned& in, size_t begin, size_t end, Spanned& out) {
  const auto nfc_of = [&](size_t b, size_t e) {
    std::u32string r;
    unicode::nfc(std::u32string_view(in.cps.data() + b, e - b), r);
    return r;
  };
  const std::u32string whole = nfc_of(begin, end);
  if (whole == std::u32string_view(in.cps.data() + begin, end - begin)) {
    for (size_t i = begin; i < end; ++i) out.push(in.cps[i], in.spans[i]);
    return;
  }
  // Refine: cut before a starter (class 0) where NFC of the two sides put
  // together is NFC of the whole (not so inside a Hangul syllable spelled in
  // jamo, which are all starters); each group between cuts maps on its own.
  std::vector<size_t> cuts{begin};
  for (size_t k = begin + 1; k < end; ++k)
    if (unicode::combining_class(in.cps[k]) == 0 && nfc_of(begin, k) + nfc_of(k, end) == whole) cuts.push_back(k);
  cuts.push_back(end);
  std::vector<std::u32string> groups;
  std::u32string joined;
  for (size_t g = 0; g + 1 < cuts.size(); ++g) {
    groups.push_back(nfc_of(cuts[g], cuts[g + 1]));
    joined += groups.back();
  }
  if (joined != whole) {  // cannot happen for canonical composition; stay safe
    push_covered(out, whole, in.spans.data() + begin, end - begin);
    return;
  }
  for (size_t g = 0; g + 1 < cuts.size(); ++g) {
    const size_t b = cuts[g], e = cuts[g + 1];
    if (groups[g] == std::u32string_view(in.cps.data() + b, e - b)) {
      for (size_t i = b; i < e; ++i) out.push(in.cps[i], in.spans[i]);
    } else {
      push_covered(out, groups[g], in.spans.data() + b, e - b);
    }
  }
}

void nfc_spanned(const Spanned& in, Spanned& out) {
  const size_t n = in.cps.size();
  for (size_t begin = 0; begin < n;) {
    size_t end = begin + 1;
    while (end < n && in.cps[end] >= 0x300) ++end;
    nfc_segment(in, begin, end, out);
    begin = end;
  }
}

// unicode::lower, each character's result with its span. CPython's lower() is
// per character except for the final sigma, which is one character either
// way; the lengths are checked all the same.
void lower_spanned(std::u32string_view word, const CharSpan* spans, Spanned& out) {
  std::u32string whole, one;
  unicode::lower(word, whole);
  const size_t start = out.cps.size();
  for (size_t i = 0; i < word.size(); ++i) {
    one.clear();
    unicode::lower(word.substr(i, 1), one);
    for (size_t k = 0; k < one.size(); ++k) out.spans.push_back(spans[i]);
  }
  if (out.spans.size() - start != whole.size()) {
    out.spans.resize(start);
    out.spans.insert(out.spans.end(), whole.size(), cover(spans, word.size()));
  }
  out.cps += whole;
}

// unicode::nfd, each character's decomposition with its span, then canonical
// ordering (a stable sort by combining class inside each run of non-starters)
// moving the spans along.
void nfd_spanned(const Spanned& in, Spanned& out) {
  std::u32string one;
  for (size_t i = 0; i < in.cps.size(); ++i) {
    one.clear();
    unicode::nfd(std::u32string_view(&in.cps[i], 1), one);
    for (char32_t cp : one) out.push(cp, in.spans[i]);
  }
  for (size_t i = 1; i < out.cps.size(); ++i) {
    const int ccc = unicode::combining_class(out.cps[i]);
    if (ccc == 0) continue;
    for (size_t j = i; j > 0 && unicode::combining_class(out.cps[j - 1]) > ccc; --j) {
      std::swap(out.cps[j - 1], out.cps[j]);
      std::swap(out.spans[j - 1], out.spans[j]);
    }
  }
  std::u32string whole;
  unicode::nfd(in.cps, whole);
  if (whole != out.cps) {
    const CharSpan all = cover(in.spans.data(), in.spans.size());
    out.cps = whole;
    out.spans.assign(whole.size(), all);
  }
}

}  // namespace

void BasicTokenizer::split_with_offsets(std::u32string_view text, const SpannedWordSink& on_word) const {
  // Never-split strings first, leftmost and then longest, as split() does.
  std::vector<std::u32string> specials;
  for (const auto& s : never_split_) specials.emplace_back(s.begin(), s.end());  // ASCII
  size_t pos = 0;
  while (pos < text.size()) {
    size_t best = std::u32string_view::npos, best_length = 0;
    for (const auto& special : specials) {
      size_t at = text.find(special, pos);
      if (at < best || (at == best && at != std::u32string_view::npos && special.size() > best_length)) {
        best = at;
        best_length = special.size();
      }
    }
    const size_t chunk_end = std::min(best, text.size());
    if (chunk_end > pos) split_chunk_spanned(text, pos, chunk_end, on_word);
    if (best == std::u32string_view::npos) break;
    const CharSpan span{static_cast<int32_t>(best), static_cast<int32_t>(best + best_length)};
    std::vector<CharSpan> spans(best_length, span);
    on_word(text.substr(best, best_length), spans.data(), true);
    pos = best + best_length;
  }
}

void BasicTokenizer::split_chunk_spanned(std::u32string_view text, size_t begin, size_t end,
                                         const SpannedWordSink& on_word) const {
  Spanned cleaned, normalized;
  for (size_t i = begin; i < end; ++i) {  // as split_chunk
    const char32_t cp = text[i];
    const CharSpan span{static_cast<int32_t>(i), static_cast<int32_t>(i + 1)};
    if (cp == 0 || cp == 0xFFFD || unicode::is_control(cp)) continue;
    if (unicode::is_whitespace(cp)) {
      cleaned.push(' ', span);
    } else if (unicode::is_chinese_char(cp)) {
      cleaned.push(' ', span);
      cleaned.push(cp, span);
      cleaned.push(' ', span);
    } else {
      cleaned.push(cp, span);
    }
  }
  nfc_spanned(cleaned, normalized);
  const size_t n = normalized.cps.size();
  for (size_t start = 0; start < n;) {
    while (start < n && unicode::is_python_space(normalized.cps[start])) ++start;
    size_t stop = start;
    while (stop < n && !unicode::is_python_space(normalized.cps[stop])) ++stop;
    if (stop > start) {
      std::u32string_view word(normalized.cps.data() + start, stop - start);
      const CharSpan* spans = normalized.spans.data() + start;
      if (is_never_split(word)) {
        on_word(word, spans, true);
      } else {
        split_word_spanned(word, spans, on_word);
      }
    }
    start = stop;
  }
}

void BasicTokenizer::split_word_spanned(std::u32string_view word, const CharSpan* spans,
                                        const SpannedWordSink& on_word) const {
  Spanned text;
  if (lower_case_) {  // as split_word: lower, NFD, drop Mn
    Spanned lowered, decomposed;
    lower_spanned(word, spans, lowered);
    nfd_spanned(lowered, decomposed);
    for (size_t i = 0; i < decomposed.cps.size(); ++i)
      if (!unicode::is_nonspacing_mark(decomposed.cps[i])) text.push(decomposed.cps[i], decomposed.spans[i]);
  } else {
    text.cps.assign(word);
    text.spans.assign(spans, spans + word.size());
  }
  const std::u32string_view cps = text.cps;
  size_t start = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (!unicode::is_punctuation(cps[i])) continue;
    if (i > start) on_word(cps.substr(start, i - start), text.spans.data() + start, false);
    on_word(cps.substr(i, 1), text.spans.data() + i, false);
    start = i + 1;
  }
  if (start < cps.size()) on_word(cps.substr(start), text.spans.data() + start, false);
}

Tokenizer::Encoding Tokenizer::encode_with_offsets(std::string_view text) const {
  const std::u32string cps = utf8::decode_or_throw(text, "text");
  Encoding out;
  basic_.split_with_offsets(cps, [&](std::u32string_view word, const CharSpan* spans, bool special) {
    const CharSpan whole = cover(spans, word.size());
    if (special) {
      out.ids.push_back(vocab_.id(utf8::encode(word)));
      out.offsets.push_back(whole);
      return;
    }
    const size_t first = out.ids.size();
    wordpiece(word, out.ids);
    const size_t count = out.ids.size() - first;
    if (count == 1 && out.ids[first] == vocab_.special().unk) {
      out.offsets.push_back(whole);
      return;
    }
    // Each piece matched as many whole characters as its text holds.
    size_t at = 0;
    for (size_t k = 0; k < count; ++k) {
      const std::string& token = vocab_.token(out.ids[first + k]);
      const size_t skip = k == 0 ? 0 : 2;  // the "##" of a continuation
      const size_t length = utf8::decode_or_throw(std::string_view(token).substr(skip), "vocabulary").size();
      ORDO_ASSERT(length > 0 && at + length <= word.size());
      out.offsets.push_back(cover(spans + at, length));
      at += length;
    }
    ORDO_ASSERT(at == word.size());
  });
  return out;
}

}  // namespace ordo::text
