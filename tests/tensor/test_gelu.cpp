// GELU's rows (tensor/cpu/gelu.h) against the C library in double precision,
// values and slopes, and the four CPU kernels that compute GELU in f32 (the
// unary op, its backward, bias + GELU and its backward) against each other:
// one row function serves them all, and with AVX-512 it gives the same bits
// whatever an element's place in a row, a thread's share or a view's strides.
#include <cfloat>
#include <cmath>
#include <limits>

#include "tensor/cpu/gelu.h"
#include "tensor/ops.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {

const double kInvSqrt2 = 0.70710678118654752440, kInvSqrt2Pi = 0.39894228040143267794;

double exact_cdf(double x) { return 0.5 * std::erfc(-kInvSqrt2 * x); }
double exact_density(double x) { return kInvSqrt2Pi * std::exp(-0.5 * x * x); }

// Phi's relative error as vector_math.h states it for vnormal_cdf: the fit's
// 5e-7 in f32 arithmetic, and x^2 2^-23 from rounding the exponent -x^2/2
// (saturated beyond |x| = 13.3, where Phi is 0 or 1).
// The portable rows are element loops that the compiler may build without
// fused multiply-adds (a CPU without FMA): z^2 is then rounded before it is
// added to the fit, x^2/2 2^-24 more, bounded by x^2 2^-24.
double cdf_accuracy(double x, bool contracted = true) {
  return 5e-7 + std::min(x * x, 176.0) * (contracted ? 0x1p-23 : 0x1p-23 + 0x1p-24);
}

// |GELU(x) - exact|: Phi's error and the product's rounding, relative.
double value_bound(double x, bool contracted = true) {
  return (cdf_accuracy(x, contracted) + 0x1p-24) * std::fabs(x * exact_cdf(x)) + std::fabs(x) * FLT_MIN + 0x1p-150;
}

// |GELU'(x) - exact|, GELU'(x) = Phi(x) + x phi(x): Phi's error; in x phi(x)
// exp's 2 ulps, the roundings of x/sqrt(2 pi) and of its constant (2^-24
// each) and of the exponent (x/2) x (x^2 2^-25 relative in phi); the sum's
// rounding. Absolute, since the slope passes through 0 near x = -0.75.
double slope_bound(double x, bool contracted = true) {
  const double exact = exact_cdf(x) + x * exact_density(x);
  return cdf_accuracy(x, contracted) * exact_cdf(x) + (0x1p-22 + 0x1p-23 + x * x * 0x1p-25) * std::fabs(x) * exact_density(x) +
         0x1p-24 * std::fabs(exact) + (1 + std::fabs(x) * kInvSqrt2Pi) * FLT_MIN + 0x1p-150;
}

// NaN where the exact answer is NaN, the infinity where it is infinite,
// within `bound` otherwise. The bounds below add what flushing does: the
// exponential gives 0 for answers below FLT_MIN, so Phi and phi may each be
// off by FLT_MIN, which GELU multiplies by |x| and GELU' by 1 and |x|/sqrt(2 pi);
// and an answer in the subnormal range is rounded to a multiple of 2^-149.
void require_within(const char* what, float x, float got, double exact, double bound) {
  INFO(what << "(" << x << ") = " << got << ", exact " << exact << ", error " << std::fabs(got - exact)
            << " against " << bound << " (AVX-512 rows: " << cpu::gelu_rows_vectorised() << ")");
  if (std::isnan(exact)) {
    REQUIRE(std::isnan(got));
  } else if (std::isinf(exact)) {
    REQUIRE(got == exact);
  } else {
    REQUIRE(std::fabs(got - exact) <= bound);
  }
}

}  // namespace

