#include "nn/bert.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "tensor/roofline.h"

namespace ordo::nn {

// ---- attention ---------------------------------------------------------------------

SelfAttention::SelfAttention(const BertConfig& c, Device device)
    : query(add_module("query", std::make_unique<Linear>(c.hidden_size, c.hidden_size, c.initializer_range, device))),
      key(add_module("key", std::make_unique<Linear>(c.hidden_size, c.hidden_size, c.initializer_range, device))),
      value(add_module("value", std::make_unique<Linear>(c.hidden_size, c.hidden_size, c.initializer_range, device))),
      heads_(c.num_attention_heads),
      head_dim_(c.head_dim()),
      dropout_(c.attention_probs_dropout_prob) {
  // Q, K and V one after another in memory: project()'s stacked product reads
  // them (and the biases) as one tensor instead of copying them together.
  join_parameters({&query.weight, &key.weight, &value.weight});
  join_parameters({query.bias, key.bias, value.bias});
}

// The ablation in force: the model's own (pe_options.ablate: only-p / only-c,
// trained that way) or the context's (ordo forward --ablate: BERT-p / BERT-c).
Ablation ablation_in_force(const PositionEncoding& pe, const Context& ctx) {
  if (ctx.ablate == Ablation::none) {
    ORDO_CHECK(pe.ablation == Ablation::none || pe.acts_at_input || pe.acts_in_attention, "pe '", pe.name(),
               "': an ablation needs to know where the encoding acts; make it with pe::make_position_encoding");
    return pe.ablation;
  }
  ORDO_CHECK(pe.ablation == Ablation::none || pe.ablation == ctx.ablate, "the model was trained with the ",
             ablation_name(pe.ablation), " ablation (pe_options.ablate); the ", ablation_name(ctx.ablate),
             " ablation cannot be applied on top of it");
  ORDO_CHECK(pe.acts_at_input || pe.acts_in_attention, "pe '", pe.name(), "': an ablation needs to know where the",
             " encoding acts; make it with pe::make_position_encoding");
  return ctx.ablate;
}

// Every merged output is the input of a product (the output projection, or
// the projections of the sequence combination's CA): under bf16 products the
// layout copy writes the bf16 operand itself, one pass instead of a copy and
// a cast. With from_product the merged value's gradient may be bf16: its way
// back (views, the operand's pass-through) ends in t's product, whose
// backward rounds it to bf16 itself.
Var merge_heads(const Var& t, MatmulPrecision precision, bool from_product) {
  const Var heads_last = permute(t, {0, 2, 1, 3});
  const bool bf16 = precision == MatmulPrecision::bf16;
  Var merged = reshape(bf16 ? operand(heads_last, precision) : heads_last, {t.size(0), t.size(2), t.size(1) * t.size(3)});
  if (bf16 && from_product && t.dtype() == DType::bf16 && merged.state()->node)
    merged.state()->node->takes_bf16_gradient = true;
  return merged;
}

namespace {

// [B, L, H*d] -> [B, H, L, d] (a view) and back.
Var heads_view(const Var& t, int64_t heads, int64_t head_dim) {
  return permute(reshape(t, {t.size(0), t.size(1), heads, head_dim}), {0, 2, 1, 3});
}

// a + b, leaving out a term that is undefined (a hook or an embedding with
// nothing to add).
Var sum_of_defined(const Var& a, const Var& b) { return !a.defined() ? b : !b.defined() ? a : add(a, b); }

// ---- the fused attention's switch ----

FusedAttention& fused_switch() {
  static FusedAttention mode = [] {
    const char* env = std::getenv("ORDO_FUSED_ATTENTION");
    const std::string value = env == nullptr ? "auto" : env;
    ORDO_CHECK(value == "auto" || value == "0" || value == "1", "ORDO_FUSED_ATTENTION='", value,
               "': expected 1 (the fused kernels), 0 (the unfused ops) or auto (the faster, today unfused)");
    return value == "1" ? FusedAttention::on : value == "0" ? FusedAttention::off : FusedAttention::automatic;
  }();
  return mode;
}

// Why attention with this encoding has no fused form ("" when it has one).
std::string capability_reason(const PositionEncoding& pe, int64_t head_dim) {
  if (pe.combine == Combine::sequence)
    return "combine = sequence (positional attention, then contextual attention: two softmaxes)";
  if (pe.ablation != Ablation::none) return std::string("the ") + ablation_name(pe.ablation) + " ablation";
  if (head_dim > kFusedAttentionMaxWidth)
    return "heads " + std::to_string(head_dim) + " wide (the fused kernels take up to " +
           std::to_string(kFusedAttentionMaxWidth) + ")";
  return pe.acts_in_attention || pe.adds_segment_scores() ? pe.fused_support() : "";
}

// Why attention with this encoding does not run fused on any device ("" when
// it does): the switch when off, the variant, then the switch when automatic.
std::string variant_reason(const PositionEncoding& pe, int64_t head_dim) {
  if (fused_switch() == FusedAttention::off) return "switched off (ORDO_FUSED_ATTENTION=0)";
  const std::string cannot = capability_reason(pe, head_dim);
  if (!cannot.empty() || fused_switch() == FusedAttention::on) return cannot;
  // Automatic, with a fused form: the faster of the two.
  // Measured, not modeled (docs/performance.md): on an NVIDIA H200, BERT-base
  // 32 x 128, the step with the fused kernels took 67 ms (ape_learned) to
  // 758 ms (huang_m4), with the unfused ops 17 to 26 ms.
  return "the faster by default: on an H200 the fused kernels (FP32 CUDA cores) ran 4-35x slower than the "
         "unfused ops' bf16 products, and their tensor-core tiles (bf16, the variants with scalar terms or "
         "Shaw's keys) have not run on a GPU yet; ORDO_FUSED_ATTENTION=1 runs them, in O(B H L) memory";
}

// Why attention with this encoding runs unfused on `device` ("" when fused).
std::string unfused_reason(const PositionEncoding& pe, int64_t head_dim, Device device) {
  if (!device.is_cuda()) return "on the CPU (the fused kernels are CUDA's; their CPU twin is the tests' reference)";
  return variant_reason(pe, head_dim);
}

// Whether SelfAttention::forward runs the fused op: ctx.fused (false keeps
// the unfused reference on every device), on a CUDA device or, asked by
// ctx.fused_attention_on_cpu, with the CPU's reference kernels; and nothing
// about the variant against it.
bool runs_fused(const PositionEncoding& pe, int64_t head_dim, Device device, const Context& ctx) {
  return ctx.fused && (device.is_cuda() || ctx.fused_attention_on_cpu) && variant_reason(pe, head_dim).empty();
}

// Evaluation on the CPU: the unfused ops without a graph, a batch element a
// thread (attention_inference: the same values, less memory, faster at long
// lengths), for every variant whose terms are added to q_i . k_j before the
// softmax (rotations and score terms: not Huang et al.'s own contextual
// products, nor a value term, which needs the whole batch's probabilities).
bool runs_inference_attention(const PositionEncoding& pe, Device device, const Context& ctx,
                              const ForwardTrace* trace) {
  return ctx.fused && device.is_cpu() && !ctx.training && !grad_enabled() && !pe.has_value_term() &&
         !(trace && (trace->keep_scores || trace->keep_attentions));
}

// gamma_ij of Eq. 5, scaled: scale * q_i . k_j, or scale times the variant's
// own contextual term `own` (Huang et al.'s products of q_i . k_j with position).
Var scaled_contextual_term(PositionEncoding& pe, const AttentionState& s, const Var& own, const Var& q, const Var& k) {
  return own.defined() ? affine(own, pe.score_scale(s))
                       : matmul(q, k, false, true, pe.score_scale(s), s.ctx->precision);
}

// The scores with every positional term removed: scale * q_i . k_j, plus the
// per-head segment scores (Chen et al. 2021, Eq. 9), which are neither term:
// where the positional terms go, they stay.
Var scores_without_positional_terms(PositionEncoding& pe, const AttentionState& s, const Var& q, const Var& k) {
  Var scores = matmul(q, k, false, true, pe.score_scale(s), s.ctx->precision);
  return sum_of_defined(scores, pe.segment_scores(s));
}

// delta alone, the scores of the contextual ablation (BERT-p / only-p): the
// variant's score terms (score_bias, with the per-head segment scores it
// includes). An input-level encoding has no delta in the scores: its tokens were removed at the input
// (BertModel::forward), so q_i . k_j is already positions (and segments) alone.
Var positional_term_alone(PositionEncoding& pe, const AttentionState& s, const Var& q, const Var& k, bool rotates) {
  if (!pe.acts_in_attention) return scores_without_positional_terms(pe, s, q, k);
  Var delta = pe.score_bias(s, q, k);
  ORDO_CHECK(delta.defined(), "pe '", pe.name(), "': the contextual ablation is undefined: the",
             " variant adds no positional term to the scores to keep",
             rotates ? " (it rotates q and k: its position lives inside q_i . k_j)" : "");
  return expand(delta, {q.size(0), q.size(1), q.size(2), k.size(2)});
}

// Positional attention PA of the sequence combination (the locality/symmetry
// paper, Eq. 10 and Listing 2): per head, o_i = sum_j delta_ij x_j with the
// variant's positional weights delta (an attention distribution) and the
// layer's input x split into heads as it is — Listing 2 splits x itself into
// q, k, v and defines no projection, so PA has no value projection and no
// parameters of its own. Padded keys (and a decoder's future keys) get weight
// 0, as Listing 2's masked_fill(~mask, 0.); the rows are not renormalised
// (Listing 2 does not), so a row that loses keys to padding sums to less
// than 1. Listing 2 defines a dropout it never applies: none here either.
Var positional_attention(const Var& x, const Var& padding_mask, PositionEncoding& pe, const AttentionState& s,
                         ForwardTrace* trace) {
  Var delta = pe.positional_weights(s);  // [1|B, H, L, L]
  ORDO_CHECK(delta.defined(), "pe '", pe.name(), "' with combine = sequence: the variant gives no positional weights",
             " (positional attention needs them as an attention distribution: attenuated or alibi)");
  Tensor zero = Tensor::scalar(0.0, padding_mask.dtype(), padding_mask.device());
  Tensor keep = eq(padding_mask.value(), zero);  // 1 where a key may be seen, [B, 1, 1|L, L]
  delta = mul(delta, Var(keep));
  if (trace && trace->keep_attentions) trace->attentions.push_back(delta.value());
  const MatmulPrecision precision = s.ctx->precision;
  return merge_heads(matmul(delta, heads_view(x, s.heads, s.head_dim), false, false, 1.0, precision), precision);
}

}  // namespace

// The unified form of the locality/symmetry paper's Eq. 5, which every
// variant takes (nn/position.h): the scores are a contextual term gamma plus
// the positional terms delta, s_ij = (gamma_ij + delta_ij) / sqrt(d) (the
// paper's alpha_ij), weighed by softmax as its Eq. 1: o_i = sum_j
// softmax_j(s_ij) v_j. Only gamma is scaled here: a variant's score terms
// come at the scale its own paper gives them (TUPE's / sqrt(2d), T5's
// unscaled bias).
Var SelfAttention::forward(const Var& x, const Var& padding_mask, PositionEncoding& pe, int layer,
                           const Tensor& positions, const Tensor& segments, Context& ctx, ForwardTrace* trace,
                           bool first_row_only) const {
  AttentionState s{layer, heads_, head_dim_, &positions, &segments, &ctx, x.dtype()};
  const Ablation ablate = ablation_in_force(pe, ctx);
  if (pe.combine == Combine::sequence) return sequence_attention(x, padding_mask, pe, s, ablate, trace);
  if (ablate != Ablation::none) return ablated_attention(x, padding_mask, pe, s, ablate, trace);

  const bool fused =
      runs_fused(pe, head_dim_, x.device(), ctx) && !(trace && (trace->keep_scores || trace->keep_attentions));
  // Under bf16 products, a variant that leaves q, k and v alone (its
  // position is in the input, or its terms are of the positions alone) has
  // them made as bf16 operands in one pass (the CPU's evaluation path,
  // attention_inference, takes them so too).
  const MatmulPrecision precision = ctx.precision;
  const bool heads_to_products = !fused && precision == MatmulPrecision::bf16 && x.dtype() == DType::f32 &&
                                 !(pe.acts_in_attention && pe.reads_query_key()) && !pe.adds_segment_scores();
  Heads h = project(x, ctx, ctx.fused, heads_to_products);        // q_i = x_i W^Q, k_j = x_j W^K, v_j = x_j W^V
  if (fused) {
    // All below in one kernel per direction.
    const Var out = merge_heads(fused_attention(h, padding_mask, pe, s), precision);
    return first_row_only ? slice(out, 1, 0, 1) : out;            // (its kernels take every query row)
  }
  if (first_row_only) h.q = slice(h.q, 2, 0, 1);                  // i = 0 alone; every j
  pe.rotate(s, h.q, h.k);                                         // RoPE: position inside q and k
  const Var own = pe.contextual_scores(s, h.q, h.k);              // Huang et al.'s, else undefined
  if (!own.defined() && runs_inference_attention(pe, x.device(), ctx, trace)) {
    // Its output goes to the output projection's product alone: under bf16
    // products it is written as that operand.
    const Var bias = pe.score_bias(s, h.q, h.k);
    const DType out_dtype = precision == MatmulPrecision::bf16 && x.dtype() == DType::f32 ? DType::bf16 : DType::f32;
    return Var(attention_inference(h.q.value(), h.k.value(), h.v.value(),
                                   padding_mask.defined() ? padding_mask.value() : Tensor(), pe.score_scale(s),
                                   bias.defined() ? bias.value() : Tensor(), out_dtype, precision));
  }
  Var scores = scaled_contextual_term(pe, s, own, h.q, h.k);      // gamma_ij / sqrt(d)
  const Var delta = pe.score_bias(s, h.q, h.k);
  scores = sum_of_defined(scores, delta);                         // s_ij = ... + delta_ij (+ per-head segments)
  Var probs = attention_probs(scores, padding_mask, ctx, trace,   // a_ij = softmax_j(s_ij + mask)
                              !own.defined() && !delta.defined(), !pe.has_value_term());
  if (!pe.has_value_term())                                       // o_i = sum_j a_ij v_j, the projection's operand
    return merge_heads(matmul_to_operand(probs, h.v, precision), precision, /*from_product=*/true);
  Var context = matmul(probs, h.v, false, false, 1.0, precision);  // o_i = sum_j a_ij v_j
  context = sum_of_defined(context, pe.value_term(s, probs));     // + the value term (Shaw's sum_j a_ij a^V_ij)
  return merge_heads(context, precision);
}

// The terms of forward()'s unfused ops given to the fused attention: the
// variant's (PositionEncoding::fused_terms, RoPE's rotation among them: h is
// as projected), the contextual term's scale, the
// mask (attention_bias's: a [B, 1, 1, L] padding mask, or [B, 1, L, L] with
// the causal mask, whose last row is the padding) and the dropout of the
// probabilities, on the stream the unfused dropout would take.
Var SelfAttention::fused_attention(const Heads& h, const Var& padding_mask, PositionEncoding& pe,
                                   const AttentionState& s) const {
  PositionEncoding::FusedTerms f;
  if (pe.acts_in_attention || pe.adds_segment_scores()) pe.fused_terms(s, h.q, h.k, f);
  AttentionTerms& t = f.terms;
  t.scale = pe.score_scale(s);
  // Under bf16 products a CUDA device runs the terms it can on tensor-core
  // tiles (attention_runs_on_tiles), rounding what the unfused ops round.
  t.bf16_products = s.ctx->precision == MatmulPrecision::bf16 && h.q.dtype() == DType::f32;
  if (padding_mask.defined()) {
    const Tensor& m = padding_mask.value();
    const int64_t length = m.size(3);
    t.causal = m.size(2) > 1;
    t.key_bias = (t.causal ? m.slice(2, length - 1, length) : m).reshape({m.size(0), 1, length});
  }
  if (s.ctx->training && dropout_ > 0) {
    const PhiloxStream stream = s.ctx->take_stream();
    t.dropout = dropout_;
    t.seed = stream.seed;
    t.stream = stream.offset;
    t.stream_base = stream.base;  // a CUDA graph's replays draw the next step's masks
  }
  return attention(h.q, h.k, h.v, f.vars, t);
}

// Fused: q, k and v from one product (x rounded once, the three weights
// stacked, the three biases in its output), each a view of its columns, so
// that x's gradient is one product too, added by it onto the residual's (which
// arrives first), and q, k and v's gradients are written into one buffer
// (Var::backward's tiling slices, or their products' places in it) without adds.
SelfAttention::Heads SelfAttention::project(const Var& input, const Context& ctx, bool fused, bool to_products) const {
  if (!fused)
    return {heads_view(query.forward(input, ctx), heads_, head_dim_),
            heads_view(key.forward(input, ctx), heads_, head_dim_),
            heads_view(value.forward(input, ctx), heads_, head_dim_)};
  std::vector<Var> biases;
  if (query.bias && key.bias && value.bias) biases = {query.bias->var, key.bias->var, value.bias->var};
  ORDO_CHECK(biases.size() == 3 || (!query.bias && !key.bias && !value.bias),
             "SelfAttention: the query, key and value projections have a bias each or none");
  const std::vector<Var> weights{query.weight.var, key.weight.var, value.weight.var};
  if (to_products) {
    // [3, B, H, L, d]: q, k, v one after another, each contiguous.
    const Var heads = split_heads(linear_stacked(input, weights, {}, ctx.precision), biases, 3, heads_,
                                  /*as_operand=*/true, /*x_is_product=*/true, ctx.precision);
    return {select(heads, 0, 0), select(heads, 0, 1), select(heads, 0, 2)};
  }
  const Var qkv = linear_stacked(input, weights, biases, ctx.precision);
  // [B, L, 3 H d] -> [B, L, 3, H, d]; q, k, v the three [B, L, H, d] parts as [B, H, L, d].
  const Var parts = reshape(qkv, {qkv.size(0), qkv.size(1), 3, heads_, head_dim_});
  auto part = [&](int64_t i) { return permute(select(parts, 2, i), {0, 2, 1, 3}); };
  return {part(0), part(1), part(2)};
}

Var SelfAttention::attention_probs(const Var& scores, const Var& padding_mask, Context& ctx, ForwardTrace* trace,
                                   bool scores_is_product, bool probs_to_products) const {
  if (trace && trace->keep_scores) trace->scores.push_back(scores.value());
  const bool dropped = ctx.training && dropout_ > 0;  // as nn::dropout: a stream taken only then
  // The probabilities' f32 values only for a trace that keeps them: else,
  // under bf16 products, the softmax keeps their bf16 rounding for its backward.
  const bool keep = trace && trace->keep_attentions;
  Tensor probs;
  Var out = softmax_dropout(scores, padding_mask, dropped ? dropout_ : 0.0,
                            dropped ? ctx.take_stream() : PhiloxStream{}, scores_is_product, probs_to_products,
                            keep ? &probs : nullptr, ctx.precision);
  if (keep) trace->attentions.push_back(probs);
  return out;
}

// The ablations at the attention level (the locality/symmetry paper, section
// 4.1 and Table 7): Eq. 5 with one term dropped. gamma = scale * q_i . k_j on
// q, k as projected (a rotating variant's gamma is on the unrotated q, k);
// delta = the variant's score terms (score_bias).
//   positional (BERT-c / only-c): gamma alone, and no value vectors (they
//     are positional information too);
//   contextual (BERT-p / only-p): delta alone; the values and the value term
//     stay ("hide gamma instead of removing the contextual encodings").
// A variant with its own contextual term (Huang et al.'s products q k w_r)
// has no such split: either ablation is an error. An input-level encoding is
// ablated at the input instead (BertModel::forward).
Var SelfAttention::ablated_attention(const Var& x, const Var& padding_mask, PositionEncoding& pe,
                                     const AttentionState& s, Ablation ablate, ForwardTrace* trace) const {
  Heads h = project(x, *s.ctx, /*fused=*/false);
  const Var q_plain = h.q, k_plain = h.k;
  pe.rotate(s, h.q, h.k);
  const bool rotates = h.q.state() != q_plain.state() || h.k.state() != k_plain.state();
  ORDO_CHECK(!pe.contextual_scores(s, h.q, h.k).defined(), "pe '", pe.name(), "': the ", ablation_name(ablate),
             " ablation is undefined: the variant computes its own contextual term (a product of q_i . k_j with",
             " position, not a sum of a contextual and a positional term), so there is no term to drop");
  Var scores = ablate == Ablation::positional ? scores_without_positional_terms(pe, s, q_plain, k_plain)
                                              : positional_term_alone(pe, s, h.q, h.k, rotates);
  Var probs = attention_probs(scores, padding_mask, *s.ctx, trace, false,
                              !(ablate == Ablation::contextual && pe.has_value_term()));
  Var context = matmul(probs, h.v, false, false, 1.0, s.ctx->precision);
  if (ablate == Ablation::contextual) context = sum_of_defined(context, pe.value_term(s, probs));
  return merge_heads(context, s.ctx->precision);
}

// combine = sequence: X' = CA(PA(X)) (the locality/symmetry paper, Eq. 10,
// Listings 2-3). PA mixes the layer's input with the variant's positional
// weights (positional_attention); CA is Eq. 5 with delta removed: scale *
// q_i . k_j of PA(X)'s projections, no rotation, no score terms, no value
// vectors. The ablations drop one of the two attentions: contextual keeps
// PA(X) alone (Listing 2's positional encoder, App. B.4: the attention of
// Figure 2's sweep), positional keeps CA(X) alone. A trace keeps the
// attention that decides the output (CA's; PA's delta when it is alone).
Var SelfAttention::sequence_attention(const Var& x, const Var& padding_mask, PositionEncoding& pe,
                                      const AttentionState& s, Ablation ablate, ForwardTrace* trace) const {
  if (ablate == Ablation::contextual) return positional_attention(x, padding_mask, pe, s, trace);
  const Var input = ablate == Ablation::positional ? x : positional_attention(x, padding_mask, pe, s, nullptr);
  Heads h = project(input, *s.ctx, s.ctx->fused);
  Var scores = scores_without_positional_terms(pe, s, h.q, h.k);
  Var probs = attention_probs(scores, padding_mask, *s.ctx, trace, false, true);
  const MatmulPrecision precision = s.ctx->precision;
  return merge_heads(matmul(probs, h.v, false, false, 1.0, precision), precision);
}

ResidualOutput::ResidualOutput(int64_t in, const BertConfig& c, Device device)
    : dense(add_module("dense", std::make_unique<Linear>(in, c.hidden_size, c.initializer_range, device))),
      dropout_(c.hidden_dropout_prob) {
  if (!c.pre_layer_norm) norm = &add_module("LayerNorm", std::make_unique<LayerNorm>(c.hidden_size, c.layer_norm_eps, device));
}

Var ResidualOutput::forward(const Var& h, const Var& residual, Context& ctx) const {
  if (norm && ctx.fused) {
    // The dropout's stream is taken exactly when the unfused dropout takes one.
    const double p = ctx.training ? dropout_ : 0.0;
    const PhiloxStream stream = p > 0 ? ctx.take_stream() : PhiloxStream{};
    // The product's output in bf16 under bf16 products (the kernel widens it
    // as it reads it): what autocast keeps; the residual stream stays FP32.
    return residual_layernorm(dense.product(h, ctx, /*as_operand=*/true), dense.bias ? dense.bias->var : Var(),
                              residual, norm->weight.var, norm->bias.var, norm->eps, p, stream,
                              /*h_is_product=*/true, ctx.precision);
  }
  Var sum = add(dropout(dense.forward(h, ctx), dropout_, ctx), residual);
  return norm ? norm->forward(sum) : sum;
}

Attention::Attention(const BertConfig& c, Device device)
    : self(add_module("self", std::make_unique<SelfAttention>(c, device))),
      output(add_module("output", std::make_unique<ResidualOutput>(c.hidden_size, c, device))) {}

Intermediate::Intermediate(const BertConfig& c, Device device)
    : dense(add_module("dense", std::make_unique<Linear>(c.hidden_size, c.intermediate_size, c.initializer_range, device))),
      act_(parse_activation(c.hidden_act)) {}

// ---- layers ------------------------------------------------------------------------

EncoderLayer::EncoderLayer(const BertConfig& c, Device device)
    : attention(add_module("attention", std::make_unique<Attention>(c, device))),
      intermediate(add_module("intermediate", std::make_unique<Intermediate>(c, device))),
      output(add_module("output", std::make_unique<ResidualOutput>(c.intermediate_size, c, device))),
      pre_ln_(c.pre_layer_norm) {
  if (pre_ln_) {
    attention_norm_ = &add_module("attention_LayerNorm", std::make_unique<LayerNorm>(c.hidden_size, c.layer_norm_eps, device));
    ffn_norm_ = &add_module("output_LayerNorm", std::make_unique<LayerNorm>(c.hidden_size, c.layer_norm_eps, device));
  }
}

Var EncoderLayer::forward(const Var& x, const Var& padding_mask, PositionEncoding& pe, int layer,
                          const Tensor& positions, const Tensor& segments, Context& ctx, ForwardTrace* trace,
                          bool first_row_only) const {
  Var a_in = pre_ln_ ? attention_norm_->forward(x) : x;
  Var a = attention.self.forward(a_in, padding_mask, pe, layer, positions, segments, ctx, trace, first_row_only);
  Var h = attention.output.forward(a, first_row_only ? slice(x, 1, 0, 1) : x, ctx);
  Var f_in = pre_ln_ ? ffn_norm_->forward(h) : h;
  return output.forward(intermediate.forward(f_in, ctx), h, ctx);
}

Embeddings::Embeddings(const BertConfig& c, Device device)
    : word_embeddings(add_module("word_embeddings", std::make_unique<Embedding>(c.vocab_size, c.hidden_size,
                                                                               c.initializer_range, device, c.pad_token_id))),
      token_type_embeddings(c.segment == "per_head" || c.type_vocab_size == 0
                                ? nullptr
                                : &add_module("token_type_embeddings", std::make_unique<Embedding>(
                                                                           c.type_vocab_size, c.hidden_size, c.initializer_range, device))),
      norm(c.embedding_layer_norm
               ? &add_module("LayerNorm", std::make_unique<LayerNorm>(c.hidden_size, c.layer_norm_eps, device))
               : nullptr) {}

Encoder::Encoder(const BertConfig& c, Device device) {
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    layers.push_back(&add_module("layer." + std::to_string(l), std::make_unique<EncoderLayer>(c, device)));
}

Pooler::Pooler(const BertConfig& c, Device device)
    : dense(add_module("dense", std::make_unique<Linear>(c.hidden_size, c.hidden_size, c.initializer_range, device))) {}

Var Pooler::forward(const Var& sequence, const Context& ctx) const {
  return tanh(dense.forward(select(sequence, 1, 0), ctx));
}

// ---- the model -----------------------------------------------------------------------

BertModel::BertModel(const BertConfig& config, std::unique_ptr<PositionEncoding> pe, Device device, bool with_pooler)
    : embeddings(add_module("embeddings", std::make_unique<Embeddings>(config, device))),
      encoder(add_module("encoder", std::make_unique<Encoder>(config, device))),
      config_(config),
      device_(device) {
  validate(config, "model config");
  ORDO_CHECK(pe != nullptr, "BertModel: no position encoding given");
  ORDO_CHECK((config.segment == "per_head") == pe->adds_segment_scores(), "BertModel: segment is '", config.segment,
             "' but the position encoding ", pe->adds_segment_scores() ? "adds" : "does not add",
             " per-head segment scores; make it with pe::make_position_encoding");
  if (with_pooler) pooler = &add_module("pooler", std::make_unique<Pooler>(config, device));
  if (config.pre_layer_norm)
    final_norm = &add_module("encoder.final_LayerNorm", std::make_unique<LayerNorm>(config.hidden_size, config.layer_norm_eps, device));
  std::string path = pe->module_path();
  pe_ = &add_module(path, std::move(pe));
  encoder_weights_ = pack_product_weights(encoder);
}

namespace {

// The facts of inputs made without them: the default positions and segments
// are known; given ones are read to the host once for the whole forward.
InputFacts read_facts(const BertInputs& in, int64_t batch, int64_t length) {
  Tensor positions = in.positions.defined() ? in.positions.to(Device::cpu()).contiguous()
                                            : default_positions(batch, length, Device::cpu());
  Tensor segments = in.segment_ids.defined() ? in.segment_ids.to(Device::cpu()).contiguous() : Tensor();
  return input_facts(positions.data<int64_t>(), segments.defined() ? segments.data<int64_t>() : nullptr, batch,
                     length);
}

// Puts a forward's facts in its Context, with an empty Context::layer_shared,
// and takes them out after it.
class FactsScope {
 public:
  FactsScope(Context& ctx, const InputFacts& facts)
      : ctx_(ctx), before_(ctx.facts), shared_before_(std::move(ctx.layer_shared)) {
    ctx_.facts = facts;
    ctx_.layer_shared.clear();  // this forward's own
  }
  ~FactsScope() {
    ctx_.facts = before_;
    ctx_.layer_shared = std::move(shared_before_);
  }
  FactsScope(const FactsScope&) = delete;
  FactsScope& operator=(const FactsScope&) = delete;

