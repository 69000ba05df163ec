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
// the kernel and the threads, with them on. This file is compiled with the
// emulator's access hooks, as tensor/cuda/*.cu are.
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

using Catch::Matchers::Contains;

namespace {

namespace emu = ordo::cuda::emulator;

// ---- helpers ---------------------------------------------------------------------

struct ChildResult {
  bool killed_by_segv = false, killed_by_abort = false;
  std::string stderr_text;
};

// Runs `body` in a forked child with its stderr captured.
ChildResult run_in_child(const std::function<void()>& body) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    body();
    _exit(0);
  }
  close(fds[1]);
  ChildResult r;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) r.stderr_text.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.killed_by_segv = WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
  r.killed_by_abort = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  return r;
}

template <class T>
T* device_array(const std::vector<T>& host) {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, host.size() * sizeof(T)) == cudaSuccess);
  REQUIRE(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  return static_cast<T*>(p);
}

template <class T>
std::vector<T> host_array(const T* device, size_t n) {
  std::vector<T> host(n);
  REQUIRE(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  return host;
}

// The schedule for one test, back to forward after it.
struct ScheduleGuard {
  explicit ScheduleGuard(const std::string& s) { REQUIRE(emu::set_schedule(s)); }
  ~ScheduleGuard() { emu::set_schedule("forward"); }
};

// The checks for one test, back to what they were after it.
struct ChecksGuard {
  explicit ChecksGuard(unsigned bits) : saved(emu::checks()) { emu::set_checks(bits); }
  ~ChecksGuard() { emu::set_checks(saved); }
  unsigned saved;
};

// The error a launch left, as ORDO_CUDA_CHECK_LAUNCH reports it ("" when none).
std::string launch_error() {
  try {
    ORDO_CUDA_CHECK_LAUNCH();
  } catch (const ordo::Error& e) {
    return e.what();
  }
  return "";
}

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

// ---- the checks, each on a planted bug --------------------------------------------------

namespace {

const ordo::Device kGpu = ordo::Device::cuda(0);

// block_reduce (tensor/cuda/cuda_common.cuh) with its first __syncthreads
// removed: a second call may overwrite warp_results before every warp has
// read the first call's (a write after read between warps).
__device__ float block_sum_missing_barrier(float v) {
  __shared__ float warp_results[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = ordo::cuda::warp_reduce(v, ordo::cuda::SumCombine{});
  if (lane == 0) warp_results[warp] = v;  // planted: no __syncthreads before this write
  __syncthreads();
  v = lane < warps ? warp_results[lane] : 0.0f;
  v = ordo::cuda::warp_reduce(v, ordo::cuda::SumCombine{});
  return ordo::cuda::shuffle_broadcast(v, 0);
}

// The block's sum and sum of squares, one reduction after the other (as LayerNorm).
__global__ void sum_and_squares(float* out, const float* x) {
  const float v = x[threadIdx.x];
  const float sum = block_sum_missing_barrier(v);
  const float squares = block_sum_missing_barrier(v * v);
  if (threadIdx.x == 0) {
    out[0] = sum;
    out[1] = squares;
  }
}

// bins[t % 4] += x[t]: lanes that share a bin add without an atomic or a warp
// reduction (the lost update), in shared memory and in device memory.
__global__ void bin_sums_in_shared(float* out, const float* x) {
  __shared__ float bins[4];
  if (threadIdx.x < 4) bins[threadIdx.x] = 0.0f;
  __syncthreads();
  bins[threadIdx.x % 4] += x[threadIdx.x];  // planted
  __syncthreads();
  if (threadIdx.x < 4) out[threadIdx.x] = bins[threadIdx.x];
}
__global__ void bin_sums_in_device_memory(float* out, const float* x) {
  out[threadIdx.x % 4] += x[threadIdx.x];  // planted
}

// Each block copies its 32 elements; block b's last thread also stores into
// block b + 1's first element (an index one too far).
__global__ void copy_with_stray_store(float* out, const float* x) {
  const unsigned i = blockIdx.x * 32 + threadIdx.x;
  out[i] = x[i];
  if (threadIdx.x == 31 && blockIdx.x + 1 < gridDim.x) out[i + 1] = -1.0f;  // planted
}

// Each block writes its 32 values' sum as its part; the block that completes
// the count adds the parts up (last_of_group's hand-off, written out here so
// that each of its two steps can be left out: `fence` the writers'
// __threadfence before counting, `count` the atomic count itself — without
// it, the last block by index adds up, as if blocks ran in order).
__global__ void parts_added_by_the_last_block(float* out, float* parts, unsigned* counter, const float* x, bool fence,
                                              bool count) {
  __shared__ bool last;
  const unsigned i = blockIdx.x * 32 + threadIdx.x;
  const float sum = ordo::cuda::block_reduce(x[i], ordo::cuda::SumCombine{}, 0.0f);
  if (threadIdx.x == 0) parts[blockIdx.x] = sum;
  if (fence) __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    last = count ? atomicAdd(counter, 1u) == gridDim.x - 1 : blockIdx.x == gridDim.x - 1;
  __syncthreads();
  if (last && threadIdx.x == 0) {
    float total = 0.0f;
    for (unsigned b = 0; b < gridDim.x; ++b) total += parts[b];
    *out = total;
    if (count) atomicExch(counter, 0u);
  }
}

// The sum of n <= 64 values through a tile of 64 whose tail past n is never zeroed.
__global__ void tile_sum_unzeroed_tail(float* out, const float* x, int n) {
  __shared__ float tile[64];
  if (static_cast<int>(threadIdx.x) < n) tile[threadIdx.x] = x[threadIdx.x];  // planted: tile[n..63] = 0 missing
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int j = 0; j < 64; ++j) sum += tile[j];
    out[0] = sum;
  }
}

// out[t] += x[t], taking fresh memory for zeros.
__global__ void accumulate_into(float* out, const float* x) { out[threadIdx.x] += x[threadIdx.x]; }

// Off by one: y[i] = x[i + 1] for i < n reads x[n]; y[i] = 1 for i <= n writes y[n].
__global__ void copy_next(float* y, const float* x, int n) {
  if (static_cast<int>(threadIdx.x) < n) y[threadIdx.x] = x[threadIdx.x + 1];
}
__global__ void fill_through(float* y, int n) {
  if (static_cast<int>(threadIdx.x) <= n) y[threadIdx.x] = 1.0f;
}

std::vector<float> iota_floats(int n, float first) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = first + static_cast<float>(i);
  return v;
}

}  // namespace

