// Op layer: elementwise unary, binary (NumPy broadcasting) and where.
#include "tensor/ops.h"

namespace ordo {

const char* unary_name(UnaryOp op) {
  switch (op) {
#define ORDO_UNARY_OP(name, Formula, domain) \
  case UnaryOp::name: return #name;
#include "tensor/unary_ops.def"
  }
  return "?";
}

const char* binary_name(BinaryOp op) {
  switch (op) {
#define ORDO_BINARY_OP(name, Formula) \
  case BinaryOp::name: return #name;
#include "tensor/binary_ops.def"
  }
  return "?";
}

bool is_comparison(BinaryOp op) {
  switch (op) {
#define ORDO_BINARY_OP(name, Formula) \
  case BinaryOp::name: return false;
#define ORDO_COMPARISON_OP(name, Formula) \
  case BinaryOp::name: return true;
#include "tensor/binary_ops.def"
  }
  return false;
}

Tensor unary(UnaryOp op, const Tensor& x, UnaryParams params) {
  check_float(x, unary_name(op), "x");
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  ORDO_BACKEND(x.device(), unary)(op, params, out, x);
  return out;
}

Tensor affine_to(const Tensor& x, double scale, double shift, DType dtype) {
  check_dtype(x, DType::i64, "affine_to", "x");
  ORDO_CHECK(dtype == DType::f32 || dtype == DType::f64, "affine_to: the result must be f32 or f64, not ",
             dtype_name(dtype));
  Tensor out = Tensor::empty(x.shape(), dtype, x.device());
  ORDO_BACKEND(x.device(), affine_to)(out, x.contiguous(), UnaryParams{scale, shift});
  return out;
}

Tensor unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& gy,
                      UnaryParams params) {
  const char* name = unary_name(op);
  check_float(x, name, "x");
  check_shape(y, x.shape(), name, "y");
  check_shape(gy, x.shape(), name, "gy");
  check_same_dtype(x, gy, name);
  check_same_device(x, gy, name);
  Tensor gx = Tensor::empty(x.shape(), x.dtype(), x.device());
  ORDO_BACKEND(x.device(), unary_backward)(op, params, gx, x.contiguous(), y.contiguous(), gy.contiguous());
  return gx;
}

namespace {
void check_binary_operands(const Tensor& a, const Tensor& b, const char* name) {
  check_defined(a, name, "a");
  check_defined(b, name, "b");
  check_same_dtype(a, b, name);
  check_same_device(a, b, name);
  ORDO_CHECK(a.dtype() == DType::f32 || a.dtype() == DType::f64 || a.dtype() == DType::i64, name,
             ": dtype ", dtype_name(a.dtype()), " is not supported (f32, f64 or i64)");
  ORDO_CHECK(a.dtype() != DType::f64 || a.device().is_cpu(), name,
             ": f64 is computed on the CPU only, operands are on ", a.device().str());
}
}  // namespace

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  check_binary_operands(a, b, name);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  ORDO_BACKEND(a.device(), binary)(op, out, a.expand(shape), b.expand(shape));
  return out;
}

void binary_(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  check_binary_operands(a, b, name);
  ORDO_CHECK(a.is_contiguous(), name, "_: the in-place operand must be contiguous");
  ORDO_CHECK(broadcast_shapes(a.shape(), b.shape(), name) == a.shape(), name, "_: cannot broadcast ",
             shape_str(b.shape()), " into the in-place operand of shape ", shape_str(a.shape()));
  ORDO_BACKEND(a.device(), binary)(op, a, a, b.expand(a.shape()));
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_binary_operands(a, b, "where");
  check_defined(cond, "where", "cond");
  check_same_dtype(cond, a, "where");
  check_same_device(cond, a, "where");
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  ORDO_BACKEND(a.device(), where)(out, cond.expand(shape), a.expand(shape), b.expand(shape));
  return out;
}

}  // namespace ordo
