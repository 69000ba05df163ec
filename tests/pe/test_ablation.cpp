// The ablations of the locality/symmetry paper: drop the contextual term
// gamma or the positional term delta of s = gamma + delta (its Eq. 5) at
// inference (BERT-p / BERT-c, section 4.1; nn::Context::ablate, `ordo forward
// --ablate`) or in training (only-p / only-c, Table 7; pe_options.ablate).
// Attention-level encodings lose a term of the scores; input-level ones lose
// a term of the input sum x_i + p_i (its Eq. 2). Checked with stand-in
// encodings whose terms are known, against f64 loops; where a split is
// undefined (a variant's own product of q . k with position, a rotation with
// nothing left) the ablation must be an error.
#include <cmath>
#include <map>

#include "base/file_io.h"
#include "model/model.h"
#include "nn/bert.h"
#include "nn/checkpoint.h"
#include "pe/registry.h"
#include "pe/tupe.h"
#include "tensor/safetensors.h"
#include "tests/helpers.h"
#include "tests/pe/score_term_helpers.h"

using namespace ordo;

namespace {

const int64_t B = 2, L = 4, D = 8, H = 2, dh = 4;

// A fixed positional score term delta and a fixed value term (ones).
class FixedTerms : public nn::PositionEncoding {
 public:
  explicit FixedTerms(Tensor delta) : delta_(std::move(delta)) { acts_in_attention = true; }
  std::string name() const override { return "fixed_terms"; }
  Var score_bias(const nn::AttentionState&, const Var&, const Var&) override { return Var(delta_); }
  Var value_term(const nn::AttentionState&, const Var& probs) override {
    return Var(Tensor::ones({probs.size(0), H, probs.size(2), dh}, DType::f64));
  }
  bool has_value_term() const override { return true; }
  Tensor delta_;
};

// Rotates q and k (doubles them), no score term: RoPE's shape of things.
class Rotating : public nn::PositionEncoding {
 public:
  Rotating() { acts_in_attention = true; }
  std::string name() const override { return "rotating"; }
  void rotate(const nn::AttentionState&, Var& q, Var& k) override { q = affine(q, 2.0), k = affine(k, 2.0); }
};

// Its own contextual term (a product with position, as Huang et al.'s methods 1-3).
class Product : public nn::PositionEncoding {
 public:
  Product() { acts_in_attention = true; }
  std::string name() const override { return "product"; }
  Var contextual_scores(const nn::AttentionState&, const Var& q, const Var& k) override {
    return affine(matmul(q, k, false, true), 3.0);
  }
};

nn::BertConfig config() {
  return ordo::test::tiny_bert_config(/*vocab_size=*/13, /*hidden_size=*/D, /*layers=*/2, /*heads=*/H,
                                      /*intermediate_size=*/12, /*max_position_embeddings=*/16);
}

struct AttentionRun {
  Tensor probs, out;
};

AttentionRun run(nn::SelfAttention& attention, nn::PositionEncoding& pe, const Tensor& x, const Tensor& mask,
                 nn::Ablation ablate) {
  Tensor bias = nn::attention_bias(mask, B, L, false, DType::f64, Device::cpu());
  Tensor positions = nn::default_positions(B, L, Device::cpu());
  nn::Context ctx = nn::Context::eval();
  ctx.ablate = ablate;
  nn::ForwardTrace trace;
  trace.keep_attentions = true;
  Tensor out = attention.forward(Var(x), Var(bias), pe, 0, positions, Tensor(), ctx, &trace).value();
  return {trace.attentions.at(0), out};
}

// softmax_j over the real keys of row (b, h, i) of scores s(b, h, i, j).
std::vector<double> naive_probs(const std::function<double(int64_t, int64_t, int64_t, int64_t)>& s,
                                const std::vector<double>& mask) {
  std::vector<double> p;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> e(L);
        double top = -1e300, z = 0;
        for (int64_t j = 0; j < L; ++j) top = std::max(top, mask[b * L + j] ? s(b, h, i, j) : -1e300);
        for (int64_t j = 0; j < L; ++j) z += (e[j] = mask[b * L + j] ? std::exp(s(b, h, i, j) - top) : 0.0);
        for (int64_t j = 0; j < L; ++j) p.push_back(e[j] / z);
      }
  return p;
}

}  // namespace

