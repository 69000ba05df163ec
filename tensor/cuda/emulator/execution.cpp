// The emulator's execution of a launch (emulator.h): the driver's launch
// checks, blocks one after another, each block's threads as fibers, the block
// barrier, the warp operations with their mask checks, and the schedule.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <boost/context/fiber.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/cuda/emulator/checks.h"
#include "tensor/cuda/emulator/emulator.h"

namespace ordo::cuda::emulator {

thread_local const ThreadState* current_thread = nullptr;

namespace {

namespace bc = boost::context;

constexpr int kWarpSize = 32;
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockDim[3] = {1024, 1024, 64};
constexpr unsigned kMaxGridDim[3] = {0x7fffffffu, 65535, 65535};
// What a kernel may take without cudaFuncSetAttribute (which ordo never calls).
constexpr size_t kMaxDynamicSharedBytes = 48 * 1024;

// cudaError_t values (the stand-in cuda_runtime.h is not included here, to
// keep its device built-ins out of the emulator's own code).
constexpr int kSuccess = 0, kInvalidValue = 1, kInvalidConfiguration = 9, kLaunchFailure = 719;

// ---- errors ----------------------------------------------------------------------

struct LastError {
  int error = kSuccess;
  std::string detail;
};
thread_local LastError last_error;

// An error found inside a kernel: thrown in the fiber that found it, caught
// at its entry, and reported by the launch.
struct KernelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string dim_str(Dim d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

// ---- the schedule --------------------------------------------------------------------

enum class Order { forward, reverse, random, greedy_warp };

struct Schedule {
  Order order = Order::forward;
  std::mt19937_64 rng;
};

// "forward", "reverse", "greedy-warp" or "random:SEED" into `s`; false for anything else.
bool parse_schedule(const std::string& value, Schedule& s) {
  if (value == "forward" || value == "reverse" || value == "greedy-warp") {
    s.order = value == "forward" ? Order::forward : value == "reverse" ? Order::reverse : Order::greedy_warp;
    return true;
  }
  if (value.rfind("random:", 0) != 0) return false;
  char* end = nullptr;
  const unsigned long long seed = std::strtoull(value.c_str() + 7, &end, 10);
  if (end == value.c_str() + 7 || *end != '\0') return false;
  s.order = Order::random;
  s.rng.seed(seed);
  return true;
}

Schedule& schedule() {
  static Schedule s = [] {
    Schedule from_env;
    const char* env = std::getenv("ORDO_EMULATOR_SCHEDULE");
    if (env != nullptr && !parse_schedule(env, from_env)) {
      std::fprintf(stderr, "ordo emulator: ORDO_EMULATOR_SCHEDULE=%s is not forward, reverse, greedy-warp or random:SEED\n", env);
      std::exit(2);
    }
    return from_env;
  }();
  return s;
}

// `order` becomes 0..n-1 in the schedule's order.
void arrange(std::vector<int>& order, int n) {
  order.resize(n);
  std::iota(order.begin(), order.end(), 0);
  Schedule& s = schedule();
  if (s.order == Order::reverse) std::reverse(order.begin(), order.end());
  if (s.order == Order::random) std::shuffle(order.begin(), order.end(), s.rng);
}

// ---- fiber stacks -----------------------------------------------------------------------
//
// Pooled and reused across blocks and launches: a block only holds stacks for
// its threads that wait, and a kernel without barriers reuses one stack for
// every thread. Each stack has a guard page below it (stacks grow down).

constexpr size_t kStackBytes = 64 * 1024;

class StackPool {
 public:
  bc::stack_context allocate() {
    if (free_.empty()) grow();
    void* top = free_.back();
    free_.pop_back();
    bc::stack_context sc;
    sc.size = kStackBytes;
    sc.sp = top;
    return sc;
  }
  void deallocate(bc::stack_context& sc) { free_.push_back(sc.sp); }

 private:
  void grow() {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* base = mmap(nullptr, page + kStackBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
      std::perror("ordo emulator: cannot map a fiber stack");
      std::abort();
    }
    mprotect(base, page, PROT_NONE);
    free_.push_back(static_cast<char*>(base) + page + kStackBytes);
  }
  std::vector<void*> free_;
};

StackPool& stack_pool() {
  static StackPool* pool = new StackPool;  // never destroyed: fibers may outlive static destruction order
  return *pool;
}

struct PooledStack {
  bc::stack_context allocate() { return stack_pool().allocate(); }
  void deallocate(bc::stack_context& sc) { stack_pool().deallocate(sc); }
};

// ---- a block's threads -----------------------------------------------------------------

enum class Wait { none, block_barrier, warp_op, done };

struct Thread {
  ThreadState state;
  int linear = 0;
  Wait wait = Wait::none;
  bool started = false;
  bc::fiber fiber;      // the thread's own context
  bc::fiber scheduler;  // where it returns to when it waits or ends
  // Its part in the warp operation it waits at.
  WarpOp op = WarpOp::sync;
  unsigned mask = 0;
  uint64_t value = 0;
  int operand = 0, width = kWarpSize;
  uint64_t result = 0;
};

struct Block {
  const char* kernel = "";
  KernelBody body = nullptr;
  const void* closure = nullptr;
  std::vector<Thread> threads;
  int live = 0;                  // threads that have not ended
  int at_barrier = 0;            // live threads waiting at __syncthreads
  std::string error;             // the first error a thread found
};

Block* current_block = nullptr;
Thread* running = nullptr;

std::string where(const Thread& t) {
  return "thread " + dim_str(t.state.thread_idx) + " of block " + dim_str(t.state.block_idx) +
         " of kernel '" + current_block->kernel + "'";
}

[[noreturn]] void kernel_error(const std::string& what) {
  throw KernelError(where(*running) + ": " + what);
}

// The running thread waits (`why`) until the scheduler resumes it.
void wait(Wait why) {
  Thread& self = *running;
  self.wait = why;
  self.scheduler = std::move(self.scheduler).resume();
  running = &self;  // the scheduler ran others meanwhile
  current_thread = &self.state;
  access_checks::running_thread = self.linear;
}

void release_barrier(Block& b) {
  for (Thread& t : b.threads)
    if (t.wait == Wait::block_barrier) t.wait = Wait::none;
  b.at_barrier = 0;
  access_checks::block_barrier();
}

int warp_of(const Thread& t) { return t.linear / kWarpSize; }

// The lanes of warp `w` that exist in a block of `threads` threads.
unsigned existing_lanes(int w, int threads) {
  const int n = std::min(kWarpSize, threads - w * kWarpSize);
  return n >= kWarpSize ? 0xffffffffu : (1u << n) - 1;
}

std::string hex(unsigned mask) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", mask);
  return s;
}

// ---- the warp operations -------------------------------------------------------------

// The lane a shuffle reads, or -1 for its own value (outside its segment).
int source_lane(const Thread& t, int lane) {
  const int width = t.width, base = lane & ~(width - 1), offset = lane & (width - 1);
  switch (t.op) {
    case WarpOp::shfl: return base + (t.operand & (width - 1));
    case WarpOp::shfl_up: return offset >= t.operand ? lane - t.operand : -1;
    case WarpOp::shfl_down: return offset + t.operand < width ? lane + t.operand : -1;
    case WarpOp::shfl_xor: {
      const int src = lane ^ t.operand;
      return src >= base && src < base + width ? src : -1;
    }
    default: return -1;
  }
}

// Every lane of `mask` has arrived (first = the warp's first thread): each gets its result.
void complete_warp_op(Block& b, int first, unsigned mask) {
  if (b.threads[first + __builtin_ctz(mask)].op == WarpOp::sync) access_checks::warp_sync(first, mask);
  for (int lane = 0; lane < kWarpSize; ++lane) {
    if (!(mask & (1u << lane))) continue;
    Thread& t = b.threads[first + lane];
    switch (t.op) {
      case WarpOp::sync:
      case WarpOp::matrix: t.result = 0; break;
      case WarpOp::match_any: {
        unsigned same = 0;
        for (int other = 0; other < kWarpSize; ++other)
          if ((mask & (1u << other)) && b.threads[first + other].value == t.value) same |= 1u << other;
        t.result = same;
        break;
      }
      case WarpOp::ballot: {
        unsigned set = 0;
        for (int other = 0; other < kWarpSize; ++other)
          if ((mask & (1u << other)) && b.threads[first + other].value != 0) set |= 1u << other;
        t.result = set;
        break;
      }
      default: {
        const int src = source_lane(t, lane);
        if (src >= 0 && !(mask & (1u << src)))
          throw KernelError(where(t) + ": " + warp_op_name(t.op) + " reads lane " + std::to_string(src) +
                            ", which its mask " + hex(mask) + " does not name (its value is undefined)");
        t.result = src < 0 ? t.value : b.threads[first + src].value;
      }
    }
    t.wait = Wait::none;
  }
}

}  // namespace

bool set_schedule(const std::string& value) {
  Schedule parsed;
  if (!parse_schedule(value, parsed)) return false;
  schedule() = std::move(parsed);
  return true;
}

const char* warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::sync: return "__syncwarp";
    case WarpOp::shfl: return "__shfl_sync";
    case WarpOp::shfl_up: return "__shfl_up_sync";
    case WarpOp::shfl_down: return "__shfl_down_sync";
    case WarpOp::shfl_xor: return "__shfl_xor_sync";
    case WarpOp::match_any: return "__match_any_sync";
    case WarpOp::ballot: return "__ballot_sync";
    case WarpOp::matrix: return "a wmma operation (load_matrix_sync, mma_sync or store_matrix_sync)";
  }
  return "a warp operation";
}

