// Every backend kernel call, seen from outside: which kernel, the tensors it
// touched, its integer arguments and the device launches it made. Recorded
// only while a KernelCallRecording is alive (one branch per call otherwise),
// for `ordo bench step`'s roofline estimate (tensor/roofline.h).
//
// The record is taken at ORDO_BACKEND (tensor/backend.h), the one door every
// op goes through to reach cpu:: or cuda:: — so no kernel has code of its own
// for it, and a new kernel is recorded without anyone remembering to.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "tensor/device_runtime.h"
#include "tensor/tensor.h"

namespace ordo {

struct MatrixBatch;
struct AdamWTensors;
struct AttentionTerms;
struct AttentionGrads;

struct KernelCall {
  const char* kernel = "";       // the name in tensor/kernels.inc
  Device device;
  std::vector<Shape> shapes;     // of its tensor arguments, in order (a MatrixBatch: its tensor)
  std::vector<int64_t> integers; // its int64_t arguments, in order (gemm: batch, m, n, k)
  double bytes = 0;              // distinct bytes of those tensors: a broadcast (stride 0) dimension counts once
  int64_t launches = 0;          // ORDO_LAUNCH kernels it made (tensor/device_runtime.h's count); 0 on the CPU
  MatmulPrecision precision = MatmulPrecision::fp32;  // a product's (gemm)
};

// Records the kernel calls made on this process while alive (from any thread;
// the calls are appended in the order they finish). One at a time.
class KernelCallRecording {
 public:
  KernelCallRecording();
  ~KernelCallRecording();
  KernelCallRecording(const KernelCallRecording&) = delete;
  KernelCallRecording& operator=(const KernelCallRecording&) = delete;
  std::vector<KernelCall> calls() const;
};

// Bytes a kernel reads or writes through `t`: its elements once each, however
// often a broadcast repeats them.
double distinct_bytes(const Tensor& t);

namespace detail {

extern std::atomic<bool> kernel_calls_recorded;
void record_kernel_call(KernelCall call);

inline void describe_argument(KernelCall& call, const Tensor& t) {
  call.shapes.push_back(t.shape());
  call.bytes += distinct_bytes(t);
}
void describe_argument(KernelCall& call, const MatrixBatch& m);
void describe_argument(KernelCall& call, const std::vector<Tensor>& tensors);  // each of them
void describe_argument(KernelCall& call, const AdamWTensors& t);                // params, grads, m and v
// The terms' tensors, and as integers the multiply-adds each (query, key)
// pair costs beyond q . k and P v and whether the mask is causal; the
// gradients' tensors, and whether the tables' gradients are formed
// (roofline.cpp: the attention's FLOPs).
void describe_argument(KernelCall& call, const AttentionTerms& terms);
void describe_argument(KernelCall& call, const AttentionGrads& grads);
inline void describe_argument(KernelCall& call, int64_t value) { call.integers.push_back(value); }
inline void describe_argument(KernelCall& call, MatmulPrecision p) { call.precision = p; }
template <class Other>
void describe_argument(KernelCall&, const Other&) {}  // enums, doubles, seeds, AdamW settings

// What ORDO_BACKEND returns: calls the kernel, and records the call while a
// KernelCallRecording is alive.
template <class Kernel>
struct BackendCall {
  const char* kernel;
  Device device;
  Kernel* function;

  template <class... Args>
  void operator()(const Args&... args) const {
    if (!kernel_calls_recorded.load(std::memory_order_relaxed)) {
      function(args...);
      return;
    }
    KernelCall call;
    call.kernel = kernel;
    call.device = device;
    (describe_argument(call, args), ...);
    const int64_t launches_before = device_counters().kernel_launches;
    function(args...);
    call.launches = device_counters().kernel_launches - launches_before;
    record_kernel_call(std::move(call));
  }
};

template <class Kernel>
BackendCall<Kernel> backend_call(const char* kernel, Device device, Kernel* function) {
  return {kernel, device, function};
}

}  // namespace detail
}  // namespace ordo
