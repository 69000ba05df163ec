// The device runtime of a CUDA build (tensor/device_runtime.h): device
// discovery, one context per device (stream, cuBLAS handle, index-error flag),
// the caching allocator, host/device copies and synchronisation.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tensor/cuda/cuda_common.cuh"

namespace ordo {

namespace cuda {

// The emulator knows which kernel failed and why, which a GPU never says.
std::string emulator_detail() {
#ifdef ORDO_CUDA_EMULATED
  const std::string detail = emulator::take_error_detail();
  if (!detail.empty()) return " [emulator: " + detail + "]";
#endif
  return "";
}

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  // Clear the (non-sticky) error so the next call does not report it again.
  (void)cudaGetLastError();
  throw Error(detail::cat("CUDA error ", cudaGetErrorName(err), " (", cudaGetErrorString(err),
                          ") in ", call, " at ", file, ":", line, emulator_detail()));
}

// ---- counters (tensor/device_runtime.h) ----------------------------------------------

namespace {

struct AtomicCounters {
  std::atomic<int64_t> kernel_launches{0}, device_copies{0}, host_syncs{0}, device_mallocs{0}, bytes_to_device{0},
      bytes_to_host{0}, graph_launches{0}, sorts{0};
};

// Above 0 while a CudaGraph captures: a launch then only records itself.
std::atomic<int> g_capturing{0};

AtomicCounters& counters() {
  static AtomicCounters c;
  return c;
}

// A copy between the host and the device cannot be part of a CUDA graph: a
// replayed copy from host memory reads memory the caller has freed since,
// and a read to the host (or a synchronize) needs the host to wait, which a
// graph cannot. CUDA itself captures a copy from or to pageable memory
// without a word (seen on an H200, CUDA 13.0: a graph then replayed a
// step's frequencies from freed memory), so ordo refuses here, in the same
// words on a GPU and on the emulator.
void refuse_while_capturing(const char* what) {
  ORDO_CHECK(g_capturing.load(std::memory_order_relaxed) == 0, what,
             " while a CUDA graph captures: a graph runs without the host");
}

// Every wait of the host for a stream goes through here, so that it is counted.
cudaError_t wait_for_stream(cudaStream_t stream) {
  counters().host_syncs.fetch_add(1, std::memory_order_relaxed);
  return cudaStreamSynchronize(stream);
}

}  // namespace

// ---- kernel timing (KernelTiming, tensor/device_runtime.h) ------------------------------

namespace {

struct TimedSpan {
  const char* name;
  cudaEvent_t start, end;
};
struct Timing {
  std::vector<TimedSpan> spans;  // in launch order
  cudaEvent_t open = nullptr;    // the start of the work being launched
};
Timing* g_timing = nullptr;  // the open KernelTiming's; launches come from one host thread

cudaEvent_t recorded_event(cudaStream_t stream) {
  cudaEvent_t event = nullptr;
  ORDO_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDefault));
  ORDO_CUDA_CHECK(cudaEventRecord(event, stream));
  return event;
}

}  // namespace

void before_launch(cudaStream_t stream) {
  if (g_timing == nullptr || g_capturing.load(std::memory_order_relaxed) > 0) return;
  g_timing->open = recorded_event(stream);
}

void after_library_call(const char* name, cudaStream_t stream) {
  if (g_timing == nullptr || g_timing->open == nullptr) return;
  g_timing->spans.push_back({name, g_timing->open, recorded_event(stream)});
  g_timing->open = nullptr;
}

void after_sort(const char* name, cudaStream_t stream) {
  if (g_capturing.load(std::memory_order_relaxed) == 0)  // as after_launch: a graph's sort is not run here
    counters().sorts.fetch_add(1, std::memory_order_relaxed);
  after_library_call(name, stream);
}

