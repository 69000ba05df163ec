// Hand-worked cases for the UTF-8 codec, the Unicode tables and every rule of
// the BERT tokenizer. Expected values come from the Unicode standard and from
// working BERT's rules by hand, not from running ordo.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

#include "base/error.h"
#include "base/file_io.h"
#include "text/tokenizer.h"
#include "text/unicode.h"
#include "text/utf8.h"

using namespace ordo::text;
using Catch::Matchers::Contains;
using Strings = std::vector<std::string>;

namespace {

std::string temp_path(const std::string& name) {
  return "/tmp/ordo_test_tokenizer_" + std::to_string(::getpid()) + "_" + name;
}

std::u32string nfd(std::u32string_view s) {
  std::u32string out;
  unicode::nfd(s, out);
  return out;
}
std::u32string nfc(std::u32string_view s) {
  std::u32string out;
  unicode::nfc(s, out);
  return out;
}
std::u32string lower(std::u32string_view s) {
  std::u32string out;
  unicode::lower(s, out);
  return out;
}

// A small vocabulary: specials, a few words and ## pieces.
Vocab small_vocab() {
  return Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "the", "dog",
                             "cat", "play", "##ing", "##ed", "hello", ",", ".", "!", "?", "¿", "—", "que", "中",
                             "a", "b", "c", "##a", "##b", "##c", "x", "##x"},
                            "small_vocab");
}

}  // namespace

TEST_CASE("utf8 decodes valid sequences of every length", "[text][utf8]") {
  std::u32string out;
  REQUIRE(utf8::decode("a\xC3\xA9\xE2\x80\x94\xF0\x9F\x98\x80", out));
  CHECK(out == std::u32string{U'a', 0xE9, 0x2014, 0x1F600});
  CHECK(utf8::encode(out) == "a\xC3\xA9\xE2\x80\x94\xF0\x9F\x98\x80");
  // The extremes of each length.
  CHECK(utf8::decode_or_throw("\x7F\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF", "t") ==
        std::u32string{0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF});
}

TEST_CASE("utf8 rejects overlong, surrogate, truncated and out-of-range input", "[text][utf8]") {
  auto reason = [](std::string_view bytes) {
    utf8::Invalid invalid;
    std::u32string out;
    bool ok = utf8::decode(bytes, out, &invalid);
    return ok ? std::string("valid") : std::to_string(invalid.offset) + ": " + invalid.reason;
  };
  CHECK(reason("ab\xC0\x80") == "2: overlong encoding");             // NUL in two bytes
  CHECK(reason("\xE0\x80\xAF") == "0: overlong encoding");           // '/' in three bytes
  CHECK(reason("\xF0\x8F\xBF\xBF") == "0: overlong encoding");       // U+FFFF in four bytes
  CHECK(reason("x\xED\xA0\x80") == "1: UTF-16 surrogate code point");  // U+D800
  CHECK(reason("\xED\xBF\xBF") == "0: UTF-16 surrogate code point");   // U+DFFF
  CHECK(reason("\xF4\x90\x80\x80") == "0: code point above U+10FFFF");
  CHECK(reason("\xF8\x88\x80\x80\x80") == "0: byte 0xF8-0xFF never occurs in UTF-8");
  CHECK(reason("ok\xE2\x82") == "2: truncated sequence at end of input");
  CHECK(reason("\xE2\x82z") == "0: truncated sequence (expected a continuation byte)");
  CHECK(reason("\x80") == "0: continuation byte without a lead byte");
  CHECK_THROWS_WITH(utf8::decode_or_throw("ab\xFF", "my.txt line 3"),
                    Contains("invalid UTF-8 in my.txt line 3 at byte 2"));
}

TEST_CASE("unicode normalisation of precomposed letters", "[text][unicode]") {
  CHECK(nfd(U"\u00E9") == U"e\u0301");                    // é
  CHECK(nfd(U"\u01D5") == U"U\u0308\u0304");              // Ǖ: decomposes twice
  CHECK(nfd(U"\u212B") == U"A\u030A");                    // ANGSTROM SIGN -> Å -> A + ring
  CHECK(nfd(U"\uD55C") == U"\u1112\u1161\u11AB");         // 한: Hangul, algorithmic
  CHECK(nfd(U"a\u0301\u0323") == U"a\u0323\u0301");       // canonical order: ccc 220 before 230
  CHECK(nfd(U"plain ascii") == U"plain ascii");
  CHECK(nfc(U"e\u0301") == U"\u00E9");
  CHECK(nfc(U"\u212B") == U"\u00C5");                     // singleton: never recomposed to U+212B
  CHECK(nfc(U"\u1112\u1161\u11AB") == U"\uD55C");
  CHECK(nfc(U"a\u0323\u0301") == U"\u1EA1\u0301");        // ạ then the acute (no precomposed ạ́)
  CHECK(unicode::combining_class(0x0301) == 230);
  CHECK(unicode::combining_class(0x0323) == 220);
  CHECK(unicode::combining_class('a') == 0);
}

