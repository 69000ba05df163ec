// Is it scale? The compute ladder's report (configs/scale_study/): each
// disagreement with a paper drawn against compute, with its scale verdict
// (experiment/scale_verdicts.h) and which of steps, width and depth moves it.
//
// The disagreements come from the folder's disagreements.tsv
// (experiment/disagreements.h).
//
// Each (rung, pretraining seed) run is a point: the rung's compute and the
// run's value (its figure's mean over fine-tuning seeds). Over every point the
// value's trend against log10 compute gives the verdict; each step up the
// ladder is a move of steps, width or depth (the rung's "moves"), tested by
// Welch's t over the two rungs' pretraining seeds, so that the report says
// which of them carries a change. Written under the report:
//   scale/<id>.svg     the value against compute: every run, each rung's mean
//                      ± standard deviation, the fitted line, the paper's value
//   scale/scale.json   per disagreement: the rungs' values, the trend, the
//                      verdict, the moves
// A check rung (a precision, say) is set against the rung it checks: each run
// config's figures (the disagreements', held-out MLM accuracy and each task's
// score) within or outside the prediction interval of the checked rung's
// pretraining runs, and how likely chance alone puts that many outside.
// With report.pretrained (experiment/plan.h) models pretrained elsewhere and
// probed by ordo probe stand beside the row they name: an indicator's value
// at the layer the plan probes, outside the trend (their compute is not the
// ladder's count).
// With report.english (experiment/plan.h) the runs of another experiment
// folder, the same run configs at the first rung on real English, are set
// beside the first rung: their values, and the change the corpus makes.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "experiment/disagreements.h"
#include "experiment/plan.h"
#include "experiment/results.h"
#include "experiment/scale_verdicts.h"
#include "experiment/tables.h"

namespace ordo::experiment {

// One rung's points for a disagreement.
struct RungValues {
  std::string rung;
  std::vector<std::string> moves;  // what changed from the rung before (the ladder's "moves")
  double flops = 0;                // the rung's training compute
  std::string precision;           // its products' ("fp32", "bf16": train.precision, auto resolved by the device)
  std::vector<double> values;      // one per finished pretraining run
};

// A step up the ladder: the change of the mean from the rung before.
struct Move {
  std::string from, to;
  std::vector<std::string> moves;
  double change = std::numeric_limits<double>::quiet_NaN();  // mean(to) - mean(from); NaN where either has no run
  double p = std::numeric_limits<double>::quiet_NaN();       // Welch's t over the two rungs' runs; NaN below two
                                                              // runs on either side
  bool toward = false; // the change has the sign of the paper's value minus the first rung's mean
  // The same step of every disagreement is one family (correct_moves):
  // p after Holm's correction over it, and how many tests it holds.
  double holm_p = std::numeric_limits<double>::quiet_NaN();
  size_t family = 0;
};

struct ScaleRow {
  Disagreement disagreement;
  std::vector<RungValues> rungs;
  ScaleJudgement judgement;
  std::vector<Move> moves;
  // Where the ladder starts (its smallest rung with runs): the runs against
  // the paper's value by Student's one-sample t over the pretraining runs,
  // and their mean's 1 - alpha interval, so that the report says whether the
  // disagreement stands before it asks whether it closes. NaN below two runs.
  // The disagreements tested there are one family: the reading takes each
  // p after Holm's correction over them (correct_start_tests).
  std::string start;   // the rung ("" where no rung has runs)
  TTest at_start;
  Interval start_mean;
  double start_holm_p = std::numeric_limits<double>::quiet_NaN();
  size_t start_family = 0;  // how many disagreements the correction is over
  // report.english: the same runs at the first rung on real English, and the
  // change from the first rung's (moves: {"corpus"}); empty where none ran.
  std::vector<double> english;
  Move english_move;
  // report.pretrained: each model's value (its layer's probe), NaN where it
  // has none (a gap between two run configs, a task's figure, another row).
  std::vector<double> pretrained;
};

// Holm's correction over the rows' tests at the start of the ladder (the
// rows with a finite at_start.p): sets start_holm_p and start_family.
void correct_start_tests(std::vector<ScaleRow>& rows);
// Holm's correction over the disagreements' tests of each step up the
// ladder, and of the change to real English: sets each Move's holm_p and
// family (a step is read as significant by its holm_p).
void correct_moves(std::vector<ScaleRow>& rows);

// The change from the first rung's values to `english` (Welch over the
// pretraining runs), toward the paper or not.
Move english_change(const ScaleRow& row, const std::vector<double>& english);

// A check rung (experiment/ladder.h: "checks") against the rung it checks:
// one run config's figure, its value at the check against the checked rung's
// pretraining runs and the prediction interval of one more of them,
// mean ± t(1 - alpha/2, n - 1) s sqrt(1 + 1/n).
struct CheckValue {
  std::string run, figure;
  std::vector<double> reference;  // the checked rung's pretraining runs
  double value = 0;               // the check rung's run (NaN: not run yet)
  Interval interval;              // NaN ends below two reference runs
  bool outside = false;
};
CheckValue check_value(const std::string& run, const std::string& figure, std::vector<double> reference,
                       double value, double alpha);
// P(X >= k) for X binomial(n, p): how often chance alone puts k of n values
// outside their 1 - p prediction intervals.
double binomial_upper_tail(int64_t k, int64_t n, double p);

// A pretrained model's value of a disagreement's figure from its probe's
// indicators.json (probe/indicators.h): the figure of `layer`'s with_special
// object where the disagreement is an indicator of the model's row alone, NaN
// otherwise; an error naming the file where it lacks the layer or the figure.
double pretrained_value(const Disagreement& d, const PretrainedModel& model, const json::Value& indicators,
                        int layer, const std::string& file);

// The verdict and the moves of one disagreement from its rungs' values.
ScaleRow judge_disagreement(const Disagreement& d, std::vector<RungValues> rungs, double alpha);

// The report's section: every disagreement of plan.disagreements over the
// finished runs.
ReportSection scale_across_rungs(const Plan& plan, const std::vector<RunResults>& runs);

}  // namespace ordo::experiment
