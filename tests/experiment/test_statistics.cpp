// experiment/statistics.h against SciPy (tests/data/statistics_golden.json,
// written by tests/twin/statistics_twin.py) and against cases worked by hand.
//
// Tolerances, relative to the golden value:
//   1e-12 for the closed forms (mean, std, Welch's t and df, Pearson, Spearman,
//         Kendall): a few dozen roundings of 1.1e-16 on well-conditioned data,
//         summed in another order than numpy's; a wrong formula (n against
//         n - 1, a tie counted on the wrong side) is off by 1e-3 or more.
//   3e-11 for Student's t survival function against its exact value (mpmath,
//         50 digits): the incomplete beta's prefactor exp(lgamma(a + b) -
//         lgamma(a) - lgamma(b) + ...) carries the rounding of lgamma's value,
//         ~3.8e4 at df = 1e4 where an ulp is 7.3e-12, so up to ~1.5e-11 from
//         the two large terms (measured 4.3e-12); the continued fraction stops
//         at 1e-15 per step.
//   1e-10 for the p-values against SciPy, whose t.sf is itself 2.5e-11 off
//         at t = 1e-7, df = 1 (the twin's docstring); the exact permutation
//         p-values are ratios of counts, held to 1e-12 (one count off at
//         n = 10 is 3e-7 of the ratio or more).
// ORDO_GOLDEN_VERBOSE=1 prints the worst relative error of each function.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json.h"
#include "experiment/statistics.h"

using namespace ordo;
using namespace ordo::experiment;

namespace {

constexpr double kClosedForm = 1e-12, kExactPValue = 3e-11, kPValue = 1e-10;

const json::Value& statistics_golden() {
  static const json::Value g = json::parse(read_file(std::string(ORDO_SOURCE_DIR) + "/tests/data/statistics_golden.json"));
  return g;
}

std::vector<double> numbers(const json::Value& a) {
  std::vector<double> out;
  for (const auto& v : a.as_array()) out.push_back(v.as_number());
  return out;
}

// The worst relative error seen per function, printed at exit when verbose.
struct Worst {
  std::map<std::string, double> by_function;
  ~Worst() {
    if (std::getenv("ORDO_GOLDEN_VERBOSE") == nullptr) return;
    for (const auto& [name, error] : by_function) std::printf("statistics vs golden: %-14s worst relative error %.2e\n", name.c_str(), error);
  }
};
Worst worst;

// `got` within `tolerance` of `want` relative to max(|want|, floor) (absolutely
// when both are 0); null in the golden file (SciPy's NaN) wants NaN.
void check_value(const std::string& function, double got, const json::Value& want, double tolerance, double floor = 0) {
  INFO(function << ": got " << std::setprecision(17) << got);
  if (want.is_null()) {
    CHECK(std::isnan(got));
    return;
  }
  const double w = want.as_number();
  INFO("SciPy " << w);
  REQUIRE(std::isfinite(got));
  const double scale = std::max(std::fabs(w), floor);
  const double error = scale == 0 ? std::fabs(got) : std::fabs(got - w) / scale;
  worst.by_function[function] = std::max(worst.by_function[function], error);
  CHECK(error <= tolerance);
}

}  // namespace

TEST_CASE("mean and sample std match numpy", "[experiment][statistics]") {
  for (const auto& c : statistics_golden()["mean_std"].as_array()) {
    const std::vector<double> v = numbers(c["values"]);
    INFO(v.size() << " values from " << v[0]);
    const MeanStd s = mean_std(v);
    CHECK(s.n == static_cast<int64_t>(v.size()));
    check_value("mean", s.mean, c["mean"], kClosedForm);
    // [1e8 + 1, 1e8 + 2, 1e8 + 4] would lose every digit to a one-pass sum of squares.
    check_value("std", s.std, c["std"], kClosedForm);
  }
}

TEST_CASE("Welch's t-test matches scipy.stats.ttest_ind(equal_var=False)", "[experiment][statistics]") {
  const auto& cases = statistics_golden()["welch"].as_array();
  REQUIRE(cases.size() == 9);
  for (const auto& c : cases) {
    INFO(c["name"].as_string());
    const TTest r = welch_t_test(numbers(c["a"]), numbers(c["b"]));
    // t's rounding error is that of the difference of the means, eps |mean| / se
    // whatever t is: "p near 1" (t = 1e-3) cancels 4 digits, so t is measured
    // against max(|t|, 1), where 1e-12 still catches any wrong formula.
    check_value("welch t", r.t, c["t"], kClosedForm, 1);
    check_value("welch df", r.df, c["df"], kClosedForm);
    check_value("welch p", r.p, c["p"], kPValue);
  }
}

