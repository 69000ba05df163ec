// The vectorised f32 math of tensor/vector_math.h against the C library in
// double precision: the values a diverging run produces (NaN, +-inf),
// subnormals, and the edges where exp overflows and underflows. Each function
// is called one value at a time, and through the f32 kernels that use it,
// whose loops GCC vectorises: the vector code is a separate compilation of
// the same selects. Under the sanitized build these tests also check that no
// input reaches undefined behaviour (a NaN cast to int, as vexp once did).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "tensor/ops.h"
#include "tensor/vector_math.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
const double kInvSqrt2 = 0.70710678118654752440;

double libm_exp(double x) { return std::exp(x); }
double libm_erf(double x) { return std::erf(x); }
double libm_erfc(double x) { return std::erfc(x); }
double libm_normal_cdf(double x) { return 0.5 * std::erfc(-kInvSqrt2 * x); }
double libm_gelu(double x) { return x * libm_normal_cdf(x); }
double libm_sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// The relative errors the header of vector_math.h states.
double two_ulps(double) { return 0x1p-22; }
// erf: 1 - erfc(|x|) from 0.5 up carries erfc's error, largest at 0.5.
double erf_accuracy(double) { return 5e-7; }
// erfc and Phi: the fit's error in f32 arithmetic, and rounding the exponent
// -z^2 (z = x, or x / sqrt 2 for Phi, itself rounded) costs x^2 2^-23.
// Beyond |x| = 13.3 both are saturated (0, 1 or 2) or flushed: no more growth.
double erfc_accuracy(double x) { return 5e-7 + std::min(x * x, 176.0) * 0x1p-23; }
// x Phi(x): Phi's error and one rounding.
double gelu_accuracy(double x) { return erfc_accuracy(x) + 0x1p-24; }
// 1 / (1 + vexp(-x)): exp's two ulps and two roundings.
double sigmoid_accuracy(double) { return 0x1p-22 + 0x1p-23; }

// NaN for NaN, libm's infinity for an infinity, within `relative` of libm's
// answer otherwise, except that an answer below FLT_MIN (subnormal, which
// vexp flushes to 0) need only be within FLT_MIN. An overflow to infinity
// is right where libm's answer is within `relative` of overflowing.
bool agrees(float got, double exact, double relative) {
  if (std::isnan(exact)) return std::isnan(got);
  if (std::isinf(exact)) return got == exact;
  if (std::isinf(got)) return std::fabs(exact) * (1 + relative) > FLT_MAX && (got > 0) == (exact > 0);
  if (std::fabs(exact) < FLT_MIN) return std::fabs(got - exact) < FLT_MIN;
  return std::fabs(got - exact) <= relative * std::fabs(exact);
}

struct Function {
  const char* name;
  float (*vectorised)(float);
  double (*libm)(double);
  double (*accuracy)(double);
};
const Function kFunctions[] = {
    {"vexp", cpu::vexp, libm_exp, two_ulps},
    {"verf", cpu::verf, libm_erf, erf_accuracy},
    {"verfc", cpu::verfc, libm_erfc, erfc_accuracy},
    {"vnormal_cdf", cpu::vnormal_cdf, libm_normal_cdf, erfc_accuracy},
};

void require_agrees(const char* name, float x, float got, double exact, double relative) {
  INFO(name << "(" << x << ") = " << got << ", libm " << exact << ", relative error "
            << std::fabs(got - exact) / std::fabs(exact) << " against " << relative);
  REQUIRE(agrees(got, exact, relative));
}

void require_agrees(const Function& f, float x) {
  require_agrees(f.name, x, f.vectorised(x), f.libm(x), f.accuracy(x));
}

// NaN (both signs), +-inf, +-0, the smallest and a mid subnormal, the
// smallest and largest normal floats, and both sides of vexp's edges.
std::vector<float> special_values() {
  return {kNaN,   -kNaN,         kInf,    -kInf,     0.0f,      -0.0f,     FLT_TRUE_MIN, -FLT_TRUE_MIN,
          FLT_MIN / 2, -FLT_MIN / 2, FLT_MIN, -FLT_MIN, FLT_MAX,   -FLT_MAX,  88.7f,        88.71f,
          88.72f, 88.72283f,     88.72284f, 88.76f,   88.8f,     89.0f,     -87.3f,       -87.33654f,
          -87.33655f, -87.4f,    -100.0f, -103.97f,  -104.0f,   -200.0f};
}

