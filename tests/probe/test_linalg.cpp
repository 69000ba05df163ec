// The linear algebra of the analyses (probe/analysis_linalg.h) against
// hand-worked decompositions and independent computations: the SVD through
// its defining identities (A = U diag(s) V^T, orthonormal factors), its
// singular values against the closed-form eigenvalues of A^T A and against
// power iteration; least squares against the normal equations solved by
// hand; the rank rule against NumPy's matrix_rank formula.
#include <cmath>
#include <vector>

#include "probe/analysis_linalg.h"
#include "tests/helpers.h"

using ordo::Matrix;
namespace probe = ordo::probe;

namespace {

Matrix random_matrix(int64_t m, int64_t n, uint64_t seed) {
  Matrix a(m, n);
  a.data = ordo::test::random_values(m * n, seed);
  return a;
}

// max |U diag(s) V^T - A| and max |Q^T Q - I| of both factors' columns with s_k > 0.
void require_svd_identities(const Matrix& a, const probe::Svd& d, double tol) {
  const int64_t r = static_cast<int64_t>(d.s.size());
  REQUIRE(r == std::min(a.rows, a.cols));
  REQUIRE(d.u.rows == a.rows);
  REQUIRE(d.u.cols == r);
  REQUIRE(d.v.rows == a.cols);
  REQUIRE(d.v.cols == r);
  for (int64_t k = 0; k + 1 < r; ++k) REQUIRE(d.s[k] >= d.s[k + 1]);
  for (double s : d.s) REQUIRE(s >= 0);
  double worst = 0;
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) {
      double x = 0;
      for (int64_t k = 0; k < r; ++k) x += d.u(i, k) * d.s[k] * d.v(j, k);
      worst = std::max(worst, std::fabs(x - a(i, j)));
    }
  INFO("reconstruction error " << worst);
  REQUIRE(worst <= tol);
  auto orthonormal = [&](const Matrix& q, const char* name) {
    double bad = 0;
    for (int64_t p = 0; p < r; ++p)
      for (int64_t t = 0; t < r; ++t) {
        if (d.s[p] <= 1e-12 * d.s[0] || d.s[t] <= 1e-12 * d.s[0]) continue;
        double dot = 0;
        for (int64_t i = 0; i < q.rows; ++i) dot += q(i, p) * q(i, t);
        bad = std::max(bad, std::fabs(dot - (p == t ? 1.0 : 0.0)));
      }
    INFO(name << " columns off orthonormal by " << bad);
    REQUIRE(bad <= tol);
  };
  orthonormal(d.u, "U");
  orthonormal(d.v, "V");
}

}  // namespace

TEST_CASE("svd of hand-worked matrices", "[probe][linalg]") {
  // A = [[3, 0], [4, 5]]: A^T A = [[25, 20], [20, 25]] has eigenvalues 45 and 5,
  // so s = (3 sqrt 5, sqrt 5).
  Matrix a = Matrix::from_rows({{3, 0}, {4, 5}});
  probe::Svd d = probe::svd(a);
  REQUIRE(d.s.size() == 2);
  CHECK(d.s[0] == Approx(3 * std::sqrt(5.0)).epsilon(1e-14));
  CHECK(d.s[1] == Approx(std::sqrt(5.0)).epsilon(1e-14));
  require_svd_identities(a, d, 1e-13);

  // A wide matrix goes through A^T: [[1, 0, 1], [0, 1, 0]] has A A^T = diag(2, 1).
  Matrix w = Matrix::from_rows({{1, 0, 1}, {0, 1, 0}});
  probe::Svd dw = probe::svd(w);
  REQUIRE(dw.s.size() == 2);
  CHECK(dw.s[0] == Approx(std::sqrt(2.0)).epsilon(1e-14));
  CHECK(dw.s[1] == Approx(1.0).epsilon(1e-14));
  require_svd_identities(w, dw, 1e-13);
  // The right singular vector of s = sqrt 2 is (1, 0, 1) / sqrt 2 up to sign.
  CHECK(std::fabs(dw.v(0, 0)) == Approx(1 / std::sqrt(2.0)).epsilon(1e-12));
  CHECK(std::fabs(dw.v(1, 0)) == Approx(0).margin(1e-12));

  // A zero matrix: every singular value 0, no division by zero.
  probe::Svd z = probe::svd(Matrix(3, 2));
  CHECK(z.s == std::vector<double>{0, 0});
}

TEST_CASE("svd of random matrices against independent computations", "[probe][linalg]") {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{7, 5}, {5, 9}, {40, 40}}) {
    Matrix a = random_matrix(m, n, 100 + m * 10 + n);
    probe::Svd d = probe::svd(a);
    require_svd_identities(a, d, 1e-12);
    // Frobenius norm: sum of s^2 equals sum of a_ij^2.
    double fro = 0, ss = 0;
    for (double x : a.data) fro += x * x;
    for (double s : d.s) ss += s * s;
    CHECK(ss == Approx(fro).epsilon(1e-12));
    // The largest singular value by power iteration on A^T A (an independent algorithm).
    std::vector<double> v(static_cast<size_t>(n), 1.0), av(static_cast<size_t>(m));
    double lambda = 0;
    for (int it = 0; it < 5000; ++it) {
      for (int64_t i = 0; i < m; ++i) {
        av[i] = 0;
        for (int64_t j = 0; j < n; ++j) av[i] += a(i, j) * v[j];
      }
      std::vector<double> next(static_cast<size_t>(n), 0.0);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < m; ++i) next[j] += a(i, j) * av[i];
      double norm = 0;
      for (double x : next) norm += x * x;
      norm = std::sqrt(norm);
      lambda = norm;
      for (int64_t j = 0; j < n; ++j) v[j] = next[j] / norm;
    }
    CHECK(d.s[0] == Approx(std::sqrt(lambda)).epsilon(1e-9));
  }
}

