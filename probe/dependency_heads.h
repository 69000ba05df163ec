// Each attention head read as a dependency parser: Clark et al. 2019 (§4.2)
// as the locality/symmetry paper uses it (§4.2, Table 8, Figure 5).
//
// A head predicts, for every word, the word its attention row peaks at; for
// a dependency relation its accuracy is the share of that relation's arcs it
// gets right, in either direction (the dependent attending most to its head,
// or the head to its dependent: Clark et al. evaluate both), and the
// relation's score is its best head over every layer, head and direction.
// The root's arc is self-reflexive (the paper: "a self-reflexive edge"): the
// root word is right when it attends most to itself.
//
// Word-level maps from token-level ones as Clark et al. make them: attention
// to a word split into pieces is the sum over its pieces, attention from it
// the mean over its pieces' rows. The special tokens ([CLS], [SEP]) stay
// units of their own, so a row that peaks there predicts no word (wrong).
//
// The paper compares the TUPE model's contextual attention (the positional
// term removed), positional attention (the token term removed) and both
// (the model as trained): three scorers over the same sentences, with
// ordo's inference-time ablations (nn/position.h: Ablation::positional gives
// the paper's "contextual" column, Ablation::contextual its "positional").
// A relation is short when its mean arc length is at most 4 words, long
// otherwise (Table 8's last rows).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/json.h"
#include "base/matrix.h"
#include "nn/heads.h"
#include "synth/synth.h"
#include "text/tokenizer.h"

namespace ordo::probe {

// Token range [first, second) of each unit of a sequence, in order.
using UnitSpans = std::vector<std::pair<int64_t, int64_t>>;

// The word-level map [units x units] of a token-level attention map
// `tokens` (row-major [length x length], rows the queries).
Matrix word_level_attention(const double* tokens, int64_t length, const UnitSpans& units);

// For each unit, the unit its row peaks at (the first on ties).
std::vector<int64_t> row_argmax(const Matrix& m);

// Arcs counted per relation, layer, head and direction.
class DependencyHeadScores {
 public:
  DependencyHeadScores(int64_t layers, int64_t heads);
  // One sentence. `heads[w]` word w's head (-1: the root), `relations[w]`
  // its label; `predicted[layer][head][w]` the word head (layer, head)'s row
  // of word w peaks at, or -1 where it peaks at a special token.
  void add(const std::vector<int>& heads, const std::vector<std::string>& relations,
           const std::vector<std::vector<std::vector<int64_t>>>& predicted);

  struct Relation {
    std::string name;
    int64_t arcs = 0;
    double distance = 0;   // mean |dependent - head| in words (0 for the root)
    double accuracy = 0;   // the best head's, in [0, 1]
    int64_t layer = 0, head = 0;  // 0-based
    std::string direction;        // "dependent→head" or "head→dependent"
  };
  // Every relation seen, the most frequent first (ties by name).
  std::vector<Relation> relations() const;
  int64_t sentences() const { return sentences_; }

 private:
  struct Counts {
    int64_t arcs = 0;
    double distance_sum = 0;
    std::vector<int64_t> correct;  // [layer][head][direction]
  };
  int64_t layers_, heads_, sentences_ = 0;
  std::vector<std::pair<std::string, Counts>> counts_;  // in first-seen order
  Counts& counts(const std::string& relation);
};

// Table 8's last rows over a list of relations: the mean accuracy of the
// short ones (mean distance <= 4), of the long ones, and of all.
struct DependencySummary {
  double short_mean = NAN, long_mean = NAN, macro = NAN;
  int64_t short_relations = 0, long_relations = 0;
};
DependencySummary summarize(const std::vector<DependencyHeadScores::Relation>& relations);

// The sentences the analysis reads: the held-out documents' sentences of a
// synthetic run (annotations.jsonl, split as pretraining split the corpus)
// whose words fit `max_tokens` tokens, at most `limit` of them.
struct ParsedSentence {
  std::vector<int32_t> tokens;  // the words' pieces, without special tokens
  UnitSpans words;              // each word's pieces in `tokens`
  std::vector<int> heads;
  std::vector<std::string> relations;
};
std::vector<ParsedSentence> held_out_parsed_sentences(const std::vector<synth::Document>& documents,
                                                      const text::Tokenizer& tokenizer, uint64_t split_seed,
                                                      double held_out_fraction, int64_t max_tokens, int64_t limit);

// Every layer and head of `model` as a parser of `sentences` ([CLS] words
// [SEP] for an encoder, the words alone for a decoder), under the three
// attentions of Table 8: the model as it is ("both"), the contextual
// attention ("contextual": nn's positional ablation) and the positional
// attention ("positional": nn's contextual ablation). An ablation the
// variant does not define is left out with its reason. JSON:
//   {"sentences", "arcs", "attentions": {"both": {"relations": [{name, arcs,
//    distance, accuracy, layer, head, direction}...], "short", "long",
//    "macro"}, "contextual": ..., "positional": ...},
//    "not_defined": {"contextual": "why", ...}}
// with the `top` most frequent relations (Table 8: 20); layers and heads 1-based.
json::Value dependency_heads(nn::PretrainingModel& model, const text::Vocab& vocab,
                             const std::vector<ParsedSentence>& sentences, int64_t top);

}  // namespace ordo::probe
