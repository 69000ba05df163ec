// For a backward that can add its gradient onto the one its input has
// already gathered (a product with beta = 1, tensor/product_onto.h) instead
// of returning a term for Var::backward to add: a layer's input is read by
// Q, K and V's product and by the residual, whose gradient arrives first.
// And for one that can write its gradient where the input's source gathers
// it: q, k and v are slices of one block of heads, whose gradient is one
// block too, so their products' gradients are written into it, not copied.
#pragma once

#include <cstddef>

#include "tensor/tensor.h"

namespace ordo {

// Inside a node's backward: the gradient gathered so far for its input
// `input`, handed over (once) when the engine alone holds it and it is dense
// and contiguous; otherwise undefined. A backward that takes it must add its
// own term into it and return it as that input's gradient.
Tensor take_pending_gradient(size_t input);

// Inside a node's backward: where input `input`'s whole gradient, of its
// shape and `dtype`, contiguous, may be written — its part of the block its
// source's gradient is gathered in, when the input is a slice (through
// reshapes) that nothing else has given a gradient yet; otherwise undefined.
// A backward that takes it must write its gradient there and return it.
Tensor gradient_destination(size_t input, DType dtype);

}  // namespace ordo
