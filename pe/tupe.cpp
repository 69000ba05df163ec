#include "pe/tupe.h"

#include <cmath>
#include <tuple>
#include <vector>

#include "autograd/ops.h"
#include "pe/per_head.h"
#include "pe/scalar_bias.h"

namespace ordo::pe {

namespace {

Tensor i64_scalar(int64_t v, Device device) { return Tensor::scalar(static_cast<double>(v), DType::i64, device); }

// The products' precision of a forward (fp32 without one).
MatmulPrecision products_of(const nn::Context* ctx) { return ctx ? ctx->precision : MatmulPrecision::fp32; }

}  // namespace

Tupe::Tupe(const nn::BertConfig& c, FieldReader& o, Device device)
    : heads_(c.num_attention_heads),
      head_dim_(c.head_dim()),
      num_buckets_(o.integer("num_buckets", 32, 4, 1 << 16)),
      max_distance_(o.integer("max_distance", 128, 1, int64_t{1} << 40)),
      cls_reset_(o.boolean("cls_reset", true)),
      table_(add_parameter("position_embeddings", {c.max_position_embeddings, c.hidden_size},
                           nn::Init::normal(c.initializer_range), true, device)),
      query_(add_parameter("position_query", {c.hidden_size, c.hidden_size}, nn::Init::normal(c.initializer_range), true,
                           device)),
      key_(add_parameter("position_key", {c.hidden_size, c.hidden_size}, nn::Init::normal(c.initializer_range), true,
                         device)),
      // Scalars, not weights to shrink: no weight decay (as biases).
      cls_(add_parameter("cls", {c.num_attention_heads, 2}, nn::Init::zeros(), false, device)) {
  if (o.boolean("relative", true)) {
    ORDO_CHECK(num_buckets_ % 4 == 0, "tupe: num_buckets must be a multiple of 4 (two sides, each half exact), got ",
               num_buckets_);
    ORDO_CHECK(max_distance_ > num_buckets_ / 4, "tupe: max_distance (", max_distance_,
               ") must exceed the exact range (num_buckets / 4 = ", num_buckets_ / 4, ")");
    bias_ = &add_parameter("relative_attention_bias", {num_buckets_, c.num_attention_heads},
                           nn::Init::normal(c.initializer_range), false, device);
    // |r| -> bucket of the lower side (r <= 0); beyond max_distance every
    // distance shares a side's last bucket, so the table stops there.
    std::vector<int64_t> lut(static_cast<size_t>(max_distance_ + 1));
    for (int64_t n = 0; n <= max_distance_; ++n) lut[n] = t5_bucket(-n, num_buckets_, max_distance_);
    lut_ = Tensor::from_vector(lut, {max_distance_ + 1}, device);
  }
}

double Tupe::score_scale(const nn::AttentionState& s) const {
  return 1.0 / std::sqrt(2.0 * static_cast<double>(s.head_dim));
}

Tensor Tupe::buckets(const Tensor& positions) const {
  ORDO_CHECK(relative(), "tupe: buckets() of TUPE-A (relative: false), which has no relative bias");
  Tensor r = relative_distances(positions);  // p_j - p_i
  Tensor zero = i64_scalar(0, r.device());
  Tensor n = minimum(maximum(r, sub(zero, r)), i64_scalar(max_distance_, r.device()));  // min(|r|, max_distance)
  Tensor lower = index_select(lut_, 0, n.flatten()).reshape(r.shape());
  Tensor upper = mul(gt(r, zero), i64_scalar(num_buckets_ / 2, r.device()));  // keys after the query: upper half
  return add(lower, upper);
}

std::pair<Var, Var> Tupe::projections(const Tensor& positions, const nn::Context* ctx) const {
  check_dtype(positions, DType::i64, "tupe", "positions");
  check_dim(positions, 2, "tupe", "positions");
  const int64_t rows = table_.var.size(0);
  const auto [smallest, largest] = position_range(positions, ctx);
  ORDO_CHECK(smallest >= 0 && largest < rows, "tupe: position ", largest >= rows ? largest : smallest,
             " is outside the learned table of ", rows, " positions (0..", rows - 1,
             "); raise max_position_embeddings");
  // The term depends on the positions alone: computed once for a batch of identical rows.
  const Tensor pos = distinct_position_rows(positions, ctx);
  const int64_t batch = pos.size(0), length = pos.size(1);
  auto heads = [&](const Var& t) { return permute(reshape(t, {batch, length, heads_, head_dim_}), {0, 2, 1, 3}); };
  Var p = embedding(table_.var, pos);  // p_i = P[pos_i]      [b, L, D]
  const MatmulPrecision precision = products_of(ctx);
  return {heads(linear(p, query_.var, Var(), false, precision)),  // p_i U^Q, p_j U^K per head
          heads(linear(p, key_.var, Var(), false, precision))};
}

Var Tupe::positional_term(const Tensor& positions, const nn::Context* ctx) const {
  auto [pq, pk] = projections(positions, ctx);
  Tensor pos = pq.size(0) == 1 ? positions.slice(0, 0, 1).contiguous() : positions;
  const int64_t length = pos.size(1);
  Var term = matmul(pq, pk, false, true, 1.0 / std::sqrt(2.0 * static_cast<double>(head_dim_)),
                    products_of(ctx));  // [b, H, L, L]
  if (relative()) {
    // + b_h[bucket(p_j - p_i)]: rows of the [buckets, H] table, heads moved forward.
    Var b = embedding(bias_->var, buckets(pos));        // [b, L, L, H]
    term = add(term, permute(b, {0, 3, 1, 2}));         // [b, H, L, L]
  }
  if (cls_reset_) {
    // Reset_theta: row 0 -> theta_1 (cls -> others), column 0 below it -> theta_2 (others -> cls).
    std::vector<double> keep(static_cast<size_t>(length * length), 1.0), row(keep.size(), 0.0), col(keep.size(), 0.0);
    for (int64_t j = 0; j < length; ++j) keep[j] = 0, row[j] = 1;
    for (int64_t i = 1; i < length; ++i) keep[i * length] = 0, col[i * length] = 1;
    auto mask = [&](const std::vector<double>& m) {
      return Var(constant(m, {1, 1, length, length}, term.dtype(), term.device()));
    };
    Var theta1 = reshape(select(cls_.var, 1, 0), {1, heads_, 1, 1});
    Var theta2 = reshape(select(cls_.var, 1, 1), {1, heads_, 1, 1});
    term = add(mul(term, mask(keep)), add(mul(theta1, mask(row)), mul(theta2, mask(col))));
  }
  return term;
}

void Tupe::fused_terms(const nn::AttentionState& s, const Var&, const Var&, FusedTerms& out) {
  std::tie(out.vars.pos_query, out.vars.pos_key) = projections(*s.positions, s.ctx);
  out.terms.pos_scale = 1.0 / std::sqrt(2.0 * static_cast<double>(head_dim_));
  Var table;
  if (relative()) {  // b_h[bucket(p_j - p_i)]: rows by bucket of the [H, buckets] table
    set_fused_rows(*this, out, s, widest_distance(*s.positions, s.ctx),
                   [&](int64_t r) { return t5_bucket(r, num_buckets_, max_distance_); });
    table = transpose(bias_->var, 0, 1);
  }
  if (cls_reset_) {  // theta_1, theta_2 after the buckets
    out.terms.cls_row = relative() ? num_buckets_ : 0;
    table = relative() ? concat({table, cls_.var}, 1) : cls_.var;
  }
  out.vars.table = table;
}

Var Tupe::score_bias(const nn::AttentionState& s, const Var&, const Var&) {
  // The same for every layer (P, U^Q, U^K, b and theta are shared).
  return positional_term(*s.positions, s.ctx);
}

}  // namespace ordo::pe
