// Every differentiable op passes the f64 finite-difference gradient check,
// and the suite covers every op that can record a node.
#include <iostream>

#include "autograd/gradcheck_suite.h"
#include "autograd/ops.h"
#include "tests/helpers.h"

using namespace ordo;

TEST_CASE("every gradient-check case passes", "[gradcheck]") {
  std::vector<GradcheckOutcome> outcomes = run_gradcheck_suite();
  REQUIRE(outcomes.size() >= differentiable_ops().size() / 2);
  for (const auto& o : outcomes) {
    INFO(o.name << ": max abs error " << o.result.max_abs_error << ", worst " << o.result.worst);
    CHECK(o.result.ok);
  }
  std::vector<std::string> missing = uncovered_ops(outcomes);
  std::string covered;
  for (const auto& op : differentiable_ops()) covered += " " + op;
  std::cout << "gradcheck covers " << differentiable_ops().size() - missing.size() << " of "
            << differentiable_ops().size() << " differentiable ops:" << covered << "\n";
  INFO("ops with no gradient check: " << missing.size());
  for (const auto& op : missing) INFO("  " << op);
  CHECK(missing.empty());
}

TEST_CASE("the checker catches a wrong backward", "[gradcheck]") {
  // exp with the derivative deliberately halved must fail the check.
  GradcheckFn wrong = [](const std::vector<Var>& v) {
    Tensor y = exp(v[0].value());
    return record_op("exp", y, {v[0]}, [y](const Tensor& gy, const std::vector<bool>&) {
      return std::vector<Tensor>{affine(mul(gy, y), 0.5)};
    });
  };
  GradcheckResult r = gradcheck(wrong, {ordo::test::random_tensor({4}, 1)});
  CHECK_FALSE(r.ok);
  CHECK(r.worst.find("input 0") != std::string::npos);
  // And a NaN gradient fails rather than slipping through the comparison.
  GradcheckFn nan_grad = [](const std::vector<Var>& v) {
    Tensor y = exp(v[0].value());
    return record_op("exp", y, {v[0]}, [](const Tensor& gy, const std::vector<bool>&) {
      return std::vector<Tensor>{Tensor::full(gy.shape(), NAN, gy.dtype())};
    });
  };
  CHECK_FALSE(gradcheck(nan_grad, {ordo::test::random_tensor({2}, 2)}).ok);
}
