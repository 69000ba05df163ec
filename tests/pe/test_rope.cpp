// rope: q and k rotated pair by pair by p * theta_i (Su et al. 2021, Eq. 34).
#include "pe/rope.h"
#include "tests/pe/score_term_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;

namespace {

// The rotation of RoFormer's Eq. 34 in plain loops, x [B, H, L, d] row-major:
// pair i holds dimensions (2i, 2i+1) interleaved, (i, i + d/2) for "half".
std::vector<double> naive_rotation(const std::vector<double>& x, const std::vector<int64_t>& p, int64_t B, int64_t H,
                                   int64_t L, int64_t d, bool interleaved, double base = 10000) {
  std::vector<double> out(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l)
        for (int64_t i = 0; i < d / 2; ++i) {
          double angle = static_cast<double>(p[b * L + l]) * std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
          int64_t row = ((b * H + h) * L + l) * d;
          int64_t ia = interleaved ? 2 * i : i, ib = interleaved ? 2 * i + 1 : i + d / 2;
          double xa = x[row + ia], xb = x[row + ib];
          out[row + ia] = xa * std::cos(angle) - xb * std::sin(angle);
          out[row + ib] = xa * std::sin(angle) + xb * std::cos(angle);
        }
  return out;
}

// q_i . k_j over the rotated q and k: [B, H, L, L].
Tensor rotated_scores(nn::PositionEncoding& pe, const nn::BertConfig& c, const Tensor& q, const Tensor& k,
                      const Tensor& positions) {
  nn::Context ctx = nn::Context::eval();
  Var rq(q), rk(k);
  pe.rotate(state(c, 0, positions, nullptr, ctx), rq, rk);
  return matmul(rq.value(), rk.value(), false, true);
}

}  // namespace

TEST_CASE("rope matches a naive rotation from RoFormer's Eq. 34, both pairings", "[pe]") {
  for (std::string pairing : {"interleaved", "half"}) {
    json::Value o = json::Value::object();
    o["pairing"] = pairing;
    nn::BertConfig c = tiny_config("rope", o);
    c.hidden_size = 24;  // d_h = 8: four pairs
    auto pe = make(c);
    auto* rope = dynamic_cast<pe::Rotary*>(pe.get());
    REQUIRE(rope != nullptr);
    Tensor x = ordo::test::random_tensor({2, 3, 5, 8}, 12);
    // Positions in any order, repeated, and beyond any training length.
    Tensor positions = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3, 4, 9000, 3, 3, 17, 0}, {2, 5});
    Var y = rope->rotated(Var(x), positions);
    std::vector<double> expected = naive_rotation(x.to_doubles(), positions.to_vector<int64_t>(), 2, 3, 5, 8, pairing == "interleaved");
    INFO("pairing " << pairing);
    CHECK(max_abs_error(y.value(), expected) <= 1e-12);
  }
  json::Value o = json::parse(R"({"base": 500})");
  nn::BertConfig c = tiny_config("rope", o);
  auto pe = make(c);
  Tensor x = ordo::test::random_tensor({1, 3, 4, 4}, 2);
  Tensor positions = random_positions(1, 4, 3, 0, 40);
  Var y = dynamic_cast<pe::Rotary&>(*pe).rotated(Var(x), positions);
  CHECK(max_abs_error(y.value(), naive_rotation(x.to_doubles(), positions.to_vector<int64_t>(), 1, 3, 4, 4, true, 500)) <= 1e-12);
}

TEST_CASE("rope: q'_i . k'_j depends on p_j - p_i only, at any position, norms are kept", "[pe]") {
  for (std::string pairing : {"interleaved", "half"}) {
    json::Value o = json::Value::object();
    o["pairing"] = pairing;
    nn::BertConfig c = tiny_config("rope", o);
    auto pe = make(c);
    Tensor q = ordo::test::random_tensor({2, 3, 6, 4}, 1), k = ordo::test::random_tensor({2, 3, 6, 4}, 2);
    Tensor positions = random_positions(2, 6, 10, 0, 50);
    Tensor s0 = rotated_scores(*pe, c, q, k, positions);
    Tensor s1 = rotated_scores(*pe, c, q, k, shifted(positions, 12345));
    INFO("pairing " << pairing);
    CHECK(max_abs_error(s0, s1) <= 1e-9);  // cos/sin of angles near 12345 carry ~1e-12 relative rounding
    // Without rotation the scores are different (the positions do act).
    CHECK(max_abs_error(s0, matmul(q, k, false, true)) > 1e-3);
    // Each pair is rotated, so every row keeps its norm.
    nn::Context ctx = nn::Context::eval();
    Var rq(q), rk(k);
    pe->rotate(state(c, 0, positions, nullptr, ctx), rq, rk);
    Tensor n0 = sum(mul(q, q), {-1}), n1 = sum(mul(rq.value(), rq.value()), {-1});
    CHECK(max_abs_error(n0, n1) <= 1e-12);
  }
  CHECK(make(tiny_config("rope"))->parameter_count() == 0);
  CHECK(make(tiny_config("rope"))->max_position() == -1);
  CHECK_THROWS_WITH(make(tiny_config("rope", json::parse(R"({"pairing": "odd"})"))), Catch::Contains("pairing"));
}

TEST_CASE("rope: gradients reach q and k through the rotation and the attention inputs", "[pe][gradcheck]") {
  nn::BertConfig c = tiny_config("rope");
  Tensor positions = random_positions(2, 5, 4, 0, 30);
  nn::Context ctx = nn::Context::eval();
  for (std::string pairing : {"interleaved", "half"}) {
    json::Value o = json::Value::object();
    o["pairing"] = pairing;
    nn::BertConfig pc = tiny_config("rope", o);
    auto p = make(pc);
    GradcheckResult r = gradcheck(
        [&](const std::vector<Var>& in) {
          Var q = in[0], k = in[1];
          p->rotate(state(pc, 0, positions, nullptr, ctx), q, k);
          return matmul(q, k, false, true);
        },
        {ordo::test::random_tensor({2, 3, 5, 4}, 8), ordo::test::random_tensor({2, 3, 5, 4}, 9)});
    INFO(pairing << ": " << r.worst);
    CHECK(r.ok);
  }
  GradcheckResult a = check_attention(c, positions);
  INFO(a.worst);
  CHECK(a.ok);
}

TEST_CASE("rope: a short pretraining run learns", "[pe][pretrain]") {
  require_learning(smoke_pretrain("rope"));
}
