#include "probe/dependency_heads.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "autograd/var.h"
#include "base/error.h"
#include "nn/bert.h"
#include "nn/evaluate_batches.h"
#include "nn/position.h"
#include "text/corpus.h"

namespace ordo::probe {

Matrix word_level_attention(const double* tokens, int64_t length, const UnitSpans& units) {
  const int64_t n = static_cast<int64_t>(units.size());
  for (const auto& [first, end] : units)
    ORDO_CHECK(0 <= first && first < end && end <= length, "word_level_attention: unit [", first, ", ", end,
               ") is not a non-empty range of the ", length, " tokens");
  Matrix m(n, n);
  for (int64_t u = 0; u < n; ++u) {
    const double rows = static_cast<double>(units[u].second - units[u].first);
    for (int64_t i = units[u].first; i < units[u].second; ++i)
      for (int64_t v = 0; v < n; ++v)
        for (int64_t j = units[v].first; j < units[v].second; ++j) m(u, v) += tokens[i * length + j] / rows;
  }
  return m;
}

std::vector<int64_t> row_argmax(const Matrix& m) {
  std::vector<int64_t> best(static_cast<size_t>(m.rows), 0);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 1; j < m.cols; ++j)
      if (m(i, j) > m(i, best[static_cast<size_t>(i)])) best[static_cast<size_t>(i)] = j;
  return best;
}

// ---- counting ----------------------------------------------------------------------------------

namespace {
const char* const kDirections[2] = {"dependent→head", "head→dependent"};
}

DependencyHeadScores::DependencyHeadScores(int64_t layers, int64_t heads) : layers_(layers), heads_(heads) {
  ORDO_CHECK(layers >= 1 && heads >= 1, "DependencyHeadScores: ", layers, " layers and ", heads, " heads");
}

DependencyHeadScores::Counts& DependencyHeadScores::counts(const std::string& relation) {
  for (auto& [name, c] : counts_)
    if (name == relation) return c;
  Counts c;
  c.correct.assign(static_cast<size_t>(layers_ * heads_ * 2), 0);
  counts_.emplace_back(relation, std::move(c));
  return counts_.back().second;
}

void DependencyHeadScores::add(const std::vector<int>& heads, const std::vector<std::string>& relations,
                               const std::vector<std::vector<std::vector<int64_t>>>& predicted) {
  const int64_t words = static_cast<int64_t>(heads.size());
  ORDO_CHECK(relations.size() == heads.size(), "DependencyHeadScores::add: ", heads.size(), " heads and ",
             relations.size(), " relations");
  ORDO_CHECK(static_cast<int64_t>(predicted.size()) == layers_, "DependencyHeadScores::add: predictions for ",
             predicted.size(), " layers, expected ", layers_);
  for (const auto& layer : predicted) {
    ORDO_CHECK(static_cast<int64_t>(layer.size()) == heads_, "DependencyHeadScores::add: predictions for ",
               layer.size(), " heads, expected ", heads_);
    for (const auto& p : layer)
      ORDO_CHECK(static_cast<int64_t>(p.size()) == words, "DependencyHeadScores::add: ", p.size(),
                 " predictions for ", words, " words");
  }
  for (int64_t d = 0; d < words; ++d) {
    const int64_t h = heads[static_cast<size_t>(d)] < 0 ? d : heads[static_cast<size_t>(d)];  // the root: itself
    ORDO_CHECK(h < words, "DependencyHeadScores::add: word ", d, "'s head ", h, " is past the ", words, " words");
    Counts& c = counts(relations[static_cast<size_t>(d)]);
    ++c.arcs;
    c.distance_sum += static_cast<double>(std::llabs(d - h));
    for (int64_t l = 0; l < layers_; ++l)
      for (int64_t k = 0; k < heads_; ++k) {
        const std::vector<int64_t>& p = predicted[static_cast<size_t>(l)][static_cast<size_t>(k)];
        int64_t* correct = &c.correct[static_cast<size_t>((l * heads_ + k) * 2)];
        correct[0] += p[static_cast<size_t>(d)] == h;
        correct[1] += p[static_cast<size_t>(h)] == d;
      }
  }
  ++sentences_;
}

