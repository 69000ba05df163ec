// The indicators of probe/indicators.h against matrices worked by hand and
// against a second, naive implementation written here from the equations
// (Wang et al. 2021 App. B; the locality/symmetry paper Eq. 7-8; EQUATIONS.md's
// readings). The naive versions take another route on purpose: groups in a
// std::map keyed by offset, unordered pairs counted once and doubled,
// pow(0.5, d) instead of ldexp, and so on, so that a shared mistake is unlikely.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "base/json_numbers.h"
#include "probe/indicators.h"
#include "probe/probe.h"
#include "tests/helpers.h"

using namespace ordo;
using ordo::Matrix;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

Matrix rows(std::vector<std::vector<double>> r) { return Matrix::from_rows(r); }

// A_ij = f(|i - j|): a symmetric Toeplitz matrix.
template <typename F>
Matrix toeplitz(int64_t L, F f) {
  Matrix a(L, L);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j) a(i, j) = f(std::llabs(i - j));
  return a;
}

// Random attention: each row a softmax of uniform logits in [-3, 3).
Matrix random_attention(int64_t L, uint64_t seed) {
  std::vector<double> logits = test::random_values(L * L, seed, -3, 3);
  Matrix a(L, L);
  for (int64_t i = 0; i < L; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < L; ++j) sum += a(i, j) = std::exp(logits[static_cast<size_t>(i * L + j)]);
    for (int64_t j = 0; j < L; ++j) a(i, j) /= sum;
  }
  return a;
}

// Entries drawn from {0, 1, 2}: many ties and zeros.
Matrix random_small_integers(int64_t L, uint64_t seed) {
  std::vector<double> u = test::random_values(L * L, seed, 0, 3);
  Matrix a(L, L);
  for (size_t k = 0; k < u.size(); ++k) a.data[k] = std::floor(u[k]);
  return a;
}

// ---- naive implementations, from the equations -----------------------------------------

double naive_variance(const std::vector<double>& v) {
  // E[(x - mean)^2] with the mean from a long-double sum: another route than the code's.
  long double s = 0;
  for (double x : v) s += x;
  const long double mean = s / v.size();
  long double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return static_cast<double>(ss / v.size());
}

// AIV = [sum_r var(tau(r)) |tau(r)| / sum_r |tau(r)|] / var(A).
double naive_aiv(const Matrix& a) {
  if (a.rows == 0) return 0;
  std::map<int64_t, std::vector<double>> tau;
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) tau[j - i].push_back(a(i, j));
  double num = 0, den = 0;
  for (const auto& [r, g] : tau) {
    num += naive_variance(g) * g.size();
    den += g.size();
  }
  const double var = naive_variance(a.data);
  return var == 0 ? 0 : num / den / var;
}

// OPR over all forward/backward sequences, pairs counted unordered and doubled.
double naive_opr(const Matrix& a, int64_t k) {
  const int64_t L = a.rows;
  double num = 0, den = 0;
  for (int64_t i = 0; i < L; ++i)
    for (int dir : {+1, -1}) {
      std::vector<double> s;
      for (int64_t j = i; j >= 0 && j < L; j += dir)
        if (k < 0 || std::llabs(j - i) <= k) s.push_back(a(i, j));
      const double n = static_cast<double>(s.size());
      if (s.size() < 2) continue;
      int64_t up = 0;  // pairs x < y with s_y > s_x: increasing with distance
      for (size_t x = 0; x < s.size(); ++x)
        for (size_t y = x + 1; y < s.size(); ++y) up += s[y] > s[x];
      num += (2.0 * up / (n * n - n)) * n;
      den += n;
    }
  return den > 0 ? num / den : 0;
}

double naive_sd(const Matrix& a) {
  const int64_t L = a.rows;
  if (L < 2) return 0;
  double s = 0;  // every ordered pair, each unordered one seen twice
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j) s += std::fabs(a(i, j) - a(j, i));
  return (s / 2) / (L * (L - 1) / 2.0);
}

double naive_db(const Matrix& a, int64_t l) {
  double lower = 0, upper = 0;
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) {
      if (j < i && i - j <= l) lower += a(i, j);
      if (j > i && j - i <= l) upper += a(i, j);
    }
  return upper == 0 ? kInf : lower / upper;
}

