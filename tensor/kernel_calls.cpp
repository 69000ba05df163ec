#include "tensor/kernel_calls.h"

#include <mutex>

#include "base/error.h"
#include "tensor/backend.h"

namespace ordo {

namespace {

struct Recorder {
  std::mutex mutex;
  std::vector<KernelCall> calls;
};

Recorder& recorder() {
  static Recorder r;
  return r;
}

}  // namespace

namespace detail {

std::atomic<bool> kernel_calls_recorded{false};

void record_kernel_call(KernelCall call) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.calls.push_back(std::move(call));
}

void describe_argument(KernelCall& call, const MatrixBatch& m) { describe_argument(call, m.t); }

void describe_argument(KernelCall& call, const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) describe_argument(call, t);
}

void describe_argument(KernelCall& call, const AdamWTensors& t) {
  for (const std::vector<Tensor>* list : {&t.params, &t.grads, &t.m, &t.v}) describe_argument(call, *list);
}

}  // namespace detail

double distinct_bytes(const Tensor& t) {
  if (!t.defined()) return 0;
  double elements = 1;
  for (size_t d = 0; d < t.shape().size(); ++d)
    if (t.strides()[d] != 0) elements *= static_cast<double>(t.shape()[d]);
  return elements * static_cast<double>(dtype_size(t.dtype()));
}

KernelCallRecording::KernelCallRecording() {
  ORDO_CHECK(!detail::kernel_calls_recorded.exchange(true),
             "kernel calls are already being recorded (one KernelCallRecording at a time)");
  std::lock_guard<std::mutex> lock(recorder().mutex);
  recorder().calls.clear();
}

KernelCallRecording::~KernelCallRecording() {
  detail::kernel_calls_recorded.store(false);
  std::lock_guard<std::mutex> lock(recorder().mutex);
  recorder().calls.clear();
}

std::vector<KernelCall> KernelCallRecording::calls() const {
  std::lock_guard<std::mutex> lock(recorder().mutex);
  return recorder().calls;
}

}  // namespace ordo
