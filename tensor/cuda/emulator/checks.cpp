// The emulator's checks of every memory access a kernel makes (emulator.h,
// "The checks").
//
// How accesses are seen: the CUDA sources (tensor/cuda/*.cu, and the test
// kernels of tests/tensor/test_emulator*.cpp) are compiled with GCC's
// ThreadSanitizer instrumentation (-fsanitize=thread) but linked without its
// runtime: every load, store and atomic they make calls a __tsan_* function,
// and those are defined here. Outside a kernel (current_thread is null) a call
// returns at once; inside one, an address in the device arena goes to the
// device checks, one in the program's .bss — where the emulator's __shared__
// arrays are, as statics — to the shared-memory checks, anything else (the
// fiber's stack, host memory) is let through.
//
// Shared memory (Check::race, initcheck, poison): per byte, when and by which
// thread it was last written, and up to two threads that read it since. Time
// is a counter that moves at every block start, __syncthreads and __syncwarp;
// an earlier access by another thread is ordered before this one when a
// __syncthreads came between, or a __syncwarp naming both threads of one warp
// (compute-sanitizer racecheck's rule). A read of a byte no thread of the
// block wrote is an initcheck error, and reads the poison pattern.
//
// Device memory (Check::bounds, initcheck, conflict, race): the shadow of
// shadow.h. A byte marked no access (past a tensor's end inside its
// caching-allocator block, a freed block, alignment padding, a guard page) is
// a bounds error; a read whose first byte was never written is an initcheck
// error (the first byte only: a struct copied whole reads its padding); a
// plain write to bytes another block of the launch wrote, or a read of them,
// is a conflict (blocks run in no defined order on a GPU); a read or write of
// bytes another thread of the same block wrote, unordered by the rule above,
// is a race (a lost update `o[r] += v` by lanes sharing r). Only the last
// writer is kept for device memory: a write after another thread's read is
// not seen there. Atomics neither race nor record.
#include <cxxabi.h>
#include <elf.h>
#include <signal.h>
#include <sys/mman.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tensor/cuda/emulator/checks.h"
#include "tensor/cuda/emulator/emulator.h"
#include "tensor/cuda/emulator/shadow.h"

extern "C" char __bss_start[], _end[];  // the linker's: the executable's .bss

namespace ordo::cuda::emulator {

// ---- which checks run --------------------------------------------------------------

bool parse_checks(const std::string& value, unsigned& out) {
  struct Named {
    const char* name;
    unsigned bit;
  };
  static const Named names[] = {{"race", Check::race},       {"conflict", Check::conflict},
                                {"initcheck", Check::initcheck}, {"bounds", Check::bounds},
                                {"poison", Check::poison},   {"all", Check::all},
                                {"none", 0}};
  unsigned bits = 0;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t comma = std::min(value.find(',', start), value.size());
    const std::string item = value.substr(start, comma - start);
    const Named* hit = std::find_if(std::begin(names), std::end(names), [&](const Named& n) { return item == n.name; });
    if (hit == std::end(names)) return false;
    bits |= hit->bit;
    start = comma + 1;
  }
  out = bits;
  return true;
}

namespace {

unsigned& enabled() {
  static unsigned bits = [] {
    unsigned from_env = Check::all;
    const char* env = std::getenv("ORDO_EMULATOR_CHECKS");
    if (env != nullptr && !parse_checks(env, from_env)) {
      std::fprintf(stderr, "ordo emulator: ORDO_EMULATOR_CHECKS=%s is not 'all', 'none' or a comma list of race, "
                   "conflict, initcheck, bounds, poison\n", env);
      std::exit(2);
    }
    return from_env;
  }();
  return bits;
}

}  // namespace

unsigned checks() { return enabled(); }
void set_checks(unsigned bits) { enabled() = bits & Check::all; }