// The intervals: t's quantile is found by bisection on the survival function,
// whose 3e-11 relative error moves the quantile by about that much over the
// density's slope: 1e-9 of the interval's half width holds it with room, and a
// wrong quantile (z's 1.96 for t's 2.78 at 4 df) is off by 30% of it.
TEST_CASE("Welch's confidence interval and t's quantile match SciPy", "[experiment][statistics]") {
  for (const auto& c : statistics_golden()["welch"].as_array()) {
    INFO(c["name"].as_string());
    const std::vector<double> a = numbers(c["a"]), b = numbers(c["b"]);
    const TTest t = welch_t_test(a, b);
    check_value("t isf", student_t_isf(0.025, t.df), c["t_isf_025"], 1e-9);
    const Interval ci = welch_interval(a, b, 0.95);
    if (c["ci95"][0].is_null()) {
      CHECK(std::isnan(ci.low));
      continue;
    }
    const double half = 0.5 * (c["ci95"][1].as_number() - c["ci95"][0].as_number());
    check_value("welch ci low", ci.low, c["ci95"][0], 1e-9, half);
    check_value("welch ci high", ci.high, c["ci95"][1], 1e-9, half);
  }
  CHECK(student_t_isf(0.975, 4.0) == Approx(-student_t_isf(0.025, 4.0)));
  CHECK_THROWS_WITH(student_t_isf(0.0, 3.0), Catch::Contains("must lie in (0, 1)"));
}

TEST_CASE("the one-sample t-test and the mean's interval match scipy.stats.ttest_1samp", "[experiment][statistics]") {
  const auto& cases = statistics_golden()["one_sample"].as_array();
  REQUIRE(cases.size() == 4);
  for (const auto& c : cases) {
    INFO(c["name"].as_string());
    const std::vector<double> values = numbers(c["values"]);
    const TTest r = one_sample_t_test(values, c["mu"].as_number());
    check_value("one-sample t", r.t, c["t"], kClosedForm, 1);
    check_value("one-sample df", r.df, c["df"], kClosedForm);
    check_value("one-sample p", r.p, c["p"], kPValue);
    const Interval ci = mean_interval(values, 0.95);
    const double half = 0.5 * (c["ci95"][1].as_number() - c["ci95"][0].as_number());
    check_value("mean ci low", ci.low, c["ci95"][0], 1e-9, half);
    check_value("mean ci high", ci.high, c["ci95"][1], 1e-9, half);
  }
  // Undefined below two values or without spread (SciPy: t = inf, p = 0 for the latter): NaN, as Welch's.
  CHECK(std::isnan(one_sample_t_test({2.0}, 1.0).p));
  CHECK(std::isnan(one_sample_t_test({2.0, 2.0, 2.0}, 1.0).p));
  CHECK(std::isnan(mean_interval({2.0}, 0.95).low));
}

TEST_CASE("Pearson's interval by Fisher's z matches scipy.stats.pearsonr's", "[experiment][statistics]") {
  const auto& cases = statistics_golden()["pearson_interval"].as_array();
  REQUIRE(cases.size() == 6);
  for (const auto& c : cases) {
    INFO(c["name"].as_string());
    const double r = c["r"].is_null() ? std::nan("") : c["r"].as_number();
    for (const auto& [level, key] : {std::pair<double, const char*>{0.95, "ci95"}, {0.8, "ci80"}}) {
      const Interval ci = pearson_interval(r, c["n"].as_int(), level);
      check_value("pearson ci low", ci.low, c[key][0], 1e-12, 1);
      check_value("pearson ci high", ci.high, c[key][1], 1e-12, 1);
    }
  }
  CHECK(std::isnan(pearson_interval(0.5, 3, 0.95).low));
}

