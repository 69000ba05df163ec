// Every dtype as a C++ element type, for the kernels that handle all of
// them (copy with casts, fill): the CPU's (tensor/cpu/copy.cpp) and CUDA's
// (tensor/cuda/copy.cu) dispatch the same way, so this header compiles
// under nvcc as well.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace ordo {

// Storage-only types: a bf16 or f16 value as its 16 bits. Each backend's
// copy converts them through float where it loads and stores them.
struct BF16 { uint16_t bits; };
struct F16 { uint16_t bits; };

// Calls fn(T{}) with the element type of `dtype`.
template <class Fn>
void dispatch_any(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    case DType::bf16: return fn(BF16{});
    case DType::f16: return fn(F16{});
    case DType::i64: return fn(int64_t{});
    case DType::i32: return fn(int32_t{});
    case DType::u8: return fn(uint8_t{});
  }
}

}  // namespace ordo
