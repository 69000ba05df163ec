#include "text/vocab_trainer.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "base/error.h"
#include "text/corpus.h"
#include "text/utf8.h"

namespace ordo::text {

void WordCounter::add_text(std::string_view text) {
  basic_.split(text, [&](std::u32string_view word, bool special) {
    if (special) return;  // [CLS] etc. in the text are not words to learn from
    ++counts_[std::u32string(word)];
    ++total_;
  });
}

namespace {

using Pair = std::pair<int32_t, int32_t>;

uint64_t pair_key(int32_t a, int32_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }
Pair key_pair(uint64_t key) { return {static_cast<int32_t>(key >> 32), static_cast<int32_t>(key & 0xFFFFFFFFu)}; }

struct Word {
  std::vector<int32_t> pieces;
  int64_t count;
};

// A heap entry: more frequent first, then the smaller (left, right) pair.
struct Candidate {
  int64_t count;
  uint64_t key;
  bool operator<(const Candidate& other) const {
    if (count != other.count) return count < other.count;
    return key > other.key;
  }
};

class Trainer {
 public:
  Trainer(const WordCounter& counter, const VocabTrainerOptions& options) : options_(options) {
    for (const auto& name : special_token_names()) add_token(name);
    build_alphabet_and_words(counter);
  }

  void run(VocabTrainerStats* stats) {
    count_all_pairs();
    int64_t merges = 0;
    while (static_cast<int64_t>(tokens_.size()) < options_.vocab_size && !heap_.empty()) {
      Candidate top = heap_.top();
      heap_.pop();
      auto it = pair_counts_.find(top.key);
      int64_t current = it == pair_counts_.end() ? 0 : it->second;
      if (current != top.count) {  // stale: the pair's count changed since this entry was pushed
        if (current > 0) heap_.push({current, top.key});
        continue;
      }
      if (current < options_.min_frequency) break;
      merge(key_pair(top.key));
      ++merges;
    }
    if (stats) stats->merges = merges;
  }

  std::vector<std::string> tokens() const { return tokens_; }
  int64_t alphabet() const { return alphabet_; }
  int64_t unique_words() const { return static_cast<int64_t>(words_.size()); }

 private:
  int32_t add_token(const std::string& token) {
    auto [it, inserted] = ids_.emplace(token, static_cast<int32_t>(tokens_.size()));
    if (inserted) tokens_.push_back(token);
    return it->second;
  }

  void build_alphabet_and_words(const WordCounter& counter) {
    // Sorted words: the word order, and so everything after, is fixed.
    std::map<std::u32string, int64_t> sorted;
    for (const auto& [word, count] : counter.counts()) {
      if (static_cast<int64_t>(word.size()) <= options_.max_chars_per_word) sorted.emplace(word, count);
    }
    std::set<char32_t> initial, inner;
    for (const auto& entry : sorted) {
      const std::u32string& word = entry.first;
      initial.insert(word.begin(), word.end());
      inner.insert(word.begin() + 1, word.end());
    }
    for (char32_t c : initial) add_token(utf8::encode(std::u32string(1, c)));
    for (char32_t c : inner) add_token("##" + utf8::encode(std::u32string(1, c)));
    alphabet_ = static_cast<int64_t>(tokens_.size() - special_token_names().size());
    for (const auto& [word, count] : sorted) {
      Word w{{}, count};
      for (size_t i = 0; i < word.size(); ++i) {
        std::string piece = (i > 0 ? "##" : "") + utf8::encode(std::u32string(1, word[i]));
        w.pieces.push_back(ids_.at(piece));
      }
      words_.push_back(std::move(w));
    }
  }

  void count_all_pairs() {
    for (size_t w = 0; w < words_.size(); ++w) {
      const auto& p = words_[w].pieces;
      for (size_t i = 0; i + 1 < p.size(); ++i) {
        uint64_t key = pair_key(p[i], p[i + 1]);
        pair_counts_[key] += words_[w].count;
        where_[key].push_back(static_cast<int32_t>(w));
      }
    }
    for (const auto& [key, count] : pair_counts_) heap_.push({count, key});
  }