// The least-squares line and the trend with log compute: slope and intercept
// are closed forms (1e-12); the standard error is too, SciPy's from
// sqrt((1 - r^2) Syy / Sxx / df) and ordo's from the residuals, which agree to
// a few roundings where r is not within 1e-4 of 1; p is Student's t's (1e-10,
// kPValue); the interval carries the quantile's bisection (1e-9 of its half
// width, as Welch's), at 95% and 80%, so the quantile's level is tested too.
// p is measured against max(p, 1e-9): a perfect fit's (SciPy's 1e-20, ordo's
// 0) is then 1e-11 off; the other cases' p are above 1e-4.
TEST_CASE("the least-squares line and its slope's interval match scipy.stats.linregress", "[experiment][statistics]") {
  const auto& cases = statistics_golden()["linear_fit"].as_array();
  REQUIRE(cases.size() == 8);
  for (const auto& c : cases) {
    INFO(c["name"].as_string());
    const std::vector<double> y = numbers(c["y"]);
    for (const auto& [level, key] : {std::pair<double, const char*>{0.95, "ci95"}, {0.8, "ci80"}}) {
      const LinearFit f = c.contains("compute") ? log_compute_trend(numbers(c["compute"]), y, level)
                                                : linear_fit(numbers(c["x"]), y, level);
      CHECK(f.n == static_cast<int64_t>(y.size()));
      check_value("fit slope", f.slope, c["slope"], kClosedForm, 1e-3);
      check_value("fit intercept", f.intercept, c["intercept"], kClosedForm, 1);
      check_value("fit stderr", f.slope_se, c["stderr"], kClosedForm);
      check_value("fit p", f.p, c["p"], kPValue, 1e-9);
      if (c["stderr"].is_null()) {
        CHECK(std::isnan(f.slope_interval.low));
        CHECK(std::isnan(f.slope_interval.high));
        continue;
      }
      CHECK(f.df == c["df"].as_number());
      const double half = std::max(0.5 * (c[key][1].as_number() - c[key][0].as_number()), 1e-12);
      check_value("fit ci low", f.slope_interval.low, c[key][0], 1e-9, half);
      check_value("fit ci high", f.slope_interval.high, c[key][1], 1e-9, half);
    }
  }
}

TEST_CASE("the least-squares line worked by hand", "[experiment][statistics]") {
  // x = [0, 1, 2], y = [0, 1, 1]: Sxx = 2, Sxy = 1, slope 1/2, intercept
  // 2/3 - 1/2 = 1/6; residuals -1/6, 1/3, -1/6, squares 6/36 = 1/6 on 1
  // degree of freedom, se = sqrt(1/6 / 2) = 1/sqrt(12), t = sqrt(3). On 1
  // degree of freedom (Cauchy) P(T > sqrt 3) = 1/6, p = 1/3, and the 95%
  // quantile is tan(0.475 pi).
  const LinearFit f = linear_fit({0, 1, 2}, {0, 1, 1}, 0.95);
  CHECK(f.slope == Approx(0.5).epsilon(1e-15));
  CHECK(f.intercept == Approx(1.0 / 6).epsilon(1e-15));
  CHECK(f.slope_se == Approx(1 / std::sqrt(12.0)).epsilon(1e-15));
  CHECK(f.t == Approx(std::sqrt(3.0)).epsilon(1e-14));
  CHECK(f.df == 1);
  CHECK(f.p == Approx(1.0 / 3).epsilon(1e-13));
  const double half = std::tan(0.475 * M_PI) / std::sqrt(12.0);
  CHECK(f.slope_interval.low == Approx(0.5 - half).epsilon(1e-10));
  CHECK(f.slope_interval.high == Approx(0.5 + half).epsilon(1e-10));
  // Compute 10, 100, 1000 is log10 compute 1, 2, 3: the same slope per decade.
  const LinearFit trend = log_compute_trend({10, 100, 1000}, {0, 1, 1}, 0.95);
  CHECK(trend.slope == Approx(0.5).epsilon(1e-15));
  CHECK(trend.p == Approx(1.0 / 3).epsilon(1e-13));
  // A sloped line through every point: se 0, p 0, a point interval.
  const LinearFit exact = linear_fit({1, 2, 3}, {3, 1, -1}, 0.95);
  CHECK(exact.slope == -2);
  CHECK(exact.slope_se == 0);
  CHECK(exact.p == 0);
  CHECK(exact.slope_interval.low == -2);
  CHECK(exact.slope_interval.high == -2);
}

