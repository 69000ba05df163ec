// The scale verdict (experiment/scale_verdicts.h) on hand-made ladders: three
// rungs at 1e14, 1e15 and 1e16 compute (log10 14, 15, 16), two seeds each.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "base/error.h"
#include "experiment/scale_verdicts.h"

using namespace ordo;
using namespace ordo::experiment;

namespace {

const std::vector<double> kCompute = {1e14, 1e14, 1e15, 1e15, 1e16, 1e16};
// Falling by 0.3 per tenfold compute, each rung's seeds 0.02 apart: the line
// y = 0.61 - 0.3 (x - 15) with residuals -/+0.01; Sxx = 4, residual squares
// 6e-4 on 4 degrees of freedom, se = sqrt(1.5e-4 / 4) = 0.0061, t = -49.
const std::vector<double> kFalling = {0.9, 0.92, 0.6, 0.62, 0.3, 0.32};
// Flat: rung means 0.905, 0.9025, 0.905, slope 0, se 0.0027; the 95%
// interval is 0 -/+ 2.776 x 0.0027 = -/+0.0076.
const std::vector<double> kFlat = {0.9, 0.91, 0.905, 0.9, 0.9, 0.91};
// Seeds scattered across the rungs: slope -0.05 per tenfold compute, se 0.21,
// the 95% interval -0.05 -/+ 0.57.
const std::vector<double> kNoisy = {0.9, 0.3, 0.2, 0.8, 0.1, 0.9};

constexpr double kNoTarget = std::numeric_limits<double>::quiet_NaN();

ScaleJudgement judged(const std::vector<double>& value, double paper, double target = kNoTarget,
                     const std::vector<double>& compute = kCompute) {
  return judge_scale({compute, value, paper, target}, 0.05);
}

}  // namespace

TEST_CASE("a significant trend toward the paper's value closes with scale", "[experiment][scale_verdicts]") {
  // Paper 0.1, ordo 0.91 at the smallest rung: gap -0.81, falling is toward.
  const ScaleJudgement j = judged(kFalling, 0.1);
  CHECK(j.verdict == ScaleVerdict::closes);
  CHECK(std::string(scale_verdict_name(j.verdict)) == "closes with scale");
  CHECK(j.gap == Approx(-0.81).epsilon(1e-12));
  CHECK(j.trend.slope == Approx(-0.3).epsilon(1e-12));
  // 0.61 - 0.3 (x - 15) = 0.1 at x = 15 + 0.51 / 0.3 = 16.7.
  CHECK(j.reach_log10_compute == Approx(16.7).epsilon(1e-12));
  CHECK(std::isnan(j.needed_slope));
  // A target at 1e15 needs -0.81 per decade, faster than the trend: a
  // significant trend toward the paper closes with scale all the same.
  CHECK(judged(kFalling, 0.1, 1e15).verdict == ScaleVerdict::closes);
  CHECK(judged(kFalling, 0.1, 1e15).needed_slope == Approx(-0.81).epsilon(1e-12));
}

TEST_CASE("a significant trend away from the paper's value does not close", "[experiment][scale_verdicts]") {
  // Paper 1.5 above ordo's 0.91: falling moves away.
  const ScaleJudgement j = judged(kFalling, 1.5);
  CHECK(j.verdict == ScaleVerdict::does_not_close);
  CHECK(std::string(scale_verdict_name(j.verdict)) == "does not close");
  CHECK(j.gap == Approx(0.59).epsilon(1e-12));
  CHECK(std::isnan(j.reach_log10_compute));
  CHECK(j.reason.find("away from the paper's value") != std::string::npos);
  CHECK(judged(kFalling, 1.5, 1e20).verdict == ScaleVerdict::does_not_close);
}

TEST_CASE("a flat, tight trend does not close by the target compute", "[experiment][scale_verdicts]") {
  // Paper 0.1, ordo 0.905: by 1e19 (5 decades past the first rung) closing
  // needs -0.805 / 5 = -0.161 per decade; the interval's most favourable end
  // is -0.0076.
  const ScaleJudgement j = judged(kFlat, 0.1, 1e19);
  CHECK(j.verdict == ScaleVerdict::does_not_close);
  CHECK(j.needed_slope == Approx(-0.161).epsilon(1e-12));
  CHECK(j.trend.p > 0.05);
  CHECK(j.reason.find("needs -0.161") != std::string::npos);
  // Without a target nothing is excluded but a trend away: it cannot be told.
  CHECK(judged(kFlat, 0.1).verdict == ScaleVerdict::cannot_tell);
  // A gap small enough to close by the target at a slope the interval allows:
  // paper 0.88, gap -0.025, needs -0.005 per decade by 1e19.
  CHECK(judged(kFlat, 0.88, 1e19).verdict == ScaleVerdict::cannot_tell);
}

TEST_CASE("a noisy trend cannot be told at these rungs", "[experiment][scale_verdicts]") {
  const ScaleJudgement j = judged(kNoisy, 0.1, 1e19);
  CHECK(j.verdict == ScaleVerdict::cannot_tell);
  CHECK(std::string(scale_verdict_name(j.verdict)) == "cannot tell at these rungs");
  CHECK(j.trend.p > 0.05);
  CHECK(j.reason.find("allows closing and not closing") != std::string::npos);
  CHECK(judged(kNoisy, 0.1).verdict == ScaleVerdict::cannot_tell);
}

TEST_CASE("nothing to fit cannot be told, and bad evidence is refused", "[experiment][scale_verdicts]") {
  CHECK(judged({0.9, 0.7, 0.8}, 0.1, kNoTarget, {1e15, 1e15, 1e15}).reason.find("a single rung") != std::string::npos);
  CHECK(judged({0.9, 0.7}, 0.1, kNoTarget, {1e14, 1e15}).reason.find("fewer than 3 points") != std::string::npos);
  CHECK(judged({0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, 0.1).reason.find("do not vary") != std::string::npos);
  const std::vector<double> exact_gap = {0.5, 0.75, 0.25, 0.25, 0.0, 0.0};  // first rung's mean 0.625 exactly
  CHECK(judged(exact_gap, 0.625).reason.find("no gap") != std::string::npos);
  for (const ScaleJudgement& j : {judged({0.9, 0.7, 0.8}, 0.1, kNoTarget, {1e15, 1e15, 1e15}),
                                  judged({0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, 0.1), judged(exact_gap, 0.625),
                                  judged(kFalling, std::nan(""))})
    CHECK(j.verdict == ScaleVerdict::cannot_tell);
  CHECK_THROWS_WITH(judged(kFalling, 0.1, 1e13),
                    Catch::Contains("target compute 1e+13 is not beyond the smallest rung"));
  CHECK_THROWS_AS(judged({0.9, 0.8}, 0.1), Error);  // 6 compute values, 2 values
  CHECK_THROWS_WITH(judged(kFalling, 0.1, kNoTarget, {1e14, 1e14, 1e15, -1, 1e16, 1e16}),
                    Catch::Contains("point 4 of 6 has compute -1"));
}