 private:
  Context& ctx_;
  std::optional<InputFacts> before_;
  std::map<std::string, Var> shared_before_;
};

}  // namespace

Var BertModel::forward(const BertInputs& in, Context& ctx, ForwardTrace* trace) const {
  return forward(in, ctx, trace, /*first_row_only=*/false);
}

Var BertModel::forward_first_row(const BertInputs& in, Context& ctx) const {
  // Row 0's output needs every row's keys and values in the last layer, and
  // its own query; nothing else of that layer. Where the encoding acts in the
  // attention its terms are laid out for every query row, so those keep the
  // whole forward, as training (whose dropout masks are laid out by the full
  // shape) and a forward that records a gradient do.
  const PositionEncoding& pe = *pe_;
  const bool first_row_only = !ctx.training && !grad_enabled() && !config_.decoder && !pe.acts_in_attention &&
                              !pe.adds_segment_scores() && pe.combine == Combine::add &&
                              ablation_in_force(pe, ctx) == Ablation::none;
  return forward(in, ctx, nullptr, first_row_only);
}

Var BertModel::forward(const BertInputs& in, Context& ctx, ForwardTrace* trace, bool first_row_only) const {
  check_dtype(in.input_ids, DType::i64, "BertModel", "input_ids");
  check_dim(in.input_ids, 2, "BertModel", "input_ids");
  const int64_t batch = in.input_ids.size(0), length = in.input_ids.size(1);
  const Shape shape{batch, length};
  for (const Tensor* t : {&in.segment_ids, &in.positions, &in.attention_mask}) {
    if (!t->defined()) continue;
    check_shape(*t, shape, "BertModel", "segment_ids/positions/attention_mask");
    check_dtype(*t, DType::i64, "BertModel", "segment_ids/positions/attention_mask");
  }
  ORDO_CHECK(in.input_ids.device() == device_, "BertModel: inputs are on ", in.input_ids.device().str(),
             ", the model on ", device_.str());
  // RoBERTa's default positions skip padding tokens, as HF counts them.
  BertInputs given = in;
  if (!given.positions.defined() && config_.position_offset > 0)
    given.positions = positions_skipping_padding(in.input_ids, config_.pad_token_id).to(device_);
  Tensor positions = given.positions.defined() ? given.positions : default_positions(batch, length, device_);
  Tensor segments = in.segment_ids.defined() ? in.segment_ids : Tensor::zeros(shape, DType::i64, device_);
  FactsScope facts(ctx, in.facts ? *in.facts : read_facts(given, batch, length));
  const OperandRoundingScope rounded(encoder_weights_ ? encoder_weights_->var.value() : Tensor(), ctx.precision,
                                     ctx.rounded_weights);

  // HF's order of the sums: (word + token type) + position. The ablations of
  // an input-level encoding act here, on the two terms of the locality/
  // symmetry paper's Eq. 2 (x_i + p_i): the positional one drops p_i (only-c,
  // BERT-c), the contextual one drops the token x_i (only-p) when the
  // encoding acts only at the input — with an attention-level part the
  // tokens stay and the scores lose q_i . k_j instead
  // (SelfAttention::ablated_attention). The segment embedding is neither and
  // stays.
  const Ablation ablate = ablation_in_force(*pe_, ctx);
  const bool drop_tokens = ablate == Ablation::contextual && !pe_->acts_in_attention;
  // A batch whose rows of positions are all the same (the forward's facts:
  // pretraining, fine-tuning and evaluation batches count 0, 1, ... in every
  // row) takes its position vectors for the first row alone, [1, L, D], and
  // the sum broadcasts them: the table is read for L rows instead of B L, and
  // its gradient is summed over the batch before it reaches the table (as
  // pe::distinct_position_rows does for the attention's terms).
  const Tensor position_rows = ctx.facts->rows_identical && batch > 1 ? positions.slice(0, 0, 1) : positions;
  PositionEncoding::InputLookup position_lookup;  // a table's rows, added below with the tokens'
  Var position_vectors;                           // or the vectors themselves
  if (ablate != Ablation::positional) {
    position_lookup = pe_->input_lookup(position_rows, ctx);
    if (!position_lookup.table.defined()) position_vectors = pe_->input_embedding(position_rows, ctx);
  }
  // With segment = per_head there is no segment embedding here (pe/segments.h).
  const Embedding* segment_table = embeddings.token_type_embeddings;
  const bool dropped = ctx.training && config_.hidden_dropout_prob > 0;  // as nn::dropout
  bool normed = false;  // the LayerNorm and dropout done with the lookups' sum
  Var x;
  if (!drop_tokens && config_.word_embedding_scale == 1.0) {
    // The lookups (word, token type, a learned position table) added in one
    // pass: the bits of the lookups and the adds below, in their order.
    std::vector<Var> tables{embeddings.word_embeddings.weight.var};
    std::vector<Tensor> ids{in.input_ids};
    std::vector<int64_t> padding_rows{embeddings.word_embeddings.padding_idx};
    if (segment_table) {
      tables.push_back(segment_table->weight.var);
      ids.push_back(segments);
      padding_rows.push_back(segment_table->padding_idx);
    }
    if (position_lookup.table.defined()) {
      tables.push_back(position_lookup.table);
      ids.push_back(position_lookup.rows);
      padding_rows.push_back(-1);
    }
    if (ctx.fused && embeddings.norm && !position_vectors.defined()) {
      // The sum, its LayerNorm and the dropout in one pass (the same bits).
      const LayerNorm& norm = *embeddings.norm;
      x = embedding_layernorm(tables, ids, padding_rows, norm.weight.var, norm.bias.var, norm.eps,
                              dropped ? config_.hidden_dropout_prob : 0.0, dropped ? ctx.take_stream() : PhiloxStream{});
      normed = true;
    } else {
      x = embedding_sum(tables, ids, padding_rows);
    }
  } else {
    Var tokens;
    if (!drop_tokens) tokens = affine(embeddings.word_embeddings.forward(in.input_ids), config_.word_embedding_scale);
    x = sum_of_defined(tokens, segment_table ? segment_table->forward(segments) : Var());
    if (position_lookup.table.defined()) position_vectors = embedding(position_lookup.table, position_lookup.rows);
  }
  ORDO_CHECK(!drop_tokens || position_vectors.defined(), "pe '", pe_->name(),
             "': the contextual ablation is undefined: the encoding has no positional term to keep");
  const DType dtype = embeddings.word_embeddings.weight.var.dtype();
  if (position_vectors.defined() && position_vectors.dtype() != dtype) {
    // A parameter-free encoding (ape_sin) is computed in its own precision
    // and takes the model's here; a learned one has its parameters' dtype.
    ORDO_CHECK(!position_vectors.requires_grad(), "pe '", pe_->name(), "': its input embedding is ",
               dtype_name(position_vectors.dtype()), " in a ", dtype_name(dtype), " model");
    position_vectors = Var(position_vectors.value().to(dtype));
  }
  x = sum_of_defined(x, position_vectors);
  if (x.size(0) != batch) x = contiguous(expand(x, {batch, length, x.size(2)}));  // the positions' term alone
  if (!normed) {
    if (embeddings.norm) x = embeddings.norm->forward(x, /*to_product=*/!dropped);
    x = dropout(x, config_.hidden_dropout_prob, ctx);
  }
  if (trace && trace->keep_hidden_states) trace->hidden_states.push_back(x.value());

  Var mask;
  if (in.padding_bias.defined() && !config_.decoder) {
    check_shape(in.padding_bias, {batch, 1, 1, length}, "BertModel", "padding_bias");
    check_dtype(in.padding_bias, x.dtype(), "BertModel", "padding_bias");
    ORDO_CHECK(in.padding_bias.device() == device_, "BertModel: padding_bias is on ", in.padding_bias.device().str(),
               ", the model on ", device_.str());
    mask = Var(in.padding_bias);
  } else {
    mask = Var(attention_bias(in.attention_mask, batch, length, config_.decoder, x.dtype(), device_));
  }
  for (size_t l = 0; l < encoder.layers.size(); ++l) {
    const bool last = l + 1 == encoder.layers.size();
    x = encoder.layers[l]->forward(x, mask, *pe_, static_cast<int>(l), positions, segments, ctx, trace,
                                   first_row_only && last);
    if (final_norm && last) x = final_norm->forward(x);
    if (trace && trace->keep_hidden_states) trace->hidden_states.push_back(x.value());
  }
  return x;
}

Tensor positions_skipping_padding(const Tensor& input_ids, int64_t pad) {
  const Tensor ids = input_ids.to(Device::cpu()).contiguous();
  const int64_t batch = ids.size(0), length = ids.size(1);
  std::vector<int64_t> p(static_cast<size_t>(batch * length));
  const int64_t* id = ids.data<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    int64_t real = 0;
    for (int64_t t = 0; t < length; ++t) {
      const size_t k = static_cast<size_t>(b * length + t);
      p[k] = id[k] == pad ? -1 : real++;
    }
  }
  return Tensor::from_vector(p, Shape{batch, length});
}

