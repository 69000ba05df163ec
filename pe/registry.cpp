#include "pe/registry.h"

#include <algorithm>
#include <functional>

#include "base/config.h"
#include "base/strings.h"
#include "nn/bert.h"
#include "pe/absolute.h"
#include "pe/attenuated.h"
#include "pe/huang.h"
#include "pe/relative.h"
#include "pe/rope.h"
#include "pe/scalar_bias.h"
#include "pe/segments.h"
#include "pe/sinusoid.h"
#include "pe/tupe.h"
#include "pe/xlnet.h"

namespace ordo::pe {

namespace {

enum class Level { input, attention };

// How a variant is made: its options are read from `options` (each variant
// reads the keys it knows; any key left unread is an error afterwards).
using Factory = std::function<std::unique_ptr<nn::PositionEncoding>(const nn::BertConfig&, FieldReader& options, Device)>;

struct Variant {
  std::string name;
  Level level;
  Factory make;
};

// Every variant, by name. Input-level variants add a vector to the
// embeddings; attention-level ones act inside self-attention. One of each
// can be combined as "INPUT+ATTENTION" (Wang et al. 2021 build 13
// configurations this way). Adding a variant: pe/README.md.
const std::vector<Variant>& variants() {
  static const std::vector<Variant> all = {
      {"none", Level::input, [](const nn::BertConfig&, FieldReader&, Device) { return std::make_unique<NoPosition>(); }},
      {"ape_learned", Level::input,
       [](const nn::BertConfig& c, FieldReader&, Device d) { return std::make_unique<LearnedAbsolute>(c, d); }},
      // Relative vectors and interactions (pe/relative.h, pe/xlnet.h, pe/huang.h).
      {"rpe_shaw", Level::attention, make_rpe_shaw},
      {"rpe_sin", Level::attention, make_rpe_sin},
      {"rpe_sin_learnable", Level::attention, make_rpe_sin_learnable},
      {"xlnet", Level::attention, make_xlnet},
      {"huang_m1", Level::attention, make_huang_m1},
      {"huang_m2", Level::attention, make_huang_m2},
      {"huang_m3", Level::attention, make_huang_m3},
      {"huang_m4", Level::attention, make_huang_m4},
      {"ape_sin", Level::input,
       [](const nn::BertConfig& c, FieldReader& o, Device d) {
         return std::make_unique<SinusoidalAbsolute>(c, false, o.number("amplitude", 1, 1e-9, 1e9), d);
       }},
      {"ape_sin_learnable", Level::input,
       [](const nn::BertConfig& c, FieldReader& o, Device d) {
         return std::make_unique<SinusoidalAbsolute>(c, true, o.number("amplitude", 1, 1e-9, 1e9), d);
       }},
      {"t5_bias", Level::attention,
       [](const nn::BertConfig& c, FieldReader& o, Device d) { return std::make_unique<T5Bias>(c, o, d); }},
      {"rel_scalar", Level::attention,
       [](const nn::BertConfig& c, FieldReader& o, Device d) { return std::make_unique<RelativeScalar>(c, o, d); }},
      {"abs_scalar", Level::attention,
       [](const nn::BertConfig& c, FieldReader& o, Device d) { return std::make_unique<AbsoluteScalar>(c, o, d); }},
      {"alibi", Level::attention,
       [](const nn::BertConfig& c, FieldReader& o, Device d) { return std::make_unique<Alibi>(c, o, d); }},
      {"attenuated", Level::attention,
       [](const nn::BertConfig& c, FieldReader& o, Device d) { return std::make_unique<Attenuated>(c, o, d); }},
      {"rope", Level::attention,
       [](const nn::BertConfig& c, FieldReader& o, Device d) { return std::make_unique<Rotary>(c, o, d); }},
      {"tupe", Level::attention,
       [](const nn::BertConfig& c, FieldReader& o, Device d) { return std::make_unique<Tupe>(c, o, d); }},
  };
  return all;
}

const Variant& find_variant(const std::string& name) {
  for (const Variant& v : variants())
    if (v.name == name) return v;
  throw Error("unknown position encoding '" + name + "': known variants are " + joined(variant_names(), ", ") +
              " (combine one input-level and one attention-level variant as INPUT+ATTENTION)");
}

// An input-level variant and an attention-level one acting together. Each
// keeps its own parameter names (the composite registers them under "").
class Composite : public nn::PositionEncoding {
 public:
  Composite(std::unique_ptr<nn::PositionEncoding> input, std::unique_ptr<nn::PositionEncoding> attention)
      : input_(adopt(std::move(input))), attention_(adopt(std::move(attention))) {}
  std::string name() const override { return input_.name() + "+" + attention_.name(); }
  std::string module_path() const override { return ""; }
  Var input_embedding(const Tensor& positions, nn::Context& ctx) override {
    return input_.input_embedding(positions, ctx);
  }
  InputLookup input_lookup(const Tensor& positions, nn::Context& ctx) override {
    return input_.input_lookup(positions, ctx);
  }
  void rotate(const nn::AttentionState& s, Var& q, Var& k) override { attention_.rotate(s, q, k); }
  Var contextual_scores(const nn::AttentionState& s, const Var& q, const Var& k) override {
    return attention_.contextual_scores(s, q, k);
  }
  double score_scale(const nn::AttentionState& s) const override { return attention_.score_scale(s); }
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override {
    return attention_.score_bias(s, q, k);
  }
  Var value_term(const nn::AttentionState& s, const Var& probs) override { return attention_.value_term(s, probs); }
  bool has_value_term() const override { return attention_.has_value_term(); }
  bool reads_query_key() const override { return attention_.reads_query_key(); }
  Var positional_weights(const nn::AttentionState& s) override { return attention_.positional_weights(s); }
  std::string fused_support() const override { return attention_.fused_support(); }
  void fused_terms(const nn::AttentionState& s, const Var& q, const Var& k, FusedTerms& out) override {
    attention_.fused_terms(s, q, k, out);
  }
  // The shorter of the two tables' reach (an attention-level variant such as
  // tupe has an absolute table too); -1 when neither has one.
  int64_t max_position() const override {
    int64_t a = input_.max_position(), b = attention_.max_position();
    return a < 0 ? b : b < 0 ? a : std::min(a, b);
  }
  OffsetVectors offset_vectors(int layer, int64_t span) const override {
    return attention_.offset_vectors(layer, span);
  }
  // The input part's learnable sinusoid, else the attention part's.
  LearnedFrequencies learned_frequencies(int layer) const override {
    LearnedFrequencies f = input_.learned_frequencies(layer);
    return f.fixed.defined() ? f : attention_.learned_frequencies(layer);
  }