TEST_CASE("emulator: the race check catches a removed __syncthreads before block_reduce's shared array is reused",
          "[emulator]") {
  // x = 1..64 over two warps: sum 2080, sum of squares 64 * 65 * 129 / 6 = 89440, exact in f32.
  float* x = device_array(iota_floats(64, 1.0f));
  float* out = device_array(std::vector<float>(2, 0.0f));
  const std::vector<float> expected = {2080.0f, 89440.0f};
  auto run = [&](const std::string& schedule) {
    ScheduleGuard guard(schedule);
    ORDO_LAUNCH(sum_and_squares, 1, 64, 0, nullptr, out, x);
    return launch_error();
  };
  {
    ChecksGuard off(0);
    // Every warp reads the first results before any writes the second under
    // these orders: the bug is invisible.
    for (const std::string schedule : {"forward", "reverse", "random:1"}) {
      INFO(schedule);
      REQUIRE(run(schedule) == "");
      CHECK(host_array(out, 2) == expected);
    }
    // greedy-warp lets the warp released last run into the second reduction
    // and overwrite its slot before warp 0 has read the first.
    REQUIRE(run("greedy-warp") == "");
    CHECK(host_array(out, 2) != expected);
  }
  ChecksGuard race(emu::Check::race);
  for (const std::string schedule : {"forward", "greedy-warp"}) {
    INFO(schedule);
    const std::string error = run(schedule);
    CHECK_THAT(error, Contains("shared-memory race (write after read) in kernel 'sum_and_squares'"));
    CHECK_THAT(error, Contains("block_sum_missing_barrier(float)::warp_results"));
    CHECK_THAT(error, Contains("which thread ("));
  }
  cudaFree(x);
  cudaFree(out);
}