void after_launch(const char* kernel, cudaStream_t stream) {
  if (g_capturing.load(std::memory_order_relaxed) > 0) return;  // recorded into a graph: neither run nor counted
  counters().kernel_launches.fetch_add(1, std::memory_order_relaxed);
  after_library_call(kernel, stream);
  static const bool sync = [] {
    const char* env = std::getenv("ORDO_CUDA_SYNC");
    return env != nullptr && std::strcmp(env, "1") == 0;
  }();
  if (!sync) return;
  cudaError_t err = cudaPeekAtLastError();
  if (err == cudaSuccess) err = wait_for_stream(stream);
  if (err == cudaSuccess) return;
  (void)cudaGetLastError();
  throw Error(detail::cat("CUDA error ", cudaGetErrorName(err), " (", cudaGetErrorString(err), ") in kernel '",
                          kernel, "' (ORDO_CUDA_SYNC=1: checked right after its launch)", emulator_detail()));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw Error(detail::cat("cuBLAS error ", cublasGetStatusName(status), " (",
                          cublasGetStatusString(status), ") in ", call, " at ", file, ":", line));
}

const char* index_error_site_name(int site) {
  switch (static_cast<IndexErrorSite>(site)) {
    case IndexErrorSite::none: return "no";
    case IndexErrorSite::index_select: return "index_select (or embedding)";
    case IndexErrorSite::index_add: return "index_add (index_select/embedding backward)";
    case IndexErrorSite::gather: return "gather";
    case IndexErrorSite::scatter_add: return "scatter_add (gather backward)";
    case IndexErrorSite::cross_entropy: return "cross_entropy (target class)";
    case IndexErrorSite::relative: return "relative_gather/relative_scatter/relative_product (relative-distance row)";
    case IndexErrorSite::embedding_sum: return "embedding_sum (the input embeddings' lookups, or their backward)";
    case IndexErrorSite::scatter_rows:
      return "scatter_rows (select_rows' backward: a row out of range, or rows not ascending and distinct)";
  }
  return "an unknown";
}

// A graph's blocks (see the caching allocator below).
struct GraphPool {
  std::set<std::pair<size_t, void*>> free;  // (size, address), smallest first
  std::set<void*> owned;                    // every block of the pool, free or in use
};

namespace {

// ---- the caching allocator ---------------------------------------------------------
//
// Requests are rounded up (to 512 B up to 1 MiB, to 2 MiB multiples above) and
// served from blocks that freed tensors gave back, kept in one free list
// ordered by size: the smallest cached block that fits is reused when it
// wastes at most a quarter of the request, otherwise a new block comes from
// cudaMalloc. Blocks are never split or merged, so a training step that
// allocates the same sizes every iteration reaches a steady state in which
// every request is a cache hit and cudaMalloc is never called.
//
// Why a freed block can be handed out again at once, without an event or a
// sync: every ordo kernel and copy on this device runs on the device's one
// stream, in issue order. A tensor is freed on the host after the last kernel
// that uses it has been *issued*; whatever is allocated next is used only by
// kernels issued later on the same stream, which the stream runs after the
// earlier ones have finished. (Work on any other stream, e.g. a future
// communication stream, must be ordered against this one by its owner.)
// cudaFree is different: the driver takes the memory back immediately, so the
// cache is only released after synchronising the stream.
//
// A CUDA graph's pool (PyTorch's private graph pool): while a graph is being
// captured, blocks come from its pool's free blocks or from the cache,
// whichever holds the smaller fit (a block from the cache then belongs to
// the pool), and go back to the pool when freed;
// cudaMalloc is not permitted during a capture. The pool keeps its blocks
// until the graph is destroyed, so a replay, which writes the addresses the
// capture recorded, never writes memory given to anything else.
class CachingAllocator {
 public:
  explicit CachingAllocator(const DeviceContext* ctx) : ctx_(ctx) {}

