// The position-encoding seam: what attention asks of a position encoding.
//
// Attention is written in the unified form of the locality/symmetry paper
// (Eq. 5): the pre-softmax scores are a contextual term plus positional
// terms, and a position encoding may contribute to any stage:
//
//   x_i      = token_i + segment_i + input_embedding(p_i)        (absolute, at the input)
//   q, k     = rotate(q, k, p)                                    (RoPE)
//   s_ij     = scale * contextual(q_i, k_j, p_i, p_j)             (q.k, or Huang's products)
//            + score_bias(q, k, p)_ij                             (scalars, q.a, TUPE, ...)
//   a_ij     = softmax_j(s_ij + padding mask)
//   o_i      = sum_j a_ij v_j + value_term(a, p)_i                (Shaw's value vectors)
//
// Positions are an explicit [batch, length] integer tensor, never implied by
// an index, so shifted, scaled or longer-than-training positions need no
// special case. The layer index lets a variant keep per-layer tables or
// share them. Every hook has a do-nothing default: a variant overrides the
// stages it changes. The variants themselves live in pe/.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/ops.h"
#include "nn/module.h"

namespace ordo::nn {

// How the positional and the contextual weights combine (the locality/
// symmetry paper, section 5): add them in one softmax (Eq. 5, every paper's
// default), or in sequence X' = CA(PA(X)) (Eq. 10, Listings 2-3): positional
// attention mixes the layer's input with positional_weights(), then
// contextual attention runs on the result with the positional score terms
// removed. nn/bert.cpp, SelfAttention::sequence_attention.
enum class Combine { add, sequence };

// The ablations of the locality/symmetry paper (section 4.1, App. C.2): drop
// the contextual term gamma or the positional term delta of the scores
// s = (gamma + delta) / sqrt(d) (its Eq. 5). What each term is for an
// input-level and an attention-level encoding: EQUATIONS.md, "TUPE,
// segments, combination and ablations", and nn/bert.cpp.
//   contextual: gamma dropped, the scores are delta alone (BERT-p at inference, only-p in training)
//   positional: delta dropped, the scores are gamma alone (BERT-c at inference, only-c in training)
// Under combine = sequence they drop one of the two attentions instead:
// contextual keeps PA alone, positional CA alone (nn/bert.cpp).
// none is 0: Context (nn/module.h, which only declares the type) starts there.
enum class Ablation { none = 0, contextual, positional };
static_assert(Ablation{} == Ablation::none, "Context::ablate's default must be none");
Ablation parse_ablation(const std::string& name, const std::string& where);
const char* ablation_name(Ablation a);

// What a hook sees of one attention call.
struct AttentionState {
  int layer = 0;              // 0-based
  int64_t heads = 0, head_dim = 0;
  const Tensor* positions = nullptr;  // [batch, length] i64
  const Tensor* segments = nullptr;   // [batch, length] i64 segment ids (0 / 1)
  Context* ctx = nullptr;
  // The model's dtype (of x and the scores): what a parameter-free variant
  // computes in when no q or k tells it (positional_weights).
  DType dtype = DType::f32;
};

class PositionEncoding : public Module {
 public:
  // The registry name ("ape_learned", "none", ...).
  virtual std::string name() const = 0;
  // Where the model registers this module, which prefixes its parameters'
  // names: HF's "embeddings.position_embeddings" for the learned absolute
  // table, "position_encoding" by default.
  virtual std::string module_path() const { return "position_encoding"; }

  // [batch, length, hidden] added to the token and segment embeddings, or an
  // undefined Var for none.
  virtual Var input_embedding(const Tensor& positions, Context& ctx) {
    (void)positions, (void)ctx;
    return {};
  }
  // The input embedding when it is a lookup: input_embedding(positions) is
  // then embedding(table, rows) (rows checked as it checks them), which the
  // model adds to the token and segment lookups in one pass
  // (embedding_sum). An undefined table: not a lookup.
  struct InputLookup {
    Var table;
    Tensor rows;
  };
  virtual InputLookup input_lookup(const Tensor& positions, Context& ctx) {
    (void)positions, (void)ctx;
    return {};
  }

  // Rotates q and k ([batch, heads, length, head_dim]) in place of the originals.
  virtual void rotate(const AttentionState& s, Var& q, Var& k) { (void)s, (void)q, (void)k; }

  // The contextual term s_ij before scaling, [batch, heads, length, length],
  // or undefined for the plain q_i . k_j.
  virtual Var contextual_scores(const AttentionState& s, const Var& q, const Var& k) {
    (void)s, (void)q, (void)k;
    return {};
  }

  // The factor applied to the contextual term: 1/sqrt(head_dim) by default.
  virtual double score_scale(const AttentionState& s) const;

  // Terms added to the scaled scores, broadcastable to [batch, heads, length,
  // length]; undefined for none. They enter the softmax as its additive mask,
  // so a learned bias is differentiated through it.
  virtual Var score_bias(const AttentionState& s, const Var& q, const Var& k) {
    (void)s, (void)q, (void)k;
    return {};
  }

