// The emulated GPU (ORDO_CUDA=emulate): ordo's CUDA sources, unchanged but
// for their launch sites (tensor/cuda/launch.cuh), compiled by g++ and run on
// the CPU with CUDA's execution model, so that the [cuda] tests execute on a
// machine without a GPU.
//
// The model
//  - A launch runs at once, on the calling host thread (one launch at a time
//    in the process): its blocks one after another, the threads of a block as
//    fibers (boost::context, pooled 64 KiB stacks with a guard page). A fiber
//    runs until it ends or waits: at __syncthreads (a block barrier; threads
//    that have ended count as arrived, as on Volta and later) or at a warp
//    operation (__shfl*_sync, __match_any_sync, __ballot_sync, __syncwarp),
//    which completes when every lane its mask names has arrived at the same
//    operation with the same mask. A mask naming a lane that does not exist,
//    that has ended, or that waits elsewhere is an error naming the kernel.
//  - Which ready fiber runs next, and the order of the blocks, follow
//    ORDO_EMULATOR_SCHEDULE: forward (the default), reverse, random:SEED, or
//    greedy-warp (blocks in order; in each, one warp runs until all its
//    threads wait at __syncthreads or end before the next warp resumes, so a
//    warp that runs ahead into the next phase overwrites what another has not
//    read yet). A missing barrier usually shows under one order only; the
//    race check (below) finds it under every order.
//  - The launch is checked as the driver checks it (block and grid limits,
//    dynamic shared memory) and fails with the runtime's error (each distinct
//    launch shape is logged to ORDO_EMULATOR_LAUNCH_LOG when set); an error the
//    emulator finds while running (a bad mask, a deadlock, a failed check)
//    fails the launch with cudaErrorLaunchFailure. take_error_detail() says
//    which kernel and why. Unlike a GPU's, these errors are not sticky.
//  - Device memory (memory.cpp) is mapped per allocation, ending against a
//    guard page, and is inaccessible outside kernels and the runtime's copies
//    and sets: host code that dereferences a device pointer faults, and so
//    does a kernel reading past an allocation's end. A fault names the kernel
//    (or the host code) and the allocation, and ends the process.
//  - cuBLAS (cublas.cpp) and cub's radix sort (radix_sort.cpp) are stand-ins
//    that execute the documented operation literally, validating arguments as
//    the libraries document.
//
// The checks (checks.cpp): every load, store and atomic of the CUDA sources
// is seen (they are compiled with GCC's ThreadSanitizer instrumentation,
// whose calls the emulator answers) and checked, each check a bit of
// ORDO_EMULATOR_CHECKS ("all", the default; "none"; or a comma list):
//  - race: compute-sanitizer racecheck's rule on shared memory: per byte, the
//    last writer and the readers since the last __syncthreads; an access by
//    another thread of the block with no __syncthreads (or __syncwarp naming
//    both) between, one of them a write, fails the launch naming the kernel,
//    both threads and the __shared__ array;
//  - conflict: a plain write by one block to a byte another block of the same
//    launch wrote, or a read of it (blocks are not ordered within a launch);
//  - initcheck: a read of device or shared memory never written since it was
//    allocated (device) or since the block started (shared);
//  - bounds: an access to a byte outside every live tensor: past a tensor's
//    end inside its caching-allocator block (ordo's allocator reports each
//    block it hands out: note_tensor_block), in a freed block, in alignment
//    padding, on a guard page;
//  - poison: fresh device memory (cudaMalloc and every tensor the caching
//    allocator hands out) and each block's shared arrays read 0xff bytes (a
//    NaN as f32 and f64, -1 as an integer) until written.
// The stand-in libraries and the runtime's copies check the same bounds and
// initcheck shadows (a library's violation ends the process, naming it).
//
// What it cannot prove: memory-model effects between blocks or between
// threads that a barrier does not order (blocks never overlap and a fiber's
// writes are visible at once; the checks find the unordered accesses, not
// what a GPU would make of them), device math to the ulp (the host's libm runs
// expf and friends), cuBLAS's summation order, access to host memory from a
// kernel (it works here, a GPU faults), an out-of-range access that lands
// inside another live tensor (the views of one tensor share its bounds), a
// block reading what another block writes later in the same launch, and
// anything about performance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