double naive_locality(const Matrix& a) {
  double s = 0;
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) s += a(i, j) * std::pow(0.5, static_cast<double>(std::llabs(i - j)));
  return a.rows ? s / a.rows : 0;
}

double naive_symmetry(const Matrix& a) {
  const int64_t L = a.rows;
  std::vector<double> pooled;
  for (int64_t i = 0; i < L; ++i) {
    std::vector<double> e;
    for (int64_t d = 1; i - d >= 0 && i + d < L; ++d) e.push_back(std::fabs(a(i, i - d) - a(i, i + d)));
    if (e.empty()) continue;
    auto [lo, hi] = std::minmax_element(e.begin(), e.end());
    const double mn = *lo, mx = *hi;
    for (double x : e) pooled.push_back(mx == mn ? 0.0 : (x - mn) / (mx - mn));
  }
  if (pooled.empty()) return 1;
  double s = 0;
  for (double x : pooled) s += x;
  return 1 - s / pooled.size();
}

void require_near(double got, double expected, double tol, const std::string& what) {
  INFO(what << ": got " << got << ", expected " << expected);
  if (std::isinf(expected)) REQUIRE(got == expected);
  else REQUIRE(std::fabs(got - expected) <= tol * (1 + std::fabs(expected)));
}

}  // namespace

TEST_CASE("indicators: a symmetric Toeplitz matrix decreasing with distance", "[probe][indicators]") {
  // A_ij = 2^-|i-j|: every diagonal constant, every row strictly decreasing
  // away from the diagonal, symmetric.
  for (int64_t L : {3, 6, 17}) {
    INFO("L = " << L);
    Matrix a = toeplitz(L, [](int64_t d) { return std::ldexp(1.0, -static_cast<int>(d)); });
    probe::Indicators ind = probe::compute_indicators(a);
    CHECK(ind.translation_invariance == 0);
    CHECK(ind.translation_invariance_no_special == 0);
    CHECK(ind.monotonicity == 0);
    CHECK(ind.monotonicity_first_k == 0);
    CHECK(ind.symmetry_sd == 0);
    CHECK(ind.direction_balance == 1);
    CHECK(ind.symmetry == 1);
  }
  // Locality by hand for L = 3 (A taken as given, not renormalised):
  //   row 1: 1 + 1/4 + 1/16 = 21/16, row 2: 1/4 + 1 + 1/4 = 3/2, row 3: 21/16;
  //   mean = (21/16 + 24/16 + 21/16) / 3 = 66/48 = 11/8.
  Matrix a3 = toeplitz(3, [](int64_t d) { return std::ldexp(1.0, -static_cast<int>(d)); });
  CHECK(probe::locality(a3) == Approx(11.0 / 8).epsilon(1e-15));
}

TEST_CASE("indicators: a causal (lower-triangular) matrix", "[probe][indicators]") {
  // Causal uniform attention, L = 3: row i attends equally to keys 1..i.
  Matrix a = rows({{1, 0, 0}, {0.5, 0.5, 0}, {1.0 / 3, 1.0 / 3, 1.0 / 3}});
  // Nothing ahead of any query: the denominator is 0, DB = +inf (Wang et al.'s GPT row, Table 7).
  CHECK(probe::direction_balance(a, 20) == kInf);
  CHECK(probe::direction_balance(a, 1) == kInf);
  // SD: |0 - 1/2| + |0 - 1/3| + |0 - 1/3| = 7/6 over 3 pairs = 7/18.
  CHECK(probe::symmetric_discrepancy(a) == Approx(7.0 / 18).epsilon(1e-15));
  // Locality: row 1: 1; row 2: 1/4 + 1/2 = 3/4; row 3: (1/4 + 1/2 + 1) / 3 = 7/12; mean 7/9.
  CHECK(probe::locality(a) == Approx(7.0 / 9).epsilon(1e-15));
  // OPR: forward sequences (1,0,0) and (1/2,0) decrease or tie; backward
  // (1/2,1/2) and (1/3,1/3,1/3) are ties: no pair increases.
  CHECK(probe::monotonicity(a) == 0);
  // Symmetry: only row 2 has a pair (m = 1); one difference scales to 0.
  CHECK(probe::symmetry(a) == 1);
  // The transpose (attention only ahead) has DB 0.
  CHECK(probe::direction_balance(probe::transpose(a), 20) == 0);
}