namespace access_checks {

int running_thread = 0;

namespace {

// ---- the state of the launch ----------------------------------------------------------

struct Launch {
  const char* kernel = "";
  Dim block_idx;
  bool failed = false;         // an error was recorded: check nothing more
  unsigned bits = 0;           // checks() at the launch
  // Time: it moves at every launch and block start, __syncthreads and __syncwarp.
  uint64_t now = 0, launch_start = 0, block_start = 0, last_barrier = 0;
  std::vector<std::pair<uint64_t, uint64_t>> blocks_run;  // (start, linear index) of this launch's blocks
  std::vector<uint64_t> last_fence;  // per block of blocks_run, in its order: its last __threadfence (0: none)
  bool acquired = false;             // the running block made an atomic access to device memory
  std::vector<uint64_t> warp_sync_time;  // per thread: its last __syncwarp
  std::vector<unsigned> warp_sync_mask;
};
Launch current;

std::string thread_str(int linear) {
  const Dim d = current_thread->block_dim;
  const unsigned x = linear % d.x, y = linear / d.x % d.y, z = linear / (d.x * d.y);
  return "(" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + ")";
}

std::string block_str() {
  const Dim b = current.block_idx;
  return "(" + std::to_string(b.x) + "," + std::to_string(b.y) + "," + std::to_string(b.z) + ")";
}

void fail(const std::string& what) {
  current.failed = true;
  record_kernel_error(what);
}

std::string hex(uintptr_t a) {
  char s[24];
  std::snprintf(s, sizeof s, "%#" PRIxPTR, a);
  return s;
}

// ---- naming shared arrays -------------------------------------------------------------
//
// A race names the __shared__ array from the executable's symbol table (read
// once, on the first error): the demangled name of the static and the byte's
// offset in it.

struct SharedSymbol {
  uintptr_t size;
  std::string name;
};

std::map<uintptr_t, SharedSymbol> read_bss_symbols() {
  std::map<uintptr_t, SharedSymbol> symbols;
  std::FILE* f = std::fopen("/proc/self/exe", "rb");
  if (f == nullptr) return symbols;
  std::fseek(f, 0, SEEK_END);
  std::vector<char> image(static_cast<size_t>(std::ftell(f)));
  std::fseek(f, 0, SEEK_SET);
  const bool read = std::fread(image.data(), 1, image.size(), f) == image.size();
  std::fclose(f);
  if (!read || image.size() < sizeof(Elf64_Ehdr)) return symbols;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(image.data());
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) return symbols;
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(image.data() + eh->e_shoff);
  std::vector<std::pair<uintptr_t, SharedSymbol>> found;
  uintptr_t bss_start_link = 0;
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sections[i].sh_type != SHT_SYMTAB) continue;
    const char* strings = image.data() + sections[sections[i].sh_link].sh_offset;
    const auto* syms = reinterpret_cast<const Elf64_Sym*>(image.data() + sections[i].sh_offset);
    for (size_t s = 0; s < sections[i].sh_size / sizeof(Elf64_Sym); ++s) {
      const char* name = strings + syms[s].st_name;
      if (std::strcmp(name, "__bss_start") == 0) bss_start_link = syms[s].st_value;
      if (ELF64_ST_TYPE(syms[s].st_info) != STT_OBJECT || syms[s].st_size == 0) continue;
      int status = 0;
      char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
      found.push_back({syms[s].st_value, {syms[s].st_size, status == 0 ? demangled : name}});
      std::free(demangled);
    }
  }
  // The executable may be loaded anywhere (PIE): __bss_start gives the offset.
  const uintptr_t load = reinterpret_cast<uintptr_t>(__bss_start) - bss_start_link;
  for (auto& [value, symbol] : found) symbols.emplace(value + load, std::move(symbol));
  return symbols;
}

std::string shared_name(uintptr_t a) {
  static const std::map<uintptr_t, SharedSymbol> symbols = read_bss_symbols();
  auto it = symbols.upper_bound(a);
  if (it != symbols.begin()) {
    --it;
    if (a < it->first + it->second.size)
      return "byte " + std::to_string(a - it->first) + " of __shared__ " + it->second.name;
  }
  return "__shared__ byte " + hex(a);
}

// ---- shared memory ---------------------------------------------------------------------

struct SharedCell {
  uint64_t write_time;    // 0: never written
  uint64_t read_time[2];  // when reader[i] last read it
  uint16_t writer;
  uint16_t reader[2];
  uint16_t readers;       // how many of reader[] hold a read since the last write
};