  // Replaces every (a, b) in the words that hold it by the merged piece, and
  // moves the pair counts of those words only.
  void merge(Pair pair) {
    // The right piece is always a "##" piece (only a word's first piece lacks it).
    int32_t merged = add_token(tokens_[pair.first] + tokens_[pair.second].substr(2));
    const uint64_t merged_key = pair_key(pair.first, pair.second);
    std::vector<int32_t> holders = std::move(where_[merged_key]);
    where_.erase(merged_key);
    std::sort(holders.begin(), holders.end());
    holders.erase(std::unique(holders.begin(), holders.end()), holders.end());

    std::set<uint64_t> grown;
    for (int32_t w : holders) {
      Word& word = words_[w];
      const auto& old = word.pieces;
      std::vector<int32_t> now;
      now.reserve(old.size());
      for (size_t i = 0; i < old.size(); ++i) {
        if (i + 1 < old.size() && old[i] == pair.first && old[i + 1] == pair.second) {
          now.push_back(merged);
          ++i;
        } else {
          now.push_back(old[i]);
        }
      }
      if (now.size() == old.size()) continue;  // a stale holder
      for (size_t i = 0; i + 1 < old.size(); ++i) {
        auto it = pair_counts_.find(pair_key(old[i], old[i + 1]));
        if ((it->second -= word.count) == 0) pair_counts_.erase(it);
      }
      for (size_t i = 0; i + 1 < now.size(); ++i) {
        uint64_t key = pair_key(now[i], now[i + 1]);
        pair_counts_[key] += word.count;
        if (now[i] == merged || now[i + 1] == merged) {
          grown.insert(key);
          where_[key].push_back(w);
        }
      }
      word.pieces = std::move(now);
    }
    for (uint64_t key : grown) heap_.push({pair_counts_[key], key});
  }

  VocabTrainerOptions options_;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<Word> words_;
  std::unordered_map<uint64_t, int64_t> pair_counts_;
  std::unordered_map<uint64_t, std::vector<int32_t>> where_;  // words that may hold a pair
  std::priority_queue<Candidate> heap_;
  int64_t alphabet_ = 0;
};

}  // namespace

Vocab train_wordpiece(const WordCounter& words, const VocabTrainerOptions& options, VocabTrainerStats* stats) {
  ORDO_CHECK(options.vocab_size > 0, "vocabulary size must be positive, got ", options.vocab_size);
  ORDO_CHECK(options.min_frequency >= 1, "minimum frequency must be at least 1, got ", options.min_frequency);
  ORDO_CHECK(!words.counts().empty(), "no words to learn a vocabulary from");
  Trainer trainer(words, options);
  trainer.run(stats);
  if (stats) {
    stats->words = words.total();
    stats->unique_words = trainer.unique_words();
    stats->alphabet = trainer.alphabet();
  }
  return Vocab::from_tokens(trainer.tokens(), "trained vocabulary");
}

Vocab train_wordpiece_from_corpus(const std::string& corpus_path, const VocabTrainerOptions& options,
                                  VocabTrainerStats* stats) {
  WordCounter counter(options.lower_case);
  CorpusReader reader(corpus_path);
  Document doc;
  while (reader.next(doc)) {
    for (const auto& sentence : doc.sentences) counter.add_text(sentence);
  }
  return train_wordpiece(counter, options, stats);
}

std::string small_vocabulary_warning(int64_t trained, int64_t asked, const std::string& size_name,
                                     int64_t min_frequency, const std::string& frequency_name) {
  if (2 * trained >= asked) return "";
  return detail::cat("the trained vocabulary has ", trained, " tokens, under half of the ", asked, " asked (", size_name,
                     "): the corpus holds too few pieces seen ", min_frequency, " times (", frequency_name,
                     "); a larger corpus, or a smaller ", size_name, ", gives a vocabulary of the size asked");
}

}  // namespace ordo::text