TEST_CASE("indicators: the locality examples of the locality/symmetry paper, §3.1", "[probe][indicators]") {
  // L = 5, the first position's vector (1,0,0,0,0) has locality 1 and
  // (0,0,0,0,1) has 1/16; the matrix value is the mean over rows, so with
  // the other rows zero (a zero row contributes 0) the matrix gives 1/5 and 1/80.
  Matrix first(5, 5), last(5, 5);
  first(0, 0) = 1;
  last(0, 4) = 1;
  CHECK(probe::locality(first) == Approx(1.0 / 5).epsilon(1e-15));
  CHECK(probe::locality(last) == Approx(1.0 / 80).epsilon(1e-15));
  // Every row the paper's perfectly local vector (the identity): 1.
  Matrix id(5, 5);
  for (int i = 0; i < 5; ++i) id(i, i) = 1;
  CHECK(probe::locality(id) == Approx(1.0).epsilon(1e-15));
  // Every row attends to the last position: (1/16 + 1/8 + 1/4 + 1/2 + 1) / 5 = 31/80.
  Matrix to_last(5, 5);
  for (int i = 0; i < 5; ++i) to_last(i, 4) = 1;
  CHECK(probe::locality(to_last) == Approx(31.0 / 80).epsilon(1e-15));
}

TEST_CASE("indicators: a 3 x 3 matrix worked by hand", "[probe][indicators]") {
  Matrix a = rows({{0.1, 0.2, 0.7}, {0.3, 0.3, 0.4}, {0.5, 0.3, 0.2}});
  // AIV. mean = 1/3, E[x^2] = 1.26/9 = 0.14, var(A) = 0.14 - 1/9 = 13/450.
  // tau(0) = (0.1, 0.3, 0.2): var 0.02/3, times 3 = 0.02; tau(1) = (0.2, 0.4):
  // var 0.01, times 2 = 0.02; tau(-1) = (0.3, 0.3): 0; tau(+-2): singletons.
  // AIV = (0.04 / 9) / (13/450) = 2/13.
  CHECK(probe::translation_invariance(a) == Approx(2.0 / 13).epsilon(1e-12));
  // OPR. Sequences (|S| >= 2): row 1 forward (0.1, 0.2, 0.7): every pair
  // increases, OPR 1, |S| 3; row 2 forward (0.3, 0.4): 1, |S| 2; row 2
  // backward (0.3, 0.3): a tie, 0, |S| 2; row 3 backward (0.2, 0.3, 0.5): 1,
  // |S| 3. OPR = (3 + 2 + 0 + 3) / 10 = 0.8.
  CHECK(probe::monotonicity(a) == Approx(0.8).epsilon(1e-15));
  // First k = 1: (0.1,0.2), (0.3,0.4), (0.3,0.3), (0.2,0.3): (2+2+0+2)/8 = 0.75.
  CHECK(probe::monotonicity(a, 1) == Approx(0.75).epsilon(1e-15));
  // First k = 0: every sequence has one element: 0.
  CHECK(probe::monotonicity(a, 0) == 0);
  // SD = (|0.2-0.3| + |0.7-0.5| + |0.4-0.3|) / 3 = 0.4/3.
  CHECK(probe::symmetric_discrepancy(a) == Approx(0.4 / 3).epsilon(1e-12));
  // DB_20 = (0.3 + 0.3 + 0.5) / (0.2 + 0.4 + 0.7) = 11/13; DB_1 = 0.6 / 0.6 = 1.
  CHECK(probe::direction_balance(a, 20) == Approx(11.0 / 13).epsilon(1e-12));
  CHECK(probe::direction_balance(a, 1) == Approx(1.0).epsilon(1e-12));
  // Locality: rows 0.1 + 0.1 + 0.175 = 0.375, 0.15 + 0.3 + 0.2 = 0.65,
  // 0.125 + 0.15 + 0.2 = 0.475; mean 0.5.
  CHECK(probe::locality(a) == Approx(0.5).epsilon(1e-12));
  // Symmetry: only the middle row has a pair: 1.
  CHECK(probe::symmetry(a) == 1);
  // Without the specials a 3 x 3 matrix leaves 1 x 1: constant, AIV 0.
  CHECK(probe::translation_invariance_no_special(a) == 0);
}

