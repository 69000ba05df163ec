// The emulated GPU's checks (race, conflict, initcheck, bounds, poison),
// each shown on a planted bug: a kernel written here with the bug a sceptical
// reviewer planted in ordo's own kernels, which runs without complaint (and
// often with the right result) with the checks off, and fails the launch,
// naming the kernel and the threads, with them on. Compiled with the
// emulator's access hooks, as tensor/cuda/*.cu are; other builds compile
// this file to nothing.
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

#endif  // ORDO_CUDA_EMULATED
