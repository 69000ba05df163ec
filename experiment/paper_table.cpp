// A paper's table as data (experiment/paper_table.h).
#include "experiment/paper_table.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "base/error.h"
#include "base/file_io.h"
#include "experiment/plan.h"
#include "report/report.h"
#include "text/utf8.h"

namespace ordo::experiment {

namespace {

std::string trimmed(const std::string& s) {
  const size_t a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}


// A number filling the whole text, or an error naming where.
double number_in(const std::string& text, const std::string& where) {
  char* after = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &after);
  ORDO_CHECK(!text.empty() && *after == '\0' && errno == 0 && std::isfinite(v), where, ": '", text,
             "' is not a number");
  return v;
}

// "89.65 † ± 0.11", "76.6 ± 0.41", "0.0143", "-"; the mark may stand after the value or the spread.
PaperCell read_cell(std::string text, const std::string& where) {
  PaperCell c;
  text = trimmed(text);
  if (text == "-") return c;
  const std::string dagger = "\u2020", plus_minus = "\u00b1";
  for (size_t at; (at = text.find(dagger)) != std::string::npos;) {
    c.marked = true;
    text.erase(at, dagger.size());
  }
  const size_t pm = text.find(plus_minus);
  c.present = true;
  c.value = number_in(trimmed(text.substr(0, pm)), where);
  if (pm != std::string::npos) {
    c.spread = number_in(trimmed(text.substr(pm + plus_minus.size())), where);
    ORDO_CHECK(c.spread >= 0, where, ": a spread must not be negative");
  }
  return c;
}

}  // namespace

std::vector<std::string> split_fields(const std::string& line, char separator) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t at = line.find(separator, start);
    out.push_back(line.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::string read_data_text(const std::string& path) {
  std::string text = read_file(path);
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  text::utf8::Invalid invalid;
  if (text::utf8::valid(text, &invalid)) return text;
  const size_t newline = text.rfind('\n', invalid.offset);
  const size_t line_start = newline == std::string::npos ? 0 : newline + 1;
  const auto line = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(line_start), '\n') + 1;
  throw Error(detail::cat(path, ":", line, ": invalid UTF-8 at byte ", invalid.offset - line_start + 1,
                          " of the line (", invalid.reason, "); the file must be UTF-8 text"));
}

const std::vector<std::string>& analysis_keys() {
  static const std::vector<std::string> keys = {"positional_rank", "position_mae", "order_error", "components_90",
                                                "skip_perplexity_ratio"};
  return keys;
}

