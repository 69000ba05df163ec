// The disagreements a ladder follows, read and checked (experiment/disagreements.h).
#include "experiment/disagreements.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "base/error.h"
#include "base/file_io.h"
#include "base/output.h"
#include "base/strings.h"
#include "experiment/ladder.h"
#include "experiment/paper_table.h"

namespace ordo::experiment {

namespace {

const char* const kHeader = "id\tfigure\trow\tminus\tpaper\tpaper_flops\tdisagreement";

double positive_number(const std::string& text, const std::string& where) {
  char* after = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &after);
  ORDO_CHECK(!text.empty() && *after == '\0' && errno == 0 && std::isfinite(v) && v > 0, where,
             ": paper_flops '", text, "' is not a positive number (or '-' for none)");
  return v;
}

// The paper's value of `figure` for `row` (minus `minus`'s) from its table.
double paper_value(const Disagreement& d, const std::string& folder, const std::string& at) {
  const std::string file = folder + "/" + d.paper_table;
  ORDO_CHECK(std::filesystem::is_regular_file(file), at, ": the paper's table ", d.paper_table,
             " is no file (a paper_*.tsv, from the plan's folder)");
  const PaperTable table = read_paper_table(file);
  ORDO_CHECK(!table.correlations && table.keyed.empty(), at, ": ", d.paper_table,
             " is not a table of configurations (rows named by config)");
  ORDO_CHECK(std::find(table.columns.begin(), table.columns.end(), d.figure) != table.columns.end(), at, ": ",
             d.paper_table, " has no column '", d.figure, "'");
  double value = 0;
  for (const std::string& row : {d.row, d.minus}) {
    if (row.empty()) continue;
    const PaperTable::Row* r = table.find(row);
    ORDO_CHECK(r != nullptr, at, ": ", d.paper_table, " has no row '", row, "'");
    const double v = r->value(d.figure);
    ORDO_CHECK(std::isfinite(v), at, ": ", d.paper_table, " gives no value of ", d.figure, " for ", row);
    value += row == d.row ? v : -v;
  }
  return value;
}

}  // namespace

std::vector<Disagreement> read_disagreements(const std::string& path, const std::string& folder) {
  std::vector<Disagreement> out;
  std::set<std::string> ids;
  const std::string text = read_data_text(path);
  size_t start = 0;
  bool header = false;
  for (int line_no = 1; start <= text.size(); ++line_no) {
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // written on Windows
    if (line.empty() || line[0] == '#') continue;
    const std::string at = path + ":" + std::to_string(line_no);
    if (!header) {
      ORDO_CHECK(line == kHeader, at, ": the header must read '", kHeader, "' (tab-separated)");
      header = true;
      continue;
    }
    const std::vector<std::string> f = split_fields(line, '\t');
    ORDO_CHECK(f.size() == 7, at, ": a disagreement has 7 tab-separated fields (", kHeader, "), this line ", f.size());
    Disagreement d;
    d.id = f[0], d.figure = f[1], d.row = f[2], d.minus = f[3] == "-" ? "" : f[3], d.paper_table = f[4];
    d.text = f[6];
    d.line = line_no;
    check_path_name(d.id, at + ": the id");
    ORDO_CHECK(ids.insert(d.id).second, at, ": the id '", d.id, "' is used twice");
    ORDO_CHECK(is_figure_key(d.figure), at, ": '", d.figure, "' is no figure (a probe indicator, a task's metric "
               "as TASK.METRIC, eval_accuracy or glue.mean)");
    ORDO_CHECK(!d.row.empty() && d.row != d.minus, at, ": row must name a run config, and minus another one or '-'");
    ORDO_CHECK(!d.text.empty(), at, ": say what the disagreement is");
    d.paper_flops = f[5] == "-" ? 0 : positive_number(f[5], at);
    d.paper = paper_value(d, folder, at);
    out.push_back(d);
  }
  ORDO_CHECK(!out.empty(), path, ": no disagreements (the header '", kHeader, "' and a line each)");
  return out;
}

void check_disagreements(const std::vector<Disagreement>& disagreements, const std::string& path, const Plan& plan) {
  ORDO_CHECK(!plan.ladder.rungs.empty(), path, ": disagreements are followed up a compute ladder, and ", plan.folder,
             "/experiment.json has none (\"ladder\")");
  const std::string first = plan.ladder.rungs.front().name;
  for (const Disagreement& d : disagreements) {
    const std::string at = path + ":" + std::to_string(d.line) + " (" + d.id + ")";
    for (const std::string& row : {d.row, d.minus})
      ORDO_CHECK(row.empty() || std::count(plan.row_of.begin(), plan.row_of.end(), ladder_run_name(row, first)) > 0,
                 at, ": '", row, "' is no run config of ", plan.folder);
    if (!plan.has_stage("finetune")) continue;  // (--stages may leave it out; its tasks are checked when it runs)
    // A task's figure at every step of the ladder: the task is the plan's, and no rung leaves it out.
    const std::string task = figure_task(d.figure);
    const bool averages_tasks = d.figure == "glue.mean" || d.figure == "senteval.mean";
    ORDO_CHECK(task.empty() || plan.task(task) != nullptr, at, ": '", d.figure, "' reads task '", task,
               "', no task of ", plan.folder, "/experiment.json's finetune.tasks");
    for (const Rung& rung : plan.ladder.rungs) {
      if (rung.is_check()) continue;  // no point of a trend
      ORDO_CHECK(!averages_tasks || rung.tasks.empty(), at, ": ", d.figure, " averages every task, and rung '",
                 rung.name, "' fine-tunes on ", joined(rung.tasks, ", "), " alone: a mean over other tasks");
      ORDO_CHECK(task.empty() || rung.fine_tunes_on(task), at, ": '", d.figure, "' reads task '", task,
                 "', which rung '", rung.name, "' leaves out of its tasks (", joined(rung.tasks, ", "), ")");
    }
  }
}

}  // namespace ordo::experiment
