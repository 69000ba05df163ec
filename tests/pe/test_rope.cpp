// rope: q and k rotated pair by pair by p * theta_i (Su et al. 2021, Eq. 34).
#include "pe/rope.h"
#include "tensor/ops.h"
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

namespace {

// The rotation as the unfused ops compose it (the angles, cos, sin, four
// products, a difference, a sum, the pairs put back together): what rope ran
// before its one-op kernel, and the reference that kernel must equal.
Var unfused_rotation(const Var& x, const Tensor& positions, const Tensor& theta, bool half) {
  const int64_t batch = x.size(0), heads = x.size(1), length = x.size(2), d = x.size(3), w = d / 2;
  const Tensor angles = mul(positions.to(x.dtype()).reshape({batch, 1, length, 1}), theta);
  const Var c(cos(angles)), s(sin(angles));
  Var a, b;
  if (half) {
    a = slice(x, 3, 0, w);
    b = slice(x, 3, w, d);
  } else {
    const Var pairs = reshape(x, {batch, heads, length, w, 2});
    a = select(pairs, 4, 0);
    b = select(pairs, 4, 1);
  }
  const Var ra = sub(mul(a, c), mul(b, s)), rb = add(mul(a, s), mul(b, c));
  if (half) return concat({ra, rb}, 3);
  return reshape(concat({unsqueeze(ra, 4), unsqueeze(rb, 4)}, 4), {batch, heads, length, d});
}

// RoPE's frequencies for a head width d, in f32.
Tensor rope_frequencies(int64_t d) {
  std::vector<double> theta(static_cast<size_t>(d / 2));
  for (int64_t i = 0; i < d / 2; ++i) theta[i] = std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(d));
  return Tensor::from_vector(theta, {d / 2}).to(DType::f32);
}

}  // namespace

// On the CPU the one-op rotation rounds every product and sum as the unfused
// ops did (no fused multiply-add), so a rope model's numbers are unchanged:
// values and q's gradient bit for bit, on q as the q/k/v product leaves it
// (a strided view), positions up to 500 (angles of hundreds of radians).
TEST_CASE("rope's one-op rotation equals the unfused ops bit for bit, values and gradients, both pairings", "[pe]") {
  const int64_t B = 2, L = 37, H = 3, d = 8;
  const Tensor base = ordo::test::random_tensor({B, L, H, d}, 31, DType::f32, -2, 2);
  const Tensor gy = ordo::test::random_tensor({B, H, L, d}, 32, DType::f32);
  const Tensor positions = random_positions(B, L, 33, 0, 500);
  const Tensor theta = rope_frequencies(d);
  for (bool half : {false, true}) {
    INFO((half ? "halves" : "interleaved pairs"));
    Var x1(base.clone(), true), x2(base.clone(), true);
    const Tensor angles = mul(positions.to(DType::f32).reshape({B, L, 1}), theta);
    const Tensor cosines = cos(angles), sines = sin(angles);
    const Var fused = rotary(permute(x1, {0, 2, 1, 3}), cosines, sines, half);
    const Var unfused = unfused_rotation(permute(x2, {0, 2, 1, 3}), positions, theta, half);
    CHECK(ordo::test::bit_identical(fused.value(), unfused.value()));
    sum(mul(fused, Var(gy))).backward();
    sum(mul(unfused, Var(gy))).backward();
    CHECK(ordo::test::bit_identical(x1.grad(), x2.grad()));
    // The inverse turns the rotation back (within the f32 roundings of two turns).
    const std::vector<double> back = rotary(fused.value(), cosines, sines, half, true).to_doubles();
    const std::vector<double> x = base.permute({0, 2, 1, 3}).contiguous().to_doubles();
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(back[i] - x[i]));
    CHECK(worst < 4 * 2 * 0x1p-24 * 4);  // |x| <= 2, two turns of two rounded products and a sum each
  }
  CHECK_THROWS_WITH(rotary(Tensor::zeros({1, 2, 3, 5}), Tensor::zeros({1, 3, 2}), Tensor::zeros({1, 3, 2}), false),
                    "rotary: the head width must be even (dimensions turn in pairs), got 5");
  CHECK_THROWS_WITH(rotary(Tensor::zeros({1, 2, 3, 4}), Tensor::zeros({1, 4, 2}), Tensor::zeros({1, 3, 2}), false),
                    Catch::Contains("rotary: cosines has shape [1, 4, 2]"));
}

// The CUDA kernel against the CPU's, from the same cos and sin tables: values
// and the inverse (the backward), within the roundings a fused multiply-add
// skips (nvcc may fuse; the CPU rounds each product), in one launch each.
TEST_CASE("cuda: rope's rotation and its inverse match the CPU's, in one launch", "[cuda][pe]") {
  const Device gpu = Device::cuda(0);
  const int64_t B = 2, L = 29, H = 3, d = 8;
  const Tensor base = ordo::test::random_tensor({B, L, H, d}, 41, DType::f32, -2, 2);
  const Tensor positions = random_positions(B, L, 42, 0, 500);
  const Tensor theta = rope_frequencies(d);
  const Tensor angles = mul(positions.to(DType::f32).reshape({B, L, 1}), theta);
  const Tensor cosines = cos(angles), sines = sin(angles);
  for (bool half : {false, true})
    for (bool inverse : {false, true}) {
      INFO((half ? "halves" : "interleaved pairs") << (inverse ? ", inverse" : ""));
      const Tensor x = base.permute({0, 2, 1, 3});
      const Tensor want = rotary(x, cosines, sines, half, inverse);
      const Tensor on_gpu = base.to(gpu).permute({0, 2, 1, 3});
      const Tensor c_gpu = cosines.to(gpu), s_gpu = sines.to(gpu);
      synchronize(gpu);
      reset_device_counters();
      const Tensor got = rotary(on_gpu, c_gpu, s_gpu, half, inverse);
      CHECK(device_counters().kernel_launches == 1);
      const std::vector<double> g = got.to(Device::cpu()).to_doubles(), w = want.to_doubles();
      double worst = 0;
      for (size_t i = 0; i < w.size(); ++i) worst = std::max(worst, std::fabs(g[i] - w[i]));
      // The same cos and sin, |a|, |b| <= 2: only the roundings differ where nvcc fuses a product into the
      // sum — the product's rounding skipped (2^-24 |a c| <= 2^-23) and the sum rounded from another value
      // (up to half an ulp of |y| <= 4 on each side, 2 2^-22): 2^-23 + 2^-21 < 6e-7.
      CHECK(worst < 6e-7);
    }
}
