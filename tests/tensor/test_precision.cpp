// The products' precisions (MatmulPrecision, tensor/device_runtime.h): bf16
// rounds each f32 operand to nearest even on 8 significant bits, tf32 to
// nearest with ties away on 11, and both then multiply exactly and sum in
// FP32 — checked against bit patterns worked by hand, against a naive loop
// over operands rounded here, and on CUDA (emulated in CI) against the CPU.
#include <cmath>
#include <cstring>

#ifdef ORDO_CUDA_EMULATED
#include <cublas_v2.h>
#endif

#include "tensor/cpu/gemm_amx.h"
#include "tensor/device_runtime.h"
#include "tensor/ops.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

// f32 bit patterns and the bf16 (upper half of an f32) round-to-nearest-even
// gives them, worked by hand: the low 16 bits decide, 0x8000 is a tie.
struct Rounding {
  uint32_t f32;
  uint32_t bf16;  // as the f32 it widens to
  const char* why;
};
const Rounding kBf16Cases[] = {
    {0x3F808000u, 0x3F800000u, "1 + 2^-8: a tie, to the even 1.0"},
    {0x3F818000u, 0x3F820000u, "1 + 3 2^-8: a tie, to the even 1 + 2^-6"},
    {0x3F808001u, 0x3F810000u, "just above the tie: up"},
    {0x3F807FFFu, 0x3F800000u, "just below the tie: down"},
    {0xBF808000u, 0xBF800000u, "-(1 + 2^-8): a tie, to the even -1.0"},
    {0x7F7FFFFFu, 0x7F800000u, "the largest f32 rounds past bf16's largest to +inf"},
    {0x00018000u, 0x00020000u, "a subnormal tie, to even"},
    {0xFF800000u, 0xFF800000u, "-inf stays -inf"},
};

// The product x * 1 of each case under `precision`: exactly the rounded x.
std::vector<float> rounded_by_product(const std::vector<float>& x, Device device, MatmulPrecision precision) {
  const int64_t n = static_cast<int64_t>(x.size());
  Tensor column = Tensor::from_vector(x, {n, 1}, device);
  Tensor one = Tensor::from_vector(std::vector<float>{1.0f}, {1, 1}, device);
  return matmul(column, one, false, false, 1.0, precision).to(Device::cpu()).to_vector<float>();
}

void check_bf16_rounding(Device device) {
  std::vector<float> x;
  for (const Rounding& r : kBf16Cases) x.push_back(from_bits(r.f32));
  // A signalling NaN whose payload sits in the low half: truncation would
  // make it an infinity; it must stay a NaN.
  x.push_back(from_bits(0xFF800001u));
  const std::vector<float> got = rounded_by_product(x, device, MatmulPrecision::bf16);
  // AMX's tiles read bf16 subnormals as zero (Intel SDM, TDPBF16PS: DAZ):
  // the operand is rounded as everywhere, then the product flushes it.
  const bool flushes_subnormals = device.is_cpu() && cpu::amx_enabled();
  for (size_t i = 0; i < std::size(kBf16Cases); ++i) {
    INFO(kBf16Cases[i].why << " on " << device.str() << (flushes_subnormals ? " (AMX tiles)" : ""));
    const bool subnormal = (kBf16Cases[i].bf16 & 0x7F800000u) == 0 && (kBf16Cases[i].bf16 & 0x007FFFFFu) != 0;
    CHECK(to_bits(got[i]) == (subnormal && flushes_subnormals ? 0u : kBf16Cases[i].bf16));
  }
  CHECK(std::isnan(got.back()));
}

// Each operand rounded as `precision` rounds it, in double.
double rounded(float v, MatmulPrecision precision) {
  if (precision == MatmulPrecision::bf16) return bf16_to_f32(f32_to_bf16(v));
  if (precision == MatmulPrecision::tf32) return round_to_tf32(v);
  return v;
}

// a [m, k] @ b [k, n] of rounded operands in double, and the bound of an FP32
// sum of k exact products: Higham's gamma_k on sum |a||b| (k u).
void naive_rounded_product(const Tensor& a, const Tensor& b, MatmulPrecision precision, std::vector<double>& exact,
                           std::vector<double>& bound) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>();
  exact.assign(static_cast<size_t>(m * n), 0.0);
  bound.assign(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < k; ++l) {
        const double p = rounded(av[i * k + l], precision) * rounded(bv[l * n + j], precision);
        exact[i * n + j] += p;
        bound[i * n + j] += std::fabs(p) * static_cast<double>(k) * 0x1p-24;
      }
}

Tensor random_f32(const Shape& shape, uint64_t seed) { return test::random_tensor(shape, seed, DType::f32); }

