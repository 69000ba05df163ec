// Differentiable reductions. Every backward first puts the output gradient
// back into the keepdim shape, then broadcasts it over the reduced axes.
#include "autograd/ops.h"

namespace ordo {

namespace {

// x's shape with the reduced axes set to 1 (all axes when `axes` is empty),
// and the number of elements each output reduces.
Shape keepdim_shape(const Shape& shape, const std::vector<int>& axes, int64_t& count) {
  Shape out = shape;
  count = 1;
  const int n = static_cast<int>(shape.size());
  if (axes.empty()) {
    for (auto& d : out) count *= d, d = 1;
    return out;
  }
  for (int a : axes) {
    int d = normalize_dim(a, n, "reduction");
    count *= shape[d];
    out[d] = 1;
  }
  return out;
}

}  // namespace

// y = sum x;  gx = gy broadcast back
Var sum(const Var& x, const std::vector<int>& axes, bool keepdim) {
  Tensor y = sum(x.value(), axes, keepdim);
  int64_t count = 0;
  Shape kshape = keepdim_shape(x.shape(), axes, count);
  return record_op("sum", y, {x}, [kshape, xshape = x.shape()](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{gy.reshape(kshape).expand(xshape)};
  });
}

// y = sum x / n;  gx = gy / n broadcast back
Var mean(const Var& x, const std::vector<int>& axes, bool keepdim) {
  Tensor y = mean(x.value(), axes, keepdim);
  int64_t count = 0;
  Shape kshape = keepdim_shape(x.shape(), axes, count);
  return record_op("mean", y, {x}, [kshape, count, xshape = x.shape()](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{affine(gy.reshape(kshape), 1.0 / static_cast<double>(count)).expand(xshape)};
  });
}

namespace {
// max/min: the gradient goes to the elements equal to the result, split
// equally among ties (a subgradient; PyTorch's amax does the same).
Var extreme(bool is_max, const Var& x, const std::vector<int>& axes, bool keepdim) {
  Tensor y = is_max ? max(x.value(), axes, keepdim) : min(x.value(), axes, keepdim);
  int64_t count = 0;
  Shape kshape = keepdim_shape(x.shape(), axes, count);
  return record_op(is_max ? "max" : "min", y, {x},
                   [axes, kshape, xv = x.value(), y](const Tensor& gy, const std::vector<bool>&) {
                     Tensor hit = eq(xv, y.reshape(kshape));
                     Tensor ties = sum(hit, axes, true);
                     return std::vector<Tensor>{mul(hit, div(gy.reshape(kshape), ties))};
                   });
}
}  // namespace

Var max(const Var& x, const std::vector<int>& axes, bool keepdim) { return extreme(true, x, axes, keepdim); }
Var min(const Var& x, const std::vector<int>& axes, bool keepdim) { return extreme(false, x, axes, keepdim); }

// y = sum (x - mean)^2 / (n - c);  gx = gy * 2 (x - mean) / (n - c)
// (the mean's own dependence on x cancels: sum (x - mean) = 0)
Var var(const Var& x, const std::vector<int>& axes, bool keepdim, int64_t correction) {
  Tensor y = var(x.value(), axes, keepdim, correction);
  int64_t count = 0;
  Shape kshape = keepdim_shape(x.shape(), axes, count);
  return record_op("var", y, {x},
                   [axes, kshape, count, correction, xv = x.value()](const Tensor& gy, const std::vector<bool>&) {
                     Tensor centred = sub(xv, mean(xv, axes, true));
                     double scale = 2.0 / static_cast<double>(count - correction);
                     return std::vector<Tensor>{mul(affine(centred, scale), gy.reshape(kshape))};
                   });
}

}  // namespace ordo