  // The device must be current.
  void* allocate(size_t nbytes) {
    if (nbytes == 0) return nullptr;
    const size_t size = block_size(nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.allocations;
    void* ptr = nullptr;
    size_t block = size;
    auto fits = [size](const std::set<std::pair<size_t, void*>>& free) {
      auto it = free.lower_bound({size, nullptr});
      return it != free.end() && it->first <= size + size / 4 ? it : free.end();
    };
    // A capture takes the smallest block that fits from its pool and the
    // cache together, as the step run as it is takes it from the cache (where
    // that step's frees went): the captured step then finds every block the
    // steps before it found. Taking the pool's first could spend a larger
    // block on a smaller tensor and leave a later one to cudaMalloc, which a
    // capture may not call.
    const auto from_pool = pool_ != nullptr ? fits(pool_->free) : std::set<std::pair<size_t, void*>>::iterator();
    const bool pool_fits = pool_ != nullptr && from_pool != pool_->free.end();
    if (pool_fits && (fits(cached_) == cached_.end() || from_pool->first <= fits(cached_)->first)) {
      auto it = from_pool;
      block = it->first;
      ptr = it->second;
      pool_->free.erase(it);
      stats_.bytes_cached -= block;
    } else if (fits(cached_) != cached_.end()) {
      auto it = fits(cached_);
      block = it->first;
      ptr = it->second;
      cached_.erase(it);
      stats_.bytes_cached -= block;
      if (pool_ != nullptr) adopt(ptr);
    } else {
      ptr = device_malloc_locked(size, nbytes);
      if (pool_ != nullptr) adopt(ptr);
    }
    live_.emplace(ptr, block);
    stats_.bytes_in_use += block;
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
#ifdef ORDO_CUDA_EMULATED
    // The tensor's exact end, for the bounds check.
    note_emulated("a tensor's block handed out",
                  [ptr, nbytes, block] { emulator::note_tensor_block(ptr, nbytes, block); });
#endif
    return ptr;
  }

  // Makes no CUDA call (it may run during static destruction at exit).
  void release(void* ptr) {
    if (ptr == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(ptr);
    if (it == live_.end()) {
      // A pointer this allocator never handed out, or a double free: memory
      // corruption is the only possible cause, so stop here.
      std::fprintf(stderr, "ordo: internal error: cuda:%d released unknown block %p\n",
                   ctx_->index, ptr);
      std::abort();
    }
    const size_t block = it->second;
    live_.erase(it);
    stats_.bytes_in_use -= block;
    stats_.bytes_cached += block;
    auto owner = pool_of_.find(ptr);
    if (owner != pool_of_.end()) {
      owner->second->free.emplace(block, ptr);
    } else {
      cached_.emplace(block, ptr);
    }
#ifdef ORDO_CUDA_EMULATED
    note_emulated("a tensor's block freed", [ptr, block] { emulator::note_block_cached(ptr, block); });
#endif
  }

  // While `pool` is open (a graph being captured), blocks come from it.
  void open_pool(GraphPool* pool) {
    std::lock_guard<std::mutex> lock(mutex_);
    pool_ = pool;
  }
  void close_pool() {
    std::lock_guard<std::mutex> lock(mutex_);
    pool_ = nullptr;
  }
  // The graph is gone: its free blocks return to the cache, and those still
  // in use will when they are freed.
  void drop_pool(GraphPool& pool) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (void* ptr : pool.owned) pool_of_.erase(ptr);
    for (const auto& block : pool.free) cached_.insert(block);
    pool.free.clear();
    pool.owned.clear();
  }

  // Returns every cached block to the driver. The device must be current.
  void release_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    release_cache_locked();
  }

  AllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
  }

  // Memory outside the cache that lives as long as the process (the index
  // flag, cuBLAS's workspace): counted as a cudaMalloc, never freed.
  void* permanent(size_t nbytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    return device_malloc_locked(nbytes, nbytes);
  }

 private:
  static size_t block_size(size_t nbytes) {
    constexpr size_t kSmallLimit = size_t(1) << 20, kSmallGranule = 512,
                     kLargeGranule = size_t(2) << 20;
    const size_t granule = nbytes <= kSmallLimit ? kSmallGranule : kLargeGranule;
    return (nbytes + granule - 1) / granule * granule;
  }

