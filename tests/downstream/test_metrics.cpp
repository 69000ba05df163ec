// The GLUE metrics on cases worked by hand (the arithmetic is in the comments).
// tests/downstream/test_downstream_golden.cpp compares them with scikit-learn
// and SciPy on more cases.
#include <catch2/catch.hpp>

#include <cmath>

#include "base/error.h"
#include "downstream/metrics.h"

using namespace ordo::downstream;
using Catch::Matchers::Contains;

TEST_CASE("accuracy and binary F1 by hand", "[downstream][metrics]") {
  // gold 0 1 1 0 1 0, predicted 0 1 0 0 1 1: 4 of 6 right; tp 2, fp 1, fn 1 -> F1 4/6.
  const std::vector<int> gold{0, 1, 1, 0, 1, 0}, pred{0, 1, 0, 0, 1, 1};
  CHECK(accuracy(gold, pred) == Approx(4.0 / 6).epsilon(1e-15));
  CHECK(binary_f1(gold, pred) == Approx(4.0 / 6).epsilon(1e-15));
  // F1 counts class 1 only: the same predictions scored for class 0 (tp 2, fp 1, fn 1).
  CHECK(binary_f1(gold, pred, 0) == Approx(4.0 / 6).epsilon(1e-15));
  // No positive in gold or prediction: sklearn's zero_division gives 0.
  CHECK(binary_f1({0, 0, 0}, {0, 0, 0}) == 0.0);
  CHECK_THROWS_WITH(accuracy({0, 1}, {0}), Contains("2 gold values against 1 predictions"));
  CHECK_THROWS_WITH(accuracy({}, {}), Contains("at least 1"));
}

TEST_CASE("answer change rate: 0 for a model that never changes its answer, 1 for one that always does",
          "[downstream][metrics]") {
  const std::vector<int> original{1, 0, 0, 1, 1};
  // Never changes: the same answers under the swap, whatever they are (right or wrong).
  CHECK(answer_change_rate(original, original) == 0.0);
  // Always changes: every answer flipped.
  CHECK(answer_change_rate(original, {0, 1, 1, 0, 0}) == 1.0);
  // Pairs 2 and 5 change: 2 of 5.
  CHECK(answer_change_rate(original, {1, 1, 0, 1, 0}) == Approx(0.4).epsilon(1e-15));
  CHECK_THROWS_WITH(answer_change_rate({0, 1}, {0}), Contains("paired one to one"));
  CHECK_THROWS_WITH(answer_change_rate({}, {}), Contains("at least one pair"));
}

TEST_CASE("Matthews correlation by hand, 0 when a side is constant", "[downstream][metrics]") {
  // gold 0 1 1 0 1 0, predicted 0 1 0 0 1 1: tp 2, tn 2, fp 1, fn 1
  // MCC = (tp tn - fp fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)) = (4 - 1) / sqrt(3*3*3*3) = 1/3.
  CHECK(matthews({0, 1, 1, 0, 1, 0}, {0, 1, 0, 0, 1, 1}) == Approx(1.0 / 3).epsilon(1e-15));
  // A constant prediction: (s^2 - p.p) = 25 - 25 = 0 -> sklearn returns 0 (not NaN).
  CHECK(matthews({0, 1, 1, 0, 1}, {1, 1, 1, 1, 1}) == 0.0);
  CHECK(matthews({1, 1, 1, 1}, {1, 0, 1, 1}) == 0.0);  // constant gold
  CHECK(matthews({0, 1, 0, 1}, {0, 1, 0, 1}) == 1.0);
  CHECK(matthews({0, 1, 0, 1}, {1, 0, 1, 0}) == -1.0);
}

TEST_CASE("Pearson and Spearman by hand, ties given average ranks", "[downstream][metrics]") {
  // x 1..5, y 2 1 4 3 5: deviations -2 -1 0 1 2 and -1 -2 1 0 2; sum of products 8, norms sqrt(10) each: r = 0.8.
  CHECK(pearson({1, 2, 3, 4, 5}, {2, 1, 4, 3, 5}) == Approx(0.8).epsilon(1e-14));
  // Ranks with ties: 10, 20, 20, 30 -> 1, 2.5, 2.5, 4.
  CHECK(average_ranks({10, 20, 20, 30}) == std::vector<double>{1, 2.5, 2.5, 4});
  CHECK(average_ranks({3, 1, 2, 1, 3, 3}) == std::vector<double>{5, 1.5, 3, 1.5, 5, 5});
  // Spearman of x = 1 2 2 3 against y = 1 3 2 4: ranks 1 2.5 2.5 4 and 1 3 2 4.
  // Deviations from 2.5: -1.5 0 0 1.5 and -1.5 .5 -.5 1.5: products 2.25 + 0 + 0 + 2.25 = 4.5;
  // norms sqrt(4.5) and sqrt(5): rho = 4.5 / sqrt(22.5) = 0.948683298...
  CHECK(spearman({1, 2, 2, 3}, {1, 3, 2, 4}) == Approx(4.5 / std::sqrt(22.5)).epsilon(1e-14));
  // Two points: exactly -1, as SciPy promises.
  CHECK(pearson({1, 2}, {5, 3}) == -1.0);
  // A constant input has no correlation: NaN (SciPy's ConstantInputWarning).
  CHECK(std::isnan(pearson({1, 1, 1}, {1, 2, 3})));
  CHECK(std::isnan(spearman({1, 2, 3}, {4, 4, 4})));
  CHECK_THROWS_WITH(pearson({1}, {1}), Contains("at least 2"));
}
