// Differentiable elementwise ops, each forward beside its backward.
#include "autograd/ops.h"

namespace ordo {

// y = f(x);  gx = gy * f'(x)   (the derivative formulas: tensor/elementwise_math.h)
Var unary(UnaryOp op, const Var& x, UnaryParams params) {
  Tensor y = unary(op, x.value(), params);
  return record_op(unary_name(op), y, {x},
                   [op, params, xv = x.value(), y](const Tensor& gy, const std::vector<bool>&) {
                     return std::vector<Tensor>{unary_backward(op, xv, y, gy, params)};
                   });
}

// Each operand's gradient is summed over the axes broadcasting stretched it on.
Var binary(BinaryOp op, const Var& a, const Var& b) {
  const char* name = binary_name(op);
  ORDO_CHECK(!is_comparison(op), name, " is a comparison and has no gradient; apply it to the values");
  check_float(a.value(), name, "a");
  Tensor av = a.value(), bv = b.value();
  Tensor out = binary(op, av, bv);
  return record_op(name, out, {a, b}, [op, av, bv, out](const Tensor& gy, const std::vector<bool>& needs) {
    Tensor ga, gb;
    switch (op) {
      case BinaryOp::add:  // d(a+b) = da + db
        ga = gy, gb = gy;
        break;
      case BinaryOp::sub:  // d(a-b) = da - db
        ga = gy;
        if (needs[1]) gb = neg(gy);
        break;
      case BinaryOp::mul:  // d(ab) = b da + a db
        if (needs[0]) ga = mul(gy, bv);
        if (needs[1]) gb = mul(gy, av);
        break;
      case BinaryOp::div:  // d(a/b) = da / b - (a/b) db / b
        if (needs[0]) ga = div(gy, bv);
        if (needs[1]) gb = neg(div(mul(gy, out), bv));
        break;
      case BinaryOp::maximum:
      case BinaryOp::minimum: {  // the gradient follows the operand that was picked (a at ties)
        Tensor picked_a = op == BinaryOp::maximum ? ge(av, bv) : le(av, bv);
        if (needs[0]) ga = mul(gy, picked_a);
        if (needs[1]) gb = mul(gy, affine(picked_a, -1, 1));
        break;
      }
      default:
        break;
    }
    return std::vector<Tensor>{needs[0] ? sum_to(ga, av.shape()) : Tensor(),
                               needs[1] ? sum_to(gb, bv.shape()) : Tensor()};
  });
}

// y = cond ? a : b;  ga = cond ? gy : 0,  gb = cond ? 0 : gy
Var where(const Tensor& cond, const Var& a, const Var& b) {
  Tensor av = a.value(), bv = b.value();
  Tensor out = where(cond, av, bv);
  return record_op("where", out, {a, b}, [cond, av, bv](const Tensor& gy, const std::vector<bool>& needs) {
    Tensor zero = Tensor::scalar(0.0, gy.dtype(), gy.device());
    return std::vector<Tensor>{needs[0] ? sum_to(where(cond, gy, zero), av.shape()) : Tensor(),
                               needs[1] ? sum_to(where(cond, zero, gy), bv.shape()) : Tensor()};
  });
}

}  // namespace ordo
