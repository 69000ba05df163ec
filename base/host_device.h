// ORDO_HD marks a function compiled for both the host and the CUDA device:
// the shared scalar formulas (tensor/elementwise_math.h) and Philox
// (base/philox.h) are written once and called from CPU and CUDA kernels.
#pragma once

#if defined(__CUDACC__)
#define ORDO_HD __host__ __device__ __forceinline__
#else
#define ORDO_HD inline
#endif
