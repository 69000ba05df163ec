// Stand-in for CUDA's cuda_runtime.h under the emulator (tensor/cuda/emulator/
// emulator.h): the runtime API ordo calls, the vector types it uses, and the
// device side — CUDA's keywords as plain C++, the built-in variables as the
// running fiber's state, __syncthreads and the warp operations as the
// emulator's barriers, atomics as real atomics.
#pragma once

#include <math.h>

#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tensor/cuda/emulator/emulator.h"

// ---- keywords --------------------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __restrict__ __restrict
#define __launch_bounds__(...)
// Blocks run one at a time, so a static array is each block's shared memory
// (uninitialised on a GPU; ordo's kernels never read it before writing).
#define __shared__ static

// ---- vector types ----------------------------------------------------------------------

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
  operator ::ordo::cuda::emulator::Dim() const { return {x, y, z}; }
};
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };

// ---- built-in variables ----------------------------------------------------------------------

#define threadIdx (::ordo::cuda::emulator::current_thread->thread_idx)
#define blockIdx (::ordo::cuda::emulator::current_thread->block_idx)
#define blockDim (::ordo::cuda::emulator::current_thread->block_dim)
#define gridDim (::ordo::cuda::emulator::current_thread->grid_dim)
constexpr int warpSize = 32;

// ---- the runtime API ---------------------------------------------------------------------------

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchFailure = 719,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
};
using cudaError = cudaError_t;

struct CUstream_st;
using cudaStream_t = CUstream_st*;
constexpr unsigned cudaStreamDefault = 0x00;
constexpr unsigned cudaStreamNonBlocking = 0x01;

// Events order one stream after work queued on another (parallel/nccl_group.cpp's
// communication stream). Streams run everything at once here, so an event is
// complete when recorded; the calls check their handles and flags.
struct CUevent_st;
using cudaEvent_t = CUevent_st*;
constexpr unsigned cudaEventDefault = 0x00;
constexpr unsigned cudaEventDisableTiming = 0x02;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxBlockDimY = 3,
  cudaDevAttrMaxBlockDimZ = 4,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
};

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int major;
  int minor;
  int multiProcessorCount;
  size_t sharedMemPerBlockOptin;
  int maxThreadsPerMultiProcessor;
};

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize();

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

cudaError_t cudaMalloc(void** ptr, size_t bytes);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                                cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* ptr, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream = nullptr);

// Stream capture and graphs (tensor/cuda/emulator/graphs.cpp): a capturing
// stream records kernels, cuBLAS products, cub sorts, device copies and
// sets; what capture forbids (a synchronisation, cudaMalloc or cudaFree, a
// copy to or from host memory) is refused with
// cudaErrorStreamCaptureUnsupported and invalidates the capture, whose
// cudaStreamEndCapture then fails with cudaErrorStreamCaptureInvalidated. A
// graph launch runs the recorded work in order.
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2,
};
struct CUgraph_st;
using cudaGraph_t = CUgraph_st*;
struct CUgraphExec_st;
using cudaGraphExec_t = CUgraphExec_st*;

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);

cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorName(cudaError_t error);
const char* cudaGetErrorString(cudaError_t error);

// ---- block and warp synchronisation ---------------------------------------------------------------

inline void __syncthreads() { ::ordo::cuda::emulator::sync_threads(); }
inline void __threadfence() { ::ordo::cuda::emulator::thread_fence(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::ordo::cuda::emulator::warp_exchange(::ordo::cuda::emulator::WarpOp::sync, mask, 0, 0, warpSize);
}

namespace ordo::cuda::emulator {
// A value of up to 8 bytes through warp_exchange, bit for bit.
template <class T>
T shuffle(WarpOp op, unsigned mask, T var, int operand, int width) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "a shuffle moves up to 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &var, sizeof(T));
  bits = warp_exchange(op, mask, bits, operand, width);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}
}  // namespace ordo::cuda::emulator