  void* device_malloc_locked(size_t size, size_t requested) {
    void* ptr = nullptr;
    cudaError_t err = cudaMalloc(&ptr, size);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      release_cache_locked();
      err = cudaMalloc(&ptr, size);
    }
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
      throw Error(detail::cat("CUDA out of memory on cuda:", ctx_->index, ": cannot allocate ",
                              requested, " bytes (a block of ", size, " bytes); ordo's tensors hold ",
                              stats_.bytes_in_use, " bytes (peak ", stats_.peak_bytes_in_use,
                              "), the device has ", free_bytes, " of ", total_bytes,
                              " bytes free after releasing ordo's cache"));
    }
    if (err != cudaSuccess) throw_cuda_error(err, "cudaMalloc(&ptr, size)", __FILE__, __LINE__);  // says cudaMalloc, not "err"
    ++stats_.device_mallocs;
    counters().device_mallocs.fetch_add(1, std::memory_order_relaxed);
    return ptr;
  }

  void release_cache_locked() {
    if (cached_.empty()) return;
    ORDO_CUDA_CHECK(wait_for_stream(ctx_->stream));  // no kernel may still use a cached block
    for (const auto& block : cached_) ORDO_CUDA_CHECK(cudaFree(block.second));
    cached_.clear();
    stats_.bytes_cached = 0;
  }

#ifdef ORDO_CUDA_EMULATED
  // The emulator's checks follow each tensor's block (note_tensor_block: its
  // bytes fresh and poisoned, the rest of its block no access;
  // note_block_cached: all of it no access, a use after free). While a graph
  // is captured, what the allocator does now happens on the device when the
  // graph runs, so the note is also recorded into the graph: a replay's
  // kernels then find the tensors the capture's kernels had (a pool block
  // freed during the capture and handed out again is live at replay).
  template <class Note>
  void note_emulated(const char* what, Note note) {
    note();
    if (emulator::capturing(ctx_->stream)) emulator::record(ctx_->stream, what, note);
  }
#endif

  void adopt(void* ptr) {
    pool_->owned.insert(ptr);
    pool_of_[ptr] = pool_;
  }

  const DeviceContext* ctx_;
  std::mutex mutex_;
  std::set<std::pair<size_t, void*>> cached_;  // free blocks: (size, address), smallest first
  std::unordered_map<void*, size_t> live_;     // blocks in use: address -> size
  std::unordered_map<void*, GraphPool*> pool_of_;  // blocks a graph's pool owns
  GraphPool* pool_ = nullptr;                  // the pool of the graph being captured
  AllocatorStats stats_;
};

// ---- devices ---------------------------------------------------------------------------

struct DeviceState {
  DeviceContext ctx;
  CachingAllocator allocator{&ctx};
  std::once_flag cublas_once;
  cublasHandle_t cublas = nullptr;
};

// cuBLAS's recommended workspace for Hopper (4 MiB suffices before it); a
// workspace of our own means cuBLAS never allocates during a product.
constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;

struct DeviceCount {
  int count = 0;
  cudaError_t error = cudaSuccess;
};

// Asked once: without a driver or a GPU, cudaGetDeviceCount fails, which means 0 devices.
const DeviceCount& device_count() {
  static const DeviceCount result = [] {
    DeviceCount c;
    c.error = cudaGetDeviceCount(&c.count);
    if (c.error != cudaSuccess) {
      (void)cudaGetLastError();
      c.count = 0;
    }
    return c;
  }();
  return result;
}

struct DeviceSlot {
  std::once_flag once;
  std::atomic<DeviceState*> state{nullptr};
};

// One slot per device. Device states are created on first use and
// deliberately never destroyed: tensors freed during static destruction still
// find their allocator, and no CUDA call runs after the runtime has shut down.
DeviceSlot* device_slots() {
  static DeviceSlot* slots = new DeviceSlot[std::max(device_count().count, 1)];
  return slots;
}

void check_device_index(Device device) {
  const DeviceCount& c = device_count();
  ORDO_CHECK(device.is_cuda(), "internal error: CUDA runtime asked about ", device.str());
  ORDO_CHECK(device.index >= 0 && device.index < c.count, "CUDA device ", device.str(),
             " does not exist: ",
             c.count == 0 ? "no CUDA device is usable here (" + cuda_device_description(0) + ")"
                          : detail::cat("this machine has ", c.count, " (cuda:0 to cuda:",
                                        c.count - 1, ")"));
}

