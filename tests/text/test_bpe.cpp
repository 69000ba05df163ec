// ordo's byte-level BPE against HuggingFace tokenizers: tests/data/bpe/ was
// written by tests/twin/bpe_twin.py (ByteLevelBPETokenizer trained there on
// Debian's fortunes and license texts and ordo's synthetic corpus; 2,000 test
// lines with Unicode, emoji, whitespace runs, newlines, contractions), plus
// hand-worked cases of GPT-2's pattern and byte table.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json.h"
#include "text/bpe.h"
#include "text/utf8.h"

using namespace ordo;
using namespace ordo::text;

namespace {

const std::string kDir = std::string(ORDO_SOURCE_DIR) + "/tests/data/bpe/";

std::vector<std::string> pieces(const std::string& text) {
  const std::u32string cps = utf8::decode_or_throw(text, "test");
  std::vector<std::string> out;
  for (const CharSpan& s : gpt2_pretokenize(cps)) out.push_back(utf8::encode(cps.substr(s.begin, s.end - s.begin)));
  return out;
}

// Every golden line through `tok`: ids, offsets where the golden file has them, and decode back.
void check_golden(const BpeTokenizer& tok, const json::Value& golden, const std::string& name) {
  const auto& lines = golden["lines"].as_array();
  const json::Value& g = golden["tokenizers"][name];
  REQUIRE(lines.size() >= 2000);
  REQUIRE(tok.id_bound() == g["vocab_size"].as_int());
  const auto& ids = g["ids"].as_array();
  const auto& offsets = g["offsets"].as_array();
  size_t mismatches = 0, tokens = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i].as_string();
    const Encoding e = tok.encode_with_offsets(line);
    std::vector<int32_t> expected;
    for (const json::Value& v : ids[i].as_array()) expected.push_back(static_cast<int32_t>(v.as_int()));
    tokens += expected.size();
    if (e.ids != expected && ++mismatches <= 5) {
      INFO(name << " line " << i << ": " << line);
      CHECK(e.ids == expected);
    }
    if (i < offsets.size()) {
      std::vector<int32_t> flat;
      for (const CharSpan& s : e.offsets) flat.push_back(s.begin), flat.push_back(s.end);
      std::vector<int32_t> want;
      for (const json::Value& v : offsets[i].as_array()) want.push_back(static_cast<int32_t>(v.as_int()));
      INFO(name << " offsets of line " << i << ": " << line);
      CHECK(flat == want);
    }
    if (tok.decode(e.ids) != line && ++mismatches <= 5) {
      INFO(name << " decode of line " << i);
      CHECK(tok.decode(e.ids) == line);
    }
  }
  CHECK(mismatches == 0);
  CHECK(tokens > 30000);
}

}  // namespace

TEST_CASE("GPT-2's byte-to-unicode table", "[text][bpe]") {
  // Printable bytes stand for themselves; the others take U+0100 on in byte
  // order: 0x00..0x20 are the first 33, 0x7F..0xA0 the next 34, 0xAD the last.
  CHECK(byte_to_unicode('A') == U'A');
  CHECK(byte_to_unicode('~') == U'~');
  CHECK(byte_to_unicode(0x00) == 0x100);
  CHECK(byte_to_unicode('\n') == 0x10A);  // "Ċ"
  CHECK(byte_to_unicode(' ') == 0x120);   // "Ġ"
  CHECK(byte_to_unicode(0x7F) == 0x121);
  CHECK(byte_to_unicode(0xA0) == 0x142);
  CHECK(byte_to_unicode(0xAD) == 0x143);
  CHECK(byte_to_unicode(0xAE) == 0xAE);
  CHECK(byte_to_unicode(0xFF) == 0xFF);
}

TEST_CASE("GPT-2's pre-tokenizing pattern, worked by hand", "[text][bpe]") {
  using V = std::vector<std::string>;
  CHECK(pieces("Hello world") == V{"Hello", " world"});
  // A run of spaces before a word leaves its last space to the word (\s+(?!\S)).
  CHECK(pieces("a   b") == V{"a", "  ", " b"});
  CHECK(pieces("a  ") == V{"a", "  "});   // at the end the whole run
  CHECK(pieces("a \nb") == V{"a", " ", "\n", "b"});  // only U+0020 joins a word; "\n" then "b"
  CHECK(pieces("x\n\ny") == V{"x", "\n", "\n", "y"});
  CHECK(pieces("don't") == V{"don", "'t"});
  CHECK(pieces("I'LL") == V{"I", "'", "LL"});  // contractions are lower-case only
  CHECK(pieces("we'll've") == V{"we", "'ll", "'ve"});
  CHECK(pieces("'sup") == V{"'s", "up"});
  CHECK(pieces("abc123 45") == V{"abc", "123", " 45"});
  CHECK(pieces("hi!!! ?") == V{"hi", "!!!", " ?"});
  CHECK(pieces("caf\u00e9 \u00bd") == V{"caf\u00e9", " \u00bd"});  // é a letter, ½ a number (No)
  CHECK(pieces("\u00a0x") == V{"\u00a0", "x"});  // U+00A0 is \s but not the space that joins a word
  CHECK(pieces("a\u001cb") == V{"a", "\u001c", "b"});  // U+001C is not \s (Python's isspace says it is)
}