namespace ordo::cuda::emulator {

struct Dim {
  unsigned x = 1, y = 1, z = 1;
};

// The state a CUDA thread reads through threadIdx, blockIdx, blockDim and gridDim.
struct ThreadState {
  Dim thread_idx;
  Dim block_idx;
  Dim block_dim;
  Dim grid_dim;
};
// The thread being run (valid only inside a kernel).
extern thread_local const ThreadState* current_thread;

// ---- launches -------------------------------------------------------------------

// A kernel's body for one thread: body(closure) calls the kernel with its arguments.
using KernelBody = void (*)(const void* closure);

// Runs `body` for every thread of the grid; returns the launch's error
// (cudaSuccess == 0), which cudaGetLastError then reports.
int run_kernel(const char* name, Dim grid, Dim block, size_t shared_bytes, KernelBody body,
               const void* closure);

// ---- stream capture (graphs.cpp) -------------------------------------------------
// While `stream` is being captured into a graph (cudaStreamBeginCapture), the
// work queued on it is recorded, not run; a graph launch runs it in order.

// True when work queued on `stream` is being recorded now.
bool capturing(const void* stream);
// Records work queued on a capturing stream: `run` does it when the graph is launched.
void record(const void* stream, const char* what, std::function<void()> run);
// What stream capture forbids (global mode, as ordo captures: from any thread
// while any stream captures): `call` is refused with
// cudaErrorStreamCaptureUnsupported, and the capture is invalidated, as the
// driver does. cudaSuccess when no capture is under way.
int refuse_during_capture(const char* call);

// kernel(args...) for every thread: the arguments are copied once, and every
// thread calls the kernel with them (as a GPU passes them by value). On a
// capturing stream the copy is kept for the graph's launches.
template <class Kernel, class... Args>
void launch(const char* name, const void* stream, Dim grid, Dim block, size_t shared_bytes, Kernel kernel,
            const Args&... args) {
  struct Closure {
    Kernel kernel;
    std::tuple<Args...> args;
  };
  auto body = [](const void* c) {
    const auto& self = *static_cast<const Closure*>(c);
    std::apply(self.kernel, self.args);
  };
  if (capturing(stream)) {
    auto kept = std::make_shared<const Closure>(Closure{kernel, std::tuple<Args...>(args...)});
    record(stream, name, [=] { run_kernel(name, grid, block, shared_bytes, body, kept.get()); });
    return;
  }
  const Closure closure{kernel, std::tuple<Args...>(args...)};
  run_kernel(name, grid, block, shared_bytes, body, &closure);
}

// The order of ready threads and of blocks, as ORDO_EMULATOR_SCHEDULE sets
// it at start: "forward", "reverse", "random:SEED" or "greedy-warp". False
// (and nothing changes) for anything else.
bool set_schedule(const std::string& schedule);

// ---- errors ---------------------------------------------------------------------

// Records the error the next cudaGetLastError reports, with the emulator's
// explanation of it (which kernel, what went wrong).
void set_launch_error(int error, const std::string& detail);
int peek_launch_error();
int take_launch_error();
// The explanation of the last error, cleared by reading it ("" when none).
std::string take_error_detail();

// ---- block and warp synchronisation ------------------------------------------------

void sync_threads();
// __threadfence: orders this thread's writes before its later ones (the
// host's fence), and tells the checks that this block's writes so far are
// published to a block that reads them after an atomic (access_checks).
void thread_fence();

// matrix: a warp-wide matrix operation (nvcuda::wmma's load_matrix_sync,
// mma_sync, store_matrix_sync: include/mma.h): every lane of the warp must
// arrive, as at __syncwarp, but it orders no memory (the hardware's does not
// either: a lane reading what another lane stored needs a __syncwarp).
enum class WarpOp { sync, shfl, shfl_up, shfl_down, shfl_xor, match_any, ballot, matrix };
const char* warp_op_name(WarpOp op);

// The calling lane's part in a warp operation: waits until every lane the
// mask names has arrived, then returns this lane's result (the source lane's
// value for a shuffle, a lane mask for match_any and ballot).
uint64_t warp_exchange(WarpOp op, unsigned mask, uint64_t value, int operand, int width);

// Fails the running kernel's launch with `what` (naming the thread and the
// kernel), as a device-side error would: for the stand-in headers' checks of
// their arguments.
[[noreturn]] void kernel_fail(const std::string& what);

// ---- device memory --------------------------------------------------------------------

void* device_allocate(size_t bytes);  // nullptr when the arena is exhausted
bool device_free(void* ptr);          // false for a pointer device_allocate did not return
size_t device_bytes_in_use();
// True when [ptr, ptr + bytes) lies inside one live allocation.
bool is_device_range(const void* ptr, size_t bytes);

// While one exists, device memory is accessible (it is unprotected page by
// page as it is touched, and protected again when the section ends); a fault
// inside it names `name`. Kernels, copies, sets and the library stand-ins
// each run in one.
class DeviceSection {
 public:
  explicit DeviceSection(const char* name);
  ~DeviceSection();
  DeviceSection(const DeviceSection&) = delete;
  DeviceSection& operator=(const DeviceSection&) = delete;
};

// Ends the process as a fault would, after saying what `what` tried to touch
// at [ptr, ptr + bytes) (for a stand-in library that finds an access outside
// every allocation before making it).
[[noreturn]] void report_bad_access(const char* what, const void* ptr, size_t bytes);

// ---- the checks (checks.cpp) -------------------------------------------------------------

struct Check {
  enum : unsigned { race = 1, conflict = 2, initcheck = 4, bounds = 8, poison = 16, all = 31 };
};
// The checks that run, as ORDO_EMULATOR_CHECKS sets them at start.
unsigned checks();
void set_checks(unsigned bits);
// "all", "none" or a comma list of race, conflict, initcheck, bounds, poison
// into `bits`; false for anything else.
bool parse_checks(const std::string& value, unsigned& bits);

// ordo's caching allocator hands out (or takes back) a block of device
// memory holding a tensor of `bytes`: the bytes past them become no access,
// the tensor's not yet written (and poisoned).
void note_tensor_block(void* ptr, size_t bytes, size_t block_bytes);
void note_block_cached(void* ptr, size_t block_bytes);

// A stand-in library's read or write of device memory: a read must lie inside
// live tensors and be written, a write inside live tensors (which it marks
// written); otherwise the process ends, naming `who` and the bytes.
void stand_in_read(const char* who, const void* ptr, size_t bytes);
void stand_in_write(const char* who, const void* ptr, size_t bytes);
// "" when [ptr, ptr + bytes) lies inside live tensors (or is not device
// memory, or the bounds check is off); otherwise where it leaves them.
std::string bounds_violation(const void* ptr, size_t bytes);
// The runtime's copies: dst's bytes take src's state (written, or not), or
// become written when src is host memory.
void copy_shadow(void* dst, const void* src, size_t bytes);

}  // namespace ordo::cuda::emulator
