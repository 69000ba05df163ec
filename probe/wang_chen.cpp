// Wang & Chen 2020's Tables 1-2 and Figures 1-3 across tables: see probe/wang_chen.h.
#include "probe/wang_chen.h"

#include <algorithm>
#include <cstdio>

#include "base/counter_rng.h"
#include "base/error.h"
#include "plot/plot.h"
#include "plot/svg.h"
#include "probe/analysis_linalg.h"
#include "probe/analysis_position.h"

namespace ordo::probe {

namespace {

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

Matrix first_rows(const Matrix& m, int64_t rows) {
  Matrix out(rows, m.cols);
  std::copy(m.data.begin(), m.data.begin() + rows * m.cols, out.data.begin());
  return out;
}

Matrix gaussian(int64_t rows, int64_t cols, uint64_t seed) {
  Matrix m(rows, cols);
  CounterRng rng(seed, rng_stream(RngPurpose::gaussian_control));
  for (double& x : m.data) x = rng.normal();
  return m;
}

// The tables as analysed: each cut to the shortest's rows (at most
// o.positions), then the controls of the first one's width.
std::vector<NamedTable> analysed_tables(const std::vector<NamedTable>& tables_in, const WangChenOptions& o) {
  ORDO_CHECK(!tables_in.empty(), "Wang & Chen's tables: no position table to analyse");
  int64_t positions = o.positions;
  for (const NamedTable& t : tables_in) {
    ORDO_CHECK(t.table.rows >= 2 && t.table.cols >= 1, "Wang & Chen's tables: '", t.name, "' has a ", t.table.rows,
               " x ", t.table.cols, " table (at least 2 positions are needed)");
    positions = std::min(positions, t.table.rows);
  }
  std::vector<NamedTable> tables;
  for (const NamedTable& t : tables_in) tables.push_back({t.name, t.kind, first_rows(t.table, positions)});
  if (o.controls) {
    const int64_t d = tables.front().table.cols;
    tables.push_back({"sinusoid", "pre-defined (Vaswani et al.)", sinusoid_table(positions, sinusoid_frequencies(d))});
    tables.push_back({"random", "control: Gaussian, chance", gaussian(positions, d, o.seed)});
  }
  return tables;
}

WangChenRow row_of(const NamedTable& t, uint64_t seed) {
  const RegressionResult reg = position_regression(t.table, 5, seed);
  const OrderResult ord = relative_order_classification(t.table, 5, seed);
  WangChenRow r;
  r.name = t.name;
  r.kind = t.kind;
  r.positions = t.table.rows;
  r.dim = t.table.cols;
  r.mae = reg.mae;
  r.baseline_mae = reg.baseline_mae;
  r.order_error = ord.error_rate;
  r.order_test_pairs = ord.test_pairs;
  r.share = cumulative_share(singular_values(t.table));
  r.components_90 = components_for(r.share, 0.9);
  r.cosine_by_offset = cosine_by_offset(t.table);
  return r;
}

}  // namespace

std::vector<double> cosine_by_offset(const Matrix& table) {
  const Matrix c = cosine_similarities(table);
  std::vector<double> out;
  for (int64_t d = 1; d < c.rows; ++d) {
    double sum = 0;
    for (int64_t i = 0; i + d < c.rows; ++i) sum += c(i, i + d);
    out.push_back(sum / static_cast<double>(c.rows - d));
  }
  return out;
}

std::vector<WangChenRow> wang_chen_rows(const std::vector<NamedTable>& tables, const WangChenOptions& o) {
  std::vector<WangChenRow> rows;
  for (const NamedTable& t : analysed_tables(tables, o)) rows.push_back(row_of(t, o.seed));
  return rows;
}

WangChenReport wang_chen_tables(const std::vector<NamedTable>& tables_in, const WangChenOptions& o) {
  const std::vector<NamedTable> tables = analysed_tables(tables_in, o);
  WangChenReport r;
  for (const NamedTable& t : tables) r.rows.push_back(row_of(t, o.seed));
  const int64_t positions = r.positions = tables.front().table.rows;
  json::Value rows = json::Value::array();
  std::string md = "| model | type | positions x dim | position regression MAE (Table 1) | predicting the mean |"
                   " relative-order error (Table 2) | k for 90% of the singular values (Fig. 2) |\n"
                   "| --- | --- | --- | ---: | ---: | ---: | ---: |\n";
  std::string csv = "model,type,positions,dim,mae,baseline_mae,order_error,components_90\n";
  std::vector<plot::svg::Figure> cosines;
  std::vector<plot::svg::Line> shares;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const WangChenRow& w = r.rows[i];
    json::Value row = json::Value::object();
    row["name"] = w.name;
    row["kind"] = w.kind;
    row["positions"] = w.positions;
    row["dim"] = w.dim;
    row["mae"] = w.mae;
    row["baseline_mae"] = w.baseline_mae;
    row["order_error"] = w.order_error;
    row["components_90"] = w.components_90;
    json::Value curve = json::Value::array();
    for (double v : w.share) curve.push_back(v);
    row["share"] = curve;
    json::Value profile = json::Value::array();
    for (double v : w.cosine_by_offset) profile.push_back(v);
    row["cosine_by_offset"] = profile;
    rows.push_back(row);
    const std::string dims = std::to_string(positions) + " x " + std::to_string(w.dim);
    md += "| " + w.name + " | " + w.kind + " | " + dims + " | " + fmt("%.2f", w.mae) + " | " +
          fmt("%.2f", w.baseline_mae) + " | " + fmt("%.4f", w.order_error) + " | " + std::to_string(w.components_90) +
          " |\n";
    csv += w.name + "," + w.kind + "," + std::to_string(positions) + "," + std::to_string(w.dim) + "," +
           fmt("%.9g", w.mae) + "," + fmt("%.9g", w.baseline_mae) + "," + fmt("%.9g", w.order_error) + "," +
           std::to_string(w.components_90) + "\n";

    plot::HeatmapStyle hs;
    hs.title = w.name;
    hs.x_label = "position j";
    hs.y_label = "position i";
    hs.colorbar_label = "cosine";
    hs.vmin = -1;
    hs.vmax = 1;
    cosines.push_back(plot::svg::heatmap(cosine_similarities(tables[i].table), hs, 220));  // three a row at 1400 px
    std::vector<double> ks;
    for (size_t k = 0; k < w.share.size(); ++k) ks.push_back(static_cast<double>(k + 1));
    shares.push_back({w.name, ks, w.share, static_cast<int>(i)});
  }
  md += "\nWang & Chen 2020, Tables 1-2: the first " + std::to_string(positions) +
        " positions of each table; regression and order by 5-fold cross-validation over positions "
        "(probe/analysis_position.h). Lower is more position information; the sinusoid is the paper's "
        "pre-defined row and the Gaussian table chance.\n";

