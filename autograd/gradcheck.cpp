#include "autograd/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "autograd/ops.h"

namespace ordo {

namespace {

// L = sum(w * y) evaluated on plain values (no graph): the scalar whose
// finite differences are compared.
double projected(const GradcheckFn& f, const std::vector<Var>& inputs, const Tensor& w) {
  NoGradGuard no_grad;
  Var y = f(inputs);
  return sum(mul(y.value(), w)).item();
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options, const std::vector<size_t>& constant) {
  GradcheckResult result;
  std::vector<Var> leaves;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    bool is_constant = std::find(constant.begin(), constant.end(), i) != constant.end();
    ORDO_CHECK(is_constant || (t.dtype() == DType::f64 && t.device().is_cpu()),
               "gradcheck: input ", i, " must be an f64 CPU tensor, got ", dtype_name(t.dtype()),
               " on ", t.device().str());
    // A private copy, so perturbing it never touches the caller's tensor.
    leaves.emplace_back(t.clone(), !is_constant);
  }

  // Analytic gradients.
  Var y = f(leaves);
  ORDO_CHECK(y.requires_grad(), "gradcheck: the output does not depend on any checked input");
  Tensor w = Tensor::empty(y.shape(), DType::f64);
  uniform_(w, -1.0, 1.0, options.seed, 0);
  result.ops = graph_ops(y);
  y.backward(w);

  // Numeric gradients, one element at a time.
  double worst_violation = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].requires_grad()) continue;
    Tensor x = leaves[i].value();  // contiguous clone: element j is at data + j
    Tensor analytic = leaves[i].grad().defined() ? leaves[i].grad().contiguous()
                                                 : Tensor::zeros(x.shape(), DType::f64);
    const double* a = analytic.data<double>();
    double* xs = x.data<double>();
    for (int64_t j = 0; j < x.numel(); ++j) {
      const double original = xs[j];
      xs[j] = original + options.eps;
      double plus = projected(f, leaves, w);
      xs[j] = original - options.eps;
      double minus = projected(f, leaves, w);
      xs[j] = original;
      double numeric = (plus - minus) / (2 * options.eps);
      // How far past its allowance this element is (ok while <= 1).
      double abs_error = std::fabs(a[j] - numeric);
      double violation = abs_error / (options.atol + options.rtol * std::fabs(numeric));
      if (std::isnan(violation)) violation = INFINITY;  // a NaN anywhere fails the check
      if (violation > worst_violation) {
        worst_violation = violation;
        std::ostringstream where;
        where << "input " << i << ", element " << j << ": analytic " << a[j] << " vs numeric " << numeric;
        result.worst = where.str();
      }
      result.max_abs_error = std::max(result.max_abs_error, abs_error);
      if (std::fabs(numeric) > 0) result.max_rel_error = std::max(result.max_rel_error, abs_error / std::fabs(numeric));
    }
  }
  result.ok = worst_violation <= 1;
  return result;
}

}  // namespace ordo
