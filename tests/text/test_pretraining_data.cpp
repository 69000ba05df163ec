// Pretraining batches: masking statistics within binomial bounds, whole words,
// specials never masked, NSP balance, truncation, determinism and resumption.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "text/pretraining_data.h"

using namespace ordo::text;
using Catch::Matchers::Contains;

namespace {

// Ids 0-4 specials, 5..504 word starts "w0".."w499", 505..1004 pieces "##p0".."##p499".
Vocab test_vocab() {
  std::vector<std::string> tokens = special_token_names();
  for (int i = 0; i < 500; ++i) tokens.push_back("w" + std::to_string(i));
  for (int i = 0; i < 500; ++i) tokens.push_back("##p" + std::to_string(i));
  return Vocab::from_tokens(tokens, "test_vocab");
}
constexpr int32_t kWord = 5, kPiece = 505;

// `docs` documents of `sentences` sentences of `length` tokens; with pieces,
// every third token is a "##" piece continuing the token before it.
TokenizedCorpus make_corpus(int docs, int sentences, int length, bool pieces, uint32_t salt = 0) {
  TokenizedCorpus corpus;
  uint32_t x = 12345 + salt;
  for (int d = 0; d < docs; ++d) {
    std::vector<std::vector<int32_t>> doc;
    for (int s = 0; s < sentences; ++s) {
      std::vector<int32_t> sentence;
      for (int t = 0; t < length; ++t) {
        x = x * 1664525u + 1013904223u;
        bool piece = pieces && t % 3 == 2;
        sentence.push_back((piece ? kPiece : kWord) + static_cast<int32_t>((x >> 8) % 500));
      }
      doc.push_back(sentence);
    }
    corpus.add_document(doc, d);
  }
  return corpus;
}

// |observed - n p| within `sigmas` binomial standard deviations.
void check_binomial(int64_t observed, int64_t n, double p, double sigmas = 4) {
  double mean = n * p, sd = std::sqrt(n * p * (1 - p));
  INFO("observed " << observed << " of " << n << ", expected " << mean << " +- " << sigmas << " * " << sd);
  CHECK(std::abs(observed - mean) <= sigmas * sd);
}

}  // namespace

TEST_CASE("pretraining: batch layout, padding, positions and specials", "[text][pretraining]") {
  Vocab vocab = test_vocab();
  TokenizedCorpus corpus = make_corpus(20, 6, 7, true);
  PretrainingOptions options;
  options.objective = Objective::mlm_nsp;
  options.max_seq_length = 32;
  PretrainingData data(corpus, vocab, options);
  Cursor cursor;
  Batch b = data.next_batch(cursor, 16);
  REQUIRE(b.batch == 16);
  REQUIRE(b.length == 32);
  REQUIRE(b.input_ids.size() == 16 * 32);
  REQUIRE(b.nsp_labels.size() == 16);
  CHECK(b.clm_labels.empty());
  CHECK(cursor == Cursor{0, 16});
  for (int r = 0; r < 16; ++r) {
    const int64_t* ids = &b.input_ids[r * 32];
    const int64_t* mask = &b.attention_mask[r * 32];
    int real = 0;
    while (real < 32 && mask[real] == 1) ++real;
    for (int i = real; i < 32; ++i) {
      CHECK(mask[i] == 0);
      CHECK(ids[i] == vocab.special().pad);
      CHECK(b.mlm_labels[r * 32 + i] == kIgnoreLabel);
      CHECK(b.segment_ids[r * 32 + i] == 0);
    }
    for (int i = 0; i < 32; ++i) CHECK(b.positions[r * 32 + i] == i);
    CHECK(ids[0] == vocab.special().cls);
    CHECK(ids[real - 1] == vocab.special().sep);
    // Exactly two [SEP]s, A in segment 0 and B in segment 1.
    int seps = 0, first_sep = -1;
    for (int i = 0; i < real; ++i) {
      if (ids[i] == vocab.special().sep) {
        if (seps++ == 0) first_sep = i;
      }
    }
    CHECK(seps == 2);
    for (int i = 0; i < real; ++i) CHECK(b.segment_ids[r * 32 + i] == (i <= first_sep ? 0 : 1));
    CHECK((b.nsp_labels[r] == 0 || b.nsp_labels[r] == 1));
  }
}