TEST_CASE("unicode lower-casing follows Python's str.lower", "[text][unicode]") {
  CHECK(lower(U"HeLLo") == U"hello");
  CHECK(lower(U"\u00C9T\u00C9") == U"\u00E9t\u00E9");              // ÉTÉ
  CHECK(lower(U"\u039F\u0394\u039F\u03A3") == U"\u03BF\u03B4\u03BF\u03C2");  // ΟΔΟΣ -> οδος, final sigma
  CHECK(lower(U"\u03A3") == U"\u03C3");                             // alone: not final
  CHECK(lower(U"\u03A3\u0391") == U"\u03C3\u03B1");                 // word-initial: not final
  CHECK(lower(U"\u0130") == U"i\u0307");                            // İ -> i + combining dot
}

TEST_CASE("unicode character classes used by BERT", "[text][unicode]") {
  CHECK(unicode::is_punctuation('$'));      // ASCII symbol: punctuation for BERT
  CHECK(unicode::is_punctuation('^'));
  CHECK(unicode::is_punctuation(0x00BF));   // ¿ Po
  CHECK(unicode::is_punctuation(0x2014));   // — Pd
  CHECK_FALSE(unicode::is_punctuation(0x00A7 + 1));  // ¨ is Sk, not P*
  CHECK_FALSE(unicode::is_punctuation('a'));
  CHECK(unicode::is_whitespace(0x00A0));    // NO-BREAK SPACE, Zs
  CHECK(unicode::is_whitespace(0x3000));    // IDEOGRAPHIC SPACE, Zs
  CHECK_FALSE(unicode::is_whitespace(0x2028));  // LINE SEPARATOR is Zl
  CHECK(unicode::is_python_space(0x2028));      // ... but str.split() splits on it
  CHECK(unicode::is_control(0x07));
  CHECK(unicode::is_control(0x200B));        // ZERO WIDTH SPACE is Cf
  CHECK_FALSE(unicode::is_control('\t'));
  CHECK(unicode::is_chinese_char(0x4E2D));   // 中
  CHECK_FALSE(unicode::is_chinese_char(0xD55C));  // 한 is Hangul, not CJK
  CHECK(unicode::is_nonspacing_mark(0x0301));
}

TEST_CASE("basic tokenizer: accents, case, punctuation, CJK", "[text][tokenizer]") {
  BasicTokenizer lower(true), cased(false);
  CHECK(lower.words("Héllo") == Strings{"hello"});
  CHECK(cased.words("Héllo") == Strings{"Héllo"});
  CHECK(lower.words("NAÏVE Café") == Strings{"naive", "cafe"});
  CHECK(lower.words("¿Qué?") == Strings{"¿", "que", "?"});
  CHECK(lower.words("well—done") == Strings{"well", "—", "done"});
  CHECK(lower.words("a.b,c") == Strings{"a", ".", "b", ",", "c"});
  CHECK(lower.words("$5^2`~") == Strings{"$", "5", "^", "2", "`", "~"});
  CHECK(lower.words("ab中文cd") == Strings{"ab", "中", "文", "cd"});
  CHECK(lower.words("한국어") == Strings{"\u1112\u1161\u11AB\u1100\u116E\u11A8\u110B\u1165"});  // one word, NFD jamo
}

TEST_CASE("basic tokenizer: control characters and whitespace kinds", "[text][tokenizer]") {
  BasicTokenizer lower(true);
  CHECK(lower.words("a\x07" "b") == Strings{"ab"});                 // BEL dropped
  CHECK(lower.words(std::string("a\0b", 3)) == Strings{"ab"});      // NUL dropped
  CHECK(lower.words("a\uFFFDb") == Strings{"ab"});                  // REPLACEMENT CHARACTER dropped
  CHECK(lower.words("zero\u200Bwidth") == Strings{"zerowidth"});    // Cf dropped
  CHECK(lower.words("a\tb\nc\rd e") == Strings{"a", "b", "c", "d", "e"});
  CHECK(lower.words("a\u00A0b\u3000c\u2009d") == Strings{"a", "b", "c", "d"});
  CHECK(lower.words("a\u2028b") == Strings{"a", "b"});              // kept by cleaning, split by str.split
  CHECK(lower.words("a\x0b" "b") == Strings{"ab"});                 // VT is Cc: dropped, not a space
  CHECK(lower.words("   ").empty());
  CHECK(lower.words("").empty());
}

