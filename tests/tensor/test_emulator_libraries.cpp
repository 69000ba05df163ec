// The emulated GPU's stand-ins for CUDA's libraries against loops written
// here from the libraries' documentation: cuBLAS's strided batched GEMM (its
// arithmetic, TF32 rounding, argument checks and operand bounds), cub's radix
// sort, and wmma's tile products with the misuses they catch. Compiled with
// the emulator's access hooks; other builds compile this file to nothing.
#ifdef ORDO_CUDA_EMULATED

#include <cub/device/device_radix_sort.cuh>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tensor/cuda/cuda_common.cuh"
#include "tests/helpers.h"
#include "tests/tensor/emulator_harness.h"

using Catch::Matchers::Contains;
using namespace emulator_test;

namespace {

// cuBLAS's documented operation, by hand, in double: column-major A (m x k,
// or k x m when transposed), B (k x n or n x k), C (m x n), per batch.
struct GemmCase {
  bool ta, tb;
  int m, n, k, lda, ldb, ldc, batch;
  long long sa, sb, sc;
};

std::vector<double> naive_gemm(const GemmCase& g, const std::vector<float>& a, const std::vector<float>& b,
                               const std::vector<float>& c, float alpha, float beta, bool tf32) {
  auto in = [tf32](float v) -> double {
    if (!tf32) return v;
    // TF32 keeps 10 mantissa bits; cvt.rna rounds to nearest, ties away from zero.
    int exponent;
    const double mantissa = std::frexp(static_cast<double>(v), &exponent);  // in [0.5, 1)
    return std::ldexp(std::round(std::ldexp(mantissa, 11)), exponent - 11);
  };
  std::vector<double> out(c.begin(), c.end());
  for (int p = 0; p < g.batch; ++p)
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.m; ++i) {
        double sum = 0;
        for (int l = 0; l < g.k; ++l) {
          const float av = g.ta ? a[p * g.sa + l + i * g.lda] : a[p * g.sa + i + l * g.lda];
          const float bv = g.tb ? b[p * g.sb + j + l * g.ldb] : b[p * g.sb + l + j * g.ldb];
          sum += in(av) * in(bv);
        }
        double& o = out[p * g.sc + i + j * g.ldc];
        o = alpha * sum + beta * o;
      }
  return out;
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::vector<float> v;
  for (double x : ordo::test::random_values(static_cast<int64_t>(n), seed)) v.push_back(static_cast<float>(x));
  return v;
}

size_t operand_size(int rows_or_cols, int ld, int batch, long long stride) {
  return static_cast<size_t>((batch - 1) * stride + static_cast<long long>(ld) * rows_or_cols);
}

}  // namespace

