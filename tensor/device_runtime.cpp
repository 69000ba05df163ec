// The device runtime of a build without CUDA: no devices, and a clear error
// for anything that would need one. (With CUDA, tensor/cuda/runtime.cu.)
#include "tensor/device_runtime.h"

#include <cstring>

#include "tensor/backend.h"

namespace ordo {

namespace detail {
void throw_no_cuda(const char* kernel) {
  throw Error(cat("'", kernel, "' was asked to run on a CUDA tensor, but this build of ordo has "
                  "no CUDA backend (rebuild with the CUDA toolkit installed, ORDO_CUDA=on)"));
}
}  // namespace detail

const char* precision_name(MatmulPrecision precision) {
  switch (precision) {
    case MatmulPrecision::fp32: return "fp32";
    case MatmulPrecision::tf32: return "tf32";
    case MatmulPrecision::bf16: return "bf16";
  }
  return "?";
}

#ifndef ORDO_HAS_CUDA

bool cuda_compiled() { return false; }
int cuda_device_count() { return 0; }
std::string cuda_device_description(int) { return "no CUDA: this build of ordo has no CUDA backend"; }
int cuda_multiprocessor_count(int) { return 0; }
void synchronize(Device) {}
void* cuda_stream(Device device) {
  throw Error("no stream for " + device.str() + ": this build of ordo has no CUDA backend");
}
AllocatorStats allocator_stats(Device device) {
  ORDO_CHECK(device.is_cpu(), "no ", device.str(), ": this build of ordo has no CUDA backend");
  return detail::host_allocator_stats();
}
void reset_peak_memory(Device) { detail::host_reset_peak(); }
void empty_cache(Device) { detail::host_empty_cache(); }
DeviceCounters device_counters() { return {}; }
void reset_device_counters() {}
KernelTiming::KernelTiming() = default;
KernelTiming::~KernelTiming() = default;
std::vector<KernelTime> KernelTiming::stop() { return {}; }
struct CudaGraph::Impl {};
CudaGraph CudaGraph::capture(Device device, const std::function<void()>&) {
  throw Error("cannot capture a CUDA graph on " + device.str() + ": this build of ordo has no CUDA backend");
}
void CudaGraph::replay() const {}

namespace detail {
void* device_allocate(Device device, size_t) {
  throw Error("cannot allocate on " + device.str() + ": this build of ordo has no CUDA backend");
}
void device_release(Device, void*, size_t) {}
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
  ORDO_CHECK(dst_device.is_cpu() && src_device.is_cpu(), "cannot copy between ", src_device.str(),
             " and ", dst_device.str(), ": this build of ordo has no CUDA backend");
  if (nbytes) std::memcpy(dst, src, nbytes);
}
}  // namespace detail

#endif

}  // namespace ordo