TEST_CASE("the least-squares line is NaN where undefined and refuses bad compute", "[experiment][statistics]") {
  const LinearFit one_x = linear_fit({2, 2, 2}, {1, 2, 3}, 0.95);  // no line through one x
  CHECK(std::isnan(one_x.slope));
  CHECK(std::isnan(one_x.p));
  const LinearFit two = linear_fit({1, 2}, {1, 3}, 0.95);  // a line, no residual degree of freedom
  CHECK(two.slope == 2);
  CHECK(two.intercept == -1);
  CHECK(std::isnan(two.slope_se));
  CHECK(std::isnan(two.p));
  CHECK(std::isnan(two.slope_interval.low));
  CHECK(std::isnan(linear_fit({}, {}, 0.95).slope));
  CHECK_THROWS_WITH(linear_fit({1, 2, 3}, {1, 2}, 0.95), Catch::Contains("3 x values and 2 y values"));
  CHECK_THROWS_WITH(log_compute_trend({1e15, 0, 4e15}, {1, 2, 3}, 0.95),
                    Catch::Contains("point 2 of 3 has compute 0") && Catch::Contains("positive and finite"));
  CHECK_THROWS_WITH(linear_fit({1, 2, 3}, {1, 2, 3}, 1.0), Catch::Contains("confidence level"));
}

TEST_CASE("Student's t survival function matches scipy.stats.t.sf", "[experiment][statistics]") {
  const auto& cases = statistics_golden()["t_sf"].as_array();
  REQUIRE(cases.size() == 60);
  for (const auto& c : cases) {
    const double t = c["t"].as_number(), df = c["df"].as_number();
    INFO("t " << t << ", df " << df);
    const double sf = student_t_sf(t, df);
    check_value("t sf", sf, c["sf"], kPValue);
    check_value("t sf (exact)", sf, c["sf_exact"], kExactPValue);
  }
}

TEST_CASE("Pearson, Spearman and Kendall's tau-b match SciPy", "[experiment][statistics]") {
  const auto& cases = statistics_golden()["correlation"].as_array();
  REQUIRE(cases.size() == 9);
  for (const auto& c : cases) {
    INFO(c["name"].as_string());
    const std::vector<double> x = numbers(c["x"]), y = numbers(c["y"]);
    check_value("pearson", experiment::pearson(x, y), c["pearson"], kClosedForm);
    check_value("spearman", experiment::spearman(x, y), c["spearman"], kClosedForm);
    check_value("kendall tau-b", kendall_tau_b(x, y), c["kendall_tau_b"], kClosedForm);
  }
}

TEST_CASE("the correlations' p-values match SciPy: exact permutation up to n = 10, then the approximations",
          "[experiment][statistics]") {
  const auto& cases = statistics_golden()["correlation_tests"].as_array();
  REQUIRE(cases.size() == 13);
  for (const auto& c : cases) {
    INFO(c["name"].as_string());
    const std::vector<double> x = numbers(c["x"]), y = numbers(c["y"]);
    const bool exact = static_cast<int64_t>(x.size()) <= kExactPermutationMaxN;
    const std::pair<const char*, CorrelationTest> tests[] = {
        {"kendall", kendall_test(x, y)}, {"spearman", spearman_test(x, y)}, {"pearson", pearson_test(x, y)}};
    for (const auto& [name, got] : tests) {
      const json::Value& want = c[name];
      INFO(name);
      CHECK(got.n == static_cast<int64_t>(x.size()));
      CHECK(std::string(got.method) == want["method"].as_string());
      check_value(std::string(name) + " value", got.value, want["value"], kClosedForm);
      const bool counted = exact && std::string(name) != "pearson";
      check_value(std::string(name) + (counted ? " p (exact)" : " p"), got.p, want["p"], counted ? kClosedForm : kPValue);
    }
  }
}

TEST_CASE("Holm's correction matches the step-down procedure run at every level", "[experiment][statistics]") {
  const auto& cases = statistics_golden()["holm"].as_array();
  REQUIRE(cases.size() == 6);
  for (const auto& c : cases) {
    std::vector<double> p;
    for (const auto& v : c["p"].as_array()) p.push_back(v.is_null() ? std::nan("") : v.as_number());
    const std::vector<double> adjusted = holm_adjust(p);
    REQUIRE(adjusted.size() == p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      INFO("p-value " << i << " of a family of " << p.size());
      check_value("holm", adjusted[i], c["adjusted"][i], kClosedForm);
    }
  }
}