TEST_CASE("pretraining: 15% selected, 80/10/10, specials never masked", "[text][pretraining]") {
  Vocab vocab = test_vocab();
  TokenizedCorpus corpus = make_corpus(300, 5, 9, false);
  PretrainingOptions options;
  options.objective = Objective::mlm;
  options.max_seq_length = 64;
  options.max_predictions_per_seq = 64;
  options.short_seq_prob = 0.0;
  PretrainingData data(corpus, vocab, options);
  int64_t predicted = 0, masked = 0, kept = 0, replaced = 0, rows = 0;
  std::map<int64_t, int64_t> by_position;  // how often each position of a full row is chosen
  int64_t full_rows = 0;
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    for (int64_t i = 0; i < data.examples_in_epoch(epoch); ++i) {
      Example ex = data.example(epoch, i);
      const size_t n = ex.input_ids.size();
      // Google's count: round(15% of every token, [CLS]/[SEP] included), at least 1.
      int64_t expected = std::max<int64_t>(1, std::llround(n * 0.15 - 1e-9));
      int64_t here = 0;
      for (size_t p = 0; p < n; ++p) {
        if (ex.labels[p] == kIgnoreLabel) continue;
        ++here;
        CHECK(ex.labels[p] != vocab.special().cls);
        CHECK(ex.labels[p] != vocab.special().sep);
        if (ex.input_ids[p] == vocab.special().mask) {
          ++masked;
        } else if (ex.input_ids[p] == ex.labels[p]) {
          ++kept;
        } else {
          ++replaced;
          CHECK_FALSE(vocab.is_special(static_cast<int32_t>(ex.input_ids[p])));
        }
        if (n == 47) ++by_position[static_cast<int64_t>(p)];
      }
      CHECK(here == expected);
      predicted += here;
      full_rows += n == 47;
      ++rows;
    }
  }
  REQUIRE(rows > 500);
  // 80 / 10 / 10; a random replacement equals the original with probability 1/1000.
  check_binomial(masked, predicted, 0.8);
  check_binomial(kept, predicted, 0.1 + 0.1 / 1000);
  check_binomial(replaced, predicted, 0.1 - 0.1 / 1000);
  // Every document (5 sentences of 9 tokens) is one row of 47 = [CLS] + 45 + [SEP]:
  // round(47 * 0.15) = 7 of the 45 candidates are chosen, each with chance 7/45.
  // 45 positions are 45 comparisons: 5 sigma each keeps the family's false
  // alarm rate near 3e-5 (4 sigma each would fail one seed in ~300).
  REQUIRE(full_rows == 1200);
  CHECK(by_position.count(0) == 0);   // [CLS]
  CHECK(by_position.count(46) == 0);  // [SEP]
  for (int64_t p = 1; p <= 45; ++p) {
    INFO("position " << p);
    check_binomial(by_position[p], full_rows, 7.0 / 45, 5);
  }
}

TEST_CASE("pretraining: whole words are masked together or not at all", "[text][pretraining]") {
  Vocab vocab = test_vocab();
  TokenizedCorpus corpus = make_corpus(100, 4, 9, true);
  PretrainingOptions options;
  options.max_seq_length = 40;
  for (Objective objective : {Objective::mlm, Objective::mlm_nsp}) {
    options.objective = objective;
    PretrainingData data(corpus, vocab, options);
    int64_t groups_seen = 0;
    for (int64_t i = 0; i < data.examples_in_epoch(0); ++i) {
      Example ex = data.example(0, i);
      for (size_t p = 1; p < ex.labels.size(); ++p) {
        // The label (original token) tells a "##" piece even where the input was replaced.
        bool piece = ex.labels[p] != kIgnoreLabel ? vocab.is_continuation(ex.labels[p])
                                                  : vocab.is_continuation(ex.input_ids[p]);
        bool after_sep = ex.input_ids[p - 1] == vocab.special().sep && ex.labels[p - 1] == kIgnoreLabel;
        if (!piece || after_sep) continue;
        CHECK((ex.labels[p] == kIgnoreLabel) == (ex.labels[p - 1] == kIgnoreLabel));
        groups_seen += ex.labels[p] != kIgnoreLabel;
      }
    }
    CHECK(groups_seen > 100);
  }
}

