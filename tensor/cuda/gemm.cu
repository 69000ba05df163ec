// CUDA matrix product through cuBLAS (cublasGemmStridedBatchedEx), f32 in
// and out.
//
// Row-major to cuBLAS's column-major: a row-major matrix read as
// column-major is its transpose, so C = op(A) op(B) (row-major, m x n) is
// computed as C^T = op(B)^T op(A)^T (column-major, n x m, ldc = n): B's
// storage goes first with B's transpose flag, A's second with A's, and each
// operand keeps its own leading dimension and batch stride (0 reuses one
// matrix for every batch).
//
// Precision: CUBLAS_COMPUTE_32F (full FP32 multiply-adds) by default;
// CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores, inputs rounded to TF32's 10
// mantissa bits, FP32 accumulation) only when allow_tf32() is on. Choosing the
// compute type per call keeps the handle's math mode fixed (CUBLAS_DEFAULT_MATH).
// For a given problem cuBLAS picks the same algorithm every time and runs
// without atomics, so a product is bit-reproducible on the same GPU model.
#include <climits>

#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

namespace {

// The leading dimension cuBLAS accepts for a row-major matrix stored as
// `rows` x `cols`, as the CPU's blas_ld: with a single row, ld never
// addresses anything and is raised to the smallest legal value.
int64_t cublas_ld(int64_t ld, int64_t rows, int64_t cols) {
  const int64_t least = std::max<int64_t>(1, cols);
  return rows <= 1 ? std::max(ld, least) : ld;
}

int to_int(int64_t v, const char* what) {
  ORDO_CHECK(v >= 0 && v <= INT_MAX, "gemm on CUDA: ", what, " = ", v,
             " does not fit cuBLAS's 32-bit int");
  return static_cast<int>(v);
}

// c[i] *= beta (beta != 0; beta == 0 is a memset, so old NaNs are not kept, as BLAS).
__global__ void scale_kernel(float* c, int64_t n, float beta) {
  for (int64_t i = global_thread_index(); i < n; i += grid_thread_count()) c[i] *= beta;
}

}  // namespace

void gemm(const Tensor& c, const MatrixBatch& a, const MatrixBatch& b, int64_t batch, int64_t m,
          int64_t n, int64_t k, double alpha, double beta) {
  require_f32(c.dtype(), "gemm");
  require_f32(a.t.dtype(), "gemm");
  require_f32(b.t.dtype(), "gemm");
  if (batch <= 0 || m <= 0 || n <= 0) return;
  DeviceContext& ctx = context(c);

  if (k == 0 || alpha == 0) {  // C = beta C; A and B are not read
    const int64_t count = batch * m * n;
    if (beta == 0) {
      ORDO_CUDA_CHECK(cudaMemsetAsync(c.raw_data(), 0, static_cast<size_t>(count) * sizeof(float),
                                      ctx.stream));
    } else {
      scale_kernel<<<grid_for(count, kThreads, ctx), kThreads, 0, ctx.stream>>>(
          c.data<float>(), count, static_cast<float>(beta));
      ORDO_CUDA_CHECK_LAUNCH();
    }
    return;
  }

  // A is stored m x k (k x m when transposed), B k x n (n x k when transposed).
  const int lda = to_int(a.trans ? cublas_ld(a.ld, k, m) : cublas_ld(a.ld, m, k), "lda");
  const int ldb = to_int(b.trans ? cublas_ld(b.ld, n, k) : cublas_ld(b.ld, k, n), "ldb");
  const float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const cublasComputeType_t compute = allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  ORDO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      cublas_handle(ctx), b.trans ? CUBLAS_OP_T : CUBLAS_OP_N, a.trans ? CUBLAS_OP_T : CUBLAS_OP_N,
      to_int(n, "n"), to_int(m, "m"), to_int(k, "k"), &alpha_f,
      b.t.raw_data(), CUDA_R_32F, ldb, static_cast<long long>(b.batch_stride),
      a.t.raw_data(), CUDA_R_32F, lda, static_cast<long long>(a.batch_stride),
      &beta_f, c.raw_data(), CUDA_R_32F, to_int(n, "n"), static_cast<long long>(m) * n,
      to_int(batch, "batch"), compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace ordo::cuda
