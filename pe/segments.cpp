#include "pe/segments.h"

#include "autograd/ops.h"
#include "pe/per_head.h"

namespace ordo::pe {

PerHeadSegments::PerHeadSegments(const nn::BertConfig& c, std::unique_ptr<nn::PositionEncoding> inner, Device device)
    : inner_(adopt(std::move(inner))),
      types_(c.type_vocab_size),
      tables_(*this, parse_share(c.segment_share, "segment_share"), c.num_hidden_layers, c.num_attention_heads,
              {c.type_vocab_size * c.type_vocab_size}, nn::Init::normal(c.initializer_range), device,
              table_names(parse_share(c.segment_share, "segment_share"), c.num_attention_heads, "segment_encoding")) {}

nn::PositionEncoding& PerHeadSegments::adopt(std::unique_ptr<nn::PositionEncoding> inner) {
  ORDO_CHECK(inner != nullptr, "PerHeadSegments: no position encoding given");
  std::string path = inner->module_path();  // read before the pointer is moved from
  return add_module(path, std::move(inner));
}

Var PerHeadSegments::segment_scores(const nn::AttentionState& s) const {
  const Tensor& positions = *s.positions;
  Tensor seg = s.segments && s.segments->defined() ? *s.segments : Tensor::zeros(positions.shape(), DType::i64, positions.device());
  auto [smallest, largest] = segment_range(seg, s.ctx);
  ORDO_CHECK(smallest >= 0 && largest < types_, "segment per_head: segment id ", largest >= types_ ? largest : smallest,
             " is outside type_vocab_size ", types_, " (ids 0..", types_ - 1, ")");
  // Entry seg(i) * k + seg(j) of Seg_h, for every (b, i, j).
  Tensor k = Tensor::scalar(static_cast<double>(types_), DType::i64, seg.device());
  Tensor ids = add(mul(seg.unsqueeze(2), k), seg.unsqueeze(1));
  return per_head_lookup(tables_.for_layer(s.layer, s.ctx), ids);
}

std::string PerHeadSegments::fused_support() const {
  if (types_ > kFusedAttentionMaxSegments)
    return "per-head segments of " + std::to_string(types_) + " types (the fused kernels take up to " +
           std::to_string(kFusedAttentionMaxSegments) + ")";
  return acts_in_attention ? inner_.fused_support() : "";
}

void PerHeadSegments::fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) {
  if (acts_in_attention) inner_.fused_terms(s, q, k, out);
  const Tensor& positions = *s.positions;
  Tensor seg = s.segments && s.segments->defined() ? *s.segments : Tensor::zeros(positions.shape(), DType::i64, positions.device());
  auto [smallest, largest] = segment_range(seg, s.ctx);
  ORDO_CHECK(smallest >= 0 && largest < types_, "segment per_head: segment id ", largest >= types_ ? largest : smallest,
             " is outside type_vocab_size ", types_, " (ids 0..", types_ - 1, ")");
  out.vars.segment_table = tables_.for_layer(s.layer, s.ctx);  // [heads, k^2]: entry seg(i) * k + seg(j)
  out.terms.segments = seg;
  out.terms.segment_types = types_;
}

Var PerHeadSegments::score_bias(const nn::AttentionState& s, const Var& q, const Var& k) {
  Var bias = inner_.score_bias(s, q, k);
  Var segments = segment_scores(s);
  return bias.defined() ? add(bias, segments) : segments;
}

}  // namespace ordo::pe