DeviceState* create_state(int index) {
  ORDO_CUDA_CHECK(cudaSetDevice(index));
  auto* s = new DeviceState;
  s->ctx.index = index;
  ORDO_CUDA_CHECK(cudaDeviceGetAttribute(&s->ctx.sm_count, cudaDevAttrMultiProcessorCount, index));
  // A blocking stream: it also waits for anything a library might queue on
  // the legacy default stream, which ordo itself never uses.
  ORDO_CUDA_CHECK(cudaStreamCreateWithFlags(&s->ctx.stream, cudaStreamDefault));
  s->ctx.index_error = static_cast<int*>(s->allocator.permanent(sizeof(int)));
  ORDO_CUDA_CHECK(cudaMemsetAsync(s->ctx.index_error, 0, sizeof(int), s->ctx.stream));
  s->ctx.group_counters = static_cast<unsigned*>(s->allocator.permanent(kGroupCounters * sizeof(unsigned)));
  ORDO_CUDA_CHECK(cudaMemsetAsync(s->ctx.group_counters, 0, kGroupCounters * sizeof(unsigned), s->ctx.stream));
  ORDO_CUDA_CHECK(wait_for_stream(s->ctx.stream));
  return s;
}

DeviceState& state(Device device) {
  check_device_index(device);
  DeviceSlot& slot = device_slots()[device.index];
  std::call_once(slot.once, [&] { slot.state.store(create_state(device.index)); });
  ORDO_CUDA_CHECK(cudaSetDevice(device.index));
  return *slot.state.load();
}

// The state when it exists, without any CUDA call (nullptr otherwise).
DeviceState* existing_state(Device device) {
  if (!device.is_cuda() || device.index < 0 || device.index >= device_count().count) return nullptr;
  return device_slots()[device.index].state.load();
}

// Waits for the stream, reading the index-error flag in the same round trip
// as whatever the caller queued before (a copy to the host), and throws (and
// clears the flag) when a kernel met an out-of-range index.
void wait_and_raise_index_error(DeviceContext& ctx) {
  refuse_while_capturing("the host waiting for the device (a read to the host or a synchronize)");
  int site = 0;
  ORDO_CUDA_CHECK(cudaMemcpyAsync(&site, ctx.index_error, sizeof(int), cudaMemcpyDeviceToHost,
                                  ctx.stream));
  ORDO_CUDA_CHECK(wait_for_stream(ctx.stream));
  if (site == 0) return;
  ORDO_CUDA_CHECK(cudaMemsetAsync(ctx.index_error, 0, sizeof(int), ctx.stream));
  throw Error(detail::cat("index out of range on cuda:", ctx.index, ": a ",
                          index_error_site_name(site),
                          " kernel met an index outside its axis (that element was skipped, so "
                          "results computed since the last synchronize are not valid)"));
}

}  // namespace

DeviceContext& context(Device device) { return state(device).ctx; }

cublasHandle_t cublas_handle(DeviceContext& ctx) {
  DeviceState& s = state(Device::cuda(ctx.index));
  std::call_once(s.cublas_once, [&] {
    cublasHandle_t handle = nullptr;
    ORDO_CUBLAS_CHECK(cublasCreate(&handle));
    // cublasSetStream resets the workspace to cuBLAS's own pool, so the
    // stream is set first and the workspace after it.
    ORDO_CUBLAS_CHECK(cublasSetStream(handle, ctx.stream));
    void* workspace = s.allocator.permanent(kCublasWorkspaceBytes);
    ORDO_CUBLAS_CHECK(cublasSetWorkspace(handle, workspace, kCublasWorkspaceBytes));
    // Plain FP32 unless a product asks for TF32 through its compute type
    // (gemm.cu); atomics stay off (cuBLAS's default), keeping results reproducible.
    ORDO_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    s.cublas = handle;
  });
  return s.cublas;
}

}  // namespace cuda

// ---- tensor/device_runtime.h ------------------------------------------------------------

bool cuda_compiled() { return true; }

int cuda_device_count() { return cuda::device_count().count; }

