#include "downstream/squad_predict.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json.h"
#include "text/utf8.h"

namespace ordo::downstream {
namespace {

// _get_best_indexes: the n largest, equal values in position order.
std::vector<int> best_indexes(const std::vector<float>& logits, int n) {
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)]; });
  if (static_cast<int>(order.size()) > n) order.resize(static_cast<size_t>(n));
  return order;
}

struct Prelim {
  size_t feature;
  int start, end;  // positions in input_ids; 0 and 0 for the null candidate
  double start_logit, end_logit;
};

}  // namespace

std::vector<SquadPrediction> predict_squad(const SquadDataset& data, const std::vector<SquadFeature>& features,
                                           const std::vector<std::vector<float>>& start_logits,
                                           const std::vector<std::vector<float>>& end_logits,
                                           const SquadPostOptions& options) {
  ORDO_CHECK(start_logits.size() == features.size() && end_logits.size() == features.size(), "SQuAD: ",
             features.size(), " features but ", start_logits.size(), " start and ", end_logits.size(),
             " end logit rows");
  ORDO_CHECK(options.n_best_size >= 1 && options.max_answer_length >= 1, "SQuAD: n_best_size (",
             options.n_best_size, ") and max_answer_length (", options.max_answer_length, ") must be >= 1");
  std::vector<std::vector<size_t>> of_question(data.questions.size());
  for (size_t f = 0; f < features.size(); ++f) {
    const SquadFeature& feature = features[f];
    ORDO_CHECK(feature.question >= 0 && static_cast<size_t>(feature.question) < data.questions.size(),
               "SQuAD: feature ", f, " is of question ", feature.question, ", outside the data set");
    ORDO_CHECK(start_logits[f].size() >= feature.input_ids.size() && end_logits[f].size() >= feature.input_ids.size(),
               "SQuAD: feature ", f, " has ", feature.input_ids.size(), " tokens but ", start_logits[f].size(),
               " start and ", end_logits[f].size(), " end logits");
    of_question[static_cast<size_t>(feature.question)].push_back(f);
  }
  std::vector<SquadPrediction> out;
  for (size_t qi = 0; qi < data.questions.size(); ++qi) {
    const SquadQuestion& q = data.questions[qi];
    const std::u32string& context = data.paragraphs[static_cast<size_t>(q.paragraph)].code_points;
    std::vector<Prelim> prelim;
    bool have_null = false;
    double score_null = 0, null_start = 0, null_end = 0;
    size_t null_feature = 0;
    for (size_t f : of_question[qi]) {
      const SquadFeature& feature = features[f];
      const std::vector<float>& s = start_logits[f];
      const std::vector<float>& e = end_logits[f];
      if (options.version_2) {
        const double null_score = double(s[0]) + double(e[0]);
        if (!have_null || null_score < score_null) {
          have_null = true;
          score_null = null_score;
          null_feature = f;
          null_start = s[0];
          null_end = e[0];
        }
      }
      const int tokens = static_cast<int>(feature.input_ids.size());
      const int ctx_first = feature.context_offset, ctx_last = feature.context_offset + feature.context_length() - 1;
      for (int start : best_indexes(s, options.n_best_size)) {
        for (int end : best_indexes(e, options.n_best_size)) {
          if (start >= tokens || end >= tokens) continue;
          if (start < ctx_first || start > ctx_last || end < ctx_first || end > ctx_last) continue;
          if (!feature.max_context[static_cast<size_t>(start - ctx_first)]) continue;
          if (end < start || end - start + 1 > options.max_answer_length) continue;
          prelim.push_back({f, start, end, s[static_cast<size_t>(start)], e[static_cast<size_t>(end)]});
        }
      }
    }
    if (have_null) prelim.push_back({null_feature, 0, 0, null_start, null_end});
    std::stable_sort(prelim.begin(), prelim.end(), [](const Prelim& a, const Prelim& b) {
      return a.start_logit + a.end_logit > b.start_logit + b.end_logit;
    });
    SquadPrediction prediction;
    prediction.id = q.id;
    std::set<std::string> seen;
    for (const Prelim& p : prelim) {
      if (static_cast<int>(prediction.nbest.size()) >= options.n_best_size) break;
      std::string text;
      if (p.start > 0) {
        const SquadFeature& feature = features[p.feature];
        const int32_t begin = feature.context_spans[static_cast<size_t>(p.start - feature.context_offset)].begin;
        const int32_t end = feature.context_spans[static_cast<size_t>(p.end - feature.context_offset)].end;
        text = text::utf8::encode(std::u32string_view(context).substr(static_cast<size_t>(begin),
                                                                       static_cast<size_t>(end - begin)));
        if (seen.count(text)) continue;
      }
      seen.insert(text);
      prediction.nbest.push_back({text, p.start_logit, p.end_logit, 0});
    }
    if (options.version_2 && !seen.count("")) prediction.nbest.push_back({"", null_start, null_end, 0});
    if (prediction.nbest.empty()) prediction.nbest.push_back({"empty", 0, 0, 0});
    // _compute_softmax over the summed logits.
    double max_score = -INFINITY;
    for (const auto& c : prediction.nbest) max_score = std::max(max_score, c.start_logit + c.end_logit);
    double total = 0;
    for (auto& c : prediction.nbest) total += c.probability = std::exp(c.start_logit + c.end_logit - max_score);
    for (auto& c : prediction.nbest) c.probability /= total;
    if (!options.version_2) {
      prediction.text = prediction.nbest[0].text;
    } else {
      const SquadCandidate* best_non_null = nullptr;
      for (const auto& c : prediction.nbest)
        if (!best_non_null && !c.text.empty()) best_non_null = &c;
      if (!best_non_null) {
        prediction.score_diff = score_null;  // against the "empty" nonce's logits 0
        prediction.text = "";
      } else {
        prediction.score_diff = score_null - best_non_null->start_logit - best_non_null->end_logit;
        prediction.text = prediction.score_diff > options.null_score_diff_threshold ? "" : best_non_null->text;
      }
    }
    out.push_back(std::move(prediction));
  }
  return out;
}

void write_squad_predictions(const std::string& path, const std::vector<SquadPrediction>& predictions) {
  json::Value out = json::Value::object();
  for (const auto& p : predictions) out[p.id] = p.text;
  write_file_atomic(path, json::dump(out, 4) + "\n");
}

void write_squad_null_odds(const std::string& path, const std::vector<SquadPrediction>& predictions) {
  json::Value out = json::Value::object();
  for (const auto& p : predictions) out[p.id] = p.score_diff;
  write_file_atomic(path, json::dump(out, 4) + "\n");
}

void write_squad_nbest(const std::string& path, const std::vector<SquadPrediction>& predictions) {
  json::Value out = json::Value::object();
  for (const auto& p : predictions) {
    json::Value list = json::Value::array();
    for (const auto& c : p.nbest) {
      json::Value entry = json::Value::object();
      entry["text"] = c.text;
      entry["probability"] = c.probability;
      entry["start_logit"] = c.start_logit;
      entry["end_logit"] = c.end_logit;
      list.push_back(std::move(entry));
    }
    out[p.id] = std::move(list);
  }
  write_file_atomic(path, json::dump(out, 4) + "\n");
}

}  // namespace ordo::downstream
