// Wang & Chen 2020, Table 3 and Figure 4 across the runs (experiment/wang_chen_classifiers.h).
#include "experiment/wang_chen_classifiers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "experiment/statistics.h"
#include "experiment/tables.h"
#include "plot/svg.h"

namespace ordo::experiment {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kBins = 4;
const char* kBinNames[kBins] = {"< m - s", "[m - s, m)", "[m, m + s)", ">= m + s"};

// One seed of one classifier: its accuracy (percent) on the set Table 3 reads, and that set's length bins.
struct Seed {
  double accuracy = kNaN;
  json::Value by_length;  // downstream::length_bins_json's, or null
};

// The finished seeds of a task: SentEval's test set where the run has one, else the main dev set.
std::vector<Seed> seeds_of(const TaskResults& t) {
  std::vector<Seed> out;
  if (!t.present) return out;
  for (const json::Value& line : t.runs.as_array()) {
    const json::Value& sets = line[t.select_epoch];
    const std::string set = sets.contains("test") ? "test" : sets.items().front().first;
    Seed s;
    s.accuracy = 100 * sets[set]["accuracy"].as_number();
    if (const json::Value* by = line.find(t.select_epoch + "_by_length"); by && by->contains(set)) s.by_length = (*by)[set];
    out.push_back(s);
  }
  return out;
}

// A row of Table 3: an initial position table and its seeds per column.
struct Row {
  std::string label;
  std::map<std::string, std::vector<Seed>> columns;
};

std::vector<Row> rows_of(const Plan& plan, const std::vector<RunResults>& runs) {
  std::vector<Row> from_runs, random;
  int random_runs = 0;
  for (const RunResults& run : runs)
    random_runs += std::any_of(plan.finetune.begin(), plan.finetune.end(), [&](const FinetuneTask& t) {
      return t.init_positions == "none" && !t.sweep && t.for_run(run.config);
    });
  for (const RunResults& run : runs) {
    Row own{run.config, {}}, fresh{random_runs > 1 ? "random (" + run.config + ")" : "random", {}};
    for (const FinetuneTask& t : plan.finetune) {
      if (t.init_positions.empty() || t.sweep || !t.for_run(run.config)) continue;
      const auto it = run.tasks.find(t.name);
      if (it == run.tasks.end() || !it->second.present) continue;
      (t.init_positions == "run" ? own : fresh).columns[t.column] = seeds_of(it->second);
    }
    if (!fresh.columns.empty()) random.push_back(fresh);
    if (!own.columns.empty()) from_runs.push_back(own);
  }
  random.insert(random.end(), from_runs.begin(), from_runs.end());  // the paper's order: random first
  return random;
}

std::string spread_text(const std::vector<double>& values) {
  if (values.empty()) return "—";
  const MeanStd m = mean_std(values);
  char buf[64];
  if (values.size() > 1) std::snprintf(buf, sizeof buf, "%.2f ± %.2f", m.mean, m.std);
  else std::snprintf(buf, sizeof buf, "%.2f", m.mean);
  return buf;
}

std::vector<double> accuracies(const std::vector<Seed>& seeds) {
  std::vector<double> v;
  for (const Seed& s : seeds) v.push_back(s.accuracy);
  return v;
}

// Per seed, the mean of a row's accuracy over `columns`; empty when the row lacks one of them.
std::vector<double> row_average(const Row& row, const std::vector<std::string>& columns) {
  size_t seeds = std::numeric_limits<size_t>::max();
  for (const std::string& c : columns) {
    const auto it = row.columns.find(c);
    if (it == row.columns.end()) return {};
    seeds = std::min(seeds, it->second.size());
  }
  std::vector<double> out;
  for (size_t k = 0; !columns.empty() && k < seeds; ++k) {
    double sum = 0;
    for (const std::string& c : columns) sum += row.columns.at(c)[k].accuracy;
    out.push_back(sum / static_cast<double>(columns.size()));
  }
  return out;
}

// Figure 4's points of a row: per bin, per seed the mean over `columns` (those
// the row has, with examples in the bin) of the bin's accuracy in percent.
std::vector<std::vector<double>> bin_values(const Row& row, const std::vector<std::string>& columns) {
  std::vector<std::vector<double>> per_bin(kBins);
  size_t seeds = std::numeric_limits<size_t>::max();
  for (const std::string& c : columns)
    if (const auto it = row.columns.find(c); it != row.columns.end()) seeds = std::min(seeds, it->second.size());
  if (seeds == std::numeric_limits<size_t>::max()) return per_bin;
  for (size_t k = 0; k < seeds; ++k)
    for (int b = 0; b < kBins; ++b) {
      double sum = 0;
      int n = 0;
      for (const std::string& c : columns) {
        const auto it = row.columns.find(c);
        if (it == row.columns.end() || it->second[k].by_length.is_null()) continue;
        const json::Value& bin = it->second[k].by_length["bins"][static_cast<size_t>(b)];
        if (bin["n"].as_int() == 0) continue;
        sum += 100 * bin["accuracy"].as_number();
        ++n;
      }
      if (n > 0) per_bin[static_cast<size_t>(b)].push_back(sum / n);
    }
  return per_bin;
}

// "a 61.20, b 58.10, ..." best first.
std::string order_text(std::vector<std::pair<std::string, double>> means) {
  std::sort(means.begin(), means.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string s;
  for (const auto& [label, mean] : means) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.2f", mean);
    s += (s.empty() ? "" : ", ") + label + buf;
  }
  return s;
}

}  // namespace

