#include "base/matrix.h"

#include "base/error.h"

namespace ordo {

Matrix::Matrix(int64_t r, int64_t c, double fill) : rows(r), cols(c) {
  ORDO_CHECK(r >= 0 && c >= 0, "Matrix: negative shape ", r, " x ", c);
  data.assign(static_cast<size_t>(r * c), fill);
}

Matrix Matrix::from_rows(const std::vector<std::vector<double>>& rows) {
  Matrix m(static_cast<int64_t>(rows.size()), rows.empty() ? 0 : static_cast<int64_t>(rows[0].size()));
  for (int64_t i = 0; i < m.rows; ++i) {
    ORDO_CHECK(static_cast<int64_t>(rows[i].size()) == m.cols, "Matrix::from_rows: row ", i, " has ",
               rows[i].size(), " values, row 0 has ", m.cols);
    for (int64_t j = 0; j < m.cols; ++j) m(i, j) = rows[i][j];
  }
  return m;
}

}  // namespace ordo
