// The emulator's cuBLAS (the stand-in cublas_v2.h): cublasGemmStridedBatchedEx
// executed literally as cuBLAS documents it, in column-major storage,
//   C_p = alpha op(A_p) op(B_p) + beta C_p,  X_p = X + p strideX,  p < batchCount,
// with op(A)(i, l) = A[i + l lda] (N) or A[l + i lda] (T), C not read when
// beta == 0, and A and B not read when k == 0 or alpha == 0. Arguments are
// validated as cuBLAS documents (CUBLAS_STATUS_INVALID_VALUE for negative
// sizes or a leading dimension below its minimum, NOT_SUPPORTED for types the
// emulator does not provide), every operand's extent is checked against its
// allocation before anything is read, and CUBLAS_COMPUTE_32F_FAST_TF32 rounds
// the inputs to TF32 (10 mantissa bits) as the tensor cores do. A and B are
// CUDA_R_32F, or both CUDA_R_16BF (bfloat16: the upper half of an f32, widened
// exactly, so each product of two is exact in f32 as on the tensor cores)
// with CUBLAS_COMPUTE_32F; C is CUDA_R_32F, or CUDA_R_16BF with bf16 A and B
// (alpha sum + beta C in f32, rounded to nearest even as it is written). The
// sum over l runs in f32 in increasing l; cuBLAS's own order is not
// specified. On a stream being captured (graphs.cpp) the product is
// validated now and recorded, as cuBLAS's kernels are.
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tensor/cuda/emulator/emulator.h"
#include "tensor/dtype.h"

namespace emu = ::ordo::cuda::emulator;

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
};

namespace {

// One operand: a rows x cols column-major matrix with leading dimension ld,
// per batch, of f32 or bf16 elements.
struct Matrix {
  const void* data;
  int rows, cols, ld;
  long long stride;
  const char* name;
  bool bf16 = false;

  size_t element_bytes() const { return bf16 ? 2 : 4; }
  // Element i (counted from data) as the f32 the product takes.
  float at(long long i) const {
    if (!bf16) return static_cast<const float*>(data)[i];
    const uint32_t wide = static_cast<uint32_t>(static_cast<const uint16_t*>(data)[i]) << 16;
    float f;
    std::memcpy(&f, &wide, 4);
    return f;
  }
};

// The bytes from the first to the last element any batch touches.
size_t extent_bytes(const Matrix& m, int batch) {
  if (m.rows == 0 || m.cols == 0 || batch == 0) return 0;
  const long long last = static_cast<long long>(m.cols - 1) * m.ld + (m.rows - 1) +
                         static_cast<long long>(batch - 1) * std::max(0LL, m.stride);
  return static_cast<size_t>(last + 1) * m.element_bytes();
}

void check_extent(const Matrix& m, int batch) {
  const size_t bytes = extent_bytes(m, batch);
  if (bytes == 0) return;
  const char* first = static_cast<const char*>(m.data) +
                      (m.stride < 0 ? m.stride * (batch - 1) * static_cast<long long>(m.element_bytes()) : 0);
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
    for (int j = 0; j < m.cols; ++j)
      f(static_cast<const char*>(m.data) +
            (p * m.stride + static_cast<long long>(j) * m.ld) * static_cast<long long>(m.element_bytes()),
        m.rows * m.element_bytes());
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
  // The combinations of cuBLAS's table of cublasGemmEx types the emulator
  // provides: all f32 (with FP32, pedantic or TF32 compute), or bf16 A and B
  // with f32 or bf16 C and FP32 compute.
  const bool bf16 = Atype == CUDA_R_16BF, bf16_c = Ctype == CUDA_R_16BF;
  if (Atype != Btype || (Ctype != CUDA_R_32F && !(bf16 && bf16_c)) || (Atype != CUDA_R_32F && !bf16))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (computeType != CUBLAS_COMPUTE_32F && computeType != CUBLAS_COMPUTE_32F_PEDANTIC &&
      (bf16 || computeType != CUBLAS_COMPUTE_32F_FAST_TF32))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0 || batchCount == 0) return CUBLAS_STATUS_SUCCESS;

