// Op layer: embedding lookup, index_select, gather, concat, split — each
// forward next to the backward that scatters gradients back.
#include "tensor/ops.h"

namespace ordo {

namespace {

// Sizes of x around `axis`: [outer, n, inner].
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit split_at(const Shape& shape, int axis) {
  AxisSplit s;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d < axis) s.outer *= shape[d];
    else if (d == axis) s.n = shape[d];
    else s.inner *= shape[d];
  }
  return s;
}

void check_index_tensor(const Tensor& idx, const Tensor& x, const char* op) {
  check_dtype(idx, DType::i64, op, "index");
  check_same_device(idx, x, op);
}

}  // namespace

Tensor index_select(const Tensor& x, int axis, const Tensor& idx) {
  check_defined(x, "index_select", "x");
  check_index_tensor(idx, x, "index_select");
  check_dim(idx, 1, "index_select", "index");
  axis = normalize_dim(axis, x.dim(), "index_select");
  AxisSplit s = split_at(x.shape(), axis);
  const int64_t k = idx.size(0);
  Tensor out = Tensor::empty({s.outer, k, s.inner}, x.dtype(), x.device());
  ORDO_BACKEND(x.device(), index_select)(out, x.contiguous().reshape({s.outer, s.n, s.inner}), idx.contiguous());
  Shape out_shape = x.shape();
  out_shape[axis] = k;
  return out.reshape(out_shape);
}

Tensor index_select_backward(const Tensor& g, int axis, const Tensor& idx, const Shape& x_shape, int64_t skip_row,
                             const Tensor& onto) {
  check_float(g, "index_select_backward", "g");
  check_index_tensor(idx, g, "index_select_backward");
  axis = normalize_dim(axis, static_cast<int>(x_shape.size()), "index_select_backward");
  AxisSplit s = split_at(x_shape, axis);
  const int64_t k = idx.numel();
  Shape g_shape = x_shape;
  g_shape[axis] = k;
  check_shape(g, g_shape, "index_select_backward", "g");
  if (onto.defined()) {
    check_shape(onto, x_shape, "index_select_backward", "onto");
    check_same_dtype(g, onto, "index_select_backward");
    check_same_device(g, onto, "index_select_backward");
    ORDO_CHECK(onto.is_contiguous(), "index_select_backward: the gradient added onto must be contiguous");
  }
  // index_add writes every element: no zero fill first.
  Tensor gx = onto.defined() ? onto.reshape({s.outer, s.n, s.inner})
                             : Tensor::empty({s.outer, s.n, s.inner}, g.dtype(), g.device());
  ORDO_CHECK(skip_row < s.n, "index_select_backward: row ", skip_row, " to skip is outside an axis of size ", s.n);
  ORDO_BACKEND(g.device(), index_add)(gx, idx.contiguous().reshape({k}), g.contiguous().reshape({s.outer, k, s.inner}),
                                      skip_row, onto.defined());
  return gx.reshape(x_shape);
}

Tensor embedding(const Tensor& table, const Tensor& ids) {
  check_float(table, "embedding", "table");
  check_dim(table, 2, "embedding", "table");
  check_index_tensor(ids, table, "embedding");
  Shape out_shape = ids.shape();
  out_shape.push_back(table.size(1));
  return index_select(table, 0, ids.contiguous().reshape({ids.numel()})).reshape(out_shape);
}

