// The matrix operations of probing and analysis, and the matrix files.
//
// The indicators (probe/indicators.h), the analyses (probe/analysis_*.h, probe/analyze_run.h) and
// the pictures (plot/plot.h) work on L x L matrices of a few hundred
// rows at most, computed once per run: plain row-major doubles (base/matrix.h),
// no tensors, no devices, so every function can be checked against a
// hand-worked case.
//
// Files:
//   CSV  one matrix row per line, values separated by commas (spaces around
//        them allowed); a trailing empty line is ignored. Written with 9
//        significant digits (%.9g: a float32 value reads back exactly).
//   .npy NumPy's format, versions 1.0, 2.0 and 3.0: a 2-D array of float32
//        ('<f4') or float64 ('<f8'), C or Fortran order. The header is parsed
//        and checked in full (magic, version, length, the dict's keys and
//        values, the data size against the file size) rather than trusted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/matrix.h"

namespace ordo::probe {

// The matrix without its first and last rows and columns (the [CLS] and
// [SEP] of a probing sequence); empty when there are fewer than 3 rows.
Matrix without_special(const Matrix& a);
Matrix transpose(const Matrix& a);
// a * b (a.cols == b.rows).
Matrix matmul(const Matrix& a, const Matrix& b);
// a * b^T (a.cols == b.cols).
Matrix matmul_nt(const Matrix& a, const Matrix& b);

// Reading a matrix that a person hands to `ordo metrics`: CSV (any name) or
// .npy (by the extension, or by the magic bytes). Errors name the file and,
// where one is at fault, the row and column (0-based; CSV errors also give
// the 1-based line). Non-numeric, NaN or infinite entries are errors here;
// shape and sign rules are the caller's (check_attention_matrix).
Matrix read_matrix_file(const std::string& path);
Matrix parse_csv_matrix(const std::string& text, const std::string& origin);
Matrix parse_npy_matrix(const std::string& bytes, const std::string& origin);

// What the indicators ask of an attention matrix: non-empty, square, every
// entry >= 0. Errors name `origin` and the first offending row and column.
void check_attention_matrix(const Matrix& a, const std::string& origin);

// CSV text of the matrix (write it with write_file_atomic).
std::string to_csv(const Matrix& a);
// .npy bytes (version 1.0, '<f8', C order) — what NumPy reads with np.load.
std::string to_npy(const Matrix& a);

}  // namespace ordo::probe