TEST_CASE("numerical rank follows NumPy's rule", "[probe][linalg]") {
  // tol = s_max * max(m, n) * eps: 10 * 4 * 2^-23 = 4.77e-6, so 1e-6 is below it and 1e-5 above.
  CHECK(probe::rank_tolerance({10, 1, 1e-6}, 3, 4, probe::kFloat32Epsilon) == Approx(40 * 0x1p-23));
  CHECK(probe::numerical_rank({10, 1, 1e-6}, 3, 4, probe::kFloat32Epsilon) == 2);
  CHECK(probe::numerical_rank({10, 1, 1e-5}, 3, 4, probe::kFloat32Epsilon) == 3);
  CHECK(probe::numerical_rank({0, 0}, 2, 2, probe::kFloat32Epsilon) == 0);
  // A rank-2 matrix u1 v1^T + u2 v2^T (6 x 5): its other singular values are
  // rounding noise, far below the float32 tolerance.
  Matrix u = random_matrix(6, 2, 7), v = random_matrix(5, 2, 8);
  Matrix a = probe::matmul_nt(u, v);
  std::vector<double> s = probe::singular_values(a);
  CHECK(probe::numerical_rank(s, 6, 5, probe::kFloat32Epsilon) == 2);
  CHECK(s[2] < 1e-12 * s[0]);
}

TEST_CASE("symmetric eigen-decomposition", "[probe][linalg]") {
  // [[2, 1], [1, 2]]: eigenvalues 3 and 1, eigenvectors (1, 1)/sqrt 2 and (1, -1)/sqrt 2.
  probe::SymmetricEigen e = probe::symmetric_eigen(Matrix::from_rows({{2, 1}, {1, 2}}));
  CHECK(e.values[0] == Approx(3).epsilon(1e-14));
  CHECK(e.values[1] == Approx(1).epsilon(1e-14));
  CHECK(std::fabs(e.vectors(0, 0)) == Approx(1 / std::sqrt(2.0)).epsilon(1e-13));
  CHECK(e.vectors(0, 0) * e.vectors(1, 0) > 0);
  CHECK(e.vectors(0, 1) * e.vectors(1, 1) < 0);
  // The eigenvalues of A^T A are the squared singular values of A.
  Matrix a = random_matrix(9, 6, 21);
  probe::SymmetricEigen g = probe::symmetric_eigen(probe::matmul(probe::transpose(a), a));
  std::vector<double> s = probe::singular_values(a);
  for (size_t k = 0; k < s.size(); ++k) CHECK(g.values[k] == Approx(s[k] * s[k]).epsilon(1e-11));
  CHECK_THROWS_WITH(probe::symmetric_eigen(Matrix::from_rows({{1, 2}, {3, 4}})),
                    Catch::Contains("differs from A(1,0)"));
  CHECK_THROWS_WITH(probe::symmetric_eigen(Matrix(2, 3)), Catch::Contains("2 x 3"));
}

TEST_CASE("least squares: hand-worked fits and minimum-norm solutions", "[probe][linalg]") {
  // y = a + b x through (0,1), (1,3), (2,2), (3,5): Sxy = 5.5, Sxx = 5, so
  // b = 1.1 and a = mean y - b mean x = 2.75 - 1.65 = 1.1.
  std::vector<double> w = probe::least_squares(Matrix::from_rows({{1, 0}, {1, 1}, {1, 2}, {1, 3}}), {1, 3, 2, 5});
  REQUIRE(w.size() == 2);
  CHECK(w[0] == Approx(1.1).epsilon(1e-13));
  CHECK(w[1] == Approx(1.1).epsilon(1e-13));
  // Underdetermined: the least-norm solution X^T (X X^T)^-1 y. For
  // X = [[1, 0, 1], [0, 1, 0]], y = (2, 3): X X^T = diag(2, 1), so w = X^T (1, 3) = (1, 3, 1).
  w = probe::least_squares(Matrix::from_rows({{1, 0, 1}, {0, 1, 0}}), {2, 3});
  REQUIRE(w.size() == 3);
  CHECK(w[0] == Approx(1).epsilon(1e-13));
  CHECK(w[1] == Approx(3).epsilon(1e-13));
  CHECK(w[2] == Approx(1).epsilon(1e-13));
  // Rank-deficient: two equal columns share the weight equally (least norm).
  w = probe::least_squares(Matrix::from_rows({{1, 1}, {2, 2}, {3, 3}}), {1, 2, 3});
  CHECK(w[0] == Approx(0.5).epsilon(1e-13));
  CHECK(w[1] == Approx(0.5).epsilon(1e-13));
  // A random overdetermined system against its normal equations X^T X w = X^T y.
  Matrix x = random_matrix(12, 4, 31);
  std::vector<double> y = ordo::test::random_values(12, 32);
  w = probe::least_squares(x, y);
  for (int64_t j = 0; j < 4; ++j) {
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < 12; ++i) {
      double xw = 0;
      for (int64_t k = 0; k < 4; ++k) xw += x(i, k) * w[k];
      lhs += x(i, j) * xw;
      rhs += x(i, j) * y[i];
    }
    CHECK(lhs == Approx(rhs).margin(1e-12));
  }
  CHECK_THROWS_WITH(probe::least_squares(Matrix(3, 2), {1, 2}), Catch::Contains("3 rows, 2 targets"));
}
