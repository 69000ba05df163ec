// BERT's WordPiece tokenizer, compatible with HuggingFace's `vocab.txt` and
// with the Python BertTokenizer (transformers' BasicTokenizer + WordpieceTokenizer):
//
//   1. special tokens ([CLS] ...) in the raw text are cut out and kept whole;
//   2. BasicTokenizer: drop NUL, U+FFFD and control characters, map whitespace
//      to ' ', put spaces around CJK ideographs, NFC, split on whitespace,
//      then per word: lower-case and strip accents (NFD, drop Mn) when
//      lower-casing is on, and split off every punctuation character;
//   3. WordPiece: greedy longest-match-first with "##" continuations; a word of
//      more than 100 code points, or one with a piece no vocabulary entry
//      matches, becomes a single [UNK].
//
// tests/data/tokenizer_golden.json (written by scripts/tokenizer_twin.py from HF's
// own tokenizer) pins the behaviour down.
//
// encode_with_offsets() also says where each token came from in the original
// text (what SQuAD needs to map answers to tokens and back): every step above
// carries, for each character it produces, the span of original characters it
// grew out of (text/tokenizer_offsets.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/subword.h"

namespace ordo::text {

// The special tokens every BERT vocabulary must hold, by name.
inline constexpr const char* kPad = "[PAD]";
inline constexpr const char* kUnk = "[UNK]";
inline constexpr const char* kCls = "[CLS]";
inline constexpr const char* kSep = "[SEP]";
inline constexpr const char* kMask = "[MASK]";
// In the order ordo's trainer writes them first.
const std::vector<std::string>& special_token_names();

struct SpecialIds {
  int32_t pad = -1, unk = -1, cls = -1, sep = -1, mask = -1;
};

// A vocabulary in HuggingFace's vocab.txt layout: one token per line, a token's
// id is its line number counting from 0.
class Vocab {
 public:
  // Reads vocab.txt. Errors name the file and line: invalid UTF-8, an empty
  // line, a duplicate token (with both line numbers), a carriage return, a
  // missing special token.
  static Vocab load(const std::string& path);
  // Tokens in id order; `origin` names them in errors.
  static Vocab from_tokens(std::vector<std::string> tokens, const std::string& origin = "vocabulary");
  // Writes vocab.txt atomically.
  void save(const std::string& path) const;

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  // The id of a token, or -1.
  int32_t id(const std::string& token) const;
  const std::string& token(int32_t id) const;
  // Starts with "##": the piece continues a word.
  bool is_continuation(int32_t id) const { return continuation_[static_cast<size_t>(id)]; }
  bool is_special(int32_t id) const;
  const SpecialIds& special() const { return special_; }
  const std::vector<std::string>& tokens() const { return tokens_; }

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<bool> continuation_;
  SpecialIds special_;
};

// Longest-prefix lookup of vocabulary pieces: WordPiece's "longest piece that
// starts here" in one walk down a byte trie, instead of one hash lookup per
// candidate length.
class PieceTrie {
 public:
  // `pieces`: (bytes, id) pairs; the bytes need not be sorted or unique-free of prefixes.
  explicit PieceTrie(std::vector<std::pair<std::string, int32_t>> pieces = {});
  // The id and byte length of the longest piece that `bytes` starts with, or {-1, 0}.
  std::pair<int32_t, size_t> longest_prefix(std::string_view bytes) const;

 private:
  struct Node {
    int32_t id = -1;           // the piece ending here, or -1
    uint32_t first_edge = 0;   // children: edges_[first_edge, first_edge + edge_count), by byte
    uint32_t edge_count = 0;
  };
  struct Edge {
    uint8_t byte;
    int32_t child;
  };
  void build(const std::vector<std::pair<std::string, int32_t>>& sorted);

  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::vector<int32_t> root_children_;  // the root's child by first byte (-1: none): the widest node
};

// HF's BasicTokenizer (see the top of this file) plus the cutting-out of
// special tokens that HF's PreTrainedTokenizer.tokenize does before it.
class BasicTokenizer {
 public:
  // `never_split`: strings kept whole wherever they appear in the raw text.
  explicit BasicTokenizer(bool lower_case = true, std::vector<std::string> never_split = special_token_names());

