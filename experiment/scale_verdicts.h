// Whether a disagreement with a paper closes with scale: the verdict of the
// compute-ladder study (configs/scale_study/), beside the claim verdicts of
// experiment/verdicts.h.
//
// A disagreement is ordo's value of a metric against the paper's. Along a
// ladder of rungs of growing compute (experiment/ladder.h) every (rung,
// pretraining seed) run is a point (compute, value). The trend is the
// least-squares slope of the value against log10(compute) over all points
// (experiment/statistics.h's log_compute_trend: the change per tenfold
// compute) with its two-sided p and (1 - alpha) interval. The gap is the
// paper's value minus the mean of ordo's values at the smallest compute
// (where the disagreement was found); a slope "toward" the paper has the
// gap's sign. Then:
//   closes with scale           the slope is toward the paper's value, p < alpha
//   does not close              even the interval's end most toward the paper
//                               is short of the slope that reaches the paper's
//                               value by the target compute (the paper model's
//                               own; without a target, short of 0: a
//                               significant trend away from the paper)
//   cannot tell at these rungs  otherwise: the rungs allow both a trend that
//                               closes in time and one that does not; or
//                               nothing can be fitted (fewer than 3 points, a
//                               single rung, values that never vary, no gap)
// A significant trend toward the paper closes with scale even where it is too
// slow to reach the paper's value by the target compute: reach_log10_compute
// says where the line would.
#pragma once

#include <string>
#include <vector>

#include "experiment/statistics.h"

namespace ordo::experiment {

enum class ScaleVerdict { closes, does_not_close, cannot_tell };

// "closes with scale", "does not close", "cannot tell at these rungs".
const char* scale_verdict_name(ScaleVerdict v);

// What a disagreement's scale verdict is read from.
struct ScaleEvidence {
  std::vector<double> compute;  // per (rung, seed) point: the rung's compute (experiment/ladder.h's FLOPs)
  std::vector<double> value;    // per point: ordo's value of the metric
  double paper_value = 0;       // the paper's value of the metric
  double target_compute = 0;    // the paper model's compute, in the same unit; NaN or 0: none
};

struct ScaleJudgement {
  ScaleVerdict verdict = ScaleVerdict::cannot_tell;
  std::string reason;               // why, in words (every verdict has one)
  LinearFit trend;                  // the value against log10(compute), at confidence 1 - alpha
  double gap = 0;                   // paper value - ordo's mean at the smallest compute
  double needed_slope = 0;          // the slope that closes the gap by the target compute (NaN: no target)
  double reach_log10_compute = 0;   // where the fitted line meets the paper's value (NaN: it does not, going up)
};

// The verdict of the rule above at significance level alpha. compute and value
// must pair up, and a target must lie beyond the smallest rung (ordo::Error).
ScaleJudgement judge_scale(const ScaleEvidence& e, double alpha);

}  // namespace ordo::experiment
