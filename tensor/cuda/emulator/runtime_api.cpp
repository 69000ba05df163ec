// The emulator's CUDA runtime API (the stand-in cuda_runtime.h): one device
// with an H100's limits, streams that run everything at once in issue order
// (or record it while captured: graphs.cpp), and copies and sets that check
// their device side lies inside one allocation before touching it inside a
// DeviceSection.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "tensor/cuda/emulator/emulator.h"

namespace emu = ::ordo::cuda::emulator;

namespace {

constexpr size_t kTotalMemory = size_t(80) << 30;

thread_local int current_device = 0;

cudaError_t fail(cudaError_t error, const std::string& detail) {
  emu::set_launch_error(error, detail);
  return error;
}

bool valid_device(int device) { return device == 0; }

// The device side of a copy or set must lie inside one allocation, and
// inside live tensors (the bounds check).
cudaError_t check_device_side(const char* call, const char* which, const void* ptr, size_t bytes) {
  char detail[256];
  if (!emu::is_device_range(ptr, bytes)) {
    std::snprintf(detail, sizeof detail, "%s: the %s range of %zu bytes at %p is not inside one device allocation",
                  call, which, bytes, ptr);
    return fail(cudaErrorInvalidValue, detail);
  }
  const std::string outside = emu::bounds_violation(ptr, bytes);
  if (outside.empty()) return cudaSuccess;
  std::snprintf(detail, sizeof detail, "%s: the %s range of %zu bytes at %p leaves its tensor: ", call, which, bytes,
                ptr);
  return fail(cudaErrorInvalidValue, detail + outside);
}

}  // namespace

struct CUstream_st {
  unsigned flags;
};

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (!valid_device(device)) return fail(cudaErrorInvalidDevice, "cudaSetDevice(" + std::to_string(device) + ")");
  current_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = current_device;
  return cudaSuccess;
}

// An H100 SXM's figures, so that launch shapes (sm_count * 32 blocks) are
// the ones a real run makes.
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!valid_device(device)) return fail(cudaErrorInvalidDevice, "cudaGetDeviceProperties");
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "NVIDIA H100 80GB HBM3, emulated on the CPU");
  prop->totalGlobalMem = kTotalMemory;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->sharedMemPerBlockOptin = 227 * 1024;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  prop->maxThreadsPerMultiProcessor = 2048;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  cudaDeviceProp prop;
  const cudaError_t err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess) return err;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = prop.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = prop.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = prop.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = prop.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = prop.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *value = prop.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = prop.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = static_cast<int>(prop.sharedMemPerBlock); break;
    case cudaDevAttrWarpSize: *value = prop.warpSize; break;
    case cudaDevAttrMultiProcessorCount: *value = prop.multiProcessorCount; break;
    case cudaDevAttrComputeCapabilityMajor: *value = prop.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = prop.minor; break;
    default: return fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute: an attribute the emulator does not know");
  }
  return cudaSuccess;
}

// Every kernel and copy has finished when its call returns.
cudaError_t cudaDeviceSynchronize() {
  return static_cast<cudaError_t>(emu::refuse_during_capture("cudaDeviceSynchronize"));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  if (flags > cudaStreamNonBlocking) return fail(cudaErrorInvalidValue, "cudaStreamCreateWithFlags: flags");
  *stream = new CUstream_st{flags};
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return static_cast<cudaError_t>(emu::refuse_during_capture("cudaStreamSynchronize"));
}

struct CUevent_st {
  unsigned flags;
  bool recorded = false;
  std::chrono::steady_clock::time_point at;  // the host's clock: the work before it has run by then
};

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  if (event == nullptr || (flags & ~cudaEventDisableTiming) != 0)
    return fail(cudaErrorInvalidValue, "cudaEventCreateWithFlags: no event pointer, or flags the emulator does not know");
  *event = new CUevent_st{flags};
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  if (event == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord: a null event");
  event->recorded = true;
  event->at = std::chrono::steady_clock::now();
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (event == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaEventSynchronize: a null event");
  return static_cast<cudaError_t>(emu::refuse_during_capture("cudaEventSynchronize"));
}

// As CUDA: both events recorded, neither made with cudaEventDisableTiming.
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return fail(cudaErrorInvalidValue, "cudaEventElapsedTime: no result pointer");
  if (start == nullptr || end == nullptr || !start->recorded || !end->recorded ||
      ((start->flags | end->flags) & cudaEventDisableTiming) != 0)
    return fail(cudaErrorInvalidResourceHandle,
                "cudaEventElapsedTime: an event null, never recorded or made with cudaEventDisableTiming");
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return cudaSuccess;
}

