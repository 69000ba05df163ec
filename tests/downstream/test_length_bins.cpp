// downstream/length_bins.h: accuracy by length against a naive loop over a
// hand-made dev set whose words and predictions are known.
#include <cmath>

#include "downstream/length_bins.h"
#include "tests/helpers.h"

using namespace ordo;

TEST_CASE("length bins: words as the basic tokenizer splits them, accuracy per bin by a naive loop", "[length_bins]") {
  // Words: punctuation splits off, whitespace separates, a sentence pair counts both.
  CHECK(downstream::word_count("the cat sat .") == 4);
  CHECK(downstream::word_count("don't, stop") == 5);  // don ' t , stop
  CHECK(downstream::word_count("") == 0);
  downstream::GlueExample pair;
  pair.text_a = "a b";
  pair.text_b = "c d e";
  CHECK(downstream::example_length(pair) == 5);

  // The dataset's lengths: 2, 4, 4, 4, 5, 5, 7, 9 -> mean 5, population std 2.
  const downstream::LengthStats stats = downstream::length_stats({2, 4, 4, 4, 5, 5, 7, 9});
  CHECK(stats.mean == 5);
  CHECK(stats.std == 2);
  CHECK(stats.n == 8);
  // A dev set of 7: lengths, gold, predicted.
  const std::vector<int64_t> lengths = {1, 3, 3, 4, 5, 6, 9};
  const std::vector<int> gold = {0, 1, 1, 0, 1, 0, 1}, predicted = {0, 1, 0, 0, 0, 0, 1};
  const std::vector<downstream::LengthBin> bins = downstream::accuracy_by_length(stats, lengths, gold, predicted);
  // The naive loop: bins cut at m - s = 3, m = 5, m + s = 7.
  int64_t n[4] = {0, 0, 0, 0}, correct[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < lengths.size(); ++i) {
    int b = 0;
    if (lengths[i] >= 3) b = 1;
    if (lengths[i] >= 5) b = 2;
    if (lengths[i] >= 7) b = 3;
    ++n[b];
    if (gold[i] == predicted[i]) ++correct[b];
  }
  REQUIRE(bins.size() == 4);
  for (int b = 0; b < 4; ++b) {
    INFO("bin " << b);
    CHECK(bins[b].n == n[b]);
    CHECK(bins[b].correct == correct[b]);
  }
  // By hand too: [0,3): {1} 1/1; [3,5): {3, 3, 4} 2/3; [5,7): {5, 6} 1/2; [7,inf): {9} 1/1.
  CHECK((bins[1].n == 3 && bins[1].correct == 2 && bins[2].n == 2 && bins[2].correct == 1));
  CHECK(bins[0].from == 0);
  CHECK(bins[1].from == 3);
  CHECK(bins[3].from == 7);
  CHECK(std::isinf(bins[3].to));

  const json::Value j = downstream::length_bins_json(stats, bins);
  CHECK(j["unit"].as_string() == "words");
  CHECK(j["bins"][1]["accuracy"].as_number() == Approx(2.0 / 3.0));
  CHECK(j["bins"][3]["to"].is_null());
  // An empty bin has no accuracy, never a zero.
  const json::Value empty = downstream::length_bins_json(stats, downstream::accuracy_by_length(stats, {4}, {1}, {1}));
  CHECK(empty["bins"][0]["n"].as_int() == 0);
  CHECK(empty["bins"][0]["accuracy"].is_null());
}
