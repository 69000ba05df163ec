// A paper's table as data, in a TSV file beside the configs of its rows
// (configs/papers/wang2021/paper_table3.tsv), with its source in its "#"
// comment lines, so that the paper's values are read, never typed into code
// or tests. One reader for every table; two shapes, told by the first column:
//
// Rows of configurations (Wang et al. 2021 Tables 2-4):
//   config  paper_row  family  kind  <figure key> ...
//   02_ape_learned  BERT-style APE  APE  learned  89.44 ± 0.08 ...
// `config` is a run config's name; `family` and `kind` group the rows as the
// paper compares them ("APE" against "RPE"; "learned", "fixed sinusoid").
//
// Correlations between property indicators and task scores (Table 5):
//   indicator  paper_row  <figure key> ...
//   monotonicity_first_k  monotonicity, first 20 offsets  -0.18 ...
// `indicator` is a probe indicator key; each cell the paper's Pearson r of
// that indicator with that column's figure over the configurations.
//
// Keyed rows, read by the report section that knows the table (any other
// first column; its name says which):
//   relation  paper_row  distance  contextual  positional  both      (Table 8:
//   aux:pass  auxpass    1.1       44.6        91.1        92.9       experiment/dependency_report.h)
//   run_attention  paper_row  sentence_length  ...  bigram_shift  ...  (Table 9:
//   bert.contextual  BERT-c   89.22            ...  51.16              experiment/layer_report.h)
//   mode  paper_row  rpe_shaw  tupe  rel_scalar                         (Chen et al.'s Table 3:
//   training.base  BERT_BASE training  13  1  0                        experiment/bench_report.h)
// A key may be "-" (no counterpart in ordo) on several rows; the columns are
// free names of numbers.
//
// A cell is a number, optionally "± spread" and a significance mark "†"
// (as the paper prints "89.65 † ± 0.11"), or "-" where the paper has none.
// The figure keys (experiment/results.h says what each is): a probe
// indicator ("translation_invariance_no_special"), a fine-tuning task's metric
// in percent ("rte.accuracy", "squad.f1", "mnli.dev_mismatched.accuracy",
// "sst2.score"), "glue.mean" (the classification tasks' mean, WNLI left out),
// "TASK.SET.METRIC.delta[.BASE]" (a probe set's difference from BASE, run by
// run: Δ of the word-swap probes), or the pretraining's held-out "eval_accuracy".
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ordo::experiment {

struct Plan;

struct PaperCell {
  bool present = false;  // "-": the paper has no value here
  double value = 0;
  double spread = -1;    // "± s": s; -1 when not given
  bool marked = false;   // "†"
};

struct PaperTable {
  std::string path;
  std::string name;                    // the file's name without "paper_" and ".tsv": "table3"
  bool correlations = false;           // the shape: rows of indicators (Table 5) or of configs
  std::string keyed;                   // or the first column of keyed rows ("relation", "run_attention", "mode"); "" otherwise
  std::vector<std::string> source;     // the comment lines, without "# "
  std::vector<std::string> columns;    // the figure keys, in the file's order
  struct Row {
    std::string key;                   // the config (or, for correlations, the indicator; for keyed rows, the key or "-")
    std::string name;                  // the paper's name of the row
    std::string family, kind;          // rows of configs only
    std::map<std::string, PaperCell> cells;
    double value(const std::string& column) const;  // the cell's value; NaN where the paper has none
  };
  std::vector<Row> rows;
  const Row* find(const std::string& key) const;
};

// Reads and checks a paper table: errors name the file and line (a header
// that is neither shape, a row with the wrong number of columns, a cell
// that is not a number, a key named twice, an unknown figure or indicator key).
PaperTable read_paper_table(const std::string& path);
// Checks a table against a plan: its rows name the plan's configs; keyed
// rows need the section that reads them (relation: report.dependency_heads;
// run_attention: the layers stage, on the runs the keys name; mode:
// report.bench_pe).
void check_paper_table(const PaperTable& table, const Plan& plan);

// Whether a column's key is a probe indicator (as opposed to a task's figure).
bool is_indicator_key(const std::string& key);
// Whether a key is a figure a run's analysis folder gives: positional_rank
// (Chen et al.'s Figure 2), position_mae, order_error, components_90 and
// skip_perplexity_ratio (Wang & Chen's Tables 1, 2, 4 and Figure 2).
bool is_analysis_key(const std::string& key);
const std::vector<std::string>& analysis_keys();
// Whether a key is one experiment/results.h computes: an indicator, an
// analysis figure, eval_accuracy, glue.mean, or
// TASK[.SET].METRIC for a fine-tuning task's metric.
bool is_figure_key(const std::string& key);
// The fine-tuning task a figure key (one is_figure_key accepts) reads the
// metric of: TASK of TASK[.SET].METRIC; "" for a probe indicator, an analysis figure,
// eval_accuracy and a mean over tasks (glue.mean, senteval.mean).
std::string figure_task(const std::string& key);
// A line's fields between separators (an empty one between two separators kept).
std::vector<std::string> split_fields(const std::string& line, char separator);
// A plan's data file (paper_table*.tsv, claims.tsv, disagreements.tsv), read
// whole. Its text goes into the report's JSON, HTML and Markdown, which hold
// UTF-8 only: anything else is refused when the plan is read, naming the line
// and the byte in it, not when the report is written after the runs. A UTF-8
// byte-order mark at the start (editors on Windows add one) is dropped.
std::string read_data_text(const std::string& path);
// A column's heading, as the reports print it ("AIV w/o [CLS]/[SEP]", "rte.accuracy").
std::string heading_of(const std::string& key);
// Which way is better for a column: smaller for the indicators (how far each
// property is violated), closer to 1 for direction balance (ordered by |DB -
// 1|), larger for locality and symmetry (1: the property holds) and for every
// task figure. Lower badness is better.
double badness(const std::string& key, double value);

}  // namespace ordo::experiment