TEST_CASE("statistics worked by hand", "[experiment][statistics]") {
  // [2, 4, 4, 4, 5, 5, 7, 9]: mean 40 / 8 = 5; squared deviations
  // 9 + 1 + 1 + 1 + 0 + 0 + 4 + 16 = 32, sample variance 32 / 7.
  const MeanStd s = mean_std({2, 4, 4, 4, 5, 5, 7, 9});
  CHECK(s.mean == Approx(5).epsilon(1e-15));
  CHECK(s.std == Approx(std::sqrt(32.0 / 7)).epsilon(1e-15));

  // a = [1, 3], b = [4, 8]: means 2 and 6, sample variances 2 and 8, squared
  // standard errors 2/2 = 1 and 8/2 = 4; t = (2 - 6) / sqrt(5) = -4 / sqrt(5),
  // df = (1 + 4)^2 / (1^2 / 1 + 4^2 / 1) = 25 / 17.
  const TTest two = welch_t_test({1, 3}, {4, 8});
  CHECK(two.t == Approx(-4 / std::sqrt(5.0)).epsilon(1e-15));
  CHECK(two.df == Approx(25.0 / 17).epsilon(1e-15));

  // a = [0, 2], b = [10, 12]: squared standard errors 1 and 1, t = -10 / sqrt(2),
  // df = 4 / (1 + 1) = 2. With 2 degrees of freedom P(T > t) = 1/2 - t / (2 sqrt(2 + t^2)),
  // so p = 1 - |t| / sqrt(2 + t^2) = 1 - sqrt(50 / 52) = 1 - 5 / sqrt(26).
  const TTest df2 = welch_t_test({0, 2}, {10, 12});
  CHECK(df2.t == Approx(-10 / std::sqrt(2.0)).epsilon(1e-15));
  CHECK(df2.df == Approx(2).epsilon(1e-15));
  CHECK(df2.p == Approx(1 - 5 / std::sqrt(26.0)).epsilon(1e-13));

  // With 1 degree of freedom T is Cauchy: P(T > t) = 1/2 - atan(t) / pi, so
  // 1/4 at t = 1 and 1/2 - 1/3 = 1/6 at t = sqrt(3); 1/2 at t = 0 for any df.
  CHECK(student_t_sf(1, 1) == Approx(0.25).epsilon(1e-14));
  CHECK(student_t_sf(std::sqrt(3.0), 1) == Approx(1.0 / 6).epsilon(1e-14));
  CHECK(student_t_sf(-std::sqrt(3.0), 1) == Approx(5.0 / 6).epsilon(1e-14));
  CHECK(student_t_sf(0, 7.5) == 0.5);

  // x = [1, 2, 3], y = [1, 3, 2]: deviations [-1, 0, 1] and [-1, 1, 0],
  // r = 1 / sqrt(2 * 2) = 1/2.
  CHECK(experiment::pearson({1, 2, 3}, {1, 3, 2}) == Approx(0.5).epsilon(1e-15));

  // x = [1, 1, 2], y = [1, 2, 3]. Ranks of x: [1.5, 1.5, 3]; deviations from 2
  // [-0.5, -0.5, 1] against [-1, 0, 1]: rho = 1.5 / sqrt(1.5 * 2) = sqrt(3) / 2.
  CHECK(experiment::spearman({1, 1, 2}, {1, 2, 3}) == Approx(std::sqrt(3.0) / 2).epsilon(1e-15));
  // Pairs (0,1) tied in x only, (0,2) and (1,2) concordant: P = 2, Q = 0,
  // T_x = 1, T_y = 0; tau_b = 2 / sqrt((2 + 1) (2 + 0)) = 2 / sqrt(6).
  CHECK(kendall_tau_b({1, 1, 2}, {1, 2, 3}) == Approx(2 / std::sqrt(6.0)).epsilon(1e-15));
  // Tied in both (pair (0,1)) counts in neither: P = 2, tau_b = 2 / sqrt(2 * 2) = 1.
  CHECK(kendall_tau_b({1, 1, 2}, {5, 5, 6}) == Approx(1).epsilon(1e-15));

  // n = 3 in the same order: of the 3! = 6 arrangements of y only the observed
  // one reaches S = 3 (rank products 14), so P(S >= s) = 1/6 and p = 2/6.
  CHECK(kendall_test({1, 2, 3}, {4, 5, 9}).p == Approx(1.0 / 3).epsilon(1e-15));
  CHECK(spearman_test({1, 2, 3}, {4, 5, 9}).p == Approx(1.0 / 3).epsilon(1e-15));
  // y = (1, 1, 2) against x = (1, 2, 3): 3 distinct arrangements, S = 2, 0, -2;
  // the observed (1, 1, 2) has S = 2: P(S >= 2) = 1/3, p = 2/3.
  CHECK(kendall_test({1, 2, 3}, {1, 1, 2}).p == Approx(2.0 / 3).epsilon(1e-15));
  // Two pairs: r = -1 and SciPy's p = 1 (no degrees of freedom left).
  const CorrelationTest two_pairs = pearson_test({1, 2}, {5, 3});
  CHECK(two_pairs.value == -1);
  CHECK(two_pairs.p == 1);
  // r = 1/2 over 3 pairs: t = 0.5 sqrt(1 / 0.75) = 1/sqrt(3) on 1 degree of
  // freedom (Cauchy): P(T > 1/sqrt(3)) = 1/2 - atan(1/sqrt(3)) / pi = 1/2 - 1/6, p = 2/3.
  CHECK(pearson_test({1, 2, 3}, {1, 3, 2}).p == Approx(2.0 / 3).epsilon(1e-13));

  // Holm on (0.01, 0.04, 0.03, 0.005): sorted 0.005, 0.01, 0.03, 0.04 times
  // 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04; the running maximum lifts 0.04 to 0.06.
  const std::vector<double> holm = holm_adjust({0.01, 0.04, 0.03, 0.005});
  const std::vector<double> want = {0.03, 0.06, 0.06, 0.02};
  for (size_t i = 0; i < want.size(); ++i) CHECK(holm[i] == Approx(want[i]).epsilon(1e-15));
}