TEST_CASE("emulator: cublasGemmStridedBatchedEx computes what cuBLAS documents", "[emulator]") {
  cublasHandle_t handle;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  // Padded leading dimensions, every transpose pair, A shared by the batches (stride 0).
  for (const bool ta : {false, true})
    for (const bool tb : {false, true})
      for (const bool tf32 : {false, true}) {
        GemmCase g{ta, tb, 5, 3, 7, 0, 0, 6, 2, 0, 0, 0};
        g.lda = (ta ? g.k : g.m) + 1;
        g.ldb = (tb ? g.n : g.k) + 2;
        g.sb = static_cast<long long>(g.ldb) * (tb ? g.k : g.n) + 3;
        g.sc = static_cast<long long>(g.ldc) * g.n;
        const auto a = random_floats(operand_size(ta ? g.m : g.k, g.lda, 1, 0), 1);
        const auto b = random_floats(operand_size(tb ? g.k : g.n, g.ldb, g.batch, g.sb), 2);
        const auto c = random_floats(operand_size(g.n, g.ldc, g.batch, g.sc), 3);
        const float alpha = 0.75f, beta = -0.5f;
        float* da = device_array(a);
        float* db = device_array(b);
        float* dc = device_array(c);
        REQUIRE(cublasGemmStridedBatchedEx(handle, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                           g.m, g.n, g.k, &alpha, da, CUDA_R_32F, g.lda, g.sa, db, CUDA_R_32F,
                                           g.ldb, g.sb, &beta, dc, CUDA_R_32F, g.ldc, g.sc, g.batch,
                                           tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
        const std::vector<float> got = host_array(dc, c.size());
        const std::vector<double> want = naive_gemm(g, a, b, c, alpha, beta, tf32);
        INFO("ta " << ta << " tb " << tb << " tf32 " << tf32);
        // f32 sums of 7 products of values below 1 (plus beta c): a few ulps of 8.
        for (size_t e = 0; e < got.size(); ++e) CHECK(std::abs(got[e] - want[e]) <= 8 * 8 * 0x1p-24);
        cudaFree(da);
        cudaFree(db);
        cudaFree(dc);
      }
  cublasDestroy(handle);
}

TEST_CASE("emulator: TF32 compute rounds the inputs to 10 mantissa bits, ties away from zero", "[emulator]") {
  cublasHandle_t handle;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  // 1 + 2^-12 is a quarter of TF32's ulp (2^-10) above 1: rounds to 1.
  // 1 + 2^-11 is half an ulp: a tie, rounded away from zero to 1 + 2^-10.
  const std::vector<float> a = {1.0f + 0x1p-12f, 1.0f + 0x1p-11f};
  const std::vector<float> b = {1.0f, 1.0f};
  float* da = device_array(a);
  float* db = device_array(b);
  float* dc = device_array(std::vector<float>(2, 0.0f));
  const float alpha = 1.0f, beta = 0.0f;
  auto product = [&](cublasComputeType_t compute) {
    // Two 1x1x1 products in a batch of 2 (strides 1).
    REQUIRE(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, da, CUDA_R_32F, 1, 1, db,
                                       CUDA_R_32F, 1, 1, &beta, dc, CUDA_R_32F, 1, 1, 2, compute,
                                       CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    return host_array(dc, 2);
  };
  CHECK(product(CUBLAS_COMPUTE_32F) == a);
  CHECK(product(CUBLAS_COMPUTE_32F_FAST_TF32) == std::vector<float>{1.0f, 1.0f + 0x1p-10f});
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cublasDestroy(handle);
}

TEST_CASE("emulator: cublasGemmStridedBatchedEx validates its arguments as cuBLAS does", "[emulator]") {
  cublasHandle_t handle;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  float* d = device_array(std::vector<float>(64, 1.0f));
  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&](cublasOperation_t ta, int m, int n, int k, int lda, int ldb, int ldc, cudaDataType type) {
    return cublasGemmStridedBatchedEx(handle, ta, CUBLAS_OP_N, m, n, k, &one, d, type, lda, 0, d, CUDA_R_32F, ldb,
                                      0, &zero, d, CUDA_R_32F, ldc, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  CHECK(gemm(CUBLAS_OP_N, 2, 2, 2, 2, 2, 2, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
  CHECK(gemm(CUBLAS_OP_N, 3, 2, 2, 2, 2, 3, CUDA_R_32F) == CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  CHECK(gemm(CUBLAS_OP_T, 3, 2, 4, 3, 4, 3, CUDA_R_32F) == CUBLAS_STATUS_INVALID_VALUE);  // lda < k (transposed)
  CHECK(gemm(CUBLAS_OP_N, 2, 2, 4, 2, 3, 2, CUDA_R_32F) == CUBLAS_STATUS_INVALID_VALUE);  // ldb < k
  CHECK(gemm(CUBLAS_OP_N, 2, 2, 2, 2, 2, 1, CUDA_R_32F) == CUBLAS_STATUS_INVALID_VALUE);  // ldc < m
  CHECK(gemm(CUBLAS_OP_N, -1, 2, 2, 2, 2, 2, CUDA_R_32F) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(gemm(CUBLAS_OP_N, 2, 2, 2, 2, 2, 2, CUDA_R_64F) == CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(cublasGemmStridedBatchedEx(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, d, CUDA_R_32F, 1, 0, d,
                                   CUDA_R_32F, 1, 0, &zero, d, CUDA_R_32F, 1, 0, 1, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_INITIALIZED);
  cudaFree(d);
  cublasDestroy(handle);
}

TEST_CASE("emulator: a GEMM operand reaching past its allocation is caught before it is read", "[emulator]") {
  const ChildResult r = run_in_child([] {
    cublasHandle_t handle;
    cublasCreate(&handle);
    float* a = device_array(std::vector<float>(4, 1.0f));
    float* b = device_array(std::vector<float>(3, 1.0f));  // a 2x2 B needs 4
    float* c = device_array(std::vector<float>(4, 0.0f));
    const float one = 1.0f, zero = 0.0f;
    cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, a, CUDA_R_32F, 2, 0, b, CUDA_R_32F,
                               2, 0, &zero, c, CUDA_R_32F, 2, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  });
  CHECK(r.killed_by_segv);
  CHECK_THAT(r.stderr_text, Contains("cublasGemmStridedBatchedEx (matrix B) would touch 16 bytes"));
}

// ---- the cub stand-in ---------------------------------------------------------------------

TEST_CASE("emulator: cub's radix sort is stable and sorts only the bits asked for", "[emulator]") {
  // Sorted on bits [0, 4) only: the low nibbles are 3 2 1 1 2, and equal
  // nibbles keep their input order.
  const std::vector<uint32_t> keys = {0x13, 0x02, 0x21, 0x01, 0x12};
  const std::vector<int32_t> values = {0, 1, 2, 3, 4};
  uint32_t* keys_in = device_array(keys);
  uint32_t* keys_out = device_array(std::vector<uint32_t>(5, 0));
  int32_t* values_in = device_array(values);
  int32_t* values_out = device_array(std::vector<int32_t>(5, 0));
  size_t temp_bytes = 0;
  REQUIRE(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in, keys_out, values_in, values_out, 5, 0, 4) ==
          cudaSuccess);
  REQUIRE(temp_bytes > 0);
  void* temp = nullptr;
  REQUIRE(cudaMalloc(&temp, temp_bytes) == cudaSuccess);

  SECTION("the bit range") {
    REQUIRE(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, 5, 0, 4) ==
            cudaSuccess);
    CHECK(host_array(keys_out, 5) == std::vector<uint32_t>{0x21, 0x01, 0x02, 0x12, 0x13});
    CHECK(host_array(values_out, 5) == std::vector<int32_t>{2, 3, 1, 4, 0});
  }
  SECTION("temp storage smaller than the first call asked for is refused") {
    size_t too_small = temp_bytes - 1;
    CHECK(cub::DeviceRadixSort::SortPairs(temp, too_small, keys_in, keys_out, values_in, values_out, 5, 0, 4) ==
          cudaErrorInvalidValue);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  }
  SECTION("a bit range outside the key") {
    CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, 5, 0, 33) ==
          cudaErrorInvalidValue);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  }
  for (void* p : {static_cast<void*>(keys_in), static_cast<void*>(keys_out), static_cast<void*>(values_in),
                  static_cast<void*>(values_out), temp})
    cudaFree(p);
}

TEST_CASE("emulator: cub's radix sort matches std::stable_sort on many 64-bit keys", "[emulator]") {
  constexpr int kCount = 3001, kEndBit = 19;
  std::mt19937_64 gen(11);
  std::vector<uint64_t> keys(kCount);
  std::vector<int64_t> positions(kCount);
  for (int i = 0; i < kCount; ++i) {
    keys[static_cast<size_t>(i)] = gen();  // bits above kEndBit must not order anything
    positions[static_cast<size_t>(i)] = i;
  }
  const uint64_t mask = (uint64_t(1) << kEndBit) - 1;
  std::vector<int64_t> expected = positions;
  std::stable_sort(expected.begin(), expected.end(), [&](int64_t x, int64_t y) {
    return (keys[static_cast<size_t>(x)] & mask) < (keys[static_cast<size_t>(y)] & mask);
  });
  uint64_t* keys_in = device_array(keys);
  uint64_t* keys_out = device_array(std::vector<uint64_t>(kCount, 0));
  int64_t* values_in = device_array(positions);
  int64_t* values_out = device_array(std::vector<int64_t>(kCount, 0));
  size_t temp_bytes = 0;
  REQUIRE(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in, keys_out, values_in, values_out, kCount, 0,
                                          kEndBit) == cudaSuccess);
  void* temp = nullptr;
  REQUIRE(cudaMalloc(&temp, temp_bytes) == cudaSuccess);
  REQUIRE(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, kCount, 0,
                                          kEndBit) == cudaSuccess);
  CHECK(host_array(values_out, kCount) == expected);
  std::vector<uint64_t> expected_keys;
  for (int64_t p : expected) expected_keys.push_back(keys[static_cast<size_t>(p)]);
  CHECK(host_array(keys_out, kCount) == expected_keys);
  for (void* p : {static_cast<void*>(keys_in), static_cast<void*>(keys_out), static_cast<void*>(values_in),
                  static_cast<void*>(values_out), temp})
    cudaFree(p);
}

// ---- warp matrix operations (include/mma.h) -----------------------------------------------

namespace wmma = nvcuda::wmma;

struct TileOperands {
  alignas(32) __nv_bfloat16 a[16][16];
  alignas(32) __nv_bfloat16 bt[16][16];  // b transposed: b read column-major
  alignas(32) float c[16][16];
};

// c = a b for one 16 x 16 x 16 tile: lanes 0-15 copy a row of a and of b's
// transpose each into shared memory (kSyncwarp: then __syncwarp, as the
// hardware requires before the warp reads what other lanes wrote), the warp
// multiplies on "tensor cores" and stores c, and every lane copies out its
// elements. `ldm`: the operands' leading dimension as given to the loads.
template <bool kSyncwarp>
__global__ void tile_product(float* c, const float* a, const float* bt, unsigned ldm) {
  __shared__ TileOperands s;
  const int lane = static_cast<int>(threadIdx.x);
  if (lane < 16)
    for (int x = 0; x < 16; ++x) {
      s.a[lane][x] = __ushort_as_bfloat16(ordo::cuda::bf16_bits(a[lane * 16 + x]));
      s.bt[lane][x] = __ushort_as_bfloat16(ordo::cuda::bf16_bits(bt[lane * 16 + x]));
    }
  if (kSyncwarp) __syncwarp();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, &s.a[0][0], ldm);
  wmma::load_matrix_sync(fb, &s.bt[0][0], ldm);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(&s.c[0][0], fc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int e = lane; e < 256; e += 32) c[e] = s.c[e / 16][e % 16];
}

// As tile_product<true>, but only lanes 0-15 take part in the matrix operations.
__global__ void tile_product_half_warp(float* c, const float* a) {
  __shared__ TileOperands s;
  const int lane = static_cast<int>(threadIdx.x);
  for (int e = lane; e < 256; e += 32) s.a[e / 16][e % 16] = __ushort_as_bfloat16(ordo::cuda::bf16_bits(a[e]));
  __syncwarp();
  if (lane >= 16) return;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::load_matrix_sync(fa, &s.a[0][0], 16);
  c[lane] = 0;
}

TEST_CASE("emulator: wmma's stand-in multiplies tiles, and catches a missing __syncwarp, a half warp and a bad ldm",
          "[emulator]") {
  // Small integers: every product and sum is exact in bf16 and f32.
  std::vector<float> a(256), bt(256), expected(256, 0.0f);
  for (int e = 0; e < 256; ++e) a[e] = static_cast<float>((e * 7) % 11 - 5), bt[e] = static_cast<float>((e * 5) % 9 - 4);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n)
      for (int k = 0; k < 16; ++k) expected[r * 16 + n] += a[r * 16 + k] * bt[n * 16 + k];
  float* da = device_array(a);
  float* dbt = device_array(bt);
  float* dc = device_array(std::vector<float>(256, 0.0f));
  for (const std::string schedule : {"forward", "greedy-warp"}) {
    ScheduleGuard guard(schedule);
    INFO(schedule);
    ORDO_LAUNCH(tile_product<true>, 1, 32, 0, nullptr, dc, da, dbt, 16u);
    REQUIRE(launch_error() == "");
    CHECK(host_array(dc, 256) == expected);
  }
  {
    // Without the __syncwarp the fibers happen to run the copies first: the
    // product is right with the checks off, as it often is on a GPU.
    ChecksGuard off(0);
    ORDO_LAUNCH(tile_product<false>, 1, 32, 0, nullptr, dc, da, dbt, 16u);
    REQUIRE(launch_error() == "");
    CHECK(host_array(dc, 256) == expected);
  }
  ChecksGuard race(emu::Check::race);
  ORDO_LAUNCH(tile_product<false>, 1, 32, 0, nullptr, dc, da, dbt, 16u);
  std::string error = launch_error();
  CHECK_THAT(error, Contains("shared-memory race (read after write) in kernel 'tile_product<false>'"));
  CHECK_THAT(error, Contains("which thread ("));
  ORDO_LAUNCH(tile_product<true>, 1, 32, 0, nullptr, dc, da, dbt, 12u);  // 24 bytes: not a multiple of 16
  CHECK_THAT(launch_error(), Contains("load_matrix_sync: ldm 12 is not a multiple of 16 bytes"));
  ORDO_LAUNCH(tile_product_half_warp, 1, 32, 0, nullptr, dc, da);
  error = launch_error();
  CHECK_THAT(error, Contains("kernel 'tile_product_half_warp'"));
  CHECK_THAT(error, Contains("wmma operation"));
  cudaFree(da);
  cudaFree(dbt);
  cudaFree(dc);
}

#endif  // ORDO_CUDA_EMULATED