TEST_CASE("byte-level BPE equals HF tokenizers on the golden lines", "[text][bpe][golden]") {
  const json::Value golden = json::parse(read_file(kDir + "golden.json"));
  const BpeTokenizer roberta = BpeTokenizer::load(kDir + "roberta/vocab.json", kDir + "roberta/merges.txt");
  check_golden(roberta, golden, "roberta");
  const SequenceLayout l = roberta.layout();
  CHECK(l.cls == roberta.id("<s>"));
  CHECK(l.sep == roberta.id("</s>"));
  CHECK(l.pair_separators == 2);
  CHECK(l.second_segment == 0);
  CHECK(l.pad == roberta.id("<pad>"));
  CHECK(l.mask == roberta.id("<mask>"));

  const BpeTokenizer gpt2 = BpeTokenizer::load(kDir + "gpt2/vocab.json", kDir + "gpt2/merges.txt");
  check_golden(gpt2, golden, "gpt2");
  CHECK(gpt2.layout().cls == -1);  // GPT-2 adds nothing around a text
  CHECK(gpt2.layout().sep == -1);
  // HF's other format, the same tokenizer.
  const BpeTokenizer from_json = BpeTokenizer::load_tokenizer_json(kDir + "gpt2/tokenizer.json");
  check_golden(from_json, golden, "gpt2");
}

TEST_CASE("byte-level BPE: words for probing, save and reload, bad files", "[text][bpe]") {
  const BpeTokenizer tok = BpeTokenizer::load(kDir + "roberta/vocab.json", kDir + "roberta/merges.txt");
  CHECK_FALSE(tok.is_word(tok.id("<s>")));
  const int32_t the = tok.id("\xc4\xa0the");  // "Ġthe"
  REQUIRE(the >= 0);
  CHECK(tok.is_word(the));
  CHECK_FALSE(tok.is_word(tok.id("the")));  // no space before it: a word piece
  CHECK(tok.is_special(tok.id("<mask>")));
  // Special tokens in the text are cut out whole.
  const std::vector<int32_t> ids = tok.encode("<s>x</s>");
  REQUIRE(ids.size() >= 3);
  CHECK(ids.front() == tok.id("<s>"));
  CHECK(ids.back() == tok.id("</s>"));

  const std::string dir = std::filesystem::temp_directory_path().string() + "/ordo_bpe_save_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  tok.save(dir);
  const BpeTokenizer again = BpeTokenizer::load(dir + "/vocab.json", dir + "/merges.txt");
  const std::string text = "Ünïcödé 😀 don't  stop\n";
  CHECK(again.encode(text) == tok.encode(text));
  CHECK(again.merge_count() == tok.merge_count());

  write_file_atomic(dir + "/bad_merges.txt", "#version: 0.2\na b c\n");
  CHECK_THROWS_WITH(BpeTokenizer::load(dir + "/vocab.json", dir + "/bad_merges.txt"),
                    Catch::Contains("bad_merges.txt line 2") && Catch::Contains("two tokens"));
  write_file_atomic(dir + "/unknown_merge.txt", "#version: 0.2\nqqq zzz\n");
  CHECK_THROWS_WITH(BpeTokenizer::load(dir + "/vocab.json", dir + "/unknown_merge.txt"),
                    Catch::Contains("merge 1") && Catch::Contains("not in the vocabulary"));
  // Ids 0..N-1 for N tokens: with id 5 missing, the error names 5, not the token past the end.
  const json::Value full = json::parse(read_file(dir + "/vocab.json"));
  const int64_t last = static_cast<int64_t>(full.size()) - 1;
  json::Value gap = json::Value::object();
  for (const auto& [token, id] : full.items()) gap[token] = id.as_int() == 5 ? last + 1 : id.as_int();
  write_file_atomic(dir + "/gap_vocab.json", json::dump(gap));
  CHECK_THROWS_WITH(BpeTokenizer::load(dir + "/gap_vocab.json", dir + "/merges.txt"),
                    Catch::Contains("gap_vocab.json: no token has id 5:") &&
                        Catch::Contains("ids 0.." + std::to_string(last) + " without gaps") &&
                        Catch::Contains("has id " + std::to_string(last + 1)));
  write_file_atomic(dir + "/small_vocab.json", "{\"a\": 0, \"b\": 1}");
  CHECK_THROWS_WITH(BpeTokenizer::load(dir + "/small_vocab.json", dir + "/merges.txt"),
                    Catch::Contains("has no token") && Catch::Contains("256 bytes"));
  std::filesystem::remove_all(dir);
}
