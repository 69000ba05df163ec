// Learns a WordPiece vocabulary from text, with the semantics of HuggingFace
// tokenizers' WordPieceTrainer (a BPE trainer with "##" continuations):
//
//   - words come from the BasicTokenizer (same lower-casing as the tokenizer
//     that will use the vocabulary), counted over the corpus;
//   - the initial alphabet is every character seen, plus "##c" for every
//     character seen inside a word;
//   - the most frequent adjacent pair of pieces is merged into a new piece
//     ("##" dropped from the right-hand one) until the vocabulary reaches the
//     requested size or the best pair is rarer than `min_frequency`.
//
// Determinism: ids are [PAD] [UNK] [CLS] [SEP] [MASK], then the alphabet by code
// point, then the "##" alphabet by code point, then merges in order. Ties
// between equally frequent pairs go to the pair with the smaller (left id,
// right id) — HF's rule. Pair counts are updated incrementally per merge,
// touching only the words that contain the merged pair.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "text/tokenizer.h"

namespace ordo::text {

struct VocabTrainerOptions {
  int64_t vocab_size = 8000;
  int64_t min_frequency = 2;     // a pair seen fewer times is never merged
  bool lower_case = true;        // as TokenizerOptions::lower_case
  int max_chars_per_word = 100;  // longer words are skipped: the tokenizer makes them [UNK]
};

struct VocabTrainerStats {
  int64_t words = 0;         // word occurrences counted
  int64_t unique_words = 0;
  int64_t alphabet = 0;      // initial pieces, "##" forms included
  int64_t merges = 0;
};

// Word counts, accumulated text by text.
class WordCounter {
 public:
  explicit WordCounter(bool lower_case = true) : basic_(lower_case) {}
  void add_text(std::string_view text);
  const std::unordered_map<std::u32string, int64_t>& counts() const { return counts_; }
  int64_t total() const { return total_; }

 private:
  BasicTokenizer basic_;
  std::unordered_map<std::u32string, int64_t> counts_;
  int64_t total_ = 0;
};

Vocab train_wordpiece(const WordCounter& words, const VocabTrainerOptions& options,
                      VocabTrainerStats* stats = nullptr);

// Streams a corpus (see corpus.h) through a WordCounter and trains on it.
Vocab train_wordpiece_from_corpus(const std::string& corpus_path, const VocabTrainerOptions& options,
                                  VocabTrainerStats* stats = nullptr);

// A trained vocabulary far smaller than asked — under half of `asked` — means
// the corpus ran out of pieces seen min_frequency times: a warning saying so
// (the flags or keys named as given), "" otherwise. Below the size but above
// half is the ordinary end of training on a modest corpus.
std::string small_vocabulary_warning(int64_t trained, int64_t asked, const std::string& size_name,
                                     int64_t min_frequency, const std::string& frequency_name);

}  // namespace ordo::text
