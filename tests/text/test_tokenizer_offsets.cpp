// Tokenizer::encode_with_offsets: each token's span of original code points.
// Expected spans are worked by hand from the text (indices counted in the
// comments); the golden sentences check that the ids are encode()'s and that
// every span's text tokenizes back to the piece it is said to hold.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

using namespace ordo::text;

namespace {

Vocab offsets_vocab() {
  return Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "the", "dog",
                             "cat", "hello", "naive", "cafe", ",", ".", "!", "?", "¿", "que", "中", "a", "b", "c",
                             "##a", "##b", "##c", "x", "i", "\u1112", "##\u1161", "##\u11ab", "Dog", "##s"},
                            "offsets_vocab");
}

struct Piece {
  std::string token;
  int32_t begin, end;
  bool operator==(const Piece& o) const { return token == o.token && begin == o.begin && end == o.end; }
};

std::ostream& operator<<(std::ostream& os, const Piece& p) {
  return os << "{" << p.token << " [" << p.begin << "," << p.end << ")}";
}

std::vector<Piece> pieces(const Tokenizer& tokenizer, const std::string& text) {
  const Tokenizer::Encoding e = tokenizer.encode_with_offsets(text);
  REQUIRE(e.ids.size() == e.offsets.size());
  std::vector<Piece> out;
  for (size_t i = 0; i < e.ids.size(); ++i)
    out.push_back({tokenizer.vocab().token(e.ids[i]), e.offsets[i].begin, e.offsets[i].end});
  return out;
}

}  // namespace

TEST_CASE("offsets map tokens back through accents, case and punctuation", "[text][tokenizer][offsets]") {
  const Tokenizer lower(offsets_vocab());
  // H0 é1 l2 l3 o4 ,5 _6 n7 a8 ï9 v10 e11 _12 c13 a14 f15 é16 !17
  CHECK(pieces(lower, "Héllo, naïve café!") ==
        std::vector<Piece>{{"hello", 0, 5}, {",", 5, 6}, {"naive", 7, 12}, {"cafe", 13, 17}, {"!", 17, 18}});
  // ¿0 Q1 u2 é3 ?4 : the inverted mark and the question mark are words of their own.
  CHECK(pieces(lower, "¿Qué?") == std::vector<Piece>{{"¿", 0, 1}, {"que", 1, 4}, {"?", 4, 5}});
  // A decomposed accent (e + U+0301, two code points) belongs to the token: c0 a1 f2 e3 ◌́4.
  CHECK(pieces(lower, "cafe\u0301") == std::vector<Piece>{{"cafe", 0, 5}});
  // U+0130 lower-cases to i + U+0307; the mark is stripped, the span stays the one character.
  CHECK(pieces(lower, "\u0130") == std::vector<Piece>{{"i", 0, 1}});
  // a + U+0301 + U+0323: NFC makes ạ (a with U+0323) followed by U+0301; both come
  // from the three characters, and stripping leaves "a" covering all of them.
  CHECK(pieces(lower, "a\u0301\u0323 b") == std::vector<Piece>{{"a", 0, 3}, {"b", 4, 5}});
}

TEST_CASE("offsets of ## pieces, (UNK), special tokens and CJK", "[text][tokenizer][offsets]") {
  const Tokenizer lower(offsets_vocab());
  // u0 n1 a2 f3 f4 a5 b6 l7 e8
  CHECK(pieces(lower, "unaffable") == std::vector<Piece>{{"un", 0, 2}, {"##aff", 2, 5}, {"##able", 5, 9}});
  // "xyzzy" has no piece for 'y': the whole word is [UNK], spanning it: x0..y4 _5 d6 o7 g8
  CHECK(pieces(lower, "xyzzy dog") == std::vector<Piece>{{"[UNK]", 0, 5}, {"dog", 6, 9}});
  // [0..4] _5 h6..o10 _11 [12..16]
  CHECK(pieces(lower, "[CLS] hello [SEP]") == std::vector<Piece>{{"[CLS]", 0, 5}, {"hello", 6, 11}, {"[SEP]", 12, 17}});
  // A special token glued to text is still cut out: d0 o1 g2 [3..7] c8 a9 t10
  CHECK(pieces(lower, "dog[SEP]cat") == std::vector<Piece>{{"dog", 0, 3}, {"[SEP]", 3, 8}, {"cat", 8, 11}});
  // a0 b1 中2 c3 a4 b5: the ideograph is a word of its own.
  CHECK(pieces(lower, "ab中cab") ==
        std::vector<Piece>{{"a", 0, 1}, {"##b", 1, 2}, {"中", 2, 3}, {"c", 3, 4}, {"##a", 4, 5}, {"##b", 5, 6}});
}

TEST_CASE("offsets skip dropped characters and split on every whitespace", "[text][tokenizer][offsets]") {
  const Tokenizer lower(offsets_vocab());
  // A zero-width space (Cf) is dropped inside the word: h0 e1 ZWSP2 l3 l4 o5.
  CHECK(pieces(lower, "he\u200Bllo") == std::vector<Piece>{{"hello", 0, 6}});
  // NO-BREAK SPACE and a tab separate words: d0 o1 g2 NBSP3 c4 a5 t6 \t7 .8
  CHECK(pieces(lower, "dog\u00A0cat\t.") == std::vector<Piece>{{"dog", 0, 3}, {"cat", 4, 7}, {".", 8, 9}});
  // Leading and trailing spaces and line breaks: _0 \n1 d2 o3 g4 _5
  CHECK(pieces(lower, " \ndog ") == std::vector<Piece>{{"dog", 2, 5}});
  CHECK(pieces(lower, "").empty());
  CHECK(pieces(lower, " \t ").empty());
}

