// The Unicode character data the tokenizers need (BERT's WordPiece; GPT-2's byte-level BPE), with the exact
// definitions of HuggingFace's Python BertTokenizer (transformers
// tokenization_python.py / tokenization_bert_legacy.py) and of CPython's str
// methods it relies on. Tables are generated from Python's unicodedata by
// scripts/gen_unicode_tables.py into text/unicode_tables.inc.
#pragma once

#include <string>
#include <string_view>

namespace ordo::text::unicode {

// The Unicode version the tables were generated from ("14.0.0").
const char* version();

// HF _is_control: general category C* (Cc, Cf, Cn, Co, Cs), except \t \n \r,
// which count as whitespace.
bool is_control(char32_t cp);
// HF _is_whitespace: ' ', \t, \n, \r or general category Zs.
bool is_whitespace(char32_t cp);
// HF _is_punctuation: ASCII 33-47, 58-64, 91-96, 123-126, or general category P*.
bool is_punctuation(char32_t cp);
// HF _is_chinese_char: the CJK Unified Ideograph blocks (not Hangul, kana...).
bool is_chinese_char(char32_t cp);
// General category Mn (what accent stripping drops after NFD).
bool is_nonspacing_mark(char32_t cp);
// CPython str.isspace() for one character: what str.split() splits on.
bool is_python_space(char32_t cp);
// CPython str.isalnum() for one character (isalpha, isdecimal, isdigit or
// isnumeric): what Python's regex \w matches, less the underscore.
bool is_alnum(char32_t cp);
// The classes of GPT-2's pre-tokenizing pattern (text/bpe.h) as HuggingFace
// tokenizers' regex engine (Oniguruma) reads them: \p{L} is general category
// L*, \p{N} is N*, and \s is \t \n \v \f \r, U+0085 and the separators
// Zs, Zl, Zp (Unicode's White_Space; not U+001C..U+001F, which str.isspace takes).
bool is_letter(char32_t cp);
bool is_number(char32_t cp);
bool is_regex_space(char32_t cp);
// Canonical combining class (0 for starters).
int combining_class(char32_t cp);

// CPython str.lower(): full lower-case mapping, including one-to-many
// mappings (U+0130) and the final-sigma context rule. Appends to `out`.
void lower(std::u32string_view text, std::u32string& out);
// Canonical decomposition (NFD) and canonical composition (NFC). Append to `out`.
void nfd(std::u32string_view text, std::u32string& out);
void nfc(std::u32string_view text, std::u32string& out);

}  // namespace ordo::text::unicode
