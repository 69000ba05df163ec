// What the analyses of `ordo analyze` share: number formats and CSV tables,
// the run's checkpoints, the model's parameters as matrices (the input
// table, a head's projections, the per-offset vectors), and the charts and
// maps they draw.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>

#include "base/file_io.h"
#include "probe/analyze_parts.h"
#include "train/checkpoint_paths.h"

namespace ordo::probe {

using namespace analyses;

std::string analyses::fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::string analyses::table_csv(const std::vector<std::string>& header, const std::vector<std::vector<double>>& rows) {
  std::string s;
  for (size_t k = 0; k < header.size(); ++k) s += (k ? "," : "") + header[k];
  s += "\n";
  for (const auto& r : rows) {
    for (size_t k = 0; k < r.size(); ++k) s += (k ? "," : "") + fmt("%.9g", r[k]);
    s += "\n";
  }
  return s;
}

std::vector<std::string> analyses::list_directory(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(path.c_str())) {
    while (dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<int64_t> analyses::checkpoint_steps(const std::string& run) {
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

int64_t analyses::parse_checkpoint_flag(const std::string& s) {
  std::string digits = s.rfind("step_", 0) == 0 ? s.substr(5) : s;
  ORDO_CHECK(!digits.empty() && digits.size() <= 15 && digits.find_first_not_of("0123456789") == std::string::npos,
             "--checkpoint: expected step_N or N (a step number), got '", s, "'");
  return std::atoll(digits.c_str());
}

std::string analyses::step_name(int64_t step) { return "step_" + std::to_string(step); }

int64_t analyses::trained_length(const train::RunConfig& c) {
  int64_t l = 0;
  for (const train::Phase& p : c.train.phases) l = std::max(l, p.max_seq_length);
  return l;
}

std::vector<int64_t> analyses::evenly_spread(const std::vector<int64_t>& steps, size_t n) {
  std::vector<int64_t> chosen;
  n = std::min(n, steps.size());
  for (size_t k = 0; k < n; ++k) {
    const size_t i = n == 1 ? steps.size() - 1 : k * (steps.size() - 1) / (n - 1);
    if (chosen.empty() || chosen.back() != steps[i]) chosen.push_back(steps[i]);
  }
  return chosen;
}

Matrix analyses::to_matrix(const Tensor& t) {
  ORDO_CHECK(t.dim() == 2, "analyze: expected a 2-D tensor, got ", t.dim(), " dimensions");
  Matrix m(t.size(0), t.size(1));
  m.data = t.to_doubles();
  return m;
}

Matrix analyses::absolute_table(nn::PretrainingModel& model, int64_t rows) {
  NoGradGuard no_grad;
  nn::Context ctx = nn::Context::eval();
  Var e = model.bert.position_encoding().input_embedding(nn::default_positions(1, rows, model.bert.device()), ctx);
  if (!e.defined()) return {};
  Tensor t = e.value();
  return to_matrix(t.reshape({t.size(-2), t.size(-1)}));
}

Matrix analyses::head_projection(const nn::Linear& linear, int64_t head, int64_t head_dim) {
  Matrix w = to_matrix(linear.weight.var.value());  // [out, in]
  Matrix r(w.cols, head_dim);
  for (int64_t i = 0; i < w.cols; ++i)
    for (int64_t k = 0; k < head_dim; ++k) r(i, k) = w(head * head_dim + k, i);
  return r;
}

Matrix analyses::layer1_term(nn::PretrainingModel& model, const Matrix& x, const Matrix& y, int64_t head) {
  const nn::BertConfig& c = model.bert.config();
  const nn::SelfAttention& self = model.bert.encoder.layers[0]->attention.self;
  Matrix q = probe::matmul(x, head_projection(self.query, head, c.head_dim()));
  Matrix k = probe::matmul(y, head_projection(self.key, head, c.head_dim()));
  return probe::matmul_nt(q, k);
}

RelativeVectors analyses::relative_vectors(nn::PretrainingModel& model, int64_t length) {
  nn::PositionEncoding::OffsetVectors v = model.bert.position_encoding().offset_vectors(0, length - 1);
  if (!v.vectors.defined()) return {};
  return {to_matrix(v.vectors), v.first_offset, v.source};
}

plot::svg::ChartStyle analyses::chart(const std::string& title, const std::string& x, const std::string& y,
                                      const std::vector<std::string>& categories) {
  plot::svg::ChartStyle s;
  s.title = title;
  s.x_label = x;
  s.y_label = y;
  double category_w = 0;
  for (const std::string& n : categories)
    category_w = std::max(category_w, plot::svg::text_width(n, plot::svg::kSmallFont) + 16);
  // The title at 0.62 em a character: room for it in any sans-serif font, not only the one measured.
  const double title_w = 0.62 * plot::svg::kTitleFont * static_cast<double>(title.size()) + 40;
  s.width = std::max({s.width, title_w, 110 + category_w * static_cast<double>(categories.size())});
  return s;
}

void analyses::robust_range(const Matrix& m, plot::HeatmapStyle& s) {
  std::vector<double> v = m.data;
  if (v.size() < 100) return;
  std::sort(v.begin(), v.end());
  const double lo = v[v.size() / 100], hi = v[v.size() - 1 - v.size() / 100];
  if (hi > lo) s.vmin = lo, s.vmax = hi;
}

plot::svg::Figure analyses::map(const Matrix& m, const std::string& title, const std::string& bar, int64_t first,
                                const std::string& x, const std::string& y, double highlight,
                                const std::string& highlight_label, bool robust, double map_size) {
  plot::HeatmapStyle s;
  if (robust) robust_range(m, s);
  s.title = title;
  s.x_label = x;
  s.y_label = y;
  s.colorbar_label = bar;
  s.x_first = s.y_first = first;
  s.highlight_above = highlight;
  s.highlight_label = highlight_label;
  return plot::svg::heatmap(m, s, map_size);
}

const std::vector<Matrix>& RunState::layer1_scores() {
  if (!layer1_scores_made) layer1_scores_made = positional_scores(*model, 0, length);
  return *layer1_scores_made;
}

}  // namespace ordo::probe
