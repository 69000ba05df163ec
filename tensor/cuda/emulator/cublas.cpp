// The emulator's cuBLAS (the stand-in cublas_v2.h): cublasGemmStridedBatchedEx
// executed literally as cuBLAS documents it, in column-major storage,
//   C_p = alpha op(A_p) op(B_p) + beta C_p,  X_p = X + p strideX,  p < batchCount,
// with op(A)(i, l) = A[i + l lda] (N) or A[l + i lda] (T), C not read when
// beta == 0, and A and B not read when k == 0 or alpha == 0. Arguments are
// validated as cuBLAS documents (CUBLAS_STATUS_INVALID_VALUE for negative
// sizes or a leading dimension below its minimum, NOT_SUPPORTED for types the
// emulator does not provide), every operand's extent is checked against its
// allocation before anything is read, and CUBLAS_COMPUTE_32F_FAST_TF32 rounds
// the inputs to TF32 (10 mantissa bits) as the tensor cores do. The sum over
// l runs in f32 in increasing l; cuBLAS's own order is not specified.
#include <cublas_v2.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tensor/cuda/emulator/emulator.h"

namespace emu = ::ordo::cuda::emulator;

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
};

namespace {

// cvt.rna.tf32.f32: to 10 mantissa bits, to nearest with ties away from zero.
float round_to_tf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) {  // finite: infinities and NaNs pass unchanged
    bits += 0x1000u;
    bits &= 0xffffe000u;
  }
  std::memcpy(&x, &bits, 4);
  return x;
}

// One operand: a rows x cols column-major matrix with leading dimension ld, per batch.
struct Matrix {
  const float* data;
  int rows, cols, ld;
  long long stride;
  const char* name;
};

// The bytes from the first to the last element any batch touches.
size_t extent_bytes(const Matrix& m, int batch) {
  if (m.rows == 0 || m.cols == 0 || batch == 0) return 0;
  const long long last = static_cast<long long>(m.cols - 1) * m.ld + (m.rows - 1) +
                         static_cast<long long>(batch - 1) * std::max(0LL, m.stride);
  return static_cast<size_t>(last + 1) * sizeof(float);
}

void check_extent(const Matrix& m, int batch) {
  const size_t bytes = extent_bytes(m, batch);
  if (bytes == 0) return;
  const float* first = m.stride < 0 ? m.data + m.stride * (batch - 1) : m.data;
  if (emu::is_device_range(first, bytes)) return;
  char what[96];
  std::snprintf(what, sizeof what, "cublasGemmStridedBatchedEx (matrix %s)", m.name);
  emu::report_bad_access(what, first, bytes);
}

// f(column, bytes) for each column of each batch's matrix: the bytes cuBLAS
// reads or writes (not the gaps a leading dimension leaves between columns).
template <class F>
void for_columns(const Matrix& m, int batch, F&& f) {
  for (int p = 0; p < batch; ++p)
    for (int j = 0; j < m.cols; ++j) f(m.data + p * m.stride + static_cast<long long>(j) * m.ld, m.rows * sizeof(float));
}

// alpha or beta: a host pointer, or in device pointer mode a device one
// (read inside the caller's DeviceSection).
float read_scalar(const void* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

// The emulator needs no workspace, but one that is not device memory of
// that size, or not 256-byte aligned, is refused as cuBLAS refuses it.
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes == 0) return CUBLAS_STATUS_SUCCESS;
  if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0 || !emu::is_device_range(workspace, bytes))
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->math_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
  handle->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
  }
  return "unknown error";
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A,
                                          cudaDataType Atype, int lda, long long strideA, const void* B,
                                          cudaDataType Btype, int ldb, long long strideB, const void* beta, void* C,
                                          cudaDataType Ctype, int ldc, long long strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
  if (m < 0 || n < 0 || k < 0 || batchCount < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if ((transa != CUBLAS_OP_N && transa != CUBLAS_OP_T && transa != CUBLAS_OP_C) ||
      (transb != CUBLAS_OP_N && transb != CUBLAS_OP_T && transb != CUBLAS_OP_C))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (lda < std::max(1, ta ? k : m) || ldb < std::max(1, tb ? n : k) || ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (Atype != CUDA_R_32F || Btype != CUDA_R_32F || Ctype != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (computeType != CUBLAS_COMPUTE_32F && computeType != CUBLAS_COMPUTE_32F_PEDANTIC &&
      computeType != CUBLAS_COMPUTE_32F_FAST_TF32)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0 || batchCount == 0) return CUBLAS_STATUS_SUCCESS;

  if (handle->pointer_mode == CUBLAS_POINTER_MODE_DEVICE) {
    if (!emu::is_device_range(alpha, sizeof(float))) emu::report_bad_access("cublasGemmStridedBatchedEx (alpha)", alpha, 4);
    if (!emu::is_device_range(beta, sizeof(float))) emu::report_bad_access("cublasGemmStridedBatchedEx (beta)", beta, 4);
  }
  emu::DeviceSection section("cublasGemmStridedBatchedEx");
  const float a_scale = read_scalar(alpha), c_scale = read_scalar(beta);
  const bool reads_ab = k > 0 && a_scale != 0.0f;
  const Matrix ma{static_cast<const float*>(A), ta ? k : m, ta ? m : k, lda, strideA, "A"};
  const Matrix mb{static_cast<const float*>(B), tb ? n : k, tb ? k : n, ldb, strideB, "B"};
  const Matrix mc{static_cast<const float*>(C), m, n, ldc, strideC, "C"};
  if (reads_ab) {
    check_extent(ma, batchCount);
    check_extent(mb, batchCount);
  }
  check_extent(mc, batchCount);
  // Inside live tensors, and what is read written before (emulator.h, the checks).
  auto read = [](const char* who) { return [who](const float* p, size_t bytes) { emu::stand_in_read(who, p, bytes); }; };
  if (reads_ab) {
    for_columns(ma, batchCount, read("cublasGemmStridedBatchedEx (matrix A)"));
    for_columns(mb, batchCount, read("cublasGemmStridedBatchedEx (matrix B)"));
  }
  if (c_scale != 0.0f) for_columns(mc, batchCount, read("cublasGemmStridedBatchedEx (matrix C, beta != 0)"));
  for_columns(mc, batchCount, [](const float* p, size_t bytes) {
    emu::stand_in_write("cublasGemmStridedBatchedEx (matrix C)", p, bytes);
  });

  const bool tf32 = computeType == CUBLAS_COMPUTE_32F_FAST_TF32;
  auto input = [tf32](float v) { return tf32 ? round_to_tf32(v) : v; };
  for (int p = 0; p < batchCount; ++p) {
    const float* a = ma.data + p * strideA;
    const float* b = mb.data + p * strideB;
    float* c = static_cast<float*>(C) + p * strideC;
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        float sum = 0.0f;
        if (reads_ab) {
          for (int l = 0; l < k; ++l) {
            const float av = ta ? a[l + static_cast<long long>(i) * lda] : a[i + static_cast<long long>(l) * lda];
            const float bv = tb ? b[j + static_cast<long long>(l) * ldb] : b[l + static_cast<long long>(j) * ldb];
            sum += input(av) * input(bv);
          }
        }
        float& out = c[i + static_cast<long long>(j) * ldc];
        out = c_scale == 0.0f ? a_scale * sum : a_scale * sum + c_scale * out;
      }
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}