FusedAttention fused_attention() { return fused_switch(); }
void set_fused_attention(FusedAttention mode) { fused_switch() = mode; }

std::string unfused_attention_reason(const PositionEncoding& pe, const BertConfig& c, Device device) {
  return unfused_reason(pe, c.head_dim(), device);
}

std::string attention_kernels(const PositionEncoding& pe, const BertConfig& c, Device device) {
  const std::string why = unfused_attention_reason(pe, c, device);
  return why.empty() ? "fused kernels (one per layer and direction; no [B, H, L, L] in memory)" : "unfused ops (" + why + ")";
}

namespace {

// The roofline estimate of one fused forward and backward with these terms,
// the calls described as the kernel-call recorder would (tensor/kernel_calls.h).
// q: [B, H, L, d] (any values); tables: whether the backward's table pass
// runs; transient: the backward's scratch bytes.
double fused_attention_seconds(const AttentionTerms& terms, const Tensor& q, bool tables, double transient) {
  const Tensor lse = Tensor::empty({q.size(0), q.size(1), q.size(2)}, DType::f32, q.device());
  KernelCall forward, backward;
  forward.kernel = "attention_forward", backward.kernel = "attention_backward";
  // Two passes; then the tables': the pairs' keys, their sort and the pass over
  // them, or on the tiles the sum of the blocks' bins (or Shaw's vectors' pass
  // by distance and its sum into each table's rows).
  const bool on_tiles = attention_runs_on_tiles(terms, q.size(3)) && attention_table_grads_on_tiles(terms);
  const int vector_tables = terms.query_vectors.defined() + terms.value_vectors.defined();
  forward.launches = 1;
  backward.launches = !tables ? 2 : !on_tiles ? 5 : vector_tables > 0 ? 3 + vector_tables : 3;
  const Tensor none;  // out's bf16 rounding: not counted
  for (const Tensor* x : {&q, &none, &lse, &q, &q, &q})  // out, out_operand, lse, q, k, v
    detail::describe_argument(forward, *x);
  detail::describe_argument(forward, terms);
  AttentionGrads grads;
  if (tables) grads.table = lse;  // a table gradient: the third pass runs
  detail::describe_argument(backward, grads);
  for (const Tensor* x : {&q, &q, &q, &q, &q, &lse}) detail::describe_argument(backward, *x);  // gout, q, k, v, out, lse
  detail::describe_argument(backward, terms);
  backward.bytes += 3 * distinct_bytes(q) + transient;  // dq, dk, dv; D and the sort
  return roofline({forward, backward}, h100_sxm()).total.seconds;  // FP32 CUDA cores, or the tiles (the terms say)
}

}  // namespace

