// The emulator's device memory (emulator.h).
//
// Every allocation is its own range of pages inside one reserved range of
// addresses, the arena (so that its shadow, shadow.h, is found by
// arithmetic): the pages that hold it, then a guard page. The allocation
// ends against the guard page when its size is a multiple of 256
// (cudaMalloc's alignment, which ordo's vector loads rely on, and what the
// caching allocator's rounded blocks always are); otherwise it ends as close
// to it as that alignment allows, and the shadow marks the bytes between as
// no access. Freed ranges return to the arena (their pages and shadow
// dropped) and are handed out again.
//
// Outside a DeviceSection all device pages are PROT_NONE. Inside one, the
// first touch of an allocation faults, and the SIGSEGV handler unprotects
// that allocation's pages and lets the access go on; the section's end
// protects them again. A kernel therefore pays one fault per allocation it
// touches, and host code that dereferences a device pointer faults, as would
// any access to a guard page or outside every allocation: those are reported
// (the kernel with its block and thread, or the host code, and the nearest
// allocation) and end the process with SIGSEGV.
//
// The SIGSEGV handler is installed again at every section (test frameworks
// install their own per test); faults that are not about device memory go
// on to the handler that was there before.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

#include "tensor/cuda/emulator/emulator.h"
#include "tensor/cuda/emulator/shadow.h"

namespace ordo::cuda::emulator {

namespace {

constexpr size_t kAlignment = 256;
constexpr size_t kArenaBytes = size_t(80) << 30;           // an H100's 80 GB: what may be in use at once
constexpr size_t kArenaAddressBytes = size_t(512) << 30;   // the addresses reserved for it

size_t page_size() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

struct Allocation {
  char* base;         // the mapping: data pages, then one guard page
  size_t data_bytes;  // the data pages
  char* ptr;          // what cudaMalloc returned
  size_t size;        // what was asked for
};

// Keyed by mapping base. Changed only by cudaMalloc and cudaFree, which no
// kernel calls; the signal handler reads it.
std::map<uintptr_t, Allocation>& allocations() {
  static auto* m = new std::map<uintptr_t, Allocation>;
  return *m;
}
std::mutex allocations_mutex;
size_t bytes_in_use = 0;

// ---- the arena ---------------------------------------------------------------------------
//
// Reserved once (PROT_NONE, no memory behind it) with its two shadows
// (readable and writable, pages appearing as they are touched). Free ranges
// are kept by address and merged with their neighbours; an allocation takes
// the first that fits.

void* reserve(size_t bytes, int prot) {
  void* p = mmap(nullptr, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "ordo emulator: cannot reserve %zu bytes of addresses for device memory and its shadow "
                 "(vm.overcommit_memory=2 refuses MAP_NORESERVE)\n", bytes);
    std::abort();
  }
  return p;
}

std::map<uintptr_t, size_t>& free_ranges() {
  static auto* m = new std::map<uintptr_t, size_t>;
  return *m;
}

void reserve_arena() {
  if (shadow::arena.bytes != 0) return;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(reserve(kArenaAddressBytes, PROT_NONE));
  shadow::arena.state = static_cast<uint8_t*>(reserve(kArenaAddressBytes, PROT_READ | PROT_WRITE));
  shadow::arena.writers = static_cast<uint64_t*>(reserve(kArenaAddressBytes * 2, PROT_READ | PROT_WRITE));
  shadow::arena.begin = begin;
  shadow::arena.bytes = kArenaAddressBytes;
  free_ranges().emplace(begin, kArenaAddressBytes);
}

// `bytes` (a multiple of the page size) of arena addresses, or nullptr.
char* take_range(size_t bytes) {
  auto& ranges = free_ranges();
  for (auto it = ranges.begin(); it != ranges.end(); ++it) {
    if (it->second < bytes) continue;
    const uintptr_t start = it->first;
    const size_t left = it->second - bytes;
    ranges.erase(it);
    if (left > 0) ranges.emplace(start + bytes, left);
    return reinterpret_cast<char*>(start);
  }
  return nullptr;
}

// Gives a range back: its pages and its shadow are dropped (they read zero:
// no access, no writer), and it merges with free neighbours.
void give_back_range(char* base, size_t bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(base);
  madvise(base, bytes, MADV_DONTNEED);
  madvise(shadow::state_of(start), bytes, MADV_DONTNEED);
  madvise(shadow::writer_of(start), bytes * 2, MADV_DONTNEED);
  auto& ranges = free_ranges();
  auto next = ranges.lower_bound(start);
  uintptr_t begin = start;
  size_t size = bytes;
  if (next != ranges.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      begin = prev->first;
      size += prev->second;
      ranges.erase(prev);
    }
  }
  if (next != ranges.end() && next->first == start + bytes) {
    size += next->second;
    ranges.erase(next);
  }
  ranges.emplace(begin, size);
}

