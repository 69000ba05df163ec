// Op layer of the relative-position kernels (tensor/kernels.inc): shapes,
// dtypes and devices checked here, the kernels get contiguous operands.
//
// The index idx [B, L, J] (i64) holds, for query i and key j of sequence b,
// the row of a distance-indexed table; all H heads share it, so no op here
// needs a per-head index or a [B, H, L, J, D] intermediate.
#include <algorithm>

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

// ---- banded terms ----------------------------------------------------------------------

namespace {

// x [B, H, L, X] and table [Ht, 2L - 1, D] with Ht 1 or H, same dtype and device.
void check_band(const Tensor& x, const Tensor& table, const char* op, const char* arg) {
  check_operand(x, 4, op, arg);
  check_operand(table, 3, op, "table");
  check_same_dtype(x, table, op);
  check_same_device(x, table, op);
  const int64_t H = x.size(1), L = x.size(2);
  ORDO_CHECK((table.size(0) == 1 || table.size(0) == H) && table.size(1) == std::max<int64_t>(2 * L - 1, 0), op,
             ": table has shape ", shape_str(table.shape()), ", expected [1 or ", H, ", ", 2 * L - 1,
             ", width] for ", arg, " of shape ", shape_str(x.shape()));
}

// A band op's operand as its products take it: under bf16 products an f32
// one rounded to bf16 and widened back (exact), so that the FP32 banded
// kernels sum the same exact products as bf16 products would.
Tensor band_operand(const Tensor& t, MatmulPrecision precision) {
  if (precision != MatmulPrecision::bf16 || t.dtype() != DType::f32) return t.contiguous();
  return t.to(DType::bf16).to(DType::f32);
}

}  // namespace

Tensor band_scores(const Tensor& x, const Tensor& table, MatmulPrecision precision) {
  check_band(x, table, "band_scores", "x");
  ORDO_CHECK(table.size(2) == x.size(3), "band_scores: table width ", table.size(2), " differs from x's ", x.size(3));
  Tensor out = Tensor::empty({x.size(0), x.size(1), x.size(2), x.size(2)}, x.dtype(), x.device());
  if (out.numel() == 0) return out;
  ORDO_BACKEND(x.device(), band_scores)(out, band_operand(x, precision), band_operand(table, precision));
  return out;
}

Tensor band_apply(const Tensor& p, const Tensor& table, MatmulPrecision precision) {
  check_band(p, table, "band_apply", "p");
  ORDO_CHECK(p.size(3) == p.size(2), "band_apply: p must be square in its last two axes, got ", shape_str(p.shape()));
  Tensor out = Tensor::empty({p.size(0), p.size(1), p.size(2), table.size(2)}, p.dtype(), p.device());
  if (out.numel() == 0) return out;
  ORDO_BACKEND(p.device(), band_apply)(out, band_operand(p, precision), band_operand(table, precision));
  return out;
}

Tensor band_table_grad(const Tensor& g, const Tensor& y, int64_t table_heads, MatmulPrecision precision) {
  check_operand(g, 4, "band_table_grad", "g");
  check_operand(y, 4, "band_table_grad", "y");
  check_same_dtype(g, y, "band_table_grad");
  check_same_device(g, y, "band_table_grad");
  const int64_t B = g.size(0), H = g.size(1), L = g.size(2);
  ORDO_CHECK(g.size(3) == L && y.size(0) == B && y.size(1) == H && y.size(2) == L, "band_table_grad: g has shape ",
             shape_str(g.shape()), " and y ", shape_str(y.shape()), ", expected [B, H, L, L] and [B, H, L, width]");
  ORDO_CHECK(table_heads == 1 || table_heads == H, "band_table_grad: table_heads must be 1 or ", H, ", got ",
             table_heads);
  Tensor out = Tensor::empty({table_heads, std::max<int64_t>(2 * L - 1, 0), y.size(3)}, g.dtype(), g.device());
  if (out.numel() == 0) return out;
  ORDO_BACKEND(g.device(), band_table_grad)(out, band_operand(g, precision), band_operand(y, precision));
  return out;
}

}  // namespace ordo