bool is_analysis_key(const std::string& key) {
  const std::vector<std::string>& keys = analysis_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

bool is_figure_key(const std::string& key) {
  if (is_indicator_key(key) || is_analysis_key(key) || key == "eval_accuracy" || key == "glue.mean") return true;
  const size_t dot = key.find('.');
  return dot != std::string::npos && dot > 0 && dot + 1 < key.size() && key.back() != '.';
}

std::string figure_task(const std::string& key) {
  if (is_indicator_key(key) || is_analysis_key(key) || key == "eval_accuracy" || key == "glue.mean" ||
      key == "senteval.mean")
    return "";
  return key.substr(0, key.find('.'));
}

bool is_indicator_key(const std::string& key) {
  if (key == "variant" || key == "objective" || key == "layer" || key.rfind("eval_", 0) == 0) return false;
  for (const auto& [k, heading] : report::table_columns())
    if (k == key) return true;
  return false;
}

std::string heading_of(const std::string& key) {
  for (const auto& [k, heading] : report::table_columns())
    if (k == key) return heading;
  return key;
}

double badness(const std::string& key, double value) {
  if (key == "direction_balance") return std::fabs(value - 1);
  if (key == "locality" || key == "symmetry") return -value;  // 1: the property holds (Eqs. 7-8)
  return is_indicator_key(key) ? value : -value;
}

double PaperTable::Row::value(const std::string& column) const {
  const auto it = cells.find(column);
  return it != cells.end() && it->second.present ? it->second.value : NAN;
}

const PaperTable::Row* PaperTable::find(const std::string& key) const {
  for (const Row& r : rows)
    if (r.key == key) return &r;
  return nullptr;
}

PaperTable read_paper_table(const std::string& path) {
  PaperTable t;
  t.path = path;
  std::string file = path.substr(path.rfind('/') + 1);
  t.name = file.substr(0, file.size() - 4);
  if (t.name.rfind("paper_", 0) == 0) t.name = t.name.substr(6);
  const std::string text = read_data_text(path);
  std::vector<std::string> header;
  size_t first_value = 0;
  std::set<std::string> seen;
  size_t start = 0;
  for (int line_no = 1; start < text.size(); ++line_no) {
    const size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = path + ":" + std::to_string(line_no);
    if (line.empty()) continue;
    if (line[0] == '#') {
      t.source.push_back(line.substr(line.rfind("# ", 0) == 0 ? 2 : 1));
      continue;
    }
    const std::vector<std::string> cells = split_fields(line, '\t');
    if (header.empty()) {
      header = cells;
      const bool rows = header.size() > 4 && header[0] == "config" && header[1] == "paper_row" &&
                        header[2] == "family" && header[3] == "kind";
      t.correlations = header.size() > 2 && header[0] == "indicator" && header[1] == "paper_row";
      if (!rows && !t.correlations && (header[0] == "relation" || header[0] == "run_attention" || header[0] == "mode")) {
        ORDO_CHECK(header.size() > 2 && header[1] == "paper_row", where, ": keyed rows have the columns ",
                   header[0], ", paper_row, then the figures");
        t.keyed = header[0];
        t.columns.assign(header.begin() + 2, header.end());
        first_value = 2;
        continue;
      }
      ORDO_CHECK(rows || t.correlations, where, ": the header must begin config, paper_row, family, kind (rows of "
                 "configurations), indicator, paper_row (correlations), or relation / run_attention / mode, "
                 "paper_row (keyed rows), tab-separated, then figure keys");
      first_value = t.correlations ? 2 : 4;
      for (size_t i = first_value; i < header.size(); ++i) {
        ORDO_CHECK(is_figure_key(header[i]), where, ": '", header[i], "' is not a figure ordo computes (an "
                   "indicator key, eval_accuracy, glue.mean or TASK.METRIC)");
        ORDO_CHECK(!t.correlations || !is_indicator_key(header[i]), where, ": a correlation's column is a task's "
                   "figure, not the indicator '", header[i], "'");
        ORDO_CHECK(std::find(t.columns.begin(), t.columns.end(), header[i]) == t.columns.end(), where, ": column '",
                   header[i], "' is named twice");
        t.columns.push_back(header[i]);
      }
      continue;
    }
    ORDO_CHECK(cells.size() == header.size(), where, ": ", cells.size(), " columns, the header has ", header.size());
    PaperTable::Row row;
    row.key = cells[0];
    row.name = cells[1];
    if (!t.correlations && t.keyed.empty()) row.family = cells[2], row.kind = cells[3];
    ORDO_CHECK(!row.key.empty() && ((!t.keyed.empty() && row.key == "-") || seen.insert(row.key).second), where, ": ",
               header[0], " '", row.key, row.key.empty() ? "' is empty" : "' is named twice");
    ORDO_CHECK(!t.correlations || is_indicator_key(row.key), where, ": '", row.key,
               "' is not an indicator of the report's table (probe/indicators.h's keys)");
    for (size_t i = first_value; i < cells.size(); ++i) {
      const PaperCell& c = row.cells[header[i]] = read_cell(cells[i], where + ": " + header[i]);
      ORDO_CHECK(!t.correlations || std::fabs(c.value) <= 1, where, ": ", header[i], ": ", cells[i],
                 " is no correlation (Pearson's r lies in [-1, 1])");
    }
    t.rows.push_back(row);
  }
  ORDO_CHECK(!t.rows.empty(), path, ": no rows (a header line, then one line per row)");
  return t;
}

void check_paper_table(const PaperTable& table, const Plan& plan) {
  if (table.keyed == "relation") {
    ORDO_CHECK(!plan.dependency_run.empty(), table.path, ": a table of dependency relations is read against one "
               "run's heads: name it in experiment.json's report.dependency_heads");
    ORDO_CHECK(table.columns == std::vector<std::string>({"distance", "contextual", "positional", "both"}), table.path,
               ": a table of relations has the columns relation, paper_row, distance, contextual, positional, both");
    return;
  }
  if (table.keyed == "run_attention") {
    for (const PaperTable::Row& row : table.rows) {
      if (row.key == "-") continue;
      const size_t dot = row.key.rfind('.');
      const std::string run = row.key.substr(0, dot), attention = dot == std::string::npos ? "" : row.key.substr(dot + 1);
      ORDO_CHECK(attention == "both" || attention == "contextual" || attention == "positional", table.path, ": row '",
                 row.key, "' is not RUN.both, RUN.contextual or RUN.positional");
      ORDO_CHECK(plan.is_row(run), table.path, ": row '", row.key, "' names no config of ", plan.folder);
      ORDO_CHECK(!plan.has_stage("layers") || plan.layers.for_run(run), table.path, ": row '", row.key,
                 "': the layers stage does not probe ", run, " (experiment.json's layers.runs)");
    }
    return;
  }
  if (table.keyed == "mode") {
    ORDO_CHECK(plan.bench_pe, table.path, ": a table of step times is read against `ordo bench pe --json "
               "OUT/bench_pe.json`: set experiment.json's report.bench_pe");
    return;
  }
  if (table.correlations) return;
  for (const PaperTable::Row& row : table.rows)
    ORDO_CHECK(plan.is_row(row.key), table.path, ": row '", row.key, "' names no config of ", plan.folder);
}

}  // namespace ordo::experiment