namespace {
// embedding_sum's arguments checked, and its output (empty).
Tensor embedding_sum_output(const std::vector<Tensor>& tables, const std::vector<Tensor>& ids) {
  ORDO_CHECK(!tables.empty() && tables.size() <= static_cast<size_t>(kEmbeddingSumTerms) && ids.size() == tables.size(),
             "embedding_sum: 1 to ", kEmbeddingSumTerms, " tables with ids each, got ", tables.size(), " tables and ",
             ids.size(), " ids");
  int64_t batch = 1;
  for (size_t t = 0; t < tables.size(); ++t) {
    check_float(tables[t], "embedding_sum", "table");
    check_dim(tables[t], 2, "embedding_sum", "table");
    check_same_dtype(tables[t], tables[0], "embedding_sum");
    check_index_tensor(ids[t], tables[t], "embedding_sum");
    check_dim(ids[t], 2, "embedding_sum", "ids");
    ORDO_CHECK(tables[t].size(1) == tables[0].size(1) && ids[t].size(1) == ids[0].size(1), "embedding_sum: table ", t,
               " [", tables[t].size(0), ", ", tables[t].size(1), "] with ids ", shape_str(ids[t].shape()),
               " does not match table 0's width ", tables[0].size(1), " and length ", ids[0].size(1));
    batch = std::max(batch, ids[t].size(0));
  }
  for (size_t t = 0; t < tables.size(); ++t)
    ORDO_CHECK(ids[t].size(0) == batch || ids[t].size(0) == 1, "embedding_sum: ids ", t, " have shape ",
               shape_str(ids[t].shape()), ", expected a batch of ", batch, " or 1");
  return Tensor::empty({batch, ids[0].size(1), tables[0].size(1)}, tables[0].dtype(), tables[0].device());
}

std::vector<Tensor> contiguous_each(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> dense;
  for (const Tensor& t : tensors) dense.push_back(t.contiguous());
  return dense;
}
}  // namespace

Tensor embedding_sum(const std::vector<Tensor>& tables, const std::vector<Tensor>& ids) {
  Tensor out = embedding_sum_output(tables, ids);
  ORDO_BACKEND(out.device(), embedding_sum)(out, contiguous_each(tables), contiguous_each(ids));
  return out;
}

Tensor embedding_backward(const Tensor& gout, const Tensor& ids, int64_t num_rows, int64_t padding_idx,
                          const Tensor& onto) {
  check_defined(gout, "embedding_backward", "gout");
  ORDO_CHECK(gout.dim() == ids.dim() + 1, "embedding_backward: gout has shape ",
             shape_str(gout.shape()), ", expected ids' shape ", shape_str(ids.shape()), " plus one axis");
  const int64_t d = gout.size(-1);
  return index_select_backward(gout.reshape({ids.numel(), d}), 0, ids.reshape({ids.numel()}), {num_rows, d},
                               padding_idx, onto);
}

SelectedRows select_rows(const Tensor& x, const Tensor& rows, bool with_operand) {
  check_dim(x, 2, "select_rows", "x");
  if (!with_operand || x.dtype() != DType::f32) return {index_select(x, 0, rows), Tensor()};
  check_index_tensor(rows, x, "select_rows");
  check_dim(rows, 1, "select_rows", "rows");
  SelectedRows r{Tensor::empty({rows.numel(), x.size(1)}, DType::f32, x.device()),
                 Tensor::empty({rows.numel(), x.size(1)}, DType::bf16, x.device())};
  ORDO_BACKEND(x.device(), select_rows)(r.y, r.y_operand, x.contiguous(), rows.contiguous());
  return r;
}

Tensor select_rows_backward(const Tensor& g, const Tensor& rows, int64_t n) {
  check_float(g, "select_rows_backward", "g");
  check_dim(g, 2, "select_rows_backward", "g");
  check_index_tensor(rows, g, "select_rows_backward");
  check_shape(rows, {g.size(0)}, "select_rows_backward", "rows");
  ORDO_CHECK(g.size(0) <= n, "select_rows_backward: ", g.size(0), " distinct rows cannot come from ", n);
  Tensor gx = Tensor::empty({n, g.size(1)}, g.dtype(), g.device());
  ORDO_BACKEND(g.device(), scatter_rows)(gx, rows.contiguous(), g.contiguous());
  return gx;
}