TEST_CASE("basic tokenizer keeps special tokens whole", "[text][tokenizer]") {
  BasicTokenizer lower(true);
  CHECK(lower.words("[CLS] Hi [SEP]") == Strings{"[CLS]", "hi", "[SEP]"});
  CHECK(lower.words("x[MASK]y") == Strings{"x", "[MASK]", "y"});
  CHECK(lower.words("[cls]") == Strings{"[", "cls", "]"});  // specials are case-sensitive
}

TEST_CASE("wordpiece: greedy longest match, ## pieces and (UNK)", "[text][tokenizer]") {
  Tokenizer tokenizer(small_vocab());
  CHECK(tokenizer.tokenize("unaffable") == Strings{"un", "##aff", "##able"});
  CHECK(tokenizer.tokenize("playing played") == Strings{"play", "##ing", "play", "##ed"});
  CHECK(tokenizer.tokenize("abc") == Strings{"a", "##b", "##c"});
  // "unaffablez": the pieces run out at "z", so the whole word is one [UNK].
  CHECK(tokenizer.tokenize("the unaffablez dog") == Strings{"the", "[UNK]", "dog"});
  CHECK(tokenizer.tokenize("zzz") == Strings{"[UNK]"});
  CHECK(tokenizer.tokenize("[CLS] the dog [SEP]") == Strings{"[CLS]", "the", "dog", "[SEP]"});
  CHECK(tokenizer.encode("the dog") == std::vector<int32_t>{8, 9});
  CHECK(tokenizer.tokenize("¿Que?") == Strings{"¿", "que", "?"});
}

TEST_CASE("wordpiece: a word of 100 characters is split, one of 101 is (UNK)", "[text][tokenizer]") {
  Tokenizer tokenizer(small_vocab());
  Strings hundred{"x"};
  for (int i = 1; i < 100; ++i) hundred.push_back("##x");
  CHECK(tokenizer.tokenize(std::string(100, 'x')) == hundred);
  CHECK(tokenizer.tokenize(std::string(101, 'x')) == Strings{"[UNK]"});
  // The limit counts code points, not bytes: 100 two-byte letters (à, stripped to a) pass.
  std::string accented;
  for (int i = 0; i < 100; ++i) accented += "\xC3\xA0";
  Strings a_pieces{"a"};
  for (int i = 1; i < 100; ++i) a_pieces.push_back("##a");
  CHECK(tokenizer.tokenize(accented) == a_pieces);
  CHECK(tokenizer.tokenize(accented + "\xC3\xA0") == Strings{"[UNK]"});
  Tokenizer cased(small_vocab(), TokenizerOptions{false, 3});
  CHECK(cased.tokenize("abc abcx") == Strings{"a", "##b", "##c", "[UNK]"});
}

TEST_CASE("tokenize then detokenize round-trips lower-case ASCII text", "[text][tokenizer]") {
  Tokenizer tokenizer(small_vocab());
  for (std::string text : {"the dog , the cat .", "unaffable play playing played", "the cat ! abc ?"}) {
    CHECK(detokenize(tokenizer.tokenize(text)) == text);
    CHECK(tokenizer.decode(tokenizer.encode(text)) == text);
  }
  CHECK(detokenize({"un", "##aff", "##able", "dog"}) == "unaffable dog");
  CHECK(detokenize({}).empty());
}

TEST_CASE("vocab.txt in the HuggingFace layout loads and saves", "[text][vocab]") {
  std::string path = temp_path("vocab.txt");
  ordo::write_file_atomic(path, "[PAD]\n[unused0]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n##s\ncafé\n");
  Vocab vocab = Vocab::load(path);
  CHECK(vocab.size() == 9);
  CHECK(vocab.special().pad == 0);
  CHECK(vocab.special().unk == 2);
  CHECK(vocab.special().cls == 3);
  CHECK(vocab.special().sep == 4);
  CHECK(vocab.special().mask == 5);
  CHECK(vocab.id("the") == 6);
  CHECK(vocab.id("café") == 8);
  CHECK(vocab.id("absent") == -1);
  CHECK(vocab.is_continuation(7));
  CHECK_FALSE(vocab.is_continuation(6));
  CHECK(vocab.token(7) == "##s");
  std::string copy = temp_path("vocab_copy.txt");
  vocab.save(copy);
  CHECK(ordo::read_file(copy) == ordo::read_file(path));
  std::remove(path.c_str());
  std::remove(copy.c_str());
}

