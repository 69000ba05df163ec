#include "probe/analysis_linalg.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ordo::probe {

namespace {

// One-sided Jacobi on the columns of a (m x n, m >= n, column-major in cols).
// On return cols holds U diag(s) and v the accumulated rotations.
void hestenes(std::vector<std::vector<double>>& cols, std::vector<std::vector<double>>& v) {
  const size_t n = cols.size();
  const size_t m = n ? cols[0].size() : 0;
  v.assign(n, std::vector<double>(n, 0.0));
  for (size_t j = 0; j < n; ++j) v[j][j] = 1.0;
  for (int sweep = 0; sweep < 80; ++sweep) {
    bool rotated = false;
    for (size_t p = 0; p + 1 < n; ++p)
      for (size_t q = p + 1; q < n; ++q) {
        double alpha = 0, beta = 0, gamma = 0;
        const std::vector<double>&cp = cols[p], &cq = cols[q];
        for (size_t i = 0; i < m; ++i) {
          alpha += cp[i] * cp[i];
          beta += cq[i] * cq[i];
          gamma += cp[i] * cq[i];
        }
        if (gamma == 0 || std::fabs(gamma) <= 1e-15 * std::sqrt(alpha * beta)) continue;
        rotated = true;
        // The rotation that makes columns p and q orthogonal (Golub & Van Loan, 8.6.3).
        const double zeta = (beta - alpha) / (2 * gamma);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::fabs(zeta) + std::sqrt(1 + zeta * zeta));
        const double c = 1 / std::sqrt(1 + t * t), s = c * t;
        for (size_t i = 0; i < m; ++i) {
          const double x = cols[p][i], y = cols[q][i];
          cols[p][i] = c * x - s * y;
          cols[q][i] = s * x + c * y;
        }
        for (size_t i = 0; i < n; ++i) {
          const double x = v[p][i], y = v[q][i];
          v[p][i] = c * x - s * y;
          v[q][i] = s * x + c * y;
        }
      }
    if (!rotated) break;
  }
}

}  // namespace

Svd svd(const Matrix& a) {
  const bool wide = a.cols > a.rows;
  const Matrix& b = a;  // work on a (m >= n) or on a^T
  const int64_t m = wide ? b.cols : b.rows, n = wide ? b.rows : b.cols;
  std::vector<std::vector<double>> cols(static_cast<size_t>(n), std::vector<double>(static_cast<size_t>(m)));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) cols[j][i] = wide ? b(j, i) : b(i, j);
  std::vector<std::vector<double>> v;
  hestenes(cols, v);
  std::vector<double> norms(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    double s = 0;
    for (double x : cols[j]) s += x * x;
    norms[j] = std::sqrt(s);
  }
  std::vector<size_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return norms[x] > norms[y]; });
  Svd r;
  Matrix left(m, n), right(n, n);
  r.s.resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const size_t j = order[k];
    r.s[k] = norms[j];
    for (int64_t i = 0; i < m; ++i) left(i, k) = norms[j] > 0 ? cols[j][i] / norms[j] : 0.0;
    for (int64_t i = 0; i < n; ++i) right(i, k) = v[j][i];
  }
  // For a wide a we decomposed a^T = left diag(s) right^T, so a = right diag(s) left^T.
  r.u = wide ? right : left;
  r.v = wide ? left : right;
  return r;
}

std::vector<double> singular_values(const Matrix& a) { return svd(a).s; }

