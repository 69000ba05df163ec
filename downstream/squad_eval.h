// SQuAD's official evaluation, as evaluate-v1.1.py and evaluate-v2.0.py
// (the SQuAD explorer's scripts) compute it, transcribed to C++.
//
// normalize_answer: Python's str.lower(); drop every character of
// string.punctuation (ASCII !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~ only); replace
// each of the whole words a, an, the (re.sub(r'\b(a|an|the)\b', ' '): a word is
// a run of str.isalnum() characters once '_' is gone) by a space; collapse
// whitespace (' '.join(s.split())). Tokens: the result split on whitespace.
//
// v1.1, per question, the maximum over its gold answers of
//   exact_match  normalize(prediction) == normalize(gold)
//   f1           with common = |tokens(pred) ∩ tokens(gold)| (multiset, Counter &):
//                0 when common = 0, else 2 P R / (P + R), P = common / |pred|,
//                R = common / |gold| — so two empty answers score 0;
// and the sums in percent of all questions: {"exact_match", "f1"}.
//
// v2.0: gold answers whose normalisation is empty are dropped; a question left
// with none is scored against [""]. compute_f1 differs from v1.1's on empty
// token lists: 1 when both are empty, 0 when one is. With no-answer
// probabilities, a question whose probability exceeds na_prob_thresh (1.0 by
// default) is taken as answered "no answer" (1 when it has no gold answer, else
// 0). Keys: exact, f1, total, then HasAns_* and NoAns_* (each when that kind of
// question occurs), then with the probabilities best_exact, best_exact_thresh,
// best_f1, best_f1_thresh (find_best_thresh: questions in the probabilities'
// order stably sorted by probability; starting from the count of unanswerable
// questions, an answerable one adds its score, an unanswerable one -1 when the
// raw prediction is not "" and 0 when it is; the best running total in percent
// of the questions, and the probability where it was reached, 0.0 when never
// above the start).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/json.h"
#include "downstream/squad.h"

namespace ordo::downstream {

std::string normalize_answer(std::string_view text);
std::vector<std::string> answer_tokens(std::string_view text);  // normalize_answer(text).split()

bool squad_exact(std::string_view prediction, std::string_view gold);
double squad_f1_v1(std::string_view prediction, std::string_view gold);
double squad_f1_v2(std::string_view prediction, std::string_view gold);

using SquadPredictionMap = std::vector<std::pair<std::string, std::string>>;  // id, text
using SquadNaProbs = std::vector<std::pair<std::string, double>>;            // id, probability

// Both require a prediction for every question of the data set and none for a
// question it lacks (ordo::Error naming the first few of either); v1.1 also
// requires every question to have a gold answer.
json::Value evaluate_squad_v1(const SquadDataset& data, const SquadPredictionMap& predictions);
json::Value evaluate_squad_v2(const SquadDataset& data, const SquadPredictionMap& predictions,
                              const SquadNaProbs* na_probs = nullptr, double na_prob_thresh = 1.0);

}  // namespace ordo::downstream
