// Op layer: reductions over chosen axes, argmax, sum_to.
//
// Kernels reduce the middle axis of an [outer, r, inner] layout. When the
// reduced axes are one consecutive block of a contiguous tensor that layout is
// a free view; otherwise the reduced axes are permuted to the end and copied.
#include <algorithm>

#include "tensor/ops.h"

namespace ordo {

namespace {

const char* reduce_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::mean: return "mean";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
    case ReduceOp::var: return "var";
  }
  return "?";
}

struct Layout {
  Tensor x;  // contiguous, to be read as [outer, r, inner]
  int64_t outer = 1, r = 1, inner = 1;
  Shape kept_shape;     // output shape without keepdim
  Shape keepdim_shape;  // output shape with keepdim
};

Layout reduction_layout(const Tensor& x, std::vector<int> axes, const char* name) {
  const int n = x.dim();
  if (axes.empty())
    for (int d = 0; d < n; ++d) axes.push_back(d);
  std::vector<bool> reduced(n, false);
  for (int& a : axes) {
    a = normalize_dim(a, n, name);
    ORDO_CHECK(!reduced[a], name, ": axis ", a, " is listed twice");
    reduced[a] = true;
  }
  std::sort(axes.begin(), axes.end());

  Layout layout;
  for (int d = 0; d < n; ++d) {
    layout.keepdim_shape.push_back(reduced[d] ? 1 : x.size(d));
    if (!reduced[d]) layout.kept_shape.push_back(x.size(d));
  }
  bool consecutive = axes.empty() || axes.back() - axes.front() + 1 == static_cast<int>(axes.size());
  if (consecutive && x.is_contiguous()) {
    layout.x = x;
    for (int d = 0; d < n; ++d) {
      int64_t s = x.size(d);
      if (!axes.empty() && d < axes.front()) layout.outer *= s;
      else if (!axes.empty() && d > axes.back()) layout.inner *= s;
      else if (reduced[d]) layout.r *= s;
      else layout.outer *= s;
    }
    return layout;
  }
  std::vector<int> order;
  for (int d = 0; d < n; ++d)
    if (!reduced[d]) order.push_back(d);
  for (int d : axes) order.push_back(d);
  layout.x = x.permute(order).contiguous();
  for (int d = 0; d < n; ++d) (reduced[d] ? layout.r : layout.outer) *= x.size(d);
  return layout;
}

Tensor reduce_op(ReduceOp op, const Tensor& x, const std::vector<int>& axes, bool keepdim,
                 int64_t correction) {
  const char* name = reduce_name(op);
  check_float(x, name, "x");
  Layout l = reduction_layout(x, axes, name);
  ORDO_CHECK(l.r > 0 || op == ReduceOp::sum, name, ": cannot reduce over an empty axis (shape ",
             shape_str(x.shape()), ")");
  ORDO_CHECK(op != ReduceOp::var || (correction >= 0 && correction < l.r), name, ": correction ",
             correction, " must be >= 0 and below the reduced count ", l.r);
  Tensor out = Tensor::empty(keepdim ? l.keepdim_shape : l.kept_shape, x.dtype(), x.device());
  ORDO_BACKEND(x.device(), reduce)(op, out, l.x, l.outer, l.r, l.inner, correction);
  return out;
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
  return reduce_op(ReduceOp::sum, x, axes, keepdim, 0);
}
Tensor mean(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
  return reduce_op(ReduceOp::mean, x, axes, keepdim, 0);
}
Tensor max(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
  return reduce_op(ReduceOp::max, x, axes, keepdim, 0);
}
Tensor min(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
  return reduce_op(ReduceOp::min, x, axes, keepdim, 0);
}
Tensor var(const Tensor& x, const std::vector<int>& axes, bool keepdim, int64_t correction) {
  return reduce_op(ReduceOp::var, x, axes, keepdim, correction);
}

Tensor argmax(const Tensor& x, int axis, bool keepdim) {
  check_float(x, "argmax", "x");
  Layout l = reduction_layout(x, {axis}, "argmax");
  ORDO_CHECK(l.r > 0, "argmax: axis ", axis, " is empty (shape ", shape_str(x.shape()), ")");
  Tensor out = Tensor::empty(keepdim ? l.keepdim_shape : l.kept_shape, DType::i64, x.device());
  ORDO_BACKEND(x.device(), argmax)(out, l.x, l.outer, l.r, l.inner);
  return out;
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  check_defined(x, "sum_to", "x");
  if (x.shape() == shape) return x;
  ORDO_CHECK(broadcast_shapes(shape, x.shape(), "sum_to") == x.shape(), "sum_to: shape ", shape_str(shape),
             " does not broadcast to ", shape_str(x.shape()));
  // Leading axes that broadcasting added, and axes where `shape` has size 1.
  const int lead = x.dim() - static_cast<int>(shape.size());
  std::vector<int> axes;
  for (int d = 0; d < x.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && x.size(d) != 1)) axes.push_back(d);
  if (axes.empty()) return x.reshape(shape);
  return sum(x, axes, true).reshape(shape);
}

}  // namespace ordo