TEST_CASE("bad vocabularies are clear errors naming the file and line", "[text][vocab]") {
  std::string path = temp_path("bad_vocab.txt");
  ordo::write_file_atomic(path, "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n");
  CHECK_THROWS_WITH(Vocab::load(path), Contains(path) && Contains("lacks the special token(s) [MASK]"));
  ordo::write_file_atomic(path, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ndog\nthe\n");
  CHECK_THROWS_WITH(Vocab::load(path), Contains("'the' appears twice, on lines 6 and 8"));
  ordo::write_file_atomic(path, "[PAD]\n[UNK]\n\n[CLS]\n[SEP]\n[MASK]\n");
  CHECK_THROWS_WITH(Vocab::load(path), Contains(path + " line 3 is empty"));
  ordo::write_file_atomic(path, "[PAD]\r\n[UNK]\r\n");
  CHECK_THROWS_WITH(Vocab::load(path), Contains("line 1 holds a carriage return"));
  ordo::write_file_atomic(path, "\xEF\xBB\xBF[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n");
  CHECK_THROWS_WITH(Vocab::load(path), Contains(path + " begins with a UTF-8 byte-order mark"));
  ordo::write_file_atomic(path, "[PAD]\n[UNK]\n\xC3(\n");
  CHECK_THROWS_WITH(Vocab::load(path), Contains(path + " line 3: invalid UTF-8"));
  ordo::write_file_atomic(path, "");
  CHECK_THROWS_WITH(Vocab::load(path), Contains("is empty"));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(Vocab::load(path), Contains(path));
}

TEST_CASE("tokenizer rejects invalid UTF-8 text", "[text][tokenizer]") {
  Tokenizer tokenizer(small_vocab());
  CHECK_THROWS_WITH(tokenizer.tokenize("the \xED\xA0\x80 dog"), Contains("invalid UTF-8 in text at byte 4"));
}

TEST_CASE("a vocab.txt token of a megabyte loads, encodes and decodes: the trie is built without recursion",
          "[text][vocab]") {
  // The trie has a node per byte of a piece; a build recursing once per node
  // overflowed the stack on a 100,000-byte token.
  const std::string huge(1000000, 'x');
  const std::string path = temp_path("huge_vocab.txt");
  ordo::write_file_atomic(path, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nx\n##x\n" + huge + "\n");
  const Vocab vocab = Vocab::load(path);
  std::remove(path.c_str());
  REQUIRE(vocab.id(huge) == 7);
  // BERT's limit: a word of more than 100 characters is [UNK] before any lookup,
  // so the long token is never a piece, but it stays a token to decode.
  const Tokenizer bert(vocab);
  CHECK(bert.tokenize("xxx") == Strings{"x", "##x", "##x"});
  CHECK(bert.tokenize(huge) == Strings{"[UNK]"});
  CHECK(bert.decode({7}) == huge);
  // With a limit above its length the token is the longest match.
  const Tokenizer wide(vocab, TokenizerOptions{true, 2000000});
  CHECK(wide.encode(huge) == std::vector<int32_t>{7});
  CHECK(wide.encode(huge + "x") == std::vector<int32_t>{7, 6});
}

TEST_CASE("PieceTrie: the longest piece, through a path a million bytes deep", "[text][tokenizer]") {
  const std::string deep(1000000, 'a');
  const PieceTrie trie({{deep, 7}, {"a", 3}, {"ab", 4}, {"b", 5}});
  CHECK(trie.longest_prefix(deep) == std::pair<int32_t, size_t>{7, 1000000});
  CHECK(trie.longest_prefix(deep + "b") == std::pair<int32_t, size_t>{7, 1000000});
  CHECK(trie.longest_prefix(deep.substr(1) + "b") == std::pair<int32_t, size_t>{3, 1});
  CHECK(trie.longest_prefix("ab") == std::pair<int32_t, size_t>{4, 2});
  CHECK(trie.longest_prefix("ba") == std::pair<int32_t, size_t>{5, 1});
  CHECK(trie.longest_prefix("c") == std::pair<int32_t, size_t>{-1, 0});
}