TEST_CASE("ablations of an attention-level term: BERT-p keeps delta alone, BERT-c gamma alone", "[pe][ablation]") {
  nn::BertConfig c = config();
  nn::SelfAttention attention(c, Device::cpu());
  auto w = pe_test::randomize(attention, 1);
  Tensor delta = test::random_tensor({1, H, L, L}, 2, DType::f64, -2, 2);
  FixedTerms pe(delta);
  Tensor x = test::random_tensor({B, L, D}, 3);
  Tensor mask = Tensor::from_vector(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 0}, {B, L});
  std::vector<double> m = mask.to_doubles(), xs = x.to_doubles(), dv = delta.to_doubles();
  auto project = [&](const std::string& name, int64_t b, int64_t i, int64_t o) {
    double s = w[name + ".bias"][o];
    for (int64_t e = 0; e < D; ++e) s += xs[(b * L + i) * D + e] * w[name + ".weight"][o * D + e];
    return s;
  };
  auto gamma = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
    double dot = 0;
    for (int64_t d = 0; d < dh; ++d) dot += project("query", b, i, h * dh + d) * project("key", b, j, h * dh + d);
    return dot / std::sqrt(double(dh));
  };
  auto delta_of = [&](int64_t, int64_t h, int64_t i, int64_t j) { return dv[(h * L + i) * L + j]; };

  AttentionRun p = run(attention, pe, x, mask, nn::Ablation::contextual);
  test::require_close(p.probs, naive_probs(delta_of, m), 1e-13, 1e-15, "BERT-p: softmax(delta)");
  AttentionRun cc = run(attention, pe, x, mask, nn::Ablation::positional);
  test::require_close(cc.probs, naive_probs(gamma, m), 1e-12, 1e-15, "BERT-c: softmax(gamma)");
  AttentionRun both = run(attention, pe, x, mask, nn::Ablation::none);
  test::require_close(both.probs, naive_probs([&](int64_t b, int64_t h, int64_t i, int64_t j) {
    return gamma(b, h, i, j) + delta_of(b, h, i, j);
  }, m), 1e-12, 1e-15, "no ablation: softmax(gamma + delta)");

  // The value term (positional, like Shaw's a^V) stays with BERT-p and goes with BERT-c:
  // out = sum_j a_ij v_j (+ 1 per element).
  auto output = [&](const std::vector<double>& probs, double extra) {
    std::vector<double> o;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t d = 0; d < dh; ++d) {
            double s = extra;
            for (int64_t j = 0; j < L; ++j) s += probs[((b * H + h) * L + i) * L + j] * project("value", b, j, h * dh + d);
            o.push_back(s);
          }
    return o;
  };
  test::require_close(p.out, output(p.probs.to_doubles(), 1.0), 1e-12, 1e-14, "BERT-p keeps the value term");
  test::require_close(cc.out, output(cc.probs.to_doubles(), 0.0), 1e-12, 1e-14, "BERT-c drops the value term");
}