TEST_CASE("emulator: the race check catches a lost update by lanes sharing an address, in shared and device memory",
          "[emulator]") {
  // bins[r] = sum of t + 1 over the 64 threads with t % 4 == r: 16 r + 16 + 4 * (0 + 4 + ... + 60) = 496 + 16 r.
  const std::vector<float> expected = {496.0f, 512.0f, 528.0f, 544.0f};
  float* x = device_array(iota_floats(64, 1.0f));
  float* out = device_array(std::vector<float>(4, 0.0f));
  auto run = [&](bool shared) {
    REQUIRE(cudaMemset(out, 0, 4 * sizeof(float)) == cudaSuccess);
    if (shared) {
      ORDO_LAUNCH(bin_sums_in_shared, 1, 64, 0, nullptr, out, x);
    } else {
      ORDO_LAUNCH(bin_sums_in_device_memory, 1, 64, 0, nullptr, out, x);
    }
    return launch_error();
  };
  {
    // A thread's read-add-write never yields to another fiber: the sums are
    // right under every schedule.
    ChecksGuard off(0);
    for (const std::string schedule : {"forward", "reverse", "random:2", "greedy-warp"})
      for (const bool shared : {true, false}) {
        ScheduleGuard guard(schedule);
        INFO(schedule << (shared ? " shared" : " device"));
        REQUIRE(run(shared) == "");
        CHECK(host_array(out, 4) == expected);
      }
  }
  ChecksGuard race(emu::Check::race);
  std::string error = run(true);
  CHECK_THAT(error, Contains("shared-memory race (read after write) in kernel 'bin_sums_in_shared'"));
  CHECK_THAT(error, Contains(" reads byte "));
  CHECK_THAT(error, Contains("bin_sums_in_shared(float*, float const*)::bins, which thread ("));
  error = run(false);
  CHECK_THAT(error, Contains("device-memory race in kernel 'bin_sums_in_device_memory': thread (4,0,0)"));
  CHECK_THAT(error, Contains("reads 4 bytes at byte 0 of the device allocation of 16 bytes"));
  CHECK_THAT(error, Contains("which thread (0,0,0) of the same block wrote"));
  cudaFree(x);
  cudaFree(out);
}

TEST_CASE("emulator: the conflict check catches a store into another block's elements", "[emulator]") {
  constexpr int kBlocks = 4;
  const std::vector<float> values = iota_floats(kBlocks * 32, 0.0f);
  float* x = device_array(values);
  float* out = device_array(std::vector<float>(kBlocks * 32, 0.0f));
  auto run = [&](const std::string& schedule) {
    ScheduleGuard guard(schedule);
    ORDO_LAUNCH(copy_with_stray_store, kBlocks, 32, 0, nullptr, out, x);
    return launch_error();
  };
  {
    ChecksGuard off(0);
    // Blocks in order: the next block overwrites the stray value, and the copy is right.
    REQUIRE(run("forward") == "");
    CHECK(host_array(out, values.size()) == values);
    REQUIRE(run("reverse") == "");
    CHECK(host_array(out, values.size()) != values);
  }
  ChecksGuard conflict(emu::Check::conflict);
  const std::string error = run("forward");
  CHECK_THAT(error, Contains("conflicting writes between blocks in kernel 'copy_with_stray_store': thread (0,0,0) "
                             "of block (1,0,0) writes 4 bytes at byte 128 of the device allocation of 512 bytes"));
  CHECK_THAT(error, Contains("which block 0 (linear index) of the same launch wrote without atomics"));
  cudaFree(x);
  cudaFree(out);
}

TEST_CASE("emulator: the conflict check lets the last block read parts fenced and counted, not otherwise",
          "[emulator]") {
  constexpr int kBlocks = 4;
  const std::vector<float> values = iota_floats(kBlocks * 32, 0.0f);
  float* x = device_array(values);
  float* out = device_array(std::vector<float>(1, 0.0f));
  float* parts = device_array(std::vector<float>(kBlocks, 0.0f));
  unsigned* counter = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&counter), sizeof(unsigned)) == cudaSuccess);
  REQUIRE(cudaMemset(counter, 0, sizeof(unsigned)) == cudaSuccess);
  auto run = [&](const std::string& schedule, bool fence, bool count) {
    ScheduleGuard guard(schedule);
    ORDO_LAUNCH(parts_added_by_the_last_block, kBlocks, 32, 0, nullptr, out, parts, counter, x, fence, count);
    return launch_error();
  };
  ChecksGuard conflict(emu::Check::conflict);
  const float total = static_cast<float>(kBlocks * 32 * (kBlocks * 32 - 1) / 2);  // 0 + 1 + ... : exact in f32
  for (const std::string schedule : {"forward", "reverse"}) {
    INFO(schedule);
    REQUIRE(run(schedule, true, true) == "");
    CHECK(host_array(out, 1)[0] == total);
    CHECK_THAT(run(schedule, false, true), Contains("a read of another block's write in kernel "
                                                    "'parts_added_by_the_last_block'"));
  }
  // Without the count, the last block by index reads parts that, on a GPU, may not be written yet.
  CHECK_THAT(run("forward", true, false), Contains("a read of another block's write in kernel "
                                                   "'parts_added_by_the_last_block': thread (0,0,0) of block (3,0,0)"));
  cudaFree(counter);
  cudaFree(parts);
  cudaFree(x);
  cudaFree(out);
}