void thread_fence() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (current_thread != nullptr) access_checks::thread_fence();
}

void sync_threads() {
  Block& b = *current_block;
  ++b.at_barrier;
  if (b.at_barrier == b.live) {  // the last to arrive goes on without waiting
    release_barrier(b);
    return;
  }
  wait(Wait::block_barrier);
}

uint64_t warp_exchange(WarpOp op, unsigned mask, uint64_t value, int operand, int width) {
  Block& b = *current_block;
  Thread& self = *running;
  const int lane = self.linear % kWarpSize, first = self.linear - lane;
  const std::string_view name = warp_op_name(op);  // for the errors below
  if (width <= 0 || width > kWarpSize || (width & (width - 1)) != 0)
    kernel_error(std::string(name) + ": width " + std::to_string(width) + " is not a power of two up to 32");
  if (!(mask & (1u << lane)))
    kernel_error(std::string(name) + ": its mask " + hex(mask) + " does not name the calling lane " + std::to_string(lane));
  const unsigned exists = existing_lanes(warp_of(self), static_cast<int>(b.threads.size()));
  if (mask & ~exists)
    kernel_error(std::string(name) + ": its mask " + hex(mask) + " names lanes " + hex(mask & ~exists) +
                 ", which do not exist (a block of " + std::to_string(b.threads.size()) + " threads)");
  unsigned arrived = 0;
  for (int other = 0; other < kWarpSize; ++other) {
    if (!(exists & (1u << other)) || other == lane) continue;
    const Thread& t = b.threads[first + other];
    const bool named = mask & (1u << other);
    if (named && t.wait == Wait::done)
      kernel_error(std::string(name) + ": its mask " + hex(mask) + " names lane " + std::to_string(other) +
                   ", which has ended");
    if (t.wait != Wait::warp_op) continue;
    const bool names_me = t.mask & (1u << lane);
    if ((named || names_me) && (t.op != op || t.mask != mask))
      kernel_error(std::string(name) + " with mask " + hex(mask) + " meets lane " + std::to_string(other) + " waiting in " +
                   warp_op_name(t.op) + " with mask " + hex(t.mask));
    if (named) arrived |= 1u << other;
  }
  self.op = op;
  self.mask = mask;
  self.value = value;
  self.operand = operand;
  self.width = width;
  if ((arrived | (1u << lane)) == mask) {
    complete_warp_op(b, first, mask);
  } else {
    wait(Wait::warp_op);
  }
  return self.result;
}

