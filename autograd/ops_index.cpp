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