const uintptr_t shared_begin = reinterpret_cast<uintptr_t>(__bss_start);
const size_t shared_bytes = static_cast<size_t>(_end - __bss_start);
SharedCell* cells = nullptr;

SharedCell* cells_for_block() {
  if (cells == nullptr) {
    void* p = mmap(nullptr, shared_bytes * sizeof(SharedCell), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::perror("ordo emulator: cannot map the shared-memory shadow");
      std::abort();
    }
    cells = static_cast<SharedCell*>(p);
  }
  return cells;
}

// Whether thread `other`'s access at `time` is ordered before the running
// thread's access now.
bool ordered(int other, uint64_t time) {
  const int self = running_thread;
  if (other == self || time < current.last_barrier) return true;
  return other / 32 == self / 32 && time < current.warp_sync_time[self] &&
         (current.warp_sync_mask[self] >> (other % 32) & 1u);
}

void race(const char* kind, uintptr_t a, const char* earlier, int other) {
  fail("shared-memory race (" + std::string(kind) + ") in kernel '" + current.kernel + "', block " + block_str() +
       ": thread " + thread_str(running_thread) + (kind[0] == 'w' ? " writes " : " reads ") + shared_name(a) +
       ", which thread " + thread_str(other) + " " + earlier +
       " with no __syncthreads (or __syncwarp naming both) between");
}

void shared_access(uintptr_t a, size_t n, bool write) {
  SharedCell* cell = cells_for_block() + (a - shared_begin);
  const bool check_races = current.bits & Check::race;
  for (size_t i = 0; i < n; ++i, ++cell) {
    SharedCell& c = *cell;
    const bool written = c.write_time >= current.block_start;
    if (write) {
      if (check_races) {
        if (written && !ordered(c.writer, c.write_time))
          return race("write after write", a + i, "wrote", c.writer);
        for (int r = 0; r < c.readers; ++r)
          if (c.read_time[r] >= current.block_start && !ordered(c.reader[r], c.read_time[r]))
            return race("write after read", a + i, "read", c.reader[r]);
      }
      c.write_time = current.now;
      c.writer = static_cast<uint16_t>(running_thread);
      c.readers = 0;
      continue;
    }
    if (!written) {
      // The first read of a byte in this block: it holds the poison, as if
      // the block's shared arrays had been filled with it at the start.
      if (current.bits & Check::poison) reinterpret_cast<uint8_t*>(a)[i] = shadow::kPoisonByte;
      if (i == 0 && (current.bits & Check::initcheck))
        return fail("uninitialised shared memory read in kernel '" + std::string(current.kernel) + "', block " +
                    block_str() + ": thread " + thread_str(running_thread) + " reads " + shared_name(a) +
                    ", which no thread of the block has written");
      continue;
    }
    if (!check_races) continue;
    if (!ordered(c.writer, c.write_time)) return race("read after write", a + i, "wrote", c.writer);
    // Keep up to two distinct readers since the last barrier: a later write
    // by any thread then races with at least one of them.
    int slot = -1;
    for (int r = 0; r < c.readers; ++r)
      if (c.reader[r] == running_thread || c.read_time[r] < current.last_barrier) slot = r;
    if (slot < 0 && c.readers < 2) slot = c.readers++;
    if (slot >= 0) {
      c.reader[slot] = static_cast<uint16_t>(running_thread);
      c.read_time[slot] = current.now;
    }
  }
}

// ---- device memory ---------------------------------------------------------------------

enum class Kind { read, write, atomic };

std::string device_what(uintptr_t a, size_t n, Kind kind) {
  char where[320];
  return std::string(kind == Kind::read ? "reads " : kind == Kind::write ? "writes " : "makes an atomic access to ") +
         std::to_string(n) + " bytes at " + shadow::describe(reinterpret_cast<void*>(a), where, sizeof where);
}

void device_error(const char* what, uintptr_t a, size_t n, Kind kind, const std::string& more = "") {
  fail(std::string(what) + " in kernel '" + current.kernel + "': thread " + thread_str(running_thread) +
       " of block " + block_str() + " " + device_what(a, n, kind) + more);
}