Tensor pad_slice(const Tensor& g, const Shape& whole, int axis, int64_t start, int64_t step) {
  check_defined(g, "pad_slice", "g");
  ORDO_CHECK(g.dim() == static_cast<int>(whole.size()), "pad_slice: g ", shape_str(g.shape()), " is no slice of ",
             shape_str(whole));
  const int d = normalize_dim(axis, g.dim(), "pad_slice");
  ORDO_CHECK(step >= 1, "pad_slice: step ", step, " (at least 1)");
  const int64_t n = whole[d], count = g.size(d);
  ORDO_CHECK(start >= 0 && (count == 0 || (start < n && start + (count - 1) * step < n)), "pad_slice: ", count,
             " indices from ", start, " by ", step, " do not fit an axis of ", n);
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < g.dim(); ++a) {
    if (a == d) continue;
    ORDO_CHECK(g.size(a) == whole[a], "pad_slice: g ", shape_str(g.shape()), " is no slice of ", shape_str(whole),
               " along axis ", d);
    (a < d ? outer : inner) *= whole[a];
  }
  Tensor out = Tensor::empty(whole, g.dtype(), g.device());
  if (out.numel() > 0)  // an empty g is read nowhere: not made contiguous either
    ORDO_BACKEND(g.device(), pad_slice)(out, g.numel() > 0 ? g.contiguous() : g, outer, n, inner, start, step);
  return out;
}

namespace {

// The tables of an embedding sum's backward that want a gradient: each one's
// buffer (onto[t], or a new one), ids, padding row and onto flag as the
// backend takes them, checked against the gradient's [B, L, d] and dtype.
struct TableGrads {
  std::vector<Tensor> grads;  // every table's, undefined where not wanted
  std::vector<Tensor> wanted_grads, wanted_ids;
  std::vector<int64_t> skip_rows;
  std::vector<bool> onto_flags;
};
TableGrads table_grads(const char* op, const Tensor& gout, const std::vector<Tensor>& ids,
                       const std::vector<int64_t>& rows, const std::vector<int64_t>& padding_idx,
                       const std::vector<Tensor>& onto, const std::vector<bool>& wanted) {
  const size_t count = ids.size();
  ORDO_CHECK(rows.size() == count && padding_idx.size() == count && onto.size() == count && wanted.size() == count,
             op, ": ", count, " ids with ", rows.size(), " row counts, ", padding_idx.size(), " padding rows, ",
             onto.size(), " onto and ", wanted.size(), " wanted flags");
  const int64_t B = gout.size(0), L = gout.size(1), d = gout.size(2);
  TableGrads g;
  g.grads.resize(count);
  for (size_t t = 0; t < count; ++t) {
    if (!wanted[t]) continue;
    check_dim(ids[t], 2, op, "ids");
    ORDO_CHECK(ids[t].dtype() == DType::i64 && ids[t].device() == gout.device(), op, ": ids ", t,
               " must be i64 on gout's device");
    ORDO_CHECK((ids[t].size(0) == B || ids[t].size(0) == 1) && ids[t].size(1) == L, op, ": ids ", t, " have shape ",
               shape_str(ids[t].shape()), ", expected [", B, " or 1, ", L, "] as gout ", shape_str(gout.shape()));
    ORDO_CHECK(padding_idx[t] < rows[t], op, ": padding row ", padding_idx[t], " of table ", t, " is outside its ",
               rows[t], " rows");
    if (onto[t].defined()) {
      check_shape(onto[t], {rows[t], d}, op, "onto");
      ORDO_CHECK(onto[t].is_contiguous() && onto[t].dtype() == gout.dtype(), op,
                 ": onto must be contiguous and of gout's dtype");
    }
    g.grads[t] = onto[t].defined() ? onto[t] : Tensor::empty({rows[t], d}, gout.dtype(), gout.device());
    g.wanted_grads.push_back(g.grads[t]);
    g.wanted_ids.push_back(ids[t].contiguous());
    g.skip_rows.push_back(padding_idx[t]);
    g.onto_flags.push_back(onto[t].defined());
  }
  return g;
}

}  // namespace