// Every float from `low` to `high`, each one ulp after the last.
template <class Fn>
void for_each_float(float low, float high, Fn&& fn) {
  for (float x = low; x <= high; x = std::nextafter(x, kInf)) fn(x);
}
}  // namespace

TEST_CASE("vectorised math gives libm's NaN, infinities and subnormal answers", "[ops][vector_math]") {
  for (const Function& f : kFunctions)
    for (float x : special_values()) require_agrees(f, x);
  // Exactly, where libm's answer is exact.
  CHECK(cpu::vexp(kInf) == kInf);
  CHECK(cpu::vexp(-kInf) == 0.0f);
  CHECK(cpu::vexp(-0.0f) == 1.0f);
  CHECK(cpu::vexp(FLT_TRUE_MIN) == 1.0f);
  CHECK(cpu::verf(kInf) == 1.0f);
  CHECK(cpu::verf(-kInf) == -1.0f);
  CHECK(std::signbit(cpu::verf(-0.0f)));
  CHECK(cpu::verfc(kInf) == 0.0f);
  CHECK(cpu::verfc(-kInf) == 2.0f);
  CHECK(cpu::vnormal_cdf(-kInf) == 0.0f);
  CHECK(cpu::vnormal_cdf(kInf) == 1.0f);
}

TEST_CASE("vexp overflows to infinity where expf does, and is accurate up to there", "[ops][vector_math]") {
  // ln(FLT_MAX) = 88.7228: every float from 88 to 89.
  for_each_float(88.0f, 89.0f, [](float x) { require_agrees(kFunctions[0], x); });
  CHECK(cpu::vexp(88.72283f) < kInf);  // the last float whose exp is below FLT_MAX
  CHECK(cpu::vexp(89.0f) == kInf);
}

TEST_CASE("vexp is accurate down to ln(FLT_MIN) and 0 below, where expf is subnormal", "[ops][vector_math]") {
  // ln(FLT_MIN) = -87.3365: every float from -88 to -86.5.
  for_each_float(-88.0f, -86.5f, [](float x) { require_agrees(kFunctions[0], x); });
  CHECK(cpu::vexp(-87.33654f) >= FLT_MIN);  // the last float whose exp is normal
  for (float x = -104.0f; x < -87.33655f; x += 0.25f) CHECK(cpu::vexp(x) == 0.0f);
}

TEST_CASE("erf, erfc and the normal CDF stay within their stated accuracy over the whole range",
          "[ops][vector_math]") {
  // A grid 1e-4 apart from -12 to 12, where the answers go from saturated
  // (erf = -1, erfc = 2) to subnormal or 0 (erfc(12) = 1.4e-64), and powers
  // of 1.1 from 1e-30 to 1 for the small arguments the grid steps over.
  std::vector<float> xs;
  for (int i = -120000; i <= 120000; ++i) xs.push_back(static_cast<float>(i * 1e-4));
  for (double a = 1e-30; a < 1; a *= 1.1) {
    xs.push_back(static_cast<float>(a));
    xs.push_back(static_cast<float>(-a));
  }
  for (const Function& f : kFunctions)
    for (float x : xs) require_agrees(f, x);
}

TEST_CASE("the f32 kernels built on them give libm's NaN, infinities and edges", "[ops][vector_math]") {
  // 67 values: not a multiple of any vector width, so the loop's remainder runs too.
  std::vector<float> values = special_values();
  for (double v : test::random_values(67 - static_cast<int64_t>(values.size()), 21, -12, 12))
    values.push_back(static_cast<float>(v));
  Tensor x = Tensor::from_vector(values);
  struct Kernel {
    UnaryOp op;
    double (*libm)(double);
    double (*accuracy)(double);
  };
  const Kernel kernels[] = {
      {UnaryOp::exp, libm_exp, two_ulps},
      {UnaryOp::erf, libm_erf, erf_accuracy},
      {UnaryOp::gelu, libm_gelu, gelu_accuracy},
      {UnaryOp::sigmoid, libm_sigmoid, sigmoid_accuracy},
  };
  for (const Kernel& k : kernels) {
    std::vector<float> got = unary(k.op, x).to_vector<float>();
    for (size_t i = 0; i < values.size(); ++i)
      require_agrees(unary_name(k.op), values[i], got[i], k.libm(values[i]), k.accuracy(values[i]));
  }
}