TEST_CASE("GELU's values and slopes stay within the normal CDF's stated accuracy over the whole range",
          "[ops][vector_math]") {
  // 1e-4 apart from -14 to 14 (GELU from its subnormal tail to x itself),
  // small magnitudes down to 1e-30, and the values a diverging run makes.
  std::vector<float> xs;
  for (int i = -140000; i <= 140000; ++i) xs.push_back(static_cast<float>(i * 1e-4));
  for (double a = 1e-30; a < 1; a *= 1.1) {
    xs.push_back(static_cast<float>(a));
    xs.push_back(static_cast<float>(-a));
  }
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float v : {nan, inf, -inf, 0.0f, -0.0f, FLT_TRUE_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX, -13.5f, -20.0f, 30.0f})
    xs.push_back(v);
  const Tensor x = Tensor::from_vector(xs);
  const Tensor y = unary(UnaryOp::gelu, x);
  const Tensor slope = unary_backward(UnaryOp::gelu, x, y, Tensor::ones(x.shape(), DType::f32));
  const std::vector<float> ys = y.to_vector<float>(), slopes = slope.to_vector<float>();
  // The builds without AVX-512 run the portable rows: checked here on every build.
  const int64_t n = static_cast<int64_t>(xs.size());
  std::vector<float> portable(xs.size()), portable_slopes(xs.size());
  const std::vector<float> ones(xs.size(), 1.0f);
  cpu::gelu_row_portable(portable.data(), xs.data(), nullptr, n);
  cpu::gelu_backward_row_portable(portable_slopes.data(), ones.data(), xs.data(), nullptr, n);
  for (size_t i = 0; i < xs.size(); ++i) {
    const double v = xs[i], value = v * exact_cdf(v), derivative = exact_cdf(v) + v * exact_density(v);
    require_within("gelu", xs[i], ys[i], value, value_bound(v));
    require_within("gelu'", xs[i], slopes[i], derivative, slope_bound(v));
    require_within("portable gelu", xs[i], portable[i], value, value_bound(v, false));
    require_within("portable gelu'", xs[i], portable_slopes[i], derivative, slope_bound(v, false));
  }
}

TEST_CASE("the CPU's GELU kernels agree: unary and bias + GELU, forward and backward, any place in a row "
          "and any stride",
          "[ops][vector_math]") {
  // The AVX-512 rows give the same bits wherever an element sits; the
  // portable rows end a row with a scalar loop that GCC may contract
  // differently: within a few ulps of these values (|u| < 7) there, as the
  // fused kernels' test allows.
  const bool vectorised = cpu::gelu_rows_vectorised();
  INFO("AVX-512 rows: " << vectorised);
  const auto require_same = [&](const Tensor& got, const Tensor& expected, const char* what) {
    if (vectorised) {
      INFO(what);
      CHECK(test::bit_identical(got, expected));
    } else {
      test::require_close(got, expected.to_doubles(), 4 * 0x1p-24, 4 * 0x1p-24, what);
    }
  };
  // 67 columns: four blocks of 16 and a remainder of 3.
  const Tensor x = test::random_tensor({5, 67}, 61, DType::f32, -6, 6);
  const Tensor bias = test::random_tensor({67}, 62, DType::f32, -1, 1);
  const Tensor gy = test::random_tensor({5, 67}, 63, DType::f32, -2, 2);
  const Tensor u = add(x, bias);  // x + bias rounded in f32, as the fused kernels add it
  const Tensor y = unary(UnaryOp::gelu, u);
  require_same(bias_activation(x, bias, UnaryOp::gelu, DType::f32), y, "bias + GELU");
  const Tensor gu = unary_backward(UnaryOp::gelu, u, y, gy);
  require_same(bias_activation_backward(gy, x, bias, UnaryOp::gelu, DType::f32).gx, gu, "its backward");
  require_same(unary(UnaryOp::gelu, u.transpose(0, 1)), y.transpose(0, 1).contiguous(), "a transposed view");
  // Each element alone (the first lane of a masked block) as in its row.
  const std::vector<float> us = u.to_vector<float>(), gys = gy.to_vector<float>();
  std::vector<float> alone(us.size()), alone_slopes(us.size());
  for (size_t i = 0; i < us.size(); ++i) {
    const Tensor one = Tensor::from_vector(std::vector<float>{us[i]});
    const Tensor value = unary(UnaryOp::gelu, one);
    alone[i] = value.to_vector<float>()[0];
    alone_slopes[i] =
        unary_backward(UnaryOp::gelu, one, value, Tensor::from_vector(std::vector<float>{gys[i]})).to_vector<float>()[0];
  }
  require_same(Tensor::from_vector(alone, u.shape()), y, "each element alone");
  require_same(Tensor::from_vector(alone_slopes, u.shape()), gu, "each slope alone");
}
