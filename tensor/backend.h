// The two backends behind the op layer, and how an op picks one.
//
// tensor/kernels.inc declares every kernel once; it is included here into
// ordo::cpu and (when built with CUDA) ordo::cuda. Ops call
//   ORDO_BACKEND(device, kernel)(args...)
// which names cpu::kernel or cuda::kernel for the device, and throws a clear
// ordo::Error for a CUDA tensor in a build without CUDA. The call goes through
// detail::BackendCall (tensor/kernel_calls.h), which records it while a
// KernelCallRecording is alive.
#pragma once

#include <cstdint>

#include "tensor/attention_terms.h"
#include "tensor/elementwise_math.h"
#include "tensor/kernel_calls.h"
#include "tensor/tensor.h"

namespace ordo {

enum class ReduceOp : uint8_t { sum, mean, max, min, var };

enum class RandomDist : uint8_t {
  uniform,       // [a, b)
  normal,        // mean a, standard deviation b
  trunc_normal,  // normal(a, b) redrawn until inside [a - 2b, a + 2b] (TensorFlow's truncated_normal)
};

// `batch` matrices stored row-major, matrix j starting at t.data() + j * batch_stride,
// row stride ld. trans = use each matrix transposed. batch_stride 0 reuses one
// matrix for every batch (a weight shared by a batched activation).
struct MatrixBatch {
  Tensor t;
  bool trans = false;
  int64_t ld = 0;
  int64_t batch_stride = 0;
};

// One AdamW step (Loshchilov & Hutter, decoupled weight decay), as PyTorch's AdamW:
//   g = grad * grad_scale
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   param -= lr * (weight_decay * param + (m / (1 - beta1^step)) / (sqrt(v / (1 - beta2^step)) + eps))
struct AdamWStep {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  int64_t step = 1;          // 1 for the first update (bias correction)
  double grad_scale = 1.0;   // gradient clipping folds in here
};

namespace cpu {
#include "tensor/kernels.inc"
}  // namespace cpu

#ifdef ORDO_HAS_CUDA
namespace cuda {
#include "tensor/kernels.inc"
}  // namespace cuda
#endif

namespace detail {
[[noreturn]] void throw_no_cuda(const char* kernel);
}

}  // namespace ordo

#ifdef ORDO_HAS_CUDA
#define ORDO_BACKEND(device, kernel)             \
  ::ordo::detail::backend_call(#kernel, (device), \
                               (device).is_cuda() ? ::ordo::cuda::kernel : ::ordo::cpu::kernel)
#else
#define ORDO_BACKEND(device, kernel)                                                                   \
  ::ordo::detail::backend_call(                                                                       \
      #kernel, (device),                                                                              \
      (device).is_cuda() ? (::ordo::detail::throw_no_cuda(#kernel), ::ordo::cpu::kernel) : ::ordo::cpu::kernel)
#endif
