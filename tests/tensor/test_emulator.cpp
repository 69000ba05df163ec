// The emulated GPU itself (ORDO_CUDA=emulate, tensor/cuda/emulator/): what it
// must catch that a CPU build never can — a read past an allocation, host
// code touching device memory, a missing barrier, a warp operation with a bad
// mask, a launch the driver would refuse — and its cuBLAS and cub stand-ins
// against loops written here from the libraries' documentation.
//
// Its checks (race, conflict, initcheck, bounds, poison) are each shown on a
// planted bug: a kernel written here with the bug a sceptical reviewer
// planted in ordo's own kernels, which runs without complaint (and often
// with the right result) with the checks off, and fails the launch, naming
// the kernel and the threads, with them on.
//
// This file: faults, barriers, warp operations and launch limits; the
// checks on planted bugs are test_emulator_checks.cpp's, the cuBLAS, cub
// and wmma stand-ins test_emulator_libraries.cpp's; all three are compiled
// with the emulator's access hooks, as tensor/cuda/*.cu are.
//
// Faults end the process, so those tests run the faulting code in a forked
// child and read what it printed. Other builds compile this file to nothing.
#ifdef ORDO_CUDA_EMULATED

#include <cub/device/device_radix_sort.cuh>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tensor/cuda/cuda_common.cuh"
#include "tests/helpers.h"
#include "tests/tensor/emulator_harness.h"

using Catch::Matchers::Contains;
using namespace emulator_test;

namespace {

// ---- kernels -----------------------------------------------------------------------

__global__ void copy_shifted_by_one(float* out, const float* x) { out[threadIdx.x] = x[threadIdx.x + 1]; }

// Thread 0 publishes a value that the block reads; with_barrier says whether
// the __syncthreads between the write and the reads is there.
__global__ void broadcast_first_thread(int* out, bool with_barrier) {
  __shared__ int value;
  if (threadIdx.x == 0) value = 100 + static_cast<int>(blockIdx.x);
  if (with_barrier) __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = value;
}

__global__ void shuffle_full_mask(int* out) {
  out[threadIdx.x] = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x), 0);
}

__global__ void lane_leaves_before_shuffle(int* out, int leaving_lane) {
  if (static_cast<int>(threadIdx.x) == leaving_lane) return;
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);
}

__global__ void write_thread_index(int* out) { out[threadIdx.x] = static_cast<int>(threadIdx.x); }

__global__ void warp_sums(int* out) {
  int v = static_cast<int>(threadIdx.x);
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  const unsigned odd = __ballot_sync(0xffffffffu, threadIdx.x % 2);
  const unsigned same_third = __match_any_sync(0xffffffffu, static_cast<int>(threadIdx.x % 3));
  if (threadIdx.x % 32 == 0) {
    out[threadIdx.x / 32 * 3] = v;
    out[threadIdx.x / 32 * 3 + 1] = static_cast<int>(odd);
    out[threadIdx.x / 32 * 3 + 2] = static_cast<int>(same_third);
  }
}

}  // namespace

TEST_CASE("emulator: a kernel reading one element past an allocation faults, naming the kernel",
          "[emulator]") {
  const ChildResult r = run_in_child([] {
    float* x = device_array(std::vector<float>(64, 1.0f));  // 256 bytes: ends against the guard page
    float* out = device_array(std::vector<float>(64, 0.0f));
    ORDO_LAUNCH(copy_shifted_by_one, 1, 64, 0, nullptr, out, x);
  });
  CHECK(r.killed_by_segv);
  CHECK_THAT(r.stderr_text, Contains("kernel 'copy_shifted_by_one'"));
  CHECK_THAT(r.stderr_text, Contains("thread (63,0,0)"));
  CHECK_THAT(r.stderr_text, Contains("0 bytes past the end of the device allocation of 256 bytes"));
}

TEST_CASE("emulator: host code dereferencing a device pointer faults", "[emulator]") {
  const ChildResult r = run_in_child([] {
    float* x = device_array(std::vector<float>(8, 1.0f));
    volatile float v = x[3];
    (void)v;
  });
  CHECK(r.killed_by_segv);
  CHECK_THAT(r.stderr_text, Contains("host code"));
  CHECK_THAT(r.stderr_text, Contains("byte 12 of the device allocation of 32 bytes"));
}

TEST_CASE("emulator: kernels and copies reach device memory, host code only through copies", "[emulator]") {
  int* out = device_array(std::vector<int>(40, -1));
  ORDO_LAUNCH(write_thread_index, 1, 40, 0, nullptr, out);
  REQUIRE(launch_error() == "");
  std::vector<int> expected(40);
  for (int i = 0; i < 40; ++i) expected[static_cast<size_t>(i)] = i;
  CHECK(host_array(out, 40) == expected);
  CHECK(cudaFree(out) == cudaSuccess);
}

TEST_CASE("emulator: a missing __syncthreads shows under the reverse schedule, and the race check finds it under every one",
          "[emulator]") {
  constexpr int kBlocks = 2, kThreads = 64;
  std::vector<int> expected;
  for (int b = 0; b < kBlocks; ++b) expected.insert(expected.end(), kThreads, 100 + b);
  int* out = device_array(std::vector<int>(kBlocks * kThreads, 0));
  auto run = [&](const std::string& schedule, bool with_barrier) {
    ScheduleGuard guard(schedule);
    ORDO_LAUNCH(broadcast_first_thread, kBlocks, kThreads, 0, nullptr, out, with_barrier);
    REQUIRE(launch_error() == "");
    return host_array(out, expected.size());
  };
  {
    ChecksGuard off(0);
    // Forward order runs thread 0 first, which hides the missing barrier.
    CHECK(run("forward", false) == expected);
    CHECK(run("reverse", false) != expected);
  }
  CHECK(run("reverse", true) == expected);
  CHECK(run("random:7", true) == expected);
  CHECK(run("greedy-warp", true) == expected);
  ChecksGuard race(emu::Check::race);
  ORDO_LAUNCH(broadcast_first_thread, kBlocks, kThreads, 0, nullptr, out, false);
  const std::string error = launch_error();
  CHECK_THAT(error, Contains("shared-memory race (read after write) in kernel 'broadcast_first_thread'"));
  CHECK_THAT(error, Contains("thread (1,0,0) reads byte 0 of __shared__"));
  CHECK_THAT(error, Contains("broadcast_first_thread(int*, bool)::value, which thread (0,0,0) wrote"));
  cudaFree(out);
}