std::string cuda_device_description(int index) {
  const cuda::DeviceCount& c = cuda::device_count();
  if (c.count == 0) {
    if (c.error != cudaSuccess)
      return detail::cat("no usable CUDA device: ", cudaGetErrorString(c.error));
    return "no CUDA device found";
  }
  if (index < 0 || index >= c.count)
    return detail::cat("cuda:", index, " does not exist (", c.count, " devices)");
  cudaDeviceProp prop{};
  cudaError_t err = cudaGetDeviceProperties(&prop, index);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return detail::cat("cuda:", index, ": cannot read its properties: ", cudaGetErrorString(err));
  }
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB",
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return detail::cat(prop.name, " (sm_", prop.major, prop.minor, ", ", memory, ")");
}

int cuda_multiprocessor_count(int index) {
  if (index < 0 || index >= cuda::device_count().count) return 0;
  return cuda::context(Device::cuda(index)).sm_count;
}

void synchronize(Device device) {
  if (device.is_cpu()) return;
  cuda::wait_and_raise_index_error(cuda::context(device));
}

void* cuda_stream(Device device) {
  ORDO_CHECK(device.is_cuda(), "cuda_stream: ", device.str(), " is not a CUDA device");
  return cuda::context(device).stream;
}

AllocatorStats allocator_stats(Device device) {
  if (device.is_cpu()) return detail::host_allocator_stats();
  return cuda::state(device).allocator.stats();
}

void reset_peak_memory(Device device) {
  if (device.is_cpu()) return detail::host_reset_peak();
  cuda::state(device).allocator.reset_peak();
}

void empty_cache(Device device) {
  if (device.is_cpu()) return detail::host_empty_cache();
  cuda::state(device).allocator.release_cache();
}

DeviceCounters device_counters() {
  const cuda::AtomicCounters& c = cuda::counters();
  DeviceCounters out;
  out.graph_launches = c.graph_launches.load();
  out.kernel_launches = c.kernel_launches.load();
  out.device_copies = c.device_copies.load();
  out.host_syncs = c.host_syncs.load();
  out.device_mallocs = c.device_mallocs.load();
  out.bytes_to_device = c.bytes_to_device.load();
  out.bytes_to_host = c.bytes_to_host.load();
  out.sorts = c.sorts.load();
  return out;
}

void reset_device_counters() {
  cuda::AtomicCounters& c = cuda::counters();
  for (std::atomic<int64_t>* counter : {&c.kernel_launches, &c.device_copies, &c.host_syncs, &c.device_mallocs,
                                        &c.bytes_to_device, &c.bytes_to_host, &c.graph_launches, &c.sorts})
    counter->store(0);
}

KernelTiming::KernelTiming() {
  ORDO_CHECK(cuda::g_timing == nullptr, "KernelTiming: another timing is open (one at a time)");
  cuda::g_timing = new cuda::Timing;
}

KernelTiming::~KernelTiming() {
  try {
    stop();
  } catch (...) {  // a destructor does not throw; stop() reports the same error to a caller that asks
  }
}

std::vector<KernelTime> KernelTiming::stop() {
  if (stopped_) return {};
  stopped_ = true;
  std::unique_ptr<cuda::Timing> timing(cuda::g_timing);
  cuda::g_timing = nullptr;
  if (timing->open != nullptr) (void)cudaEventDestroy(timing->open);  // a launch that threw between its events
  std::vector<KernelTime> out;
  std::unordered_map<std::string, size_t> row;
  cudaError_t failed = cudaSuccess;
  for (const cuda::TimedSpan& span : timing->spans) {
    float ms = 0;
    if (failed == cudaSuccess) failed = cudaEventSynchronize(span.end);
    if (failed == cudaSuccess) failed = cudaEventElapsedTime(&ms, span.start, span.end);
    (void)cudaEventDestroy(span.start);
    (void)cudaEventDestroy(span.end);
    const auto [at, added] = row.emplace(span.name, out.size());
    if (added) out.push_back({span.name, 0, 0});
    out[at->second].calls += 1;
    out[at->second].seconds += 1e-3 * ms;
  }
  ORDO_CUDA_CHECK(failed);
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelTime& a, const KernelTime& b) { return a.seconds > b.seconds; });
  return out;
}

// ---- CUDA graphs --------------------------------------------------------------------------

struct CudaGraph::Impl {
  Device device;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cuda::GraphPool pool;

