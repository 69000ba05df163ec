// The scalar formulas of the elementwise ops, written once and compiled for
// both the CPU kernels (tensor/cpu) and the CUDA kernels (tensor/cuda).
//
// Each unary op is a struct with
//   f(x, p)        the value            (p: the op's scalar parameter, e.g. the exponent)
//   df(x, y, p)    d f / d x            (y = f(x) is passed so exp/tanh/sqrt reuse it)
// Each binary op has f(a, b). Kernels are templated on these structs so the
// per-element switch is hoisted out of the loop.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "base/host_device.h"
#include "tensor/vector_math.h"

namespace ordo {

// The ops themselves are listed in tensor/unary_ops.def and tensor/binary_ops.def.
enum class UnaryOp : uint8_t {
#define ORDO_UNARY_OP(name, Formula, domain) name,
#include "tensor/unary_ops.def"
};
enum class BinaryOp : uint8_t {
#define ORDO_BINARY_OP(name, Formula) name,
#include "tensor/binary_ops.def"
};

const char* unary_name(UnaryOp op);
const char* binary_name(BinaryOp op);

struct UnaryParams {
  double p = 0;  // pow: exponent; affine: scale
  double q = 0;  // affine: shift
};

namespace math {

// Unqualified calls below resolve to these overloads for float and double.
using std::cos;
using std::log;
using std::pow;
using std::sin;
using std::sqrt;
using std::tanh;

// 1/sqrt(2), sqrt(2/pi), 1/sqrt(2 pi): the GELU constants.
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// A value of a cast (copy, fill) stored into dtype T, through double as
// both devices cast. Into an integer type: truncated toward zero; NaN gives
// 0 and a value beyond the type's range its minimum or maximum (saturation,
// what CUDA's conversion instructions do), where a plain static_cast would be
// undefined and give x86's 0x80..0 on the CPU. One definition for both
// devices (tensor/kernels.inc, "Edge values").
template <class T>
ORDO_HD T cast_from_double(double v) {
  if constexpr (std::is_integral_v<T>) {
    constexpr T lowest = std::numeric_limits<T>::min(), highest = std::numeric_limits<T>::max();
    if (v != v) return T(0);
    if (v <= static_cast<double>(lowest)) return lowest;
    if (v >= static_cast<double>(highest)) return highest;  // 2^63 for i64: rounded up, so exact
  }
  return static_cast<T>(v);
}

// exp, erf and the normal CDF: f32 on the host goes through the vectorisable
// versions of tensor/vector_math.h (libm's are scalar calls that keep
// GCC from vectorising a kernel's loop); f64 and CUDA device code use the
// C library's.
ORDO_HD float exp(float x) {
#ifdef __CUDA_ARCH__
  return ::expf(x);
#else
  return cpu::vexp(x);
#endif
}
ORDO_HD double exp(double x) { return ::exp(x); }
ORDO_HD float erf(float x) {
#ifdef __CUDA_ARCH__
  return ::erff(x);
#else
  return cpu::verf(x);
#endif
}
ORDO_HD double erf(double x) { return ::erf(x); }
// Phi(x) = erfc(-x / sqrt 2) / 2: accurate on both tails, where 1 + erf(x / sqrt 2)
// would cancel for negative x.
ORDO_HD float normal_cdf(float x) {
#ifdef __CUDA_ARCH__
  return 0.5f * ::erfcf(-0.70710678118654752f * x);
#else
  return cpu::vnormal_cdf(x);
#endif
}
ORDO_HD double normal_cdf(double x) { return 0.5 * ::erfc(-kInvSqrt2 * x); }

struct Neg {
  template <class T> static ORDO_HD T f(T x, UnaryParams) { return -x; }
  template <class T> static ORDO_HD T df(T, T, UnaryParams) { return T(-1); }
};
struct Exp {
  template <class T> static ORDO_HD T f(T x, UnaryParams) { return exp(x); }
  template <class T> static ORDO_HD T df(T, T y, UnaryParams) { return y; }
};
struct Log {
  template <class T> static ORDO_HD T f(T x, UnaryParams) { return log(x); }
  template <class T> static ORDO_HD T df(T x, T, UnaryParams) { return T(1) / x; }
};
struct Sqrt {
  template <class T> static ORDO_HD T f(T x, UnaryParams) { return sqrt(x); }
  template <class T> static ORDO_HD T df(T, T y, UnaryParams) { return T(0.5) / y; }
};
struct Rsqrt {
  template <class T> static ORDO_HD T f(T x, UnaryParams) { return T(1) / sqrt(x); }
  // d/dx x^(-1/2) = -1/2 x^(-3/2) = -1/2 y^3
  template <class T> static ORDO_HD T df(T, T y, UnaryParams) { return T(-0.5) * y * y * y; }
};
struct Tanh {
  template <class T> static ORDO_HD T f(T x, UnaryParams) { return tanh(x); }
  template <class T> static ORDO_HD T df(T, T y, UnaryParams) { return T(1) - y * y; }
};
struct Erf {
  template <class T> static ORDO_HD T f(T x, UnaryParams) { return erf(x); }
  // d/dx erf(x) = 2/sqrt(pi) exp(-x^2)
  template <class T> static ORDO_HD T df(T x, T, UnaryParams) {
    return T(2 * kInvSqrt2Pi * 1.41421356237309504880) * exp(-x * x);
  }
};
struct Relu {
  template <class T> static ORDO_HD T f(T x, UnaryParams) { return x > T(0) ? x : T(0); }
  template <class T> static ORDO_HD T df(T x, T, UnaryParams) { return x > T(0) ? T(1) : T(0); }
};
// GELU, erf form (BERT's "gelu"): x * Phi(x) = x (1 + erf(x / sqrt 2)) / 2,
// Phi the standard normal CDF.
struct Gelu {
  template <class T> static ORDO_HD T f(T x, UnaryParams) { return x * normal_cdf(x); }
  // Phi(x) + x * phi(x), phi the standard normal density.
  template <class T> static ORDO_HD T df(T x, T, UnaryParams) {
    return normal_cdf(x) + x * T(kInvSqrt2Pi) * exp(T(-0.5) * x * x);
  }
};
// GELU, tanh approximation (BERT's "gelu_new"): 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))).
struct GeluTanh {
  template <class T> static ORDO_HD T f(T x, UnaryParams) {
    T inner = T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x);
    return T(0.5) * x * (T(1) + tanh(inner));
  }
  template <class T> static ORDO_HD T df(T x, T, UnaryParams) {
    T inner = T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x);
    T t = tanh(inner);
    T dinner = T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * x * x);
    return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * dinner;
  }
};
struct Sigmoid {
  template <class T> static ORDO_HD T f(T x, UnaryParams) { return T(1) / (T(1) + exp(-x)); }
  template <class T> static ORDO_HD T df(T, T y, UnaryParams) { return y * (T(1) - y); }
};
struct Abs {
  template <class T> static ORDO_HD T f(T x, UnaryParams) { return x < T(0) ? -x : x; }
  // The subgradient 0 at x = 0, as PyTorch.
  template <class T> static ORDO_HD T df(T x, T, UnaryParams) {
    return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
  }
};
struct Sin {
  template <class T> static ORDO_HD T f(T x, UnaryParams) { return sin(x); }
  template <class T> static ORDO_HD T df(T x, T, UnaryParams) { return cos(x); }
};
struct Cos {
  template <class T> static ORDO_HD T f(T x, UnaryParams) { return cos(x); }
  template <class T> static ORDO_HD T df(T x, T, UnaryParams) { return -sin(x); }
};
struct Pow {
  template <class T> static ORDO_HD T f(T x, UnaryParams u) { return pow(x, T(u.p)); }
  template <class T> static ORDO_HD T df(T x, T, UnaryParams u) {
    return u.p == 0 ? T(0) : T(u.p) * pow(x, T(u.p - 1));
  }
};
struct Affine {
  template <class T> static ORDO_HD T f(T x, UnaryParams u) { return T(u.p) * x + T(u.q); }
  template <class T> static ORDO_HD T df(T, T, UnaryParams u) { return T(u.p); }
};

