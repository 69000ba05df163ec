// Accuracy by sentence length (Wang & Chen 2020, section 5.1, "Length
// Sensitivity", Figure 4): the paper plots "different ranges of lengths
// versus accuracy", its ranges read against "one standard deviation of the
// whole dataset" (sentences shorter than it, longer, "extremely long ...
// longer than one standard deviation"); the extraction lost the figure's
// axis. ordo's reading: four bins cut at the dataset's mean m minus one
// standard deviation s, its mean, and its mean plus one standard deviation:
//     [0, m - s),  [m - s, m),  [m, m + s),  [m + s, inf)
// with m and s (population: numpy's default np.std) over the lengths of the
// whole dataset (the training set and the evaluated sets that are the
// dataset's own: the main dev set and a test set).
// A length is counted in words, as the paper's spaCy tokenizer counts them:
// here the words of BERT's basic tokenizer (whitespace, punctuation split
// off; text/tokenizer.h), for a sentence pair the words of both.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "downstream/glue.h"

namespace ordo::downstream {

// The words of `text` as BERT's basic tokenizer splits it.
int64_t word_count(std::string_view text);
// An example's length: the words of text_a and text_b.
int64_t example_length(const GlueExample& example);

struct LengthStats {
  double mean = 0, std = 0;  // population standard deviation
  int64_t n = 0;
};
LengthStats length_stats(const std::vector<int64_t>& lengths);

struct LengthBin {
  double from = 0, to = 0;  // [from, to); the first bin from 0, the last to +inf
  int64_t n = 0, correct = 0;
};

// The four bins of `stats` over one evaluated set: its examples' lengths, gold and predicted labels.
std::vector<LengthBin> accuracy_by_length(const LengthStats& stats, const std::vector<int64_t>& lengths,
                                          const std::vector<int>& gold, const std::vector<int>& predicted);

// {"unit": "words", "mean", "std", "bins": [{"from", "to" (null: no end), "n", "correct",
// "accuracy" (null for an empty bin)}]}: what results.json holds per evaluated set.
json::Value length_bins_json(const LengthStats& stats, const std::vector<LengthBin>& bins);

}  // namespace ordo::downstream