// The 4-byte words of [a, a + n) with the mask of the bytes each covers.
template <class F>
void for_words(uintptr_t a, size_t n, F&& f) {
  for (uintptr_t w = a & ~uintptr_t(3); w < a + n; w += 4) {
    const uintptr_t lo = std::max(w, a), hi = std::min(w + 4, a + n);
    const unsigned mask = ((1u << (hi - lo)) - 1) << (lo - w);
    f(w, mask);
  }
}

// A word's writer tag: the time of the write (50 bits), the writing thread
// (10 bits) and the word's bytes it wrote (4 bits). Times only grow, and a
// block's all lie after its start, so the tag alone says whether the write
// was this block's, another block's of this launch, or older.
constexpr int kTimeShift = 14, kThreadShift = 4;

// The block of this launch that ran at `time`.
uint64_t block_at(uint64_t time) {
  auto it = std::upper_bound(current.blocks_run.begin(), current.blocks_run.end(), std::make_pair(time, ~uint64_t(0)));
  return it == current.blocks_run.begin() ? 0 : std::prev(it)->second;
}

// Whether another block's write at `time` may be read by the running block:
// the hand-off of threadFenceReduction (the last block of a group adds up the
// others' partials): the writer made a __threadfence after the write, before
// its atomic count, and the reader has made an atomic access (that count)
// since it started. The rule does not tie the reader's atomic to the writer's.
bool published(uint64_t time) {
  if (!current.acquired) return false;
  auto it = std::upper_bound(current.blocks_run.begin(), current.blocks_run.end(), std::make_pair(time, ~uint64_t(0)));
  if (it == current.blocks_run.begin()) return false;
  return current.last_fence[static_cast<size_t>(std::prev(it) - current.blocks_run.begin())] > time;
}

void check_writers(uintptr_t a, size_t n, bool write) {
  for_words(a, n, [&](uintptr_t w, unsigned mask) {
    if (current.failed) return;
    uint64_t& tag = *shadow::writer_of(w);
    const uint64_t time = tag >> kTimeShift;
    const int thread = static_cast<int>(tag >> kThreadShift & 0x3ffu);
    const unsigned bytes = static_cast<unsigned>(tag & 0xfu) & mask;
    const bool this_block = time >= current.block_start, this_launch = time >= current.launch_start;
    if (bytes != 0 && this_block && (current.bits & Check::race) && !ordered(thread, time))
      return device_error("device-memory race", a, n, write ? Kind::write : Kind::read,
                          ", which thread " + thread_str(thread) + " of the same block wrote with no __syncthreads "
                          "(or __syncwarp naming both) between (" + (write ? "write after write" : "read after write") + ")");
    if (bytes != 0 && this_launch && !this_block && (current.bits & Check::conflict) && (write || !published(time)))
      return device_error(write ? "conflicting writes between blocks" : "a read of another block's write", a, n,
                          write ? Kind::write : Kind::read,
                          ", which block " + std::to_string(block_at(time)) + " (linear index) of the same launch wrote" +
                              (write ? " without atomics" : " (blocks are not ordered within a launch)"));
    if (!write) return;
    const unsigned keep = this_block ? static_cast<unsigned>(tag & 0xfu) : 0;
    tag = current.now << kTimeShift | uint64_t(running_thread) << kThreadShift | (keep | mask);
  });
}

void device_access(uintptr_t a, size_t n, Kind kind) {
  uint8_t* state = shadow::state_of(a);
  bool all_written = true;
  for (size_t i = 0; i < n; ++i) all_written &= state[i] == shadow::kWritten;
  if (!all_written) {
    for (size_t i = 0; i < n; ++i)
      if (state[i] == shadow::kNoAccess) {
        if (current.bits & Check::bounds) device_error("out-of-bounds access", a + i, n - i, kind);
        return;
      }
    if (kind != Kind::write && state[0] == shadow::kUnwritten && (current.bits & Check::initcheck))
      return device_error("uninitialised device memory read", a, n, kind, ", never written since it was allocated");
    if (kind != Kind::read) std::memset(state, shadow::kWritten, n);
  }
  if (kind == Kind::atomic) current.acquired = true;
  if (kind != Kind::atomic) check_writers(a, n, kind == Kind::write);
}

}  // namespace

