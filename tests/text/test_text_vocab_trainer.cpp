// The WordPiece trainer: merges worked out by hand on tiny corpora, determinism,
// and a trained vocabulary that tokenizes its own corpus without [UNK].
#include <catch2/catch.hpp>

#include <string>
#include <unistd.h>
#include <vector>

#include "base/error.h"
#include "base/file_io.h"
#include "text/tokenizer.h"
#include "text/vocab_trainer.h"

using namespace ordo::text;
using Strings = std::vector<std::string>;

namespace {

Strings tail(const Vocab& v, size_t from) { return Strings(v.tokens().begin() + from, v.tokens().end()); }

}  // namespace

TEST_CASE("trainer: specials, then the alphabet, then merges by frequency", "[text][trainer]") {
  // Words: "abab" x3, "ab" x2. Alphabet: a b, ##a ##b.
  // Pair counts: (a,##b) 5, (##b,##a) 3, (##a,##b) 3.
  // Merge 1: a + ##b -> "ab" (count 5). Words: [ab ##a ##b] x3, [ab] x2.
  // Now (ab,##a) 3, (##a,##b) 3: a tie, won by the smaller ids: ab is newer
  // (id 9) than ##a (id 7), so (##a,##b) -> "##ab". Then (ab,##ab) 3 -> "abab".
  WordCounter counter(true);
  counter.add_text("abab abab ABAB ab ab");
  VocabTrainerOptions options;
  options.vocab_size = 100;
  options.min_frequency = 1;
  VocabTrainerStats stats;
  Vocab vocab = train_wordpiece(counter, options, &stats);
  CHECK(vocab.tokens() == Strings{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "##a", "##b", "ab", "##ab",
                                  "abab"});
  CHECK(stats.words == 5);
  CHECK(stats.unique_words == 2);
  CHECK(stats.alphabet == 4);
  CHECK(stats.merges == 3);
}

TEST_CASE("trainer: size limit and minimum frequency stop the merges", "[text][trainer]") {
  WordCounter counter(true);
  counter.add_text("abab abab abab ab ab");
  VocabTrainerOptions options;
  options.min_frequency = 1;
  options.vocab_size = 10;  // room for one merge after 5 specials + 4 letters
  CHECK(tail(train_wordpiece(counter, options), 9) == Strings{"ab"});
  options.vocab_size = 100;
  options.min_frequency = 4;  // (a,##b) 5 qualifies; after it the best pair has 3
  CHECK(tail(train_wordpiece(counter, options), 9) == Strings{"ab"});
}

TEST_CASE("trainer: special tokens in the text are not learnt from, punctuation splits", "[text][trainer]") {
  WordCounter counter(true);
  counter.add_text("[CLS] x.y [SEP]");
  VocabTrainerOptions options;
  options.min_frequency = 1;
  Vocab vocab = train_wordpiece(counter, options);
  CHECK(tail(vocab, 5) == Strings{".", "x", "y"});  // three one-letter words: nothing to merge
}

TEST_CASE("trainer: deterministic, and its vocabulary covers its corpus", "[text][trainer]") {
  std::string corpus = "/tmp/ordo_test_trainer_" + std::to_string(::getpid()) + ".txt";
  std::string text;
  const Strings words = {"the", "dog", "chased", "cat", "quickly", "naïve", "runner", "running", "ran", "über"};
  for (int i = 0; i < 400; ++i) {
    text += words[i % 10] + " " + words[(i * 7) % 10] + " " + words[(i * 3 + 1) % 10] + ".\n";
    if (i % 5 == 4) text += "\n";
  }
  ordo::write_file_atomic(corpus, text);
  VocabTrainerOptions options;
  options.vocab_size = 60;
  Vocab a = train_wordpiece_from_corpus(corpus, options);
  Vocab b = train_wordpiece_from_corpus(corpus, options);
  CHECK(a.tokens() == b.tokens());
  CHECK(a.size() == 60);
  Tokenizer tokenizer(a);
  for (const auto& w : words) {
    auto ids = tokenizer.encode(w);
    CHECK(std::find(ids.begin(), ids.end(), a.special().unk) == ids.end());
    CHECK(tokenizer.decode(ids) == (w == "naïve" ? "naive" : w == "über" ? "uber" : w));
  }
  std::remove(corpus.c_str());
}

TEST_CASE("trainer: bad options are errors", "[text][trainer]") {
  WordCounter counter(true);
  VocabTrainerOptions options;
  CHECK_THROWS_WITH(train_wordpiece(counter, options), Catch::Matchers::Contains("no words"));
  counter.add_text("a");
  options.min_frequency = 0;
  CHECK_THROWS_WITH(train_wordpiece(counter, options), Catch::Matchers::Contains("minimum frequency"));
}
