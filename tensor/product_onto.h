// A product added onto a tensor by the product itself: c += alpha op(a) op(b)
// (the kernels' beta = 1). A gradient that already holds other terms (a
// layer's input, read by a product and by the residual) takes the product's
// term without a separate add pass. Or written into a tensor the caller
// chose (beta = 0): a gradient's place in a block (autograd's
// gradient_destination).
#pragma once

#include "tensor/device_runtime.h"
#include "tensor/tensor.h"

namespace ordo {

// c: contiguous, of the product's shape (tensor/ops.h matmul), f32 for f32 or
// bf16 operands, f64 for f64 ones. Returns c.
Tensor matmul_onto(const Tensor& c, const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false,
                   double alpha = 1.0, MatmulPrecision precision = MatmulPrecision::fp32);
// c = alpha op(a) op(b), c as matmul_onto's. Returns c.
Tensor matmul_into(const Tensor& c, const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false,
                   double alpha = 1.0, MatmulPrecision precision = MatmulPrecision::fp32);

}  // namespace ordo