// The allocation whose mapping (guard page included) holds `addr`, or the
// nearest one below it; nullptr when there is none below.
const Allocation* nearest_allocation(uintptr_t addr) {
  auto& all = allocations();
  auto it = all.upper_bound(addr);
  if (it == all.begin()) return nullptr;
  return &std::prev(it)->second;
}

// ---- sections --------------------------------------------------------------------------

std::recursive_mutex section_mutex;
thread_local int section_depth = 0;
thread_local const char* section_name = nullptr;

// The allocations the current section has unprotected.
constexpr int kMaxTouched = 4096;
const Allocation* touched[kMaxTouched];
int touched_count = 0;
bool touched_overflow = false;

void protect(const Allocation& a, int prot) {
  if (mprotect(a.base, a.data_bytes, prot) != 0) {
    std::perror("ordo emulator: mprotect");
    std::abort();
  }
}

void protect_touched() {
  if (touched_overflow) {
    for (const auto& entry : allocations()) protect(entry.second, PROT_NONE);
  } else {
    for (int i = 0; i < touched_count; ++i) protect(*touched[i], PROT_NONE);
  }
  touched_count = 0;
  touched_overflow = false;
}

// ---- tensors inside allocations ----------------------------------------------------------
//
// ordo's caching allocator serves tensors from blocks it rounds up and reuses
// (tensor/cuda/runtime.cu); it reports each block it hands out with the
// bytes asked for, so that the bytes past them are no access, as the bytes
// past a cudaMalloc are (Check::bounds).

struct TensorBlock {
  size_t bytes, block_bytes;
  bool cached;  // freed: the caching allocator holds it for the next tensor
};
std::map<uintptr_t, TensorBlock>& tensor_blocks() {  // under allocations_mutex
  static auto* m = new std::map<uintptr_t, TensorBlock>;
  return *m;
}

void forget_tensors_in(const char* ptr, size_t bytes) {
  auto& blocks = tensor_blocks();
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  blocks.erase(blocks.lower_bound(p), blocks.lower_bound(p + bytes));
}

// Memory a tensor or a cudaMalloc gets: not yet written, and with
// Check::poison holding the poison pattern.
void note_fresh_memory(void* ptr, size_t bytes) {
  shadow::set_state(ptr, bytes, shadow::kUnwritten);
  if (checks() & Check::poison) {
    DeviceSection section("the emulator's poisoning of fresh device memory");
    std::memset(ptr, shadow::kPoisonByte, bytes);
  }
}

// ---- the fault handler ---------------------------------------------------------------------

struct sigaction previous_action;

// Says who touched what, in the few words a signal handler can afford.
void describe_fault(uintptr_t addr) {
  char who[512];
  if (section_depth > 0 && current_thread != nullptr) {
    const ThreadState& t = *current_thread;
    std::snprintf(who, sizeof who, "kernel '%s' (block (%u,%u,%u), thread (%u,%u,%u))", section_name,
                  t.block_idx.x, t.block_idx.y, t.block_idx.z, t.thread_idx.x, t.thread_idx.y, t.thread_idx.z);
  } else if (section_depth > 0) {
    std::snprintf(who, sizeof who, "'%s'", section_name);
  } else {
    std::snprintf(who, sizeof who, "host code (outside any kernel or cudaMemcpy: device memory is not "
                  "accessible to the host)");
  }
  char where[512];
  shadow::describe(reinterpret_cast<void*>(addr), where, sizeof where);
  char message[1200];
  const int n = std::snprintf(message, sizeof message,
                              "ordo emulator: invalid device memory access: %s touched %s\n", who, where);
  if (n > 0) (void)!write(2, message, static_cast<size_t>(std::min<int>(n, sizeof message - 1)));
}