namespace {

// A thread ends: a barrier may now be complete, and no lane may wait for it.
void on_thread_end(Block& b, Thread& t) {
  t.wait = Wait::done;
  --b.live;
  if (b.at_barrier > 0 && b.at_barrier == b.live) release_barrier(b);
  const int lane = t.linear % kWarpSize, first = t.linear - lane;
  for (int other = 0; other < kWarpSize && first + other < static_cast<int>(b.threads.size()); ++other) {
    const Thread& waiting = b.threads[first + other];
    if (waiting.wait == Wait::warp_op && (waiting.mask & (1u << lane)) && b.error.empty())
      b.error = where(waiting) + ": " + warp_op_name(waiting.op) + " with mask " + hex(waiting.mask) +
                " names lane " + std::to_string(lane) + ", which ended without arriving";
  }
}

void start_fiber(Block& b, Thread& t) {
  t.started = true;
  t.fiber = bc::fiber(std::allocator_arg, PooledStack{}, [&b, &t](bc::fiber&& scheduler) {
    t.scheduler = std::move(scheduler);
    try {
      b.body(b.closure);
    } catch (const KernelError& e) {
      if (b.error.empty()) b.error = e.what();
    }
    return std::move(t.scheduler);
  });
}

// Runs `t` until it waits or ends.
void resume(Block& b, Thread& t) {
  if (!t.started) start_fiber(b, t);
  running = &t;
  current_thread = &t.state;
  access_checks::running_thread = t.linear;
  t.wait = Wait::none;
  t.fiber = std::move(t.fiber).resume();
  running = nullptr;
  current_thread = nullptr;
  if (!t.fiber) on_thread_end(b, t);
}

std::string deadlock_report(const Block& b) {
  std::string s = "deadlock in block " + dim_str(b.threads[0].state.block_idx) + " of kernel '" + b.kernel +
                  "': " + std::to_string(b.at_barrier) + " threads wait at __syncthreads";
  for (const Thread& t : b.threads) {
    if (t.wait != Wait::warp_op) continue;
    s += "; thread " + std::to_string(t.linear) + " waits in " + warp_op_name(t.op) + " with mask " + hex(t.mask);
    break;  // the first is enough to find the place
  }
  return s;
}

// Runs each ready thread of `order`, in that order, until it waits or ends;
// true when any ran.
bool run_ready(Block& b, const std::vector<int>& order) {
  bool ran = false;
  for (int i : order) {
    Thread& t = b.threads[i];
    if (t.wait != Wait::none) continue;
    resume(b, t);
    ran = true;
    if (!b.error.empty()) break;
  }
  return ran;
}

void run_block(Block& b, std::vector<int>& order) {
  b.live = static_cast<int>(b.threads.size());
  b.at_barrier = 0;
  const int threads = static_cast<int>(b.threads.size());
  while (b.live > 0 && b.error.empty()) {
    bool ran = false;
    if (schedule().order == Order::greedy_warp) {
      // Each warp in turn runs until none of its threads is ready (all wait
      // at __syncthreads, or have ended) before the next one resumes.
      for (int first = 0; first < threads && b.error.empty(); first += kWarpSize) {
        order.resize(static_cast<size_t>(std::min(kWarpSize, threads - first)));
        std::iota(order.begin(), order.end(), first);
        while (b.error.empty() && run_ready(b, order)) ran = true;
      }
    } else {
      arrange(order, threads);
      ran = run_ready(b, order);
    }
    if (!ran && b.error.empty()) b.error = deadlock_report(b);
  }
  for (Thread& t : b.threads) t.fiber = bc::fiber();  // unwinds the threads an error left waiting
}

// With ORDO_EMULATOR_LAUNCH_LOG=FILE, each distinct launch shape (kernel,
// threads per block, dynamic shared bytes) is appended to FILE once, as
// "name<TAB>threads<TAB>bytes": tools/check_cuda_resources.sh joins it with
// the registers ptxas gives each kernel in the nvcc build, to check every
// launch configuration the tests use against the SM's register file.
void log_launch_shape(const char* name, Dim block, size_t shared_bytes) {
  static const char* path = std::getenv("ORDO_EMULATOR_LAUNCH_LOG");
  if (path == nullptr || *path == '\0') return;
  static std::set<std::string> seen;  // launches are serialised (DeviceSection)
  const std::string line = std::string(name) + "\t" + std::to_string(uint64_t(block.x) * block.y * block.z) + "\t" +
                           std::to_string(shared_bytes) + "\n";
  if (!seen.insert(line).second) return;
  if (std::FILE* f = std::fopen(path, "a")) {
    std::fputs(line.c_str(), f);
    std::fclose(f);
  }
}

std::string check_launch(Dim grid, Dim block, size_t shared_bytes, int& error) {
  const unsigned bd[3] = {block.x, block.y, block.z}, gd[3] = {grid.x, grid.y, grid.z};
  const char* axis[3] = {"x", "y", "z"};
  error = kInvalidConfiguration;
  for (int a = 0; a < 3; ++a) {
    if (bd[a] == 0 || bd[a] > kMaxBlockDim[a])
      return std::string("blockDim.") + axis[a] + " = " + std::to_string(bd[a]) + " is outside 1.." +
             std::to_string(kMaxBlockDim[a]);
    if (gd[a] == 0 || gd[a] > kMaxGridDim[a])
      return std::string("gridDim.") + axis[a] + " = " + std::to_string(gd[a]) + " is outside 1.." +
             std::to_string(kMaxGridDim[a]);
  }
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  if (threads > kMaxThreadsPerBlock)
    return "a block of " + std::to_string(threads) + " threads " + dim_str(block) + " exceeds " +
           std::to_string(kMaxThreadsPerBlock);
  error = kInvalidValue;
  if (shared_bytes > kMaxDynamicSharedBytes)
    return std::to_string(shared_bytes) + " bytes of dynamic shared memory exceed the " +
           std::to_string(kMaxDynamicSharedBytes) + " a kernel may use";
  error = kSuccess;
  return "";
}

}  // namespace

