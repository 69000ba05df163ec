// Gradient checking: the analytic gradient from backward() against f64
// central finite differences, element by element.
//
// The function's output y (any shape) is reduced to a scalar L = sum(w * y)
// with fixed random weights w, so every output element's gradient path is
// exercised with a different weight. For each input element x_j:
//   numeric_j = (L(x_j + eps) - L(x_j - eps)) / (2 eps)
// and the check passes when |analytic_j - numeric_j| <= atol + rtol |numeric_j|
// for every j. In f64 with eps = 1e-6 the finite-difference error is about
// 1e-10 relative, so the default bounds (rtol 1e-5, atol 1e-7) leave a wide
// margin for rounding while any real mistake in a backward (a missing term, a
// wrong transpose, a wrong scale) is off by orders of magnitude more.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autograd/var.h"

namespace ordo {

struct GradcheckOptions {
  double eps = 1e-6;
  double rtol = 1e-5;
  double atol = 1e-7;
  uint64_t seed = 1234;  // for the projection weights w
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::string worst;                 // "input 1, element 7: analytic 0.31 vs numeric 0.29"
  std::vector<std::string> ops;      // ops of the recorded graph (what was covered)
};

using GradcheckFn = std::function<Var(const std::vector<Var>& inputs)>;

// inputs: f64 CPU tensors (the check makes leaves of them that require grad).
// Inputs listed in `constant` are passed without requiring a gradient and not checked.
GradcheckResult gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {},
                          const std::vector<size_t>& constant = {});

}  // namespace ordo
