// Op layer of the relative-position kernels (tensor/kernels.inc): shapes,
// dtypes and devices checked here, the kernels get contiguous operands.
//
// The index idx [B, L, J] (i64) holds, for query i and key j of sequence b,
// the row of a distance-indexed table; all H heads share it, so no op here
// needs a per-head index or a [B, H, L, J, D] intermediate.
#include "tensor/ops.h"

namespace ordo {

namespace {

// idx must be i64 [B, L, J] on x's device, matching x's batch and query axes.
void check_index(const Tensor& idx, const Tensor& x, const char* op) {
  check_defined(idx, op, "idx");
  check_dtype(idx, DType::i64, op, "idx");
  check_dim(idx, 3, op, "idx");
  check_same_device(idx, x, op);
  ORDO_CHECK(idx.size(0) == x.size(0) && idx.size(1) == x.size(2), op, ": idx has shape ", shape_str(idx.shape()),
             ", expected [", x.size(0), ", ", x.size(2), ", keys] for an operand of shape ", shape_str(x.shape()));
}

void check_operand(const Tensor& t, int dims, const char* op, const char* arg) {
  check_defined(t, op, arg);
  check_float(t, op, arg);
  check_dim(t, dims, op, arg);
}

}  // namespace

Tensor relative_gather(const Tensor& x, const Tensor& idx) {
  check_operand(x, 4, "relative_gather", "x");
  check_index(idx, x, "relative_gather");
  const Shape out_shape{x.size(0), x.size(1), x.size(2), idx.size(2)};
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  if (out.numel() == 0) return out;
  ORDO_CHECK(x.size(3) > 0, "relative_gather: x has no rows to gather from (shape ", shape_str(x.shape()), ")");
  ORDO_BACKEND(x.device(), relative_gather)(out, x.contiguous(), idx.contiguous());
  return out;
}

Tensor relative_scatter(const Tensor& g, const Tensor& idx, int64_t rows) {
  check_operand(g, 4, "relative_scatter", "g");
  check_index(idx, g, "relative_scatter");
  ORDO_CHECK(idx.size(2) == g.size(3), "relative_scatter: idx has ", idx.size(2), " keys, g has ", g.size(3));
  ORDO_CHECK(rows >= 0, "relative_scatter: rows must be >= 0, got ", rows);
  Tensor out = Tensor::empty({g.size(0), g.size(1), g.size(2), rows}, g.dtype(), g.device());
  if (out.numel() == 0) return out;
  ORDO_BACKEND(g.device(), relative_scatter)(out, g.contiguous(), idx.contiguous());
  return out;
}

namespace {

// q [B,H,L,D], k [B,H,J,D], a [H,R,D], idx [B,L,J].
void check_product(const Tensor& q, const Tensor& k, const Tensor& a, const Tensor& idx, const char* op) {
  check_operand(q, 4, op, "q");
  check_operand(k, 4, op, "k");
  check_operand(a, 3, op, "a");
  check_same_dtype(q, k, op);
  check_same_dtype(q, a, op);
  check_same_device(q, k, op);
  check_same_device(q, a, op);
  check_index(idx, q, op);
  const int64_t B = q.size(0), H = q.size(1), D = q.size(3), J = idx.size(2);
  ORDO_CHECK(k.size(0) == B && k.size(1) == H && k.size(2) == J && k.size(3) == D, op, ": k has shape ",
             shape_str(k.shape()), ", expected [", B, ", ", H, ", ", J, ", ", D, "]");
  ORDO_CHECK(a.size(0) == H && a.size(2) == D, op, ": a has shape ", shape_str(a.shape()), ", expected [", H,
             ", rows, ", D, "]");
}

}  // namespace

Tensor relative_product(const Tensor& q, const Tensor& k, const Tensor& a, const Tensor& idx, double alpha) {
  check_product(q, k, a, idx, "relative_product");
  Tensor s = Tensor::empty({q.size(0), q.size(1), q.size(2), idx.size(2)}, q.dtype(), q.device());
  if (s.numel() == 0) return s;
  ORDO_BACKEND(q.device(), relative_product)(s, q.contiguous(), k.contiguous(), a.contiguous(), idx.contiguous(),
                                             alpha);
  return s;
}

RelativeProductGrads relative_product_backward(const Tensor& gs, const Tensor& q, const Tensor& k, const Tensor& a,
                                               const Tensor& idx, double alpha, bool need_q, bool need_k,
                                               bool need_a) {
  check_product(q, k, a, idx, "relative_product_backward");
  check_shape(gs, {q.size(0), q.size(1), q.size(2), idx.size(2)}, "relative_product_backward", "gs");
  check_same_dtype(gs, q, "relative_product_backward");
  check_same_device(gs, q, "relative_product_backward");
  RelativeProductGrads g;
  if (need_q) g.gq = Tensor::empty(q.shape(), q.dtype(), q.device());
  if (need_k) g.gk = Tensor::empty(k.shape(), k.dtype(), k.device());
  if (need_a) g.ga = Tensor::empty(a.shape(), a.dtype(), a.device());
  if (gs.numel() == 0) {  // nothing flows back: zero gradients
    for (Tensor* t : {&g.gq, &g.gk, &g.ga})
      if (t->defined()) t->fill_(0);
    return g;
  }
  ORDO_BACKEND(q.device(), relative_product_backward)(g.gq, g.gk, g.ga, gs.contiguous(), q.contiguous(),
                                                      k.contiguous(), a.contiguous(), idx.contiguous(), alpha);
  return g;
}

}  // namespace ordo