TEST_CASE("emulator: poison and initcheck catch a shared tile whose tail is never zeroed", "[emulator]") {
  constexpr int kN = 40;
  float* x = device_array(iota_floats(kN, 1.0f));
  float* out = device_array(std::vector<float>(1, 0.0f));
  auto run = [&] {
    ORDO_LAUNCH(tile_sum_unzeroed_tail, 1, 64, 0, nullptr, out, x, kN);
    return launch_error();
  };
  {
    // __shared__ arrays are statics here: zero at the first launch, so the sum is right.
    ChecksGuard off(0);
    REQUIRE(run() == "");
    CHECK(host_array(out, 1)[0] == kN * (kN + 1) / 2);
  }
  {
    ChecksGuard poison(emu::Check::poison);  // every block's shared arrays start as NaN
    REQUIRE(run() == "");
    CHECK(std::isnan(host_array(out, 1)[0]));
  }
  ChecksGuard initcheck(emu::Check::initcheck);
  const std::string error = run();
  CHECK_THAT(error, Contains("uninitialised shared memory read in kernel 'tile_sum_unzeroed_tail', block (0,0,0): "
                             "thread (0,0,0) reads byte 160 of __shared__"));
  CHECK_THAT(error, Contains("::tile, which no thread of the block has written"));
  cudaFree(x);
  cudaFree(out);
}

TEST_CASE("emulator: poison and initcheck catch a kernel that takes fresh device memory for zeros", "[emulator]") {
  float* x = device_array(iota_floats(32, 1.0f));
  auto run = [&](float* out) {
    ORDO_LAUNCH(accumulate_into, 1, 32, 0, nullptr, out, x);
    return launch_error();
  };
  {
    // cudaMalloc's pages start as zeros here: the sums come out right.
    ChecksGuard off(0);
    void* fresh = nullptr;
    REQUIRE(cudaMalloc(&fresh, 32 * sizeof(float)) == cudaSuccess);
    REQUIRE(run(static_cast<float*>(fresh)) == "");
    CHECK(host_array(static_cast<float*>(fresh), 32) == iota_floats(32, 1.0f));
    cudaFree(fresh);
  }
  {
    ChecksGuard poison(emu::Check::poison);
    void* fresh = nullptr;
    REQUIRE(cudaMalloc(&fresh, 32 * sizeof(float)) == cudaSuccess);
    REQUIRE(run(static_cast<float*>(fresh)) == "");
    for (float v : host_array(static_cast<float*>(fresh), 32)) CHECK(std::isnan(v));
    cudaFree(fresh);
    // A tensor from ordo's caching allocator too, whatever block it reuses.
    ordo::Tensor t = ordo::Tensor::empty({32}, ordo::DType::f32, kGpu);
    REQUIRE(run(t.data<float>()) == "");
    for (float v : host_array(t.data<float>(), 32)) CHECK(std::isnan(v));
  }
  ChecksGuard initcheck(emu::Check::initcheck);
  ordo::Tensor t = ordo::Tensor::empty({32}, ordo::DType::f32, kGpu);
  const std::string error = run(t.data<float>());
  CHECK_THAT(error, Contains("uninitialised device memory read in kernel 'accumulate_into': thread (0,0,0) of "
                             "block (0,0,0) reads 4 bytes at byte 0 of the 128-byte tensor"));
  cudaFree(x);
}

TEST_CASE("emulator: the bounds check catches an off-by-one read or write inside a caching-allocator block",
          "[emulator]") {
  // 100 floats: 400 bytes in a block of 512, so one past the end is no fault.
  constexpr int kN = 100;
  ordo::Tensor x = ordo::Tensor::from_vector(iota_floats(kN, 0.0f), {kN}).to(kGpu);
  ordo::Tensor y = ordo::Tensor::empty({kN}, ordo::DType::f32, kGpu);
  auto read_past = [&] {
    ORDO_LAUNCH(copy_next, 1, kN, 0, nullptr, y.data<float>(), x.data<float>(), kN);
    return launch_error();
  };
  auto write_past = [&] {
    ORDO_LAUNCH(fill_through, 1, kN + 1, 0, nullptr, y.data<float>(), kN);
    return launch_error();
  };
  {
    ChecksGuard off(0);
    CHECK(read_past() == "");
    CHECK(write_past() == "");
  }
  ChecksGuard bounds(emu::Check::bounds);
  std::string error = read_past();
  CHECK_THAT(error, Contains("out-of-bounds access in kernel 'copy_next': thread (99,0,0) of block (0,0,0) reads "
                             "4 bytes at 0 bytes past the end of the 400-byte tensor"));
  CHECK_THAT(error, Contains("(inside the caching allocator's block of 512 bytes)"));
  error = write_past();
  CHECK_THAT(error, Contains("out-of-bounds access in kernel 'fill_through': thread (100,0,0) of block (0,0,0) "
                             "writes 4 bytes at 0 bytes past the end of the 400-byte tensor"));
  // The runtime's copies keep to the tensor too.
  std::vector<float> host(kN + 1);
  CHECK(cudaMemcpy(host.data(), x.data<float>(), host.size() * sizeof(float), cudaMemcpyDeviceToHost) ==
        cudaErrorInvalidValue);
  CHECK_THAT(emu::take_error_detail(), Contains("leaves its tensor: it reaches 0 bytes past the end of the 400-byte tensor"));
  (void)cudaGetLastError();
}

