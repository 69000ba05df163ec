// The report of an experiment: runs of several PE variants side by side.
//
// For each run directory RUN (what `ordo pretrain --out RUN` made) it reads
//   RUN/probe/probe.json, indicators.json, attention_layerK.csv
//                         what `ordo probe --out RUN/probe` wrote (required),
//                         and scores_layerK.csv (else its .png) when there
//   RUN/config.json       model.pe: the variant's name (else probe.json's "variant")
//   RUN/metrics.jsonl     the last line with "eval_loss": the final held-out MLM
//                         loss and accuracy (optional: the cells are left empty)
//   RUN/analysis/index.json  `ordo analyze --out RUN/analysis`'s figures
//                         {"analyses": [{"title", "figure", "csv" | "json", "caption"}],
//                          ("png" in place of "figure" in an index written before the figures were SVG)
//                          "skipped": [{"title", "reason"}]} (optional)
// and renders, all in memory:
//   table.md, table.csv, table.json   one row per run in the layout of Wang et
//       al. 2021's Table 2 (monotonicity: all offsets, first 20; translation
//       invariance: with and without [CLS]; symmetry (SD); direction
//       balance), then the locality/symmetry paper's locality and symmetry,
//       then the final held-out MLM loss and accuracy
// The figures are SVG (plot/svg.h), legible on a page 1400 px wide:
//   trajectories.svg   when runs' analyses have them: the layer-1 indicators
//       against step (indicator_trajectory.json), a panel per indicator, a
//       line per run, one legend for all panels
//   losses.svg, losses.json   when runs' metrics.jsonl have curves: the
//       training and held-out loss against step, a line per run
//   heatmaps.svg   one panel per run (as Wang et al.'s Fig. 2 and the
//       locality/symmetry paper's Fig. 1): viridis, colour bar, axis labels,
//       the row's name as title
//   runs/<n>_<variant>/...   each run's heatmaps (attention.svg, scores.svg)
//       and its analysis files, copied (ordo analyze's figures are SVG too)
//   index.html     static and self-contained: it links only files beside it;
//       each figure with its generated reading (report/readings.h)
// The row of a run uses probed layer 1 when the probe has it, else the
// first layer it probed (the "layer" column says which).
#pragma once

#include <string>
#include <vector>

#include "base/json.h"
#include "probe/probe_matrix.h"

namespace ordo::report {

struct AnalysisEntry {
  std::string title, caption;
  std::string figure;  // the figure's path (RUN/analysis/...), empty when none
  std::string data;  // the table's path (csv or json), empty when none
};

struct RunRecord {
  std::string run_dir;
  std::string variant;  // model.pe
  std::string objective;  // "MLM", "MLM+NSP" or "causal" (config.json's data.objective); "" when unknown
  std::string label;    // the row's name: the variant, made unique with the run's folder name
  std::string slug;     // the run's folder inside the report: "<n>_<variant>"
  json::Value probe;    // probe.json as read
  int layer = 1;
  json::Value with_special, without_special;  // the layer's indicators objects
  Matrix attention;                    // the layer's averaged attention
  Matrix scores;           // the layer's averaged pre-softmax scores (RUN/probe/scores_layerK.csv), empty when absent
  std::string scores_png;  // RUN/probe/scores_layerK.png when there is no CSV, else empty
  bool has_eval = false;
  int64_t eval_step = -1;
  double eval_loss = 0, eval_accuracy = 0;
  // metrics.jsonl's curves as (step, loss): the training language-model loss
  // of each logged step ("lm_loss", else "loss") and each evaluation's held-out loss.
  std::vector<std::pair<double, double>> training_loss, held_out_loss;
  bool has_analysis = false;
  std::vector<AnalysisEntry> analyses;
  std::vector<std::pair<std::string, std::string>> skipped;  // (title, reason)
  json::Value trajectory;  // the analysis' layer-1 indicators per checkpoint ("steps"), null when absent
};

// Reads one run; errors name the file (and line or key) at fault.
RunRecord read_run(const std::string& run_dir);
// Reads every run (at least one) and makes their labels and slugs unique.
std::vector<RunRecord> read_runs(const std::vector<std::string>& run_dirs);

// The table's columns: (key, heading) in order; the indicator keys are
// probe/indicators.h's. The first three (variant, objective, layer) are text;
// the rest are numbers: the indicators, then the evaluation (eval_*).
const std::vector<std::pair<std::string, std::string>>& table_columns();
std::string table_markdown(const std::vector<RunRecord>& runs);
std::string table_csv(const std::vector<RunRecord>& runs);
json::Value table_json(const std::vector<RunRecord>& runs);

// Text for an HTML page: & < > " as entities.
std::string html_escape(const std::string& s);

struct OutputFile {
  std::string name;  // relative to the report directory
  std::string bytes;
};
// Every file of the report; reads the files it copies. Nothing is written.
// `lead_html`, when given, is a section set after the table (an experiment's
// comparison with the paper's values, experiment/tables.h).
std::vector<OutputFile> render_report(const std::vector<RunRecord>& runs, const std::string& lead_html = "");

// Writes the files into a folder built beside dir and swapped in whole for it
// (base/output.h: no file of a previous report stays; the caller checks the
// output policy first).
void write_report(const std::string& dir, const std::vector<OutputFile>& files);

}  // namespace ordo::report
