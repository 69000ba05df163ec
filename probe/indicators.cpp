// The indicators of probe/indicators.h, each beside its equation. Sums run in
// double, in a fixed order, so that the same matrix gives the same bits.
#include "probe/indicators.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/json_numbers.h"

namespace ordo::probe {

namespace {

void require_square(const Matrix& a, const char* what) {
  ORDO_CHECK(a.square(), what, ": the attention matrix must be square, got ", a.rows, " x ", a.cols);
}

// Population variance (divide by the count), two passes. A constant
// sequence gives exactly 0: the two-pass formula would leave a rounding
// residue (the computed mean of L copies of 1/L need not equal 1/L in
// binary), and AIV's ratio of two such residues is meaningless (a uniform
// 5 x 5 matrix gave 0.33 before this check).
double population_variance(const std::vector<double>& v) {
  if (v.empty()) return 0;
  if (std::all_of(v.begin(), v.end(), [&](double x) { return x == v[0]; })) return 0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return ss / static_cast<double>(v.size());
}

}  // namespace

// A probe averages f32 attention, and a row computed by a GEMM's edge tile
// sums in another order than its neighbours: a model without position
// information gives an inner matrix whose entries differ by ~1e-8 relative,
// which AIV's ratio of variances and symmetry's min-max scaling would
// otherwise blow up into structure. (OPR's pair signs use the pair rule, tied.)
double rounding_floor(const Matrix& a) {
  constexpr double kRoundingTolerance = 1e-6;
  double largest = 0;
  for (double x : a.data) largest = std::max(largest, std::fabs(x));
  return kRoundingTolerance * largest;
}

// ---- AIV (Wang et al. 2021, App. B) ----------------------------------------------------

double translation_invariance(const Matrix& a) {
  require_square(a, "translation_invariance");
  const int64_t L = a.rows;
  if (L == 0) return 0;
  const double var_all = population_variance(a.data), floor = rounding_floor(a);
  if (std::sqrt(var_all) <= floor) return 0;  // a constant matrix (to rounding): every tau(r) is constant
  // sum_r var(tau(r)) |tau(r)|, r = j - i from -(L-1) to L-1.
  double weighted = 0, count = 0;
  std::vector<double> group;
  for (int64_t r = -(L - 1); r <= L - 1; ++r) {
    group.clear();
    for (int64_t i = std::max<int64_t>(0, -r); i < L && i + r < L; ++i) group.push_back(a(i, i + r));
    weighted += population_variance(group) * static_cast<double>(group.size());
    count += static_cast<double>(group.size());
  }
  return weighted / count / var_all;  // count = L^2
}

double translation_invariance_no_special(const Matrix& a) {
  require_square(a, "translation_invariance_no_special");
  return translation_invariance(without_special(a));
}

// ---- OPR (Wang et al. 2021, App. B) ----------------------------------------------------

namespace {

// OPR's tie rule (the catalog's): relative to the pair, not to the matrix, so
// that a [CLS] column near 1 does not turn real differences between inner
// entries near 0.005 into ties, as a floor of 1e-6 times the largest entry did.
bool tied(double x, double y) {
  constexpr double kPairTolerance = 1e-5;
  return std::fabs(x - y) <= kPairTolerance * std::max(std::fabs(x), std::fabs(y));
}

}  // namespace

double monotonicity(const Matrix& a, int64_t first_k) {
  require_square(a, "monotonicity");
  const int64_t L = a.rows;
  double weighted = 0, total_length = 0;
  std::vector<double> s;
  // OPR(S) for the sequence in s: the share of ordered pairs (a, b), a != b,
  // with (s_a - s_b)(a - b) > 0; a tied pair never counts.
  auto add_sequence = [&]() {
    const int64_t n = static_cast<int64_t>(s.size());
    if (n < 2) return;
    int64_t increasing = 0;
    for (int64_t x = 0; x < n; ++x)
      for (int64_t y = 0; y < n; ++y)
        if (x != y && !tied(s[x], s[y]) && (s[x] - s[y]) * static_cast<double>(x - y) > 0) ++increasing;
    const double opr = static_cast<double>(increasing) / static_cast<double>(n * n - n);
    weighted += opr * static_cast<double>(n);
    total_length += static_cast<double>(n);
  };
  for (int64_t i = 0; i < L; ++i) {
    // The forward sequence (A_ii, A_i,i+1, ..., A_iL), truncated to offsets 0..k.
    s.clear();
    for (int64_t d = 0; i + d < L && (first_k < 0 || d <= first_k); ++d) s.push_back(a(i, i + d));
    add_sequence();
    // The backward sequence (A_ii, A_i,i-1, ..., A_i1).
    s.clear();
    for (int64_t d = 0; i - d >= 0 && (first_k < 0 || d <= first_k); ++d) s.push_back(a(i, i - d));
    add_sequence();
  }
  return total_length > 0 ? weighted / total_length : 0.0;
}

// ---- SD (Wang et al. 2021, App. B) -------------------------------------------------------

double symmetric_discrepancy(const Matrix& a) {
  require_square(a, "symmetric_discrepancy");
  const int64_t L = a.rows;
  if (L < 2) return 0;
  double sum = 0;
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = i + 1; j < L; ++j) sum += std::fabs(a(i, j) - a(j, i));
  return sum / (static_cast<double>(L) * static_cast<double>(L - 1) / 2.0);
}

