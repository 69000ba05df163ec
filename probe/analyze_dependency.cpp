// `ordo analyze`: every layer and head as a dependency parser of held-out
// synthetic sentences, with the positional and the contextual term each
// removed (the locality/symmetry paper, Table 8 and Figure 5).
#include <algorithm>

#include "base/file_io.h"
#include "probe/analyze_parts.h"
#include "probe/dependency_heads.h"
#include "synth/synth.h"
#include "text/tokenizer.h"

namespace ordo::probe {

using namespace analyses;

namespace {

// Every layer and head as a dependency parser of held-out synthetic
// sentences, with the positional and the contextual term each removed
// (the locality/symmetry paper, Table 8 and Figure 5; probe/dependency_heads.h).
constexpr int64_t kDependencySentences = 500;  // ~6,000 arcs: every one of Table 8's 20 relations seen often
constexpr int64_t kDependencyRelations = 20;   // Table 8's top 20

}  // namespace

void analyses::dependency_parsing_heads(RunState& c, Output& out) {
  const std::string title = "Attention heads as dependency parsers: contextual, positional and both (Table 8, Fig. 5)";
  if (c.run_dir.empty()) return out.skip(title, "a checkpoint outside an ordo run has no annotated sentences (use --run)");
  const std::string annotations = c.run_dir + "/data/annotations.jsonl";
  if (c.run.data.corpus != "synthetic" || !file_exists(annotations))
    return out.skip(title, "the run's corpus is not the synthetic language, whose sentences carry dependency arcs");
  if (c.run.data.held_out_fraction <= 0) return out.skip(title, "the run has no held-out split (data.held_out_fraction 0)");
  const text::Vocab vocab = text::Vocab::load(c.run_dir + "/vocab.txt");
  text::TokenizerOptions to;
  to.lower_case = c.run.data.lower_case;
  const text::Tokenizer tokenizer(vocab, to);
  const bool encoder = !c.model->bert.config().decoder;
  const std::vector<ParsedSentence> sentences =
      held_out_parsed_sentences(synth::read_annotations(annotations), tokenizer, c.run.data.seed,
                                c.run.data.held_out_fraction, c.length - (encoder ? 2 : 0), kDependencySentences);
  if (sentences.empty()) return out.skip(title, "no held-out sentence fits the trained length");
  json::Value j = dependency_heads(*c.model, vocab, sentences, kDependencyRelations);
  j["what"] = "each head's most-attended word as the predicted dependency (either direction), the best head per relation";
  out.json_file("dependency_heads.json", j);

  // The table (Table 8's layout: one row per relation, a column per attention) and Figure 5.
  const json::Value& both = j["attentions"]["both"];
  std::vector<std::string> names;
  for (const char* a : {"contextual", "positional", "both"})
    if (j["attentions"].contains(a)) names.push_back(a);
  std::string csv = "relation,arcs,distance";
  for (const std::string& a : names) csv += "," + a;
  csv += "\n";
  std::vector<plot::svg::Line> series;
  for (size_t n = 0; n < names.size(); ++n) series.push_back({names[n], {}, {}, static_cast<int>(n)});
  std::vector<std::pair<double, size_t>> by_distance;
  for (size_t r = 0; r < both["relations"].size(); ++r) by_distance.emplace_back(both["relations"][r]["distance"].as_number(), r);
  std::sort(by_distance.begin(), by_distance.end());
  for (size_t r = 0; r < both["relations"].size(); ++r) {
    const json::Value& row = both["relations"][r];
    csv += row["relation"].as_string() + "," + std::to_string(row["arcs"].as_int()) + "," + fmt("%.4g", row["distance"].as_number());
    for (const std::string& a : names) csv += "," + fmt("%.4f", j["attentions"][a]["relations"][r]["accuracy"].as_number());
    csv += "\n";
  }
  for (const auto& [distance, r] : by_distance)
    for (size_t n = 0; n < names.size(); ++n) {
      series[n].x.push_back(distance);
      series[n].y.push_back(100 * j["attentions"][names[n]]["relations"][r]["accuracy"].as_number());
    }
  out.file("dependency_heads.csv", csv);
  plot::svg::ChartStyle s = chart(c.variant + ": best head's accuracy against the relation's mean length",
                                  "mean dependency length (words)", "accuracy (%)");
  s.y_min = 0;
  s.y_max = 100;
  out.svg("dependency_heads.svg", plot::svg::line_chart(series, s));
  std::string caption = "The top " + std::to_string(both["relations"].size()) + " relations of " +
                        std::to_string(j["sentences"].as_int()) + " held-out sentences (" +
                        std::to_string(j["arcs"].as_int()) + " arcs), each scored by its best layer, head and direction; "
                        "contextual: the positional term removed, positional: the token term removed. Macro mean (short <= 4 words / long):";
  for (const std::string& a : names) {
    const json::Value& x = j["attentions"][a];
    auto pct = [](const json::Value& v) { return v.is_null() ? std::string("-") : fmt("%.1f", 100 * v.as_number()); };
    caption += " " + a + " " + pct(x["macro"]) + " (" + pct(x["short"]) + " / " + pct(x["long"]) + ")";
  }
  for (const auto& [a, why] : j["not_defined"].items()) caption += "; " + a + " not defined: " + why.as_string();
  out.analysis(title, "dependency_heads.svg", "json", "dependency_heads.json", caption + " (dependency_heads.csv).");
}

}  // namespace ordo::probe
