// A small dense matrix of doubles: the probes' attention maps, the analyses'
// tables and the heatmaps' input. L x L with L a few hundred at most, so it
// is plain row-major storage with no tensors or devices behind it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ordo {

struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> data;  // row-major, rows * cols

  Matrix() = default;
  Matrix(int64_t r, int64_t c, double fill = 0.0);
  // From nested rows, all of one length (an error otherwise).
  static Matrix from_rows(const std::vector<std::vector<double>>& rows);

  double& operator()(int64_t i, int64_t j) { return data[static_cast<size_t>(i * cols + j)]; }
  double operator()(int64_t i, int64_t j) const { return data[static_cast<size_t>(i * cols + j)]; }
  bool square() const { return rows == cols; }
  bool empty() const { return rows == 0 || cols == 0; }
};

}  // namespace ordo