// ---- DB_l (Wang et al. 2021, App. B; orientation: EQUATIONS.md) -----------------------

double direction_balance(const Matrix& a, int64_t offset_range) {
  require_square(a, "direction_balance");
  ORDO_CHECK(offset_range >= 1, "direction_balance: the offset range must be >= 1, got ", offset_range);
  const int64_t L = a.rows;
  // Preceding: A_ij with j = i - d; succeeding: A_ij with j = i + d; d = 1..l.
  // Both sums run over (d, then the pair's first index) in one order, so a
  // symmetric matrix gives two bit-identical sums and DB exactly 1.
  double preceding = 0, succeeding = 0;
  for (int64_t d = 1; d <= offset_range && d < L; ++d)
    for (int64_t t = 0; t + d < L; ++t) {
      preceding += a(t + d, t);   // query t+d attends back to key t
      succeeding += a(t, t + d);  // query t attends ahead to key t+d
    }
  if (succeeding == 0) return std::numeric_limits<double>::infinity();
  return preceding / succeeding;
}

std::vector<double> monotonicity_by_range(const Matrix& a) {
  require_square(a, "monotonicity_by_range");
  const int64_t L = a.rows;
  if (L < 2) return {};
  // For range r a sequence of full length m counts with n = min(m, r + 1)
  // elements. weighted[r] and total[r] gather the sequences still growing at
  // r; a sequence that reached its full length m adds its final OPR(S) m to
  // every r >= m - 1, gathered in done_* at r = m - 1 and carried forward.
  std::vector<double> weighted(L, 0.0), total(L, 0.0), done_weighted(L, 0.0), done_total(L, 0.0);
  std::vector<double> s;
  auto add_sequence = [&]() {
    const int64_t m = static_cast<int64_t>(s.size());
    int64_t increasing = 0;  // ordered pairs (x, y), x != y, with (s_x - s_y)(x - y) > 0
    for (int64_t n = 2; n <= m; ++n) {
      // The element at offset n - 1 joins: each earlier y below it (not tied) is an increasing pair both ways round.
      const double last = s[n - 1];
      for (int64_t y = 0; y < n - 1; ++y)
        if (!tied(last, s[y]) && last > s[y]) increasing += 2;
      const double opr = static_cast<double>(increasing) / static_cast<double>(n * n - n);
      if (n < m) {
        weighted[n - 1] += opr * static_cast<double>(n);
        total[n - 1] += static_cast<double>(n);
      } else {
        done_weighted[n - 1] += opr * static_cast<double>(n);
        done_total[n - 1] += static_cast<double>(n);
      }
    }
  };
  for (int64_t i = 0; i < L; ++i) {
    s.clear();
    for (int64_t d = 0; i + d < L; ++d) s.push_back(a(i, i + d));
    add_sequence();
    s.clear();
    for (int64_t d = 0; i - d >= 0; ++d) s.push_back(a(i, i - d));
    add_sequence();
  }
  std::vector<double> out;
  double carried_weighted = 0, carried_total = 0;
  for (int64_t r = 1; r < L; ++r) {
    carried_weighted += done_weighted[r];
    carried_total += done_total[r];
    const double w = weighted[r] + carried_weighted, t = total[r] + carried_total;
    out.push_back(t > 0 ? w / t : 0.0);
  }
  return out;
}

