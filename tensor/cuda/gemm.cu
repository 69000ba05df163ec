// CUDA matrix product through cuBLAS (cublasGemmStridedBatchedEx): f32
// operands, or bf16 ones under MatmulPrecision::bf16; C and the sums f32.
//
// Row-major to cuBLAS's column-major: a row-major matrix read as
// column-major is its transpose, so C = op(A) op(B) (row-major, m x n) is
// computed as C^T = op(B)^T op(A)^T (column-major, n x m, ldc = n): B's
// storage goes first with B's transpose flag, A's second with A's, and each
// operand keeps its own leading dimension and batch stride (0 reuses one
// matrix for every batch). An operand whose rows overlap (ld below the row
// width, e.g. one row broadcast with ld 0) is copied densely first.
//
// Precision (tensor/device_runtime.h): fp32 is CUBLAS_COMPUTE_32F (full FP32
// multiply-adds); tf32 is CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores, inputs
// rounded to TF32's 10 mantissa bits, FP32 accumulation); bf16 gives cuBLAS
// bf16 A and B (CUDA_R_16BF, rounded to nearest even by the op layer) with
// CUBLAS_COMPUTE_32F: tensor cores, exact products, FP32 accumulation, f32 C
// (or a bf16 C, beta 0: the FP32 result rounded as it is written).
// Choosing the compute type per call keeps the handle's math mode fixed
// (CUBLAS_DEFAULT_MATH). For a given problem cuBLAS picks the same algorithm
// every time and runs without atomics, so a product is bit-reproducible on
// the same GPU model.
#include <climits>

#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

namespace {

// One operand as cuBLAS takes it: a pointer, a leading dimension, a batch stride.
struct Operand {
  const void* data;
  int64_t ld;
  int64_t batch_stride;
};

// dense[j] (rows x cols, row-major) = the matrix at src + j * batch_stride
// with row stride ld, for j < count; one thread per element, grid-stride.
// T: float, or uint16_t for bf16 (moved as bits).
template <class T>
__global__ void densify_kernel(T* dense, const T* src, int64_t count, int64_t rows,
                               int64_t cols, int64_t ld, int64_t batch_stride) {
  const int64_t total = count * rows * cols;
  for (int64_t e = global_thread_index(); e < total; e += grid_thread_count()) {
    const int64_t c = e % cols, r = (e / cols) % rows, j = e / (rows * cols);
    dense[e] = src[j * batch_stride + r * ld + c];
  }
}

// The operand for a matrix stored row-major as `rows` x `cols`. With one row,
// ld never addresses anything and is raised to the smallest legal value (as
// the CPU's blas_ld). An ld below the row width (rows that overlap, as a
// broadcast row with ld 0) is something cuBLAS cannot express: those matrices
// are first copied densely into `scratch`.
Operand operand(const MatrixBatch& mb, int64_t rows, int64_t cols, int64_t batch, Tensor& scratch,
                DeviceContext& ctx) {
  const int64_t least = std::max<int64_t>(1, cols);
  const void* data = mb.t.raw_data();
  if (rows <= 1) return {data, std::max(mb.ld, least), mb.batch_stride};
  if (mb.ld >= least) return {data, mb.ld, mb.batch_stride};
  const int64_t count = mb.batch_stride == 0 ? 1 : batch;
  scratch = Tensor::empty({count, rows, cols}, mb.t.dtype(), mb.t.device());
  const unsigned grid = grid_for(count * rows * cols, kThreads, ctx);
  if (mb.t.dtype() == DType::bf16) {
    ORDO_LAUNCH(densify_kernel<uint16_t>, grid, kThreads, 0, ctx.stream, static_cast<uint16_t*>(scratch.raw_data()),
                static_cast<const uint16_t*>(data), count, rows, cols, mb.ld, mb.batch_stride);
  } else {
    ORDO_LAUNCH(densify_kernel<float>, grid, kThreads, 0, ctx.stream, scratch.data<float>(),
                static_cast<const float*>(data), count, rows, cols, mb.ld, mb.batch_stride);
  }
  ORDO_CUDA_CHECK_LAUNCH();
  return {scratch.raw_data(), cols, mb.batch_stride == 0 ? 0 : rows * cols};
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
          int64_t n, int64_t k, double alpha, double beta, MatmulPrecision precision) {
  const DType operands = precision == MatmulPrecision::bf16 ? DType::bf16 : DType::f32;
  const bool bf16_c = c.dtype() == DType::bf16;  // cuBLAS rounds the FP32 sums as it writes C
  ORDO_CHECK(c.dtype() == DType::f32 || (bf16_c && operands == DType::bf16 && beta == 0), "gemm on CUDA: C ",
             dtype_name(c.dtype()), " (f32, or bf16 written with beta 0 under bf16 precision)");
  ORDO_CHECK(a.t.dtype() == operands && b.t.dtype() == operands, "gemm on CUDA: operands ",
             dtype_name(a.t.dtype()), " and ", dtype_name(b.t.dtype()), " under precision ",
             precision_name(precision), " (", dtype_name(operands), " expected)");
  if (batch <= 0 || m <= 0 || n <= 0) return;
  DeviceContext& ctx = context(c);

  if (k == 0 || alpha == 0) {  // C = beta C; A and B are not read
    const int64_t count = batch * m * n;
    if (beta == 0) {
      ORDO_CUDA_CHECK(cudaMemsetAsync(c.raw_data(), 0, static_cast<size_t>(count) * dtype_size(c.dtype()),
                                      ctx.stream));
    } else {
      ORDO_LAUNCH(scale_kernel, grid_for(count, kThreads, ctx), kThreads, 0, ctx.stream, c.data<float>(), count,
                  static_cast<float>(beta));
      ORDO_CUDA_CHECK_LAUNCH();
    }
    return;
  }

  // A is stored m x k (k x m when transposed), B k x n (n x k when transposed).
  Tensor a_scratch, b_scratch;
  const Operand oa = a.trans ? operand(a, k, m, batch, a_scratch, ctx) : operand(a, m, k, batch, a_scratch, ctx);
  const Operand ob = b.trans ? operand(b, n, k, batch, b_scratch, ctx) : operand(b, k, n, batch, b_scratch, ctx);
  const float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const cublasComputeType_t compute =
      precision == MatmulPrecision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType ab_type = precision == MatmulPrecision::bf16 ? CUDA_R_16BF : CUDA_R_32F;
  static const char* const kTimedName[] = {"cublas gemm (fp32)", "cublas gemm (tf32)", "cublas gemm (bf16)"};
  before_launch(ctx.stream);
  ORDO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      cublas_handle(ctx), b.trans ? CUBLAS_OP_T : CUBLAS_OP_N, a.trans ? CUBLAS_OP_T : CUBLAS_OP_N,
      to_int(n, "n"), to_int(m, "m"), to_int(k, "k"), &alpha_f,
      ob.data, ab_type, to_int(ob.ld, "ldb"), static_cast<long long>(ob.batch_stride),
      oa.data, ab_type, to_int(oa.ld, "lda"), static_cast<long long>(oa.batch_stride),
      &beta_f, c.raw_data(), bf16_c ? CUDA_R_16BF : CUDA_R_32F, to_int(n, "n"), static_cast<long long>(m) * n,
      to_int(batch, "batch"), compute, CUBLAS_GEMM_DEFAULT));
  after_library_call(kTimedName[static_cast<int>(precision)], ctx.stream);
}

}  // namespace ordo::cuda