TEST_CASE("pretraining: NSP is 50% random next, as Google's script makes it", "[text][pretraining]") {
  // Documents of two 3-token sentences, max_seq_length 9 (6 tokens for A+B),
  // no short sequences. The chunk is both sentences; A is the first. With
  // probability 1/2 B is the actual next sentence (one instance, label 0);
  // otherwise B is random, the second sentence goes back, and alone it makes a
  // second instance whose B is random too (two instances, label 1).
  Vocab vocab = test_vocab();
  TokenizedCorpus corpus = make_corpus(4000, 2, 3, false);
  PretrainingOptions options;
  options.objective = Objective::mlm_nsp;
  options.max_seq_length = 9;
  options.short_seq_prob = 0.0;
  PretrainingData data(corpus, vocab, options);
  int64_t actual = 0, random = 0;
  for (int64_t i = 0; i < data.examples_in_epoch(0); ++i) {
    Example ex = data.example(0, i);
    (ex.nsp_label == 0 ? actual : random) += 1;
    CHECK(ex.input_ids.size() <= 9);
  }
  CHECK(random == 2 * (4000 - actual));
  check_binomial(actual, 4000, 0.5);
}

TEST_CASE("pretraining: truncation keeps every example within max_seq_length", "[text][pretraining]") {
  Vocab vocab = test_vocab();
  TokenizedCorpus corpus = make_corpus(60, 5, 25, true);  // sentences longer than the target
  for (int64_t max_len : {5, 8, 16, 33}) {
    for (Objective objective : {Objective::mlm, Objective::mlm_nsp}) {
      PretrainingOptions options;
      options.objective = objective;
      options.max_seq_length = max_len;
      PretrainingData data(corpus, vocab, options);
      for (int64_t i = 0; i < data.examples_in_epoch(1); ++i) {
        Example ex = data.example(1, i);
        CHECK(static_cast<int64_t>(ex.input_ids.size()) <= max_len);
        int64_t a = 0, b = 0;
        for (int32_t s : ex.segment_ids) (s == 0 ? a : b) += 1;
        CHECK(a >= 3);  // [CLS] A [SEP] with A non-empty
        if (objective == Objective::mlm_nsp) CHECK(b >= 2);  // B [SEP] with B non-empty
      }
    }
  }
}

TEST_CASE("pretraining: deterministic by seed, epochs differ, a cursor resumes exactly", "[text][pretraining]") {
  Vocab vocab = test_vocab();
  TokenizedCorpus corpus = make_corpus(50, 6, 8, true);
  PretrainingOptions options;
  options.objective = Objective::mlm_nsp;
  options.max_seq_length = 48;
  PretrainingData one(corpus, vocab, options), two(corpus, vocab, options);
  Cursor c1, c2;
  Batch a = one.next_batch(c1, 8), b = two.next_batch(c2, 8);
  CHECK(a.input_ids == b.input_ids);
  CHECK(a.mlm_labels == b.mlm_labels);
  CHECK(a.nsp_labels == b.nsp_labels);

  // The same example in another epoch gets another mask (and instance order).
  Example e0 = one.example(0, 3), e1 = one.example(1, 3);
  CHECK((e0.input_ids != e1.input_ids || e0.labels != e1.labels));

  options.seed += 1;
  PretrainingData other(corpus, vocab, options);
  Cursor c3;
  CHECK(other.next_batch(c3, 8).input_ids != a.input_ids);

  // Run through an epoch boundary, then resume from a saved cursor on a fresh object.
  Cursor run;
  const int64_t n0 = one.examples_in_epoch(0);
  std::vector<Batch> straight;
  Cursor saved;
  for (int step = 0; step < 6; ++step) {
    if (step == 3) saved = run;
    straight.push_back(one.next_batch(run, (n0 + 2) / 4));
  }
  CHECK(run.epoch == 1);
  PretrainingData resumed(corpus, vocab, PretrainingOptions{Objective::mlm_nsp, 48, 20, 0.15, 0.1, true, 12345});
  for (int step = 3; step < 6; ++step) {
    Batch again = resumed.next_batch(saved, (n0 + 2) / 4);
    CHECK(again.input_ids == straight[step].input_ids);
    CHECK(again.mlm_labels == straight[step].mlm_labels);
    CHECK(again.nsp_labels == straight[step].nsp_labels);
  }
  CHECK(saved == run);
}