TEST_CASE("statistics are NaN where undefined and refuse unpaired values", "[experiment][statistics]") {
  const MeanStd none = mean_std({});
  CHECK(none.n == 0);
  CHECK(std::isnan(none.mean));
  CHECK(std::isnan(none.std));
  const MeanStd one = mean_std({3});
  CHECK(one.n == 1);
  CHECK(one.mean == 3);
  CHECK(std::isnan(one.std));

  for (const TTest& r : {welch_t_test({1}, {2, 3}), welch_t_test({1, 2}, {}), welch_t_test({4, 4}, {5, 5, 5})}) {
    CHECK(std::isnan(r.t));
    CHECK(std::isnan(r.df));
    CHECK(std::isnan(r.p));
  }

  CHECK(std::isnan(student_t_sf(std::nan(""), 3)));
  CHECK_THROWS_AS(student_t_sf(1, 0), Error);

  CHECK(std::isnan(experiment::pearson({}, {})));
  CHECK(std::isnan(experiment::pearson({1}, {2})));
  CHECK(std::isnan(experiment::pearson({1, 1, 1}, {1, 2, 3})));
  CHECK(std::isnan(experiment::spearman({1, 2}, {7, 7})));
  CHECK(std::isnan(kendall_tau_b({1}, {2})));
  CHECK(std::isnan(kendall_tau_b({1, 2, 3}, {4, 4, 4})));

  CHECK_THROWS_AS(experiment::pearson({1, 2, 3}, {1, 2}), Error);
  CHECK_THROWS_AS(experiment::spearman({1, 2}, {1, 2, 3}), Error);
  CHECK_THROWS_WITH(kendall_tau_b({1, 2, 3}, {1}), Catch::Contains("3 x values and 1 y values"));

  for (const CorrelationTest& c : {kendall_test({1, 2, 3}, {4, 4, 4}), spearman_test({1}, {2}),
                                   pearson_test({1, 1, 1}, {1, 2, 3}), kendall_test({}, {})}) {
    CHECK(std::isnan(c.value));
    CHECK(std::isnan(c.p));
  }
  CHECK_THROWS_WITH(kendall_test({1, 2, 3}, {1}), Catch::Contains("3 x values and 1 y values"));
  CHECK(holm_adjust({}).empty());
  CHECK_THROWS_WITH(holm_adjust({0.2, 1.5}), Catch::Contains("p-value 2 of 2 is 1.5, outside [0, 1]"));
}
