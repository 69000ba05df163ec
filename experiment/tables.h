// The report stage's comparisons: every paper table of the experiment set
// beside ordo's figures, with a generated reading, and the correlations of
// Wang et al. 2021's Table 5 and Figure 5.
//
// For a table of configurations, each cell is "ordo / paper": ordo's mean ±
// sample std over seeds (a probe indicator has one value), "†" where the
// row differs from the plan's baseline (report.baseline) by Welch's two-sided
// t-test — the test Wang et al.'s Table 4 names without saying which; Welch's
// does not assume equal variances — Holm-corrected over the column's family
// (every row tested against the baseline in that column) at report.alpha,
// and the paper's cell as printed. Each column is read by the rules of
// experiment/verdicts.h:
//   - the order of the groups (the paper's families, and the kinds within a
//     family) by their mean, best first, in the paper and in ordo
//     (descriptive: group means, no test);
//   - the rank agreement across rows between ordo's means and the paper's
//     values, both ordered best first (direction balance by |DB - 1|):
//     Kendall's tau-b and Spearman's rho with their p-values and n, and
//     the column's verdict on it;
//   - for a task's figure, each row's difference from the baseline against
//     the paper's, a verdict per row.
// Rows left out of a column's comparisons, each said in its own line: a
// run with uniform attention where the indicator is a tie artifact there
// (verdicts.h), and a mean over another task set than the rows compared
// (glue.mean of a run that lacks a task).
// For a table of correlations (rows: indicators; columns: task figures),
// ordo's cell is Pearson's r of the indicator with the column's figure over
// the configurations that have a position encoding (Wang et al. leave
// `none` out, their footnote 11: its indicators and scores are outliers),
// with its p-value and n, read by a verdict per indicator (the paper's sign;
// Holm over the column's indicators), the signs that agree and the rank
// agreement down each column.
// Figure 5 (experiment/figure5.h): the same correlation with OPR over the
// first k offsets and with DB_l, as functions of k and l, one line per column.
#pragma once

#include <string>
#include <vector>

#include "base/json.h"
#include "experiment/paper_table.h"
#include "experiment/plan.h"
#include "experiment/results.h"
#include "experiment/verdicts.h"
#include "report/report.h"

namespace ordo::experiment {

// A section of an experiment's report that a paper's table or figure adds
// (experiment/dependency_report.h, layer_report.h, sweep_report.h,
// bench_report.h): its files, and its text for index.html and paper.md.
struct ReportSection {
  std::vector<report::OutputFile> files;
  std::string html;
  std::string markdown;
  std::vector<SectionVerdict> verdicts;  // for a claims.tsv's "section KEY" claims (experiment/findings.h)
};

// A paragraph of prose appended to a section's Markdown and (escaped) HTML.
void append_paragraph(const std::string& text, std::string& md, std::string& html);

// The generated reading `lines` under the heading `title` ("Reading
// (generated)"), appended as a Markdown list to `md` and an HTML list to
// `html`; returned as a JSON array for the section's record.
json::Value append_reading(const std::vector<std::string>& lines, const std::string& title, std::string& md,
                           std::string& html);

// "The paper's values: `PATH`" and the table's source lines, for paper.md.
std::string paper_values_markdown(const PaperTable& table);

// A figure in a cell by a printf pattern (one decimal by default: "85.3"),
// "-" where there is none (NaN or infinite).
std::string cell(double v, const char* pattern = "%.1f");
// "mean ± std" of `values` in `pattern`, the mean alone for one value.
std::string mean_std_cell(const std::vector<double>& values, const char* pattern);

// A row's change measured once per pretraining run (at least two), tested
// against no change by Student's one-sample t and judged against the paper's
// direction (`paper_sign`): sets v.judgement and v.effect, "<what> <mean>
// [<low>, <high>]<where> (Student's t over N pretraining runs, p = P)", the
// 95% interval and the mean in `pattern`.
void judge_change_over_runs(const std::vector<double>& changes, double paper_sign, double alpha,
                            const std::string& what, const char* pattern, const std::string& where,
                            SectionVerdict& v);
// The same in the paper's direction over the baseline's pretraining runs
// (report.baseline), `changes` one per run that has the figure (`having`, as
// the reasons say it: "probed layer by layer"): not testable, and why, with
// no baseline or fewer than two such runs.
void judge_baseline_runs(const Plan& plan, const std::vector<double>& changes, const std::string& having,
                         const std::string& what, const char* pattern, const std::string& where, SectionVerdict& v);
// Its reading: "The paper: <v.paper>. <baseline>'s pretraining runs: <each
// value in pattern><unit>; <v.effect>. Verdict: <verdict> (<reason>)."
std::string baseline_runs_line(const Plan& plan, const SectionVerdict& v, const std::vector<double>& changes,
                               const char* pattern, const std::string& unit);

// The run config `name`'s results among `runs`; nullptr where there is none.
const RunResults* run_named(const std::vector<RunResults>& runs, const std::string& name);

// A table of text cells, rendered as Markdown or HTML.
struct TextTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  size_t text_columns = 2;  // the leading columns aligned left (names); the rest right (figures)
  std::string markdown() const;
  std::string html() const;
};

// One generated line of reading about a column.
struct ColumnReading {
  std::string table, column, grouping;  // grouping: "families", "kinds of APE", "rank", "signs"
  std::vector<std::string> paper_order, ordo_order;  // best first (groupings of groups)
  bool same_order = false, same_best = false;
  double kendall = 0, spearman = 0;  // the rank agreement (grouping "rank" and "signs")
  double kendall_p = 0, spearman_p = 0;
  int64_t n = 0;
  std::vector<Verdict> verdicts;     // the line's verdicts ("rank": one; "verdicts": one per row; "signs": one
                                     // per indicator)
  std::vector<std::string> names;    // "verdicts", "signs": the row (config) or indicator of each verdict
  std::vector<std::string> reasons;  // why each "not testable here" is ("" for the others; "rank": one)
  std::string text;                  // the line, in Markdown
};

struct Comparison {
  const PaperTable* table = nullptr;
  TextTable cells;                     // ordo / paper
  std::vector<ColumnReading> readings;
  json::Value json;                    // the table's rows, both sides' figures, the readings
};

// One paper table against the runs: its rows are the paper's, and the plan's
// baseline (kept for the marks where the paper's table lacks it); the other
// runs belong to other tables and stay out of this one's Holm families.
Comparison compare(const PaperTable& table, const std::vector<RunResults>& runs, const Plan& plan);

// Pearson's r of a per-run value with a task figure's mean over the runs
// that have a position encoding and both values (for a mean over tasks, the
// same tasks: compared_task_set), with its p-value; NaN below 3 runs.
struct Correlation {
  double r = 0, p = 0;
  int64_t n = 0;
};
Correlation correlate(const std::vector<RunResults>& runs, const std::vector<double>& per_run, const std::string& key,
                      const Plan& plan);

// Every file of the comparison (paper.md, paper.json (each run's figures, and
// the indicators by offset range Figure 5 correlates), figures.md with ordo's
// own tables of every task and indicator, figure5.svg and figure5.json when
// there are task figures to correlate) and the HTML section for index.html.
struct ComparisonFiles {
  std::vector<report::OutputFile> files;
  std::string html;
  std::vector<Comparison> comparisons;  // one per table of configurations or correlations
  std::vector<SectionVerdict> verdicts; // Figure 5's (experiment/figure5.h)
};
ComparisonFiles render_comparisons(const Plan& plan, const std::vector<RunResults>& runs,
                                   const std::vector<PaperTable>& tables);

}  // namespace ordo::experiment