TEST_CASE("indicators: symmetry's min-max scaling, worked by hand", "[probe][indicators]") {
  // L = 5: rows 2 and 4 have one pair each (scaled 0), row 3 has two:
  // (0.3, 0.2, 0.4, 0.05, 0.05): e_1 = |0.2 - 0.05| = 0.15, e_2 = |0.3 - 0.05| = 0.25,
  // scaled (0, 1). Pooled: 4 differences summing to 1: symmetry 1 - 1/4 = 0.75.
  Matrix a(5, 5, 0.2);
  a(2, 0) = 0.3, a(2, 1) = 0.2, a(2, 2) = 0.4, a(2, 3) = 0.05, a(2, 4) = 0.05;
  a(1, 0) = 0.9;  // row 2's single pair is very asymmetric: still scaled to 0
  CHECK(probe::symmetry(a) == Approx(0.75).epsilon(1e-15));
  // L = 7 (dyadic values, so that equal differences are equal in binary):
  // row 4 (m = 3) has differences (1/8, 3/8, 1/4) -> (0, 1, 0.5); rows 3
  // and 5 (m = 2) have equal differences (max = min) -> 0; rows 2, 6 one
  // pair each -> 0. 9 differences summing to 1.5: 1 - 1/6.
  Matrix b(7, 7, 0.5);
  b(3, 2) = 0.625, b(3, 4) = 0.5;  // e_1 = 1/8
  b(3, 1) = 0.875, b(3, 5) = 0.5;  // e_2 = 3/8
  b(3, 0) = 0.25, b(3, 6) = 0.5;   // e_3 = 1/4
  b(2, 1) = 0.75, b(2, 3) = 0.5, b(2, 0) = 0.25, b(2, 4) = 0.5;  // e = (1/4, 1/4): a tie
  CHECK(probe::symmetry(b) == Approx(1 - 1.0 / 6).epsilon(1e-14));
  // Scale blindness (documented): multiplying one row's asymmetry by 100 does not change it.
  Matrix c = b;
  for (int64_t j = 0; j < 7; ++j) c(3, j) = 0.5 + 100 * (b(3, j) - 0.5);
  CHECK(probe::symmetry(c) == Approx(probe::symmetry(b)).epsilon(1e-14));
  CHECK(probe::symmetric_discrepancy(c) > probe::symmetric_discrepancy(b));
}

TEST_CASE("indicators: uniform attention and the tie rule", "[probe][indicators]") {
  for (int64_t L : {1, 2, 5, 12}) {
    INFO("L = " << L);
    Matrix a(L, L, 1.0 / static_cast<double>(L));
    probe::Indicators ind = probe::compute_indicators(a);
    CHECK(ind.translation_invariance == 0);  // var(A) = 0: defined as 0
    CHECK(ind.translation_invariance_no_special == 0);
    CHECK(ind.monotonicity == 0);  // ties count as not increasing
    CHECK(ind.monotonicity_first_k == 0);
    CHECK(ind.symmetry_sd == 0);
    if (L == 1) CHECK(ind.direction_balance == kInf);  // 0 / 0
    else CHECK(ind.direction_balance == 1);
    CHECK(ind.symmetry == 1);
    // Locality of uniform rows: (1/L) sum_j 2^-|i-j|, by the geometric series
    // sum_{d=0}^{n-1} 2^-d = 2 - 2^{1-n} on each side of the diagonal.
    double expected = 0;
    for (int64_t i = 0; i < L; ++i) expected += (2 - std::ldexp(1.0, -static_cast<int>(L - i - 1))) +
                                                 (2 - std::ldexp(1.0, -static_cast<int>(i))) - 1;
    expected /= static_cast<double>(L * L);
    CHECK(ind.locality == Approx(expected).epsilon(1e-14));
  }
}

