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
                   [ids, padding_idx, rows, shape = y.shape()](const Tensor& gy, const std::vector<bool>& needs) {
                     std::vector<Tensor> grads(ids.size());
                     for (size_t t = 0; t < ids.size(); ++t) {
                       if (!needs[t]) continue;
                       // A term the batch shares took add's broadcast: its gradient summed over the batch.
                       const Tensor g = ids[t].size(0) == shape[0] ? gy : sum_to(gy, {1, shape[1], shape[2]});
                       grads[t] = embedding_backward(g, ids[t], rows[t], padding_idx[t], take_pending_gradient(t));
                     }
                     return grads;
                   });
}

Var index_select(const Var& x, int axis, const Tensor& idx) {
  Tensor y = index_select(x.value(), axis, idx);
  return record_op("index_select", y, {x}, [axis, idx, xshape = x.shape()](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{index_select_backward(gy, axis, idx, xshape)};
  });
}

Var gather(const Var& x, int axis, const Tensor& idx) {
  Tensor y = gather(x.value(), axis, idx);
  return record_op("gather", y, {x}, [axis, idx, xshape = x.shape()](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{gather_backward(gy, axis, idx, xshape)};
  });
}

}  // namespace ordo