  r.summary = json::Value::object();
  r.summary["what"] = "Wang & Chen 2020, Tables 1-2 and Figures 1-3 (probe/wang_chen.h)";
  r.summary["positions"] = positions;
  r.summary["folds"] = 5;
  r.summary["seed"] = static_cast<int64_t>(o.seed);
  r.summary["tables"] = rows;
  r.files.emplace_back("wang_chen.json", json::dump(r.summary, 2) + "\n");
  r.files.emplace_back("wang_chen.md", md);
  r.files.emplace_back("wang_chen.csv", csv);
  r.files.emplace_back("wang_chen_cosine.svg",
                       plot::svg::document(plot::svg::grid(cosines, 0, "position-wise cosine similarity (Wang & Chen "
                                                                       "2020, Figs. 1 and 3), first " +
                                                                           std::to_string(positions) + " positions")));
  plot::svg::ChartStyle cs;
  cs.title = "cumulative share of the top-k singular values (Wang & Chen 2020, Fig. 2)";
  cs.x_label = "k (singular values, largest first)";
  cs.y_label = "share of the sum";
  cs.y_min = 0;
  cs.y_max = 1;
  cs.width = 720;
  r.files.emplace_back("wang_chen_informativeness.svg", plot::svg::document(plot::svg::line_chart(shares, cs)));
  return r;
}

}  // namespace ordo::probe