TEST_CASE("ablations: a rotation is the positional part, a variant's own product has no split and is an error",
          "[pe][ablation]") {
  nn::BertConfig c = config();
  nn::SelfAttention attention(c, Device::cpu());
  pe_test::randomize(attention, 11);
  Tensor x = test::random_tensor({B, L, D}, 12);
  Tensor mask = Tensor::ones({B, L}, DType::i64);
  Rotating rotating;
  FixedTerms zero(Tensor::zeros({1, H, L, L}, DType::f64));
  zero.acts_in_attention = true;
  // BERT-c of a rotating encoding: q . k unrotated, the same as no position at all.
  AttentionRun rc = run(attention, rotating, x, mask, nn::Ablation::positional);
  AttentionRun plain = run(attention, zero, x, mask, nn::Ablation::positional);
  CHECK(test::bit_identical(rc.probs, plain.probs));
  CHECK_FALSE(test::bit_identical(rc.probs, run(attention, rotating, x, mask, nn::Ablation::none).probs));
  CHECK_THROWS_WITH(run(attention, rotating, x, mask, nn::Ablation::contextual),
                    Catch::Contains("no positional term to the scores") && Catch::Contains("rotates q and k"));
  Product product;
  for (nn::Ablation a : {nn::Ablation::contextual, nn::Ablation::positional})
    CHECK_THROWS_WITH(run(attention, product, x, mask, a), Catch::Contains("computes its own contextual term"));
  // The registry's multiplicative variants, once registered, refuse both.
  for (const std::string name : {"huang_m1", "huang_m2", "huang_m3"}) {
    const auto& names = pe::variant_names();
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    nn::BertConfig hc = c;
    hc.pe = name;
    auto pe = pe::make_position_encoding(hc, Device::cpu());
    pe->to_dtype(DType::f64);
    for (nn::Ablation a : {nn::Ablation::contextual, nn::Ablation::positional}) {
      INFO(name);
      CHECK_THROWS_WITH(run(attention, *pe, x, mask, a), Catch::Contains("computes its own contextual term"));
    }
  }
}

TEST_CASE("ablations of an input-level encoding act on Eq. 2's sum x_i + p_i", "[pe][ablation]") {
  nn::BertConfig c = config();
  c.pe = "ape_learned";
  auto model = model::build_model(c, Device::cpu(), false, 5);
  auto w = pe_test::randomize(*model, 21);
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(std::vector<int64_t>{2, 7, 4, 9, 3, 5, 11, 1}, {B, L});
  in.segment_ids = Tensor::from_vector(std::vector<int64_t>{0, 0, 1, 1, 0, 1, 1, 1}, {B, L});
  std::vector<int64_t> ids = in.input_ids.to_vector<int64_t>(), segs = in.segment_ids.to_vector<int64_t>();
  // hidden_states[0] = LayerNorm(sum) with the model's gain and bias, from loops.
  auto embeddings = [&](bool word, bool position) {
    std::vector<double> out;
    const auto& we = w["bert.embeddings.word_embeddings.weight"];
    const auto& te = w["bert.embeddings.token_type_embeddings.weight"];
    const auto& pe = w["bert.embeddings.position_embeddings.weight"];
    const auto& g = w["bert.embeddings.LayerNorm.weight"];
    const auto& beta = w["bert.embeddings.LayerNorm.bias"];
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> v(D);
        for (int64_t d = 0; d < D; ++d)
          v[d] = (word ? we[ids[b * L + i] * D + d] : 0) + te[segs[b * L + i] * D + d] + (position ? pe[i * D + d] : 0);
        double mean = 0, var = 0;
        for (double e : v) mean += e / D;
        for (double e : v) var += (e - mean) * (e - mean) / D;
        for (int64_t d = 0; d < D; ++d) out.push_back((v[d] - mean) / std::sqrt(var + c.layer_norm_eps) * g[d] + beta[d]);
      }
    return out;
  };
  auto hidden0 = [&](nn::Ablation a) {
    nn::Context ctx = nn::Context::eval();
    ctx.ablate = a;
    nn::ForwardTrace trace;
    trace.keep_hidden_states = true;
    model->bert.forward(in, ctx, &trace);
    return trace.hidden_states.at(0);
  };
  test::require_close(hidden0(nn::Ablation::none), embeddings(true, true), 1e-12, 1e-12, "x + p");
  test::require_close(hidden0(nn::Ablation::positional), embeddings(true, false), 1e-12, 1e-12, "only-c: x");
  test::require_close(hidden0(nn::Ablation::contextual), embeddings(false, true), 1e-12, 1e-12, "only-p: p");

  // `none` has no positional term: the positional ablation changes nothing,
  // the contextual one has nothing to keep.
  nn::BertConfig n = config();
  n.pe = "none";
  auto bare = model::build_model(n, Device::cpu(), false, 5);
  nn::Context ctx = nn::Context::eval();
  ctx.ablate = nn::Ablation::contextual;
  CHECK_THROWS_WITH(bare->bert.forward(in, ctx), Catch::Contains("no positional term to keep"));
}

