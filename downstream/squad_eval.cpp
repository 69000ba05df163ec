#include "downstream/squad_eval.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace ordo::downstream {
namespace {

bool is_ascii_punctuation(char32_t c) {  // Python's string.punctuation
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

bool is_article(std::u32string_view word) { return word == U"a" || word == U"an" || word == U"the"; }

// The number of tokens two lists share, counted with multiplicity (Counter &).
size_t common_tokens(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::unordered_map<std::string, long> counts;
  for (const auto& t : a) ++counts[t];
  size_t same = 0;
  for (const auto& t : b) {
    auto it = counts.find(t);
    if (it != counts.end() && it->second > 0) {
      --it->second;
      ++same;
    }
  }
  return same;
}

double f1_of(size_t same, size_t n_pred, size_t n_gold) {
  const double precision = 1.0 * static_cast<double>(same) / static_cast<double>(n_pred);
  const double recall = 1.0 * static_cast<double>(same) / static_cast<double>(n_gold);
  return (2 * precision * recall) / (precision + recall);
}

// Every question has exactly one prediction and every prediction a question.
std::unordered_map<std::string, const std::string*> match_predictions(const SquadDataset& data,
                                                                      const SquadPredictionMap& predictions,
                                                                      const std::string& what) {
  std::unordered_map<std::string, const std::string*> by_id;
  for (const auto& [id, text] : predictions) by_id.emplace(id, &text);
  std::unordered_set<std::string> questions;
  std::vector<std::string> missing, unknown;
  for (const SquadQuestion& q : data.questions) {
    questions.insert(q.id);
    if (!by_id.count(q.id)) missing.push_back(q.id);
  }
  for (const auto& [id, text] : predictions)
    if (!questions.count(id)) unknown.push_back(id);
  auto first_few = [](const std::vector<std::string>& ids) {
    std::string out;
    for (size_t i = 0; i < ids.size() && i < 5; ++i) out += (i ? ", '" : "'") + ids[i] + "'";
    return out + (ids.size() > 5 ? ", ..." : "");
  };
  ORDO_CHECK(missing.empty(), what, " lack ", missing.size(), " of the ",
             data.questions.size(), " questions of ", data.path, ": ", first_few(missing));
  ORDO_CHECK(unknown.empty(), what, " hold ", unknown.size(),
             " id", unknown.size() == 1 ? "" : "s", " that ", data.path, " does not have: ", first_few(unknown));
  return by_id;
}

}  // namespace

std::string normalize_answer(std::string_view text) {
  const std::u32string input = text::utf8::decode_or_throw(text, "answer");
  std::u32string lowered, kept;
  text::unicode::lower(input, lowered);
  for (char32_t c : lowered)
    if (!is_ascii_punctuation(c)) kept.push_back(c);
  // Whole-word articles become spaces; the words are runs of \w (alnum: '_' is gone).
  std::u32string spaced;
  for (size_t i = 0; i < kept.size();) {
    if (!text::unicode::is_alnum(kept[i])) {
      spaced.push_back(kept[i++]);
      continue;
    }
    size_t j = i;
    while (j < kept.size() && text::unicode::is_alnum(kept[j])) ++j;
    const std::u32string_view word(kept.data() + i, j - i);
    if (is_article(word)) {
      spaced.push_back(U' ');
    } else {
      spaced.append(word);
    }
    i = j;
  }
  std::u32string joined;
  for (size_t i = 0; i < spaced.size();) {
    while (i < spaced.size() && text::unicode::is_python_space(spaced[i])) ++i;
    size_t j = i;
    while (j < spaced.size() && !text::unicode::is_python_space(spaced[j])) ++j;
    if (j > i) {
      if (!joined.empty()) joined.push_back(U' ');
      joined.append(spaced, i, j - i);
    }
    i = j;
  }
  return text::utf8::encode(joined);
}

std::vector<std::string> answer_tokens(std::string_view text) {
  const std::string normalized = normalize_answer(text);  // single spaces, none at the ends
  std::vector<std::string> tokens;
  for (size_t i = 0; i < normalized.size();) {
    size_t j = normalized.find(' ', i);
    if (j == std::string::npos) j = normalized.size();
    tokens.push_back(normalized.substr(i, j - i));
    i = j + 1;
  }
  return tokens;
}

bool squad_exact(std::string_view prediction, std::string_view gold) {
  return normalize_answer(prediction) == normalize_answer(gold);
}

double squad_f1_v1(std::string_view prediction, std::string_view gold) {
  const auto p = answer_tokens(prediction), g = answer_tokens(gold);
  const size_t same = common_tokens(p, g);
  return same == 0 ? 0.0 : f1_of(same, p.size(), g.size());
}

double squad_f1_v2(std::string_view prediction, std::string_view gold) {
  const auto p = answer_tokens(prediction), g = answer_tokens(gold);
  if (p.empty() || g.empty()) return p == g ? 1.0 : 0.0;
  const size_t same = common_tokens(p, g);
  return same == 0 ? 0.0 : f1_of(same, p.size(), g.size());
}

json::Value evaluate_squad_v1(const SquadDataset& data, const SquadPredictionMap& predictions) {
  ORDO_CHECK(!data.questions.empty(), data.path, " holds no questions");
  const auto by_id = match_predictions(data, predictions, "the predictions");
  double exact = 0, f1 = 0;
  for (const SquadQuestion& q : data.questions) {
    ORDO_CHECK(!q.answers.empty(), data.path, ": question '", q.id, "' has no gold answer; SQuAD v1.1 scores "
               "answerable questions only (score a v2.0 file with --task squad2)");
    const std::string& prediction = *by_id.at(q.id);
    bool best_exact = false;
    double best_f1 = 0;
    for (const SquadAnswer& a : q.answers) {
      best_exact = best_exact || squad_exact(prediction, a.text);
      best_f1 = std::max(best_f1, squad_f1_v1(prediction, a.text));
    }
    exact += best_exact;
    f1 += best_f1;
  }
  const double total = static_cast<double>(data.questions.size());
  json::Value out = json::Value::object();
  out["exact_match"] = 100.0 * exact / total;
  out["f1"] = 100.0 * f1 / total;
  return out;
}

json::Value evaluate_squad_v2(const SquadDataset& data, const SquadPredictionMap& predictions,
                              const SquadNaProbs* na_probs, double na_prob_thresh) {
  ORDO_CHECK(!data.questions.empty(), data.path, " holds no questions");
  const auto by_id = match_predictions(data, predictions, "the predictions");
  std::unordered_map<std::string, double> probability;
  if (na_probs) {
    SquadPredictionMap as_ids;
    for (const auto& [id, p] : *na_probs) as_ids.emplace_back(id, "");
    match_predictions(data, as_ids, "the no-answer probabilities");
    for (const auto& [id, p] : *na_probs) probability[id] = p;
  }
  // get_raw_scores, then apply_no_ans_threshold.
  const size_t n = data.questions.size();
  std::vector<double> exact_raw(n), f1_raw(n), exact(n), f1(n);
  std::vector<bool> has_answer(n);
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < n; ++i) {
    const SquadQuestion& q = data.questions[i];
    index[q.id] = i;
    has_answer[i] = !q.answers.empty();
    std::vector<std::string> gold;
    for (const SquadAnswer& a : q.answers)
      if (!normalize_answer(a.text).empty()) gold.push_back(a.text);
    if (gold.empty()) gold.push_back("");
    const std::string& prediction = *by_id.at(q.id);
    for (const std::string& g : gold) {
      exact_raw[i] = std::max(exact_raw[i], squad_exact(prediction, g) ? 1.0 : 0.0);
      f1_raw[i] = std::max(f1_raw[i], squad_f1_v2(prediction, g));
    }
    const double p = na_probs ? probability.at(q.id) : 0.0;
    const bool predicted_no_answer = p > na_prob_thresh;
    exact[i] = predicted_no_answer ? (has_answer[i] ? 0.0 : 1.0) : exact_raw[i];
    f1[i] = predicted_no_answer ? (has_answer[i] ? 0.0 : 1.0) : f1_raw[i];
  }
  json::Value out = json::Value::object();
  // make_eval_dict over all questions, then over those with and without answers.
  auto add = [&](const std::string& prefix, bool want_filter, bool want_has_answer) {
    double e = 0, f = 0;
    int64_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      if (want_filter && has_answer[i] != want_has_answer) continue;
      e += exact[i];
      f += f1[i];
      ++total;
    }
    if (total == 0) return;
    out[prefix + "exact"] = 100.0 * e / static_cast<double>(total);
    out[prefix + "f1"] = 100.0 * f / static_cast<double>(total);
    out[prefix + "total"] = total;
  };
  add("", false, false);
  add("HasAns_", true, true);
  add("NoAns_", true, false);
  if (na_probs) {
    // find_best_thresh: sorted(na_probs, key=na_probs.get) is stable in the file's order.
    std::vector<size_t> order(na_probs->size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return (*na_probs)[a].second < (*na_probs)[b].second; });
    auto best = [&](const std::vector<double>& raw, const char* key, const char* thresh_key) {
      double current = static_cast<double>(std::count(has_answer.begin(), has_answer.end(), false));
      double best_score = current, best_thresh = 0.0;
      for (size_t k : order) {
        const auto& [id, p] = (*na_probs)[k];
        const size_t i = index.at(id);
        current += has_answer[i] ? raw[i] : (by_id.at(id)->empty() ? 0.0 : -1.0);
        if (current > best_score) {
          best_score = current;
          best_thresh = p;
        }
      }
      out[key] = 100.0 * best_score / static_cast<double>(n);
      out[thresh_key] = best_thresh;
    };
    best(exact_raw, "best_exact", "best_exact_thresh");
    best(f1_raw, "best_f1", "best_f1_thresh");
  }
  return out;
}

}  // namespace ordo::downstream