std::vector<Tensor> embedding_sum_backward(const Tensor& gout, const std::vector<Tensor>& ids,
                                           const std::vector<int64_t>& rows, const std::vector<int64_t>& padding_idx,
                                           const std::vector<Tensor>& onto, const std::vector<bool>& wanted) {
  check_float(gout, "embedding_sum_backward", "gout");
  check_dim(gout, 3, "embedding_sum_backward", "gout");
  TableGrads g = table_grads("embedding_sum_backward", gout, ids, rows, padding_idx, onto, wanted);
  ORDO_BACKEND(gout.device(), embedding_sum_backward)(g.wanted_grads, gout.contiguous(), g.wanted_ids, g.skip_rows,
                                                      g.onto_flags);
  return g.grads;
}

EmbeddingLayerNormResult embedding_layernorm(const std::vector<Tensor>& tables, const std::vector<Tensor>& ids,
                                             const Tensor& gamma, const Tensor& beta, double eps, double p,
                                             const PhiloxStream& stream, bool with_operand) {
  const char* op = "embedding_layernorm";
  const Tensor sum = embedding_sum_output(tables, ids);  // the LayerNorm's input, s
  const int64_t d = sum.size(2);
  check_shape(gamma, {d}, op, "gamma");
  check_shape(beta, {d}, op, "beta");
  check_same_dtype(tables[0], gamma, op);
  check_same_dtype(tables[0], beta, op);
  check_same_device(tables[0], gamma, op);
  check_same_device(tables[0], beta, op);
  ORDO_CHECK(eps > 0, op, ": eps must be positive, got ", eps);
  ORDO_CHECK(p >= 0 && p < 1, op, ": p must be in [0, 1), got ", p);
  check_philox_stream(stream, tables[0].device(), op);
  const Shape shape = sum.shape();
  const DType dtype = tables[0].dtype();
  const Device device = tables[0].device();
  EmbeddingLayerNormResult r{Tensor::empty(shape, dtype, device), sum,
                             Tensor::empty({shape[0], shape[1]}, dtype, device),
                             Tensor::empty({shape[0], shape[1]}, dtype, device),
                             with_operand && dtype == DType::f32 ? Tensor::empty(shape, DType::bf16, device) : Tensor()};
  ORDO_BACKEND(device, embedding_layernorm)(r.y, r.s, r.mean, r.rstd, contiguous_each(tables), contiguous_each(ids),
                                            gamma.contiguous(), beta.contiguous(), eps, p, stream, r.y_operand);
  return r;
}

EmbeddingLayerNormGrads embedding_layernorm_backward(const Tensor& gy, const EmbeddingLayerNormResult& saved,
                                                     const Tensor& gamma, double p, const PhiloxStream& stream,
                                                     const std::vector<Tensor>& ids, const std::vector<int64_t>& rows,
                                                     const std::vector<int64_t>& padding_idx,
                                                     const std::vector<Tensor>& onto, const std::vector<bool>& wanted) {
  const char* op = "embedding_layernorm_backward";
  const Tensor& s = saved.s;
  check_shape(gy, s.shape(), op, "gy");
  check_same_dtype(gy, s, op);
  check_shape(gamma, {s.size(2)}, op, "gamma");
  TableGrads g = table_grads(op, s, ids, rows, padding_idx, onto, wanted);
  EmbeddingLayerNormGrads out{g.grads, Tensor::empty(gamma.shape(), s.dtype(), s.device()),
                              Tensor::empty(gamma.shape(), s.dtype(), s.device())};
  const Tensor gs = Tensor::empty(s.shape(), s.dtype(), s.device());  // LayerNorm's gx: scratch
  ORDO_BACKEND(s.device(), embedding_layernorm_backward)(g.wanted_grads, out.ggamma, out.gbeta, gs, gy.contiguous(), s,
                                                         saved.mean, saved.rstd, gamma.contiguous(), p, stream,
                                                         g.wanted_ids, g.skip_rows, g.onto_flags);
  return out;
}

