// libFuzzer target for the matrix `ordo metrics` reads (probe::read_matrix_file:
// CSV, or .npy by its magic bytes), then the attention-matrix check. Every
// matrix accepted must be finite and rectangular.
#include <cmath>
#include <cstdlib>

#include "base/error.h"
#include "fuzz/fuzz_common.h"
#include "probe/probe_matrix.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ordo;
  const std::string& path = fuzz::scratch_file(data, size, "matrix");
  try {
    Matrix m = probe::read_matrix_file(path);
    if (m.data.size() != static_cast<size_t>(m.rows * m.cols)) std::abort();
    for (double x : m.data)
      if (!std::isfinite(x)) std::abort();
    probe::check_attention_matrix(m, path);
  } catch (const Error&) {
  }
  return 0;
}