TEST_CASE("ablations in training: pe_options.ablate is the model's own, and an inference switch must agree",
          "[pe][ablation]") {
  nn::BertConfig c = config();
  c.pe = "tupe";
  c.pe_options["ablate"] = "contextual";
  auto model = model::build_model(c, Device::cpu(), false, 5);
  CHECK(model->bert.position_encoding().ablation == nn::Ablation::contextual);
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(std::vector<int64_t>{2, 7, 4, 9, 3, 5, 11, 1}, {B, L});
  nn::Context ctx = nn::Context::eval();
  nn::ForwardTrace trace;
  trace.keep_attentions = true;
  model->bert.forward(in, ctx, &trace);
  // only-p: the attention of TUPE is its positional term alone, the same for
  // any tokens in the same positions.
  nn::BertInputs other = in;
  other.input_ids = Tensor::from_vector(std::vector<int64_t>{3, 3, 8, 1, 12, 6, 2, 2}, {B, L});
  nn::ForwardTrace trace2;
  trace2.keep_attentions = true;
  model->bert.forward(other, ctx, &trace2);
  CHECK(test::bit_identical(trace.attentions[1], trace2.attentions[1]));
  ctx.ablate = nn::Ablation::positional;
  CHECK_THROWS_WITH(model->bert.forward(in, ctx), Catch::Contains("trained with the contextual ablation"));
  c.pe_options["ablate"] = "gamma";
  CHECK_THROWS_WITH(model::build_model(c, Device::cpu(), false, 5), Catch::Contains("ablate"));
}

TEST_CASE("ordo forward --ablate: TUPE-p attention ignores the tokens, TUPE-c differs, bad values exit 1",
          "[pe][ablation][tools]") {
  test::TempDir dir("ablate");
  nn::BertConfig c = config();
  c.pe = "tupe";
  auto model = model::build_model(c, Device::cpu(), false, 7);
  nn::save_model(dir / "ckpt", *model);
  write_file_atomic(dir / "a.json", R"({"input_ids": [[2, 7, 4, 9]]})");
  write_file_atomic(dir / "b.json", R"({"input_ids": [[5, 5, 11, 3]]})");
  auto attention = [&](const std::string& input, const std::string& flags) {
    test::CommandResult r = test::run_ordo("forward --checkpoint " + dir / "ckpt" + " --input " + dir / input +
                                           " --out " + dir / "out.safetensors --overwrite " + flags);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    for (auto& [name, t] : safetensors::load(dir / "out.safetensors"))
      if (name == "attentions.2") return t;
    FAIL("no attentions.2");
    return Tensor();
  };
  CHECK(test::bit_identical(attention("a.json", "--ablate contextual"), attention("b.json", "--ablate contextual")));
  CHECK_FALSE(test::bit_identical(attention("a.json", ""), attention("b.json", "")));
  CHECK_FALSE(test::bit_identical(attention("a.json", "--ablate positional"), attention("a.json", "")));
  test::CommandResult bad = test::run_ordo("forward --checkpoint " + dir / "ckpt" + " --input " + dir / "a.json" +
                                           " --out " + dir / "x.safetensors --ablate both");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("--ablate") && Catch::Contains("none, contextual, positional"));
  CHECK_FALSE(file_exists(dir / "x.safetensors"));
}
