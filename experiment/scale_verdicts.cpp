// The scale verdict of a disagreement (experiment/scale_verdicts.h).
#include "experiment/scale_verdicts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "base/error.h"

namespace ordo::experiment {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string number(double v) {
  std::ostringstream s;
  s.precision(3);
  s << v;
  return s.str();
}

// The mean of the values at the smallest compute.
double first_rung_mean(const ScaleEvidence& e) {
  const double first = *std::min_element(e.compute.begin(), e.compute.end());
  double sum = 0, n = 0;
  for (size_t i = 0; i < e.compute.size(); ++i)
    if (e.compute[i] == first) sum += e.value[i], n += 1;
  return sum / n;
}

ScaleJudgement cannot_tell(ScaleJudgement j, const std::string& why) {
  j.verdict = ScaleVerdict::cannot_tell;
  j.reason = why;
  return j;
}

}  // namespace

const char* scale_verdict_name(ScaleVerdict v) {
  switch (v) {
    case ScaleVerdict::closes: return "closes with scale";
    case ScaleVerdict::does_not_close: return "does not close";
    case ScaleVerdict::cannot_tell: return "cannot tell at these rungs";
  }
  return "";
}

ScaleJudgement judge_scale(const ScaleEvidence& e, double alpha) {
  ORDO_CHECK(alpha > 0 && alpha < 1, "a scale verdict's significance level lies in (0, 1), got ", alpha);
  ScaleJudgement j;
  j.trend = log_compute_trend(e.compute, e.value, 1 - alpha);  // refuses unpaired values and bad compute
  j.gap = j.needed_slope = j.reach_log10_compute = kNaN;
  if (e.compute.empty()) return cannot_tell(j, "no points");
  const double x0 = std::log10(*std::min_element(e.compute.begin(), e.compute.end()));
  j.gap = e.paper_value - first_rung_mean(e);
  const bool has_target = !std::isnan(e.target_compute) && e.target_compute != 0;
  if (has_target) {
    ORDO_CHECK(e.target_compute > 0 && std::log10(e.target_compute) > x0, "a scale verdict: the target compute ",
               e.target_compute, " is not beyond the smallest rung's ", std::pow(10.0, x0));
    j.needed_slope = j.gap / (std::log10(e.target_compute) - x0);
  }
  if (std::isnan(j.gap)) return cannot_tell(j, "the paper's value or ordo's is undefined");
  if (j.gap == 0) return cannot_tell(j, "no gap: ordo's smallest rung has the paper's value");
  if (std::isnan(j.trend.slope)) return cannot_tell(j, "a single rung: no trend to fit");
  if (std::isnan(j.trend.p))
    return cannot_tell(j, j.trend.n < 3 ? "fewer than 3 points: no scatter to test the trend over"
                                        : "ordo's values do not vary: the trend's test is undefined");
  // Slopes measured toward the paper's value: positive closes the gap.
  const double toward = j.gap > 0 ? 1 : -1;
  const double slope = toward * j.trend.slope;
  const double best_end = j.gap > 0 ? j.trend.slope_interval.high : -j.trend.slope_interval.low;
  if (slope > 0) j.reach_log10_compute = (e.paper_value - j.trend.intercept) / j.trend.slope;
  const std::string per_decade = number(j.trend.slope) + " per tenfold compute (p = " + number(j.trend.p) + ")";
  if (slope > 0 && j.trend.p < alpha) {
    j.verdict = ScaleVerdict::closes;
    j.reason = "toward the paper's value by " + per_decade + "; the line reaches it at 10^" +
               number(j.reach_log10_compute) + " compute";
    return j;
  }
  const double needed = has_target ? toward * j.needed_slope : 0;
  if (best_end < needed) {
    j.verdict = ScaleVerdict::does_not_close;
    j.reason = has_target ? "the trend, " + per_decade + ", is at best " + number(toward * best_end) +
                                " where closing the gap by the target compute needs " + number(j.needed_slope)
                          : "away from the paper's value by " + per_decade;
    return j;
  }
  return cannot_tell(j, "the trend, " + per_decade + ", allows closing and not closing" +
                            (has_target ? " by the target compute (needs " + number(j.needed_slope) + ")" : ""));
}

}  // namespace ordo::experiment
