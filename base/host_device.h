// ORDO_HD marks a function compiled for both the host and the CUDA device:
// the shared scalar formulas (tensor/elementwise_math.h) and Philox
// (base/philox.h) are written once and called from CPU and CUDA kernels.
#pragma once

#if defined(__CUDACC__)
#define ORDO_HD __host__ __device__ __forceinline__
#elif defined(__CUDA_ARCH__)
// Device code compiled by g++ (the emulator, tensor/cuda/emulator/): the
// __CUDA_ARCH__ branches differ from the host's, so these must never be
// emitted out of line, where the linker could pick one copy for both.
#define ORDO_HD inline __attribute__((always_inline))
#else
#define ORDO_HD inline
#endif