SymmetricEigen symmetric_eigen(const Matrix& a_in) {
  ORDO_CHECK(a_in.square(), "symmetric_eigen: the matrix is ", a_in.rows, " x ", a_in.cols);
  const int64_t n = a_in.rows;
  double largest = 0;
  for (double x : a_in.data) largest = std::max(largest, std::fabs(x));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j)
      ORDO_CHECK(std::fabs(a_in(i, j) - a_in(j, i)) <= 1e-12 * largest, "symmetric_eigen: A(", i, ",", j,
                 ") differs from A(", j, ",", i, ")");
  Matrix a = a_in, q(n, n);
  for (int64_t i = 0; i < n; ++i) q(i, i) = 1;
  double total = 0;
  for (double x : a.data) total += x * x;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        if (i != j) off += a(i, j) * a(i, j);
    if (off <= 1e-30 * total || off == 0) break;
    for (int64_t p = 0; p + 1 < n; ++p)
      for (int64_t r = p + 1; r < n; ++r) {
        if (a(p, r) == 0) continue;
        // The rotation annihilating a(p, r) (Golub & Van Loan, 8.5.2).
        const double theta = (a(r, r) - a(p, p)) / (2 * a(p, r));
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(1 + theta * theta));
        const double c = 1 / std::sqrt(1 + t * t), s = t * c;
        for (int64_t k = 0; k < n; ++k) {  // columns p, r
          const double x = a(k, p), y = a(k, r);
          a(k, p) = c * x - s * y;
          a(k, r) = s * x + c * y;
        }
        for (int64_t k = 0; k < n; ++k) {  // rows p, r
          const double x = a(p, k), y = a(r, k);
          a(p, k) = c * x - s * y;
          a(r, k) = s * x + c * y;
        }
        for (int64_t k = 0; k < n; ++k) {
          const double x = q(k, p), y = q(k, r);
          q(k, p) = c * x - s * y;
          q(k, r) = s * x + c * y;
        }
      }
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return a(x, x) > a(y, y); });
  SymmetricEigen e;
  e.vectors = Matrix(n, n);
  for (int64_t k = 0; k < n; ++k) {
    e.values.push_back(a(order[k], order[k]));
    for (int64_t i = 0; i < n; ++i) e.vectors(i, k) = q(i, order[k]);
  }
  return e;
}

double rank_tolerance(const std::vector<double>& s, int64_t m, int64_t n, double eps) {
  const double smax = s.empty() ? 0.0 : *std::max_element(s.begin(), s.end());
  return smax * static_cast<double>(std::max(m, n)) * eps;
}

int64_t numerical_rank(const std::vector<double>& s, int64_t m, int64_t n, double eps) {
  const double tol = rank_tolerance(s, m, n, eps);
  int64_t r = 0;
  for (double x : s) r += x > tol ? 1 : 0;
  return r;
}

std::vector<double> least_squares(const Matrix& x, const std::vector<double>& y) {
  ORDO_CHECK(static_cast<int64_t>(y.size()) == x.rows, "least_squares: ", x.rows, " rows, ", y.size(), " targets");
  Svd d = svd(x);
  const double tol = rank_tolerance(d.s, x.rows, x.cols, 0x1p-52);
  std::vector<double> w(static_cast<size_t>(x.cols), 0.0);
  for (size_t k = 0; k < d.s.size(); ++k) {
    if (!(d.s[k] > tol)) continue;
    double uty = 0;
    for (int64_t i = 0; i < x.rows; ++i) uty += d.u(i, static_cast<int64_t>(k)) * y[i];
    const double coef = uty / d.s[k];
    for (int64_t j = 0; j < x.cols; ++j) w[j] += coef * d.v(j, static_cast<int64_t>(k));
  }
  return w;
}

Standardised standardise(const Matrix& x) {
  const int64_t n = x.rows, d = x.cols;
  Standardised out;
  out.mean.assign(static_cast<size_t>(d), 0.0);
  out.scale.assign(static_cast<size_t>(d), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < d; ++k) out.mean[static_cast<size_t>(k)] += x(i, k);
  for (double& v : out.mean) v /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < d; ++k) {
      const double c = x(i, k) - out.mean[static_cast<size_t>(k)];
      out.scale[static_cast<size_t>(k)] += c * c;
    }
  for (double& v : out.scale) v = v > 0 ? std::sqrt(v / static_cast<double>(n)) : 1.0;
  out.z = Matrix(n, d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < d; ++k)
      out.z(i, k) = (x(i, k) - out.mean[static_cast<size_t>(k)]) / out.scale[static_cast<size_t>(k)];
  return out;
}

double gram_largest_eigenvalue(const Matrix& z) {
  const int64_t n = z.rows, d = z.cols;
  std::vector<double> v(static_cast<size_t>(d), 1.0 / std::sqrt(static_cast<double>(d))), zv(static_cast<size_t>(n)),
      next(static_cast<size_t>(d));
  double lmax = 0;
  for (int it = 0; it < 50; ++it) {
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int64_t k = 0; k < d; ++k) s += z(i, k) * v[static_cast<size_t>(k)];
      zv[static_cast<size_t>(i)] = s;
    }
    std::fill(next.begin(), next.end(), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < d; ++k) next[static_cast<size_t>(k)] += z(i, k) * zv[static_cast<size_t>(i)] / static_cast<double>(n);
    double norm = 0;
    for (double e : next) norm += e * e;
    norm = std::sqrt(norm);
    if (norm == 0) break;
    lmax = norm;
    for (int64_t k = 0; k < d; ++k) v[static_cast<size_t>(k)] = next[static_cast<size_t>(k)] / norm;
  }
  return lmax;
}

}  // namespace ordo::probe