TEST_CASE("indicators: differences at the rounding level are ties, larger ones are structure", "[probe][indicators]") {
  // A uniform 12 x 12 matrix with a fixed, irregular pattern on top: at 1e-8
  // relative (f32 rounding, as a model without positions gives) the
  // scale-free indicators must read it as uniform; at 1e-3 as structure.
  const int64_t L = 12;
  auto perturbed = [&](double relative) {
    Matrix a(L, L);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j)
        a(i, j) = (1.0 + relative * std::sin(static_cast<double>(7 * i + 3 * j * j + 1))) / static_cast<double>(L);
    return a;
  };
  probe::Indicators noise = probe::compute_indicators(perturbed(1e-8));
  CHECK(noise.translation_invariance == 0);
  CHECK(noise.translation_invariance_no_special == 0);
  CHECK(noise.monotonicity == 0);
  CHECK(noise.monotonicity_first_k == 0);
  CHECK(noise.symmetry == 1);
  probe::Indicators real = probe::compute_indicators(perturbed(1e-3));
  CHECK(real.translation_invariance > 0.1);  // sin(7i + 3j^2 + 1) is far from constant along diagonals
  CHECK(real.monotonicity > 0.1);
  CHECK(real.symmetry < 1);
}

TEST_CASE("indicators: edges (L = 1, L = 2, zero rows, zero matrix, not square)", "[probe][indicators]") {
  SECTION("L = 1") {
    Matrix a = rows({{1}});
    probe::Indicators ind = probe::compute_indicators(a);
    CHECK(ind.translation_invariance == 0);
    CHECK(ind.translation_invariance_no_special == 0);
    CHECK(ind.monotonicity == 0);
    CHECK(ind.symmetry_sd == 0);
    CHECK(ind.direction_balance == kInf);
    CHECK(ind.locality == 1);
    CHECK(ind.symmetry == 1);
  }
  SECTION("L = 2") {
    Matrix a = rows({{0.6, 0.4}, {0.3, 0.7}});
    // mean 0.5, deviations (0.1, -0.1, -0.2, 0.2): var 0.025. tau(0) = (0.6, 0.7):
    // var 0.0025, times 2; the off-diagonals are singletons. AIV = (0.005/4)/0.025 = 0.05.
    CHECK(probe::translation_invariance(a) == Approx(0.05).epsilon(1e-12));
    CHECK(probe::translation_invariance_no_special(a) == 0);  // nothing left
    CHECK(probe::monotonicity(a) == 0);                      // (0.6, 0.4), (0.7, 0.3): decreasing
    // (0.4, 0.6) increases, (0.7, 0.3) decreases: (2 * 1 + 2 * 0) / 4.
    CHECK(probe::monotonicity(rows({{0.4, 0.6}, {0.3, 0.7}})) == Approx(0.5).epsilon(1e-15));
    CHECK(probe::symmetric_discrepancy(a) == Approx(0.1).epsilon(1e-12));
    CHECK(probe::direction_balance(a) == Approx(0.75).epsilon(1e-12));
    CHECK(probe::locality(a) == Approx((0.8 + 0.85) / 2).epsilon(1e-12));
    CHECK(probe::symmetry(a) == 1);  // no row has a pair
  }
  SECTION("zero rows") {
    // Row 2 of 3 is zero: its locality is 0; the others as computed by hand.
    Matrix a = rows({{1, 0, 0}, {0, 0, 0}, {0, 0, 1}});
    CHECK(probe::locality(a) == Approx(2.0 / 3).epsilon(1e-15));
    CHECK(probe::direction_balance(a) == kInf);  // 0/0: nothing ahead
    CHECK(probe::symmetry(a) == 1);              // row 2's pair: (0, 0)
    Matrix z(4, 4);
    probe::Indicators ind = probe::compute_indicators(z);
    CHECK(ind.translation_invariance == 0);
    CHECK(ind.monotonicity == 0);
    CHECK(ind.symmetry_sd == 0);
    CHECK(ind.direction_balance == kInf);
    CHECK(ind.locality == 0);
    CHECK(ind.symmetry == 1);
  }
  SECTION("empty") {
    CHECK(probe::translation_invariance(Matrix(0, 0)) == 0);
    CHECK(probe::locality(Matrix(0, 0)) == 0);
  }
  SECTION("not square") {
    Matrix a(2, 3, 0.1);
    CHECK_THROWS_WITH(probe::translation_invariance(a), Catch::Contains("2 x 3"));
    CHECK_THROWS_WITH(probe::monotonicity(a), Catch::Contains("square"));
    CHECK_THROWS_WITH(probe::symmetric_discrepancy(a), Catch::Contains("square"));
    CHECK_THROWS_WITH(probe::direction_balance(a), Catch::Contains("square"));
    CHECK_THROWS_WITH(probe::locality(a), Catch::Contains("square"));
    CHECK_THROWS_WITH(probe::symmetry(a), Catch::Contains("square"));
  }
  SECTION("offset range below 1") {
    CHECK_THROWS_WITH(probe::direction_balance(Matrix(3, 3, 1), 0), Catch::Contains("offset range"));
  }
}

