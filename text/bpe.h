// GPT-2's byte-level BPE (Radford et al. 2019), the tokenizer of GPT-2 and
// RoBERTa, equal token for token to HuggingFace tokenizers' ByteLevel BPE
// (ByteLevelBPETokenizer, GPT2TokenizerFast, RobertaTokenizerFast with their
// defaults: no normaliser, no prefix space, untrimmed offsets):
//
//   1. special tokens in the raw text (<s>, </s>, <pad>, <unk>, <mask>,
//      <|endoftext|>, and tokenizer.json's special added tokens) are cut out
//      whole, the longest first where two start at one place;
//   2. the rest is split by GPT-2's pattern
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      (contractions, letters, numbers, other, whitespace: a run of spaces
//      before a word leaves its last space to the word), with the classes as
//      tokenizers' regex engine reads them (text/unicode.h);
//   3. each piece's UTF-8 bytes become characters by GPT-2's byte-to-unicode
//      table (printable bytes stand for themselves, the rest for U+0100 on:
//      the space is "Ġ", the newline "Ċ"), and adjacent symbols are merged by
//      merges.txt, the lowest rank first, until no listed pair is left.
//
// Every byte has a token (a byte-level vocabulary holds all 256), so nothing
// becomes <unk>. encode_with_offsets gives each token the code points of
// the original text its bytes came from (a token holding part of a
// character's bytes covers the whole character), as HF's offsets.
//
// tests/data/bpe/ (written by tests/twin/bpe_twin.py from HF's own tokenizer,
// trained there on Debian's text and ordo's synthetic corpus) pins it down.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/subword.h"

namespace ordo::text {

// GPT-2's bytes_to_unicode: the character standing for byte b.
char32_t byte_to_unicode(uint8_t b);
// The pieces GPT-2's pattern cuts a text into, as code-point spans.
std::vector<CharSpan> gpt2_pretokenize(std::u32string_view text);

class BpeTokenizer : public SubwordTokenizer {
 public:
  // vocab.json ({"token": id, ...}) and merges.txt ("#version" line, then "a b"
  // per line), as HF's save_model writes them. Errors name the file and the
  // line or token: a merge whose parts or result are not in the vocabulary,
  // a byte without its token, duplicate ids.
  static BpeTokenizer load(const std::string& vocab_json, const std::string& merges_txt);
  // tokenizer.json: a "BPE" model behind a "ByteLevel" pre-tokenizer, no
  // normaliser, no prefix space; anything else is refused, naming it.
  static BpeTokenizer load_tokenizer_json(const std::string& path);
  // From parts: tokens by id (no gaps), merges in rank order; `origin` names them in errors.
  BpeTokenizer(std::vector<std::string> tokens, const std::vector<std::pair<std::string, std::string>>& merges,
               const std::vector<std::string>& extra_specials, const std::string& origin);

  // SubwordTokenizer
  std::string kind() const override { return "byte-level BPE"; }
  int32_t id_bound() const override { return static_cast<int32_t>(tokens_.size()); }
  const std::string& token(int32_t id) const override;
  bool is_special(int32_t id) const override;
  bool is_word(int32_t id) const override;
  // RoBERTa's when the vocabulary has <s> and </s>, else GPT-2's (nothing added).
  SequenceLayout layout() const override { return layout_; }
  std::vector<int32_t> encode(std::string_view text) const override;
  Encoding encode_with_offsets(std::string_view text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  // vocab.json + merges.txt
  void save(const std::string& dir) const override;

  // The tokens (as the vocabulary spells them, "Ġthe") of a text.
  std::vector<std::string> tokenize(std::string_view text) const;
  int32_t id(const std::string& token) const;  // -1 when absent
  size_t merge_count() const { return merges_.size(); }

 private:
  // One piece of text (no special token in it) through the byte map and the merges.
  void encode_piece(std::string_view bytes, std::vector<int32_t>& symbols) const;

  std::vector<std::string> tokens_;
  std::vector<size_t> token_bytes_;  // the bytes a token stands for: one per character of its spelling
  std::unordered_map<std::string, int32_t> ids_;
  struct Merge {
    int32_t rank, result;
  };
  std::unordered_map<uint64_t, Merge> merges_;  // (left id << 32 | right id) -> rank, merged id
  std::vector<std::pair<int32_t, int32_t>> merge_list_;  // in rank order, for save()
  int32_t byte_ids_[256];
  std::vector<std::string> specials_;  // cut out of the text whole (longest first)
  std::vector<std::u32string> special_cps_;  // the same as code points
  std::vector<bool> special_;
  SequenceLayout layout_;
};

}  // namespace ordo::text
