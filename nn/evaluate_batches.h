// Evaluation batches on the CPU, a whole batch a thread.
//
// One batch of a small model's evaluation runs about a hundred short parallel
// loops, and with every thread on each, much of the time goes to waiting at
// their barriers (a profile of tiny's evaluation on 2 threads: libgomp 35% of
// the cycles). Whole batches on different
// threads wait for nothing: each batch's kernels run nested in this parallel
// loop, hence on its thread alone (OpenMP's default max-active-levels of 1;
// OpenBLAS's OpenMP build runs one thread inside a parallel region too). The
// results are those of the batches one after another on every thread: ordo's
// CPU kernels give the same bits on any thread count
// (tests/tensor/test_determinism.cpp), and a batch is the same batch.
#pragma once

#include <cstdint>
#include <functional>

#include "tensor/dtype.h"

namespace ordo::nn {

// Calls batch(i) for i in [0, n): on the CPU spread over its threads (as many
// batches in flight as threads, each with gradients off: they are
// thread-local), on a GPU one after another. `batch` must write only what is
// its own (its i's slot). The first exception a batch throws is rethrown once
// every call has returned.
void evaluate_batches(int64_t n, Device device, const std::function<void(int64_t)>& batch);

}  // namespace ordo::nn
