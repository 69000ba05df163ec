// The sequence combination of the locality/symmetry paper (Eq. 10, Listings
// 2 and 3): X' = CA(PA(X)). PA mixes the layer's input per head with the
// positional weights delta (no projection, padded keys weighted 0, rows not
// renormalised); CA is plain contextual attention on PA's output, the
// positional score terms removed. Checked against f64 loops written from the
// listings, with a stand-in encoding whose delta is a learned table, so the
// mechanism is tested apart from any one variant (attenuated and alibi are
// covered by the config and smoke tests).
#include <cmath>
#include <map>

#include "autograd/gradcheck.h"
#include "nn/bert.h"
#include "pe/registry.h"
#include "tests/helpers.h"
#include "tests/pe/score_term_helpers.h"

using namespace ordo;

namespace {

// delta_h = softmax_j(W_h) from a learned [1, H, L, L] table; its score_bias
// (a large fixed term) must NOT reach the scores of CA.
class LearnedWeights : public nn::PositionEncoding {
 public:
  LearnedWeights(int64_t heads, int64_t length)
      : w_(add_parameter("w", {1, heads, length, length}, nn::Init::zeros(), false, Device::cpu())) {
    combine = nn::Combine::sequence;
    acts_in_attention = true;
  }
  std::string name() const override { return "learned_weights"; }
  Var positional_weights(const nn::AttentionState&) override { return softmax(w_.var); }
  Var score_bias(const nn::AttentionState&, const Var&, const Var&) override { return affine(w_.var, 100.0); }
  nn::Parameter& w_;
};

nn::BertConfig combine_config() {
  return ordo::test::tiny_bert_config(/*vocab_size=*/13, /*hidden_size=*/8, /*layers=*/1, /*heads=*/2,
                                      /*intermediate_size=*/12, /*max_position_embeddings=*/16);
}

}  // namespace

TEST_CASE("combine = sequence: self-attention is CA(PA(x)) as Listings 2 and 3 compute it, and the ablations keep "
          "PA(x) alone (Listing 2's positional encoder) or CA(x) alone", "[pe][combine]") {
  nn::BertConfig c = combine_config();
  const int64_t B = 2, L = 5, D = 8, H = 2, dh = 4;
  LearnedWeights pe(H, L);
  auto w = pe_test::randomize(pe, 1, -2.0, 2.0);
  nn::SelfAttention attention(c, Device::cpu());
  auto a = pe_test::randomize(attention, 11);
  Tensor x = test::random_tensor({B, L, D}, 21);
  Tensor mask = Tensor::from_vector(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {B, L});
  Tensor bias = nn::attention_bias(mask, B, L, false, DType::f64, Device::cpu());
  Tensor positions = nn::default_positions(B, L, Device::cpu());

  // delta_hij = softmax_j(W_hij) over all L keys (the variant's distribution),
  // then padded keys zeroed without renormalising (Listing 2).
  std::vector<double> delta(H * L * L);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < L; ++i) {
      double z = 0;
      for (int64_t j = 0; j < L; ++j) z += std::exp(w["w"][(h * L + i) * L + j]);
      for (int64_t j = 0; j < L; ++j) delta[(h * L + i) * L + j] = std::exp(w["w"][(h * L + i) * L + j]) / z;
    }
  const std::vector<double> xs = x.to_doubles(), m = mask.to_doubles();
  auto reference = [&](bool with_pa, bool with_ca) {
    std::vector<double> expected;
    for (int64_t b = 0; b < B; ++b) {
      // PA: pa_i = sum_j delta_ij [key j real] x_j, per head on the head's slice of x.
      std::vector<double> pa(L * D, 0.0);
      for (int64_t i = 0; i < L; ++i)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t j = 0; j < L; ++j)
            for (int64_t d = 0; d < dh; ++d)
              pa[i * D + h * dh + d] += with_pa ? delta[(h * L + i) * L + j] * m[b * L + j] * xs[(b * L + j) * D + h * dh + d]
                                                : (i == j ? xs[(b * L + j) * D + h * dh + d] : 0.0);
      if (!with_ca) {
        expected.insert(expected.end(), pa.begin(), pa.end());
        continue;
      }
      auto project = [&](const std::string& name, int64_t i, int64_t o) {
        double s = a[name + ".bias"][o];
        for (int64_t e = 0; e < D; ++e) s += pa[i * D + e] * a[name + ".weight"][o * D + e];
        return s;
      };
      // CA: softmax(q . k / sqrt(d_h)) over real keys, no positional term.
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> o(D, 0.0);
        for (int64_t h = 0; h < H; ++h) {
          std::vector<double> s(L);
          double top = -1e300, z = 0;
          for (int64_t j = 0; j < L; ++j) {
            double dot = 0;
            for (int64_t d = 0; d < dh; ++d) dot += project("query", i, h * dh + d) * project("key", j, h * dh + d);
            s[j] = m[b * L + j] ? dot / std::sqrt(double(dh)) : -1e300;
            top = std::max(top, s[j]);
          }
          for (double& e : s) z += (e = e < -1e299 ? 0 : std::exp(e - top));
          for (int64_t j = 0; j < L; ++j)
            for (int64_t d = 0; d < dh; ++d) o[h * dh + d] += s[j] / z * project("value", j, h * dh + d);
        }
        expected.insert(expected.end(), o.begin(), o.end());
      }
    }
    return expected;
  };
  struct Case {
    nn::Ablation ablate;
    bool with_pa, with_ca;
  };
  for (const Case& k : {Case{nn::Ablation::none, true, true}, Case{nn::Ablation::contextual, true, false},
                        Case{nn::Ablation::positional, false, true}}) {
    INFO(nn::ablation_name(k.ablate));
    nn::Context ctx = nn::Context::eval();
    ctx.ablate = k.ablate;
    nn::ForwardTrace trace;
    trace.keep_attentions = true;
    Tensor out = attention.forward(Var(x), Var(bias), pe, 0, positions, Tensor(), ctx, &trace).value();
    test::require_close(out, reference(k.with_pa, k.with_ca), 1e-12, 1e-13);
    // The layer's attention as a trace keeps it: delta with the padded keys at 0 when PA is all there is.
    REQUIRE(trace.attentions.size() == 1);
    if (k.ablate == nn::Ablation::contextual) {
      const std::vector<double> kept = trace.attentions[0].contiguous().to_doubles();
      CHECK(kept[(1 * H * L + 0) * L + 2] == Approx(delta[2]));  // batch 1, head 0, query 0, key 2 (real)
      CHECK(kept[(1 * H * L + 0) * L + 3] == 0.0);               // keys 3-4 are padding in batch 1
    }
  }
}

