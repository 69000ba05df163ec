// Every differentiable op passes the f64 finite-difference gradient check,
// and the suite covers every op that can record a node.
#include <algorithm>
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

TEST_CASE("ordo gradcheck OP runs exactly the cases whose graph holds a named op", "[gradcheck][errors]") {
  std::vector<GradcheckOutcome> all = run_gradcheck_suite();
  auto holds = [](const GradcheckOutcome& o, const std::string& op) {
    return std::find(o.result.ops.begin(), o.result.ops.end(), op) != o.result.ops.end();
  };
  for (const std::vector<std::string>& ops :
       {std::vector<std::string>{"softmax"}, std::vector<std::string>{"matmul", "layernorm"}}) {
    std::vector<std::string> expected;  // the full suite's cases, filtered here
    for (const auto& o : all)
      if (std::any_of(ops.begin(), ops.end(), [&](const std::string& op) { return holds(o, op); }))
        expected.push_back(o.name);
    std::vector<GradcheckOutcome> some = run_gradcheck_suite(ops);
    std::vector<std::string> names;
    for (const auto& o : some) names.push_back(o.name);
    CHECK(names == expected);
    CHECK(!names.empty());
    CHECK(names.size() < all.size());
    CHECK(uncovered_ops(some, ops).empty());
  }
  CHECK_THROWS_WITH(run_gradcheck_suite({"softmax", "no_such_op"}),
                    Catch::Contains("'no_such_op' is not a differentiable op") && Catch::Contains("matmul"));
}
