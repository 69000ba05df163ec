// Differentiable views and copies: the gradient of a view is the same view
// taken backwards (reshape back, permute by the inverse, pad a slice with
// zeros, sum an expand).
#include "autograd/ops.h"

namespace ordo {

Var reshape(const Var& x, const Shape& shape) {
  return record_op("reshape", x.value().reshape(shape), {x}, [xshape = x.shape()](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{gy.reshape(xshape)};
  });
}

Var permute(const Var& x, const std::vector<int>& order) {
  Tensor y = x.value().permute(order);
  std::vector<int> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[normalize_dim(order[i], x.dim(), "permute")] = static_cast<int>(i);
  return record_op("permute", y, {x}, [inverse](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{gy.permute(inverse)};
  });
}

Var transpose(const Var& x, int a, int b) {
  std::vector<int> order(x.dim());
  for (int i = 0; i < x.dim(); ++i) order[i] = i;
  std::swap(order[normalize_dim(a, x.dim(), "transpose")], order[normalize_dim(b, x.dim(), "transpose")]);
  return permute(x, order);
}

// The gradient is gy in the slice's region, zeros elsewhere. Slices that
// tile their input (Q, K and V of one product) have theirs written into one
// buffer by Var::backward instead, with no zeros and no adds.
Var slice(const Var& x, int axis, int64_t start, int64_t end, int64_t step) {
  Tensor y = x.value().slice(axis, start, end, step);
  const int d = normalize_dim(axis, x.dim(), "slice");
  const int64_t first = start < 0 ? start + x.size(d) : start;
  Var out = record_op("slice", y, {x}, [d, first, step, shape = x.shape()](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{pad_slice(gy, shape, d, first, step)};  // gy there, zeros elsewhere: one pass
  });
  if (Node* node = out.state()->node.get()) {
    node->is_slice = true;
    node->region = {d, first, end < 0 ? end + x.size(d) : end, step};
  }
  return out;
}

Var select(const Var& x, int axis, int64_t index) {
  int d = normalize_dim(axis, x.dim(), "select");
  if (index < 0) index += x.size(d);
  Shape shape = x.shape();
  shape.erase(shape.begin() + d);
  return reshape(slice(x, d, index, index + 1), shape);
}

Var expand(const Var& x, const Shape& shape) {
  return record_op("expand", x.value().expand(shape), {x}, [xshape = x.shape()](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{sum_to(gy, xshape)};
  });
}

Var unsqueeze(const Var& x, int axis) { return reshape(x, x.value().unsqueeze(axis).shape()); }
Var squeeze(const Var& x, int axis) { return reshape(x, x.value().squeeze(axis).shape()); }

Var contiguous(const Var& x) {
  return record_op("contiguous", x.value().contiguous(), {x}, [](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{gy};
  });
}

// Each part's gradient is its slice of the output gradient.
Var concat(const std::vector<Var>& parts, int axis) {
  std::vector<Tensor> values;
  for (const Var& p : parts) values.push_back(p.value());
  // Parts that lie one after another in one storage (parameters laid out by
  // nn::join_parameters, say a per-head table's heads) are joined as a view.
  Tensor y = axis == 0 ? Tensor::joined_rows(values) : Tensor();
  if (!y.defined()) y = concat(values, axis);
  int d = normalize_dim(axis, y.dim(), "concat");
  std::vector<int64_t> sizes;
  for (const Tensor& v : values) sizes.push_back(v.size(d));
  return record_op("concat", y, parts, [d, sizes](const Tensor& gy, const std::vector<bool>& needs) {
    std::vector<Tensor> grads = split(gy, sizes, d);
    for (size_t i = 0; i < grads.size(); ++i)
      if (!needs[i]) grads[i] = Tensor();
    return grads;
  });
}

std::vector<Var> split(const Var& x, const std::vector<int64_t>& sizes, int axis) {
  int d = normalize_dim(axis, x.dim(), "split");
  split(x.value(), sizes, d);  // validates the sizes
  std::vector<Var> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(x, d, at, at + s));
    at += s;
  }
  return out;
}

}  // namespace ordo
