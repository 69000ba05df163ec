// Start/end logits of the windows -> answers, as run_squad.py's
// write_predictions chooses them, and the official files:
//
//   per window, the n_best_size highest start and end logits (a stable sort:
//   equal logits keep position order); a (start, end) pair is a candidate when
//   both are tokens of the window's context, start is in its max-context window,
//   end >= start and end - start + 1 <= max_answer_length;
//   v2.0: the null score of a window is start[0] + end[0] (the [CLS] position);
//   the question's is the smallest, and its window's null pair is a candidate;
//   candidates sorted by start + end logit (stable, descending); the n-best are
//   the first n_best_size distinct answer texts, a text being the context's own
//   characters from the first token's first to the last token's last (through
//   the tokenizer's offsets: accents, case and spacing as in the context); the
//   null candidate's text is "" (added after the others when it did not make
//   the n-best); their probabilities a softmax over the summed logits;
//   v1.1: the answer is the best text ("empty" when no candidate survived);
//   v2.0: score_diff = null score - the best non-null candidate's summed logits,
//   and the answer is "" when score_diff > null_score_diff_threshold, else that
//   candidate's text. score_diff is what null_odds.json holds (the official
//   evaluation's no-answer "probabilities", any real numbers).
// A question with no non-null candidate at all (no window, or every pair
// filtered out) is answered "" in v2.0, with score_diff = its null score (0
// without windows): the non-null side counts as run_squad's "empty" nonce of
// logits 0.
#pragma once

#include <string>
#include <vector>

#include "downstream/squad.h"
#include "downstream/squad_features.h"

namespace ordo::downstream {

struct SquadPostOptions {
  int n_best_size = 20;
  int max_answer_length = 30;
  bool version_2 = false;
  double null_score_diff_threshold = 0.0;
};

struct SquadCandidate {
  std::string text;
  double start_logit = 0, end_logit = 0, probability = 0;
};

struct SquadPrediction {
  std::string id;
  std::string text;            // the answer ("" for no answer)
  double score_diff = 0;       // v2.0: null score - best non-null score
  std::vector<SquadCandidate> nbest;
};

// logits[f] are feature f's start (end) logits over at least its input_ids
// (over the padded length to reproduce run_squad exactly, whose top-n search
// sees the padding positions too). Every question of `data` gets a prediction,
// in question order.
std::vector<SquadPrediction> predict_squad(const SquadDataset& data, const std::vector<SquadFeature>& features,
                                           const std::vector<std::vector<float>>& start_logits,
                                           const std::vector<std::vector<float>>& end_logits,
                                           const SquadPostOptions& options);

// The official files, written atomically: predictions.json {id: text};
// null_odds.json {id: score_diff}; nbest_predictions.json {id: [{text,
// probability, start_logit, end_logit}, ..]}.
void write_squad_predictions(const std::string& path, const std::vector<SquadPrediction>& predictions);
void write_squad_null_odds(const std::string& path, const std::vector<SquadPrediction>& predictions);
void write_squad_nbest(const std::string& path, const std::vector<SquadPrediction>& predictions);

}  // namespace ordo::downstream