TEST_CASE("indicators: against the naive implementations on random matrices", "[probe][indicators]") {
  uint64_t seed = 1000;
  for (int64_t L : {1, 2, 3, 4, 7, 16, 25, 40}) {
    for (int kind = 0; kind < 2; ++kind) {
      for (int rep = 0; rep < 3; ++rep) {
        ++seed;
        Matrix a = kind == 0 ? random_attention(L, seed) : random_small_integers(L, seed);
        const std::string what = "L = " + std::to_string(L) + (kind ? " integers" : " softmax") + " seed " +
                                 std::to_string(seed);
        require_near(probe::translation_invariance(a), naive_aiv(a), 1e-10, what + " AIV");
        require_near(probe::translation_invariance_no_special(a), naive_aiv(probe::without_special(a)), 1e-10,
                     what + " AIV w/o specials");
        for (int64_t k : {-1, 0, 1, 3, 20})
          require_near(probe::monotonicity(a, k), naive_opr(a, k), 1e-12, what + " OPR k " + std::to_string(k));
        require_near(probe::symmetric_discrepancy(a), naive_sd(a), 1e-12, what + " SD");
        for (int64_t l : {1, 2, 5, 20, 1000})
          require_near(probe::direction_balance(a, l), naive_db(a, l), 1e-12, what + " DB l " + std::to_string(l));
        require_near(probe::locality(a), naive_locality(a), 1e-12, what + " locality");
        require_near(probe::symmetry(a), naive_symmetry(a), 1e-12, what + " symmetry");
      }
    }
  }
}

TEST_CASE("indicators: properties on random matrices", "[probe][indicators]") {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    Matrix a = random_attention(12, seed);
    Matrix t = probe::transpose(a);
    // DB(A^T) = 1 / DB(A): preceding and succeeding swap.
    CHECK(probe::direction_balance(t) == Approx(1 / probe::direction_balance(a)).epsilon(1e-12));
    CHECK(probe::symmetric_discrepancy(t) == Approx(probe::symmetric_discrepancy(a)).epsilon(1e-12));
    // Bounds: AIV >= 0; OPR, locality and symmetry in [0, 1] for softmax rows.
    probe::Indicators ind = probe::compute_indicators(a);
    CHECK(ind.translation_invariance >= 0);
    CHECK((ind.monotonicity >= 0 && ind.monotonicity <= 1));
    CHECK((ind.locality > 0 && ind.locality <= 1));
    CHECK((ind.symmetry >= 0 && ind.symmetry <= 1));
    // A random matrix has no diagonal structure: AIV near 1 (well away from 0),
    // OPR near 0.5.
    CHECK(ind.translation_invariance > 0.5);
    CHECK(std::fabs(ind.monotonicity - 0.5) < 0.2);
    // Scaling A by a constant changes nothing that is a ratio.
    Matrix s = a;
    for (double& x : s.data) x *= 7;
    CHECK(probe::translation_invariance(s) == Approx(ind.translation_invariance).epsilon(1e-12));
    CHECK(probe::monotonicity(s) == ind.monotonicity);
    CHECK(probe::direction_balance(s) == Approx(ind.direction_balance).epsilon(1e-12));
    CHECK(probe::symmetric_discrepancy(s) == Approx(7 * ind.symmetry_sd).epsilon(1e-12));
  }
}

