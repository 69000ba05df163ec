// CPU matrix product: the BLAS (OpenBLAS) when ordo was built with one,
// ordo's own kernel (tensor/cpu/gemm_own.cpp) otherwise, or when switched
// off with set_use_blas(false) or by the deterministic mode
// (tensor/cpu/cpu_paths.h), or for a layout the BLAS cannot express.
#include <atomic>
#include <climits>

#include "tensor/cpu/blas_core.h"
#include "tensor/cpu/common.h"
#include "tensor/cpu/cpu_paths.h"
#include "tensor/cpu/gemm_amx.h"
#include "tensor/cpu/gemm_own.h"

#ifdef ORDO_HAS_BLAS
#include <cblas.h>
#endif

namespace ordo::cpu {

namespace {
std::atomic<bool>& blas_switch() {
  static std::atomic<bool> on{blas_compiled()};
  return on;
}
}  // namespace

bool blas_compiled() {
#ifdef ORDO_HAS_BLAS
  return true;
#else
  return false;
#endif
}

std::string blas_description() {
#ifdef ORDO_HAS_BLAS
  const std::string note = blas_core_note();
  return openblas_get_config() + (note.empty() ? "" : " (" + note + ")");
#else
  return "none";
#endif
}

void set_use_blas(bool use) {
  ORDO_CHECK(!use || blas_compiled(),
             "set_use_blas(true): this build of ordo has no BLAS (rebuild with OpenBLAS installed)");
  blas_switch() = use;
}

bool use_blas() { return blas_switch() && !deterministic(); }

#ifdef ORDO_HAS_BLAS
namespace {

// Per matrix at most this many multiply-adds, with at least one matrix per
// thread: the threads take whole matrices (OpenBLAS runs on one thread when
// called inside an OpenMP parallel region) instead of OpenBLAS splitting each
// small product among the threads, which costs a wake-up per matrix. They
// take them first come, first served: a matrix's result does not depend on
// which thread computes it. Measured on the 2-core EPYC (8 and 48 square
// matrices): threads over the batch were as fast or faster up to 256^3, 1.7x
// for 8 matrices of 32^3 or 64^3; past 192^3 a batch not divisible by the
// thread count would leave threads idle, so the limit stays there.
constexpr double kBatchWork = 192.0 * 192 * 192;

// The leading dimension CBLAS accepts for a row-major matrix stored with
// `rows` rows of `cols` columns, or -1 when ld cannot be expressed (rows that
// overlap, as a broadcast view with ld 0 gives). With one row, ld is never
// used to address anything, so any value is as good as the smallest legal one.
int64_t blas_ld(int64_t ld, int64_t rows, int64_t cols) {
  int64_t least = std::max<int64_t>(1, cols);
  if (rows <= 1) return std::max(ld, least);
  return ld >= least ? ld : -1;
}

template <class T>
void blas_call(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, T alpha, const T* a,
               int lda, const T* b, int ldb, T beta, T* c, int ldc);
template <>
void blas_call<float>(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
                      const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
template <>
void blas_call<double>(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
                       const double* a, int lda, const double* b, int ldb, double beta, double* c,
                       int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Returns false (having done nothing) when the BLAS cannot take this call.
template <class T>
bool gemm_blas(const Tensor& c, const MatrixBatch& a, const MatrixBatch& b, int64_t batch,
               int64_t m, int64_t n, int64_t k, T alpha, T beta) {
  // A is stored m x k (k x m transposed), B k x n (n x k transposed).
  int64_t lda = a.trans ? blas_ld(a.ld, k, m) : blas_ld(a.ld, m, k);
  int64_t ldb = b.trans ? blas_ld(b.ld, n, k) : blas_ld(b.ld, k, n);
  int64_t largest = std::max({m, n, k, lda, ldb});
  if (lda < 0 || ldb < 0 || largest > INT_MAX) return false;  // CBLAS takes 32-bit ints here

  T* cp = c.data<T>();
  const T* ap = a.t.data<T>();
  const T* bp = b.t.data<T>();
  CBLAS_TRANSPOSE ta = a.trans ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = b.trans ? CblasTrans : CblasNoTrans;
  auto one = [&](int64_t i) {
    blas_call<T>(ta, tb, int(m), int(n), int(k), alpha, ap + i * a.batch_stride, int(lda),
                 bp + i * b.batch_stride, int(ldb), beta, cp + i * m * n, int(n));
  };
  int threads = max_threads();
  if (threads > 1 && batch >= threads && static_cast<double>(m) * n * k <= kBatchWork) {
#pragma omp parallel for schedule(dynamic)
    for (int64_t i = 0; i < batch; ++i) one(i);
  } else {
    for (int64_t i = 0; i < batch; ++i) one(i);
  }
  return true;
}

}  // namespace
#endif

namespace {

// The operand as f32 values the FP32 product takes: a bf16 one widened
// (exact), an f32 one rounded to TF32. The elements from the first to the
// last the product reads (rows x cols stored with ld, `batch` matrices apart
// by batch_stride) are converted, gaps included, so ld and batch_stride keep
// their meaning.
MatrixBatch as_f32_operand(const MatrixBatch& mb, int64_t rows, int64_t cols, int64_t batch) {
  const int64_t span = (mb.batch_stride > 0 ? (batch - 1) * mb.batch_stride : 0) +
                       (rows > 1 ? (rows - 1) * mb.ld : 0) + cols;
  Tensor dense = Tensor::empty({span}, DType::f32);
  float* out = dense.data<float>();
  if (mb.t.dtype() == DType::bf16) {
    const uint16_t* in = static_cast<const uint16_t*>(mb.t.raw_data());
    parallel_for(span, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = bf16_to_f32(in[i]);
    });
  } else {
    const float* in = mb.t.data<float>();
    parallel_for(span, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = round_to_tf32(in[i]);
    });
  }
  return {dense, mb.trans, mb.ld, mb.batch_stride};
}

}  // namespace

void gemm(const Tensor& c, const MatrixBatch& a_in, const MatrixBatch& b_in, int64_t batch, int64_t m,
          int64_t n, int64_t k, double alpha, double beta, MatmulPrecision precision) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (c.dtype() == DType::bf16) {  // the f32 product, rounded once as a tensor core writes a bf16 C
    ORDO_CHECK(beta == 0, "gemm: a bf16 C is written, not added onto (beta 0)");
    const Tensor sums = f32_target(c);
    gemm(sums, a_in, b_in, batch, m, n, k, alpha, 0.0, precision);
    finish_rounded(c, sums);
    return;
  }
  MatrixBatch a = a_in, b = b_in;
  // bf16 operands (the op layer rounded them) or TF32 rounding: the FP32
  // product of the rounded values. A product of two bf16 or TF32 values is
  // exact in f32, so this is the tensor cores' arithmetic up to the order of
  // the FP32 sums.
  if (k > 0 && alpha != 0 && c.dtype() == DType::f32 &&
      (precision == MatmulPrecision::tf32 || a.t.dtype() == DType::bf16 || b.t.dtype() == DType::bf16)) {
    ORDO_CHECK(precision != MatmulPrecision::fp32, "gemm: bf16 operands need precision bf16");
    // Both bf16, on the CPU's matrix tiles where it has them: FP32 sums of
    // the same exact products, in the tiles' order.
    if (a.t.dtype() == DType::bf16 && b.t.dtype() == DType::bf16 && amx_enabled()) {
      gemm_amx(c, a, b, batch, m, n, k, alpha, beta);
      return;
    }
    a = as_f32_operand(a, a.trans ? k : m, a.trans ? m : k, batch);
    b = as_f32_operand(b, b.trans ? n : k, b.trans ? k : n, batch);
  }
#ifdef ORDO_HAS_BLAS
  // k == 0 and alpha == 0 (C = beta C) go to the own kernel, which never reads A or B.
  if (use_blas() && k > 0 && alpha != 0) {
    bool done = false;
    dispatch_float(c.dtype(), "gemm", [&](auto tag) {
      using T = decltype(tag);
      done = gemm_blas<T>(c, a, b, batch, m, n, k, static_cast<T>(alpha), static_cast<T>(beta));
    });
    if (done) return;
  }
#endif
  gemm_own(c, a, b, batch, m, n, k, alpha, beta);
}

}  // namespace ordo::cpu

namespace ordo::cpu {

template <class T>
void strided_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                  const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
#ifdef ORDO_HAS_BLAS
  if (use_blas() && k > 0 && std::max({m, n, k, lda, ldb, ldc}) <= INT_MAX) {
    blas_call<T>(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, int(m), int(n), int(k),
                 alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
    return;
  }
#endif
  // A is stored m x k (k x m transposed), B k x n (n x k transposed); each sum over k in order.
  for (int64_t r = 0; r < m; ++r)
    for (int64_t col = 0; col < n; ++col) {
      T sum = 0;
      for (int64_t e = 0; e < k; ++e)
        sum += (trans_a ? a[e * lda + r] : a[r * lda + e]) * (trans_b ? b[col * ldb + e] : b[e * ldb + col]);
      T& out = c[r * ldc + col];
      out = alpha * sum + (beta == T(0) ? T(0) : beta * out);
    }
}

template void strided_gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                                  int64_t, float, float*, int64_t);
template void strided_gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                                   const double*, int64_t, double, double*, int64_t);

}  // namespace ordo::cpu
