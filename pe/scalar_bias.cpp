#include "pe/scalar_bias.h"

#include <cmath>
#include <vector>

#include "autograd/ops.h"
#include "pe/per_head.h"

namespace ordo::pe {

namespace {

Tensor i64_scalar(int64_t v, Device device) { return Tensor::scalar(static_cast<double>(v), DType::i64, device); }

// |r| on i64 (the float-only unary abs does not take integers).
Tensor abs_i64(const Tensor& r) { return maximum(r, sub(i64_scalar(0, r.device()), r)); }

}  // namespace

// ---- t5_bias -------------------------------------------------------------------------------

int64_t t5_bucket(int64_t r, int64_t num_buckets, int64_t max_distance) {
  const int64_t half = num_buckets / 2, exact = half / 2;
  const int64_t side = r > 0 ? half : 0;  // keys after the query: the upper half
  const int64_t n = r < 0 ? -r : r;
  if (n < exact) return side + n;
  // T5 truncates the logarithmic position towards zero. At n = exact *
  // (max_distance / exact)^(k / (half - exact)) the exact value is the
  // integer k, which T5's f32 arithmetic also reaches (16, 32, 64 for the
  // defaults); the 1e-9 keeps f64 rounding from landing just below it.
  double large = std::log(static_cast<double>(n) / static_cast<double>(exact)) /
                 std::log(static_cast<double>(max_distance) / static_cast<double>(exact)) *
                 static_cast<double>(half - exact);
  int64_t bucket = exact + static_cast<int64_t>(std::floor(large + 1e-9));
  return side + std::min(bucket, half - 1);
}

T5Bias::T5Bias(const nn::BertConfig& c, FieldReader& o, Device device)
    : num_buckets_(o.integer("num_buckets", 32, 4, 1 << 16)),
      max_distance_(o.integer("max_distance", 128, 1, int64_t{1} << 40)),
      share_(read_share(o, Share::layers, "t5_bias")),
      tables_(*this, share_, c.num_hidden_layers, c.num_attention_heads, {num_buckets_},
              nn::Init::normal(c.initializer_range), device,
              table_names(share_, c.num_attention_heads, "relative_attention_bias")) {
  ORDO_CHECK(num_buckets_ % 4 == 0, "t5_bias: num_buckets must be a multiple of 4 (two sides, each half exact), got ",
             num_buckets_);
  ORDO_CHECK(max_distance_ > num_buckets_ / 4, "t5_bias: max_distance (", max_distance_,
             ") must exceed the exact range (num_buckets / 4 = ", num_buckets_ / 4, ")");
  // Distances at or beyond max_distance all fall in a side's last bucket, so
  // the table of |r| -> bucket stops there.
  std::vector<int64_t> lut(static_cast<size_t>(max_distance_ + 1));
  for (int64_t n = 0; n <= max_distance_; ++n) lut[n] = t5_bucket(-n, num_buckets_, max_distance_);
  lut_ = Tensor::from_vector(lut, {max_distance_ + 1}, device);
}

Tensor T5Bias::buckets(const Tensor& positions) const {
  Tensor r = relative_distances(positions);
  Tensor n = minimum(abs_i64(r), i64_scalar(max_distance_, r.device()));
  Tensor lower = index_select(lut_, 0, n.flatten()).reshape(r.shape());
  Tensor upper = mul(gt(r, i64_scalar(0, r.device())), i64_scalar(num_buckets_ / 2, r.device()));
  return add(lower, upper);
}

Var T5Bias::score_bias(const nn::AttentionState& s, const Var&, const Var&) {
  // R_h[bucket(p_j - p_i)], not divided by sqrt(d_h); once for a batch of identical rows.
  return per_head_lookup(tables_.for_layer(s.layer, s.ctx), buckets(distinct_position_rows(*s.positions, s.ctx)));
}

void T5Bias::fused_terms(const nn::AttentionState& s, const Var&, const Var&, FusedTerms& out) {
  set_fused_rows(*this, out, s, widest_distance(*s.positions, s.ctx),
                 [&](int64_t r) { return t5_bucket(r, num_buckets_, max_distance_); });
  out.vars.table = tables_.for_layer(s.layer, s.ctx);  // [heads, buckets]
}

// ---- rel_scalar ----------------------------------------------------------------------------

RelativeScalar::RelativeScalar(const nn::BertConfig& c, FieldReader& o, Device device)
    : max_distance_(o.integer("max_distance", std::max<int64_t>(1, c.max_position_embeddings - 1), 1, int64_t{1} << 24)),
      share_(read_share(o, Share::none, "rel_scalar")),
      tables_(*this, share_, c.num_hidden_layers, c.num_attention_heads, {2 * max_distance_ + 1},
              nn::Init::normal(c.initializer_range), device, table_names(share_, c.num_attention_heads, "relative_scalar")) {}

namespace {

// rel_scalar's rule: no clipping, so a distance beyond the table is an error naming the option.
int64_t checked_widest(const nn::AttentionState& s, int64_t max_distance) {
  int64_t widest = widest_distance(*s.positions, s.ctx);
  ORDO_CHECK(widest <= max_distance, "rel_scalar: a relative distance of ", widest, " is outside its table (-",
             max_distance, " .. ", max_distance, "); raise the option max_distance (no clipping: Chen et al.'s Eq. 8)");
  return widest;
}

}  // namespace

Var RelativeScalar::score_bias(const nn::AttentionState& s, const Var&, const Var&) {
  // R_h[p_j - p_i]: row r + max_distance.
  checked_widest(s, max_distance_);
  Tensor r = relative_distances(distinct_position_rows(*s.positions, s.ctx));  // once for identical rows
  Tensor rows = add(r, Tensor::scalar(static_cast<double>(max_distance_), DType::i64, r.device()));
  return per_head_lookup(tables_.for_layer(s.layer, s.ctx), rows);
}

void RelativeScalar::fused_terms(const nn::AttentionState& s, const Var&, const Var&, FusedTerms& out) {
  set_fused_rows(*this, out, s, checked_widest(s, max_distance_), [&](int64_t r) { return r + max_distance_; });
  out.vars.table = tables_.for_layer(s.layer, s.ctx);  // [heads, 2 max_distance + 1]
}

// ---- abs_scalar ----------------------------------------------------------------------------

AbsoluteScalar::AbsoluteScalar(const nn::BertConfig& c, FieldReader& o, Device device)
    : rows_(o.integer("max_position", c.max_position_embeddings, 1, int64_t{1} << 24)),
      rank_(o.integer("rank", c.head_dim(), 1, int64_t{1} << 16)),
      share_(read_share(o, Share::none, "abs_scalar")),
      tables_(*this, share_, c.num_hidden_layers, c.num_attention_heads, {rows_, rank_},
              nn::Init::normal(c.initializer_range), device, table_names(share_, c.num_attention_heads, "position_scalar")) {}

Var AbsoluteScalar::rows_at(const nn::AttentionState& s) const {
  const Tensor positions = distinct_position_rows(*s.positions, s.ctx);  // once for identical rows
  const int64_t batch = positions.size(0), length = positions.size(1);
  auto [smallest, largest] = position_range(*s.positions, s.ctx);
  ORDO_CHECK(smallest >= 0 && largest < rows_, "abs_scalar: position ", largest >= rows_ ? largest : smallest,
             " is outside its table of ", rows_, " positions (0..", rows_ - 1,
             "); raise the option max_position (default max_position_embeddings) or use a relative variant");
  // Rows p_i of every head's P_h: [heads, B*L, rank] -> [B, heads, L, rank].
  Var p = index_select(tables_.for_layer(s.layer, s.ctx), 1, positions.flatten());
  return permute(reshape(p, {s.heads, batch, length, rank_}), {1, 0, 2, 3});
}

Var AbsoluteScalar::score_bias(const nn::AttentionState& s, const Var&, const Var&) {
  Var p = rows_at(s);
  return matmul(p, p, false, true, 1.0, s.ctx->precision);  // (P_h P_h^T)_{p_i p_j}
}

std::string AbsoluteScalar::fused_support() const {
  if (rank_ > kFusedAttentionMaxWidth)
    return "abs_scalar of rank " + std::to_string(rank_) + " (the fused kernels take E, F up to " +
           std::to_string(kFusedAttentionMaxWidth) + " wide)";
  return "";
}

void AbsoluteScalar::fused_terms(const nn::AttentionState& s, const Var&, const Var&, FusedTerms& out) {
  Var p = rows_at(s);
  out.vars.pos_query = out.vars.pos_key = p;
  out.terms.pos_scale = 1.0;
}

// ---- alibi ---------------------------------------------------------------------------------

std::vector<double> alibi_slopes(int64_t heads) {
  ORDO_CHECK(heads >= 1, "alibi_slopes: heads must be >= 1, got ", heads);
  auto geometric = [](int64_t n) {  // 2^(-8/n), 2^(-16/n), ..., 2^(-8)
    std::vector<double> m;
    for (int64_t h = 1; h <= n; ++h) m.push_back(std::pow(2.0, -8.0 * static_cast<double>(h) / static_cast<double>(n)));
    return m;
  };
  int64_t c = 1;
  while (c * 2 <= heads) c *= 2;
  std::vector<double> m = geometric(c);
  if (c == heads) return m;
  // Press et al.: get_slopes(2c)[0::2][:n - c], interleaving between the c slopes.
  std::vector<double> finer = geometric(2 * c);
  for (int64_t t = 0; t < heads - c; ++t) m.push_back(finer[static_cast<size_t>(2 * t)]);
  return m;
}

Alibi::Alibi(const nn::BertConfig& c, FieldReader& o, Device device)
    : heads_(c.num_attention_heads), device_(device), learned_(o.boolean("learned", false)) {
  if (learned_) {
    Share share = read_share(o, Share::none, "alibi");
    offsets_ = std::make_unique<TableSet>(*this, share, c.num_hidden_layers, heads_, Shape{1}, nn::Init::zeros(), device,
                                          table_names(share, heads_, "slope_offsets"));
    exclude_from_decay(*this, *offsets_);
  }
}

Var Alibi::slopes(int layer, DType dtype) const {
  Var m(constant(alibi_slopes(heads_), {heads_}, dtype, device_));
  if (!learned_) return m;
  return add(m, reshape(offsets_->for_layer(layer), {heads_}));  // m_h + d_{layer,h}
}

Var Alibi::biases(const nn::AttentionState& s, DType dtype) const {
  // -m_h |p_j - p_i|: [heads] x [B, L, L] -> [B, heads, L, L] (B = 1 for identical rows).
  Tensor distance = abs(relative_distances(distinct_position_rows(*s.positions, s.ctx)).to(dtype)).unsqueeze(1);
  Var m = reshape(slopes(s.layer, dtype), {1, heads_, 1, 1});
  return mul(neg(m), Var(distance));
}

Var Alibi::score_bias(const nn::AttentionState& s, const Var&, const Var&) { return biases(s, s.dtype); }

Var Alibi::positional_weights(const nn::AttentionState& s) { return softmax(biases(s, s.dtype)); }

void Alibi::fused_terms(const nn::AttentionState& s, const Var& q, const Var&, FusedTerms& out) {
  // -m_h |r| for r = -widest .. widest: [heads, 2 widest + 1], row r + widest.
  const int64_t widest = widest_distance(*s.positions, s.ctx), n = 2 * widest + 1;
  std::vector<double> distance(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) distance[static_cast<size_t>(p)] = std::fabs(static_cast<double>(p - widest));
  out.vars.table = neg(mul(reshape(slopes(s.layer, q.dtype()), {heads_, 1}), Var(constant(distance, {1, n}, q.dtype(), q.device()))));
  set_fused_rows(*this, out, s, widest, [&](int64_t r) { return r + widest; });
}

}  // namespace ordo::pe
