// Accuracy by sentence length (downstream/length_bins.h).
#include "downstream/length_bins.h"

#include <cmath>
#include <limits>

#include "base/error.h"
#include "text/tokenizer.h"

namespace ordo::downstream {

int64_t word_count(std::string_view text) {
  static const text::BasicTokenizer words(/*lower_case=*/false);
  int64_t n = 0;
  words.split(text, [&](std::u32string_view, bool) { ++n; });
  return n;
}

int64_t example_length(const GlueExample& example) {
  return word_count(example.text_a) + (example.text_b.empty() ? 0 : word_count(example.text_b));
}

LengthStats length_stats(const std::vector<int64_t>& lengths) {
  LengthStats s;
  s.n = static_cast<int64_t>(lengths.size());
  if (lengths.empty()) return s;
  for (int64_t l : lengths) s.mean += static_cast<double>(l);
  s.mean /= static_cast<double>(s.n);
  double squares = 0;
  for (int64_t l : lengths) squares += (static_cast<double>(l) - s.mean) * (static_cast<double>(l) - s.mean);
  s.std = std::sqrt(squares / static_cast<double>(s.n));
  return s;
}

std::vector<LengthBin> accuracy_by_length(const LengthStats& stats, const std::vector<int64_t>& lengths,
                                          const std::vector<int>& gold, const std::vector<int>& predicted) {
  ORDO_CHECK(lengths.size() == gold.size() && gold.size() == predicted.size(), "accuracy_by_length: ",
             lengths.size(), " lengths, ", gold.size(), " gold labels and ", predicted.size(), " predictions");
  const double cuts[] = {stats.mean - stats.std, stats.mean, stats.mean + stats.std};
  std::vector<LengthBin> bins(4);
  bins[0].from = 0;
  for (int b = 0; b < 3; ++b) bins[b].to = bins[b + 1].from = cuts[b];
  bins[3].to = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < lengths.size(); ++i) {
    const double l = static_cast<double>(lengths[i]);
    const size_t b = static_cast<size_t>((l >= cuts[0]) + (l >= cuts[1]) + (l >= cuts[2]));
    ++bins[b].n;
    bins[b].correct += gold[i] == predicted[i];
  }
  return bins;
}

json::Value length_bins_json(const LengthStats& stats, const std::vector<LengthBin>& bins) {
  json::Value out = json::Value::object(), list = json::Value::array();
  out["unit"] = "words";
  out["mean"] = stats.mean;
  out["std"] = stats.std;
  out["dataset_examples"] = stats.n;
  for (const LengthBin& b : bins) {
    json::Value bin = json::Value::object();
    bin["from"] = b.from;
    bin["to"] = std::isinf(b.to) ? json::Value() : json::Value(b.to);
    bin["n"] = b.n;
    bin["correct"] = b.correct;
    bin["accuracy"] = b.n ? json::Value(static_cast<double>(b.correct) / static_cast<double>(b.n)) : json::Value();
    list.push_back(bin);
  }
  out["bins"] = list;
  return out;
}

}  // namespace ordo::downstream
