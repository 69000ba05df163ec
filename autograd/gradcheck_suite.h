// The gradient-check suite: at least one f64 finite-difference check for
// every differentiable op, with broadcasting and non-contiguous inputs.
//
// It lives in the library (not only in the tests) so that `ordo gradcheck`
// can run it on any machine and print what it covers; the test suite runs the
// same cases and fails on any failure or any op left uncovered.
#pragma once

#include <string>
#include <vector>

#include "autograd/gradcheck.h"

namespace ordo {

struct GradcheckCase {
  std::string name;
  std::vector<Tensor> inputs;   // f64, CPU
  GradcheckFn f;
  std::vector<size_t> constant; // inputs that are not checked (indices, masks)
};

std::vector<GradcheckCase> gradcheck_cases();

struct GradcheckOutcome {
  std::string name;
  GradcheckResult result;
};
// Every case, or with `ops` only the cases whose graph contains one of them
// (an op that is not differentiable is an error listing those that are).
std::vector<GradcheckOutcome> run_gradcheck_suite(const std::vector<std::string>& ops = {});

// The differentiable ops (or only `ops`) that no outcome's graph contains.
std::vector<std::string> uncovered_ops(const std::vector<GradcheckOutcome>& outcomes,
                                       const std::vector<std::string>& ops = {});

}  // namespace ordo
