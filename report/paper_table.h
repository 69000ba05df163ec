// A paper's table of indicators as data, and ordo's runs set beside it.
//
// The paper's values live in a TSV file next to the configs of its rows
// (configs/papers/wang2021_table2/paper_table2.tsv), with their source in its
// "#" comment lines, so that they are read, never typed into code or tests:
//   # source, page, what was measured ...
//   config  paper_row  family  kind  <indicator key> ...
//   02_ape_learned  BERT-style APE  APE  learned  0.2461 ...
// `config` is the run config's file name without ".json"; `family` and `kind`
// group the rows as the paper compares them ("APE" against "RPE"; "learned",
// "fixed sinusoid", "learnable sinusoid"); the indicator columns are
// probe/indicators.h's keys (report::table_columns()).
//
// The comparison puts each run's layer indicators (with the special tokens,
// as the report's table) beside the paper's row, and reads the two tables
// the way the paper's prose reads its own: for each indicator, the order of
// the families by their mean, and the order of the kinds inside a family —
// the same in ordo's run or not. Smaller is better for every indicator but
// direction balance, which is best at 1 (ordered by |DB - 1|).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "report/report.h"

namespace ordo::report {

struct PaperRow {
  std::string config;  // the run config's name ("02_ape_learned")
  std::string name;    // the paper's name of the row
  std::string family, kind;
  std::map<std::string, double> values;  // indicator key -> the paper's value
};

struct PaperTable {
  std::string path;
  std::vector<std::string> source;      // the file's comment lines, without "# "
  std::vector<std::string> indicators;  // the indicator keys, in the file's column order
  std::vector<PaperRow> rows;
  const PaperRow* find(const std::string& config) const;
};

// Reads and checks a paper table: errors name the file and line (a row with
// the wrong number of columns, a value that is not a number, an unknown
// indicator key, a config named twice).
PaperTable read_paper_table(const std::string& path);

// One run of an experiment and the name of the config it ran.
struct NamedRun {
  std::string config;
  const RunRecord* run = nullptr;
};

// The side-by-side table ("ordo / paper" per indicator) and the reading, as
// Markdown and as an HTML fragment; a run without a paper row shows "n/a".
std::string comparison_markdown(const std::vector<NamedRun>& runs, const PaperTable& paper);
std::string comparison_html(const std::vector<NamedRun>& runs, const PaperTable& paper);
json::Value comparison_json(const std::vector<NamedRun>& runs, const PaperTable& paper);

// The generated reading alone: one line per (indicator, grouping), saying
// the order in the paper, the order in ordo's runs and whether they agree.
struct Reading {
  std::string indicator, grouping;    // "translation_invariance_no_special", "families" or "kinds of APE"
  std::vector<std::string> paper_order, ordo_order;  // best first
  bool same_order = false, same_best = false;
  std::string text;                   // the line, in Markdown
};
std::vector<Reading> read_against_paper(const std::vector<NamedRun>& runs, const PaperTable& paper);

}  // namespace ordo::report
