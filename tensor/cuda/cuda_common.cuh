// Shared machinery of the CUDA kernels (private to tensor/cuda): error
// checks, the per-device context (stream, cuBLAS handle, index-error flag),
// launch shapes, and the warp/block reductions every reducing kernel uses.
//
// Every ordo kernel on a device runs on that device's one ordo stream, in the
// order the host issued it. That single ordering is what makes the caching
// allocator's reuse safe (see runtime.cu) and what lets a kernel read what the
// previous one wrote without any event or sync.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tensor/backend.h"
#include "tensor/device_runtime.h"
#include "tensor/indexer.h"

namespace ordo::cuda {

// ---- error checks --------------------------------------------------------------

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);

}  // namespace ordo::cuda

// Throws ordo::Error naming the call, file, line and CUDA's error string.
#define ORDO_CUDA_CHECK(call)                                                   \
  do {                                                                          \
    cudaError_t ordo_cuda_err_ = (call);                                        \
    if (ordo_cuda_err_ != cudaSuccess)                                          \
      ::ordo::cuda::throw_cuda_error(ordo_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define ORDO_CUBLAS_CHECK(call)                                                      \
  do {                                                                               \
    cublasStatus_t ordo_cublas_status_ = (call);                                     \
    if (ordo_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                \
      ::ordo::cuda::throw_cublas_error(ordo_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After every launch: reports a bad launch configuration at the launch site.
#define ORDO_CUDA_CHECK_LAUNCH() ORDO_CUDA_CHECK(cudaGetLastError())

// ---- launches --------------------------------------------------------------------
//
// ORDO_LAUNCH(kernel, grid, block, shared_bytes, stream, args...) is
// kernel<<<grid, block, shared_bytes, stream>>>(args...) under nvcc, and the
// emulator's launch under g++ (ORDO_CUDA=emulate, tensor/cuda/emulator/): the
// one place the kernels' sources differ between the two. Either way it is
// followed by after_launch, which counts it and, with ORDO_CUDA_SYNC=1,
// synchronises and names the kernel that failed.
// ORDO_UNROLL_BY(n) before a loop asks nvcc to unroll it n times (n an
// integral constant expression, a template's parameter too): a loop whose
// constant trip count it unrolls whole indexes a per-thread array at
// compile-time positions, so the array stays in registers (indexed at run
// time it lives in local memory). Nothing under g++, where the emulator's
// loops run as written.
#if defined(__CUDACC__)
#define ORDO_PRAGMA(x) _Pragma(#x)
#define ORDO_UNROLL_BY(n) ORDO_PRAGMA(unroll n)
#else
#define ORDO_UNROLL_BY(n)
#endif

// The comma between a kernel's template arguments inside ORDO_LAUNCH's first
// argument (which a plain comma would split): kernel<D ORDO_COMMA true>.
#define ORDO_COMMA ,

#if defined(__CUDACC__)
#define ORDO_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)  \
  do {                                                              \
    ::ordo::cuda::before_launch(stream);                            \
    kernel<<<grid, block, shared_bytes, stream>>>(__VA_ARGS__);     \
    ::ordo::cuda::after_launch(#kernel, stream);                    \
  } while (0)
#else
#define ORDO_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                                      \
  do {                                                                                                  \
    ::ordo::cuda::before_launch(stream);                                                                \
    ::ordo::cuda::emulator::launch(#kernel, stream, dim3(grid), dim3(block), shared_bytes,                \
                                   [](auto... ordo_args) { kernel(ordo_args...); }, __VA_ARGS__);         \
    ::ordo::cuda::after_launch(#kernel, stream);                                                        \
  } while (0)
#endif

namespace ordo::cuda {
// Counts the launch (device_counters) and, with ORDO_CUDA_SYNC=1 in the
// environment, waits for the kernel just launched and throws ordo::Error naming it if it (or its launch) failed.
// Otherwise nothing (errors then show at the next check or sync).
void after_launch(const char* kernel, cudaStream_t stream);
// While a KernelTiming is open (tensor/device_runtime.h): an event on `stream`
// before the work, and after it one that closes the span under `name` (a
// literal: kept by address). after_launch closes a kernel's; a library call
// (cuBLAS, cub) is bracketed by before_launch and after_library_call.
void before_launch(cudaStream_t stream);
void after_library_call(const char* name, cudaStream_t stream);
// after_library_call for a cub radix sort, counted too (DeviceCounters::sorts).
void after_sort(const char* name, cudaStream_t stream);
}  // namespace ordo::cuda

namespace ordo::cuda {

// ---- the per-device context ------------------------------------------------------

// Which kernel met an out-of-range index (the value stored in the device flag).
enum class IndexErrorSite : int {
  none = 0,
  index_select = 1,
  index_add = 2,
  gather = 3,
  scatter_add = 4,
  cross_entropy = 5,
  relative = 6,  // relative_gather / relative_scatter / relative_product (tensor/cuda/relative.cu)
  embedding_sum = 7,
  scatter_rows = 8,  // also a row list that is not ascending and distinct
};
const char* index_error_site_name(int site);

struct DeviceContext {
  int index = 0;
  cudaStream_t stream = nullptr;
  // Device memory, one int: 0, or the IndexErrorSite of the first kernel that
  // met an out-of-range index since the last check. Kernels never write out
  // of bounds; they set this and skip the element. synchronize() and the
  // device-to-host copy read it, clear it and throw.
  int* index_error = nullptr;
  // Device memory, kGroupCounters unsigned ints, all 0 between launches: the
  // counters of last_of_group (below), by which the last block of a group
  // of partial sums finds that it is the one to add them up.
  unsigned* group_counters = nullptr;
  int sm_count = 1;
};
constexpr int64_t kGroupCounters = 2048;

// Makes `device` current for the calling host thread and returns its context,
// created on first use. Throws ordo::Error for a device that does not exist.
DeviceContext& context(Device device);
inline DeviceContext& context(const Tensor& t) { return context(t.device()); }

// The device's cuBLAS handle, bound to its stream, created on the first matrix product.
cublasHandle_t cublas_handle(DeviceContext& ctx);

// Scratch memory for one kernel sequence (cub temp storage, partial sums),
// from the caching allocator. Keep the Tensor alive until the last kernel that
// uses it has been *issued*; the stream ordering does the rest.
inline Tensor workspace(Device device, size_t bytes) {
  return Tensor::empty({static_cast<int64_t>(std::max<size_t>(bytes, 1))}, DType::u8, device);
}

// ---- dtype dispatch ----------------------------------------------------------------
//
// The CUDA backend computes in f32 (the op layer keeps f64 on the CPU); i64
// is accepted where kernels.inc says so (binary, where, gather).

inline void require_f32(DType dtype, const char* kernel) {
  ORDO_CHECK(dtype == DType::f32, kernel, " on CUDA: dtype ", dtype_name(dtype),
             " is not supported (f32 only; f64 runs on the CPU)");
}

template <class Fn>
void dispatch_f32(DType dtype, const char* kernel, Fn&& fn) {
  require_f32(dtype, kernel);
  fn(float{});
}

template <class Fn>
void dispatch_f32_i64(DType dtype, const char* kernel, Fn&& fn) {
  switch (dtype) {
    case DType::f32: return fn(float{});
    case DType::i64: return fn(int64_t{});
    default:
      throw Error(detail::cat(kernel, " on CUDA: dtype ", dtype_name(dtype),
                              " is not supported (f32 or i64)"));
  }
}

// The device address of a Philox stream's base (nullptr: none), which a
// kernel adds to the stream's offset when it runs.
inline const int64_t* stream_base(const PhiloxStream& s) {
  return s.base.defined() ? s.base.data<int64_t>() : nullptr;
}

// f32_to_bf16 of tensor/dtype.h on the device: round to nearest even, a NaN
// kept quiet. The one conversion every kernel that writes bf16 uses.
__device__ __forceinline__ uint16_t bf16_bits(float f) {
  uint32_t bits = __float_as_uint(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// A bf16's value as f32 (exact: bf16 is f32's top half).
__device__ __forceinline__ float bf16_value(uint16_t h) { return __uint_as_float(static_cast<uint32_t>(h) << 16); }
// An element as f32: a float as it is, a bf16 (its bits) widened.
__device__ __forceinline__ float f32_value(float v) { return v; }
__device__ __forceinline__ float f32_value(uint16_t h) { return bf16_value(h); }

// ---- 16-byte vector access ---------------------------------------------------------

// 16 bytes of T, moved with one 128-bit load or store (ld.global.v4): the
// widest access a thread can make, and what memory-bound kernels need to get
// near the bandwidth limit. Pointers must be 16-byte aligned.
template <class T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];

  __device__ __forceinline__ static Pack load(const T* p) {
    Pack r;
    *reinterpret_cast<int4*>(r.v) = *reinterpret_cast<const int4*>(p);
    return r;
  }
  __device__ __forceinline__ void store(T* p) const {
    *reinterpret_cast<int4*>(p) = *reinterpret_cast<const int4*>(v);
  }
};

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// ---- launch shapes ---------------------------------------------------------------

constexpr int kThreads = 256;  // threads per block of the elementwise kernels

// Blocks for a grid-stride loop over n items with `threads` per block: enough
// to cover n, capped at 32 blocks per SM (several full waves; the loop does the rest).
inline unsigned grid_for(int64_t n, int threads, const DeviceContext& ctx) {
  int64_t blocks = (n + threads - 1) / threads;
  int64_t cap = static_cast<int64_t>(ctx.sm_count) * 32;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(blocks, cap)));
}

// Threads for a kernel that gives one block to one row of n elements: about
// four elements per thread, a multiple of the warp size, between 32 and 1024.
inline int threads_for_row(int64_t n) {
  int64_t t = (n + 3) / 4;
  t = (t + 31) / 32 * 32;
  return static_cast<int>(std::min<int64_t>(1024, std::max<int64_t>(32, t)));
}

// Grid of a one-block-per-row kernel: one block per row up to the 2^31 - 1
// limit of gridDim.x; the kernel loops over rows with stride gridDim.x.
inline unsigned grid_for_rows(int64_t rows) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(rows, 0x7fffffff)));
}

__device__ __forceinline__ int64_t global_thread_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_thread_count() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// The first position p in sorted keys[0, n) with keys[p] >= key.
__device__ __forceinline__ int64_t first_at_least(const uint32_t* keys, int64_t n, uint32_t key) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// ix.offsets(linear, out) with 32-bit division, several times cheaper than
// 64-bit division on the GPU, for shapes of at most 2^32 - 1 elements (every
// size then fits 32 bits too).
template <int N>
__device__ __forceinline__ void offsets_u32(const Indexer<N>& ix, uint32_t linear, int64_t (&out)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) out[k] = 0;
  for (int d = ix.ndim - 1; d >= 0; --d) {
    const uint32_t size = static_cast<uint32_t>(ix.size[d]);
    const uint32_t i = linear % size;
    linear /= size;
#pragma unroll
    for (int k = 0; k < N; ++k) out[k] += static_cast<int64_t>(i) * ix.stride[k][d];
  }
}
constexpr int64_t kNarrowIndexLimit = 0xffffffffLL;

// Records an out-of-range index; the first site to arrive is kept.
__device__ __forceinline__ void report_index_error(int* flag, IndexErrorSite site) {
  atomicCAS(flag, 0, static_cast<int>(site));
}

// ---- deterministic warp and block reductions ------------------------------------
//
// Both reduce in a fixed tree order that depends only on blockDim, never on
// timing, so the same inputs give bit-identical results on every run.

template <class T>
__device__ __forceinline__ T shuffle_down(T v, int offset) {
  return __shfl_down_sync(0xffffffffu, v, offset);
}
template <class T>
__device__ __forceinline__ T shuffle_broadcast(T v, int lane) {
  return __shfl_sync(0xffffffffu, v, lane);
}

// Lane 0 ends with combine over the warp's 32 values (the other lanes hold
// partial results). The whole warp must be active.
template <class T, class Combine>
__device__ __forceinline__ T warp_reduce(T v, Combine combine) {
  for (int offset = 16; offset > 0; offset /= 2) v = combine(v, shuffle_down(v, offset));
  return v;
}

// Every thread of the block gets combine over all the block's values.
// blockDim.x must be a multiple of 32 (at most 1024), blockDim.y == 1, and
// every thread of the block must call it (it synchronises the block).
// Calling it several times in a row is safe: it synchronises before reusing
// its shared array.
template <class T, class Combine>
__device__ T block_reduce(T v, Combine combine, T identity) {
  __shared__ T warp_results[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_reduce(v, combine);
  __syncthreads();  // a previous call's readers are done with warp_results
  if (lane == 0) warp_results[warp] = v;
  __syncthreads();
  // Every warp reduces the per-warp results the same way, so all threads
  // agree without another round through shared memory.
  v = lane < warps ? warp_results[lane] : identity;
  v = warp_reduce(v, combine);
  return shuffle_broadcast(v, 0);
}

// Partial sums added up in the launch that makes them (threadFenceReduction's
// hand-off): a block that has written its part of `group` (one of `parts`)
// counts it in counters[group] (DeviceContext::group_counters); the block
// whose count completes the group gets true, resets the counter to 0 for the
// next launch, and may then read every part (the writers fenced theirs before
// counting). The group's sum is then the same as a second kernel's over the
// parts in order: one launch instead of two. Every thread of the block must
// call it; the result is the same for all of them. With parts > 1, group <
// kGroupCounters.
__device__ __forceinline__ bool last_of_group(unsigned* counters, int64_t group, int64_t parts) {
  if (parts == 1) return true;  // the one part is this block's own (no counter: any number of groups)
  __shared__ bool last;
  __threadfence();  // this thread's part before the count
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    last = atomicAdd(&counters[group], 1u) == static_cast<unsigned>(parts - 1);
    if (last) atomicExch(&counters[group], 0u);
  }
  __syncthreads();
  const bool result = last;
  __syncthreads();  // `last` is read by all before the next call writes it
  if (result) __threadfence();  // the others' parts after the count
  return result;
}

struct SumCombine {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};

}  // namespace ordo::cuda