TEST_CASE("combine = sequence: the attention and the learned positional weights pass the f64 gradient check",
          "[pe][combine][gradcheck]") {
  nn::BertConfig c = combine_config();
  LearnedWeights pe(2, 5);
  pe_test::randomize(pe, 31);
  nn::SelfAttention attention(c, Device::cpu());
  pe_test::randomize(attention, 41);
  std::vector<nn::NamedParameter> params = attention.named_parameters();
  params.emplace_back("w", &pe.w_);
  std::vector<Tensor> values;
  for (auto& [n, p] : params) values.push_back(p->var.value());
  Tensor x = test::random_tensor({2, 5, 8}, 51);
  Tensor bias = nn::attention_bias(Tensor::from_vector(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 0}, {2, 5}), 2, 5,
                                   false, DType::f64, Device::cpu());
  Tensor positions = nn::default_positions(2, 5, Device::cpu());
  nn::Context ctx = nn::Context::eval();
  GradcheckResult r = gradcheck(
      [&](const std::vector<Var>& in) {
        for (size_t i = 0; i < params.size(); ++i) params[i].second->var = in[i];
        return attention.forward(Var(x), Var(bias), pe, 0, positions, Tensor(), ctx, nullptr);
      },
      values);
  INFO(r.worst);
  CHECK(r.ok);
}

TEST_CASE("combine: the option is read by every variant and refused where there are no positional weights",
          "[pe][combine]") {
  nn::BertConfig c = combine_config();
  c.pe = "ape_learned";
  auto plain = pe::make_position_encoding(c, Device::cpu());
  CHECK(plain->combine == nn::Combine::add);
  CHECK(plain->acts_at_input);
  CHECK_FALSE(plain->acts_in_attention);
  c.pe_options["combine"] = "sequence";
  CHECK_THROWS_WITH(pe::make_position_encoding(c, Device::cpu()), Catch::Contains("combine = sequence needs positional weights"));
  c.pe_options["combine"] = "product";
  CHECK_THROWS_WITH(pe::make_position_encoding(c, Device::cpu()), Catch::Contains("combine"));
  c.pe = "tupe";
  c.pe_options["combine"] = "sequence";
  CHECK_THROWS_WITH(pe::make_position_encoding(c, Device::cpu()), Catch::Contains("attenuated, alibi"));
  // The variants that give positional weights build with it (once they are registered).
  for (const std::string name : {"attenuated", "alibi"}) {
    const auto& names = pe::variant_names();
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    c.pe = name;
    c.pe_options = json::Value::object();
    c.pe_options["combine"] = "sequence";
    auto seq = pe::make_position_encoding(c, Device::cpu());
    CHECK(seq->combine == nn::Combine::sequence);
  }
}