int run_kernel(const char* name, Dim grid, Dim block, size_t shared_bytes, KernelBody body,
               const void* closure) {
  int error = kSuccess;
  const std::string bad = check_launch(grid, block, shared_bytes, error);
  if (error != kSuccess) {
    set_launch_error(error, "kernel '" + std::string(name) + "': " + bad);
    return error;
  }
  DeviceSection section(name);  // also keeps launches from other host threads out
  log_launch_shape(name, block, shared_bytes);
  access_checks::begin_launch(name);
  Block b;
  b.kernel = name;
  b.body = body;
  b.closure = closure;
  b.threads.resize(static_cast<size_t>(block.x) * block.y * block.z);
  for (unsigned z = 0, i = 0; z < block.z; ++z)
    for (unsigned y = 0; y < block.y; ++y)
      for (unsigned x = 0; x < block.x; ++x, ++i) {
        Thread& t = b.threads[i];
        t.linear = static_cast<int>(i);
        t.state.thread_idx = {x, y, z};
        t.state.block_dim = block;
        t.state.grid_dim = grid;
      }
  const uint64_t blocks = uint64_t(grid.x) * grid.y * grid.z;
  std::vector<int> order;
  // Blocks in the schedule's order too (a random order of a huge grid is a
  // random permutation of its first 2^31 blocks' indices, read in chunks).
  std::vector<int> block_order;
  constexpr uint64_t kChunk = 1 << 16;
  Block* previous = current_block;
  current_block = &b;
  for (uint64_t chunk = 0; chunk < blocks && b.error.empty(); chunk += kChunk) {
    const uint64_t count = std::min(kChunk, blocks - chunk);
    arrange(block_order, static_cast<int>(count));
    const uint64_t base = schedule().order == Order::reverse ? blocks - chunk - count : chunk;
    for (int k : block_order) {
      const uint64_t linear = base + static_cast<uint64_t>(k);
      const Dim idx{static_cast<unsigned>(linear % grid.x), static_cast<unsigned>(linear / grid.x % grid.y),
                    static_cast<unsigned>(linear / (uint64_t(grid.x) * grid.y))};
      for (Thread& t : b.threads) {
        t.state.block_idx = idx;
        t.wait = Wait::none;
        t.started = false;
      }
      access_checks::begin_block(idx, linear, static_cast<int>(b.threads.size()));
      run_block(b, order);
      if (!b.error.empty()) break;
    }
  }
  current_block = previous;
  if (!b.error.empty()) {
    set_launch_error(kLaunchFailure, b.error);
    return kLaunchFailure;
  }
  return kSuccess;
}

void kernel_fail(const std::string& what) { kernel_error(what); }

void record_kernel_error(const std::string& what) {
  if (current_block != nullptr && current_block->error.empty()) current_block->error = what;
}

void set_launch_error(int error, const std::string& detail) {
  last_error.error = error;
  last_error.detail = detail;
}

int peek_launch_error() { return last_error.error; }

int take_launch_error() {
  const int e = last_error.error;
  last_error.error = kSuccess;
  return e;
}

std::string take_error_detail() {
  std::string d = std::move(last_error.detail);
  last_error.detail.clear();
  return d;
}

}  // namespace ordo::cuda::emulator
