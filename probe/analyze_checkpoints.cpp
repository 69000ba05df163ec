// `ordo analyze`: a run's checkpoints side by side. The position patterns
// at up to six of them (Wang et al. 2021, App. G) and the identical-word
// indicators of layer 1 at up to twelve (Wang et al. 2021, Table 2's; the
// locality/symmetry paper's Eqs. 7-8).
#include <algorithm>
#include <cmath>

#include "base/file_io.h"
#include "base/json_numbers.h"
#include "model/model.h"
#include "probe/analysis_position.h"
#include "probe/analyze_parts.h"
#include "probe/probe.h"
#include "train/checkpoint_paths.h"

namespace ordo::probe {

using namespace analyses;

const std::vector<std::pair<std::string, std::string>>& trajectory_indicators() {
  static const std::vector<std::pair<std::string, std::string>> keys = {
      {"translation_invariance", "translation invariance (AIV)"},
      {"monotonicity_first_k", "monotonicity, first 20 offsets (OPR)"},
      {"symmetry_sd", "symmetry (SD)"},
      {"direction_balance", "direction balance (DB)"},
  };
  return keys;
}

std::string indicator_axis(const std::string& title) {
  const size_t open = title.rfind(" ("), close = title.rfind(')');
  if (open == std::string::npos || close < open) return title + " (unitless)";
  const std::string inside = title.substr(open + 2, close - open - 2);
  return (inside.rfind("Eq.", 0) == 0 ? title.substr(0, open) : inside) + " (unitless)";
}

// The identical-word indicators of layer 1 at each checkpoint: how the
// attention's position pattern forms during pretraining (the keys and the
// reading of probe/indicators.h; without the special tokens' rows and columns).
void analyses::indicator_trajectory(RunState& c, Output& out) {
  const std::string title = "Indicators of layer 1 during pretraining";
  if (c.run_dir.empty())
    return out.skip(title, "a single checkpoint, not a run (ordo probe --checkpoint gives its indicators)");
  const std::vector<int64_t> steps = checkpoint_steps(c.run_dir);
  std::string vocab_path = c.run_dir + "/vocab.txt";
  if (!file_exists(vocab_path)) return out.skip(title, "the run has no vocab.txt to draw the probe's words from");
  const text::Vocab vocab = text::Vocab::load(vocab_path);
  probe::ProbeOptions options;
  // Fewer than the paper's 300 (which, it says, change the indicators little: Wang et al. 2021, footnote 9),
  // as 12 checkpoints are probed; all there are in a smaller vocabulary.
  options.words = std::min<int64_t>(100, probe::probe_words_available(vocab));
  options.length = std::min<int64_t>(c.length, 128);
  options.seed = c.options.seed;
  const std::vector<int64_t> chosen = evenly_spread(steps, 12);
  json::Value rows = json::Value::array();
  // This figure adds the locality/symmetry paper's Eqs. 7-8 (how both form from the weights as
  // initialised, its Fig. 2 left, with train.checkpoint_initial's step 0); ordo report's grid keeps
  // the four, which every earlier trajectory file holds.
  std::vector<std::pair<std::string, std::string>> keys = trajectory_indicators();
  keys.push_back({"locality", "locality (Eq. 7)"});
  keys.push_back({"symmetry", "symmetry (Eq. 8)"});
  std::vector<plot::svg::Line> series(keys.size());
  for (int64_t step : chosen) {
    std::unique_ptr<nn::PretrainingModel> m =
        step == c.step ? nullptr : model::load_model(train::checkpoint_dir(c.run_dir, step), Device::cpu());
    const probe::ProbeResult r = probe::identical_word_probe(m ? *m : *c.model, vocab, options);
    const json::Value indicators = probe::layer_indicators_json(r.layers[0].attention);
    json::Value row = json::Value::object();
    row["step"] = step;
    row["with_special"] = indicators["with_special"];
    row["without_special"] = indicators["without_special"];
    rows.push_back(row);
    for (size_t k = 0; k < series.size(); ++k) {
      const double v = json::to_number(indicators["without_special"][keys[k].first]);
      if (!std::isfinite(v)) continue;  // DB is infinite when nothing is attended ahead
      series[k].x.push_back(static_cast<double>(step));
      series[k].y.push_back(v);
    }
  }
  std::vector<plot::svg::Figure> panels;
  for (size_t k = 0; k < series.size(); ++k) {
    plot::svg::ChartStyle style = chart(keys[k].second, "step (optimizer updates)", indicator_axis(keys[k].second));
    style.legend = false;  // one run: the grid's title names it
    panels.push_back(plot::svg::line_chart({series[k]}, style));
  }
  json::Value j = json::Value::object();
  j["what"] = "identical word probing of layer 1 at each checkpoint (probe/indicators.h)";
  j["words"] = options.words;
  j["length"] = options.length;
  j["seed"] = static_cast<int64_t>(options.seed);
  j["steps"] = rows;
  out.json_file("indicator_trajectory.json", j);
  out.svg("indicator_trajectory.svg",
          plot::svg::grid(panels, 2, c.variant + ": layer-1 indicators during pretraining (w/o [CLS], [SEP])"));
  out.analysis(title, "indicator_trajectory.svg", "json", "indicator_trajectory.json",
               "Identical word probing (" + std::to_string(options.words) + " words, length " +
                   std::to_string(options.length) + ") of layer 1 at " + std::to_string(chosen.size()) +
                   " of the run's checkpoints: translation invariance (AIV), monotonicity over the first 20 offsets "
                   "(OPR), symmetry (SD) and direction balance (DB), without the special tokens' rows and columns "
                   "(0 is the property met; DB 1 is balanced), and the locality/symmetry paper's locality and symmetry "
                   "(Eqs. 7-8; 1 is the property met). Wang et al. 2021, Table 2, report for BERT's learned "
                   "positions AIV 0.0143 and OPR 0.0208 after 1M steps; the locality/symmetry paper, Fig. 2 left, "
                   "BERT's locality and symmetry growing from initialisation (its Table 2: 0.162 and 0.879).");
}

void analyses::snapshots(RunState& c, Output& out) {
  const std::string title = "Position patterns at checkpoints during pretraining";
  if (c.run_dir.empty()) return out.skip(title, "a single checkpoint, not a run");
  std::vector<int64_t> steps = checkpoint_steps(c.run_dir);
  const bool absolute = !c.table.empty();
  if (!absolute && relative_vectors(*c.model, c.trained).vectors.empty())
    return out.skip(title, "variant " + c.variant + " has neither input position vectors nor per-offset vectors");
  const std::vector<int64_t> chosen = evenly_spread(steps, 6);
  std::vector<plot::svg::Figure> panels;
  json::Value files = json::Value::array();
  for (int64_t step : chosen) {
    std::unique_ptr<nn::PretrainingModel> m =
        step == c.step ? nullptr : model::load_model(train::checkpoint_dir(c.run_dir, step), Device::cpu());
    nn::PretrainingModel& model = m ? *m : *c.model;
    Matrix dot;
    int64_t first = 0;
    if (absolute) {
      dot = probe::dot_products(absolute_table(model, c.length));
    } else {
      RelativeVectors r = relative_vectors(model, c.trained);
      dot = probe::dot_products(r.vectors);
      first = r.first;
    }
    const std::string name = "snapshot_" + step_name(step) + ".csv";
    out.csv(name, dot);
    json::Value e = json::Value::object();
    e["step"] = step;
    e["csv"] = name;
    files.push_back(e);
    panels.push_back(map(dot, step_name(step), "dot product", first, absolute ? "position j" : "offset s",
                         absolute ? "position i" : "offset r"));
  }
  json::Value j = json::Value::object();
  j["what"] = absolute ? "dot products of the absolute position vectors" : "dot products of the relative vectors";
  j["snapshots"] = files;
  out.json_file("snapshots.json", j);
  out.svg("snapshots.svg", plot::svg::grid(panels, 0, c.variant + ": position patterns during pretraining"));
  out.analysis(title, "snapshots.svg", "json", "snapshots.json",
               std::string(absolute ? "Dot products P_i . P_j of the input position vectors"
                                    : "Dot products of the relative vectors of layer 1") +
                   " at " + std::to_string(chosen.size()) + " of the run's " + std::to_string(steps.size()) +
                   " checkpoints (Wang et al. 2021, App. G, Fig. 8); each panel has its own colour scale, spanning its "
                   "1st-99th percentiles.");
}

}  // namespace ordo::probe