template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize) {
  return ::ordo::cuda::emulator::shuffle(::ordo::cuda::emulator::WarpOp::shfl, mask, var, src_lane, width);
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ::ordo::cuda::emulator::shuffle(::ordo::cuda::emulator::WarpOp::shfl_up, mask, var,
                                         static_cast<int>(delta), width);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ::ordo::cuda::emulator::shuffle(::ordo::cuda::emulator::WarpOp::shfl_down, mask, var,
                                         static_cast<int>(delta), width);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize) {
  return ::ordo::cuda::emulator::shuffle(::ordo::cuda::emulator::WarpOp::shfl_xor, mask, var, lane_mask, width);
}
template <class T>
unsigned __match_any_sync(unsigned mask, T value) {
  static_assert(sizeof(T) <= 8 && std::is_arithmetic<T>::value, "__match_any_sync compares 32- or 64-bit values");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return static_cast<unsigned>(
      ::ordo::cuda::emulator::warp_exchange(::ordo::cuda::emulator::WarpOp::match_any, mask, bits, 0, warpSize));
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return static_cast<unsigned>(::ordo::cuda::emulator::warp_exchange(::ordo::cuda::emulator::WarpOp::ballot, mask,
                                                                     predicate != 0, 0, warpSize));
}

// ---- integer and bit intrinsics --------------------------------------------------------------------

inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }

inline unsigned __float_as_uint(float x) { unsigned u; std::memcpy(&u, &x, 4); return u; }
inline float __uint_as_float(unsigned u) { float x; std::memcpy(&x, &u, 4); return x; }
inline int __float_as_int(float x) { int i; std::memcpy(&i, &x, 4); return i; }
inline float __int_as_float(int i) { float x; std::memcpy(&x, &i, 4); return x; }

// CUDA's min and max for device code (the global ones, not std::).
#define ORDO_EMULATOR_MIN_MAX(T)                        \
  inline T min(T a, T b) { return b < a ? b : a; }     \
  inline T max(T a, T b) { return a < b ? b : a; }
ORDO_EMULATOR_MIN_MAX(int)
ORDO_EMULATOR_MIN_MAX(unsigned)
ORDO_EMULATOR_MIN_MAX(long)
ORDO_EMULATOR_MIN_MAX(unsigned long)
ORDO_EMULATOR_MIN_MAX(long long)
ORDO_EMULATOR_MIN_MAX(unsigned long long)
#undef ORDO_EMULATOR_MIN_MAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

// ---- atomics (real ones: the host's) --------------------------------------------------------------------

template <class T>
T atomicCAS(T* address, T compare, T value) {
  static_assert(std::is_integral<T>::value, "atomicCAS takes integers");
  __atomic_compare_exchange_n(address, &compare, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return compare;  // the old value either way
}
template <class T>
T atomicExch(T* address, T value) {
  return __atomic_exchange_n(address, value, __ATOMIC_SEQ_CST);
}
template <class T>
T atomicAdd(T* address, T value) {
  if constexpr (std::is_integral<T>::value) {
    return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
  } else {
    T old, sum;
    __atomic_load(address, &old, __ATOMIC_SEQ_CST);
    do {
      sum = old + value;
    } while (!__atomic_compare_exchange(address, &old, &sum, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
  }
}
template <class T>
T atomicMax(T* address, T value) {
  T old = __atomic_load_n(address, __ATOMIC_SEQ_CST);
  while (old < value && !__atomic_compare_exchange_n(address, &old, value, false, __ATOMIC_SEQ_CST,
                                                     __ATOMIC_SEQ_CST)) {
  }
  return old;
}
template <class T>
T atomicMin(T* address, T value) {
  T old = __atomic_load_n(address, __ATOMIC_SEQ_CST);
  while (value < old && !__atomic_compare_exchange_n(address, &old, value, false, __ATOMIC_SEQ_CST,
                                                     __ATOMIC_SEQ_CST)) {
  }
  return old;
}