Tensor gather(const Tensor& x, int axis, const Tensor& idx) {
  check_defined(x, "gather", "x");
  check_index_tensor(idx, x, "gather");
  ORDO_CHECK(idx.dim() == x.dim(), "gather: index has ", idx.dim(), " dims, x has ", x.dim());
  axis = normalize_dim(axis, x.dim(), "gather");
  for (int d = 0; d < x.dim(); ++d) {
    ORDO_CHECK(d == axis || idx.size(d) == x.size(d), "gather: index shape ", shape_str(idx.shape()),
               " must match x's shape ", shape_str(x.shape()), " except on axis ", axis);
  }
  AxisSplit s = split_at(x.shape(), axis);
  const int64_t k = idx.size(axis);
  Tensor out = Tensor::empty({s.outer, k, s.inner}, x.dtype(), x.device());
  ORDO_BACKEND(x.device(), gather)(out, x.contiguous().reshape({s.outer, s.n, s.inner}),
                                   idx.contiguous().reshape({s.outer, k, s.inner}));
  return out.reshape(idx.shape());
}

Tensor gather_backward(const Tensor& g, int axis, const Tensor& idx, const Shape& x_shape) {
  check_float(g, "gather_backward", "g");
  check_index_tensor(idx, g, "gather_backward");
  check_shape(g, idx.shape(), "gather_backward", "g");
  axis = normalize_dim(axis, static_cast<int>(x_shape.size()), "gather_backward");
  AxisSplit s = split_at(x_shape, axis);
  const int64_t k = idx.size(axis);
  Tensor gx = Tensor::zeros({s.outer, s.n, s.inner}, g.dtype(), g.device());
  ORDO_BACKEND(g.device(), scatter_add)(gx, idx.contiguous().reshape({s.outer, k, s.inner}),
                                        g.contiguous().reshape({s.outer, k, s.inner}));
  return gx.reshape(x_shape);
}

Tensor concat(const std::vector<Tensor>& parts, int axis) {
  ORDO_CHECK(!parts.empty(), "concat: no tensors given");
  const Tensor& first = parts[0];
  check_defined(first, "concat", "parts[0]");
  axis = normalize_dim(axis, first.dim(), "concat");
  Shape shape = first.shape();
  shape[axis] = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& p = parts[i];
    check_defined(p, "concat", "part");
    check_same_dtype(first, p, "concat");
    check_same_device(first, p, "concat");
    ORDO_CHECK(p.dim() == first.dim(), "concat: part ", i, " has ", p.dim(), " dims, part 0 has ", first.dim());
    for (int d = 0; d < first.dim(); ++d) {
      ORDO_CHECK(d == axis || p.size(d) == first.size(d), "concat: part ", i, " has shape ",
                 shape_str(p.shape()), ", incompatible with part 0's ", shape_str(first.shape()),
                 " outside axis ", axis);
    }
    shape[axis] += p.size(axis);
  }
  Tensor out = Tensor::empty(shape, first.dtype(), first.device());
  int64_t at = 0;
  for (const Tensor& p : parts) {
    out.slice(axis, at, at + p.size(axis)).copy_from(p);
    at += p.size(axis);
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int axis) {
  check_defined(x, "split", "x");
  axis = normalize_dim(axis, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    ORDO_CHECK(s >= 0, "split: negative size ", s);
    total += s;
  }
  ORDO_CHECK(total == x.size(axis), "split: sizes add up to ", total, " but axis ", axis,
             " has size ", x.size(axis));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(x.slice(axis, at, at + s));
    at += s;
  }
  return out;
}

}  // namespace ordo
