// `ordo analyze`: Wang & Chen 2020's probes of the absolute table, with the
// fixed sinusoid and a Gaussian table as controls: absolute position
// regression (Table 1), relative order classification (Table 2) and the
// cumulative share of the singular values (§4.2.2).
#include <algorithm>

#include "probe/analyze_parts.h"
#include "probe/wang_chen.h"

namespace ordo::probe {

using namespace analyses;

void analyses::probes_of_table(RunState& c, Output& out) {
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
  std::vector<plot::svg::Line> shares;
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
    shares.push_back({labels[i], ks, w.share, static_cast<int>(i)});
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
  rj["table"] = c.variant;  // the run's own entry of "tables"; the others are the controls
  rj["tables"] = reg;
  out.json_file("position_regression.json", rj);
  plot::svg::ChartStyle s = chart("absolute position regression (" + c.label + ")", "table", "MAE (positions)", labels);
  s.y_min = 0;
  out.svg("position_regression.svg", plot::svg::bar_chart(labels, {{"MAE", mae, 0}, {"predict the mean", base, 7}}, s));
  out.analysis(t1, "position_regression.svg", "json", "position_regression.json",
               "Position x predicted from P_x by least squares, 5-fold cross-validation over the " + about +
                   ", mean absolute error (Wang & Chen 2020, §4.1.1, Table 1). Controls: the fixed sinusoid of the "
                   "same width (near 0) and a Gaussian table (chance: about the MAE of predicting the mean).");

  json::Value oj = json::Value::object();
  oj["positions"] = c.length;
  oj["folds"] = 5;
  oj["seed"] = static_cast<int64_t>(c.options.seed);
  oj["table"] = c.variant;
  oj["tables"] = ord;
  out.json_file("relative_order.json", oj);
  plot::svg::ChartStyle so = chart("relative order classification (" + c.label + ")", "table", "error rate", labels);
  so.y_min = 0;
  so.y_max = 0.6;
  so.legend = false;  // one series: the axis names it
  out.svg("relative_order.svg", plot::svg::bar_chart(labels, {{"error rate", err, 1}}, so));
  out.analysis(t2, "relative_order.svg", "json", "relative_order.json",
               "Whether i > j, from [P_i ; P_j] by logistic regression; positions split in 5 folds, each fold's "
               "pairs tested on a model trained on pairs of the other positions (Wang & Chen 2020, §4.1.2, Table 2). "
               "0.5 is chance (the Gaussian control).");

  std::vector<std::string> header = {"k"};
  for (const std::string& n : names) header.push_back(n);
  out.file("informativeness.csv", table_csv(header, share_rows));
  json::Value ij = json::Value::object(), inf = json::Value::object();
  for (size_t i = 0; i < rows.size(); ++i) {
    json::Value iv = json::Value::object();
    iv["components_90"] = rows[i].components_90;
    inf[names[i]] = iv;
  }
  ij["positions"] = c.length;
  ij["table"] = c.variant;
  ij["tables"] = inf;
  out.json_file("informativeness.json", ij);
  plot::svg::ChartStyle si =
      chart("cumulative share of singular values (" + c.label + ")", "k (singular values)", "share of the sum");
  si.y_min = 0;
  si.y_max = 1;
  out.svg("informativeness.svg", plot::svg::line_chart(shares, si));
  std::string counts;
  for (size_t i = 0; i < shares.size(); ++i)
    counts += (i ? ", " : "") + names[i] + " " + std::to_string(rows[i].components_90);
  out.analysis(t3, "informativeness.svg", "csv", "informativeness.csv",
               "(s_1 + ... + s_k) / sum of all s for the singular values of the " + about +
                   " table (Wang & Chen 2020, §4.2.2, Fig. 2). Components for 90 %: " + counts + ".");
}

}  // namespace ordo::probe