// Work queued on `stream` after this call waits for the work the event
// captured; here that work has already run. A never-recorded event is
// complete (as CUDA documents).
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t event, unsigned flags) {
  if (event == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: a null event");
  if (flags != 0) return fail(cudaErrorInvalidValue, "cudaStreamWaitEvent: flags must be 0");
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  *ptr = nullptr;
  if (const int refused = emu::refuse_during_capture("cudaMalloc")) return static_cast<cudaError_t>(refused);
  if (bytes == 0) return cudaSuccess;
  *ptr = emu::device_allocate(bytes);
  if (*ptr == nullptr)
    return fail(cudaErrorMemoryAllocation, "cudaMalloc(" + std::to_string(bytes) + " bytes): the arena is full");
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (const int refused = emu::refuse_during_capture("cudaFree")) return static_cast<cudaError_t>(refused);
  if (ptr == nullptr || emu::device_free(ptr)) return cudaSuccess;
  char detail[128];
  std::snprintf(detail, sizeof detail, "cudaFree(%p): not a pointer cudaMalloc returned", ptr);
  return fail(cudaErrorInvalidValue, detail);
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  *total_bytes = kTotalMemory;
  *free_bytes = kTotalMemory - emu::device_bytes_in_use();
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  // Host memory here is pageable (the emulator has no pinned allocations).
  // A copy to or from it is refused during a capture, stricter than CUDA
  // (graphs.cpp says why no ordo program notices).
  if (kind != cudaMemcpyDeviceToDevice)
    if (const int refused = emu::refuse_during_capture(kind == cudaMemcpyHostToDevice
                                                           ? "cudaMemcpyAsync from pageable host memory"
                                                           : "cudaMemcpyAsync to pageable host memory"))
      return static_cast<cudaError_t>(refused);
  if (bytes == 0) return cudaSuccess;
  const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice)
    return fail(cudaErrorInvalidMemcpyDirection, "cudaMemcpyAsync: the emulator takes explicit directions only");
  if (src_device) {
    const cudaError_t err = check_device_side("cudaMemcpyAsync", "source", src, bytes);
    if (err != cudaSuccess) return err;
  }
  if (dst_device) {
    const cudaError_t err = check_device_side("cudaMemcpyAsync", "destination", dst, bytes);
    if (err != cudaSuccess) return err;
  }
  auto copy = [dst, src, bytes] {
    emu::DeviceSection section("cudaMemcpyAsync");
    std::memmove(dst, src, bytes);
    emu::copy_shadow(dst, src, bytes);
  };
  if (emu::capturing(stream)) {
    emu::record(stream, "cudaMemcpyAsync", copy);
  } else {
    copy();
  }
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (const int refused = emu::refuse_during_capture("cudaMemcpy")) return static_cast<cudaError_t>(refused);
  return cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                                cudaStream_t stream) {
  if (!valid_device(dst_device) || !valid_device(src_device))
    return fail(cudaErrorInvalidDevice, "cudaMemcpyPeerAsync: the emulator has one device");
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  const cudaError_t err = check_device_side("cudaMemsetAsync", "destination", ptr, bytes);
  if (err != cudaSuccess) return err;
  auto set = [ptr, value, bytes] {
    emu::DeviceSection section("cudaMemsetAsync");
    std::memset(ptr, value, bytes);
    emu::copy_shadow(ptr, nullptr, bytes);  // written
  };
  if (emu::capturing(stream)) {
    emu::record(stream, "cudaMemsetAsync", set);
  } else {
    set();
  }
  return cudaSuccess;
}

cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
  if (const int refused = emu::refuse_during_capture("cudaMemset")) return static_cast<cudaError_t>(refused);
  return cudaMemsetAsync(ptr, value, bytes, nullptr);
}

cudaError_t cudaGetLastError() { return static_cast<cudaError_t>(emu::take_launch_error()); }
cudaError_t cudaPeekAtLastError() { return static_cast<cudaError_t>(emu::peek_launch_error()); }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
  }
  return "cudaErrorUnknown";
}

// The runtime's own wording.
const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
  }
  return "unknown error";
}
