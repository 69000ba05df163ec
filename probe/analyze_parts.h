// The pieces of `ordo analyze` (probe/analyze_run.h) its files share: what
// the command writes (Output), the run or checkpoint analysed (RunState),
// the helpers the analyses draw and compute with (analyze_common.cpp), and
// every analysis, each a function of (RunState, Output) that writes its
// files and its index entries or says why it does not apply. The registry
// that lists them, in the order they run and with the files each writes, is
// analyze_run.cpp's; adding an analysis is its file and one row there.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/json.h"
#include "base/matrix.h"
#include "nn/heads.h"
#include "plot/plot.h"
#include "plot/svg.h"
#include "probe/analyze_run.h"
#include "probe/probe_matrix.h"
#include "text/tokenizer.h"
#include "train/pretrain.h"

namespace ordo::probe::analyses {

// ---- what the command writes ---------------------------------------------------------------

// Files kept in memory until every analysis is done (nothing in DIR changes
// before that), the index's entries, and the progress lines.
struct Output {
  std::vector<std::pair<std::string, std::string>> files;  // name, bytes (in write order)
  json::Value analyses = json::Value::array();
  json::Value skipped = json::Value::array();
  bool quiet = false;

  void file(const std::string& name, std::string bytes) { files.emplace_back(name, std::move(bytes)); }
  void svg(const std::string& name, const plot::svg::Figure& figure) { file(name, plot::svg::document(figure)); }
  void csv(const std::string& name, const Matrix& m) { file(name, probe::to_csv(m)); }
  void json_file(const std::string& name, const json::Value& v) { file(name, json::dump(v, 2) + "\n"); }
  void analysis(const std::string& title, const std::string& figure_name, const std::string& data_key,
                const std::string& data_name, const std::string& caption) {
    json::Value e = json::Value::object();
    e["title"] = title;
    e["figure"] = figure_name;
    e[data_key] = data_name;
    e["caption"] = caption;
    analyses.push_back(e);
    if (!quiet) std::fprintf(stderr, "analysis: %s\n", title.c_str());
  }
  void skip(const std::string& title, const std::string& reason) {
    json::Value e = json::Value::object();
    e["title"] = title;
    e["reason"] = reason;
    skipped.push_back(e);
    if (!quiet) std::fprintf(stderr, "skipped: %s (%s)\n", title.c_str(), reason.c_str());
  }
};

inline const char* const kOffsetParametersTitle = "Per-offset parameters of layer 1 (offsets -50..50 at most)";

// ---- the run analysed -----------------------------------------------------------------------

struct HeldOut {
  text::Vocab vocab;
  std::vector<int32_t> stream;  // the held-out documents' tokens, one after another
};

struct RunState {
  train::RunConfig run;  // a run's; default for a checkpoint outside a run
  std::string run_dir;   // empty: a checkpoint outside a run (an HF folder)
  std::string variant;   // what the titles call the model: its pe, or "gpt2 (ape_learned)"
  std::string label;     // "step_N", or the checkpoint folder's name
  int64_t trained = 0;   // the longest length trained (a run) or analysed (a checkpoint)
  int64_t step = 0;
  std::unique_ptr<nn::PretrainingModel> model;
  int64_t length = 0;  // rows of the absolute table analysed: min(trained length, table rows)
  Matrix table;        // the absolute table (empty: none)
  AnalyzeOptions options;
  // The run's held-out text (null without it: `why_not` says why), and
  // `length` distinct tokens of it, the first different ones in its order,
  // for the token-token term (fewer where the text has fewer).
  std::unique_ptr<HeldOut> held;
  std::string why_not;
  std::vector<int32_t> sample;
  // positional_scores of layer 1 (analyze_run.h), computed when first asked.
  const std::vector<Matrix>& layer1_scores();
  std::optional<std::vector<Matrix>> layer1_scores_made;
};

// One row of the registry: an analysis (or a small family sharing its work),
// the files it writes ('*' stands for a checkpoint's step_N), and the function.
struct Analysis {
  std::string name;
  std::vector<std::string> writes;
  void (*run)(RunState& c, Output& out);
};
// Every analysis, in the order they run (and the index lists them).
const std::vector<Analysis>& registered_analyses();

// ---- helpers (analyze_common.cpp) ---------------------------------------------------------------

std::string fmt(const char* format, double x);
// A CSV with a header line; rows of numbers.
std::string table_csv(const std::vector<std::string>& header, const std::vector<std::vector<double>>& rows);
std::vector<std::string> list_directory(const std::string& path);
// The steps of the run's complete checkpoints, ascending.
std::vector<int64_t> checkpoint_steps(const std::string& run);
// "step_N" or "N" -> N; an error naming the flag otherwise.
int64_t parse_checkpoint_flag(const std::string& s);
std::string step_name(int64_t step);
// The longest sequence the run trained on.
int64_t trained_length(const train::RunConfig& c);
// At most n of the steps, evenly spread, the first and the last included.
std::vector<int64_t> evenly_spread(const std::vector<int64_t>& steps, size_t n);

Matrix to_matrix(const Tensor& t);
// P for positions 0..rows-1 as the model adds it at the input, or an empty
// matrix when the variant adds nothing there.
Matrix absolute_table(nn::PretrainingModel& model, int64_t rows);
// Rows h*d_h .. (h+1)*d_h - 1 of a Linear weight [out, in], transposed: the
// head's W in x W (in x d_h).
Matrix head_projection(const nn::Linear& linear, int64_t head, int64_t head_dim);
// X W^Q_h (W^K_h)^T Y^T for layer 1, head h.
Matrix layer1_term(nn::PretrainingModel& model, const Matrix& x, const Matrix& y, int64_t head);
// Layer 1's per-offset vectors (its first head's), rows in ascending offset
// order; empty when the variant has none. Only the offsets pretraining on
// sequences of `length` reached, |r| <= length - 1 (the other rows of a
// learned table never moved).
struct RelativeVectors {
  Matrix vectors;
  int64_t first = 0;  // the offset of row 0
  std::string source;
};
RelativeVectors relative_vectors(nn::PretrainingModel& model, int64_t length);

// A chart with its title and axis labels (they name the unit), wide enough
// for its category labels (a bar chart's) side by side.
plot::svg::ChartStyle chart(const std::string& title, const std::string& x, const std::string& y,
                            const std::vector<std::string>& categories = {});
// The colour range of a map whose extremes are few (the diagonal of P P^T,
// an outlying first or last position): its 1st and 99th percentiles.
void robust_range(const Matrix& m, plot::HeatmapStyle& s);
// A heatmap about kMapSize wide; `robust`: colours clipped to the 1st-99th
// percentiles (robust_range).
constexpr double kMapSize = 220;  // three panels and their colour bars a row on a page 1400 px wide
constexpr double kSmallMapSize = 160;  // the panels of a grid of many (layers x heads)
plot::svg::Figure map(const Matrix& m, const std::string& title, const std::string& bar, int64_t first = 0,
                      const std::string& x = "position j", const std::string& y = "position i",
                      double highlight = NAN, const std::string& highlight_label = "", bool robust = true,
                      double map_size = kMapSize);

// ---- held-out text (analyze_held_out.cpp) ---------------------------------------------------------

// The run's held-out split as pretraining made it, and its vocabulary.
HeldOut load_held_out(const train::RunConfig& c, const std::string& run);

// ---- the analyses, by file ---------------------------------------------------------------------

// analyze_vectors.cpp: the position vectors and per-offset parameters themselves.
void similarity_of_absolute(RunState& c, Output& out);
void similarity_of_relative(RunState& c, Output& out);
void offset_parameters(RunState& c, Output& out);
// analyze_frequencies.cpp: learnable sinusoids.
void learned_frequencies(RunState& c, Output& out);
// analyze_score_terms.cpp: the attention terms of positions without the tokens.
void position_position_term(RunState& c, Output& out);
void positional_score_maps(RunState& c, Output& out);
void positional_score_layers(RunState& c, Output& out);
void segment_attention_maps(RunState& c, Output& out);
void attention_rank(RunState& c, Output& out);
// analyze_table_probes.cpp: Wang & Chen 2020's probes of the absolute table.
void probes_of_table(RunState& c, Output& out);
// analyze_checkpoints.cpp: the run's checkpoints side by side.
void snapshots(RunState& c, Output& out);
void indicator_trajectory(RunState& c, Output& out);
// analyze_held_out.cpp: the model on held-out text.
void evaluations(RunState& c, Output& out);
void attention_on_text(RunState& c, Output& out);
// analyze_dependency.cpp: attention heads as dependency parsers.
void dependency_parsing_heads(RunState& c, Output& out);

}  // namespace ordo::probe::analyses
