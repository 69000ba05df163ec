#include "pe/registry.h"

#include <functional>

#include "nn/checkpoint.h"
#include "pe/absolute.h"
#include "tensor/config.h"
#include "tensor/safetensors.h"

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
// configurations this way).
const std::vector<Variant>& variants() {
  static const std::vector<Variant> all = {
      {"none", Level::input, [](const nn::BertConfig&, FieldReader&, Device) { return std::make_unique<NoPosition>(); }},
      {"ape_learned", Level::input,
       [](const nn::BertConfig& c, FieldReader&, Device d) { return std::make_unique<LearnedAbsolute>(c, d); }},
  };
  return all;
}

const Variant& find_variant(const std::string& name) {
  for (const Variant& v : variants())
    if (v.name == name) return v;
  std::string known;
  for (const auto& n : variant_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown position encoding '" + name + "': known variants are " + known +
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
  void rotate(const nn::AttentionState& s, Var& q, Var& k) override { attention_.rotate(s, q, k); }
  Var contextual_scores(const nn::AttentionState& s, const Var& q, const Var& k) override {
    return attention_.contextual_scores(s, q, k);
  }
  double score_scale(const nn::AttentionState& s) const override { return attention_.score_scale(s); }
  Var score_bias(const nn::AttentionState& s, const Var& q, const Var& k) override {
    return attention_.score_bias(s, q, k);
  }
  Var value_term(const nn::AttentionState& s, const Var& probs) override { return attention_.value_term(s, probs); }
  Var positional_weights(const nn::AttentionState& s) override { return attention_.positional_weights(s); }
  int64_t max_position() const override { return input_.max_position(); }

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

std::unique_ptr<nn::PositionEncoding> make_position_encoding(const nn::BertConfig& config, Device device) {
  FieldReader options(config.pe_options, "pe_options of '" + config.pe + "'");
  std::unique_ptr<nn::PositionEncoding> pe;
  size_t plus = config.pe.find('+');
  if (plus == std::string::npos) {
    pe = find_variant(config.pe).make(config, options, device);
  } else {
    const Variant& input = find_variant(config.pe.substr(0, plus));
    const Variant& attention = find_variant(config.pe.substr(plus + 1));
    ORDO_CHECK(input.level == Level::input && attention.level == Level::attention, "pe '", config.pe,
               "': a combination is an input-level variant + an attention-level one ('",
               input.name, "' is ", input.level == Level::input ? "input" : "attention", "-level, '", attention.name,
               "' is ", attention.level == Level::input ? "input" : "attention", "-level)");
    pe = std::make_unique<Composite>(input.make(config, options, device), attention.make(config, options, device));
  }
  options.finish();
  return pe;
}

std::unique_ptr<nn::PretrainingModel> build_model(const nn::BertConfig& config, Device device, bool nsp,
                                                  uint64_t seed) {
  auto model = std::make_unique<nn::PretrainingModel>(config, make_position_encoding(config, device), device, nsp);
  nn::initialize_bert(*model, seed);
  return model;
}

std::unique_ptr<nn::PretrainingModel> load_model(const std::string& dir, Device device, bool nsp, uint64_t seed) {
  nn::BertConfig config = nn::load_config(dir);
  auto model = build_model(config, device, nsp, seed);
  std::string path = dir + "/model.safetensors";
  std::vector<std::string> fresh;
  if (nsp) fresh = {"bert.pooler.", "cls.seq_relationship."};
  nn::load_weights(*model, safetensors::load(path), path, fresh);
  return model;
}

}  // namespace ordo::pe
