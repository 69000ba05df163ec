// The f64 gradient check of a whole module: every parameter of `model` as a
// checked input of `loss_of` (tests/nn/).
#pragma once

#include <functional>

#include "autograd/gradcheck.h"
#include "nn/module.h"
#include "tensor/ops.h"

namespace ordo::test {

// Checks d(loss)/d(every parameter) of `loss_of` with the model's parameters
// as the checked inputs. Parameters start from non-trivial values (LayerNorm
// gains and biases drawn too) so no term hides behind a 0 or a 1.
inline GradcheckResult check_model(nn::Module& model, const std::function<Var()>& loss_of) {
  model.to_dtype(DType::f64);
  std::vector<nn::NamedParameter> params = model.named_parameters();
  std::vector<Tensor> values;
  uint64_t seed = 1;
  for (auto& [name, p] : params) {
    Tensor v = Tensor::empty(p->var.shape(), DType::f64);
    uniform_(v, -0.5, 0.5, seed++, 0);
    if (name.find("LayerNorm.weight") != std::string::npos) v = affine(v, 1.0, 1.0);
    values.push_back(v);
  }
  return gradcheck(
      [&](const std::vector<Var>& inputs) {
        for (size_t i = 0; i < params.size(); ++i) params[i].second->var = inputs[i];
        return loss_of();
      },
      values);
}

}  // namespace ordo::test
