// For a backward that can add its gradient onto the one its input has
// already gathered (a product with beta = 1, tensor/product_onto.h) instead
// of returning a term for Var::backward to add: a layer's input is read by
// Q, K and V's product and by the residual, whose gradient arrives first.
#pragma once

#include <cstddef>

#include "tensor/tensor.h"

namespace ordo {

// Inside a node's backward: the gradient gathered so far for its input
// `input`, handed over (once) when the engine alone holds it and it is dense
// and contiguous; otherwise undefined. A backward that takes it must add its
// own term into it and return it as that input's gradient.
Tensor take_pending_gradient(size_t input);

}  // namespace ordo