TEST_CASE("emulator: the cuBLAS stand-in refuses to read device memory never written", "[emulator]") {
  const ChildResult r = run_in_child([] {
    cublasHandle_t handle;
    cublasCreate(&handle);
    float* a = device_array(std::vector<float>(4, 1.0f));
    void* b = nullptr;  // never written
    cudaMalloc(&b, 4 * sizeof(float));
    float* c = device_array(std::vector<float>(4, 0.0f));
    const float one = 1.0f, zero = 0.0f;
    cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, a, CUDA_R_32F, 2, 0, b, CUDA_R_32F,
                               2, 0, &zero, c, CUDA_R_32F, 2, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  });
  CHECK(r.killed_by_abort);
  CHECK_THAT(r.stderr_text, Contains("cublasGemmStridedBatchedEx (matrix B): a read of uninitialised device memory: "
                                     "byte 0 of the device allocation of 16 bytes"));
}

// ---- the cuBLAS stand-in ----------------------------------------------------------------------

namespace {

// cuBLAS's documented operation, by hand, in double: column-major A (m x k,
// or k x m when transposed), B (k x n or n x k), C (m x n), per batch.
struct GemmCase {
  bool ta, tb;
  int m, n, k, lda, ldb, ldc, batch;
  long long sa, sb, sc;
};

std::vector<double> naive_gemm(const GemmCase& g, const std::vector<float>& a, const std::vector<float>& b,
                               const std::vector<float>& c, float alpha, float beta, bool tf32) {
  auto in = [tf32](float v) -> double {
    if (!tf32) return v;
    // TF32 keeps 10 mantissa bits; cvt.rna rounds to nearest, ties away from zero.
    int exponent;
    const double mantissa = std::frexp(static_cast<double>(v), &exponent);  // in [0.5, 1)
    return std::ldexp(std::round(std::ldexp(mantissa, 11)), exponent - 11);
  };
  std::vector<double> out(c.begin(), c.end());
  for (int p = 0; p < g.batch; ++p)
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.m; ++i) {
        double sum = 0;
        for (int l = 0; l < g.k; ++l) {
          const float av = g.ta ? a[p * g.sa + l + i * g.lda] : a[p * g.sa + i + l * g.lda];
          const float bv = g.tb ? b[p * g.sb + j + l * g.ldb] : b[p * g.sb + l + j * g.ldb];
          sum += in(av) * in(bv);
        }
        double& o = out[p * g.sc + i + j * g.ldc];
        o = alpha * sum + beta * o;
      }
  return out;
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::vector<float> v;
  for (double x : ordo::test::random_values(static_cast<int64_t>(n), seed)) v.push_back(static_cast<float>(x));
  return v;
}

size_t operand_size(int rows_or_cols, int ld, int batch, long long stride) {
  return static_cast<size_t>((batch - 1) * stride + static_cast<long long>(ld) * rows_or_cols);
}

}  // namespace

