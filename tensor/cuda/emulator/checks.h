// What the execution of a launch (execution.cpp) tells the checks of
// checks.cpp, and what they answer (internal to tensor/cuda/emulator/).
#pragma once

#include <cstdint>
#include <string>

#include "tensor/cuda/emulator/emulator.h"

namespace ordo::cuda::emulator::access_checks {

void begin_launch(const char* kernel);
void begin_block(Dim block_idx, uint64_t linear, int threads);
void block_barrier();                          // a __syncthreads completed
void warp_sync(int first_thread, unsigned mask);  // a __syncwarp completed for these lanes
void thread_fence();                           // the running thread made a __threadfence
// The linear index, in its block, of the thread being run.
extern int running_thread;

}  // namespace ordo::cuda::emulator::access_checks

namespace ordo::cuda::emulator {
// The launch fails with `what` as its error (the block's first error wins;
// the thread runs on to its next barrier, as a check cannot stop it mid-access).
void record_kernel_error(const std::string& what);
}  // namespace ordo::cuda::emulator
