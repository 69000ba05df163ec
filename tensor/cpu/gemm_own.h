// The CPU matrix product's two paths, for tests and benchmarks.
//
// cpu::gemm (tensor/kernels.inc) uses the BLAS when ordo was built with one
// (ORDO_HAS_BLAS) and ordo's own kernel otherwise. The own kernel is always
// compiled, so it can be tested and benchmarked in every build: call
// gemm_own directly, or switch cpu::gemm over with set_use_blas(false).
#pragma once

#include <cstdint>
#include <string>

#include "tensor/backend.h"

namespace ordo::cpu {

// The own kernel's widest vectors in bytes: 512-bit where the build targets
// AVX-512 (run where cpu::vector_path() is avx512), else 256-bit (the FMA
// peak `ordo bench ops` sets beside it uses the same).
#if defined(__AVX512F__)
constexpr int kGemmOwnVectorBytes = 64;
#else
constexpr int kGemmOwnVectorBytes = 32;
#endif

// ordo's own kernel (tensor/cpu/gemm_own.cpp): same contract as cpu::gemm.
// Each element of c is one chain of FMAs over k in order, then alpha s, then
// beta c added in one FMA: the same bits whatever the thread count, the
// vector width (cpu::vector_path) or zero products anywhere in k.
void gemm_own(const Tensor& c, const MatrixBatch& a, const MatrixBatch& b, int64_t batch,
              int64_t m, int64_t n, int64_t k, double alpha, double beta);

// One row-major product on the calling thread with any leading dimensions,
// for kernels whose operands are windows of larger tensors (tensor/cpu/relative.cpp):
// c (m x n, row stride ldc) = alpha op(a) op(b) + beta c, a stored m x k (k x m
// when transposed), b k x n (n x k). The BLAS when cpu::gemm uses it (inside an
// OpenMP region OpenBLAS runs on the calling thread), otherwise a plain loop
// summing over k in order.
template <class T>
void strided_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                  const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// True when this build has a BLAS for cpu::gemm.
bool blas_compiled();
// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64", or "none";
// with blas_core_note() after it where ordo corrected OpenBLAS's kernels.
std::string blas_description();
// Whether cpu::gemm calls the BLAS (default: blas_compiled(); never in the
// deterministic mode). Setting it to true in a build without a BLAS throws
// ordo::Error. Applies process-wide.
void set_use_blas(bool use);
bool use_blas();

}  // namespace ordo::cpu
