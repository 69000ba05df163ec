// What the rest of ordo needs to know about devices, in every build.
//
// In a build without CUDA these report "no device" and the allocation and copy
// entry points throw; with CUDA they are implemented in tensor/cuda/runtime.cu
// (one stream and one cuBLAS handle per device, a caching allocator).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace ordo {

// True when ordo was compiled with CUDA.
bool cuda_compiled();
// Number of usable CUDA devices (0 without CUDA, without a driver, or without a GPU).
int cuda_device_count();
inline bool cuda_available() { return cuda_device_count() > 0; }
// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)" or a sentence saying why there is none.
std::string cuda_device_description(int index = 0);
// The device's streaming multiprocessors (0 where it does not exist), from
// which the kernels' launches cap their grids: 32 blocks of 256 threads an
// SM for the grid-stride loops, 16 blocks an SM for the row kernels.
int cuda_multiprocessor_count(int index = 0);

// Waits for all work queued on the device (no-op for the CPU). Also reports,
// as ordo::Error, an out-of-range index a kernel met since the last sync.
void synchronize(Device device);

// The stream ordo queues `device`'s work on (a cudaStream_t), for a library
// that must order its own work against ordo's (NCCL: parallel/nccl_group.cpp);
// makes `device` the current one. Throws in a build without CUDA.
void* cuda_stream(Device device);

// Memory of one device: its caching allocator's on a GPU; on the CPU the
// bytes held by tensors (host allocations are not cached).
struct AllocatorStats {
  size_t bytes_in_use = 0;      // held by live tensors
  size_t peak_bytes_in_use = 0; // since start or the last reset_peak
  size_t bytes_cached = 0;      // freed by tensors, kept for reuse
  int64_t device_mallocs = 0;   // cudaMalloc calls so far
  int64_t allocations = 0;      // requests served (cached or not)
};
AllocatorStats allocator_stats(Device device);
void reset_peak_memory(Device device);
// Returns every cached (unused) block to the driver.
void empty_cache(Device device);

// What the devices did since the start or the last reset_device_counters,
// summed over all devices: the host round-trips and driver calls that a
// training step on a GPU must keep out of its steady state. Counted the same
// way by the real CUDA runtime and the emulated one; all zero without CUDA.
struct DeviceCounters {
  int64_t kernel_launches = 0;  // ordo's own kernels (ORDO_LAUNCH); cuBLAS's are not seen, cub's sorts below
  int64_t device_copies = 0;    // device-to-device cudaMemcpyAsync calls: a stream operation each, as a launch
  int64_t host_syncs = 0;       // times the host waited for a stream (synchronize, a read to the host)
  int64_t device_mallocs = 0;   // cudaMalloc calls: requests the caching allocator could not serve
  int64_t bytes_to_device = 0;  // host -> device copies
  int64_t bytes_to_host = 0;    // device -> host copies (what the caller asked for)
  int64_t graph_launches = 0;   // CudaGraph::replay calls (each runs a whole captured step)
  int64_t sorts = 0;  // cub radix sorts (the index, relative and attention-table gradients): on a GPU
                      // at least one launch each of cub's own kernels (more for large inputs), none in
                      // kernel_launches; the emulator's stand-in sorts on the host
};
DeviceCounters device_counters();
void reset_device_counters();

// Where the device's time goes, kernel by kernel: while a KernelTiming lives,
// each of ordo's kernel launches and cuBLAS's products is bracketed by two
// CUDA events on its stream, read when the timing stops. For eager steps (a
// graph's replay runs its kernels unseen: time the same step without graphs)
// on one host thread. The events cost the host a few microseconds a launch,
// so a timed step's wall time is not its time without; each kernel's own
// span is the device's. The emulated GPU stamps its host clock (its kernels
// run at their launch): the counts are exact there, the times are the CPU's.
// Without CUDA it records nothing.
struct KernelTime {
  std::string kernel;   // the kernel's name, or "cublas gemm (bf16)" and the like
  int64_t calls = 0;
  double seconds = 0;   // the sum of its spans, start event to end event
};
class KernelTiming {
 public:
  KernelTiming();  // starts; one at a time
  ~KernelTiming();
  // Waits for the device and returns each kernel's calls and time, the
  // longest first. Ends the timing.
  std::vector<KernelTime> stop();
  KernelTiming(const KernelTiming&) = delete;
  KernelTiming& operator=(const KernelTiming&) = delete;

 private:
  bool stopped_ = false;
};

// A device's work captured once and replayed with one launch (CUDA stream
// capture on ordo's stream, then cudaGraphLaunch): the kernels, products,
// device copies and sets that `body` issued, with the arguments and the
// addresses they had. Capturing runs nothing. What capture forbids — a
// synchronisation or a read to the host, a copy from host memory, an
// allocation the caching allocator cannot serve from memory it already
// holds (run the work once before capturing it) — fails the capture with an
// ordo::Error naming it, as the driver refuses it. Tensors allocated while
// capturing come from a pool the graph keeps while it lives: a replay writes
// the same addresses again (a tensor made during the capture and kept shows
// each replay's values), and nothing else is given them meanwhile. Inputs
// change between replays by copying into tensors made before the capture.
class CudaGraph {
 public:
  CudaGraph() = default;
  static CudaGraph capture(Device device, const std::function<void()>& body);
  void replay() const;  // one graph launch on the device's stream
  bool defined() const { return impl_ != nullptr; }
  struct Impl;

 private:
  explicit CudaGraph(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

// How a matrix product of f32 operands multiplies (f64 products are always
// exact f64; the sums are FP32 in every mode):
//   fp32  FP32 multiply-adds (CUDA cores on a GPU): the default, comparable
//         with the CPU to ~1e-6;
//   tf32  operands rounded to TF32 (10 mantissa bits, ties away from zero, as
//         cvt.rna.tf32.f32), on a GPU tensor cores (cuBLAS's FAST_TF32);
//   bf16  operands rounded to bfloat16 (8 significant bits, round to nearest
//         even), exact products, FP32 accumulation: PyTorch's bf16 autocast
//         for products (cuBLAS with bf16 A and B, CUBLAS_COMPUTE_32F). Operands
//         already bf16 are taken as they are.
// The CPU emulates tf32 and bf16 exactly (operands rounded, then its FP32
// product): as slow as fp32 there, and the reference a GPU's products are
// compared with.
//
// A value, not process-wide state. Commands parse train.precision or
// --precision once (train::parse_precision, then train::resolve_precision on
// the run's device: train/loop.h) and hand it to the model as
// nn::Context::precision, which model code passes to every op whose result
// depends on it (matmul, linear, the fused ops' operands, the banded
// relative terms, ...) as its last argument. That argument defaults to fp32
// (the exact product: what a test, a tool or a sum that is not a model's
// product means when it names none; one argument added at the end left their
// many call sites as they were), except where only a precision gives the
// call a meaning (as_operand, operand_dtype, OperandRoundingScope).
enum class MatmulPrecision : uint8_t { fp32, tf32, bf16 };
const char* precision_name(MatmulPrecision precision);  // "fp32", "tf32", "bf16"

namespace detail {
// Host-side counters kept by Storage (tensor/tensor.cpp).
AllocatorStats host_allocator_stats();
void host_reset_peak();
void host_empty_cache();
void* device_allocate(Device device, size_t nbytes);
void device_release(Device device, void* ptr, size_t nbytes);
// Copies nbytes between host and device memory (either side may be the host).
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes);
}  // namespace detail

}  // namespace ordo
