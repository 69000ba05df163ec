// rpe_shaw, rpe_sin, rpe_sin_learnable and the family's shared machinery.
// The equations are at the top of pe/relative.h:
//
//   rpe_shaw   s_ij = q_i . (k_j + a^K_{c(r_ij)}) / sqrt(d_h)            (Huang et al. 2020, Eq. 7-9)
//              o_i  = sum_j alpha_ij (v_j + a^V_{c(r_ij)})                (Chen et al. 2021, section 2.2.2)
//   rpe_sin    a^K_r = a^V_r = P(r), P(r)_{2m} = sin(w_m r), P(r)_{2m+1} = cos(w_m r),
//              w_m = 10000^(-2m/d_h)                                      (Wang et al. 2021, Table 1)
//   rpe_sin_learnable  the same, w learned from the fixed values          (Wang et al. 2021, Table 1)
#include "pe/relative.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "pe/per_head.h"

namespace ordo::pe {

// ---- distances to rows ----------------------------------------------------------------

namespace {

Tensor i64_scalar(int64_t v, Device device) { return Tensor::scalar(static_cast<double>(v), DType::i64, device); }

// "offsets -k..k", for the captions of offset_vectors().
std::string offsets_label(int64_t k) { return "offsets -" + std::to_string(k) + ".." + std::to_string(k); }

}  // namespace

DistanceRows DistanceSpec::span(int64_t lo, int64_t hi, const std::string& variant) const {
  if (has_table()) {
    const int64_t far = std::max(-lo, hi);
    const int64_t bad = -lo > hi ? lo : hi;
    ORDO_CHECK(far <= reach, variant, ": a relative distance of ", bad, " (key position minus query position) is ",
               "beyond the table, which holds |distance| <= ", reach,
               clip >= 0 ? " (the clip distance)" : " (max_distance)",
               "; raise the variant's max_distance, or clip distances with clip");
  }
  DistanceRows out;
  switch (layout) {
    case RowLayout::signed_table:  // row = reach - r; the rows used are reach - hi .. reach - lo
      out.first = reach - hi;
      out.count = hi - lo + 1;
      break;
    case RowLayout::magnitude_table: {  // row = |r|, from the smallest |r| present to the largest
      out.first = lo <= 0 && hi >= 0 ? 0 : std::min(std::abs(lo), std::abs(hi));
      out.count = std::max(-lo, hi) - out.first + 1;
      break;
    }
    case RowLayout::functional:
      out.count = hi - lo + 1;
      out.min_distance = lo;
      break;
  }
  return out;
}

int64_t DistanceSpec::row(int64_t c, const DistanceRows& span) const {
  switch (layout) {
    case RowLayout::signed_table: return reach - c - span.first;
    case RowLayout::magnitude_table: return std::abs(c) - span.first;
    case RowLayout::functional: return c - span.min_distance;
  }
  return 0;
}

DistanceRows DistanceSpec::clipped_span(int64_t widest, const std::string& variant) const {
  return clip >= 0 ? span(std::max(-widest, -clip), std::min(widest, clip), variant) : span(-widest, widest, variant);
}

int64_t DistanceSpec::clipped_row(int64_t r, const DistanceRows& span) const {
  return row(clip >= 0 ? std::max(-clip, std::min(clip, r)) : r, span);
}

DistanceRows DistanceSpec::rows(const Tensor& positions, const std::string& variant, bool with_transpose,
                                const nn::Context* ctx) const {
  Tensor r = relative_distances(positions);  // r_ij = p_j - p_i
  if (clip >= 0) r = clip_distances(r, clip);
  if (r.numel() == 0) {
    DistanceRows out;
    out.idx = r;
    if (with_transpose) out.idx_t = r;
    return out;
  }
  // Within a row every p_j - p_i has its negation too, so the distances span
  // exactly -widest .. widest (then clipped, which is monotone).
  auto [lo, hi] = ctx && ctx->facts ? std::pair<int64_t, int64_t>{-ctx->facts->widest, ctx->facts->widest}
                                    : integer_range(r);
  if (ctx && ctx->facts && clip >= 0) lo = std::max(lo, -clip), hi = std::min(hi, clip);
  DistanceRows out = span(lo, hi, variant);
  const Device device = r.device();
  switch (layout) {
    case RowLayout::signed_table: out.idx = sub(i64_scalar(reach - out.first, device), r); break;
    case RowLayout::magnitude_table:
      out.idx = sub(maximum(r, sub(i64_scalar(0, device), r)), i64_scalar(out.first, device));
      break;
    case RowLayout::functional: out.idx = sub(r, i64_scalar(lo, device)); break;
  }
  out.idx = out.idx.contiguous();
  if (with_transpose) out.idx_t = out.idx.transpose(1, 2).contiguous();
  return out;
}

namespace {
std::atomic<bool> banded_switch{true};
}  // namespace

void set_banded_terms(bool on) { banded_switch = on; }
bool banded_terms_enabled() { return banded_switch; }

DistanceRows DistanceSpec::vector_rows(const Tensor& positions, const std::string& variant, bool with_transpose,
                                       const nn::Context* ctx) const {
  const int64_t L = positions.dim() == 2 ? positions.size(1) : 0;
  if (!banded_terms_enabled() || !ctx || !ctx->facts || !ctx->facts->consecutive || !positions.device().is_cpu() ||
      ctx->precision == MatmulPrecision::tf32 || L == 0)
    return rows(positions, variant, with_transpose, ctx);
  // Every p_j - p_i is j - i: the distances -(L - 1) .. L - 1.
  DistanceRows out = clipped_span(L - 1, variant);
  out.band.resize(static_cast<size_t>(2 * L - 1));
  for (int64_t t = 0; t < 2 * L - 1; ++t) out.band[static_cast<size_t>(t)] = clipped_row(t - (L - 1), out);
  return out;
}

DistanceRows DistanceSpec::fused_rows(const nn::PositionEncoding& pe, const nn::AttentionState& s,
                                      nn::PositionEncoding::FusedTerms& out, bool whole_table) const {
  const std::string variant = pe.name();
  const int64_t widest = widest_distance(*s.positions, s.ctx);
  DistanceRows rows = clipped_span(widest, variant);  // checks the table's reach
  if (whole_table && has_table()) {
    rows.first = 0;
    rows.count = table_rows();
  }
  set_fused_rows(pe, out, s, widest, [&](int64_t r) { return clipped_row(r, rows); });
  return rows;
}

DistanceSpec RelativeOptions::spec(RowLayout layout) const {
  DistanceSpec s;
  s.layout = layout;
  s.clip = clip;
  s.reach = clip >= 0 ? clip : max_distance;
  return s;
}

RelativeOptions read_relative_options(const nn::BertConfig& config, FieldReader& options, const std::string& variant,
                                      Share default_share, OptionSet allowed) {
  RelativeOptions o;
  o.share = default_share;
  if (allowed.share)
    o.share = parse_share(options.string("share", share_name(default_share), {"none", "heads", "layers", "all"}), variant);
  const int64_t longest = std::max<int64_t>(config.max_position_embeddings - 1, 0);
  o.max_distance = longest;
  if (allowed.clip) o.clip = options.integer("clip", -1, 0, int64_t{1} << 30);  // -1: not clipped
  if (allowed.max_distance) {
    ORDO_CHECK(o.clip < 0 || !options.has("max_distance"), variant,
               ": give clip or max_distance, not both (a clipped table holds |distance| <= clip)");
    o.max_distance = options.integer("max_distance", longest, 0, int64_t{1} << 30);
  }
  return o;
}

// ---- tables -----------------------------------------------------------------------------

std::function<std::string(int64_t)> relative_table_names(Share share, int64_t heads, const std::string& name) {
  return [share, heads, name](int64_t t) -> std::string {
    auto layer = [&](int64_t l) { return "encoder.layer." + std::to_string(l) + ".attention.self." + name; };
    switch (share) {
      case Share::none: return layer(t / heads) + "." + std::to_string(t % heads) + ".weight";
      case Share::heads: return layer(t) + ".weight";
      case Share::layers: return "encoder." + name + "." + std::to_string(t) + ".weight";
      case Share::all: return "encoder." + name + ".weight";
    }
    return name;
  };
}

void keep_out_of_decay(nn::Module& owner, const TableSet& tables, Share share, int64_t heads,
                        const std::string& name) {
  auto names = relative_table_names(share, heads, name);
  for (int64_t t = 0; t < tables.count(); ++t) {
    nn::Parameter* p = owner.find_parameter(names(t));
    ORDO_ASSERT(p != nullptr);
    p->decay = false;
  }
}

Var layer_rows(const TableSet& tables, int layer, const DistanceRows& rows, nn::Context* ctx) {
  auto trimmed = [&](const Var& t, int axis) {
    return rows.first == 0 && rows.count == t.size(axis) ? t : slice(t, axis, rows.first, rows.first + rows.count);
  };
  switch (tables.share()) {
    case Share::heads: return trimmed(tables.table(layer).var, 0);
    case Share::all: return trimmed(tables.table(0).var, 0);
    default: return trimmed(tables.for_layer(layer, ctx), 1);
  }
}

nn::PositionEncoding::OffsetVectors table_offset_vectors(const TableSet& tables, const DistanceSpec& spec, int layer,
                                                         int64_t span, const std::string& what) {
  ORDO_ASSERT(spec.has_table());
  NoGradGuard no_grad;
  const int64_t k = std::min(spec.reach, span);
  std::vector<int64_t> rows;
  for (int64_t r = -k; r <= k; ++r) rows.push_back(spec.layout == RowLayout::signed_table ? spec.reach - r : std::abs(r));
  Tensor table = tables.for_layer(layer).value().select(0, 0).to(Device::cpu());  // the first head's
  Tensor v = index_select(table, 0, Tensor::from_vector(rows, Shape{2 * k + 1})).to(DType::f64);
  nn::PositionEncoding::OffsetVectors out;
  out.vectors = v.dim() == 1 ? v.reshape({2 * k + 1, 1}) : v;
  out.first_offset = -k;
  out.source = what + " of layer " + std::to_string(layer + 1) + ", " + offsets_label(k) + ")";
  return out;
}

// ---- attention terms ------------------------------------------------------------------------

namespace {

// The vectors a ([R, d], or [H, R, d] per head) as the banded ops' table
// [1 or H, 2L - 1, d]: row t the vector of distance t - (L - 1), or with
// `reversed` of distance (L - 1) - t (a key-side term), times alpha.
Var band_table(const Var& a, const std::vector<int64_t>& band, bool reversed, double alpha = 1.0) {
  std::vector<int64_t> order = band;
  if (reversed) std::reverse(order.begin(), order.end());
  Var t = index_select(a, a.dim() - 2, Tensor::from_vector(order, Shape{static_cast<int64_t>(order.size())}));
  if (alpha != 1.0) t = affine(t, alpha);
  return a.dim() == 2 ? unsqueeze(t, 0) : t;
}

}  // namespace

Var query_vector_term(const Var& q, const Var& a, const DistanceRows& rows, double alpha, MatmulPrecision precision) {
  if (!rows.band.empty()) return band_scores(q, band_table(a, rows.band, false, alpha), precision);
  Var per_distance = matmul(q, a, false, true, alpha, precision);  // [B, H, L, R]: alpha q_i . a_r for every r
  return relative_gather(per_distance, rows.idx);       // the r of each pair (i, j)
}

Var key_vector_term(const Var& k, const Var& a, const DistanceRows& rows, double alpha, MatmulPrecision precision) {
  // Banded: k_j . a_{j - i} in rows j and columns i is k's band over the table read backwards
  // (row t the distance (L - 1) - t), then transposed to [i, j].
  if (!rows.band.empty()) return transpose(band_scores(k, band_table(a, rows.band, true, alpha), precision), 2, 3);
  ORDO_ASSERT(rows.idx_t.defined());
  Var per_distance = matmul(k, a, false, true, alpha, precision);  // [B, H, L(j), R]: alpha k_j . a_r
  Var by_key = relative_gather(per_distance, rows.idx_t);     // [b, h, j, i] = k_j . a_{r_ij}
  return transpose(by_key, 2, 3);                             // [b, h, i, j]
}

Var value_vector_term(const Var& probs, const Var& a, const DistanceRows& rows, MatmulPrecision precision) {
  if (!rows.band.empty()) return band_apply(probs, band_table(a, rows.band, false), precision);
  Var mass = relative_scatter(probs, rows.idx, rows.count);  // [B, H, L, R]: sum of alpha_ij over j with row r
  return matmul(mass, a, false, false, 1.0, precision);      // [B, H, L, d]: sum_r mass_ir a_r
}

Var per_head_table(const Var& rows, int table_rank) {
  return rows.dim() == table_rank ? rows : unsqueeze(rows, 0);  // one table for every head: [1, ...]
}

// ---- rpe_shaw ------------------------------------------------------------------------------

ShawRelative::ShawRelative(const nn::BertConfig& c, const RelativeOptions& o, bool values, Device device)
    : spec_(o.spec(RowLayout::signed_table)),
      keys_(*this, o.share, c.num_hidden_layers, c.num_attention_heads, {spec_.table_rows(), c.head_dim()},
            nn::Init::normal(c.initializer_range), device,
            relative_table_names(o.share, c.num_attention_heads, "distance_embedding")) {
  if (values)
    values_.emplace(*this, o.share, c.num_hidden_layers, c.num_attention_heads, Shape{spec_.table_rows(), c.head_dim()},
                    nn::Init::normal(c.initializer_range), device,
                    relative_table_names(o.share, c.num_attention_heads, "distance_embedding_value"));
}

Var ShawRelative::score_bias(const nn::AttentionState& s, const Var& q, const Var&) {
  DistanceRows rows = spec_.vector_rows(*s.positions, name(), false, s.ctx);
  return query_vector_term(q, layer_rows(keys_, s.layer, rows, s.ctx), rows, score_scale(s), s.ctx->precision);
}

Var ShawRelative::value_term(const nn::AttentionState& s, const Var& probs) {
  if (!values_) return {};
  DistanceRows rows = spec_.vector_rows(*s.positions, name(), false, s.ctx);
  return value_vector_term(probs, layer_rows(*values_, s.layer, rows, s.ctx), rows, s.ctx->precision);
}

void ShawRelative::fused_terms(const nn::AttentionState& s, const Var&, const Var&, FusedTerms& out) {
  // The whole tables: their gradients come whole from the attention's
  // backward (by distance on the tiles), no pad of trimmed rows a layer.
  DistanceRows rows = spec_.fused_rows(*this, s, out, /*whole_table=*/true);
  out.vars.query_vectors = per_head_table(layer_rows(keys_, s.layer, rows, s.ctx), 3);
  out.terms.query_scale = score_scale(s);
  if (values_) out.vars.value_vectors = per_head_table(layer_rows(*values_, s.layer, rows, s.ctx), 3);
}

nn::PositionEncoding::OffsetVectors ShawRelative::offset_vectors(int layer, int64_t span) const {
  return table_offset_vectors(keys_, spec_, layer, span, "a^K (" + name() + " key table");
}

std::unique_ptr<nn::PositionEncoding> make_rpe_shaw(const nn::BertConfig& c, FieldReader& options, Device device) {
  // Shaw et al. share the vectors across heads (Chen et al. 2021, section
  // 2.2.2), as HF's relative_key: share = heads by default.
  RelativeOptions o = read_relative_options(c, options, "rpe_shaw", Share::heads, {});
  bool values = options.boolean("value", false);  // Huang et al. (Eq. 7) and HF: keys only
  return std::make_unique<ShawRelative>(c, o, values, device);
}

// ---- rpe_sin, rpe_sin_learnable ----------------------------------------------------------------

namespace {

// The distances first .. first + count - 1.
std::vector<double> distance_values(int64_t first, int64_t count) {
  std::vector<double> d(static_cast<size_t>(count));
  for (int64_t p = 0; p < count; ++p) d[static_cast<size_t>(p)] = static_cast<double>(first + p);
  return d;
}

// The first head's frequencies of w [d/2] (shared by the heads) or [H, d/2].
Tensor first_head(const Tensor& w) { return w.dim() == 2 ? w.select(0, 0) : w; }

// P(x)_{..., 2m} = sin(w_m x), P(x)_{..., 2m+1} = cos(w_m x) for distances x
// [R] and frequencies w [d/2] or [H, d/2]: [R, d] or [H, R, d].
Var interleaved_sinusoid(const Tensor& x, const Var& w) {
  const int64_t half = w.size(-1), count = x.numel();
  Shape wshape = w.shape();
  wshape.insert(wshape.end() - 1, 1);  // [..., 1, d/2]
  Var angles = mul(Var(x.reshape({count, 1})), reshape(w, wshape));  // [..., R, d/2]
  Var pairs = concat({unsqueeze(sin(angles), -1), unsqueeze(cos(angles), -1)}, -1);  // [..., R, d/2, 2]
  Shape out = angles.shape();
  out.back() = 2 * half;
  return reshape(pairs, out);
}

}  // namespace

SinusoidRelative::SinusoidRelative(const nn::BertConfig& c, bool learnable, Share share, int64_t clip, bool values,
                                   Device device)
    : learnable_(learnable), values_(values), head_dim_(c.head_dim()) {
  ORDO_CHECK(head_dim_ % 2 == 0, name(), ": the head width must be even for (sin, cos) pairs, got ", head_dim_);
  spec_.layout = RowLayout::functional;
  spec_.clip = clip;
  if (learnable) {
    const std::string table = "distance_frequency_offset";
    offsets_.emplace(*this, share, c.num_hidden_layers, c.num_attention_heads, Shape{head_dim_ / 2}, nn::Init::zeros(),
                     device, relative_table_names(share, c.num_attention_heads, table));
    // Decay would pull the frequencies towards the fixed ones; the frequencies are
    // the parameter of the paper, so they are left free.
    keep_out_of_decay(*this, *offsets_, share, c.num_attention_heads, table);
  }
}

Var SinusoidRelative::frequency_var(int layer, DType dtype, Device device) const {
  if (!offsets_) return Var(sinusoid_frequencies(*this, head_dim_, dtype, device));
  // w = w_fixed + delta: the learned frequency, starting at the fixed one
  // (a parameter cannot start from per-element values; the gradients of w
  // and of delta are the same).
  Var delta = layer_offsets(layer);
  return add(delta, Var(sinusoid_frequencies(*this, head_dim_, delta.dtype(), delta.device())));
}

Var SinusoidRelative::layer_offsets(int layer) const {
  switch (offsets_->share()) {
    case Share::heads: return offsets_->table(layer).var;
    case Share::all: return offsets_->table(0).var;
    default: return offsets_->for_layer(layer);
  }
}

Tensor SinusoidRelative::frequencies(int layer) const {
  NoGradGuard no_grad;
  Tensor fixed = sinusoid_frequencies(head_dim_, DType::f64, Device::cpu());
  if (!offsets_) return fixed;
  return add(layer_offsets(layer).value().to(Device::cpu()).to(DType::f64), fixed);
}

Var SinusoidRelative::vectors(int layer, const DistanceRows& rows, DType dtype, Device device) const {
  // Row p stands for the distance min_distance + p.
  const std::vector<double> r = distance_values(rows.min_distance, rows.count);
  if (!offsets_) {
    // Fixed frequencies: P(r) in double on the host, rounded once to the
    // dtype, kept as a constant of this encoding (no launch in a steady step).
    NoGradGuard no_grad;
    const Tensor p = interleaved_sinusoid(Tensor::from_vector(r, {rows.count}),
                                          Var(sinusoid_frequencies(head_dim_, DType::f64, Device::cpu())))
                         .value();
    return Var(constant(p.to_vector<double>(), {rows.count, head_dim_}, dtype, device));
  }
  return interleaved_sinusoid(constant(r, {rows.count}, dtype, device), frequency_var(layer, dtype, device));
}

nn::PositionEncoding::OffsetVectors SinusoidRelative::offset_vectors(int layer, int64_t span) const {
  NoGradGuard no_grad;
  const int64_t k = spec_.clip >= 0 ? std::min(span, spec_.clip) : span;  // beyond the clip, P(r) repeats
  OffsetVectors v;
  v.vectors = interleaved_sinusoid(Tensor::from_vector(distance_values(-k, 2 * k + 1), {2 * k + 1}),
                                   Var(first_head(frequencies(layer))))
                  .value();
  v.first_offset = -k;
  v.source = "P(r) (" + name() + ", layer " + std::to_string(layer + 1) + ", " + offsets_label(k) + ")";
  return v;
}

nn::PositionEncoding::LearnedFrequencies SinusoidRelative::learned_frequencies(int layer) const {
  if (!offsets_) return {};
  LearnedFrequencies f;
  f.fixed = sinusoid_frequencies(head_dim_, DType::f64, Device::cpu());
  f.learned = first_head(frequencies(layer));
  f.source = name() + ", layer " + std::to_string(layer + 1) + ", first table (d_h = " + std::to_string(head_dim_) + ")";
  return f;
}

Var SinusoidRelative::layer_vectors(const nn::AttentionState& s, const DistanceRows& rows, DType dtype,
                                    Device device) const {
  // Fixed frequencies, or learned ones every layer shares: the same vectors in each layer.
  const bool same_in_every_layer = !offsets_ || offsets_->share() == Share::all || offsets_->share() == Share::layers;
  if (!same_in_every_layer || s.ctx == nullptr || !s.ctx->facts) return vectors(s.layer, rows, dtype, device);
  Var& shared = s.ctx->layer_shared[detail::cat("P(r) ", static_cast<const void*>(this), " rows ", rows.min_distance,
                                                " + ", rows.count, " ", dtype_name(dtype), " ", device.str())];
  if (!shared.defined()) shared = vectors(s.layer, rows, dtype, device);
  return shared;
}

Var SinusoidRelative::score_bias(const nn::AttentionState& s, const Var& q, const Var&) {
  DistanceRows rows = spec_.vector_rows(*s.positions, name(), false, s.ctx);
  return query_vector_term(q, layer_vectors(s, rows, q.dtype(), q.device()), rows, score_scale(s),
                           s.ctx->precision);
}

void SinusoidRelative::fused_terms(const nn::AttentionState& s, const Var& q, const Var&, FusedTerms& out) {
  DistanceRows rows = spec_.fused_rows(*this, s, out);
  Var p = per_head_table(layer_vectors(s, rows, q.dtype(), q.device()), 3);
  out.vars.query_vectors = p;
  out.terms.query_scale = score_scale(s);
  if (values_) out.vars.value_vectors = p;
}

Var SinusoidRelative::value_term(const nn::AttentionState& s, const Var& probs) {
  if (!values_) return {};
  DistanceRows rows = spec_.vector_rows(*s.positions, name(), false, s.ctx);
  return value_vector_term(probs, layer_vectors(s, rows, probs.dtype(), probs.device()), rows, s.ctx->precision);
}

std::unique_ptr<nn::PositionEncoding> make_rpe_sin(const nn::BertConfig& c, FieldReader& options, Device device) {
  RelativeOptions o = read_relative_options(c, options, "rpe_sin", Share::all, {false, true, false});
  // NEZHA and Wang et al. (Eq. 5) add the relative vector to keys and values.
  bool values = options.boolean("value", true);
  return std::make_unique<SinusoidRelative>(c, false, Share::all, o.clip, values, device);
}

std::unique_ptr<nn::PositionEncoding> make_rpe_sin_learnable(const nn::BertConfig& c, FieldReader& options,
                                                             Device device) {
  // Wang et al. 2021 share their RPEs across heads and layers (App. E): share = all by default.
  RelativeOptions o = read_relative_options(c, options, "rpe_sin_learnable", Share::all, {true, true, false});
  bool values = options.boolean("value", true);
  return std::make_unique<SinusoidRelative>(c, true, o.share, o.clip, values, device);
}

}  // namespace ordo::pe
