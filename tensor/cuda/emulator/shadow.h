// The emulator's shadow memory (internal to tensor/cuda/emulator/): what the
// checks of checks.cpp know about every byte a kernel may touch.
//
// Device memory lives in one reserved range of addresses, the arena
// (memory.cpp), so that a byte's shadow is found by arithmetic alone:
//  - its state (one byte per byte): no access (outside every live tensor:
//    guard pages, a caching-allocator block's rounding, freed memory), not
//    yet written, or written;
//  - who last wrote its 4-byte word (eight bytes per word): when (the
//    checks' time, which moves at every launch and block start and every
//    barrier), which thread of its block, and which of the word's bytes.
// Both shadows read zero where nothing was ever recorded: no access, and no
// writer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ordo::cuda::emulator::shadow {

enum : uint8_t { kNoAccess = 0, kUnwritten = 1, kWritten = 2 };

// Every byte of fresh device memory and of a block's shared arrays reads
// this before it is written: 0xff bytes are a NaN as f32 and f64, -1 as an
// integer.
constexpr uint8_t kPoisonByte = 0xff;

struct Arena {
  uintptr_t begin = 0;
  size_t bytes = 0;              // 0 until the arena is reserved
  uint8_t* state = nullptr;      // bytes entries
  uint64_t* writers = nullptr;   // bytes / 4 entries
};
extern Arena arena;

inline bool in_arena(uintptr_t a) { return a - arena.begin < arena.bytes; }
inline uint8_t* state_of(uintptr_t a) { return arena.state + (a - arena.begin); }
inline uint64_t* writer_of(uintptr_t a) { return arena.writers + (a - arena.begin) / 4; }

// Sets the state of [p, p + bytes) (inside the arena).
void set_state(const void* p, size_t bytes, uint8_t state);
// The first byte of [p, p + bytes) in `state`, or nullptr.
const void* find_state(const void* p, size_t bytes, uint8_t state);

// Where `p` lies, in words: "byte 12 of the 64-byte tensor at 0x..." or "4
// bytes past the end of the 64-byte tensor at 0x... (in the caching
// allocator's block of 512 bytes)" (tensors as the caching allocator reports
// them; cudaMalloc's allocations otherwise).
const char* describe(const void* p, char* buffer, size_t size);

}  // namespace ordo::cuda::emulator::shadow