  // Calls on_word(word, is_special) for every word in order. Throws ordo::Error
  // when text is not valid UTF-8.
  using WordSink = std::function<void(std::u32string_view word, bool is_special)>;
  void split(std::string_view text, const WordSink& on_word) const;
  // The words as UTF-8 strings.
  std::vector<std::string> words(std::string_view text) const;

  // split() over code points, saying also where each character of each word
  // came from: spans[i] is the span of `text` that word[i] grew out of (a
  // character lower-casing or decomposition made several of shares its span; a
  // character NFC composed from several spans them all). Same words as split().
  using SpannedWordSink = std::function<void(std::u32string_view word, const CharSpan* spans, bool is_special)>;
  void split_with_offsets(std::u32string_view text, const SpannedWordSink& on_word) const;

  bool lower_case() const { return lower_case_; }

 private:
  void split_chunk(std::string_view chunk, const WordSink& on_word) const;
  void split_word(std::u32string_view word, const WordSink& on_word) const;
  bool is_never_split(std::u32string_view word) const;
  // The spanned twins of split_chunk and split_word (text/tokenizer_offsets.cpp).
  void split_chunk_spanned(std::u32string_view text, size_t begin, size_t end, const SpannedWordSink& on_word) const;
  void split_word_spanned(std::u32string_view word, const CharSpan* spans, const SpannedWordSink& on_word) const;

  bool lower_case_;
  std::vector<std::string> never_split_;
};

struct TokenizerOptions {
  bool lower_case = true;        // HF do_lower_case; also strips accents, as BERT's default does
  int max_chars_per_word = 100;  // HF max_input_chars_per_word: longer words become [UNK]
};

class Tokenizer : public SubwordTokenizer {
 public:
  explicit Tokenizer(Vocab vocab, TokenizerOptions options = {});

  const Vocab& vocab() const { return vocab_; }
  const TokenizerOptions& options() const { return options_; }

  // SubwordTokenizer
  std::string kind() const override { return "wordpiece"; }
  int32_t id_bound() const override { return vocab_.size(); }
  const std::string& token(int32_t id) const override { return vocab_.token(id); }
  bool is_special(int32_t id) const override { return vocab_.is_special(id); }
  bool is_word(int32_t id) const override { return !vocab_.is_continuation(id); }
  // [CLS] a [SEP] b [SEP], segment 1 from b on.
  SequenceLayout layout() const override;
  bool lower_case() const override { return options_.lower_case; }
  void save(const std::string& dir) const override { vocab_.save(dir + "/vocab.txt"); }

  // The word pieces of a text, as HF's BertTokenizer.tokenize returns them.
  std::vector<std::string> tokenize(std::string_view text) const;
  // Their ids.
  std::vector<int32_t> encode(std::string_view text) const override;
  // Appends the ids to `out` (the hot path: no strings are built).
  void encode_append(std::string_view text, std::vector<int32_t>& out) const;
  // The pieces of one word (already through the BasicTokenizer), appended as ids.
  void wordpiece(std::u32string_view word, std::vector<int32_t>& out) const;
  // Tokens joined back into text, "##" pieces glued to their word.
  std::string decode(const std::vector<int32_t>& ids) const override;

  // encode() with each token's span of original code points. A "##" piece
  // covers the characters it matched; a word that became [UNK] covers the
  // whole word; a special token the text it was cut from. Throws ordo::Error
  // when text is not valid UTF-8.
  using Encoding = text::Encoding;
  Encoding encode_with_offsets(std::string_view text) const override;

 private:
  Vocab vocab_;
  TokenizerOptions options_;
  BasicTokenizer basic_;
  PieceTrie initial_;       // every token, as it is: a word's first piece
  PieceTrie continuation_;  // "##" tokens without the "##": the pieces after it
};

// HF convert_tokens_to_string: join with spaces, then glue "##" pieces on.
std::string detokenize(const std::vector<std::string>& tokens);

}  // namespace ordo::text
