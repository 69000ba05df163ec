// The fused attention as one differentiable op (tensor/attention_terms.h):
// its forward and backward kernels side by side. The CPU kernels are the
// equations as loops (the reference); the CUDA kernels never form the
// [B, H, L, J] scores. nn/bert.cpp builds it from a position encoding's
// fused_terms() where the variant can give them.
#include <array>
#include <utility>

#include "autograd/ops.h"

namespace ordo {

namespace {

// Each learned term's Var beside its place in AttentionTerms, in the order of
// the node's inputs after q, k, v.
std::array<std::pair<const Var*, Tensor*>, 9> learned_terms(const AttentionVars& vars, AttentionTerms& terms) {
  return {{
      {&vars.gate, &terms.gate}, {&vars.product, &terms.product}, {&vars.query_vectors, &terms.query_vectors},
      {&vars.key_vectors, &terms.key_vectors}, {&vars.table, &terms.table}, {&vars.value_vectors, &terms.value_vectors},
      {&vars.pos_query, &terms.pos_query}, {&vars.pos_key, &terms.pos_key}, {&vars.segment_table, &terms.segment_table}}};
}

// attention_forward's [B, H, L, d] output (or its rounding) as the
// contiguous [B, L, H, d] block it views.
Tensor merged_block(const Tensor& t) { return t.defined() ? t.permute({0, 2, 1, 3}) : t; }

}  // namespace

AttentionTerms AttentionVars::values_in(AttentionTerms terms) const {
  for (const auto& [var, tensor] : learned_terms(*this, terms))
    if (var->defined()) *tensor = var->value();
  return terms;
}

Var attention(const Var& q, const Var& k, const Var& v, const AttentionVars& vars, AttentionTerms terms) {
  terms = vars.values_in(terms);
  std::vector<Var> inputs = {q, k, v};
  std::vector<int> which;  // index into learned_terms() of inputs[3 + n]
  const auto learned = learned_terms(vars, terms);
  for (int t = 0; t < 9; ++t) {
    if (!learned[t].first->defined()) continue;
    inputs.push_back(*learned[t].first);
    which.push_back(t);
  }
  const Tensor qv = q.value(), kv = k.value(), vv = v.value();
  // out is the output projection's input: under a forward's
  // OperandRoundingScope the kernel writes its bf16 rounding too, which that
  // product takes (through merge_heads' views) instead of a cast.
  AttentionOutput forward = attention_forward(qv, kv, vv, terms, OperandRoundingScope::collecting());
  OperandRoundingScope::add_rounding(merged_block(forward.out), merged_block(forward.out_operand));
  forward.out_operand = Tensor();
  return record_op("attention", forward.out, std::move(inputs),
                   [qv, kv, vv, forward, terms, which](const Tensor& gout, const std::vector<bool>& needs) {
                     AttentionNeeds n;
                     n.q = needs[0], n.k = needs[1], n.v = needs[2];
                     bool* flags[] = {&n.gate,  &n.product,   &n.query_vectors, &n.key_vectors, &n.table,
                                      &n.value_vectors, &n.pos_query, &n.pos_key, &n.segment_table};
                     for (size_t x = 0; x < which.size(); ++x) *flags[which[x]] = needs[3 + x];
                     AttentionGrads g = attention_backward(gout, qv, kv, vv, forward, terms, n);
                     const Tensor* grads[] = {&g.gate,  &g.product,   &g.query_vectors, &g.key_vectors, &g.table,
                                              &g.value_vectors, &g.pos_query, &g.pos_key, &g.segment_table};
                     std::vector<Tensor> out = {g.q, g.k, g.v};
                     for (int t : which) out.push_back(*grads[t]);
                     return out;
                   });
}

}  // namespace ordo