  ~Impl() {
    // Errors are ignored: this may run at exit, after the driver has shut down.
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    if (cuda::DeviceState* s = cuda::existing_state(device)) s->allocator.drop_pool(pool);
  }
};

CudaGraph CudaGraph::capture(Device device, const std::function<void()>& body) {
  cuda::DeviceState& s = cuda::state(device);
  auto impl = std::make_shared<Impl>();
  impl->device = device;
  ORDO_CUDA_CHECK(cudaStreamBeginCapture(s.ctx.stream, cudaStreamCaptureModeGlobal));
  s.allocator.open_pool(&impl->pool);
  cuda::g_capturing.fetch_add(1);
  std::string failure;
  try {
    body();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  cuda::g_capturing.fetch_sub(1);
  s.allocator.close_pool();
  const cudaError_t end = cudaStreamEndCapture(s.ctx.stream, &impl->graph);
  if (failure.empty() && end != cudaSuccess)
    failure = detail::cat("cudaStreamEndCapture: ", cudaGetErrorName(end), " (", cudaGetErrorString(end), ")",
                          cuda::emulator_detail());
  (void)cudaGetLastError();
  ORDO_CHECK(failure.empty(), "capturing a CUDA graph on ", device.str(), " failed: ", failure);
  ORDO_CUDA_CHECK(cudaGraphInstantiate(&impl->exec, impl->graph, 0));
  return CudaGraph(std::move(impl));
}

void CudaGraph::replay() const {
  ORDO_CHECK(impl_ != nullptr, "CudaGraph::replay: no graph was captured");
  cuda::DeviceContext& ctx = cuda::context(impl_->device);
  ORDO_CUDA_CHECK(cudaGraphLaunch(impl_->exec, ctx.stream));
  cuda::counters().graph_launches.fetch_add(1, std::memory_order_relaxed);
}

namespace detail {

void* device_allocate(Device device, size_t nbytes) {
  return cuda::state(device).allocator.allocate(nbytes);
}

void device_release(Device device, void* ptr, size_t) {
  if (ptr == nullptr) return;
  cuda::DeviceState* s = cuda::existing_state(device);
  if (s != nullptr) s->allocator.release(ptr);
}

// Every copy runs on an ordo stream, so it is ordered after the kernels that
// wrote its source and before those that read its destination.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, nbytes);
    return;
  }
  if (src_device.is_cpu()) {
    // Host to device. ordo's host memory is pageable, for which
    // cudaMemcpyAsync returns only after the source has been staged: the
    // caller may free it as soon as this returns.
    cuda::refuse_while_capturing("a copy from host memory (replayed, it would read memory freed since)");
    cuda::DeviceContext& ctx = cuda::context(dst_device);
    ORDO_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, ctx.stream));
    cuda::counters().bytes_to_device.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
    return;
  }
  if (dst_device.is_cpu()) {
    // Device to host: the host reads dst as soon as this returns.
    cuda::refuse_while_capturing("the host waiting for the device (a read to the host or a synchronize)");
    cuda::DeviceContext& ctx = cuda::context(src_device);
    ORDO_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, ctx.stream));
    cuda::counters().bytes_to_host.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
    cuda::wait_and_raise_index_error(ctx);
    return;
  }
  if (dst_device == src_device) {
    cuda::DeviceContext& ctx = cuda::context(dst_device);
    ORDO_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, ctx.stream));
    if (cuda::g_capturing.load(std::memory_order_relaxed) == 0)  // as after_launch: a graph's copy is not run here
      cuda::counters().device_copies.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Between two devices (rare): both streams drained first, since the source
  // is written on one and the destination may still be in use on the other.
  cuda::DeviceContext& src_ctx = cuda::context(src_device);
  ORDO_CUDA_CHECK(cuda::wait_for_stream(src_ctx.stream));
  cuda::DeviceContext& dst_ctx = cuda::context(dst_device);
  ORDO_CUDA_CHECK(cuda::wait_for_stream(dst_ctx.stream));
  ORDO_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, nbytes,
                                      dst_ctx.stream));
  ORDO_CUDA_CHECK(cuda::wait_for_stream(dst_ctx.stream));
}

}  // namespace detail

}  // namespace ordo
