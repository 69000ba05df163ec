// Identical word probing (Wang et al. 2021, §4.2, Eq. 8).
//
// For N words w drawn at random from the vocabulary, the sequence
//     [CLS] w w ... w [SEP]        (L tokens in all: L counts [CLS] and [SEP],
//                                   so w is repeated L - 2 times)
// goes through the model in evaluation mode (no dropout). A layer's softmax
// attention [heads, L, L] is averaged over the heads and then over the N
// words: the L x L matrix A-bar^(l) of Eq. 8, whose rows are queries and
// columns keys. As every token is the same word, what is left of the
// attention is what positions (and the specials at the ends) contribute.
// The same average of the pre-softmax scores (every score term, no mask) is
// the "unnormalised attention" Wang et al. draw in their App. J; the
// indicators are computed on the softmax matrix, as they do.
//
// Words: vocabulary ids that are neither special tokens ([PAD], [UNK],
// [CLS], [SEP], [MASK]) nor word pieces (WordPiece's "##..."; in a byte-level
// BPE vocabulary, a word is "Ġ" + letters: a word start), drawn without
// replacement: the first N of them shuffled by ordo's counter-based Philox
// (base/counter_rng.h), so one seed gives the same words on every platform.
// The specials are the model's own (text/subword.h's layout): [CLS] ... [SEP]
// for BERT, <s> ... </s> for RoBERTa; GPT-2's tokenizer adds none, so its
// sequence is L words (as Wang et al. 2021 probe it, Table 7: "w/o special
// tokens" is then the whole matrix).
//
// The function is pure: a model and a vocabulary in, matrices out; the
// files are probe/probe_folder.h's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/heads.h"
#include "plot/plot.h"
#include "probe/indicators.h"
#include "probe/probe_matrix.h"
#include "text/tokenizer.h"

namespace ordo::probe {

struct ProbeOptions {
  int64_t words = 300;      // N (Wang et al. use 300)
  int64_t length = 0;       // L, [CLS] and [SEP] included; 0: default_probe_length
  std::vector<int> layers;  // 1-based; empty: {1}
  uint64_t seed = 1;        // the word draw
  int64_t batch = 0;        // words per forward pass; 0: chosen to bound memory (the result does not depend on it)
  MatmulPrecision precision = MatmulPrecision::fp32;  // of the forwards' products (ordo probe --precision)
};

struct LayerProbe {
  int layer = 0;      // 1-based
  Matrix attention;   // softmax, averaged over heads and words (Eq. 8)
  Matrix scores;      // pre-softmax scores, averaged over heads and words (App. J)
  std::vector<Matrix> head_attention;  // softmax of each head, averaged over the words (the
                                       // locality/symmetry paper's Fig. 8: BERT's positional weights per head)
};

struct ProbeResult {
  std::vector<int32_t> word_ids;  // in the order drawn
  int64_t length = 0;
  bool specials = true;           // the first and last tokens are the model's specials
  std::vector<LayerProbe> layers;
};

// The length probed when none is given: 128 (Wang et al. draw the first 128
// positions, footnote 6), or fewer when an absolute table has fewer rows.
int64_t default_probe_length(const nn::PretrainingModel& model);

// The N probe words: ids neither special nor continuations, without
// replacement. An error when the vocabulary has fewer than N such words.
std::vector<int32_t> draw_probe_words(const text::SubwordTokenizer& tokenizer, int64_t n, uint64_t seed);
// How many words there are to draw from.
int64_t probe_words_available(const text::SubwordTokenizer& tokenizer);

// Runs the probe. Errors (with the value and the limit): N < 1, L < 3 (one
// word between the specials at least), L beyond an absolute position table,
// a layer outside 1..num_hidden_layers, a tokenizer with more ids than the
// model's word embeddings (fewer is HF's padded vocab_size, and fine).
ProbeResult identical_word_probe(const nn::PretrainingModel& model, const text::SubwordTokenizer& tokenizer,
                                 const ProbeOptions& options);
// The same with a WordPiece vocabulary (an ordo run's vocab.txt).
inline ProbeResult identical_word_probe(const nn::PretrainingModel& model, const text::Vocab& vocab,
                                        const ProbeOptions& options) {
  return identical_word_probe(model, text::Tokenizer(vocab), options);
}
inline std::vector<int32_t> draw_probe_words(const text::Vocab& vocab, int64_t n, uint64_t seed) {
  return draw_probe_words(text::Tokenizer(vocab), n, seed);
}
inline int64_t probe_words_available(const text::Vocab& vocab) {
  return probe_words_available(text::Tokenizer(vocab));
}

// The indicators of one probed layer with the special tokens' rows and
// columns and without them (EQUATIONS.md: "both with and without"):
//   {"with_special": {...}, "without_special": {...}}, each indicators_json.
// Without specials in the sequence (GPT-2) both are of the whole matrix.
json::Value layer_indicators_json(const Matrix& attention, bool specials = true);

// ---- heatmaps of probing maps ----

// For a probing matrix ([CLS] first, [SEP] last): the colour range of the
// word positions alone. [CLS] and [SEP] draw far more (or far less) attention
// than any word; with them in the range every word position would be one
// colour, so their rows and columns saturate instead. Leaves the style as it
// is when fewer than 3 rows or the word positions are all equal (to 1e-6 of
// the largest entry, the indicators' rounding tolerance).
void range_of_word_positions(plot::HeatmapStyle& style, const Matrix& m);

}  // namespace ordo::probe