// matmul_to_bf16: the FP32 sums rounded to nearest even as written.
// Hand-worked ties (every operand and partial sum exact): 1 + 2^-8 is half
// of bf16's ulp at 1 (2^-7) above 1, a tie to the even 1.0; 1 + 2^-6 + 2^-8
// is 1 + 2.5 ulps, a tie to the even 1 + 2^-6; 1 + 2^-8 + 2^-16 is above the
// tie, up to 1 + 2^-7. Then random products: the bits of the same device's
// f32 product cast (the device's cast kernel against the product's own
// rounding), each within a half ulp of the naive rounded-operand sum and its
// FP32 bound; on CUDA no kernel of ordo's beside cuBLAS's product.
void check_bf16_output(Device device) {
  const MatmulPrecision bf16 = MatmulPrecision::bf16;
  const Tensor ties = Tensor::from_vector(std::vector<float>{1, 0x1p-8f, 0, 1 + 0x1p-6f, 0x1p-8f, 0, 1, 0x1p-8f, 0x1p-16f},
                                          {3, 3}, device);
  const Tensor ones = Tensor::ones({3, 1}, DType::f32, device);
  const Tensor tie_product = matmul_to_bf16(ties, ones);
  REQUIRE(tie_product.dtype() == DType::bf16);
  CHECK(tie_product.to(Device::cpu()).to(DType::f32).to_vector<float>() ==
        std::vector<float>{1.0f, 1 + 0x1p-6f, 1 + 0x1p-7f});

  const Tensor a = random_f32({2, 9, 70}, 31), b = random_f32({13, 70}, 32);
  const Tensor a16 = as_operand(a, bf16).to(device), b16 = as_operand(b, bf16).to(device);
  if (device.is_cuda()) {
    synchronize(device);
    reset_device_counters();
  }
  const Tensor got = matmul_to_bf16(a16, b16, false, true);
  if (device.is_cuda()) CHECK(device_counters().kernel_launches == 0);  // cuBLAS's product alone: no cast after it
  REQUIRE(got.shape() == Shape{2, 9, 13});
  CHECK(test::bit_identical(got.to(Device::cpu()),
                            matmul(a16, b16, false, true, 1.0, bf16).to(DType::bf16).to(Device::cpu())));
  const Tensor bt = b.transpose(0, 1).contiguous();
  for (int64_t batch = 0; batch < 2; ++batch) {
    std::vector<double> exact, bound;
    naive_rounded_product(a.select(0, batch).contiguous(), bt, MatmulPrecision::bf16, exact, bound);
    const std::vector<double> g = got.select(0, batch).contiguous().to(Device::cpu()).to_doubles();
    for (size_t i = 0; i < g.size(); ++i)
      CHECK(std::fabs(g[i] - exact[i]) <= bound[i] + 0x1p-8 * (std::fabs(exact[i]) + bound[i]));
  }
  // Only bf16 products round as they write: f64 operands have none.
  CHECK_THROWS_WITH(matmul_to_bf16(a.to(DType::f64).to(device), bt.to(DType::f64).to(device)),
                    "matmul_to_bf16: needs bf16 products (precision bf16, operands f64)");
}

}  // namespace

TEST_CASE("bf16 products written as bf16: the FP32 sums rounded once, to nearest even", "[tensor]") {
  check_bf16_output(Device::cpu());
}

TEST_CASE("bf16 products round each operand to nearest even (hand-worked bit patterns)", "[tensor]") {
  check_bf16_rounding(Device::cpu());
  // The host conversion the CPU path uses, on its own.
  for (const Rounding& r : kBf16Cases) CHECK((static_cast<uint32_t>(f32_to_bf16(from_bits(r.f32))) << 16) == r.bf16);
}

TEST_CASE("tf32 products round each operand to 10 mantissa bits, ties away from zero", "[tensor]") {
  // 1 + 2^-12 is a quarter of TF32's ulp (2^-10) above 1: down. 1 + 2^-11 is
  // half an ulp: a tie, away from zero. -(1 + 3 2^-11): a tie, away (down).
  const std::vector<float> x = {1.0f + 0x1p-12f, 1.0f + 0x1p-11f, -(1.0f + 3 * 0x1p-11f)};
  CHECK(rounded_by_product(x, Device::cpu(), MatmulPrecision::tf32) ==
        std::vector<float>{1.0f, 1.0f + 0x1p-10f, -(1.0f + 0x1p-9f)});
  CHECK(rounded_by_product(x, Device::cpu(), MatmulPrecision::fp32) == x);
}

