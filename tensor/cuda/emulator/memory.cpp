// The emulator's device memory (emulator.h).
//
// Every allocation is its own mapping: the pages that hold it, then a guard
// page. The allocation ends against the guard page when its size is a
// multiple of 256 (cudaMalloc's alignment, which ordo's vector loads rely on,
// and what the caching allocator's rounded blocks always are); otherwise it
// ends as close to it as that alignment allows.
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

namespace ordo::cuda::emulator {

namespace {

constexpr size_t kAlignment = 256;
constexpr size_t kArenaBytes = size_t(80) << 30;  // an H100's 80 GB

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
  const Allocation* a = nearest_allocation(addr);
  const uintptr_t ptr = a ? reinterpret_cast<uintptr_t>(a->ptr) : 0;
  if (a == nullptr) {
    std::snprintf(where, sizeof where, "outside every device allocation");
  } else if (addr >= ptr && addr < ptr + a->size) {
    std::snprintf(where, sizeof where, "byte %" PRIuPTR " of the device allocation of %zu bytes at %p",
                  addr - ptr, a->size, static_cast<void*>(a->ptr));
  } else if (addr >= ptr + a->size) {
    std::snprintf(where, sizeof where, "%" PRIuPTR " bytes past the end of the device allocation of %zu bytes at %p",
                  addr - ptr - a->size, a->size, static_cast<void*>(a->ptr));
  } else {
    std::snprintf(where, sizeof where, "%" PRIuPTR " bytes before the device allocation of %zu bytes at %p",
                  ptr - addr, a->size, static_cast<void*>(a->ptr));
  }
  char message[1200];
  const int n = std::snprintf(message, sizeof message,
                              "ordo emulator: invalid device memory access: %s touched %p, %s\n", who,
                              reinterpret_cast<void*>(addr), where);
  if (n > 0) (void)!write(2, message, static_cast<size_t>(std::min<int>(n, sizeof message - 1)));
}

bool is_device_address(uintptr_t addr) {
  const Allocation* a = nearest_allocation(addr);
  return a != nullptr && addr < reinterpret_cast<uintptr_t>(a->base) + a->data_bytes + page_size();
}

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
  std::lock_guard<std::mutex> lock(allocations_mutex);
  if (bytes_in_use + bytes > kArenaBytes) return nullptr;
  void* base = mmap(nullptr, data_bytes + page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  if (section_depth == 0) install_fault_handler();  // host code may touch it from now on
  Allocation a;
  a.base = static_cast<char*>(base);
  a.data_bytes = data_bytes;
  a.size = bytes;
  const uintptr_t end = reinterpret_cast<uintptr_t>(a.base) + data_bytes;
  a.ptr = reinterpret_cast<char*>((end - bytes) / kAlignment * kAlignment);
  allocations().emplace(reinterpret_cast<uintptr_t>(a.base), a);
  bytes_in_use += bytes;
  return a.ptr;
}

bool device_free(void* ptr) {
  std::lock_guard<std::mutex> lock(allocations_mutex);
  const Allocation* a = nearest_allocation(reinterpret_cast<uintptr_t>(ptr));
  if (a == nullptr || a->ptr != ptr) return false;
  munmap(a->base, a->data_bytes + page_size());
  bytes_in_use -= a->size;
  allocations().erase(reinterpret_cast<uintptr_t>(a->base));
  return true;
}

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