TEST_CASE("offsets of a Hangul syllable spelled in jamo cover the jamo it is composed of",
          "[text][tokenizer][offsets]") {
  const Tokenizer lower(offsets_vocab());
  // !0 ᄒ1 ᅡ2 ᆫ3: NFC composes the three jamo (all starters) into 한, whose span
  // is theirs; the '!' in the same NFC segment keeps its own one character.
  CHECK(pieces(lower, "!\u1112\u1161\u11AB") ==
        std::vector<Piece>{{"!", 0, 1}, {"\u1112", 1, 4}, {"##\u1161", 1, 4}, {"##\u11ab", 1, 4}});
  // x0 _1 ᄒ2 ᅡ3 ᆫ4
  CHECK(pieces(lower, "x \u1112\u1161\u11AB") ==
        std::vector<Piece>{{"x", 0, 1}, {"\u1112", 2, 5}, {"##\u1161", 2, 5}, {"##\u11ab", 2, 5}});
  // The precomposed syllable is one code point: all three pieces span it.
  CHECK(pieces(lower, "\uD55C") == std::vector<Piece>{{"\u1112", 0, 1}, {"##\u1161", 0, 1}, {"##\u11ab", 0, 1}});
  // "x" then the jamo in one word: no "##\u1112" piece, so the word is [UNK], all of it.
  CHECK(pieces(lower, "x\u1112\u1161\u11AB") == std::vector<Piece>{{"[UNK]", 0, 4}});
}

TEST_CASE("offsets with lower-casing off keep case and accents", "[text][tokenizer][offsets]") {
  const Tokenizer cased(offsets_vocab(), TokenizerOptions{false, 100});
  // D0 o1 g2 s3 ,4 _5 d6 o7 g8
  CHECK(pieces(cased, "Dogs, dog") == std::vector<Piece>{{"Dog", 0, 3}, {"##s", 3, 4}, {",", 4, 5}, {"dog", 6, 9}});
  // é is not in the vocabulary: [UNK] over the word c0 a1 f2 é3
  CHECK(pieces(cased, "café") == std::vector<Piece>{{"[UNK]", 0, 4}});
}

TEST_CASE("offsets refuse invalid UTF-8 as encode does", "[text][tokenizer][offsets][errors]") {
  const Tokenizer lower(offsets_vocab());
  CHECK_THROWS_AS(lower.encode_with_offsets("ab\xFF"), ordo::Error);
}

TEST_CASE("encode_with_offsets gives encode's ids on the golden sentences, each span holding its piece",
          "[text][tokenizer][offsets]") {
  const std::string dir = std::string(ORDO_SOURCE_DIR) + "/tests/data/";
  const ordo::json::Value golden = ordo::json::parse(ordo::read_file(dir + "tokenizer_golden.json"));
  const Vocab vocab = Vocab::load(dir + "tokenizer_vocab.txt");
  const Tokenizer lower(vocab, TokenizerOptions{true, 100}), cased(vocab, TokenizerOptions{false, 100});
  const BasicTokenizer basic_lower(true), basic_cased(false);
  int checked_spans = 0;
  for (const auto& c : golden["cases"].as_array()) {
    const std::string& text = c["text"].as_string();
    const bool lower_case = c["lower_case"].as_bool();
    INFO("text: " << text << "  lower_case: " << lower_case);
    const Tokenizer& tokenizer = lower_case ? lower : cased;
    const BasicTokenizer& basic = lower_case ? basic_lower : basic_cased;
    std::vector<int32_t> ids;
    for (const auto& v : c["ids"].as_array()) ids.push_back(static_cast<int32_t>(v.as_int()));
    const Tokenizer::Encoding e = tokenizer.encode_with_offsets(text);
    REQUIRE(e.ids == ids);
    const std::u32string cps = utf8::decode_or_throw(text, "golden text");
    int32_t previous_begin = 0;
    for (size_t i = 0; i < e.ids.size(); ++i) {
      const CharSpan span = e.offsets[i];
      INFO("token " << i << " '" << vocab.token(e.ids[i]) << "' span [" << span.begin << ", " << span.end << ")");
      CHECK(0 <= span.begin);
      CHECK(span.begin < span.end);
      CHECK(span.end <= static_cast<int32_t>(cps.size()));
      CHECK(span.begin >= previous_begin);  // tokens come in text order
      previous_begin = span.begin;
      if (e.ids[i] == vocab.special().unk || vocab.is_special(e.ids[i])) continue;
      // The span's own text, through the basic tokenizer, holds the piece.
      std::string piece = vocab.token(e.ids[i]);
      if (vocab.is_continuation(e.ids[i])) piece = piece.substr(2);
      std::string normalized;
      for (const std::string& w : basic.words(utf8::encode(cps.substr(span.begin, span.end - span.begin))))
        normalized += w;
      CHECK(normalized.find(piece) != std::string::npos);
      ++checked_spans;
    }
  }
  CHECK(checked_spans > 200);
}