TEST_CASE("indicators: compute_indicators and its JSON", "[probe][indicators]") {
  Matrix a = rows({{0.1, 0.2, 0.7}, {0.3, 0.3, 0.4}, {0.5, 0.3, 0.2}});
  probe::Indicators ind = probe::compute_indicators(a, 1, 1);
  CHECK(ind.monotonicity == Approx(0.8));
  CHECK(ind.monotonicity_first_k == Approx(0.75));
  CHECK(ind.direction_balance == Approx(1.0));
  json::Value j = probe::indicators_json(ind);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"translation_invariance", "translation_invariance_no_special",
                                         "monotonicity", "monotonicity_first_k", "symmetry_sd",
                                         "direction_balance", "locality", "symmetry"});
  CHECK(j["locality"].as_number() == Approx(0.5));

  probe::Indicators causal = probe::compute_indicators(rows({{1, 0}, {0.5, 0.5}}));
  json::Value jc = probe::indicators_json(causal);
  CHECK(jc["direction_balance"].as_string() == "inf");
  CHECK(json::to_number(jc["direction_balance"]) == kInf);
}

TEST_CASE("OPR: ties are relative to the pair, not to the matrix's largest entry", "[probe][indicators]") {
  // The catalog's rule: s_a and s_b tie when |s_a - s_b| <= 1e-5 max(|s_a|, |s_b|).
  SECTION("a [CLS] column near 1 does not swallow differences between inner entries near 0.005") {
    const double lo = 0.005, hi = 0.0050009;  // 9e-7 apart: 1.8e-4 relative, far above 1e-5
    Matrix a = rows({{1.0, lo, hi},    //
                     {1.0, lo, hi},    //
                     {1.0, hi, lo}});
    // The sequences with |S| >= 2 (OPR(S) = increasing ordered pairs / (n^2 - n)):
    //   row 1 forward  (1, lo, hi)   only lo -> hi rises: 2 / 6
    //   row 2 forward  (lo, hi)      rises:               2 / 2
    //   row 2 backward (lo, 1)       rises:               2 / 2
    //   row 3 backward (lo, hi, 1)   every pair rises:    6 / 6
    // OPR = (3 * 1/3 + 2 * 1 + 2 * 1 + 3 * 1) / (3 + 2 + 2 + 3) = 8 / 10.
    // (A tie floor of 1e-6 times the largest entry, 1, would tie lo and hi,
    // leaving 0, 0, 1 and 4/6: OPR (0 + 0 + 2 + 2) / 10 = 0.4.)
    CHECK(probe::monotonicity(a) == Approx(0.8).epsilon(1e-15));
  }
  SECTION("entries within 1e-5 of each other tie even where they are the largest") {
    // 1 and 1.000004 differ by 4e-6 relative: a tie, so nothing rises (a floor
    // of 1e-6 times the largest entry would count both pairs as rising: OPR 1).
    CHECK(probe::monotonicity(rows({{1.0, 1.000004}, {1.000004, 1.0}})) == 0);
  }
}

TEST_CASE("indicators.json's without_special block trims CLS and SEP once, AIV w/o specials included", "[indicators]") {
  // An 8 x 8 map with no structure to hide behind: entry (i, j) = ((7i + 3j) mod 11 + 1) / 100.
  Matrix a(8, 8);
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j) a(i, j) = static_cast<double>((7 * i + 3 * j) % 11 + 1) / 100.0;
  // The words alone, cut out by hand: rows and columns 1..6.
  Matrix words(6, 6);
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 6; ++j) words(i, j) = a(i + 1, j + 1);
  Matrix twice(4, 4);  // what a second trim would leave: rows and columns 2..5
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j) twice(i, j) = a(i + 2, j + 2);
  REQUIRE(std::fabs(naive_aiv(words) - naive_aiv(twice)) > 1e-3);  // the test can tell them apart

  json::Value j = probe::layer_indicators_json(a);
  const json::Value& without = j["without_special"];
  CHECK(without["translation_invariance"].as_number() == Approx(naive_aiv(words)).epsilon(1e-12));
  CHECK(without["translation_invariance_no_special"].as_number() == Approx(naive_aiv(words)).epsilon(1e-12));
  CHECK(j["with_special"]["translation_invariance_no_special"].as_number() == Approx(naive_aiv(words)).epsilon(1e-12));
  CHECK(j["with_special"]["translation_invariance"].as_number() == Approx(naive_aiv(a)).epsilon(1e-12));
}