AttentionMemory attention_memory(PositionEncoding& pe, const BertConfig& c, int64_t batch, int64_t length,
                                 bool training) {
  const double f32 = 4, heads = static_cast<double>(c.num_attention_heads), B = static_cast<double>(batch),
               L = static_cast<double>(length);
  AttentionMemory m;
  m.qkvo = 4 * B * L * static_cast<double>(c.hidden_size) * f32;
  const bool dropout = training && c.attention_probs_dropout_prob > 0;
  m.unfused_kept = (dropout ? 2 : 1) * B * heads * L * L * f32;  // the probabilities, and after dropout
  m.unfused_transient = B * heads * L * L * f32;                  // the scores
  m.unfused_reason = unfused_reason(pe, c.head_dim(), Device::cuda(0));
  const bool fusable = capability_reason(pe, c.head_dim()).empty();  // the fused figures, whatever the switch
  // The terms of one call on the CPU, at these shapes.
  const Device cpu = Device::cpu();
  Tensor positions = default_positions(batch, length, cpu), segments = Tensor::zeros({batch, length}, DType::i64, cpu);
  Context ctx = Context::eval();
  std::vector<int64_t> host = positions.to_vector<int64_t>();
  ctx.facts = input_facts(host.data(), nullptr, batch, length);
  AttentionState s{0, c.num_attention_heads, c.head_dim(), &positions, &segments, &ctx, DType::f32};
  Var q(Tensor::zeros({batch, c.num_attention_heads, length, c.head_dim()}, DType::f32, cpu));
  PositionEncoding::FusedTerms f;
  if (fusable && (pe.acts_in_attention || pe.adds_segment_scores())) pe.fused_terms(s, q, q, f);
  const AttentionTerms& t = f.terms;
  m.fused_kept = B * heads * L * f32 + B * L * f32;  // lse; the mask [B, 1, L]
  for (const Var* v : {&f.vars.gate, &f.vars.product, &f.vars.query_vectors, &f.vars.key_vectors, &f.vars.table,
                       &f.vars.value_vectors, &f.vars.pos_query, &f.vars.pos_key, &f.vars.segment_table})
    if (v->defined()) m.fused_kept += distinct_bytes(v->value());
  for (const Tensor* x : {&t.dense_bias, &t.row_of, &t.positions, &t.segments})
    if (x->defined()) m.fused_kept += distinct_bytes(*x);
  m.fused_transient = B * heads * L * f32;  // D
  const Var* per_row[] = {&f.vars.gate, &f.vars.product, &f.vars.query_vectors, &f.vars.key_vectors, &f.vars.table,
                          &f.vars.value_vectors};
  bool learned = false, all_shared = true;  // tables whose gradients the backward forms
  for (const Var* v : per_row)
    if (v->defined() && v->requires_grad()) learned = true, all_shared = all_shared && v->size(0) == 1;
  if (learned && training) {
    m.fused_transient += 16 * B * L * L;  // keys and pairs, in and out of the sort
    for (const Var* v : per_row)
      if (v->defined() && v->requires_grad() && v->size(0) == 1 && !all_shared)
        m.fused_transient += heads * distinct_bytes(v->value());
  }
  if (!fusable) return m;
  AttentionTerms terms = f.vars.values_in(t);
  m.fused_seconds = fused_attention_seconds(terms, q.value(), learned && training, m.fused_transient);
  terms.bf16_products = true;
  if (!attention_runs_on_tiles(terms, c.head_dim())) return m;
  double tiles_transient = m.fused_transient;
  if (learned && training && attention_table_grads_on_tiles(terms)) {
    // In place of the sort: the blocks' bins [B, H, L / 32, table and gate
    // rows], or Shaw's vectors' sums by distance [2, H, 2 L - 1, d].
    const double rows = (terms.table.defined() ? static_cast<double>(terms.table.size(1)) : 0) +
                        (terms.gate.defined() ? static_cast<double>(terms.gate.size(1)) : 0);
    const bool vectors = terms.query_vectors.defined() || terms.value_vectors.defined();
    tiles_transient = B * heads * L * f32 + (vectors ? 2 * heads * (2 * L - 1) * static_cast<double>(c.head_dim()) * f32
                                                     : B * heads * std::ceil(L / 32) * rows * f32);
  }
  m.tiles_seconds = fused_attention_seconds(terms, q.value(), learned && training, tiles_transient);
  return m;
}

