#include "pe/common.h"

#include <algorithm>
#include <cmath>

#include "autograd/ops.h"

namespace ordo::pe {

Tensor relative_distances(const Tensor& positions) {
  check_dtype(positions, DType::i64, "relative_distances", "positions");
  check_dim(positions, 2, "relative_distances", "positions");
  // [B, 1, L] - [B, L, 1]: entry (b, i, j) = p_bj - p_bi.
  return sub(positions.unsqueeze(1), positions.unsqueeze(2));
}

Tensor clip_distances(const Tensor& r, int64_t k) {
  ORDO_CHECK(k >= 0, "clip_distances: k must be >= 0, got ", k);
  Tensor lo = Tensor::scalar(static_cast<double>(-k), DType::i64, r.device());
  Tensor hi = Tensor::scalar(static_cast<double>(k), DType::i64, r.device());
  return minimum(maximum(r, lo), hi);
}

std::pair<int64_t, int64_t> integer_range(const Tensor& t) {
  check_dtype(t, DType::i64, "integer_range", "the tensor");
  ORDO_CHECK(t.numel() > 0, "integer_range: an empty tensor");
  // One copy to the host (none for a dense CPU tensor), then a plain scan.
  Tensor host = t.to(Device::cpu()).contiguous();
  const int64_t* v = host.data<int64_t>();
  auto [lo, hi] = std::minmax_element(v, v + host.numel());
  return {*lo, *hi};
}

std::pair<int64_t, int64_t> position_range(const Tensor& positions, const nn::Context* ctx) {
  if (ctx && ctx->facts) return {ctx->facts->position_min, ctx->facts->position_max};
  return integer_range(positions);
}

std::pair<int64_t, int64_t> segment_range(const Tensor& segments, const nn::Context* ctx) {
  if (ctx && ctx->facts) return {ctx->facts->segment_min, ctx->facts->segment_max};
  return integer_range(segments);
}

Tensor distinct_position_rows(const Tensor& positions, const nn::Context* ctx) {
  check_dtype(positions, DType::i64, "positions", "positions");
  check_dim(positions, 2, "positions", "positions");
  const int64_t batch = positions.size(0), length = positions.size(1);
  bool identical = true;
  if (ctx && ctx->facts) {
    identical = ctx->facts->rows_identical;
  } else if (batch > 1) {
    const std::vector<int64_t> p = positions.to(Device::cpu()).contiguous().to_vector<int64_t>();
    for (int64_t b = 1; b < batch && identical; ++b)
      identical = std::equal(p.begin() + b * length, p.begin() + (b + 1) * length, p.begin());
  }
  return identical && batch > 1 ? positions.slice(0, 0, 1).contiguous() : positions;
}

Share parse_share(const std::string& name, const std::string& where) {
  if (name == "none") return Share::none;
  if (name == "heads") return Share::heads;
  if (name == "layers") return Share::layers;
  if (name == "all") return Share::all;
  throw Error(where + ": share '" + name + "' is not one of none, heads, layers, all");
}

const char* share_name(Share s) {
  switch (s) {
    case Share::none: return "none";
    case Share::heads: return "heads";
    case Share::layers: return "layers";
    case Share::all: return "all";
  }
  return "?";
}

TableSet::TableSet(nn::Module& owner, Share share, int64_t layers, int64_t heads, const Shape& table_shape,
                   nn::Init init, Device device, const std::function<std::string(int64_t)>& name_of)
    : share_(share), layers_(layers), heads_(heads), table_shape_(table_shape) {
  int64_t n = share == Share::none ? layers * heads : share == Share::heads ? layers : share == Share::layers ? heads : 1;
  for (int64_t t = 0; t < n; ++t) tables_.push_back(&owner.add_parameter(name_of(t), table_shape, init, true, device));
  // A layer's heads' tables one after another in memory: for_layer then reads
  // them as one view instead of copying them together each forward.
  if ((share == Share::none || share == Share::layers) && heads > 1 && !table_shape.empty())
    for (int64_t first = 0; first < n; first += heads)
      nn::join_parameters(std::vector<nn::Parameter*>(tables_.begin() + first, tables_.begin() + first + heads));
}

Var TableSet::for_layer(int layer, nn::Context* ctx) const {
  ORDO_CHECK(layer >= 0 && layer < layers_, "TableSet: layer ", layer, " of ", layers_);
  if (ctx != nullptr && ctx->facts && (share_ == Share::layers || share_ == Share::all)) {
    Var& shared = ctx->layer_shared[detail::cat("tables ", static_cast<const void*>(this))];
    if (!shared.defined()) shared = for_layer(layer);
    return shared;
  }
  Shape one = table_shape_;
  one.insert(one.begin(), 1);
  Shape all_heads = table_shape_;
  all_heads.insert(all_heads.begin(), heads_);
  auto stacked = [&](int64_t first) {  // tables first .. first + heads - 1 as [heads, ...]
    std::vector<Var> parts;
    for (int64_t h = 0; h < heads_; ++h) parts.push_back(reshape(tables_[first + h]->var, one));
    return heads_ == 1 ? parts[0] : concat(parts, 0);
  };
  switch (share_) {
    case Share::none: return stacked(layer * heads_);
    case Share::heads: return expand(reshape(tables_[layer]->var, one), all_heads);
    case Share::layers: return stacked(0);
    case Share::all: return expand(reshape(tables_[0]->var, one), all_heads);
  }
  return {};
}

std::vector<double> sinusoid_frequency_values(int64_t dim) {
  ORDO_CHECK(dim > 0 && dim % 2 == 0, "sinusoid: the dimension must be even, got ", dim);
  std::vector<double> w(static_cast<size_t>(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) w[i] = std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
  return w;
}

Tensor sinusoid_frequencies(int64_t dim, DType dtype, Device device) {
  return Tensor::from_vector(sinusoid_frequency_values(dim), {dim / 2}).to(dtype).to(device);
}

Tensor sinusoid_frequencies(const nn::PositionEncoding& pe, int64_t dim, DType dtype, Device device) {
  return pe.constant(sinusoid_frequency_values(dim), {dim / 2}, dtype, device);
}

Var sinusoid(const Tensor& x, const Var& frequencies) {
  // angle[..., i] = x[...] * w_i; then (sin, cos) interleaved along the last axis.
  Var angles = mul(Var(x.unsqueeze(-1)), frequencies);
  Var pairs = concat({unsqueeze(sin(angles), -1), unsqueeze(cos(angles), -1)}, -1);  // [..., D/2, 2]
  Shape shape = x.shape();
  shape.push_back(2 * frequencies.size(0));
  return reshape(pairs, shape);
}

}  // namespace ordo::pe
