#include "nn/evaluate_batches.h"

#include <algorithm>
#include <exception>
#include <mutex>

#include "autograd/var.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace ordo::nn {

void evaluate_batches(int64_t n, Device device, const std::function<void(int64_t)>& batch) {
  int threads = 1;
#ifdef _OPENMP
  if (device.is_cpu() && !omp_in_parallel()) threads = omp_get_max_threads();
#endif
  if (threads <= 1 || n <= 1) {
    NoGradGuard no_grad;
    for (int64_t i = 0; i < n; ++i) batch(i);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel for schedule(dynamic, 1) num_threads(static_cast<int>(std::min<int64_t>(threads, n)))
  for (int64_t i = 0; i < n; ++i) {
    NoGradGuard no_grad;  // this thread's
    try {
      batch(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace ordo::nn