struct Add { template <class T> static ORDO_HD T f(T a, T b) { return a + b; } };
struct Sub { template <class T> static ORDO_HD T f(T a, T b) { return a - b; } };
struct Mul { template <class T> static ORDO_HD T f(T a, T b) { return a * b; } };
struct Div { template <class T> static ORDO_HD T f(T a, T b) { return a / b; } };
// NaN-propagating like PyTorch's maximum/minimum.
struct Maximum {
  template <class T> static ORDO_HD T f(T a, T b) { return (a != a || a > b) ? a : b; }
};
struct Minimum {
  template <class T> static ORDO_HD T f(T a, T b) { return (a != a || a < b) ? a : b; }
};
// Comparisons give 1 or 0 in the operands' dtype (a mask ready to multiply).
struct Eq { template <class T> static ORDO_HD T f(T a, T b) { return a == b ? T(1) : T(0); } };
struct Ne { template <class T> static ORDO_HD T f(T a, T b) { return a != b ? T(1) : T(0); } };
struct Lt { template <class T> static ORDO_HD T f(T a, T b) { return a < b ? T(1) : T(0); } };
struct Le { template <class T> static ORDO_HD T f(T a, T b) { return a <= b ? T(1) : T(0); } };
struct Gt { template <class T> static ORDO_HD T f(T a, T b) { return a > b ? T(1) : T(0); } };
struct Ge { template <class T> static ORDO_HD T f(T a, T b) { return a >= b ? T(1) : T(0); } };

}  // namespace math

// Calls fn.template operator()<OpStruct>() for the struct that implements op.
// Kernels use it to turn the runtime enum into a template argument once per launch.
template <class Fn>
void visit_unary(UnaryOp op, Fn&& fn) {
  switch (op) {
#define ORDO_UNARY_OP(name, Formula, domain) \
  case UnaryOp::name: return fn(math::Formula{});
#include "tensor/unary_ops.def"
  }
}

// The activations of the fused bias_activation kernels (nn::Activation's):
// fn(math::Formula{}) for gelu, gelu_tanh, relu and tanh; nothing for any
// other op (the op layer refuses them first).
template <class Fn>
void visit_activation(UnaryOp op, Fn&& fn) {
  switch (op) {
    case UnaryOp::gelu: return fn(math::Gelu{});
    case UnaryOp::gelu_tanh: return fn(math::GeluTanh{});
    case UnaryOp::relu: return fn(math::Relu{});
    case UnaryOp::tanh: return fn(math::Tanh{});
    default: return;
  }
}
inline bool is_activation(UnaryOp op) {
  return op == UnaryOp::gelu || op == UnaryOp::gelu_tanh || op == UnaryOp::relu || op == UnaryOp::tanh;
}

template <class Fn>
void visit_binary(BinaryOp op, Fn&& fn) {
  switch (op) {
#define ORDO_BINARY_OP(name, Formula) \
  case BinaryOp::name: return fn(math::Formula{});
#include "tensor/binary_ops.def"
  }
}

}  // namespace ordo