// Inside the arena: a live allocation, a guard page, or freed memory.
bool is_device_address(uintptr_t addr) { return shadow::in_arena(addr); }

void on_fault(int sig, siginfo_t* info, void* context) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  const Allocation* a = nearest_allocation(addr);
  const bool in_data = a != nullptr && addr < reinterpret_cast<uintptr_t>(a->base) + a->data_bytes;
  if (section_depth > 0 && in_data) {  // a first touch inside a section: let it through
    protect(*a, PROT_READ | PROT_WRITE);
    if (touched_count < kMaxTouched) {
      touched[touched_count++] = a;
    } else {
      touched_overflow = true;
    }
    return;
  }
  if (section_depth > 0 || is_device_address(addr)) {
    describe_fault(addr);
    signal(SIGSEGV, SIG_DFL);  // the access runs again and ends the process
    return;
  }
  // Not about device memory: whoever handled it before us decides.
  if (previous_action.sa_flags & SA_SIGINFO) {
    if (previous_action.sa_sigaction != nullptr) return previous_action.sa_sigaction(sig, info, context);
  } else if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN) {
    return previous_action.sa_handler(sig);
  }
  signal(SIGSEGV, SIG_DFL);
}

// The handler runs on its own stack: a fiber's stack is small.
void install_fault_handler() {
  thread_local bool has_alternate_stack = false;
  if (!has_alternate_stack) {
    stack_t ss{};
    ss.ss_size = 64 * 1024;
    ss.ss_sp = std::malloc(ss.ss_size);
    sigaltstack(&ss, nullptr);
    has_alternate_stack = true;
  }
  struct sigaction action {};
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  struct sigaction old {};
  sigaction(SIGSEGV, &action, &old);
  if (old.sa_sigaction != on_fault) previous_action = old;
}

}  // namespace

// ---- allocations ------------------------------------------------------------------------------

void* device_allocate(size_t bytes) {
  if (bytes == 0) bytes = 1;
  const size_t page = page_size();
  const size_t data_bytes = (bytes + page - 1) / page * page;
  char* base = nullptr;
  {
    std::lock_guard<std::mutex> lock(allocations_mutex);
    if (bytes_in_use + bytes > kArenaBytes) return nullptr;
    reserve_arena();
    base = take_range(data_bytes + page);
    if (base == nullptr) return nullptr;
    if (section_depth == 0) install_fault_handler();  // host code may touch it from now on
    Allocation a;
    a.base = base;
    a.data_bytes = data_bytes;
    a.size = bytes;
    const uintptr_t end = reinterpret_cast<uintptr_t>(a.base) + data_bytes;
    a.ptr = reinterpret_cast<char*>((end - bytes) / kAlignment * kAlignment);
    allocations().emplace(reinterpret_cast<uintptr_t>(a.base), a);
    bytes_in_use += bytes;
    base = a.ptr;
  }
  note_fresh_memory(base, bytes);
  return base;
}

bool device_free(void* ptr) {
  std::lock_guard<std::mutex> lock(allocations_mutex);
  const Allocation* a = nearest_allocation(reinterpret_cast<uintptr_t>(ptr));
  if (a == nullptr || a->ptr != ptr) return false;
  char* base = a->base;
  const size_t span = a->data_bytes + page_size();
  bytes_in_use -= a->size;
  forget_tensors_in(a->ptr, a->size);
  allocations().erase(reinterpret_cast<uintptr_t>(base));
  give_back_range(base, span);
  return true;
}

void note_tensor_block(void* ptr, size_t bytes, size_t block_bytes) {
  {
    std::lock_guard<std::mutex> lock(allocations_mutex);
    tensor_blocks()[reinterpret_cast<uintptr_t>(ptr)] = {bytes, block_bytes, false};
  }
  note_fresh_memory(ptr, bytes);
  if (checks() & Check::bounds) shadow::set_state(static_cast<char*>(ptr) + bytes, block_bytes - bytes, shadow::kNoAccess);
}

void note_block_cached(void* ptr, size_t block_bytes) {
  {
    std::lock_guard<std::mutex> lock(allocations_mutex);
    tensor_blocks()[reinterpret_cast<uintptr_t>(ptr)] = {0, block_bytes, true};
  }
  if (checks() & Check::bounds) shadow::set_state(ptr, block_bytes, shadow::kNoAccess);
}