// ---- what the execution tells the checks ----------------------------------------------------

void begin_launch(const char* kernel) {
  current.kernel = kernel;
  current.launch_start = ++current.now;
  current.blocks_run.clear();
  current.last_fence.clear();
  current.failed = false;
  current.bits = enabled();
}

void begin_block(Dim block_idx, uint64_t linear, int threads) {
  current.block_idx = block_idx;
  current.block_start = current.last_barrier = ++current.now;
  current.blocks_run.emplace_back(current.now, linear);
  current.last_fence.push_back(0);
  current.acquired = false;
  current.warp_sync_time.assign(static_cast<size_t>(threads), 0);
  current.warp_sync_mask.assign(static_cast<size_t>(threads), 0);
}

void block_barrier() { current.last_barrier = ++current.now; }

void thread_fence() {
  if (!current.last_fence.empty()) current.last_fence.back() = ++current.now;
}

void warp_sync(int first_thread, unsigned mask) {
  ++current.now;
  for (int lane = 0; lane < 32; ++lane) {
    if (!(mask >> lane & 1u)) continue;
    current.warp_sync_time[static_cast<size_t>(first_thread + lane)] = current.now;
    current.warp_sync_mask[static_cast<size_t>(first_thread + lane)] = mask;
  }
}

// ---- the access hooks ---------------------------------------------------------------------

namespace {

inline void on_access(const void* p, size_t n, Kind kind) {
  if (current_thread == nullptr || current.failed) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (shadow::in_arena(a)) return device_access(a, n, kind);
  if (a - shared_begin < shared_bytes && (current.bits & (Check::race | Check::initcheck | Check::poison)))
    return shared_access(a, n, kind != Kind::read);
}

}  // namespace

}  // namespace access_checks

// ---- the stand-in libraries' and the runtime's accesses ------------------------------------------

std::string bounds_violation(const void* p, size_t bytes) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (!(checks() & Check::bounds) || bytes == 0 || !shadow::in_arena(a)) return "";
  const void* bad = shadow::find_state(p, bytes, shadow::kNoAccess);
  if (bad == nullptr) return "";
  char where[320];
  return std::string("it reaches ") + shadow::describe(bad, where, sizeof where);
}

namespace {

// Ends the process as a fault would (past any handler a test framework installed).
[[noreturn]] void stand_in_error(const char* who, const std::string& what) {
  std::fprintf(stderr, "ordo emulator: %s: %s\n", who, what.c_str());
  std::fflush(stderr);
  signal(SIGABRT, SIG_DFL);
  std::abort();
}

}  // namespace

void stand_in_read(const char* who, const void* p, size_t bytes) {
  const std::string outside = bounds_violation(p, bytes);
  if (!outside.empty()) stand_in_error(who, "a read of " + std::to_string(bytes) + " bytes at " + access_checks::hex(reinterpret_cast<uintptr_t>(p)) + ": " + outside);
  if (!(checks() & Check::initcheck) || bytes == 0 || !shadow::in_arena(reinterpret_cast<uintptr_t>(p))) return;
  if (const void* unwritten = shadow::find_state(p, bytes, shadow::kUnwritten)) {
    char where[320];
    stand_in_error(who, std::string("a read of uninitialised device memory: ") +
                            shadow::describe(unwritten, where, sizeof where) + " was never written");
  }
}

void stand_in_write(const char* who, const void* p, size_t bytes) {
  const std::string outside = bounds_violation(p, bytes);
  if (!outside.empty()) stand_in_error(who, "a write of " + std::to_string(bytes) + " bytes at " + access_checks::hex(reinterpret_cast<uintptr_t>(p)) + ": " + outside);
  if (bytes > 0 && shadow::in_arena(reinterpret_cast<uintptr_t>(p))) shadow::set_state(p, bytes, shadow::kWritten);
}

void copy_shadow(void* dst, const void* src, size_t bytes) {
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  if (bytes == 0 || !shadow::in_arena(d)) return;
  if (shadow::in_arena(s)) {
    std::memmove(shadow::state_of(d), shadow::state_of(s), bytes);
  } else {
    shadow::set_state(dst, bytes, shadow::kWritten);
  }
}

}  // namespace ordo::cuda::emulator