std::vector<DependencyHeadScores::Relation> DependencyHeadScores::relations() const {
  std::vector<Relation> out;
  for (const auto& [name, c] : counts_) {
    Relation r;
    r.name = name;
    r.arcs = c.arcs;
    r.distance = c.distance_sum / static_cast<double>(c.arcs);
    int64_t best = 0;  // (layer, head, direction) with the most right, the first on ties
    for (size_t i = 1; i < c.correct.size(); ++i)
      if (c.correct[i] > c.correct[static_cast<size_t>(best)]) best = static_cast<int64_t>(i);
    r.accuracy = static_cast<double>(c.correct[static_cast<size_t>(best)]) / static_cast<double>(c.arcs);
    r.layer = best / 2 / heads_;
    r.head = best / 2 % heads_;
    r.direction = kDirections[best % 2];
    out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(), [](const Relation& a, const Relation& b) {
    return a.arcs != b.arcs ? a.arcs > b.arcs : a.name < b.name;
  });
  return out;
}

DependencySummary summarize(const std::vector<DependencyHeadScores::Relation>& relations) {
  DependencySummary s;
  double short_sum = 0, long_sum = 0;
  for (const auto& r : relations) {
    if (r.distance <= 4) short_sum += r.accuracy, ++s.short_relations;
    else long_sum += r.accuracy, ++s.long_relations;
  }
  const int64_t all = s.short_relations + s.long_relations;
  if (s.short_relations > 0) s.short_mean = short_sum / static_cast<double>(s.short_relations);
  if (s.long_relations > 0) s.long_mean = long_sum / static_cast<double>(s.long_relations);
  if (all > 0) s.macro = (short_sum + long_sum) / static_cast<double>(all);
  return s;
}

// ---- sentences ---------------------------------------------------------------------------------

std::vector<ParsedSentence> held_out_parsed_sentences(const std::vector<synth::Document>& documents,
                                                      const text::Tokenizer& tokenizer, uint64_t split_seed,
                                                      double held_out_fraction, int64_t max_tokens, int64_t limit) {
  std::vector<ParsedSentence> out;
  for (size_t d = 0; d < documents.size() && static_cast<int64_t>(out.size()) < limit; ++d) {
    if (!text::is_held_out(split_seed, static_cast<int64_t>(d), held_out_fraction)) continue;
    for (const synth::Sentence& s : documents[d].sentences) {
      if (static_cast<int64_t>(out.size()) >= limit) break;
      ParsedSentence p;
      bool fits = true;
      for (const std::string& word : s.words) {
        const std::vector<int32_t> pieces = tokenizer.encode(word);
        const int64_t first = static_cast<int64_t>(p.tokens.size());
        p.tokens.insert(p.tokens.end(), pieces.begin(), pieces.end());
        p.words.emplace_back(first, static_cast<int64_t>(p.tokens.size()));
        fits = fits && !pieces.empty() && static_cast<int64_t>(p.tokens.size()) <= max_tokens;
      }
      if (!fits) continue;
      for (const synth::Arc& a : s.arcs) p.heads.push_back(a.head), p.relations.push_back(a.label);
      out.push_back(std::move(p));
    }
  }
  return out;
}

// ---- the model's heads ----------------------------------------------------------------------------

namespace {

json::Value relation_json(const DependencyHeadScores::Relation& r) {
  json::Value e = json::Value::object();
  e["relation"] = r.name;
  e["arcs"] = r.arcs;
  e["distance"] = r.distance;
  e["accuracy"] = r.accuracy;
  e["layer"] = r.layer + 1;
  e["head"] = r.head + 1;
  e["direction"] = r.direction;
  return e;
}

json::Value number_or_null(double x) { return std::isnan(x) ? json::Value() : json::Value(x); }

}  // namespace