TEST_CASE("CPU bf16 and tf32 products are the FP32 sums of the rounded operands' exact products", "[tensor]") {
  const Tensor a = random_f32({7, 129}, 11), b = random_f32({129, 5}, 12);
  for (MatmulPrecision p : {MatmulPrecision::bf16, MatmulPrecision::tf32}) {
    INFO(precision_name(p));
    std::vector<double> exact, bound;
    naive_rounded_product(a, b, p, exact, bound);
    // Through a transposed view too (the rounding covers any layout).
    for (bool through_view : {false, true}) {
      const Tensor got = through_view ? matmul(a, b.transpose(0, 1).contiguous(), false, true, 1.0, p)
                                      : matmul(a, b, false, false, 1.0, p);
      const std::vector<double> g = got.to_doubles();
      for (size_t i = 0; i < g.size(); ++i) CHECK(std::fabs(g[i] - exact[i]) <= bound[i]);
    }
    // Rounding shows: the FP32 product of the unrounded operands differs.
    CHECK_FALSE(test::bit_identical(matmul(a, b, false, false, 1.0, MatmulPrecision::fp32),
                                    matmul(a, b, false, false, 1.0, p)));
  }
  // f64 products ignore the precision: the same f64 product as under fp32.
  const MatmulPrecision bf16 = MatmulPrecision::bf16;
  const Tensor a64 = a.to(DType::f64), b64 = b.to(DType::f64);
  const Tensor f64_product = matmul(a64, b64, false, false, 1.0, MatmulPrecision::fp32);
  CHECK(test::bit_identical(matmul(a64, b64, false, false, 1.0, bf16), f64_product));
  // as_operand rounds once, for an operand used by several products.
  CHECK(as_operand(a, bf16).dtype() == DType::bf16);
  CHECK(test::bit_identical(matmul(as_operand(a, bf16), b, false, false, 1.0, bf16),
                            matmul(a, b, false, false, 1.0, bf16)));
}

#ifdef ORDO_HAS_CUDA

TEST_CASE("cuda: bf16 products round each operand to nearest even (hand-worked bit patterns)", "[cuda]") {
  check_bf16_rounding(Device::cuda(0));
}

TEST_CASE("cuda: bf16 products written as bf16 (cuBLAS's bf16 C): rounded once, to nearest even, no cast",
          "[cuda]") {
  check_bf16_output(Device::cuda(0));
}

// Both devices sum the same exact products of the same rounded operands in
// FP32, in different orders: each within k u sum |a16 b16| of the exact sum.
TEST_CASE("cuda: bf16 and tf32 products match the CPU's rounded-operand products", "[cuda]") {
  const Tensor a = random_f32({2, 9, 70}, 21), b = random_f32({70, 13}, 22);
  for (MatmulPrecision p : {MatmulPrecision::bf16, MatmulPrecision::tf32}) {
    INFO(precision_name(p));
    const Tensor gpu = matmul(a.to(Device::cuda(0)), b.to(Device::cuda(0)), false, false, 1.0, p).to(Device::cpu());
    for (int64_t batch = 0; batch < 2; ++batch) {
      std::vector<double> exact, bound;
      naive_rounded_product(a.select(0, batch).contiguous(), b, p, exact, bound);
      const std::vector<double> g = gpu.select(0, batch).contiguous().to_doubles();
      for (size_t i = 0; i < g.size(); ++i) CHECK(std::fabs(g[i] - exact[i]) <= bound[i]);
    }
  }
}

#endif

#ifdef ORDO_CUDA_EMULATED

// The cuBLAS stand-in's bf16 operands: CUDA_R_16BF A and B with f32 (or
// bf16) C and CUBLAS_COMPUTE_32F, each element widened exactly (the upper half of an
// f32), the products exact in f32; the combinations cuBLAS does not offer refused.
TEST_CASE("emulator: cuBLAS's bf16 A and B are widened exactly, other type mixes refused", "[emulator]") {
  const Device gpu = Device::cuda(0);
  // A = [1 + 2^-7, -3], B = [3, 0.5] (column-major 1x2 and 2x1): 3 + 3 2^-7 - 1.5, exactly.
  Tensor a = Tensor::from_vector(std::vector<float>{1.0f + 0x1p-7f, -3.0f}, {2}, gpu).to(DType::bf16);
  Tensor b = Tensor::from_vector(std::vector<float>{3.0f, 0.5f}, {2}, gpu).to(DType::bf16);
  Tensor c = Tensor::zeros({1}, DType::f32, gpu);
  cublasHandle_t handle;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&](cudaDataType at, cudaDataType bt, cudaDataType ct, cublasComputeType_t compute) {
    return cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &one, a.raw_data(), at, 1, 0,
                                      b.raw_data(), bt, 2, 0, &zero, c.raw_data(), ct, 1, 0, 1, compute,
                                      CUBLAS_GEMM_DEFAULT);
  };
  REQUIRE(gemm(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F) == CUBLAS_STATUS_SUCCESS);
  CHECK(c.item() == 3.0 + 3 * 0x1p-7 - 1.5);
  CHECK(gemm(CUDA_R_16BF, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F) == CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(gemm(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16F, CUBLAS_COMPUTE_32F) == CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(gemm(CUDA_R_32F, CUDA_R_32F, CUDA_R_16BF, CUBLAS_COMPUTE_32F) == CUBLAS_STATUS_NOT_SUPPORTED);
  // A bf16 C: the same sum, written as its bf16 (exact here: 1.5 + 3 2^-7 takes 8 significant bits).
  Tensor c16 = Tensor::zeros({1}, DType::bf16, gpu);
  std::swap(c, c16);
  REQUIRE(gemm(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F) == CUBLAS_STATUS_SUCCESS);
  CHECK(c.to(DType::f32).item() == 3.0 + 3 * 0x1p-7 - 1.5);
  CHECK(gemm(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32) == CUBLAS_STATUS_NOT_SUPPORTED);
  cublasDestroy(handle);
}

#endif
