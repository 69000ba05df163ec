// Stand-in for CUDA's mma.h under the emulator: the part of nvcuda::wmma
// (warp-level matrix multiply-accumulate on tensor cores) ordo's kernels use
// — 16 x 16 x 16 tiles of bf16 operands with FP32 accumulators.
//
// What it keeps of the hardware's contract, so that a kernel that breaks it
// fails here as it would on a GPU:
//  - every operation but fill_fragment is warp-wide: all 32 lanes must arrive
//    (WarpOp::matrix: as __syncwarp, but ordering no memory);
//  - a fragment's elements are spread over the lanes in an unspecified way:
//    load_matrix_sync reads, and store_matrix_sync writes, element e = 16 r
//    + c from lane e % 32 here, so a lane that reads what the warp stored (or
//    a warp's load of what a lane wrote), before a __syncwarp, races with the
//    lane that wrote it, and the race check says so (where the writer is
//    not, by chance, the lane this mapping picks);
//  - the pointer must be 32-byte aligned, and ldm a multiple of 16 bytes
//    (8 bf16 or 4 floats), as CUDA's programming guide requires.
// What it does not: the tensor cores' summation order and their rounding of
// the partial sums (here each product is exact — bf16 x bf16 fits in f32 —
// and the sums are f32 additions over k in increasing order, onto c last).
// Each lane holds the whole tile, so num_elements is 256, not the hardware's 8.
#pragma once

#include <cstdint>
#include <string>

#include "cuda_bf16.h"
#include "tensor/cuda/emulator/emulator.h"

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the stand-in takes 16 x 16 x 16 tiles");
  static constexpr int num_elements = 256;
  float x[256];  // element (r, c) at x[r * 16 + c], whatever the layout in memory
};

namespace emulated {

// Every lane of the warp arrives (an error names the operation "a wmma operation").
inline void converge() {
  ::ordo::cuda::emulator::warp_exchange(::ordo::cuda::emulator::WarpOp::matrix, 0xffffffffu, 0, 0, 32);
}

inline void check_address(const char* what, const void* p, unsigned ldm, unsigned element_bytes) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0)
    ::ordo::cuda::emulator::kernel_fail(std::string(what) + ": the pointer is not 32-byte aligned");
  if ((ldm * element_bytes) % 16 != 0)
    ::ordo::cuda::emulator::kernel_fail(std::string(what) + ": ldm " + std::to_string(ldm) +
                                        " is not a multiple of 16 bytes");
}

inline float value(__nv_bfloat16 v) { return __bfloat162float(v); }
inline float value(float v) { return v; }

// The calling thread's linear index in its block.
inline int linear_thread() {
  const auto* t = ::ordo::cuda::emulator::current_thread;
  return static_cast<int>(t->thread_idx.x + t->block_dim.x * (t->thread_idx.y + t->block_dim.y * t->thread_idx.z));
}

// A warp's tile in passing: each lane reads its elements from memory into it,
// then every lane copies the whole of it (the lanes of a block run one at a
// time). The emulator's own memory, so unchecked.
__attribute__((no_sanitize("thread"))) inline float* staging(int warp) {
  static float tiles[32][256];
  return tiles[warp];
}
__attribute__((no_sanitize("thread"))) inline void stage(int warp, int e, float v) { staging(warp)[e] = v; }
__attribute__((no_sanitize("thread"))) inline void take(int warp, float* x) {
  for (int e = 0; e < 256; ++e) x[e] = staging(warp)[e];
}

// Element (r, c) of a 16 x 16 tile at p: row-major at p[r * ldm + c],
// column-major at p[c * ldm + r]. Element e = 16 r + c is read by lane
// e % 32 alone, as store_matrix_sync writes it (a fragment's mapping is the
// same for its load and its store, so loading an accumulator and storing it
// back to the same place needs no __syncwarp between, as on a GPU).
template <class T>
void load(float* x, const T* p, unsigned ldm, bool columns) {
  const int thread = linear_thread(), lane = thread % 32, warp = thread / 32;
  for (int e = lane; e < 256; e += 32) {
    const int r = e / 16, c = e % 16;
    stage(warp, e, value(columns ? p[c * ldm + r] : p[r * ldm + c]));
  }
  converge();  // every lane has staged its elements
  take(warp, x);
}

template <class Layout>
constexpr bool is_columns() {
  return std::is_same<Layout, col_major>::value;
}

}  // namespace emulated

template <class Use, class T, class Layout>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout>& a, const T* p, unsigned ldm) {
  emulated::check_address("load_matrix_sync", p, ldm, sizeof(T));
  emulated::converge();  // every lane has taken the warp's last staged tile
  emulated::load(a.x, p, ldm, emulated::is_columns<Layout>());
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& a, const float* p, unsigned ldm,
                             layout_t layout) {
  emulated::check_address("load_matrix_sync", p, ldm, sizeof(float));
  emulated::converge();  // every lane has taken the warp's last staged tile
  emulated::load(a.x, p, ldm, layout == mem_col_major);
}

inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& a, unsigned ldm,
                              layout_t layout) {
  emulated::check_address("store_matrix_sync", p, ldm, sizeof(float));
  emulated::converge();
  const int lane = emulated::linear_thread() % 32;
  for (int e = lane; e < 256; e += 32) {
    const int r = e / 16, c = e % 16;
    (layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c]) = a.x[e];
  }
}

template <class Use, class T, class Layout>
__attribute__((no_sanitize("thread"))) void fill_fragment(fragment<Use, 16, 16, 16, T, Layout>& a, float v) {
  for (float& e : a.x) e = v;
}

// d = a b + c.
// (Uninstrumented: it touches the fragments alone, the lane's own memory.)
template <class La, class Lb>
__attribute__((no_sanitize("thread"))) void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, La>& a,
              const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, Lb>& b,
              const fragment<accumulator, 16, 16, 16, float>& c) {
  emulated::converge();
  float out[256];
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) {
      float sum = 0;
      for (int k = 0; k < 16; ++k) sum += a.x[r * 16 + k] * b.x[k * 16 + n];
      out[r * 16 + n] = sum + c.x[r * 16 + n];
    }
  for (int e = 0; e < 256; ++e) d.x[e] = out[e];
}

}  // namespace nvcuda::wmma