 private:
  nn::PositionEncoding& adopt(std::unique_ptr<nn::PositionEncoding> part) {
    std::string path = part->module_path();  // read before the pointer is moved from
    return add_module(path, std::move(part));
  }

  nn::PositionEncoding& input_;
  nn::PositionEncoding& attention_;
};

}  // namespace

const std::vector<std::string>& variant_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Variant& v : variants()) n.push_back(v.name);
    return n;
  }();
  return names;
}

namespace {

// The options every variant takes, read before the variant's own: how its
// positional weights combine with the contextual ones (the locality/symmetry
// paper, Eq. 5 "add" or Eq. 10 "sequence") and a training-time ablation
// (only-p / only-c of its Table 7). nn/bert.cpp acts on them.
void read_shared_options(nn::PositionEncoding& pe, const nn::BertConfig& config, FieldReader& options,
                         Device device) {
  const std::string where = "pe_options of '" + config.pe + "'";
  std::string combine = options.string("combine", "add", {"add", "sequence"});
  pe.combine = combine == "sequence" ? nn::Combine::sequence : nn::Combine::add;
  pe.ablation = nn::parse_ablation(options.string("ablate", "none", {"none", "contextual", "positional"}), where);
  if (pe.combine == nn::Combine::sequence) {
    // Positional attention needs the variant's positional weights: asked for
    // once here, on two positions, so that a variant without them fails when
    // the model is built rather than at its first forward pass. On the
    // model's device: a variant without parameters keeps its fixed tensors there.
    NoGradGuard no_grad;
    Tensor positions = nn::default_positions(1, 2, device);
    Tensor segments = Tensor::zeros({1, 2}, DType::i64, device);
    nn::Context ctx = nn::Context::eval();
    nn::AttentionState s{0, config.num_attention_heads, config.head_dim(), &positions, &segments, &ctx};
    ORDO_CHECK(pe.positional_weights(s).defined(), where, ": combine = sequence needs positional weights (an",
               " attention distribution for the positional attention of Eq. 10), which '", config.pe,
               "' does not give; the variants that do: attenuated, alibi");
  }
}

}  // namespace

std::unique_ptr<nn::PositionEncoding> make_position_encoding(const nn::BertConfig& config, Device device) {
  FieldReader options(config.pe_options, "pe_options of '" + config.pe + "'");
  std::unique_ptr<nn::PositionEncoding> pe;
  size_t plus = config.pe.find('+');
  if (plus == std::string::npos) {
    const Variant& v = find_variant(config.pe);
    pe = v.make(config, options, device);
    pe->acts_at_input = v.level == Level::input;
    pe->acts_in_attention = v.level == Level::attention;
  } else {
    const Variant& input = find_variant(config.pe.substr(0, plus));
    const Variant& attention = find_variant(config.pe.substr(plus + 1));
    ORDO_CHECK(input.level == Level::input && attention.level == Level::attention, "pe '", config.pe,
               "': a combination is an input-level variant + an attention-level one ('",
               input.name, "' is ", input.level == Level::input ? "input" : "attention", "-level, '", attention.name,
               "' is ", attention.level == Level::input ? "input" : "attention", "-level)");
    pe = std::make_unique<Composite>(input.make(config, options, device), attention.make(config, options, device));
    pe->acts_at_input = pe->acts_in_attention = true;
  }
  if (config.segment == "per_head") {
    // Segments per head (Chen et al. 2021, Eq. 9-11): S_ij added to the
    // encoding's scores; where the encoding acts is unchanged.
    bool at_input = pe->acts_at_input, in_attention = pe->acts_in_attention;
    pe = std::make_unique<PerHeadSegments>(config, std::move(pe), device);
    pe->acts_at_input = at_input;
    pe->acts_in_attention = in_attention;
  }
  read_shared_options(*pe, config, options, device);
  options.finish();
  return pe;
}

}  // namespace ordo::pe
