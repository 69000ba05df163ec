// Wang & Chen 2020's comparisons across an experiment's runs (experiment/wang_chen_report.h).
#include "experiment/wang_chen_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/file_io.h"
#include "base/json.h"
#include "experiment/statistics.h"
#include "experiment/tables.h"
#include "experiment/wang_chen_classifiers.h"
#include "probe/analyze_run.h"

namespace ordo::experiment {

namespace {

std::string fixed(double v, const char* pattern = "%.3f") {
  char buf[48];
  std::snprintf(buf, sizeof buf, pattern, v);
  return buf;
}

// Table 4 from each run's analysis/skip_position_attack.json: one row per run and factor c.
TextTable attack_table(const std::vector<RunResults>& runs) {
  TextTable t;
  t.header = {"run", "objective", "c", "length", "perplexity", "perplexity attacked", "accuracy",
              "accuracy attacked"};
  for (const RunResults& run : runs) {
    const std::string path = run.run_dir + "/analysis/skip_position_attack.json";
    if (!file_exists(path)) continue;
    const json::Value a = json::parse_file(path);
    json::reading_file(path, [&] {
      for (const json::Value& c : a["conditions"].as_array()) {
        const double clean = c["unattacked"]["loss"].as_number(), hit = c["attacked"]["loss"].as_number();
        t.rows.push_back({run.config, a["objective"].as_string(), std::to_string(c["factor"].as_int()),
                          std::to_string(c["length"].as_int()), fixed(std::exp(clean), "%.2f"),
                          fixed(std::exp(hit), "%.2f"), fixed(100 * c["unattacked"]["accuracy"].as_number(), "%.2f"),
                          fixed(100 * c["attacked"]["accuracy"].as_number(), "%.2f")});
      }
    });
  }
  return t;
}

// The classifiers every pretraining run of a replicated row has: those started
// from the run's table that the replicates fine-tune ("replicates.tasks"; all
// of them when it is not given).
std::vector<const FinetuneTask*> replicated_classifiers(const Plan& plan) {
  std::vector<const FinetuneTask*> out;
  for (const FinetuneTask& t : plan.finetune)
    if (t.init_positions == "run" && (plan.replicate_tasks.empty() ||
                                      std::count(plan.replicate_tasks.begin(), plan.replicate_tasks.end(), t.name)))
      out.push_back(&t);
  return out;
}

}  // namespace

std::vector<std::string> wang_chen_figure_readings(const std::vector<probe::WangChenRow>& rows) {
  std::string profiles, components;
  for (const probe::WangChenRow& r : rows) {
    components += (components.empty() ? "" : ", ") + r.name + " " + std::to_string(r.components_90);
    const std::vector<double>& c = r.cosine_by_offset;
    const size_t half = std::max<size_t>(1, (c.size() + 1) / 2);  // d <= half the positions: half the pairs or more
    if (c.empty()) continue;
    const size_t lowest = std::min_element(c.begin(), c.begin() + half) - c.begin();
    const double again = *std::max_element(c.begin() + lowest, c.begin() + half);
    profiles += (profiles.empty() ? "" : "; ") + r.name + " " + fixed(c[0], "%.2f") + " at d = 1, lowest " +
                fixed(c[lowest], "%.2f") + " at d = " + std::to_string(lowest + 1) + ", then up again by " +
                fixed(again - c[lowest], "%.2f");
  }
  return {"Figures 1 and 3, the mean cosine similarity of two positions d apart, for d up to half the positions: " +
              profiles + ". A local table falls toward 0 and stays there; a periodic one rises again. The paper "
              "(Figures 1 and 3): the encoders' tables (BERT's, RoBERTa's) local, GPT-2's and the sinusoid's periodic, "
              "read by eye: no verdict.",
          "Figure 2, the singular values needed for 90% of their sum (each row's first pretraining run): " + components +
              ". The paper: BERT's table needs the most, RoBERTa's fewer, GPT-2's fewer still; the Findings judge its "
              "order over the pretraining runs."};
}

TextTable wang_chen_replicates(const Plan& plan, const std::vector<RunResults>& runs) {
  std::vector<std::pair<std::string, const char*>> keys = {{"position_mae", "%.2f"},
                                                            {"order_error", "%.3f"},
                                                            {"components_90", "%.1f"},
                                                            {"skip_perplexity_ratio", "%.3f"}};
  TextTable t;
  t.header = {"run", "pretraining runs", "MAE (Table 1)", "order error (Table 2)", "components for 90 % (Fig. 2)",
              "perplexity factor, c = 2 (Table 4)"};
  const std::vector<const FinetuneTask*> classifiers = replicated_classifiers(plan);
  for (const FinetuneTask* c : classifiers) {
    keys.push_back({c->name + ".accuracy", "%.2f"});
    t.header.push_back(c->name + " accuracy (Table 3)");
    t.header.push_back(c->name + ": std over the first run's seeds");
  }
  for (const RunResults& run : runs) {
    if (run.replicates.empty()) continue;
    const size_t runs_of_row = 1 + run.replicates.size();
    std::vector<std::string> row = {run.config, std::to_string(runs_of_row)};
    for (const auto& [key, pattern] : keys) {
      const std::vector<double> values = pretraining_means(run, key, plan);
      const MeanStd m = mean_std(values);
      row.push_back(values.empty() ? "—"
                    : values.size() == 1
                        ? fixed(m.mean, pattern) + " (n = 1)"
                        : fixed(m.mean, pattern) + " ± " + fixed(m.std, pattern) +
                              (values.size() < runs_of_row ? " (n = " + std::to_string(values.size()) + ")" : ""));
      if (key.find('.') == std::string::npos) continue;
      const std::optional<Figure> first = figure(run, key, plan);
      row.push_back(first && first->values.size() > 1 ? "± " + fixed(first->std(), "%.2f") : "—");
    }
    t.rows.push_back(row);
  }
  return t;
}

WangChenFiles wang_chen_across_runs(const Plan& plan, const std::vector<RunResults>& runs) {
  WangChenFiles out;
  std::vector<std::pair<std::string, std::string>> models;
  for (const RunResults& run : runs)
    if (run.pretrained()) models.emplace_back(run.config, run.run_dir);
  std::string md = "\n## Wang & Chen 2020 across the runs\n\n";
  std::string html = "<h2>Wang &amp; Chen 2020 across the runs</h2>\n";
  if (models.empty()) {
    md += "No run has finished pretraining yet.\n";
    out.markdown = md;
    out.html = html + "<p>No run has finished pretraining yet.</p>\n";
    return out;
  }
  // Every run's table cut to the same rows: the longest its shortest run trained.
  probe::WangChenReport report = probe::wang_chen_of(models, 1 << 20, plan.analyze.seed, /*quiet=*/true);
  for (auto& [name, bytes] : report.files) out.files.push_back({"wang_chen/" + name, bytes});

  TextTable t;
  t.header = {"table", "kind", "positions", "dim", "MAE (Table 1)", "MAE of the mean", "order error (Table 2)",
              "components for 90 % (Fig. 2)"};
  for (const probe::WangChenRow& r : report.rows)
    t.rows.push_back({r.name, r.kind, std::to_string(r.positions), std::to_string(r.dim), fixed(r.mae, "%.2f"),
                      fixed(r.baseline_mae, "%.2f"), fixed(r.order_error), std::to_string(r.components_90)});
  const TextTable attack = attack_table(runs);
  const std::string about =
      "Each run's input position table, its first " + std::to_string(report.positions) +
      " rows (every run's trained length), with the fixed sinusoid of the same width and a Gaussian table as "
      "controls (probe/wang_chen.h; seed " + std::to_string(plan.analyze.seed) + "). Each row is a run's first "
      "pretraining; the paper's values are lost, so no cell is compared with one: the directions it states "
      "between models are judged over the pretraining runs in the Findings.";
  const TextTable spread = wang_chen_replicates(plan, runs);
  const std::string spread_about =
      "The rows pretrained again (train.seed = data.seed = another seed, the same corpus): each figure's mean ± "
      "std over their pretraining runs, each run's own analysis (the classifiers: each run's mean over its "
      "fine-tuning seeds, then over the runs), beside the first run's spread over its fine-tuning seeds.";
  const std::string spread_md = spread.rows.empty() ? "" : "\n" + spread_about + "\n\n" + spread.markdown();
  const std::string spread_html =
      spread.rows.empty() ? "" : "<p>" + report::html_escape(spread_about) + "</p>\n" + spread.html();
  md += about + "\n\n" + t.markdown() + spread_md + "\n![Figures 1 and 3](wang_chen/wang_chen_cosine.svg)\n\n" +
        "![Figure 2](wang_chen/wang_chen_informativeness.svg)\n";
  html += "<p>" + report::html_escape(about) + "</p>\n" + t.html() + spread_html +
          "<p><img src=\"wang_chen/wang_chen_cosine.svg\" alt=\"cosine similarity per run\"></p>\n"
          "<p><img src=\"wang_chen/wang_chen_informativeness.svg\" alt=\"singular values per run\"></p>\n";
  append_reading(wang_chen_figure_readings(report.rows), "Reading (generated)", md, html);
  const std::string attack_about =
      "Table 4, the skip-position attack: held-out perplexity (exp of the mean loss over the predicted tokens: "
      "masked tokens for MLM, next tokens for the causal run) and accuracy with positions 0, 1, 2, ... and with "
      "0, c, 2c, ... on the same windows and masks (each run's analysis/skip_position_attack.json).";
  if (!attack.rows.empty()) {
    md += "\n" + attack_about + "\n\n" + attack.markdown();
    html += "<h3>Table 4</h3>\n<p>" + report::html_escape(attack_about) + "</p>\n" + attack.html();
    out.files.push_back({"wang_chen/skip_position_attack.md", "# Wang & Chen 2020, Table 4\n\n" + attack_about +
                                                                  "\n\n" + attack.markdown()});
  }
  // Table 3 and Figure 4, when the plan fine-tunes classifiers from the runs' tables.
  const WangChenFiles classifiers = wang_chen_classifiers(plan, runs);
  out.files.insert(out.files.end(), classifiers.files.begin(), classifiers.files.end());
  out.markdown = md + classifiers.markdown;
  out.html = html + classifiers.html;
  return out;
}

}  // namespace ordo::experiment
