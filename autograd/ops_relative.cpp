// Differentiable relative-position ops: each forward beside its backward.
//
// relative_gather and relative_scatter are each other's transpose, so each
// one's backward is the other. relative_product's backward is one fused
// kernel call giving the gradients of q, k and the table (tensor/kernels.inc).
// band_scores and band_apply are each other's transpose in their first
// operand, and share the table's gradient kernel.
#include "autograd/ops.h"

namespace ordo {

// y[b,h,i,j] = x[b,h,i,idx[b,i,j]];  gx[b,h,i,r] = sum over j with idx = r of gy[b,h,i,j].
Var relative_gather(const Var& x, const Tensor& idx) {
  Tensor y = relative_gather(x.value(), idx);
  return record_op("relative_gather", y, {x}, [idx, rows = x.size(3)](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{relative_scatter(gy, idx, rows)};
  });
}

// y[b,h,i,r] = sum over j with idx = r of g[b,h,i,j];  gg[b,h,i,j] = gy[b,h,i,idx[b,i,j]].
Var relative_scatter(const Var& g, const Tensor& idx, int64_t rows) {
  Tensor y = relative_scatter(g.value(), idx, rows);
  return record_op("relative_scatter", y, {g}, [idx](const Tensor& gy, const std::vector<bool>&) {
    return std::vector<Tensor>{relative_gather(gy, idx)};
  });
}

// s[b,h,i,j] = alpha sum_d q_id k_jd a_{idx_ij,d} (Huang et al. 2020, Eq. 15).
Var relative_product(const Var& q, const Var& k, const Var& a, const Tensor& idx, double alpha) {
  // Saved contiguous, so the backward does not copy them again.
  Tensor qv = q.value().contiguous(), kv = k.value().contiguous(), av = a.value().contiguous();
  Tensor s = relative_product(qv, kv, av, idx, alpha);
  return record_op("relative_product", s, {q, k, a},
                   [qv, kv, av, idx, alpha](const Tensor& gs, const std::vector<bool>& needs) {
                     RelativeProductGrads g =
                         relative_product_backward(gs, qv, kv, av, idx, alpha, needs[0], needs[1], needs[2]);
                     return std::vector<Tensor>{g.gq, g.gk, g.ga};
                   });
}

// y[b,h,i,j] = sum_d x_id T[j-i+L-1, d];  gx = band_apply(gy, T);  gT[t] = sum over pairs of row t of gy_ij x_i.
Var band_scores(const Var& x, const Var& table, MatmulPrecision precision) {
  Tensor xv = x.value().contiguous(), tv = table.value().contiguous();
  Tensor y = band_scores(xv, tv, precision);
  return record_op("band_scores", y, {x, table},
                   [xv, tv, precision](const Tensor& gy, const std::vector<bool>& needs) {
                     return std::vector<Tensor>{needs[0] ? band_apply(gy, tv, precision) : Tensor(),
                                                needs[1] ? band_table_grad(gy, xv, tv.size(0), precision) : Tensor()};
                   });
}

// y[b,h,i,:] = sum_j p_ij T[j-i+L-1];  gp = band_scores(gy, T);  gT[t] = sum over pairs of row t of p_ij gy_i.
Var band_apply(const Var& p, const Var& table, MatmulPrecision precision) {
  Tensor pv = p.value().contiguous(), tv = table.value().contiguous();
  Tensor y = band_apply(pv, tv, precision);
  return record_op("band_apply", y, {p, table},
                   [pv, tv, precision](const Tensor& gy, const std::vector<bool>& needs) {
                     return std::vector<Tensor>{needs[0] ? band_scores(gy, tv, precision) : Tensor(),
                                                needs[1] ? band_table_grad(pv, gy, tv.size(0), precision) : Tensor()};
                   });
}

}  // namespace ordo