Tensor default_positions(int64_t batch, int64_t length, Device device) {
  return Tensor::arange(length, DType::i64).unsqueeze(0).expand({batch, length}).contiguous().to(device);
}

Tensor attention_bias(const Tensor& attention_mask, int64_t batch, int64_t length, bool causal, DType dtype,
                      Device device) {
  const double lowest = std::numeric_limits<float>::lowest();
  Tensor bias;
  if (attention_mask.defined()) {
    // (1 - mask) * lowest: 0 for real tokens, lowest for padding; [B, 1, 1, L].
    bias = affine_to(attention_mask, -lowest, lowest, dtype).reshape({batch, 1, 1, length});
  } else {
    bias = Tensor::zeros({batch, 1, 1, length}, dtype, device);
  }
  if (!causal) return bias;
  // Key j after query i is hidden: lowest where j > i.
  std::vector<float> future(static_cast<size_t>(length * length), 0.0f);
  for (int64_t i = 0; i < length; ++i)
    for (int64_t j = i + 1; j < length; ++j) future[i * length + j] = static_cast<float>(lowest);
  Tensor causal_bias = Tensor::from_vector(future, {1, 1, length, length}, device).to(dtype);
  // Adding two lowest values would overflow to -inf: take the minimum instead.
  return minimum(bias, causal_bias);
}

}  // namespace ordo::nn