namespace shadow {

Arena arena;

void set_state(const void* p, size_t bytes, uint8_t state) {
  if (bytes > 0) std::memset(state_of(reinterpret_cast<uintptr_t>(p)), state, bytes);
}

const void* find_state(const void* p, size_t bytes, uint8_t state) {
  const uint8_t* s = state_of(reinterpret_cast<uintptr_t>(p));
  const void* hit = std::memchr(s, state, bytes);
  return hit == nullptr ? nullptr : static_cast<const char*>(p) + (static_cast<const uint8_t*>(hit) - s);
}

const char* describe(const void* p, char* buffer, size_t size) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  auto& blocks = tensor_blocks();
  auto it = blocks.upper_bound(addr);
  if (it != blocks.begin() && addr < std::prev(it)->first + std::prev(it)->second.block_bytes) {
    const uintptr_t start = std::prev(it)->first;
    const TensorBlock& t = std::prev(it)->second;
    if (t.cached) {
      std::snprintf(buffer, size,
                    "byte %" PRIuPTR " of a %zu-byte block the caching allocator holds free (its tensor was freed)",
                    addr - start, t.block_bytes);
    } else if (addr < start + t.bytes) {
      std::snprintf(buffer, size, "byte %" PRIuPTR " of the %zu-byte tensor at %p", addr - start, t.bytes,
                    reinterpret_cast<void*>(start));
    } else {
      std::snprintf(buffer, size,
                    "%" PRIuPTR " bytes past the end of the %zu-byte tensor at %p (inside the caching allocator's "
                    "block of %zu bytes)",
                    addr - start - t.bytes, t.bytes, reinterpret_cast<void*>(start), t.block_bytes);
    }
    return buffer;
  }
  const Allocation* a = nearest_allocation(addr);
  const uintptr_t ptr = a ? reinterpret_cast<uintptr_t>(a->ptr) : 0;
  if (a == nullptr || addr >= reinterpret_cast<uintptr_t>(a->base) + a->data_bytes + page_size()) {
    std::snprintf(buffer, size, "%p, outside every live device allocation", p);  // freed, or never allocated
  } else if (addr >= ptr + a->size) {
    std::snprintf(buffer, size, "%" PRIuPTR " bytes past the end of the device allocation of %zu bytes at %p",
                  addr - ptr - a->size, a->size, static_cast<void*>(a->ptr));
  } else if (addr >= ptr) {
    std::snprintf(buffer, size, "byte %" PRIuPTR " of the device allocation of %zu bytes at %p", addr - ptr,
                  a->size, static_cast<void*>(a->ptr));
  } else {
    std::snprintf(buffer, size, "%" PRIuPTR " bytes before the device allocation of %zu bytes at %p", ptr - addr,
                  a->size, static_cast<void*>(a->ptr));
  }
  return buffer;
}

}  // namespace shadow

size_t device_bytes_in_use() {
  std::lock_guard<std::mutex> lock(allocations_mutex);
  return bytes_in_use;
}

bool is_device_range(const void* ptr, size_t bytes) {
  std::lock_guard<std::mutex> lock(allocations_mutex);
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  const Allocation* a = nearest_allocation(p);
  if (a == nullptr) return false;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(a->ptr);
  return p >= begin && bytes <= a->size && p - begin <= a->size - bytes;
}

[[noreturn]] void report_bad_access(const char* what, const void* ptr, size_t bytes) {
  char message[600];
  const int n = std::snprintf(message, sizeof message,
                              "ordo emulator: invalid device memory access: %s would touch %zu bytes at %p, "
                              "outside every device allocation\n",
                              what, bytes, ptr);
  if (n > 0) (void)!write(2, message, static_cast<size_t>(std::min<int>(n, sizeof message - 1)));
  signal(SIGSEGV, SIG_DFL);
  raise(SIGSEGV);
  std::abort();
}

DeviceSection::DeviceSection(const char* name) {
  section_mutex.lock();
  if (section_depth++ == 0) {
    section_name = name;
    install_fault_handler();
  }
}

DeviceSection::~DeviceSection() {
  if (--section_depth == 0) {
    protect_touched();
    section_name = nullptr;
  }
  section_mutex.unlock();
}

}  // namespace ordo::cuda::emulator
