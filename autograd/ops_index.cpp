// Differentiable lookups: the gradient of picking rows is scattering the
// output gradient back to where the rows came from (repeats accumulate).
#include "autograd/ops.h"
#include "autograd/pending_gradient.h"

namespace ordo {

// The table's gradient is added onto what it has gathered when handed over
// (take_pending_gradient): tied word embeddings, whose decoder term arrives
// first, take no separate add over the whole table.
Var embedding(const Var& table, const Tensor& ids, int64_t padding_idx) {
  Tensor y = embedding(table.value(), ids);
  return record_op("embedding", y, {table},
                   [ids, padding_idx, rows = table.size(0)](const Tensor& gy, const std::vector<bool>&) {
                     const Tensor onto = take_pending_gradient(0);
                     return std::vector<Tensor>{embedding_backward(gy, ids, rows, padding_idx, onto)};
                   });
}

Var embedding_sum(const std::vector<Var>& tables, const std::vector<Tensor>& ids,
                  const std::vector<int64_t>& padding_idx) {
  ORDO_CHECK(padding_idx.size() == tables.size(), "embedding_sum: ", padding_idx.size(), " padding rows for ",
             tables.size(), " tables");
  std::vector<Tensor> values;
  for (const Var& t : tables) values.push_back(t.value());
  Tensor y = embedding_sum(values, ids);
  std::vector<int64_t> rows;
  for (const Var& t : tables) rows.push_back(t.size(0));
  return record_op("embedding_sum", y, tables,
                   [ids, padding_idx, rows](const Tensor& gy, const std::vector<bool>& needs) {
                     std::vector<Tensor> onto(ids.size());
                     for (size_t t = 0; t < ids.size(); ++t)
                       if (needs[t]) onto[t] = take_pending_gradient(t);
                     return embedding_sum_backward(gy, ids, rows, padding_idx, onto, needs);
                   });
}

// y = dropout(LayerNorm(s)), s the lookups' sum: gs = LayerNorm's gx of
// dropout's backward of gy, each table's gradient the lookups' of gs.
Var embedding_layernorm(const std::vector<Var>& tables, const std::vector<Tensor>& ids,
                        const std::vector<int64_t>& padding_idx, const Var& gamma, const Var& beta, double eps,
                        double p, const PhiloxStream& stream) {
  ORDO_CHECK(padding_idx.size() == tables.size(), "embedding_layernorm: ", padding_idx.size(), " padding rows for ",
             tables.size(), " tables");
  std::vector<Tensor> values;
  std::vector<int64_t> rows;
  for (const Var& t : tables) {
    values.push_back(t.value());
    rows.push_back(t.size(0));
  }
  EmbeddingLayerNormResult r = embedding_layernorm(values, ids, gamma.value(), beta.value(), eps, p, stream,
                                                   OperandRoundingScope::collecting());
  OperandRoundingScope::add_rounding(r.y, r.y_operand);
  r.y_operand = Tensor();
  const Tensor y = r.y;
  r.y = Tensor();  // the backward needs s, mean and rstd only
  std::vector<Var> inputs = tables;
  inputs.push_back(gamma);
  inputs.push_back(beta);
  return record_op("embedding_layernorm", y, inputs,
                   [r, ids, padding_idx, rows, gv = gamma.value(), p, stream](const Tensor& gy,
                                                                              const std::vector<bool>& needs) {
                     const size_t n = ids.size();
                     std::vector<Tensor> onto(n);
                     for (size_t t = 0; t < n; ++t)
                       if (needs[t]) onto[t] = take_pending_gradient(t);
                     const std::vector<bool> wanted(needs.begin(), needs.begin() + static_cast<long>(n));
                     EmbeddingLayerNormGrads g =
                         embedding_layernorm_backward(gy, r, gv, p, stream, ids, rows, padding_idx, onto, wanted);
                     std::vector<Tensor> grads = g.tables;
                     grads.push_back(g.ggamma);
                     grads.push_back(g.gbeta);
                     return grads;
                   });
}

Var index_select(const Var& x, int axis, const Tensor& idx) {
  Tensor y = index_select(x.value(), axis, idx);
  return record_op("index_select", y, {x}, [axis, idx, xshape = x.shape()](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{index_select_backward(gy, axis, idx, xshape)};
  });
}

Var select_rows(const Var& x, const Tensor& rows) {
  ORDO_CHECK(x.dim() == 2, "select_rows: x has shape ", shape_str(x.shape()), ", expected [n, d]");
  // Under a forward's OperandRoundingScope the rows' bf16 rounding is written
  // beside them for the product that takes them (the MLM transform's).
  const SelectedRows r = select_rows(x.value(), rows, OperandRoundingScope::collecting());
  OperandRoundingScope::add_rounding(r.y, r.y_operand);
  return record_op("select_rows", r.y, {x}, [rows, n = x.size(0)](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{select_rows_backward(gy, rows, n)};
  });
}

Var gather(const Var& x, int axis, const Tensor& idx) {
  Tensor y = gather(x.value(), axis, idx);
  return record_op("gather", y, {x}, [axis, idx, xshape = x.shape()](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{gather_backward(gy, axis, idx, xshape)};
  });
}

}  // namespace ordo
