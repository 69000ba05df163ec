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
#include <vector>

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

// The Philox stream of a dropout mask: `offset`, plus the value held by
// `base` (one i64 on the kernel's device) when defined. A step captured in a
// CUDA graph replays its launches with the arguments they had; the base
// moves its masks on from step to step (nn::Context).
struct PhiloxStream {
  uint64_t seed = 0;
  uint64_t offset = 0;
  Tensor base;
};

// The order in which index_add (index_select's and embedding's backward)
// adds a destination row's contributions, the same on every backend so that
// they agree bit for bit. Sort the index list stably by row: row r's entries
// j_1 < j_2 < ... then sit at sorted positions s_r, s_r + 1, ... (s_r: the
// number of entries of smaller rows). Cut that run where a sorted position is
// a multiple of kIndexAddPiece; sum each piece in order from its first entry;
// add the pieces, in order, onto the row's old value. A row's run shorter
// than a piece and inside one is the plain sum in index order. The cut bounds
// the longest chain of dependent adds a GPU thread makes: a T5 bucket or a
// token type gathers tens of thousands of entries, which one thread summing a
// whole run took milliseconds over (the H200's +124% for t5_bias).
constexpr int64_t kIndexAddPiece = 256;

// The most lookups embedding_sum adds in one pass: a BERT's word, token-type
// and position tables.
constexpr int kEmbeddingSumTerms = 3;

// The tensors of one multi-tensor AdamW step (NVIDIA apex's multi-tensor
// apply): every parameter with a gradient, walked by each kernel in chunks of
// at most kMultiTensorChunk elements, so that one launch covers them all.
// The tables are built once on the tensors' device (ops.h, adamw_tensors)
// for parameters and moments whose storage does not move; the gradients'
// addresses may change from step to step and go with each call.
constexpr int64_t kMultiTensorChunk = 4096;
constexpr int64_t kAdamWLayoutColumns = 5;  // AdamWTensors::layout's
struct AdamWTensors {
  std::vector<Tensor> params, grads, m, v;  // contiguous, the same shapes, f32 (f64 too on the CPU)
  // Where defined, a contiguous bf16 tensor of params[i]'s shape that the
  // update also writes: the updated parameter rounded to bf16 (the operand
  // the next forward's bf16 products take, without a cast of their own).
  std::vector<Tensor> rounded;
  // i64 [tensors, 5]: the data addresses of param, m and v, 1 where weight
  // decay applies, and rounded's address (0: none)
  Tensor layout;
  Tensor chunks;  // i64 [chunks, 3]: tensor, first element, elements; in tensor order
};

// The step's constants besides the schedule. lr and the bias corrections
// come from the device (adamw_multi's `schedule`), so that a captured step
// (CUDA graphs) replays with the next step's values.
struct AdamWConstants {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
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