WangChenFiles wang_chen_classifiers(const Plan& plan, const std::vector<RunResults>& runs) {
  WangChenFiles out;
  std::vector<std::string> columns;
  for (const FinetuneTask& t : plan.finetune)
    if (!t.init_positions.empty() && !t.sweep && std::find(columns.begin(), columns.end(), t.column) == columns.end())
      columns.push_back(t.column);
  if (columns.empty()) return out;
  const std::vector<Row> rows = rows_of(plan, runs);
  std::vector<std::string> shown;  // the columns some row has
  for (const std::string& c : columns)
    if (std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.columns.count(c) > 0; })) shown.push_back(c);

  // Table 3.
  TextTable t;
  t.header = {"initial position table", "Average"};
  t.text_columns = 1;
  t.header.insert(t.header.end(), shown.begin(), shown.end());
  std::vector<std::pair<std::string, double>> averages;
  for (const Row& row : rows) {
    const std::vector<double> average = row_average(row, shown);
    if (!average.empty()) averages.emplace_back(row.label, mean_std(average).mean);
    std::vector<std::string> cells = {row.label, spread_text(average)};
    for (const std::string& c : shown)
      cells.push_back(row.columns.count(c) ? spread_text(accuracies(row.columns.at(c))) : "—");
    t.rows.push_back(cells);
  }
  std::vector<std::string> lengths = {"average length (words)", ""};
  for (const std::string& c : shown) {
    std::string cell = "—";
    for (const Row& row : rows)
      if (row.columns.count(c) && !row.columns.at(c).empty() && !row.columns.at(c)[0].by_length.is_null()) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f", row.columns.at(c)[0].by_length["mean"].as_number());
        cell = buf;
        break;
      }
    lengths.push_back(cell);
  }
  t.rows.push_back(lengths);
  std::string about =
      "Table 3: a 1-layer classifier whose position table starts as each run's (\"random\": its own random start), "
      "every other weight random, the table trained with the rest. Accuracy (%), mean ± std over seeds, on "
      "SentEval's test partition where the data has one, else the main dev set; Average over the columns shown. "
      "Data per column: ";
  for (const FinetuneTask& task : plan.finetune)
    if (task.init_positions == "run") about += task.column + " " + task.source() + "; ";
  about += "columns without data are left out (give --data NAME=DIR).";
  std::string reading;
  if (!averages.empty())
    reading = "By the average, best first: " + order_text(averages) +
              ". The paper: BERT's and RoBERTa's tables much worse than GPT-2's and the sinusoid in most cases, "
              "the five settings alike on the short TREC and MPQA.";

  // Figure 4.
  const std::vector<std::string> figure_columns = plan.length_figure.empty() ? shown : plan.length_figure;
  std::vector<plot::svg::Line> lines;
  json::Value figure = json::Value::object(), per_row = json::Value::object();
  std::vector<std::pair<std::string, double>> longest;
  int look = 0;
  for (const Row& row : rows) {
    const std::vector<std::vector<double>> values = bin_values(row, figure_columns);
    plot::svg::Line line{row.label, {}, {}, look++};
    json::Value bins = json::Value::array();
    for (int b = 0; b < kBins; ++b) {
      const std::vector<double>& v = values[static_cast<size_t>(b)];
      json::Value bin = json::Value::object(), seeds = json::Value::array();
      for (double x : v) seeds.push_back(x);
      bin["bin"] = kBinNames[b];
      bin["mean"] = v.empty() ? json::Value() : json::Value(mean_std(v).mean);
      bin["seeds"] = seeds;
      bins.push_back(bin);
      if (v.empty()) continue;
      line.x.push_back(b + 1);
      line.y.push_back(mean_std(v).mean);
      if (b == kBins - 1) longest.emplace_back(row.label, mean_std(v).mean);
    }
    per_row[row.label] = bins;
    if (!line.x.empty()) lines.push_back(line);
  }
  json::Value figure_columns_json = json::Value::array();
  for (const std::string& c : figure_columns) figure_columns_json.push_back(c);
  figure["columns"] = figure_columns_json;
  figure["bins"] = "words, cut at the dataset's mean m minus one standard deviation s, m, and m + s";
  figure["rows"] = per_row;
  std::string figure_columns_text;
  for (const std::string& c : figure_columns) figure_columns_text += (figure_columns_text.empty() ? "" : ", ") + c;
  const std::string figure_about =
      "Figure 4: accuracy (%) against the sentence length in words, in four bins cut at each dataset's mean m and "
      "one standard deviation s (1: < m - s, 2: [m - s, m), 3: [m, m + s), 4: >= m + s), per seed the mean over " +
      figure_columns_text + " (the paper averages SUBJ, SST and CR), then over seeds.";
  std::string figure_reading;
  if (!longest.empty())
    figure_reading = "In the longest bin, best first: " + order_text(longest) +
                     ". The paper: GPT-2 well above the encoders' tables on the longer sentences; BERT's and random "
                     "worst on the longest.";

  std::string md = "\n## Wang & Chen 2020, Table 3 and Figure 4\n\n" + about + "\n\n" + t.markdown() + "\n" +
                   (reading.empty() ? "" : reading + "\n");
  std::string html = "<h3>Table 3</h3>\n<p>" + report::html_escape(about) + "</p>\n" + t.html() +
                     (reading.empty() ? "" : "<p>" + report::html_escape(reading) + "</p>\n");
  out.files.push_back({"wang_chen/table3.md", "# Wang & Chen 2020, Table 3\n\n" + about + "\n\n" + t.markdown() +
                                                  "\n" + reading + "\n"});
  out.files.push_back({"wang_chen/figure4.json", json::dump(figure, 2) + "\n"});
  md += "\n" + figure_about + "\n" + (figure_reading.empty() ? "" : "\n" + figure_reading + "\n");
  html += "<h3>Figure 4</h3>\n<p>" + report::html_escape(figure_about) + "</p>\n";
  if (!lines.empty()) {
    plot::svg::ChartStyle style;
    style.title = "accuracy by length (" + figure_columns_text + ")";
    style.x_label = "length bin (1: < m-s, 2: < m, 3: < m+s, 4: >= m+s; m, s: mean, std of the words)";
    style.y_label = "accuracy (%)";
    style.width = 920;
    out.files.push_back({"wang_chen/figure4.svg", plot::svg::document(plot::svg::grid(
                                                      {plot::svg::line_chart(lines, style)}, 1, "Wang & Chen 2020, Figure 4"))});
    md += "\n![Figure 4](wang_chen/figure4.svg)\n";
    html += "<p><img src=\"wang_chen/figure4.svg\" alt=\"accuracy against sentence length\"></p>\n";
  }
  if (!figure_reading.empty()) html += "<p>" + report::html_escape(figure_reading) + "</p>\n";
  out.markdown = md;
  out.html = html;
  return out;
}

}  // namespace ordo::experiment
