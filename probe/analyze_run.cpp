#include "probe/analyze_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <map>
#include <memory>
#include <optional>

#include "base/counter_rng.h"
#include "base/file_io.h"
#include "base/json.h"
#include "base/json_numbers.h"
#include "base/output.h"
#include "downstream/tsv.h"
#include "model/model.h"
#include "nn/bert.h"
#include "nn/heads.h"
#include "plot/plot.h"
#include "probe/analysis_linalg.h"
#include "probe/analysis_position.h"
#include "probe/dependency_heads.h"
#include "probe/probe.h"
#include "probe/wang_chen.h"
#include "text/corpus.h"
#include "synth/synth.h"
#include "text/tokenizer.h"
#include "train/checkpoint_paths.h"
#include "train/pretrain.h"

namespace ordo::probe {

namespace {

using ordo::Matrix;

// ---- what the command writes ---------------------------------------------------------------

// Files kept in memory until every analysis is done (nothing in DIR changes
// before that), the index's entries, and the progress lines.
struct Output {
  std::vector<std::pair<std::string, std::string>> files;  // name, bytes (in write order)
  json::Value analyses = json::Value::array();
  json::Value skipped = json::Value::array();
  bool quiet = false;

  void file(const std::string& name, std::string bytes) { files.emplace_back(name, std::move(bytes)); }
  void png(const std::string& name, const png::Image& image) { file(name, png::encode(image)); }
  void csv(const std::string& name, const Matrix& m) { file(name, probe::to_csv(m)); }
  void json_file(const std::string& name, const json::Value& v) { file(name, json::dump(v, 2) + "\n"); }
  void analysis(const std::string& title, const std::string& png_name, const std::string& data_key,
                const std::string& data_name, const std::string& caption) {
    json::Value e = json::Value::object();
    e["title"] = title;
    e["png"] = png_name;
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

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

const char* const kOffsetParametersTitle = "Per-offset parameters of layer 1 (offsets -50..50 at most)";

// A CSV with a header line; rows of numbers.
std::string table_csv(const std::vector<std::string>& header, const std::vector<std::vector<double>>& rows) {
  std::string s;
  for (size_t k = 0; k < header.size(); ++k) s += (k ? "," : "") + header[k];
  s += "\n";
  for (const auto& r : rows) {
    for (size_t k = 0; k < r.size(); ++k) s += (k ? "," : "") + fmt("%.9g", r[k]);
    s += "\n";
  }
  return s;
}

// ---- the run ------------------------------------------------------------------------------

std::vector<std::string> list_directory(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(path.c_str())) {
    while (dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The steps of the run's complete checkpoints, ascending.
std::vector<int64_t> checkpoint_steps(const std::string& run) {
  std::vector<int64_t> steps;
  for (const std::string& n : list_directory(run + "/checkpoints")) {
    if (n.rfind("step_", 0) != 0 || n.size() == 5 || n.find_first_not_of("0123456789", 5) != std::string::npos) continue;
    const int64_t step = std::atoll(n.c_str() + 5);
    const std::string dir = train::checkpoint_dir(run, step);
    if (file_exists(dir + "/trainer_state.json") && file_exists(dir + "/model.safetensors")) steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

// "step_N" or "N" -> N; an error naming the flag otherwise.
int64_t parse_checkpoint_flag(const std::string& s) {
  std::string digits = s.rfind("step_", 0) == 0 ? s.substr(5) : s;
  ORDO_CHECK(!digits.empty() && digits.size() <= 15 && digits.find_first_not_of("0123456789") == std::string::npos,
             "--checkpoint: expected step_N or N (a step number), got '", s, "'");
  return std::atoll(digits.c_str());
}

std::string step_name(int64_t step) { return "step_" + std::to_string(step); }

// The longest sequence the run trained on.
int64_t trained_length(const train::RunConfig& c) {
  int64_t l = 0;
  for (const train::Phase& p : c.train.phases) l = std::max(l, p.max_seq_length);
  return l;
}

// ---- parameters as matrices ------------------------------------------------------------------

Matrix to_matrix(const Tensor& t) {
  ORDO_CHECK(t.dim() == 2, "analyze: expected a 2-D tensor, got ", t.dim(), " dimensions");
  Matrix m(t.size(0), t.size(1));
  m.data = t.to_doubles();
  return m;
}

// P for positions 0..rows-1 as the model adds it at the input, or an empty
// matrix when the variant adds nothing there.
Matrix absolute_table(nn::PretrainingModel& model, int64_t rows) {
  NoGradGuard no_grad;
  nn::Context ctx = nn::Context::eval();
  Var e = model.bert.position_encoding().input_embedding(nn::default_positions(1, rows, model.bert.device()), ctx);
  if (!e.defined()) return {};
  Tensor t = e.value();
  return to_matrix(t.reshape({t.size(-2), t.size(-1)}));
}

// Rows h*d_h .. (h+1)*d_h - 1 of a Linear weight [out, in], transposed: the
// head's W in x W (in x d_h).
Matrix head_projection(const nn::Linear& linear, int64_t head, int64_t head_dim) {
  Matrix w = to_matrix(linear.weight.var.value());  // [out, in]
  Matrix r(w.cols, head_dim);
  for (int64_t i = 0; i < w.cols; ++i)
    for (int64_t k = 0; k < head_dim; ++k) r(i, k) = w(head * head_dim + k, i);
  return r;
}

// X W^Q_h (W^K_h)^T Y^T for layer 1, head h.
Matrix layer1_term(nn::PretrainingModel& model, const Matrix& x, const Matrix& y, int64_t head) {
  const nn::BertConfig& c = model.bert.config();
  const nn::SelfAttention& self = model.bert.encoder.layers[0]->attention.self;
  Matrix q = probe::matmul(x, head_projection(self.query, head, c.head_dim()));
  Matrix k = probe::matmul(y, head_projection(self.key, head, c.head_dim()));
  return probe::matmul_nt(q, k);
}

// Layer 1's per-offset vectors (its first head's), rows in ascending offset
// order; empty when the variant has none. Only the offsets pretraining on
// sequences of `length` reached, |r| <= length - 1 (the other rows of a
// learned table never moved).
struct RelativeVectors {
  Matrix vectors;
  int64_t first = 0;  // the offset of row 0
  std::string source;
};

RelativeVectors relative_vectors(nn::PretrainingModel& model, int64_t length) {
  nn::PositionEncoding::OffsetVectors v = model.bert.position_encoding().offset_vectors(0, length - 1);
  if (!v.vectors.defined()) return {};
  return {to_matrix(v.vectors), v.first_offset, v.source};
}

// ---- pictures -------------------------------------------------------------------------------

// A chart wide enough for its title, its one-line legend and its category
// labels (the plot draws them at a fixed width and clips what overflows).
plot::ChartStyle chart(const std::string& title, const std::string& x, const std::string& y,
                       const std::vector<std::string>& legend, const std::vector<std::string>& categories = {}) {
  plot::ChartStyle s;
  s.title = title;
  s.x_label = x;
  s.y_label = y;
  int legend_w = 0, category_w = 0;
  for (const std::string& n : legend) legend_w += 36 + plot::text_width(n);
  for (const std::string& n : categories) category_w = std::max(category_w, plot::text_width(n) + 24);
  s.width = std::max({s.width, plot::text_width(title) + 40, legend_w + 110,
                      110 + category_w * static_cast<int>(categories.size())});
  return s;
}

// The colour range of a map whose extremes are few (the diagonal of P P^T,
// an outlying first or last position): its 1st and 99th percentiles.
void robust_range(const Matrix& m, plot::HeatmapStyle& s) {
  std::vector<double> v = m.data;
  if (v.size() < 100) return;
  std::sort(v.begin(), v.end());
  const double lo = v[v.size() / 100], hi = v[v.size() - 1 - v.size() / 100];
  if (hi > lo) s.vmin = lo, s.vmax = hi;
}

// A heatmap; `robust`: colours clipped to the 1st-99th percentiles (robust_range).
png::Image map(const Matrix& m, const std::string& title, const std::string& bar, int64_t first = 0,
               const std::string& x = "position j", const std::string& y = "position i", double highlight = NAN,
               const std::string& highlight_label = "", bool robust = true) {
  plot::HeatmapStyle s;
  if (robust) robust_range(m, s);
  s.title = title;
  s.x_label = x;
  s.y_label = y;
  s.colorbar_label = bar;
  s.x_first = s.y_first = first;
  s.highlight_above = highlight;
  s.highlight_label = highlight_label;
  return plot::heatmap(m, s);
}

// ---- held-out windows --------------------------------------------------------------------------

struct HeldOut {
  text::Vocab vocab;
  std::vector<int32_t> stream;  // the held-out documents' tokens, one after another
};

HeldOut load_held_out(const train::RunConfig& c, const std::string& run) {
  std::string corpus = c.data.corpus;
  if (corpus == "synthetic") corpus = run + "/data/corpus.txt";
  ORDO_CHECK(file_exists(corpus), "the run's corpus '", corpus, "' is missing (", run, "/config.json data.corpus)");
  const std::string vocab_path = run + "/vocab.txt";
  ORDO_CHECK(file_exists(vocab_path), "the run's vocabulary '", vocab_path, "' is missing");
  ORDO_CHECK(c.data.held_out_fraction > 0, run, "/config.json: data.held_out_fraction is 0, so the run has no held-out split");
  HeldOut h{text::Vocab::load(vocab_path), {}};
  h.stream = train::split_corpus(c.data, corpus, h.vocab).held_out.tokens;  // the split pretraining made
  ORDO_CHECK(h.stream.size() >= 16, "the held-out split of '", corpus, "' has only ", h.stream.size(), " tokens");
  return h;
}

// `count` windows of `length` tokens from the held-out stream (taken one
// after another, wrapping round when the stream ends), as the objective
// sees them: MLM [CLS] w_1..w_{L-2} [SEP] with 15 % of the words predicted
// (80 % [MASK], 10 % a random word, 10 % kept, as in training; drawn from
// `seed` and the window's index only, so every length and every position
// scheme sees the same masks for the same window); causal LM: L tokens
// labelled with the next one. Positions 0..L-1 (the attack rewrites them).
std::vector<text::Batch> windows(const HeldOut& h, bool causal, int64_t length, int64_t count, uint64_t seed) {
  const text::SpecialIds& sp = h.vocab.special();
  std::vector<int32_t> pool;  // random replacements: every non-special id
  for (int32_t id = 0; id < h.vocab.size(); ++id)
    if (!h.vocab.is_special(id)) pool.push_back(id);
  const int64_t per_batch = 16;
  std::vector<text::Batch> out;
  size_t cursor = 0;
  auto next_token = [&]() {
    int32_t t = h.stream[cursor];
    cursor = (cursor + 1) % h.stream.size();
    return t;
  };
  for (int64_t start = 0; start < count; start += per_batch) {
    text::Batch b;
    b.batch = std::min(per_batch, count - start);
    b.length = length;
    for (int64_t s = start; s < start + b.batch; ++s) {
      std::vector<int64_t> ids, labels(static_cast<size_t>(length), text::kIgnoreLabel);
      if (causal) {
        std::vector<int32_t> w;
        for (int64_t i = 0; i <= length; ++i) w.push_back(next_token());
        cursor = (cursor + h.stream.size() - 1) % h.stream.size();  // the last label starts the next window
        for (int64_t i = 0; i < length; ++i) ids.push_back(w[i]), labels[i] = w[i + 1];
      } else {
        ids.push_back(sp.cls);
        for (int64_t i = 0; i < length - 2; ++i) ids.push_back(next_token());
        ids.push_back(sp.sep);
        const int64_t content = length - 2;
        const int64_t k = std::max<int64_t>(1, std::llround(0.15 * static_cast<double>(content)));
        const uint64_t window = static_cast<uint64_t>(s);
        std::vector<int64_t> pick =
            shuffled_order(content, CounterRng(seed, rng_stream(RngPurpose::held_out_positions), window));
        CounterRng replacements(seed, rng_stream(RngPurpose::held_out_masks), window);
        for (int64_t t = 0; t < k; ++t) {
          const size_t i = static_cast<size_t>(pick[t] + 1);
          labels[i] = ids[i];
          const double u = replacements.uniform();
          if (u < 0.8) ids[i] = sp.mask;
          else if (u < 0.9) ids[i] = pool[replacements.below(static_cast<int64_t>(pool.size()))];
        }
      }
      b.input_ids.insert(b.input_ids.end(), ids.begin(), ids.end());
      b.mlm_labels.insert(b.mlm_labels.end(), labels.begin(), labels.end());
      for (int64_t i = 0; i < length; ++i) {
        b.segment_ids.push_back(0);
        b.positions.push_back(i);
        b.attention_mask.push_back(1);
      }
    }
    if (causal) b.clm_labels = b.mlm_labels, b.mlm_labels.clear();
    out.push_back(std::move(b));
  }
  return out;
}

json::Value eval_json(const train::EvalResult& e) {
  json::Value v = json::Value::object();
  v["loss"] = e.loss;
  v["accuracy"] = e.accuracy;
  v["predicted_tokens"] = e.predicted;
  return v;
}

// ---- the analyses ------------------------------------------------------------------------------

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
};

void similarity_of_absolute(RunState& c, Output& out) {
  const std::string title = "Absolute position vectors: dot products and cosine similarity";
  if (c.table.empty()) return out.skip(title, "variant " + c.variant + " adds no position vector at the input");
  Matrix dot = probe::dot_products(c.table), cos = probe::cosine_similarities(c.table);
  probe::ThresholdSummary t = probe::threshold_summary(cos, 0);
  out.csv("absolute_dot.csv", dot);
  out.csv("absolute_cosine.csv", cos);
  out.png("absolute_similarity.png",
          plot::grid({map(dot, "dot products P_i . P_j", "dot product"),
                      map(cos, "cosine similarity", "cosine", 0, "position j", "position i", 0.95, "cosine > 0.95", false)},
                     2, c.variant + ": absolute position vectors (" + c.label + ")"));
  out.analysis(title, "absolute_similarity.png", "csv", "absolute_cosine.csv",
               "Dot products (left, absolute_dot.csv) and cosine similarities (right) between the position vectors "
               "P_0..P_" + std::to_string(c.length - 1) + " added at the input (Wang et al. 2021, Fig. 1; Wang & Chen "
               "2020, Fig. 1). Red: cosine above 0.95, 'not significantly different' (Wang et al. 2021, App. D); " +
                   fmt("%.3f", t.share_above) + " of the pairs i != j. The dot products' colours span their 1st-99th percentiles "
                   "(the diagonal, |P_i|^2, saturates).");
}

void similarity_of_relative(RunState& c, Output& out) {
  const std::string title = "Relative position vectors: dot products and cosine similarity (0.95 threshold)";
  RelativeVectors r = relative_vectors(*c.model, c.trained);
  if (r.vectors.empty())
    return out.skip(title, "variant " + c.variant + " has no per-offset vectors (rpe_shaw, rpe_sin(_learnable), "
                           "huang_m1..m4 have them)");
  if (r.vectors.cols == 1)
    return out.skip(title, "variant " + c.variant + " has one scalar per offset, not vectors (drawn in '" +
                               std::string(kOffsetParametersTitle) + "')");
  Matrix dot = probe::dot_products(r.vectors), cos = probe::cosine_similarities(r.vectors);
  probe::ThresholdSummary t = probe::threshold_summary(cos, r.first);
  out.csv("relative_dot.csv", dot);
  out.csv("relative_cosine.csv", cos);
  json::Value s = json::Value::object();
  s["source"] = r.source;
  s["first_offset"] = r.first;
  s["threshold"] = t.threshold;
  s["share_above"] = t.share_above;
  s["indistinct_beyond_ahead"] = t.indistinct_beyond_ahead;
  s["indistinct_beyond_behind"] = t.indistinct_beyond_behind;
  out.json_file("relative_threshold.json", s);
  out.png("relative_similarity.png",
          plot::grid({map(dot, "dot products a_r . a_s", "dot product", r.first, "offset s", "offset r"),
                      map(cos, "cosine similarity", "cosine", r.first, "offset s", "offset r", 0.95, "cosine > 0.95", false)},
                     2, c.variant + ": relative vectors (" + c.label + ")"));
  auto beyond = [](int64_t d) { return d < 0 ? std::string("none") : std::to_string(d); };
  out.analysis(title, "relative_similarity.png", "csv", "relative_cosine.csv",
               "Vectors of " + r.source + " (offset r = j - i). Red: cosine above 0.95 (Wang et al. 2021, App. D); " +
                   fmt("%.3f", t.share_above) + " of the pairs. All vectors beyond offset " +
                   beyond(t.indistinct_beyond_ahead) + " ahead and " + beyond(t.indistinct_beyond_behind) +
                   " behind are pairwise above the threshold (relative_threshold.json; dot products in relative_dot.csv).");
}

// Huang et al. 2020, Fig. 4: the per-offset parameters themselves, offsets
// -50..50 (the figure's range) within the trained ones, as a map of offset by
// dimension, or as a curve where the variant keeps one scalar per offset
// (methods 1-2's w_r). Beyond a clip k, offset r uses row c(r) = +-k, as the
// attention does, so every run shows the same range.
void offset_parameters(RunState& c, Output& out) {
  const std::string title = kOffsetParametersTitle;
  RelativeVectors r = relative_vectors(*c.model, c.trained);
  if (r.vectors.empty()) return out.skip(title, "variant " + c.variant + " has no per-offset parameters");
  const int64_t k = std::min<int64_t>(50, c.trained - 1), reach = -r.first, width = r.vectors.cols;
  Matrix v(2 * k + 1, width);
  std::vector<std::vector<double>> rows;
  std::vector<double> offsets, scalars;
  for (int64_t o = -k; o <= k; ++o) {
    const int64_t row = std::clamp(o, -reach, reach) - r.first;
    std::vector<double> line = {static_cast<double>(o)};
    for (int64_t m = 0; m < width; ++m) {
      v(o + k, m) = r.vectors(row, m);
      line.push_back(v(o + k, m));
    }
    rows.push_back(line);
    offsets.push_back(static_cast<double>(o));
    scalars.push_back(v(o + k, 0));
  }
  std::vector<std::string> header = {"offset"};
  for (int64_t m = 0; m < width; ++m) header.push_back("d" + std::to_string(m));
  out.file("offset_parameters.csv", table_csv(header, rows));
  const std::string heading = c.variant + ", layer 1, first head (" + c.label + ")";
  if (width == 1) {
    plot::ChartStyle s = chart(heading, "offset r = j - i", "w_r", {"w_r"});
    out.png("offset_parameters.png", plot::line_chart({{"w_r", offsets, scalars, plot::series_color(0), true}}, s));
  } else {
    plot::HeatmapStyle s;
    s.title = heading;
    s.x_label = "dimension";
    s.y_label = "offset r = j - i";
    s.colorbar_label = "value";
    s.y_first = -k;
    out.png("offset_parameters.png", plot::heatmap(v, s));
  }
  out.analysis(title, "offset_parameters.png", "csv", "offset_parameters.csv",
               "The parameters of " + r.source + " for offsets -" + std::to_string(k) + ".." + std::to_string(k) +
                   (reach < k ? " (beyond the clip " + std::to_string(reach) + " each offset uses the row of +-" +
                                    std::to_string(reach) + ", as the attention does)"
                              : std::string()) +
                   (width == 1 ? std::string(": one scalar per offset, a gate on q_i . k_j")
                               : ", one row per offset, one column per dimension") +
                   " (Huang et al. 2020, Fig. 4: method 4, layer 1, head 1, offsets -50..50; large values at offset 0 "
                   "make a token attend near itself).");
}

// Huang et al. 2020, Fig. 5: layer-1 attention on real text (the held-out
// windows, unmasked), averaged over the heads; one window as the paper shows
// it and the mean over the windows, the first 50 tokens; and the mean
// attention at each offset (probe::mean_by_offset).
void attention_on_text(RunState& c, Output& out, const HeldOut* held, const std::string& why_not) {
  const std::string title = "Layer-1 attention on held-out text, mean over heads";
  if (!held) return out.skip(title, why_not);
  const bool causal = c.model->bert.config().decoder;
  const int64_t L = c.length, H = c.model->bert.config().num_attention_heads;
  std::vector<text::Batch> batches = windows(*held, causal, L, c.options.eval_sequences, c.options.seed);
  Matrix mean(L, L), first(L, L);
  const double total = static_cast<double>(c.options.eval_sequences * H);
  NoGradGuard no_grad;
  for (size_t n = 0; n < batches.size(); ++n) {
    text::Batch& b = batches[n];
    for (size_t t = 0; t < b.mlm_labels.size(); ++t)  // the text itself: the masked words put back
      if (b.mlm_labels[t] != text::kIgnoreLabel) b.input_ids[t] = b.mlm_labels[t];
    nn::BertInputs in;
    in.input_ids = Tensor::from_vector(b.input_ids, Shape{b.batch, L});
    nn::Context ctx = nn::Context::eval();
    nn::ForwardTrace trace;
    trace.keep_attentions = true;
    c.model->bert.forward(in, ctx, &trace);
    const std::vector<double> a = trace.attentions[0].to(Device::cpu()).contiguous().to_doubles();  // [B, H, L, L]
    for (int64_t w = 0; w < b.batch; ++w)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t k = 0; k < L * L; ++k) {
          const double x = a[static_cast<size_t>((w * H + h) * L * L + k)];
          mean.data[static_cast<size_t>(k)] += x / total;
          if (n == 0 && w == 0) first.data[static_cast<size_t>(k)] += x / static_cast<double>(H);
        }
  }
  const std::vector<double> by_offset = probe::mean_by_offset(mean);
  auto at = [&](int64_t r) { return by_offset[static_cast<size_t>(r + L - 1)]; };
  const int64_t shown = std::min<int64_t>(50, L);
  auto head = [&](const Matrix& m) {
    Matrix t(shown, shown);
    for (int64_t i = 0; i < shown; ++i)
      for (int64_t j = 0; j < shown; ++j) t(i, j) = m(i, j);
    return t;
  };
  out.csv("attention_text_layer1.csv", mean);
  json::Value j = json::Value::object();
  j["what"] = "layer-1 attention averaged over heads and held-out windows (rows: queries, columns: keys)";
  j["windows"] = c.options.eval_sequences;
  j["length"] = L;
  j["seed"] = static_cast<int64_t>(c.options.seed);
  j["self"] = at(0);
  j["previous"] = at(-1);
  j["next"] = at(1);
  json::Value offsets = json::Value::array();
  for (int64_t r = -(L - 1); r <= L - 1; ++r) {
    json::Value e = json::Value::object();
    e["offset"] = r;
    e["mean_attention"] = at(r);
    offsets.push_back(e);
  }
  j["by_offset"] = offsets;
  out.json_file("attention_text_layer1.json", j);
  std::vector<double> xs, ys;
  for (int64_t r = -std::min<int64_t>(20, L - 1); r <= std::min<int64_t>(20, L - 1); ++r)
    xs.push_back(static_cast<double>(r)), ys.push_back(at(r));
  plot::ChartStyle s = chart("mean attention at offset r", "offset r = j - i", "attention", {"mean"});
  s.y_min = 0;
  out.png("attention_text_layer1.png",
          plot::grid({map(head(first), "one window", "attention", 0, "key position j", "query position i", NAN, "", false),
                      map(head(mean), "mean of " + std::to_string(c.options.eval_sequences) + " windows", "attention", 0,
                          "key position j", "query position i", NAN, "", false),
                      plot::line_chart({{"mean", xs, ys, plot::series_color(0), true}}, s)},
                     3, c.variant + ": layer-1 attention on held-out text, mean over heads (" + c.label + ")"));
  out.analysis(title, "attention_text_layer1.png", "json", "attention_text_layer1.json",
               "Layer-1 attention averaged over the " + std::to_string(H) + " heads on held-out " +
                   std::string(causal ? "text" : "[CLS] text [SEP]") + " windows of length " + std::to_string(L) + " (unmasked): the first window and the mean of " +
                   std::to_string(c.options.eval_sequences) + ", first " + std::to_string(shown) +
                   " tokens (Huang et al. 2020, Fig. 5: method 4 attends to its neighbours and hardly to itself). "
                   "Mean attention on the token itself " + fmt("%.3f", at(0)) + ", on the previous " +
                   fmt("%.3f", at(-1)) + ", on the next " + (L > 1 ? fmt("%.3f", at(1)) : std::string("-")) +
                   " (uniform: " + fmt("%.3f", 1.0 / static_cast<double>(L)) + "; attention_text_layer1.csv, the mean).");
}

// Every layer and head as a dependency parser of held-out synthetic
// sentences, with the positional and the contextual term each removed
// (the locality/symmetry paper, Table 8 and Figure 5; probe/dependency_heads.h).
constexpr int64_t kDependencySentences = 500;  // ~6,000 arcs: every one of Table 8's 20 relations seen often
constexpr int64_t kDependencyRelations = 20;   // Table 8's top 20

void dependency_parsing_heads(RunState& c, Output& out) {
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
  std::vector<plot::Series> series;
  for (size_t n = 0; n < names.size(); ++n) series.push_back({names[n], {}, {}, plot::series_color(static_cast<int>(n)), true});
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
  plot::ChartStyle s = chart(c.variant + ": best head's accuracy against the relation's mean length",
                             "mean dependency length (words)", "accuracy (%)", names);
  s.y_min = 0;
  s.y_max = 100;
  out.png("dependency_heads.png", plot::line_chart(series, s));
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
  out.analysis(title, "dependency_heads.png", "json", "dependency_heads.json", caption + " (dependency_heads.csv).");
}

// Wang et al. 2021, section 3.1: psi(m) = sum_i cos(w_i m).
std::vector<double> psi(const std::vector<double>& w, int64_t span) {
  std::vector<double> p;
  for (int64_t m = 0; m <= span; ++m) {
    double s = 0;
    for (double x : w) s += std::cos(x * static_cast<double>(m));
    p.push_back(s);
  }
  return p;
}

void learned_frequencies(RunState& c, Output& out) {
  const std::string title = "Learned frequencies of learnable sinusoids against the fixed ones";
  const nn::BertConfig& m = c.model->bert.config();
  nn::PositionEncoding::LearnedFrequencies f = c.model->bert.position_encoding().learned_frequencies(0);
  if (!f.fixed.defined()) return out.skip(title, "variant " + m.pe + " has no learnable sinusoid");
  const std::vector<double> fixed = f.fixed.to_doubles(), learned = f.learned.to_doubles();
  const std::string& which = f.source;
  std::vector<std::vector<double>> rows;
  std::vector<double> idx;
  for (size_t i = 0; i < fixed.size(); ++i) {
    rows.push_back({static_cast<double>(i), fixed[i], learned[i], learned[i] / fixed[i]});
    idx.push_back(static_cast<double>(i));
  }
  out.file("frequencies.csv", table_csv({"i", "fixed", "learned", "ratio"}, rows));
  plot::ChartStyle fs = chart("frequencies w_i", "i", "|w_i|", {"fixed 10000^(-2i/D)", "learned"});
  fs.log_y = true;
  std::vector<double> abs_learned;
  for (double x : learned) abs_learned.push_back(std::max(std::fabs(x), 1e-12));
  png::Image left = plot::line_chart({{"fixed 10000^(-2i/D)", idx, fixed, plot::series_color(0), false},
                                      {"learned", idx, abs_learned, plot::series_color(1), true}},
                                     fs);
  const int64_t span = std::max<int64_t>(c.trained, 2);
  std::vector<double> ms;
  for (int64_t k = 0; k <= span; ++k) ms.push_back(static_cast<double>(k));
  plot::ChartStyle ps = chart("psi(m) = sum_i cos(w_i m)", "offset m", "psi(m)", {"fixed", "learned"});
  png::Image right = plot::line_chart({{"fixed", ms, psi(fixed, span), plot::series_color(0), false},
                                       {"learned", ms, psi(learned, span), plot::series_color(1), false}},
                                      ps);
  out.png("frequencies.png", plot::grid({left, right}, 2, m.pe + ": learned frequencies (" + c.label + ")"));
  out.analysis(title, "frequencies.png", "csv", "frequencies.csv",
               "Frequencies of " + which + " after training against their initial values 10000^(-2i/D) (Wang et al. "
               "2021, section 3.1, App. A.3), and the dot product of two positions m apart they imply, psi(m) = "
               "sum_i cos(w_i m): where it decreases, the encoding is monotone in the distance.");
}

void position_position_term(RunState& c, Output& out) {
  const std::string title = "Position-position term P W^Q (W^K)^T P^T of layer 1";
  if (c.table.empty()) return out.skip(title, "variant " + c.variant + " adds no position vector at the input");
  const int64_t heads = c.model->bert.config().num_attention_heads;
  Matrix mean(c.length, c.length);
  std::vector<png::Image> panels;
  std::vector<Matrix> per_head;
  for (int64_t h = 0; h < heads; ++h) {
    Matrix t = layer1_term(*c.model, c.table, c.table, h);
    for (size_t k = 0; k < t.data.size(); ++k) mean.data[k] += t.data[k] / static_cast<double>(heads);
    per_head.push_back(std::move(t));
  }
  panels.push_back(map(mean, "mean over heads", "p_i Wq Wk^T p_j", 0, "key position j", "query position i"));
  for (int64_t h = 0; h < heads && h < 11; ++h)
    panels.push_back(map(per_head[h], "head " + std::to_string(h + 1), "p_i Wq Wk^T p_j", 0, "key position j",
                         "query position i"));
  out.csv("position_position_layer1.csv", mean);
  out.png("position_position_layer1.png",
          plot::grid(panels, std::min<int>(3, static_cast<int>(panels.size())),
                     c.variant + ": position-position term, layer 1 (" + c.label + ")"));
  out.analysis(title, "position_position_layer1.png", "csv", "position_position_layer1.csv",
               "p_i W^{Q,1}_h (W^{K,1}_h)^T p_j^T for the raw position vectors (no LayerNorm, biases or 1/sqrt(d_h)), "
               "the mean over heads first (the CSV) and then each head (Wang et al. 2021, Eq. 7, App. H, Fig. 9). "
               "Colours span each map's 1st-99th percentiles.");
}

// Chen et al. 2021, Fig. 4 (ABS-SCALAR's positional attention per head) for
// every variant with a token-independent score term (positional_scores).
void positional_score_maps(RunState& c, Output& out, const std::vector<Matrix>& scores) {
  const std::string title = "Positional score terms of layer 1 per head (the terms without the tokens)";
  if (scores.empty())
    return out.skip(title, "variant " + c.variant + " has no score term that is independent of the tokens");
  Matrix mean(c.length, c.length);
  std::vector<png::Image> panels;
  std::vector<std::vector<double>> ranks;
  for (size_t h = 0; h < scores.size(); ++h) {
    for (size_t k = 0; k < mean.data.size(); ++k) mean.data[k] += scores[h].data[k] / static_cast<double>(scores.size());
    if (h < 12)
      panels.push_back(map(scores[h], "head " + std::to_string(h + 1), "b_ij", 0, "key position j", "query position i"));
    const std::vector<double> sv = probe::singular_values(scores[h]);
    ranks.push_back({static_cast<double>(h + 1),
                     static_cast<double>(probe::numerical_rank(sv, c.length, c.length, probe::kFloat32Epsilon))});
  }
  out.csv("positional_scores_layer1.csv", mean);
  out.file("positional_scores_rank.csv", table_csv({"head", "rank"}, ranks));
  out.png("positional_scores_layer1.png",
          plot::grid(panels, std::min<int>(3, static_cast<int>(panels.size())),
                     c.variant + ": positional score terms, layer 1 (" + c.label + ")"));
  out.analysis(title, "positional_scores_layer1.png", "csv", "positional_scores_layer1.csv",
               "The score terms that do not depend on the tokens, b_ij = s_ij with q = k = 0 (per-head segment scores "
               "taken out), per head of layer 1 for positions 0.." + std::to_string(c.length - 1) +
                   " (Chen et al. 2021, Fig. 4: ABS-SCALAR's P_h P_h^T learns shifting patterns a relative term "
                   "models). The CSV is their mean over heads; positional_scores_rank.csv their numerical rank per "
                   "head (Fig. 2). Colours span each map's 1st-99th percentiles.");
}

// The locality/symmetry paper's Figures 9-10 (A*'s and A*-Seq's learned
// delta, every layer and head) for every variant whose token-independent
// score terms differ between layers; with each map, the locality and
// symmetry (Eqs. 7-8) of the attention that term alone gives: softmax_j b_ij
// where it is added to the scores, b itself where it is the positional
// attention of the sequence combination (Eq. 10: A*-Seq's delta).
// first_layer: positional_scores of layer 1, as the caller has them.
void positional_score_layers(RunState& c, Output& out, const std::vector<Matrix>& first_layer) {
  const std::string title = "Positional score terms of every layer and head";
  const int layers = c.model->bert.config().num_hidden_layers;
  std::vector<std::vector<Matrix>> all{first_layer};
  for (int l = 1; l < layers; ++l) all.push_back(positional_scores(*c.model, l, c.length));
  if (all[0].empty())
    return out.skip(title, "variant " + c.variant + " has no score term that is independent of the tokens");
  if (layers == 1) return out.skip(title, "the model has one layer: layer 1's maps show its terms");
  for (std::vector<Matrix>& layer : all)  // a layer whose terms are all 0 (positional_scores: empty)
    if (layer.empty()) layer.assign(all[0].size(), Matrix(c.length, c.length));
  bool differ = false;
  for (int l = 1; l < layers; ++l)
    for (size_t h = 0; h < all[l].size() && h < all[0].size(); ++h) differ |= all[l][h].data != all[0][h].data;
  if (!differ) return out.skip(title, "the layers share the terms: layer 1's maps show them");
  std::vector<png::Image> panels;
  std::vector<std::vector<double>> rows;
  const int64_t heads = static_cast<int64_t>(std::min<size_t>(all[0].size(), 12));
  for (int l = 0; l < layers && l < 12; ++l)
    for (int64_t h = 0; h < heads; ++h) {
      const Matrix& b = all[l][static_cast<size_t>(h)];
      panels.push_back(map(b, "layer " + std::to_string(l + 1) + " head " + std::to_string(h + 1), "b_ij", 0,
                           "key position j", "query position i"));
      Matrix a = b;
      if (c.model->bert.position_encoding().combine != nn::Combine::sequence)
        a.data = softmax(Tensor::from_vector(b.data, {b.rows, b.cols})).to_doubles();
      rows.push_back({static_cast<double>(l + 1), static_cast<double>(h + 1), probe::locality(a), probe::symmetry(a)});
    }
  out.file("positional_scores_layers.csv", table_csv({"layer", "head", "locality", "symmetry"}, rows));
  out.png("positional_scores_layers.png", plot::grid(panels, static_cast<int>(heads),
                                                     c.variant + ": positional score terms per layer and head (" +
                                                         c.label + ")"));
  out.analysis(title, "positional_scores_layers.png", "csv", "positional_scores_layers.csv",
               "The score terms without the tokens (as the layer-1 maps) of every layer (rows) and head (columns, at "
               "most 12 of each), positions 0.." + std::to_string(c.length - 1) +
                   ": the locality/symmetry paper's Figures 9-10 (A*'s and A*-Seq's learned delta). The CSV gives "
                   "the locality and symmetry (Eqs. 7-8) of the attention the term alone gives: softmax_j b_ij, or b "
                   "itself under the sequence combination (Eq. 10). "
                   "Colours span each map's 1st-99th percentiles.");
}

// Chen et al. 2021, Fig. 6: REL-SCALAR's (any variant's) position and
// per-head segment attention without the token term, on an input of length 32
// (the trained length if shorter) whose second segment starts half way.
void segment_attention_maps(RunState& c, Output& out) {
  const std::string title = "Position and segment attention without the token term, layer 1 per head";
  const int64_t length = std::min<int64_t>(32, c.length), second = length / 2;
  const std::vector<Matrix> heads = segment_attention(*c.model, 0, length, second);
  if (heads.empty()) return out.skip(title, "variant " + c.variant + " has no per-head segment scores (segment = per_head)");
  Matrix mean(length, length);
  std::vector<png::Image> panels;
  for (size_t h = 0; h < heads.size(); ++h) {
    for (size_t k = 0; k < mean.data.size(); ++k) mean.data[k] += heads[h].data[k] / static_cast<double>(heads.size());
    if (h < 12)
      panels.push_back(map(heads[h], "head " + std::to_string(h + 1), "attention", 0, "key position j", "query position i"));
  }
  out.csv("segment_attention_layer1.csv", mean);
  out.png("segment_attention_layer1.png",
          plot::grid(panels, std::min<int>(4, static_cast<int>(panels.size())),
                     c.variant + ": position and segment attention, layer 1 (" + c.label + ")"));
  out.analysis(title, "segment_attention_layer1.png", "csv", "segment_attention_layer1.csv",
               "softmax_j(b_ij + Seg_h[seg(i), seg(j)]) with q = k = 0: the attention of the position and per-head "
               "segment terms alone, per head of layer 1, positions 0.." + std::to_string(length - 1) +
                   " with the second segment from position " + std::to_string(second) +
                   " (Chen et al. 2021, Fig. 6: length 32, the second segment from 16). The CSV is the mean over "
                   "heads. Colours span each map's 1st-99th percentiles.");
}

void attention_rank(RunState& c, Output& out, const std::vector<int32_t>* sample, const std::vector<Matrix>& scores) {
  const std::string title = "Numerical rank of the token-token and positional attention terms per head";
  // The positional term: P W^Q (W^K)^T P^T for a table at the input, else the token-independent score terms.
  if (c.table.empty() && scores.empty())
    return out.skip(title, "variant " + c.variant + " adds no position vector at the input and has no score term "
                           "independent of the tokens");
  if (!sample) return out.skip(title, "no held-out sequence for the token-token term (see the evaluation entries)");
  const nn::BertConfig& m = c.model->bert.config();
  const std::string positional = c.table.empty() ? "positional b_ij (terms without tokens)" : "positional P Wq Wk^T P^T";
  Matrix words = to_matrix(c.model->bert.embeddings.word_embeddings.weight.var.value());
  Matrix x(c.length, m.hidden_size);
  for (int64_t i = 0; i < c.length; ++i)
    for (int64_t k = 0; k < m.hidden_size; ++k) x(i, k) = words((*sample)[static_cast<size_t>(i)], k);
  std::vector<std::vector<double>> rows;
  std::vector<std::string> heads;
  std::vector<double> token_ranks, position_ranks;
  for (int64_t h = 0; h < m.num_attention_heads; ++h) {
    std::vector<double> st = probe::singular_values(layer1_term(*c.model, x, x, h));
    std::vector<double> sp = probe::singular_values(c.table.empty() ? scores[static_cast<size_t>(h)]
                                                                    : layer1_term(*c.model, c.table, c.table, h));
    const int64_t rt = probe::numerical_rank(st, c.length, c.length, probe::kFloat32Epsilon);
    const int64_t rp = probe::numerical_rank(sp, c.length, c.length, probe::kFloat32Epsilon);
    rows.push_back({static_cast<double>(h + 1), static_cast<double>(rt), static_cast<double>(rp),
                    static_cast<double>(m.head_dim()), probe::rank_tolerance(st, c.length, c.length, probe::kFloat32Epsilon),
                    probe::rank_tolerance(sp, c.length, c.length, probe::kFloat32Epsilon)});
    heads.push_back(std::to_string(h + 1));
    token_ranks.push_back(static_cast<double>(rt));
    position_ranks.push_back(static_cast<double>(rp));
  }
  out.file("attention_rank.csv",
           table_csv({"head", "token_token_rank", "positional_rank", "head_dim", "token_tolerance", "positional_tolerance"},
                     rows));
  plot::ChartStyle s = chart(m.pe + ": rank of layer-1 attention terms (" + c.label + ")", "head",
                             "numerical rank", {"token-token X Wq Wk^T X^T", positional}, heads);
  s.y_min = 0;
  s.y_max = static_cast<double>(c.table.empty() ? c.length : std::min(m.head_dim(), c.length));
  out.png("attention_rank.png", plot::bar_chart(heads, {{"token-token X Wq Wk^T X^T", token_ranks, plot::series_color(0)},
                                                        {positional, position_ranks, plot::series_color(1)}},
                                                s));
  out.analysis(title, "attention_rank.png", "csv", "attention_rank.csv",
               "Per head of layer 1, the number of singular values above s_max * L * 2^-23 (L = " +
                   std::to_string(c.length) + ") of the token-token term (X = the word embeddings of one held-out "
                   "sequence) and of the positional term, " + positional + " (Chen et al. 2021, Fig. 2); the bound on "
                   "the token-token term's rank is d_h = " +
                   std::to_string(m.head_dim()) + ".");
}

void probes_of_table(RunState& c, Output& out) {
  const std::string t1 = "Absolute position regression (linear, 5-fold cross-validation)";
  const std::string t2 = "Relative order classification (logistic regression on position pairs)";
  const std::string t3 = "Informativeness: cumulative share of the top-k singular values";
  if (c.table.empty()) {
    const std::string why = "variant " + c.variant + " adds no position vector at the input";
    out.skip(t1, why);
    out.skip(t2, why);
    out.skip(t3, why);
    return;
  }
  const int64_t d = c.table.cols;
  // The numbers of Wang & Chen's tables (probe/wang_chen.h) for this table and
  // its two controls, keyed here as the run's files have always named them.
  WangChenOptions wo;
  wo.positions = c.length;
  wo.seed = c.options.seed;
  const std::vector<WangChenRow> rows = wang_chen_rows({{c.variant, "", c.table}}, wo);
  const std::vector<std::string> names = {c.variant, "fixed sinusoid", "random (Gaussian)"},
                                 labels = {c.variant, "sinusoid", "random"};
  json::Value reg = json::Value::object(), ord = json::Value::object();
  std::vector<double> mae, base, err;
  std::vector<plot::Series> shares;
  std::vector<std::vector<double>> share_rows(static_cast<size_t>(std::min(c.length, d)));
  for (size_t i = 0; i < rows.size(); ++i) {
    const WangChenRow& w = rows[i];
    json::Value rv = json::Value::object();
    rv["mae"] = w.mae;
    rv["baseline_mae"] = w.baseline_mae;
    reg[names[i]] = rv;
    json::Value ov = json::Value::object();
    ov["error_rate"] = w.order_error;
    ov["test_pairs"] = w.order_test_pairs;
    ord[names[i]] = ov;
    mae.push_back(w.mae);
    base.push_back(w.baseline_mae);
    err.push_back(w.order_error);
    std::vector<double> ks;
    for (size_t k = 0; k < w.share.size(); ++k) ks.push_back(static_cast<double>(k + 1));
    shares.push_back({labels[i], ks, w.share, plot::series_color(static_cast<int>(i)), false});
    for (size_t k = 0; k < share_rows.size(); ++k) {
      if (i == 0) share_rows[k].push_back(static_cast<double>(k + 1));
      share_rows[k].push_back(k < w.share.size() ? w.share[k] : 1.0);
    }
  }
  const std::string about = std::to_string(c.length) + " positions x " + std::to_string(d) + " dimensions";
  json::Value rj = json::Value::object();
  rj["positions"] = c.length;
  rj["folds"] = 5;
  rj["seed"] = static_cast<int64_t>(c.options.seed);
  rj["tables"] = reg;
  out.json_file("position_regression.json", rj);
  plot::ChartStyle s = chart("absolute position regression (" + c.label + ")", "", "MAE (positions)",
                             {"MAE", "predict the mean"}, labels);
  s.y_min = 0;
  out.png("position_regression.png",
          plot::bar_chart(labels, {{"MAE", mae, plot::series_color(0)}, {"predict the mean", base, plot::series_color(7)}}, s));
  out.analysis(t1, "position_regression.png", "json", "position_regression.json",
               "Position x predicted from P_x by least squares, 5-fold cross-validation over the " + about +
                   ", mean absolute error (Wang & Chen 2020, §4.1.1, Table 1). Controls: the fixed sinusoid of the "
                   "same width (near 0) and a Gaussian table (chance: about the MAE of predicting the mean).");

  json::Value oj = json::Value::object();
  oj["positions"] = c.length;
  oj["folds"] = 5;
  oj["seed"] = static_cast<int64_t>(c.options.seed);
  oj["tables"] = ord;
  out.json_file("relative_order.json", oj);
  plot::ChartStyle so =
      chart("relative order classification (" + c.label + ")", "", "error rate", {"error rate"}, labels);
  so.y_min = 0;
  so.y_max = 0.6;
  out.png("relative_order.png", plot::bar_chart(labels, {{"error rate", err, plot::series_color(1)}}, so));
  out.analysis(t2, "relative_order.png", "json", "relative_order.json",
               "Whether i > j, from [P_i ; P_j] by logistic regression; positions split in 5 folds, each fold's "
               "pairs tested on a model trained on pairs of the other positions (Wang & Chen 2020, §4.1.2, Table 2). "
               "0.5 is chance (the Gaussian control).");

  std::vector<std::string> header = {"k"};
  for (const std::string& n : names) header.push_back(n);
  out.file("informativeness.csv", table_csv(header, share_rows));
  plot::ChartStyle si = chart("cumulative share of singular values (" + c.label + ")", "k",
                              "share of the sum", labels);
  si.y_min = 0;
  si.y_max = 1;
  out.png("informativeness.png", plot::line_chart(shares, si));
  std::string counts;
  for (size_t i = 0; i < shares.size(); ++i)
    counts += (i ? ", " : "") + names[i] + " " + std::to_string(rows[i].components_90);
  out.analysis(t3, "informativeness.png", "csv", "informativeness.csv",
               "(s_1 + ... + s_k) / sum of all s for the singular values of the " + about +
                   " table (Wang & Chen 2020, §4.2.2, Fig. 2). Components for 90 %: " + counts + ".");
}

// At most n of the steps, evenly spread, the first and the last included.
std::vector<int64_t> evenly_spread(const std::vector<int64_t>& steps, size_t n) {
  std::vector<int64_t> chosen;
  n = std::min(n, steps.size());
  for (size_t k = 0; k < n; ++k) {
    const size_t i = n == 1 ? steps.size() - 1 : k * (steps.size() - 1) / (n - 1);
    if (chosen.empty() || chosen.back() != steps[i]) chosen.push_back(steps[i]);
  }
  return chosen;
}

// The identical-word indicators of layer 1 at each checkpoint: how the
// attention's position pattern forms during pretraining (the keys and the
// reading of probe/indicators.h; without the special tokens' rows and columns).
void indicator_trajectory(RunState& c, Output& out) {
  const std::string title = "Indicators of layer 1 during pretraining";
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
  std::vector<plot::Series> series(keys.size());
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
  std::vector<png::Image> panels;
  for (size_t k = 0; k < series.size(); ++k) {
    series[k].name = c.variant;
    series[k].points = true;
    panels.push_back(plot::line_chart({series[k]}, chart(keys[k].second, "step", keys[k].first, {})));
  }
  json::Value j = json::Value::object();
  j["what"] = "identical word probing of layer 1 at each checkpoint (probe/indicators.h)";
  j["words"] = options.words;
  j["length"] = options.length;
  j["seed"] = static_cast<int64_t>(options.seed);
  j["steps"] = rows;
  out.json_file("indicator_trajectory.json", j);
  out.png("indicator_trajectory.png",
          plot::grid(panels, 2, c.variant + ": layer-1 indicators during pretraining (w/o [CLS], [SEP])"));
  out.analysis(title, "indicator_trajectory.png", "json", "indicator_trajectory.json",
               "Identical word probing (" + std::to_string(options.words) + " words, length " +
                   std::to_string(options.length) + ") of layer 1 at " + std::to_string(chosen.size()) +
                   " of the run's checkpoints: translation invariance (AIV), monotonicity over the first 20 offsets "
                   "(OPR), symmetry (SD) and direction balance (DB), without the special tokens' rows and columns "
                   "(0 is the property met; DB 1 is balanced), and the locality/symmetry paper's locality and symmetry "
                   "(Eqs. 7-8; 1 is the property met). Wang et al. 2021, Table 2, report for BERT's learned "
                   "positions AIV 0.0143 and OPR 0.0208 after 1M steps; the locality/symmetry paper, Fig. 2 left, "
                   "BERT's locality and symmetry growing from initialisation (its Table 2: 0.162 and 0.879).");
}

void snapshots(RunState& c, Output& out) {
  const std::string title = "Position patterns at checkpoints during pretraining";
  std::vector<int64_t> steps = checkpoint_steps(c.run_dir);
  const bool absolute = !c.table.empty();
  if (!absolute && relative_vectors(*c.model, c.trained).vectors.empty())
    return out.skip(title, "variant " + c.variant + " has neither input position vectors nor per-offset vectors");
  const std::vector<int64_t> chosen = evenly_spread(steps, 6);
  std::vector<png::Image> panels;
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
  out.png("snapshots.png", plot::grid(panels, std::min<int>(3, static_cast<int>(panels.size())),
                                      c.variant + ": position patterns during pretraining"));
  out.analysis(title, "snapshots.png", "json", "snapshots.json",
               std::string(absolute ? "Dot products P_i . P_j of the input position vectors"
                                    : "Dot products of the relative vectors of layer 1") +
                   " at " + std::to_string(chosen.size()) + " of the run's " + std::to_string(steps.size()) +
                   " checkpoints (Wang et al. 2021, App. G, Fig. 8); each panel has its own colour scale, spanning its "
                   "1st-99th percentiles.");
}

void evaluations(RunState& c, Output& out, const HeldOut* held, const std::string& why_not) {
  const std::string t1 = "Skip-position attack: positions multiplied by c at evaluation";
  const std::string t2 = "Evaluation beyond the pretraining length";
  if (!held) {
    out.skip(t1, why_not);
    out.skip(t2, why_not);
    return;
  }
  const bool causal = c.model->bert.config().decoder;
  const int64_t trained = c.trained;
  const int64_t max_position = c.model->bert.position_encoding().max_position();
  const int64_t n = c.options.eval_sequences;
  const std::string metric = causal ? "next-token" : "masked-token";

  // The attack: length L' with c (L' - 1) inside the trained range, so the
  // positions are ones the model saw; the same windows and masks unattacked.
  const int64_t limit = max_position >= 0 ? std::min(max_position, trained - 1) : trained - 1;
  json::Value attack = json::Value::array();
  std::vector<std::string> cats;
  std::vector<double> clean_loss, hit_loss, clean_acc, hit_acc;
  for (int64_t factor : {2, 4}) {
    const int64_t length = limit / factor + 1;
    if (length < 4) continue;
    std::vector<text::Batch> batches = windows(*held, causal, length, n, c.options.seed);
    train::EvalResult clean = train::evaluate_batches(*c.model, batches, Device::cpu());
    for (text::Batch& b : batches)
      for (int64_t& p : b.positions) p *= factor;
    train::EvalResult hit = train::evaluate_batches(*c.model, batches, Device::cpu());
    json::Value e = json::Value::object();
    e["factor"] = factor;
    e["length"] = length;
    e["sequences"] = n;
    e["unattacked"] = eval_json(clean);
    e["attacked"] = eval_json(hit);
    attack.push_back(e);
    cats.push_back("c=" + std::to_string(factor) + ", L=" + std::to_string(length));
    clean_loss.push_back(clean.loss);
    hit_loss.push_back(hit.loss);
    clean_acc.push_back(clean.accuracy);
    hit_acc.push_back(hit.accuracy);
  }
  if (attack.size() == 0) {
    out.skip(t1, "the trained range of positions (0.." + std::to_string(limit) + ") is too short for c = 2");
  } else {
    json::Value j = json::Value::object();
    j["objective"] = causal ? "causal" : "mlm";
    j["conditions"] = attack;
    out.json_file("skip_position_attack.json", j);
    const std::vector<std::string> legend = {"positions 0,1,2,...", "positions 0,c,2c,..."};
    plot::ChartStyle sl = chart("held-out " + metric + " loss", "", "loss", legend, cats);
    sl.y_min = 0;
    plot::ChartStyle sa = chart("held-out " + metric + " accuracy", "", "accuracy", legend, cats);
    sa.y_min = 0;
    sa.y_max = 1;
    out.png("skip_position_attack.png",
            plot::grid({plot::bar_chart(cats, {{"positions 0,1,2,...", clean_loss, plot::series_color(0)},
                                               {"positions 0,c,2c,...", hit_loss, plot::series_color(3)}},
                                        sl),
                        plot::bar_chart(cats, {{"positions 0,1,2,...", clean_acc, plot::series_color(0)},
                                               {"positions 0,c,2c,...", hit_acc, plot::series_color(3)}},
                                        sa)},
                       2, c.variant + ": skip-position attack (" + c.label + ")"));
    out.analysis(t1, "skip_position_attack.png", "json", "skip_position_attack.json",
                 "Held-out " + metric + " loss and accuracy with positions 0, c, 2c, ... against 0, 1, 2, ... on the "
                 "same " + std::to_string(n) + " windows and masks of length L, chosen so that c (L - 1) stays inside "
                 "the trained positions (Wang & Chen 2020, §5.2).");
  }

  // Longer than trained: L, 1.5 L, 2 L.
  json::Value rows = json::Value::array();
  std::vector<double> lengths, losses, accs;
  std::string refused;
  for (double f : {1.0, 1.5, 2.0}) {
    const int64_t length = static_cast<int64_t>(std::llround(f * static_cast<double>(trained)));
    if (max_position >= 0 && length - 1 > max_position) {
      refused += (refused.empty() ? "" : "; ") + std::string("length ") + std::to_string(length) +
                 ": the absolute table holds positions 0.." + std::to_string(max_position);
      continue;
    }
    train::EvalResult e;
    try {
      e = train::evaluate_batches(*c.model, windows(*held, causal, length, n, c.options.seed), Device::cpu());
    } catch (const Error& err) {
      refused += (refused.empty() ? "" : "; ") + std::string("length ") + std::to_string(length) + ": " + err.what();
      continue;
    }
    json::Value r = eval_json(e);
    r["length"] = length;
    rows.push_back(r);
    lengths.push_back(static_cast<double>(length));
    losses.push_back(e.loss);
    accs.push_back(e.accuracy);
  }
  if (lengths.size() < 2) {
    out.skip(t2, refused.empty() ? "no length beyond the pretraining one could be evaluated" : refused);
    return;
  }
  json::Value j = json::Value::object();
  j["trained_length"] = trained;
  j["sequences"] = n;
  j["lengths"] = rows;
  if (!refused.empty()) j["not_evaluated"] = refused;
  out.json_file("beyond_length.json", j);
  plot::ChartStyle sl = chart("held-out " + metric + " loss", "sequence length", "loss", {"loss"});
  plot::ChartStyle sa = chart("held-out " + metric + " accuracy", "sequence length", "accuracy", {"accuracy"});
  out.png("beyond_length.png",
          plot::grid({plot::line_chart({{"loss", lengths, losses, plot::series_color(0), true}}, sl),
                      plot::line_chart({{"accuracy", lengths, accs, plot::series_color(1), true}}, sa)},
                     2, c.variant + ": beyond the pretraining length " + std::to_string(trained) + " (" +
                            c.label + ")"));
  out.analysis(t2, "beyond_length.png", "json", "beyond_length.json",
               "Held-out " + metric + " loss and accuracy on " + std::to_string(n) + " full windows at the pretraining "
               "length " + std::to_string(trained) + " and beyond (Huang et al. 2020, §4.3, Table 4; Wang et al. 2021, "
               "App. F)." + (refused.empty() ? std::string() : " Not evaluated: " + refused + "."));
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& trajectory_indicators() {
  static const std::vector<std::pair<std::string, std::string>> keys = {
      {"translation_invariance", "translation invariance (AIV)"},
      {"monotonicity_first_k", "monotonicity, first 20 offsets (OPR)"},
      {"symmetry_sd", "symmetry (SD)"},
      {"direction_balance", "direction balance (DB)"},
  };
  return keys;
}

namespace {

// The run's checkpoint the options name (the newest complete one by default).
int64_t chosen_step(const AnalyzeOptions& o) {
  std::vector<int64_t> steps = checkpoint_steps(o.run);
  ORDO_CHECK(!steps.empty(), "--run: '", o.run, "' has no complete checkpoint under checkpoints/ (pretrain writes them)");
  if (o.checkpoint.empty()) return steps.back();
  const int64_t step = parse_checkpoint_flag(o.checkpoint);
  if (std::find(steps.begin(), steps.end(), step) == steps.end()) {
    std::string have;
    for (int64_t s : steps) have += (have.empty() ? "" : ", ") + step_name(s);
    throw Error(detail::cat("--checkpoint: '", o.checkpoint, "' is not a complete checkpoint of ", o.run,
                            " (it has ", have, ")"));
  }
  return step;
}

}  // namespace

std::string model_label(const nn::BertConfig& c) {
  return c.model_type == "bert" ? c.pe : c.model_type + " (" + c.pe + ")";
}

AnalyzeSummary analyze_run(const AnalyzeOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool single = o.run.empty();  // a checkpoint outside a run (--model)
  ORDO_CHECK(!single || !o.model_dir.empty(), "analyze: no run directory (--run) or checkpoint (--model) given");
  ORDO_CHECK(single || o.model_dir.empty(), "analyze: give --run or --model, not both");
  ORDO_CHECK(!o.out.empty(), "analyze: no output directory given (--out)");
  ORDO_CHECK(o.eval_sequences >= 1, "analyze: --eval-sequences must be at least 1, got ", o.eval_sequences);
  ORDO_CHECK(o.positions >= 2, "analyze: --positions must be at least 2, got ", o.positions);
  if (!single) {
    ORDO_CHECK(directory_exists(o.run), "--run: '", o.run, "' is not a directory");
    ORDO_CHECK(file_exists(o.run + "/config.json"), "--run: '", o.run, "' holds no run (no config.json)");
    // A checkpoint folder (an HF model, a run's step_N) has a config.json too,
    // the model's: say what it is rather than read it as a run's config.
    ORDO_CHECK(!file_exists(o.run + "/model.safetensors") || directory_exists(o.run + "/checkpoints"), "--run: '",
               o.run, "' is a checkpoint (config.json + model.safetensors), not a run of ordo pretrain: analyze "
               "it with --model ", o.run);
  }
  check_output(o.out, OutputKind::folder, o.overwrite,
               {{single ? o.model_dir : o.run, single ? "--model" : "--run"}});

  RunState c;
  c.options = o;
  std::string dir;
  if (single) {
    dir = train::resolve_checkpoint(o.model_dir);
    c.label = dir.substr(dir.find_last_of('/') + 1);
  } else {
    c.run_dir = o.run;
    c.run = train::read_run_config(o.run + "/config.json", {});
    c.step = chosen_step(o);
    c.label = step_name(c.step);
    dir = train::checkpoint_dir(o.run, c.step);
  }
  // A bare encoder loads too, and a fine-tuned model without its task head:
  // the analyses read positions and attention weights, not the heads.
  nn::LoadReport loaded;
  c.model = model::load_model(dir, Device::cpu(), &loaded);
  if (!loaded.unused.empty() && !o.quiet)
    std::fprintf(stderr, "ordo analyze: %s: the task head (%s) left out; the analyses read the encoder\n", dir.c_str(),
                 downstream::join_fields(loaded.unused, ", ").c_str());
  const nn::BertConfig& m = c.model->bert.config();
  c.variant = model_label(m);
  const int64_t max_position = c.model->bert.position_encoding().max_position();
  const int64_t rows = max_position >= 0 ? max_position + 1 : m.max_position_embeddings;
  // A run: the positions it trained; a checkpoint: the first --positions (Wang & Chen 2020 take 512).
  c.trained = single ? std::min(rows, o.positions) : trained_length(c.run);
  c.length = std::min(rows, c.trained);
  c.table = absolute_table(*c.model, c.length);

  Output out;
  out.quiet = o.quiet;
  std::unique_ptr<HeldOut> held;
  std::string why_not = "a checkpoint outside an ordo run has no held-out corpus (use --run)";
  if (!single) {
    try {
      held = std::make_unique<HeldOut>(load_held_out(c.run, o.run));
    } catch (const Error& e) {
      why_not = e.what();
    }
  }
  std::vector<int32_t> sample;  // one held-out sequence of length L for the token-token term
  if (held)
    for (int64_t i = 0; i < c.length; ++i) sample.push_back(held->stream[static_cast<size_t>(i) % held->stream.size()]);

  similarity_of_absolute(c, out);
  similarity_of_relative(c, out);
  offset_parameters(c, out);
  learned_frequencies(c, out);
  position_position_term(c, out);
  const std::vector<Matrix> scores = positional_scores(*c.model, 0, c.length);
  positional_score_maps(c, out, scores);
  positional_score_layers(c, out, scores);
  segment_attention_maps(c, out);
  attention_rank(c, out, held ? &sample : nullptr, scores);
  probes_of_table(c, out);
  if (single) {
    out.skip("Position patterns at checkpoints during pretraining", "a single checkpoint, not a run");
    out.skip("Indicators of layer 1 during pretraining",
             "a single checkpoint, not a run (ordo probe --checkpoint gives its indicators)");
  } else {
    snapshots(c, out);
    indicator_trajectory(c, out);
  }
  evaluations(c, out, held.get(), why_not);
  attention_on_text(c, out, held.get(), why_not);
  dependency_parsing_heads(c, out);

  json::Value index = json::Value::object();
  index["variant"] = m.pe;
  index["model_type"] = m.model_type;
  index[single ? "model" : "run"] = single ? dir : o.run;
  index["checkpoint"] = c.label;
  index["analyses"] = out.analyses;
  index["skipped"] = out.skipped;
  // Everything computed: now the files, the index last, in a folder swapped in whole for o.out.
  out.file("index.json", json::dump(index, 2) + "\n");
  write_folder(o.out, out.files);

  AnalyzeSummary s;
  s.variant = c.variant;
  s.checkpoint = c.label;
  s.analyses = static_cast<int64_t>(out.analyses.size());
  s.skipped = static_cast<int64_t>(out.skipped.size());
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

Matrix position_table(nn::PretrainingModel& model, int64_t rows) { return absolute_table(model, rows); }

std::vector<Matrix> positional_scores(nn::PretrainingModel& model, int layer, int64_t length) {
  NoGradGuard no_grad;
  nn::PositionEncoding& pe = model.bert.position_encoding();
  const nn::BertConfig& m = model.bert.config();
  const int64_t H = m.num_attention_heads, d = m.head_dim();
  const Device device = model.bert.device();
  const Tensor positions = nn::default_positions(1, length, device);
  nn::Context ctx = nn::Context::eval();
  const DType dtype = model.bert.embeddings.word_embeddings.weight.var.dtype();
  const nn::AttentionState s{layer, H, d, &positions, nullptr, &ctx, dtype};
  const Var zero(Tensor::zeros({1, H, length, d}, dtype, device));
  Var bias = pe.score_bias(s, zero, zero);
  if (!bias.defined()) return {};
  if (pe.adds_segment_scores()) bias = sub(bias, pe.segment_scores(s));
  const Tensor b = bias.value().to(Device::cpu()).contiguous();
  ORDO_CHECK(b.numel() == H * length * length || b.numel() == length * length, "positional_scores: variant ", m.pe,
             "'s score terms have ", b.numel(), " values, expected [1, ", H, " or 1, ", length, ", ", length, "]");
  const std::vector<double> v = b.to_doubles();
  const bool per_head = b.numel() == H * length * length;
  std::vector<Matrix> heads;
  bool nonzero = false;
  for (int64_t h = 0; h < H; ++h) {
    Matrix t(length, length);
    for (int64_t k = 0; k < length * length; ++k) {
      t.data[static_cast<size_t>(k)] = v[static_cast<size_t>((per_head ? h * length * length : 0) + k)];
      nonzero |= t.data[static_cast<size_t>(k)] != 0;
    }
    heads.push_back(std::move(t));
  }
  if (!nonzero) return {};
  return heads;
}

std::vector<Matrix> segment_attention(nn::PretrainingModel& model, int layer, int64_t length, int64_t second_segment) {
  NoGradGuard no_grad;
  nn::PositionEncoding& pe = model.bert.position_encoding();
  if (!pe.adds_segment_scores()) return {};
  const nn::BertConfig& m = model.bert.config();
  const int64_t H = m.num_attention_heads, d = m.head_dim();
  const Device device = model.bert.device();
  const Tensor positions = nn::default_positions(1, length, device);
  std::vector<int64_t> split(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) split[static_cast<size_t>(i)] = i >= second_segment ? 1 : 0;
  const Tensor segments = Tensor::from_vector(split, {1, length}).to(device);
  nn::Context ctx = nn::Context::eval();
  const DType dtype = model.bert.embeddings.word_embeddings.weight.var.dtype();
  const nn::AttentionState s{layer, H, d, &positions, &segments, &ctx, dtype};
  const Var zero(Tensor::zeros({1, H, length, d}, dtype, device));
  const Tensor b = softmax(pe.score_bias(s, zero, zero).value().expand({1, H, length, length}).contiguous())
                       .to(Device::cpu());
  const std::vector<double> v = b.to_doubles();
  std::vector<Matrix> heads;
  for (int64_t h = 0; h < H; ++h) {
    Matrix a(length, length);
    for (int64_t k = 0; k < length * length; ++k)
      a.data[static_cast<size_t>(k)] = v[static_cast<size_t>(h * length * length + k)];
    heads.push_back(std::move(a));
  }
  return heads;
}

WangChenReport wang_chen_of(const std::vector<std::pair<std::string, std::string>>& models, int64_t positions,
                            uint64_t seed, bool quiet) {
  // Every entry loaded and checked before anything is computed.
  std::vector<NamedTable> tables;
  json::Value skipped = json::Value::array();
  for (const auto& [name, given] : models) {
    const std::string dir = train::resolve_checkpoint(given);
    auto model = model::load_model(dir, Device::cpu());
    const nn::BertConfig& c = model->bert.config();
    const int64_t max_position = model->bert.position_encoding().max_position();
    int64_t rows = std::min(max_position >= 0 ? max_position + 1 : c.max_position_embeddings, positions);
    // An ordo run's rows past its pretraining length were never trained.
    if (const std::optional<int64_t> trained = train::checkpoint_trained_length(dir)) rows = std::min(rows, *trained);
    NamedTable t{name, std::string(c.decoder ? "decoder (causal LM), " : "encoder, ") + model_label(c),
                 absolute_table(*model, rows)};
    if (t.table.empty()) {
      json::Value e = json::Value::object();
      e["model"] = name;
      e["reason"] = "variant " + c.pe + " adds no position vector at the input";
      skipped.push_back(e);
      continue;
    }
    if (!quiet) std::fprintf(stderr, "analyze: %s: %s, %lld positions\n", name.c_str(), t.kind.c_str(),
                             static_cast<long long>(t.table.rows));
    tables.push_back(std::move(t));
  }
  ORDO_CHECK(!tables.empty(), "Wang & Chen's tables: no checkpoint or run with a position table among the ",
             models.size(), " given (", skipped.size(), " without one)");
  WangChenOptions wo;
  wo.positions = positions;
  wo.seed = seed;
  WangChenReport report = wang_chen_tables(tables, wo);
  report.summary["skipped"] = skipped;
  report.files.front().second = json::dump(report.summary, 2) + "\n";  // wang_chen.json, with the skipped
  return report;
}

AnalyzeSummary analyze_models(const AnalyzeOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  ORDO_CHECK(!o.out.empty(), "analyze: no output directory given (--out)");
  ORDO_CHECK(directory_exists(o.models), "--models: '", o.models, "' is not a directory");
  ORDO_CHECK(o.positions >= 2, "analyze: --positions must be at least 2, got ", o.positions);
  check_output(o.out, OutputKind::folder, o.overwrite, {{o.models, "--models"}});
  // Every entry that is a checkpoint or a run, in name order.
  std::vector<std::pair<std::string, std::string>> models;
  for (const std::string& name : list_directory(o.models)) {
    if (name == "." || name == ".." || !directory_exists(o.models + "/" + name)) continue;
    const std::string given = o.models + "/" + name;
    const bool checkpoint = file_exists(given + "/config.json") && file_exists(given + "/model.safetensors");
    if (checkpoint || directory_exists(given + "/checkpoints")) models.emplace_back(name, given);  // else neither
  }
  ORDO_CHECK(!models.empty(), "--models: '", o.models, "' holds no checkpoint or run");
  WangChenReport report = wang_chen_of(models, o.positions, o.seed, o.quiet);
  report.summary["models"] = o.models;
  report.files.front().second = json::dump(report.summary, 2) + "\n";
  write_folder(o.out, report.files);
  AnalyzeSummary s;
  s.skipped = static_cast<int64_t>(report.summary["skipped"].size());
  s.analyses = static_cast<int64_t>(models.size()) - s.skipped;
  s.variant = std::to_string(s.analyses) + " models";
  s.checkpoint = std::to_string(report.positions) + " positions";
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

}  // namespace ordo::probe