std::vector<double> direction_balance_by_range(const Matrix& a) {
  require_square(a, "direction_balance_by_range");
  const int64_t L = a.rows;
  std::vector<double> out;
  double preceding = 0, succeeding = 0;  // summed in direction_balance's order: d, then the pair's first index
  for (int64_t d = 1; d < L; ++d) {
    for (int64_t t = 0; t + d < L; ++t) {
      preceding += a(t + d, t);
      succeeding += a(t, t + d);
    }
    out.push_back(succeeding == 0 ? std::numeric_limits<double>::infinity() : preceding / succeeding);
  }
  return out;
}

bool uniform_rows(const Matrix& a) {
  if (a.rows == 0 || a.cols == 0) return false;
  for (int64_t i = 0; i < a.rows; ++i) {
    double low = a(i, 0), high = a(i, 0), largest = 0;
    for (int64_t j = 0; j < a.cols; ++j) {
      low = std::min(low, a(i, j));
      high = std::max(high, a(i, j));
      largest = std::max(largest, std::fabs(a(i, j)));
    }
    if (high - low > 1e-5 * largest) return false;
  }
  return true;
}

// ---- Locality (locality/symmetry paper, Eq. 7) ------------------------------------------

double locality(const Matrix& a) {
  require_square(a, "locality");
  const int64_t L = a.rows;
  if (L == 0) return 0;
  double total = 0;
  for (int64_t i = 0; i < L; ++i) {
    double row = 0;
    for (int64_t j = 0; j < L; ++j) row += a(i, j) / std::ldexp(1.0, static_cast<int>(std::llabs(i - j)));
    total += row;
  }
  return total / static_cast<double>(L);
}

// ---- Symmetry (locality/symmetry paper, Eq. 8, in EQUATIONS.md's reading) ---------------------

double symmetry(const Matrix& a) {
  require_square(a, "symmetry");
  const int64_t L = a.rows;
  const double floor = rounding_floor(a);
  double scaled_sum = 0;
  int64_t pairs = 0;
  std::vector<double> e;
  for (int64_t i = 0; i < L; ++i) {
    const int64_t m = std::min(i, L - 1 - i);  // min(i-1, L-i) in 1-based terms
    if (m <= 0) continue;
    e.clear();
    for (int64_t d = 1; d <= m; ++d) e.push_back(std::fabs(a(i, i - d) - a(i, i + d)));
    const double lo = *std::min_element(e.begin(), e.end()), hi = *std::max_element(e.begin(), e.end());
    // Min-max scaling within the row: blind to scale (see the header).
    for (double x : e) scaled_sum += hi - lo > floor ? (x - lo) / (hi - lo) : 0.0;
    pairs += m;
  }
  return pairs > 0 ? 1.0 - scaled_sum / static_cast<double>(pairs) : 1.0;
}

// ---- all of them --------------------------------------------------------------------------

Indicators compute_indicators(const Matrix& a, int64_t first_k, int64_t offset_range) {
  Indicators r;
  r.translation_invariance = translation_invariance(a);
  r.translation_invariance_no_special = translation_invariance_no_special(a);
  r.monotonicity = monotonicity(a, -1);
  r.monotonicity_first_k = monotonicity(a, first_k);
  r.symmetry_sd = symmetric_discrepancy(a);
  r.direction_balance = direction_balance(a, offset_range);
  r.locality = locality(a);
  r.symmetry = symmetry(a);
  return r;
}

json::Value indicators_json(const Indicators& ind) {
  json::Value o = json::Value::object();
  o["translation_invariance"] = json::number(ind.translation_invariance);
  o["translation_invariance_no_special"] = json::number(ind.translation_invariance_no_special);
  o["monotonicity"] = json::number(ind.monotonicity);
  o["monotonicity_first_k"] = json::number(ind.monotonicity_first_k);
  o["symmetry_sd"] = json::number(ind.symmetry_sd);
  o["direction_balance"] = json::number(ind.direction_balance);
  o["locality"] = json::number(ind.locality);
  o["symmetry"] = json::number(ind.symmetry);
  return o;
}

}  // namespace ordo::probe