TEST_CASE("pretraining: causal windows are contiguous with next-token labels", "[text][pretraining]") {
  Vocab vocab = test_vocab();
  TokenizedCorpus corpus = make_corpus(3, 2, 10, false);  // 3 x (20 tokens + [SEP]) = 63 tokens
  PretrainingOptions options;
  options.objective = Objective::causal;
  options.max_seq_length = 10;
  PretrainingData data(corpus, vocab, options);
  REQUIRE(data.examples_in_epoch(0) == 6);  // (63 - 1) / 10
  std::vector<int32_t> stream;
  for (int d = 0; d < 3; ++d) {
    stream.insert(stream.end(), corpus.tokens.begin() + d * 20, corpus.tokens.begin() + d * 20 + 20);
    stream.push_back(vocab.special().sep);
  }
  std::vector<bool> seen(6, false);
  Cursor cursor;
  Batch b = data.next_batch(cursor, 6);
  CHECK(b.mlm_labels.empty());
  CHECK(b.nsp_labels.empty());
  for (int r = 0; r < 6; ++r) {
    int64_t first = b.input_ids[r * 10];
    // Find the window's start in the stream (tokens are random over 500 ids: the
    // first two pin it down).
    int start = -1;
    for (int s = 0; s + 11 <= 63; s += 10) {
      if (stream[s] == first && stream[s + 1] == b.input_ids[r * 10 + 1]) start = s;
    }
    REQUIRE(start >= 0);
    seen[start / 10] = true;
    for (int i = 0; i < 10; ++i) {
      CHECK(b.input_ids[r * 10 + i] == stream[start + i]);
      CHECK(b.clm_labels[r * 10 + i] == stream[start + i + 1]);
      CHECK(b.attention_mask[r * 10 + i] == 1);
    }
  }
  CHECK(std::count(seen.begin(), seen.end(), true) == 6);
}

TEST_CASE("pretraining: bad settings are clear errors", "[text][pretraining]") {
  Vocab vocab = test_vocab();
  TokenizedCorpus corpus = make_corpus(2, 2, 3, false);
  PretrainingOptions options;
  options.objective = Objective::mlm_nsp;
  options.max_seq_length = 4;
  CHECK_THROWS_WITH(PretrainingData(corpus, vocab, options),
                    Contains("max_seq_length 4 is too small for mlm+nsp: [CLS] A [SEP] B [SEP] needs at least 5"));
  options.objective = Objective::mlm;
  options.max_seq_length = 2;
  CHECK_THROWS_WITH(PretrainingData(corpus, vocab, options), Contains("[CLS] A [SEP] needs at least 3"));
  options.max_seq_length = 16;
  options.masked_lm_prob = 0;
  CHECK_THROWS_WITH(PretrainingData(corpus, vocab, options), Contains("masked_lm_prob"));
  options.masked_lm_prob = 0.15;
  CHECK_THROWS_WITH(PretrainingData(TokenizedCorpus{}, vocab, options), Contains("no documents"));
  options.objective = Objective::causal;
  options.max_seq_length = 64;
  CHECK_THROWS_WITH(PretrainingData(corpus, vocab, options), Contains("fewer than one causal window"));
  CHECK_THROWS_WITH(parse_objective("bert"), Contains("choose mlm, mlm+nsp or causal"));
  PretrainingData ok(corpus, vocab, PretrainingOptions{});
  CHECK_THROWS_WITH(ok.example(0, 99), Contains("outside epoch 0"));
}
