// alibi: s_ij += -m_h |p_j - p_i| with Press et al.'s geometric slopes; its
// positional weights softmax_j(-m_h |r|) (the locality/symmetry paper, section 5).
#include "pe/scalar_bias.h"
#include "tests/pe/score_term_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;

namespace {

std::vector<double> powers_of_two(const std::vector<double>& exponents) {
  std::vector<double> m;
  for (double e : exponents) m.push_back(std::pow(2.0, e));
  return m;
}

// -m_h |p_j - p_i| in plain loops, [B, H, L, L] row-major.
std::vector<double> naive_alibi(const std::vector<int64_t>& p, int64_t batch, int64_t length, const std::vector<double>& m) {
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b)
    for (double slope : m)
      for (int64_t i = 0; i < length; ++i)
        for (int64_t j = 0; j < length; ++j)
          out.push_back(-slope * std::fabs(static_cast<double>(p[b * length + j] - p[b * length + i])));
  return out;
}

std::vector<double> naive_row_softmax(const std::vector<double>& x, int64_t length) {
  std::vector<double> out;
  for (size_t row = 0; row < x.size() / static_cast<size_t>(length); ++row) {
    double total = 0;
    for (int64_t j = 0; j < length; ++j) total += std::exp(x[row * length + j]);
    for (int64_t j = 0; j < length; ++j) out.push_back(std::exp(x[row * length + j]) / total);
  }
  return out;
}

}  // namespace

TEST_CASE("alibi: Press et al.'s slopes, worked by hand, also for head counts that are not powers of 2", "[pe]") {
  auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).epsilon(1e-15));
  };
  same(pe::alibi_slopes(8), powers_of_two({-1, -2, -3, -4, -5, -6, -7, -8}));
  same(pe::alibi_slopes(4), powers_of_two({-2, -4, -6, -8}));
  same(pe::alibi_slopes(1), powers_of_two({-8}));
  // 12 heads: the 8 slopes of 8 heads, then every other slope of 16 heads (2^-0.5 k, k odd).
  same(pe::alibi_slopes(12), powers_of_two({-1, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5}));
  same(pe::alibi_slopes(6), powers_of_two({-2, -4, -6, -8, -1, -3}));
  same(pe::alibi_slopes(3), powers_of_two({-4, -8, -2}));
}

TEST_CASE("alibi matches a naive loop over i, j, its positional weights are the softmax of the biases", "[pe]") {
  nn::BertConfig c = tiny_config("alibi");
  auto pe = make(c);
  Tensor positions = random_positions(2, 7, 3, 0, 1000);
  std::vector<int64_t> p = positions.to_vector<int64_t>();
  nn::Context ctx = nn::Context::eval();
  std::vector<double> m = powers_of_two({-4, -8, -2});  // 3 heads
  std::vector<double> expected = naive_alibi(p, 2, 7, m);
  Var bias = pe->score_bias(state(c, 1, positions, nullptr, ctx), Var(Tensor::zeros({1}, DType::f64)), Var());
  CHECK(max_abs_error(bias.value(), expected) <= 1e-12);
  // Positions closer together so that the softmax is not all on the diagonal.
  Tensor near = random_positions(2, 7, 4, 0, 20);
  Var weights = pe->positional_weights(state(c, 0, near, nullptr, ctx));
  REQUIRE(weights.dtype() == DType::f64);
  CHECK(max_abs_error(weights.value(), naive_row_softmax(naive_alibi(near.to_vector<int64_t>(), 2, 7, m), 7)) <= 1e-12);
  CHECK(pe->parameter_count() == 0);
}

TEST_CASE("alibi: symmetric, relative, any position, learned slopes start geometric and pass the gradient check",
          "[pe][gradcheck]") {
  nn::BertConfig c = tiny_config("alibi");
  auto pe = make(c);
  nn::Context ctx = nn::Context::eval();
  Tensor positions = nn::default_positions(1, 9, Device::cpu());
  Tensor term = pe->score_bias(state(c, 0, positions, nullptr, ctx), Var(Tensor::zeros({1}, DType::f64)), Var()).value();
  CHECK(max_abs_error(term, term.transpose(2, 3).contiguous()) == 0);
  Tensor scattered = random_positions(2, 6, 9, 0, 50);
  Var a = pe->score_bias(state(c, 0, scattered, nullptr, ctx), Var(Tensor::zeros({1}, DType::f64)), Var());
  Var b = pe->score_bias(state(c, 0, shifted(scattered, 100000), nullptr, ctx), Var(Tensor::zeros({1}, DType::f64)), Var());
  CHECK(max_abs_error(a.value(), b.value()) == 0);
  UnscaledCheck u = attention_of_bias_alone(c, scattered);
  CHECK(max_abs_error(u.probs, u.expected) <= 1e-12);

  nn::BertConfig lc = tiny_config("alibi", json::parse(R"({"learned": true})"));
  auto learned = make(lc);
  learned->to_dtype(DType::f64);
  // Before training: the fixed slopes.
  Var start = learned->score_bias(state(lc, 1, scattered, nullptr, ctx), Var(Tensor::zeros({1}, DType::f64)), Var());
  CHECK(max_abs_error(start.value(), a.value()) <= 1e-15);
  GradcheckResult r = check_parameters(*learned, {}, [&](const std::vector<Var>&) {
    return learned->score_bias(state(lc, 1, scattered, nullptr, ctx), Var(Tensor::zeros({1}, DType::f64)), Var());
  });
  INFO(r.worst);
  CHECK(r.ok);
  GradcheckResult w = check_parameters(*learned, {}, [&](const std::vector<Var>&) {
    return learned->positional_weights(state(lc, 0, random_positions(2, 5, 1, 0, 12), nullptr, ctx));
  });
  INFO(w.worst);
  CHECK(w.ok);
  // The learned slopes are m_h + offset: with random offsets, the naive loop with those slopes.
  std::vector<double> m1 = powers_of_two({-4, -8, -2});
  for (int h = 0; h < 3; ++h) m1[h] += values(*learned, "slope_offsets.layer_1.head_" + std::to_string(h))[0];
  Var now = learned->score_bias(state(lc, 1, scattered, nullptr, ctx), Var(Tensor::zeros({1}, DType::f64)), Var());
  CHECK(max_abs_error(now.value(), naive_alibi(scattered.to_vector<int64_t>(), 2, 6, m1)) <= 1e-12);

  GradcheckResult att = check_attention(lc, random_positions(2, 5, 7, 0, 30));
  INFO(att.worst);
  CHECK(att.ok);
  const int64_t L = 2, H = 3;
  std::vector<std::pair<std::string, int64_t>> counts = {{"none", L * H}, {"heads", L}, {"layers", H}, {"all", 1}};
  for (auto& [share, n] : counts) {
    json::Value o = json::parse(R"({"learned": true})");
    o["share"] = share;
    CHECK(make(tiny_config("alibi", o))->parameter_count() == n);
  }
  // Slopes are not weights to shrink: no weight decay on them.
  for (auto& [name, p] : learned->named_parameters()) CHECK_FALSE(p->decay);
}

TEST_CASE("alibi: short pretraining runs learn, fixed and learned slopes", "[pe][pretrain]") {
  require_learning(smoke_pretrain("alibi"));
  require_learning(smoke_pretrain("alibi", json::parse(R"({"learned": true})")));
}