  // Added to the attention output sum_j a_ij v_j, [batch, heads, length,
  // head_dim]; undefined for none.
  virtual Var value_term(const AttentionState& s, const Var& probs) {
    (void)s, (void)probs;
    return {};
  }
  // Whether value_term() adds anything (known before the probabilities are):
  // the CPU's evaluation path (nn/bert.cpp) never forms them for the batch.
  // A wrapper that forwards value_term() forwards this too (tests/pe/
  // test_configs.cpp compares that path with the batch's ops for every config).
  virtual bool has_value_term() const { return false; }
  // Whether the attention-level hooks (of a variant acting in the attention)
  // read q and k as values: a rotation, a contextual product of their own,
  // q . a, XLNet's terms. A variant whose terms are of the positions alone
  // (scalar biases, TUPE's positional term) says false: under bf16 products
  // q, k and v are then made as the products' bf16 operands in one pass
  // (nn/bert.cpp), as for an input-level encoding. A wrapper forwards it.
  virtual bool reads_query_key() const { return true; }

  // The positional weights as an attention distribution over keys (rows sum
  // to 1), [1 or batch, heads, length, length], for the sequence combination
  // X' = CA(PA(X)) of the locality/symmetry paper (Eq. 10): PA mixes the
  // input with these weights, then contextual attention runs on the result.
  // Undefined for variants that cannot act alone as positional attention.
  virtual Var positional_weights(const AttentionState& s) {
    (void)s;
    return {};
  }

  // ---- the fused attention (autograd/ops.h: attention; tensor/attention_terms.h) ----
  // A variant whose score terms, contextual term and value term have a fused
  // form gives them here, in place of rotate() (q and k are as projected),
  // contextual_scores(), score_bias() and value_term(): the learned ones as Vars (their gradients
  // flow back through them), the rest in `terms` (scale, masks, dropout are
  // the attention's own). fused_support() says beforehand whether it can: ""
  // when it can, otherwise why not (the attention then runs the unfused
  // hooks, and the run header says so).
  struct FusedTerms {
    AttentionVars vars;
    AttentionTerms terms;
  };
  virtual std::string fused_support() const {
    return acts_in_attention ? name() + "'s attention terms have no fused form" : "";
  }
  virtual void fused_terms(const AttentionState& s, const Var& q, const Var& k, FusedTerms& out) {
    (void)s, (void)q, (void)k, (void)out;
  }

  // The longest position an absolute table can look up (positions beyond it
  // are an error); -1 when any position works (relative and functional variants).
  virtual int64_t max_position() const { return -1; }

  // True when the encoding adds per-head segment scores (Chen et al. 2021,
  // Eq. 9-11; model option segment = per_head, pe/segments.h): the model then
  // has no token-type embedding at the input.
  virtual bool adds_segment_scores() const { return false; }
  // Those per-head segment scores alone, [batch, heads, L, L], undefined
  // without them. score_bias() already includes them; the paths that drop
  // the positional score terms (the positional ablation, contextual attention
  // of the sequence combination) add them back from here, since segments are
  // neither the contextual nor the positional term.
  virtual Var segment_scores(const AttentionState& s) const {
    (void)s;
    return {};
  }

  // ---- what the analyses of learned positions ask (probe/analyze_*.cpp) ----
  // Each variant answers for itself, so an analysis needs neither its name
  // nor the layout of its parameters. An undefined tensor: it has none.

  // Per-offset vectors a_r (r = key position - query position), row k
  // holding r = first_offset + k: f64 on the CPU, [rows, width].
  struct OffsetVectors {
    Tensor vectors;
    int64_t first_offset = 0;
    std::string source;  // what they are, for captions ("a^K (rpe_shaw key table of layer 1, offsets -15..15)")
  };
  // Layer `layer`'s vectors (its first head's where heads differ) for the
  // offsets |r| <= span that the variant tells apart (within its clip or table).
  virtual OffsetVectors offset_vectors(int layer, int64_t span) const {
    (void)layer, (void)span;
    return {};
  }

  // A learnable sinusoid's frequencies w_i: the fixed ones it starts from and
  // the learned ones now, f64 on the CPU, [width / 2] each.
  struct LearnedFrequencies {
    Tensor fixed, learned;
    std::string source;  // which sinusoid, for captions ("ape_sin_learnable (D = 128)")
  };
  // Those of layer `layer` (its first head's where heads differ).
  virtual LearnedFrequencies learned_frequencies(int layer) const {
    (void)layer;
    return {};
  }

  // Set by the registry (pe::make_position_encoding) from the variant's level
  // and the options every variant shares (pe_options "combine" and "ablate"):
  // where the encoding acts (an INPUT+ATTENTION composite acts at both), how
  // it combines with the contextual weights, and a training-time ablation
  // (only-p / only-c of the locality/symmetry paper, Table 7).
  bool acts_at_input = false, acts_in_attention = false;
  Combine combine = Combine::add;
  Ablation ablation = Ablation::none;

  // A constant the variant computes on the host (frequencies, slopes, the
  // fused terms' index rows, masks) as a tensor of `shape` on `device` in
  // `dtype`: made once per content and kept, so a steady step copies nothing
  // from the host — a CUDA graph refuses such a copy inside its capture
  // (tensor/cuda/runtime.cu) — and the step can be captured. Thread-safe.
  const Tensor& constant(const std::vector<double>& values, const Shape& shape, DType dtype, Device device) const;
  const Tensor& constant(const std::vector<int64_t>& values, const Shape& shape, Device device) const;  // i64

 private:
  mutable std::mutex constants_mutex_;
  mutable std::unordered_map<std::string, Tensor> constants_;  // by dtype, device, shape and the values' bytes
};

}  // namespace ordo::nn