json::Value dependency_heads(nn::PretrainingModel& model, const text::Vocab& vocab,
                             const std::vector<ParsedSentence>& sentences, int64_t top) {
  ORDO_CHECK(!sentences.empty(), "dependency heads: no sentence to parse");
  const nn::BertConfig& config = model.bert.config();
  const bool encoder = !config.decoder;
  const text::SpecialIds& sp = vocab.special();
  const int64_t layers = config.num_hidden_layers, heads = config.num_attention_heads;
  const std::pair<const char*, nn::Ablation> attentions[3] = {
      {"both", nn::Ablation::none}, {"contextual", nn::Ablation::positional}, {"positional", nn::Ablation::contextual}};
  json::Value result = json::Value::object();
  json::Value by_attention = json::Value::object(), not_defined = json::Value::object();
  int64_t arcs = 0;
  for (const ParsedSentence& s : sentences) arcs += static_cast<int64_t>(s.heads.size());
  NoGradGuard no_grad;
  for (const auto& [name, ablation] : attentions) {
    DependencyHeadScores scores(layers, heads);
    try {
      // Each sentence's forward on a thread of its own (nn/evaluate_batches.h), its predictions in
      // its slot; the scores then added in the sentences' order.
      std::vector<std::vector<std::vector<std::vector<int64_t>>>> predictions(sentences.size());
      nn::evaluate_batches(static_cast<int64_t>(sentences.size()), Device::cpu(), [&](int64_t i) {
        const ParsedSentence& s = sentences[static_cast<size_t>(i)];
        std::vector<int64_t> ids;
        UnitSpans units;  // [CLS], the words, [SEP] for an encoder; the words for a decoder
        const int64_t shift = encoder ? 1 : 0;
        if (encoder) ids.push_back(sp.cls), units.emplace_back(0, 1);
        for (int32_t t : s.tokens) ids.push_back(t);
        for (const auto& [first, end] : s.words) units.emplace_back(first + shift, end + shift);
        if (encoder) ids.push_back(sp.sep), units.emplace_back(ids.size() - 1, ids.size());
        const int64_t L = static_cast<int64_t>(ids.size());
        nn::BertInputs in;
        in.input_ids = Tensor::from_vector(ids, Shape{1, L});
        nn::Context ctx = nn::Context::eval();
        ctx.ablate = ablation;
        nn::ForwardTrace trace;
        trace.keep_attentions = true;
        model.bert.forward(in, ctx, &trace);
        std::vector<std::vector<std::vector<int64_t>>>& predicted = predictions[static_cast<size_t>(i)];
        predicted.resize(static_cast<size_t>(layers));
        for (int64_t l = 0; l < layers; ++l) {
          const std::vector<double> a = trace.attentions[static_cast<size_t>(l)].to(Device::cpu()).contiguous().to_doubles();
          for (int64_t h = 0; h < heads; ++h) {
            const std::vector<int64_t> best = row_argmax(word_level_attention(&a[static_cast<size_t>(h * L * L)], L, units));
            std::vector<int64_t> words;  // as word indices; -1 where the row peaks at a special token
            for (size_t w = 0; w < s.words.size(); ++w) {
              const int64_t u = best[w + static_cast<size_t>(shift)] - shift;
              words.push_back(u >= 0 && u < static_cast<int64_t>(s.words.size()) ? u : -1);
            }
            predicted[static_cast<size_t>(l)].push_back(std::move(words));
          }
        }
      });
      for (size_t i = 0; i < sentences.size(); ++i) scores.add(sentences[i].heads, sentences[i].relations, predictions[i]);
    } catch (const Error& e) {
      not_defined[name] = std::string(e.what());
      continue;
    }
    std::vector<DependencyHeadScores::Relation> relations = scores.relations();
    if (static_cast<int64_t>(relations.size()) > top) relations.resize(static_cast<size_t>(top));
    const DependencySummary summary = summarize(relations);
    json::Value list = json::Value::array();
    for (const auto& r : relations) list.push_back(relation_json(r));
    json::Value a = json::Value::object();
    a["relations"] = list;
    a["short"] = number_or_null(summary.short_mean);
    a["long"] = number_or_null(summary.long_mean);
    a["macro"] = number_or_null(summary.macro);
    a["short_relations"] = summary.short_relations;
    a["long_relations"] = summary.long_relations;
    by_attention[name] = a;
  }
  result["sentences"] = static_cast<int64_t>(sentences.size());
  result["arcs"] = arcs;
  result["top"] = top;
  result["attentions"] = by_attention;
  result["not_defined"] = not_defined;
  return result;
}

}  // namespace ordo::probe
