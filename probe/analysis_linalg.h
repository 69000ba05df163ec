// The linear algebra the analyses of learned positions need, in double, on
// the small matrices they use (a few hundred rows): a thin SVD by one-sided
// Jacobi, a symmetric eigen-decomposition by cyclic Jacobi, numerical rank,
// and the minimum-norm least-squares solution.
#pragma once

#include <vector>

#include "probe/probe_matrix.h"

namespace ordo::probe {

// A = U diag(s) V^T with r = min(m, n): U m x r and V n x r with orthonormal
// columns (for the non-zero singular values), s descending and >= 0.
// One-sided Jacobi (Hestenes 1958): plane rotations of pairs of columns of
// A (of A^T when it has more columns than rows) until every pair is
// orthogonal to within 1e-15 of their norms; the singular values are then
// the column norms. Accurate to a few units in the last place of s_max.
struct Svd {
  Matrix u;
  std::vector<double> s;
  Matrix v;
};
Svd svd(const Matrix& a);
std::vector<double> singular_values(const Matrix& a);

// A = Q diag(values) Q^T for symmetric A (n x n), values descending, the
// eigenvectors in Q's columns. Cyclic Jacobi rotations until the
// off-diagonal mass is below 1e-30 of the total. A non-symmetric input is an
// error (|A_ij - A_ji| above 1e-12 of the largest entry).
struct SymmetricEigen {
  std::vector<double> values;
  Matrix vectors;
};
SymmetricEigen symmetric_eigen(const Matrix& a);

// The numerical rank: the number of singular values above
//     tol = s_max * max(m, n) * eps
// (NumPy's matrix_rank rule). ordo passes eps = 2^-23, single precision's
// machine epsilon, because the matrices analysed are products of float32
// parameters: the model itself cannot tell apart directions below that.
double rank_tolerance(const std::vector<double>& s, int64_t m, int64_t n, double eps);
int64_t numerical_rank(const std::vector<double>& s, int64_t m, int64_t n, double eps);
inline constexpr double kFloat32Epsilon = 1.1920928955078125e-07;  // 2^-23

// The minimum-norm w minimising |X w - y|: V diag(1/s) U^T y over the
// singular values above s_max * max(m, n) * 2^-52 (the others treated as 0,
// as NumPy's lstsq with rcond=None). X is m x n with m = y.size(); w has n
// entries. Underdetermined systems (n > m) get the solution of least norm,
// as scikit-learn's LinearRegression does.
std::vector<double> least_squares(const Matrix& x, const std::vector<double>& y);

// The columns of x (rows: samples) standardised by their mean and population
// standard deviation (a constant column keeps scale 1): z = (x - mean) / scale.
// What the logistic fits (fit_logistic, fit_softmax) train on.
struct Standardised {
  std::vector<double> mean, scale;
  Matrix z;
};
Standardised standardise(const Matrix& x);

// The largest eigenvalue of Z^T Z / n (n the rows of z) by 50 steps of power
// iteration: the curvature bound the logistic fits take their step from.
double gram_largest_eigenvalue(const Matrix& z);

}  // namespace ordo::probe