TEST_CASE("indicators at every range equal the naive single-range equations", "[probe][indicators]") {
  uint64_t seed = 5000;
  for (int64_t L : {1, 2, 3, 9, 24}) {
    for (int kind = 0; kind < 2; ++kind) {
      const Matrix a = kind == 0 ? random_attention(L, ++seed) : random_small_integers(L, ++seed);
      const std::vector<double> opr = probe::monotonicity_by_range(a), db = probe::direction_balance_by_range(a);
      REQUIRE(opr.size() == static_cast<size_t>(std::max<int64_t>(L - 1, 0)));
      REQUIRE(db.size() == opr.size());
      for (int64_t r = 1; r < L; ++r) {
        const std::string what = "L " + std::to_string(L) + " kind " + std::to_string(kind) + " range " + std::to_string(r);
        require_near(opr[static_cast<size_t>(r - 1)], naive_opr(a, r), 1e-12, what + " OPR");
        require_near(db[static_cast<size_t>(r - 1)], naive_db(a, r), 1e-12, what + " DB");
      }
    }
  }
  // By hand, L = 3, rows (0.5 0.3 0.2), (0.2 0.6 0.2), (0.1 0.3 0.6). Range 1: the sequences of two
  // are (0.5, 0.3), (0.6, 0.2), (0.6, 0.2), (0.6, 0.3), all decreasing: OPR 0.
  // DB_1 = (A_10 + A_21) / (A_01 + A_12) = (0.2 + 0.3) / (0.3 + 0.2) = 1.
  const Matrix h = rows({{0.5, 0.3, 0.2}, {0.2, 0.6, 0.2}, {0.1, 0.3, 0.6}});
  CHECK(probe::monotonicity_by_range(h)[0] == 0);
  CHECK(probe::direction_balance_by_range(h)[0] == Approx(1.0));
  // Range 2: row 0 forward (0.5, 0.3, 0.2) decreasing; row 2 backward (0.6, 0.3, 0.1) decreasing: still 0.
  // DB_2 = (0.2 + 0.3 + 0.1) / (0.3 + 0.2 + 0.2) = 0.6 / 0.7.
  CHECK(probe::monotonicity_by_range(h)[1] == 0);
  CHECK(probe::direction_balance_by_range(h)[1] == Approx(0.6 / 0.7));
}

TEST_CASE("uniform rows: within f32 rounding of a constant, not beyond", "[probe][indicators]") {
  const int64_t L = 6;
  Matrix flat(L, L);
  for (double& x : flat.data) x = 1.0 / L;
  CHECK(probe::uniform_rows(flat));
  // A probe's f32 average differs from 1/L in the last bits: still uniform.
  Matrix rounded = flat;
  rounded(2, 3) = static_cast<float>(1.0 / L) * (1 + 3e-7);
  CHECK(probe::uniform_rows(rounded));
  // A real difference of 1e-4 relative is structure.
  Matrix banded = flat;
  banded(2, 3) *= 1 + 1e-4;
  CHECK_FALSE(probe::uniform_rows(banded));
  // Rows at different levels are each uniform (a [CLS] column is another matter: with_special is not).
  Matrix levels = flat;
  for (int64_t j = 0; j < L; ++j) levels(1, j) = 0.5;
  CHECK(probe::uniform_rows(levels));
  CHECK_FALSE(probe::uniform_rows(random_attention(L, 7)));
  CHECK_FALSE(probe::uniform_rows(Matrix()));
}