// ---- the instrumentation's entry points ------------------------------------------------------------
//
// GCC's -fsanitize=thread calls these (their names and signatures are
// ThreadSanitizer's interface). Atomics are performed here, as real
// sequentially consistent host atomics, after the check.

namespace emu_checks = ::ordo::cuda::emulator::access_checks;
using emu_checks::Kind;

extern "C" {

void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

#define ORDO_TSAN_ACCESS(n)                                                                        \
  void __tsan_read##n(void* p) { emu_checks::on_access(p, n, Kind::read); }                          \
  void __tsan_write##n(void* p) { emu_checks::on_access(p, n, Kind::write); }                        \
  void __tsan_unaligned_read##n(void* p) { emu_checks::on_access(p, n, Kind::read); }                \
  void __tsan_unaligned_write##n(void* p) { emu_checks::on_access(p, n, Kind::write); }
ORDO_TSAN_ACCESS(1)
ORDO_TSAN_ACCESS(2)
ORDO_TSAN_ACCESS(4)
ORDO_TSAN_ACCESS(8)
ORDO_TSAN_ACCESS(16)
#undef ORDO_TSAN_ACCESS

void __tsan_read_range(void* p, unsigned long n) { emu_checks::on_access(p, n, Kind::read); }
void __tsan_write_range(void* p, unsigned long n) { emu_checks::on_access(p, n, Kind::write); }

void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

#define ORDO_TSAN_ATOMICS(bits, T)                                                                          \
  T __tsan_atomic##bits##_load(const volatile T* a, int) {                                                  \
    emu_checks::on_access(const_cast<T*>(a), sizeof(T), Kind::atomic);                                      \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                            \
  }                                                                                                         \
  void __tsan_atomic##bits##_store(volatile T* a, T v, int) {                                               \
    emu_checks::on_access(const_cast<T*>(a), sizeof(T), Kind::atomic);                                      \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                               \
  }                                                                                                         \
  ORDO_TSAN_RMW(bits, T, exchange, __atomic_exchange_n)                                                     \
  ORDO_TSAN_RMW(bits, T, fetch_add, __atomic_fetch_add)                                                     \
  ORDO_TSAN_RMW(bits, T, fetch_sub, __atomic_fetch_sub)                                                     \
  ORDO_TSAN_RMW(bits, T, fetch_and, __atomic_fetch_and)                                                     \
  ORDO_TSAN_RMW(bits, T, fetch_or, __atomic_fetch_or)                                                       \
  ORDO_TSAN_RMW(bits, T, fetch_xor, __atomic_fetch_xor)                                                     \
  ORDO_TSAN_RMW(bits, T, fetch_nand, __atomic_fetch_nand)                                                   \
  bool __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* expected, T v, int, int) {           \
    emu_checks::on_access(const_cast<T*>(a), sizeof(T), Kind::atomic);                                      \
    return __atomic_compare_exchange_n(a, expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);          \
  }                                                                                                         \
  bool __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* expected, T v, int, int) {             \
    emu_checks::on_access(const_cast<T*>(a), sizeof(T), Kind::atomic);                                      \
    return __atomic_compare_exchange_n(a, expected, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);           \
  }                                                                                                         \
  T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T expected, T v, int, int) {                  \
    emu_checks::on_access(const_cast<T*>(a), sizeof(T), Kind::atomic);                                      \
    __atomic_compare_exchange_n(a, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                \
    return expected;                                                                                        \
  }
#define ORDO_TSAN_RMW(bits, T, name, builtin)                                   \
  T __tsan_atomic##bits##_##name(volatile T* a, T v, int) {                     \
    emu_checks::on_access(const_cast<T*>(a), sizeof(T), Kind::atomic);         \
    return builtin(a, v, __ATOMIC_SEQ_CST);                                     \
  }
ORDO_TSAN_ATOMICS(8, uint8_t)
ORDO_TSAN_ATOMICS(16, uint16_t)
ORDO_TSAN_ATOMICS(32, uint32_t)
ORDO_TSAN_ATOMICS(64, uint64_t)
#undef ORDO_TSAN_RMW
#undef ORDO_TSAN_ATOMICS

}  // extern "C"