  const bool device_scalars = handle->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
  if (device_scalars) {
    if (!emu::is_device_range(alpha, sizeof(float))) emu::report_bad_access("cublasGemmStridedBatchedEx (alpha)", alpha, 4);
    if (!emu::is_device_range(beta, sizeof(float))) emu::report_bad_access("cublasGemmStridedBatchedEx (beta)", beta, 4);
  }
  // Host scalars are read now (a captured product keeps their values);
  // device ones when the product runs.
  const float host_alpha = device_scalars ? 0.0f : read_scalar(alpha), host_beta = device_scalars ? 0.0f : read_scalar(beta);
  const bool tf32 = computeType == CUBLAS_COMPUTE_32F_FAST_TF32;
  // Never inlined: a product run now and one replayed from a graph execute
  // the same machine code (the compiler contracts multiply-adds per copy).
  auto product = [=]() __attribute__((noinline)) {
    emu::DeviceSection section("cublasGemmStridedBatchedEx");
    const float a_scale = device_scalars ? read_scalar(alpha) : host_alpha;
    const float c_scale = device_scalars ? read_scalar(beta) : host_beta;
    const bool reads_ab = k > 0 && a_scale != 0.0f;
    const Matrix ma{A, ta ? k : m, ta ? m : k, lda, strideA, "A", bf16};
    const Matrix mb{B, tb ? n : k, tb ? k : n, ldb, strideB, "B", bf16};
    const Matrix mc{C, m, n, ldc, strideC, "C", bf16_c};
    if (reads_ab) {
      check_extent(ma, batchCount);
      check_extent(mb, batchCount);
    }
    check_extent(mc, batchCount);
    // Inside live tensors, and what is read written before (emulator.h, the
    // checks), when the product runs (a captured one: at each graph launch).
    auto read = [](const char* who) { return [who](const void* p, size_t bytes) { emu::stand_in_read(who, p, bytes); }; };
    if (reads_ab) {
      for_columns(ma, batchCount, read("cublasGemmStridedBatchedEx (matrix A)"));
      for_columns(mb, batchCount, read("cublasGemmStridedBatchedEx (matrix B)"));
    }
    if (c_scale != 0.0f) for_columns(mc, batchCount, read("cublasGemmStridedBatchedEx (matrix C, beta != 0)"));
    for_columns(mc, batchCount, [](const void* p, size_t bytes) {
      emu::stand_in_write("cublasGemmStridedBatchedEx (matrix C)", p, bytes);
    });
    auto input = [tf32](float v) { return tf32 ? ::ordo::round_to_tf32(v) : v; };  // cvt.rna.tf32.f32
    for (int p = 0; p < batchCount; ++p) {
      const long long a0 = p * strideA, b0 = p * strideB;
      const long long c0 = p * strideC;
      for (int j = 0; j < n; ++j) {
        for (int i = 0; i < m; ++i) {
          float sum = 0.0f;
          if (reads_ab) {
            for (int l = 0; l < k; ++l) {
              const float av = ma.at(a0 + (ta ? l + static_cast<long long>(i) * lda : i + static_cast<long long>(l) * lda));
              const float bv = mb.at(b0 + (tb ? j + static_cast<long long>(l) * ldb : l + static_cast<long long>(j) * ldb));
              sum += input(av) * input(bv);
            }
          }
          const long long at = c0 + i + static_cast<long long>(j) * ldc;
          const float out = c_scale == 0.0f ? a_scale * sum : a_scale * sum + c_scale * mc.at(at);
          if (bf16_c) {
            static_cast<uint16_t*>(C)[at] = ::ordo::f32_to_bf16(out);  // cvt.rn.bf16.f32
          } else {
            static_cast<float*>(C)[at] = out;
          }
        }
      }
    }
  };
  if (emu::capturing(handle->stream)) {
    emu::record(handle->stream, "cublasGemmStridedBatchedEx", product);
  } else {
    product();
  }
  return CUBLAS_STATUS_SUCCESS;
}
