#include "pe/per_head.h"

#include <algorithm>
#include <vector>

#include "autograd/ops.h"
#include "base/config.h"

namespace ordo::pe {

Var per_head_lookup(const Var& tables, const Tensor& ids) {
  ORDO_CHECK(tables.dim() == 2, "per_head_lookup: tables must be [heads, n], got ", shape_str(tables.shape()));
  ORDO_CHECK(ids.dim() == 3, "per_head_lookup: ids must be [batch, L, L], got ", shape_str(ids.shape()));
  // The lookup runs along the table's rows, so the heads become the last
  // axis ([n, heads] rows -> [B, L, L, heads]) and are moved next to the batch.
  Var rows = embedding(transpose(tables, 0, 1), ids);
  return permute(rows, {0, 3, 1, 2});
}

std::function<std::string(int64_t)> table_names(Share share, int64_t heads, const std::string& stem) {
  return [share, heads, stem](int64_t t) -> std::string {
    switch (share) {
      case Share::all: return stem;
      case Share::heads: return stem + ".layer_" + std::to_string(t);
      case Share::layers: return stem + ".head_" + std::to_string(t);
      case Share::none: return stem + ".layer_" + std::to_string(t / heads) + ".head_" + std::to_string(t % heads);
    }
    return stem;
  };
}

void exclude_from_decay(nn::Module& owner, const TableSet& set) {
  for (int64_t t = 0; t < set.count(); ++t) {
    for (auto& [name, p] : owner.named_parameters())
      if (p == &set.table(t)) p->decay = false;
  }
}

Share read_share(FieldReader& options, Share fallback, const std::string& variant) {
  return parse_share(options.string("share", share_name(fallback), {"none", "heads", "layers", "all"}),
                     variant + " option share");
}

Tensor real_positions(const Tensor& positions, DType dtype) {
  check_dtype(positions, DType::i64, "positions", "positions");
  return positions.to(dtype);
}

void set_fused_rows(const nn::PositionEncoding& pe, nn::PositionEncoding::FusedTerms& out, const nn::AttentionState& s,
                    int64_t widest, const std::function<int64_t(int64_t)>& row_of) {
  std::vector<int64_t> rows;
  for (int64_t r = -widest; r <= widest; ++r) rows.push_back(row_of(r));
  out.terms.positions = *s.positions;
  out.terms.row_of = pe.constant(rows, {2 * widest + 1}, s.positions->device());
  out.terms.first_distance = -widest;
  out.terms.consecutive_positions = s.ctx && s.ctx->facts && s.ctx->facts->consecutive;
}

int64_t widest_distance(const Tensor& positions, const nn::Context* ctx) {
  check_dtype(positions, DType::i64, "widest_distance", "positions");
  check_dim(positions, 2, "widest_distance", "positions");
  if (ctx && ctx->facts) return ctx->facts->widest;
  std::vector<int64_t> p = positions.to(Device::cpu()).contiguous().to_vector<int64_t>();
  const int64_t batch = positions.size(0), length = positions.size(1);
  int64_t widest = 0;
  for (int64_t b = 0; b < batch && length > 0; ++b) {
    auto [lo, hi] = std::minmax_element(p.begin() + b * length, p.begin() + (b + 1) * length);
    widest = std::max(widest, *hi - *lo);
  }
  return widest;
}

}  // namespace ordo::pe
