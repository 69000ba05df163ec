// What the probe, the downstream encoders and fine-tuning need of a
// tokenizer, whichever it is: BERT's WordPiece (text/tokenizer.h) or GPT-2's
// and RoBERTa's byte-level BPE (text/bpe.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ordo::text {

// Where a token or character came from: code points [begin, end) of the
// original text — Python str indices, what SQuAD's answer_start counts.
struct CharSpan {
  int32_t begin = 0, end = 0;
  friend bool operator==(CharSpan a, CharSpan b) { return a.begin == b.begin && a.end == b.end; }
};

// Token ids with each token's span of original code points.
struct Encoding {
  std::vector<int32_t> ids;
  std::vector<CharSpan> offsets;  // one per id
};

// How a model's inputs are laid out around the text tokens, as the model's
// own tokenizer builds them (HF's build_inputs_with_special_tokens):
//   BERT     [CLS] a [SEP]  /  [CLS] a [SEP] b [SEP], segment 1 from b on
//   RoBERTa  <s> a </s>     /  <s> a </s> </s> b </s>, one segment
//   GPT-2    a              /  a b (nothing added)
struct SequenceLayout {
  int32_t cls = -1;            // first token of every input ([CLS], <s>); -1: none
  int32_t sep = -1;            // after each text ([SEP], </s>); -1: none
  int pair_separators = 1;     // separators between a pair's texts (RoBERTa: 2)
  int32_t second_segment = 1;  // segment id of a pair's second text (RoBERTa: 0)
  int32_t pad = -1, unk = -1, mask = -1;  // -1: the tokenizer has none
};

class SubwordTokenizer {
 public:
  virtual ~SubwordTokenizer() = default;
  // "wordpiece" or "byte-level BPE"
  virtual std::string kind() const = 0;
  // Ids run 0 .. id_bound() - 1 (a model's vocab_size must hold them).
  virtual int32_t id_bound() const = 0;
  virtual const std::string& token(int32_t id) const = 0;
  virtual bool is_special(int32_t id) const = 0;
  // A token that is a word by itself, not a piece of one: what identical
  // word probing repeats (WordPiece: not "##..."; BPE: a word start, "Ġ" +
  // a letter or digit).
  virtual bool is_word(int32_t id) const = 0;
  virtual SequenceLayout layout() const = 0;
  virtual bool lower_case() const { return false; }

  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // encode() with each token's span of original code points. Throws
  // ordo::Error when text is not valid UTF-8.
  virtual Encoding encode_with_offsets(std::string_view text) const = 0;
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  // Writes the files the tokenizer is read from (vocab.txt; vocab.json +
  // merges.txt) into an existing folder, atomically.
  virtual void save(const std::string& dir) const = 0;
};

}  // namespace ordo::text