TEST_CASE("emulator: warp operations give CUDA's results under every schedule", "[emulator]") {
  // Per warp of 32 lanes w*32 + l: the sum of the lanes, the odd lanes, and
  // lane 0's group of lanes with the same l % 3 (lane 0, 3, ... are 0 mod 3
  // when w * 32 is; 32 % 3 == 2 shifts warp 1's groups).
  for (const std::string schedule : {"forward", "reverse", "random:3"}) {
    ScheduleGuard guard(schedule);
    int* out = device_array(std::vector<int>(6, 0));
    ORDO_LAUNCH(warp_sums, 1, 64, 0, nullptr, out);
    REQUIRE(launch_error() == "");
    const std::vector<int> got = host_array(out, 6);
    INFO(schedule);
    unsigned third0 = 0, third1 = 0;
    for (int l = 0; l < 32; ++l) {
      if (l % 3 == 0) third0 |= 1u << l;
      if ((32 + l) % 3 == 32 % 3) third1 |= 1u << l;
    }
    CHECK(got[0] == 31 * 32 / 2);
    CHECK(got[1] == static_cast<int>(0xaaaaaaaau));
    CHECK(static_cast<unsigned>(got[2]) == third0);
    CHECK(got[3] == 32 * 32 + 31 * 32 / 2);
    CHECK(got[4] == static_cast<int>(0xaaaaaaaau));
    CHECK(static_cast<unsigned>(got[5]) == third1);
    cudaFree(out);
  }
}

TEST_CASE("emulator: a warp operation whose mask names missing lanes is an error naming the kernel",
          "[emulator]") {
  int* out = device_array(std::vector<int>(64, 0));
  SECTION("lanes that do not exist (a block of 48 threads)") {
    ORDO_LAUNCH(shuffle_full_mask, 1, 48, 0, nullptr, out);
    const std::string error = launch_error();
    CHECK_THAT(error, Contains("cudaErrorLaunchFailure"));
    CHECK_THAT(error, Contains("kernel 'shuffle_full_mask'"));
    CHECK_THAT(error, Contains("names lanes 0xffff0000, which do not exist"));
  }
  SECTION("a lane that ends without arriving") {
    for (const std::string schedule : {"forward", "reverse"}) {
      ScheduleGuard guard(schedule);
      ORDO_LAUNCH(lane_leaves_before_shuffle, 1, 32, 0, nullptr, out, 5);
      const std::string error = launch_error();
      INFO(schedule);
      CHECK_THAT(error, Contains("kernel 'lane_leaves_before_shuffle'"));
      CHECK_THAT(error, Contains("__shfl_down_sync"));
      CHECK_THAT(error, Contains("lane 5, which"));
    }
  }
  // The error is reported once; the next launch is clean.
  ORDO_LAUNCH(write_thread_index, 1, 32, 0, nullptr, out);
  CHECK(launch_error() == "");
  cudaFree(out);
}

TEST_CASE("emulator: launches the driver refuses fail with the runtime's error, naming the kernel",
          "[emulator]") {
  int* out = device_array(std::vector<int>(2048, 0));
  ORDO_LAUNCH(write_thread_index, 1, 1025, 0, nullptr, out);
  std::string error = launch_error();
  CHECK_THAT(error, Contains("cudaErrorInvalidConfiguration (invalid configuration argument)"));
  CHECK_THAT(error, Contains("kernel 'write_thread_index': blockDim.x = 1025 is outside 1..1024"));

  ORDO_LAUNCH(write_thread_index, 1, dim3(64, 32), 0, nullptr, out);
  CHECK_THAT(launch_error(), Contains("a block of 2048 threads (64,32,1) exceeds 1024"));

  ORDO_LAUNCH(write_thread_index, 1, dim3(32, 1, 65), 0, nullptr, out);
  CHECK_THAT(launch_error(), Contains("blockDim.z = 65 is outside 1..64"));

  ORDO_LAUNCH(write_thread_index, dim3(1, 65536), 32, 0, nullptr, out);
  CHECK_THAT(launch_error(), Contains("gridDim.y = 65536 is outside 1..65535"));

  ORDO_LAUNCH(write_thread_index, 1, 32, 48 * 1024 + 1, nullptr, out);
  error = launch_error();
  CHECK_THAT(error, Contains("cudaErrorInvalidValue (invalid argument)"));
  CHECK_THAT(error, Contains("dynamic shared memory"));

  ORDO_LAUNCH(write_thread_index, 1, 1024, 48 * 1024, nullptr, out);  // at every limit: runs
  CHECK(launch_error() == "");
  cudaFree(out);
}

TEST_CASE("emulator: the device reports itself as emulated", "[emulator]") {
  REQUIRE(ordo::cuda_available());
  CHECK_THAT(ordo::cuda_device_description(0), Contains("emulated on the CPU"));
}

#endif  // ORDO_CUDA_EMULATED