TEST_CASE("emulator: cublasGemmStridedBatchedEx computes what cuBLAS documents", "[emulator]") {
  cublasHandle_t handle;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  // Padded leading dimensions, every transpose pair, A shared by the batches (stride 0).
  for (const bool ta : {false, true})
    for (const bool tb : {false, true})
      for (const bool tf32 : {false, true}) {
        GemmCase g{ta, tb, 5, 3, 7, 0, 0, 6, 2, 0, 0, 0};
        g.lda = (ta ? g.k : g.m) + 1;
        g.ldb = (tb ? g.n : g.k) + 2;
        g.sb = static_cast<long long>(g.ldb) * (tb ? g.k : g.n) + 3;
        g.sc = static_cast<long long>(g.ldc) * g.n;
        const auto a = random_floats(operand_size(ta ? g.m : g.k, g.lda, 1, 0), 1);
        const auto b = random_floats(operand_size(tb ? g.k : g.n, g.ldb, g.batch, g.sb), 2);
        const auto c = random_floats(operand_size(g.n, g.ldc, g.batch, g.sc), 3);
        const float alpha = 0.75f, beta = -0.5f;
        float* da = device_array(a);
        float* db = device_array(b);
        float* dc = device_array(c);
        REQUIRE(cublasGemmStridedBatchedEx(handle, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                           g.m, g.n, g.k, &alpha, da, CUDA_R_32F, g.lda, g.sa, db, CUDA_R_32F,
                                           g.ldb, g.sb, &beta, dc, CUDA_R_32F, g.ldc, g.sc, g.batch,
                                           tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
        const std::vector<float> got = host_array(dc, c.size());
        const std::vector<double> want = naive_gemm(g, a, b, c, alpha, beta, tf32);
        INFO("ta " << ta << " tb " << tb << " tf32 " << tf32);
        // f32 sums of 7 products of values below 1 (plus beta c): a few ulps of 8.
        for (size_t e = 0; e < got.size(); ++e) CHECK(std::abs(got[e] - want[e]) <= 8 * 8 * 0x1p-24);
        cudaFree(da);
        cudaFree(db);
        cudaFree(dc);
      }
  cublasDestroy(handle);
}

TEST_CASE("emulator: TF32 compute rounds the inputs to 10 mantissa bits, ties away from zero", "[emulator]") {
  cublasHandle_t handle;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  // 1 + 2^-12 is a quarter of TF32's ulp (2^-10) above 1: rounds to 1.
  // 1 + 2^-11 is half an ulp: a tie, rounded away from zero to 1 + 2^-10.
  const std::vector<float> a = {1.0f + 0x1p-12f, 1.0f + 0x1p-11f};
  const std::vector<float> b = {1.0f, 1.0f};
  float* da = device_array(a);
  float* db = device_array(b);
  float* dc = device_array(std::vector<float>(2, 0.0f));
  const float alpha = 1.0f, beta = 0.0f;
  auto product = [&](cublasComputeType_t compute) {
    // Two 1x1x1 products in a batch of 2 (strides 1).
    REQUIRE(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, da, CUDA_R_32F, 1, 1, db,
                                       CUDA_R_32F, 1, 1, &beta, dc, CUDA_R_32F, 1, 1, 2, compute,
                                       CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    return host_array(dc, 2);
  };
  CHECK(product(CUBLAS_COMPUTE_32F) == a);
  CHECK(product(CUBLAS_COMPUTE_32F_FAST_TF32) == std::vector<float>{1.0f, 1.0f + 0x1p-10f});
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cublasDestroy(handle);
}

TEST_CASE("emulator: cublasGemmStridedBatchedEx validates its arguments as cuBLAS does", "[emulator]") {
  cublasHandle_t handle;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  float* d = device_array(std::vector<float>(64, 1.0f));
  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&](cublasOperation_t ta, int m, int n, int k, int lda, int ldb, int ldc, cudaDataType type) {
    return cublasGemmStridedBatchedEx(handle, ta, CUBLAS_OP_N, m, n, k, &one, d, type, lda, 0, d, CUDA_R_32F, ldb,
                                      0, &zero, d, CUDA_R_32F, ldc, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  CHECK(gemm(CUBLAS_OP_N, 2, 2, 2, 2, 2, 2, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
  CHECK(gemm(CUBLAS_OP_N, 3, 2, 2, 2, 2, 3, CUDA_R_32F) == CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  CHECK(gemm(CUBLAS_OP_T, 3, 2, 4, 3, 4, 3, CUDA_R_32F) == CUBLAS_STATUS_INVALID_VALUE);  // lda < k (transposed)
  CHECK(gemm(CUBLAS_OP_N, 2, 2, 4, 2, 3, 2, CUDA_R_32F) == CUBLAS_STATUS_INVALID_VALUE);  // ldb < k
  CHECK(gemm(CUBLAS_OP_N, 2, 2, 2, 2, 2, 1, CUDA_R_32F) == CUBLAS_STATUS_INVALID_VALUE);  // ldc < m
  CHECK(gemm(CUBLAS_OP_N, -1, 2, 2, 2, 2, 2, CUDA_R_32F) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(gemm(CUBLAS_OP_N, 2, 2, 2, 2, 2, 2, CUDA_R_64F) == CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(cublasGemmStridedBatchedEx(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, d, CUDA_R_32F, 1, 0, d,
                                   CUDA_R_32F, 1, 0, &zero, d, CUDA_R_32F, 1, 0, 1, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_INITIALIZED);
  cudaFree(d);
  cublasDestroy(handle);
}

TEST_CASE("emulator: a GEMM operand reaching past its allocation is caught before it is read", "[emulator]") {
  const ChildResult r = run_in_child([] {
    cublasHandle_t handle;
    cublasCreate(&handle);
    float* a = device_array(std::vector<float>(4, 1.0f));
    float* b = device_array(std::vector<float>(3, 1.0f));  // a 2x2 B needs 4
    float* c = device_array(std::vector<float>(4, 0.0f));
    const float one = 1.0f, zero = 0.0f;
    cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, a, CUDA_R_32F, 2, 0, b, CUDA_R_32F,
                               2, 0, &zero, c, CUDA_R_32F, 2, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  });
  CHECK(r.killed_by_segv);
  CHECK_THAT(r.stderr_text, Contains("cublasGemmStridedBatchedEx (matrix B) would touch 16 bytes"));
}

// ---- the cub stand-in ---------------------------------------------------------------------

TEST_CASE("emulator: cub's radix sort is stable and sorts only the bits asked for", "[emulator]") {
  // Sorted on bits [0, 4) only: the low nibbles are 3 2 1 1 2, and equal
  // nibbles keep their input order.
  const std::vector<uint32_t> keys = {0x13, 0x02, 0x21, 0x01, 0x12};
  const std::vector<int32_t> values = {0, 1, 2, 3, 4};
  uint32_t* keys_in = device_array(keys);
  uint32_t* keys_out = device_array(std::vector<uint32_t>(5, 0));
  int32_t* values_in = device_array(values);
  int32_t* values_out = device_array(std::vector<int32_t>(5, 0));
  size_t temp_bytes = 0;
  REQUIRE(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in, keys_out, values_in, values_out, 5, 0, 4) ==
          cudaSuccess);
  REQUIRE(temp_bytes > 0);
  void* temp = nullptr;
  REQUIRE(cudaMalloc(&temp, temp_bytes) == cudaSuccess);

  SECTION("the bit range") {
    REQUIRE(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, 5, 0, 4) ==
            cudaSuccess);
    CHECK(host_array(keys_out, 5) == std::vector<uint32_t>{0x21, 0x01, 0x02, 0x12, 0x13});
    CHECK(host_array(values_out, 5) == std::vector<int32_t>{2, 3, 1, 4, 0});
  }
  SECTION("temp storage smaller than the first call asked for is refused") {
    size_t too_small = temp_bytes - 1;
    CHECK(cub::DeviceRadixSort::SortPairs(temp, too_small, keys_in, keys_out, values_in, values_out, 5, 0, 4) ==
          cudaErrorInvalidValue);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  }
  SECTION("a bit range outside the key") {
    CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, 5, 0, 33) ==
          cudaErrorInvalidValue);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  }
  for (void* p : {static_cast<void*>(keys_in), static_cast<void*>(keys_out), static_cast<void*>(values_in),
                  static_cast<void*>(values_out), temp})
    cudaFree(p);
}

TEST_CASE("emulator: cub's radix sort matches std::stable_sort on many 64-bit keys", "[emulator]") {
  constexpr int kCount = 3001, kEndBit = 19;
  std::mt19937_64 gen(11);
  std::vector<uint64_t> keys(kCount);
  std::vector<int64_t> positions(kCount);
  for (int i = 0; i < kCount; ++i) {
    keys[static_cast<size_t>(i)] = gen();  // bits above kEndBit must not order anything
    positions[static_cast<size_t>(i)] = i;
  }
  const uint64_t mask = (uint64_t(1) << kEndBit) - 1;
  std::vector<int64_t> expected = positions;
  std::stable_sort(expected.begin(), expected.end(), [&](int64_t x, int64_t y) {
    return (keys[static_cast<size_t>(x)] & mask) < (keys[static_cast<size_t>(y)] & mask);
  });
  uint64_t* keys_in = device_array(keys);
  uint64_t* keys_out = device_array(std::vector<uint64_t>(kCount, 0));
  int64_t* values_in = device_array(positions);
  int64_t* values_out = device_array(std::vector<int64_t>(kCount, 0));
  size_t temp_bytes = 0;
  REQUIRE(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in, keys_out, values_in, values_out, kCount, 0,
                                          kEndBit) == cudaSuccess);
  void* temp = nullptr;
  REQUIRE(cudaMalloc(&temp, temp_bytes) == cudaSuccess);
  REQUIRE(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, kCount, 0,
                                          kEndBit) == cudaSuccess);
  CHECK(host_array(values_out, kCount) == expected);
  std::vector<uint64_t> expected_keys;
  for (int64_t p : expected) expected_keys.push_back(keys[static_cast<size_t>(p)]);
  CHECK(host_array(keys_out, kCount) == expected_keys);
  for (void* p : {static_cast<void*>(keys_in), static_cast<void*>(keys_out), static_cast<void*>(values_in),
                  static_cast<void*>(values_out), temp})
    cudaFree(p);
}

// ---- warp matrix operations (include/mma.h) -----------------------------------------------

namespace wmma = nvcuda::wmma;

struct TileOperands {
  alignas(32) __nv_bfloat16 a[16][16];
  alignas(32) __nv_bfloat16 bt[16][16];  // b transposed: b read column-major
  alignas(32) float c[16][16];
};

// c = a b for one 16 x 16 x 16 tile: lanes 0-15 copy a row of a and of b's
// transpose each into shared memory (kSyncwarp: then __syncwarp, as the
// hardware requires before the warp reads what other lanes wrote), the warp
// multiplies on "tensor cores" and stores c, and every lane copies out its
// elements. `ldm`: the operands' leading dimension as given to the loads.
template <bool kSyncwarp>
__global__ void tile_product(float* c, const float* a, const float* bt, unsigned ldm) {
  __shared__ TileOperands s;
  const int lane = static_cast<int>(threadIdx.x);
  if (lane < 16)
    for (int x = 0; x < 16; ++x) {
      s.a[lane][x] = __ushort_as_bfloat16(ordo::cuda::bf16_bits(a[lane * 16 + x]));
      s.bt[lane][x] = __ushort_as_bfloat16(ordo::cuda::bf16_bits(bt[lane * 16 + x]));
    }
  if (kSyncwarp) __syncwarp();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, &s.a[0][0], ldm);
  wmma::load_matrix_sync(fb, &s.bt[0][0], ldm);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(&s.c[0][0], fc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int e = lane; e < 256; e += 32) c[e] = s.c[e / 16][e % 16];
}

// As tile_product<true>, but only lanes 0-15 take part in the matrix operations.
__global__ void tile_product_half_warp(float* c, const float* a) {
  __shared__ TileOperands s;
  const int lane = static_cast<int>(threadIdx.x);
  for (int e = lane; e < 256; e += 32) s.a[e / 16][e % 16] = __ushort_as_bfloat16(ordo::cuda::bf16_bits(a[e]));
  __syncwarp();
  if (lane >= 16) return;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::load_matrix_sync(fa, &s.a[0][0], 16);
  c[lane] = 0;
}

TEST_CASE("emulator: wmma's stand-in multiplies tiles, and catches a missing __syncwarp, a half warp and a bad ldm",
          "[emulator]") {
  // Small integers: every product and sum is exact in bf16 and f32.
  std::vector<float> a(256), bt(256), expected(256, 0.0f);
  for (int e = 0; e < 256; ++e) a[e] = static_cast<float>((e * 7) % 11 - 5), bt[e] = static_cast<float>((e * 5) % 9 - 4);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n)
      for (int k = 0; k < 16; ++k) expected[r * 16 + n] += a[r * 16 + k] * bt[n * 16 + k];
  float* da = device_array(a);
  float* dbt = device_array(bt);
  float* dc = device_array(std::vector<float>(256, 0.0f));
  for (const std::string schedule : {"forward", "greedy-warp"}) {
    ScheduleGuard guard(schedule);
    INFO(schedule);
    ORDO_LAUNCH(tile_product<true>, 1, 32, 0, nullptr, dc, da, dbt, 16u);
    REQUIRE(launch_error() == "");
    CHECK(host_array(dc, 256) == expected);
  }
  {
    // Without the __syncwarp the fibers happen to run the copies first: the
    // product is right with the checks off, as it often is on a GPU.
    ChecksGuard off(0);
    ORDO_LAUNCH(tile_product<false>, 1, 32, 0, nullptr, dc, da, dbt, 16u);
    REQUIRE(launch_error() == "");
    CHECK(host_array(dc, 256) == expected);
  }
  ChecksGuard race(emu::Check::race);
  ORDO_LAUNCH(tile_product<false>, 1, 32, 0, nullptr, dc, da, dbt, 16u);
  std::string error = launch_error();
  CHECK_THAT(error, Contains("shared-memory race (read after write) in kernel 'tile_product<false>'"));
  CHECK_THAT(error, Contains("which thread ("));
  ORDO_LAUNCH(tile_product<true>, 1, 32, 0, nullptr, dc, da, dbt, 12u);  // 24 bytes: not a multiple of 16
  CHECK_THAT(launch_error(), Contains("load_matrix_sync: ldm 12 is not a multiple of 16 bytes"));
  ORDO_LAUNCH(tile_product_half_warp, 1, 32, 0, nullptr, dc, da);
  error = launch_error();
  CHECK_THAT(error, Contains("kernel 'tile_product_half_warp'"));
  CHECK_THAT(error, Contains("wmma operation"));
  cudaFree(da);
  cudaFree(dbt);
  cudaFree(dc);
}

TEST_CASE("emulator: the device reports itself as emulated", "[emulator]") {
  REQUIRE(ordo::cuda_available());
  CHECK_THAT(ordo::cuda_device_description(0), Contains("emulated on the CPU"));
}

#endif  // ORDO_CUDA_EMULATED
