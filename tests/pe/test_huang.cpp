// Huang et al. 2020, methods 1-4 (pe/huang.h), r_ij = p_j - p_i:
//   huang_m1  s_ij = (q_i . k_j) w_{|r_ij|} / sqrt(d_h)                        (Eq. 11-12)
//   huang_m2  s_ij = (q_i . k_j) w_{r_ij} / sqrt(d_h)                          (Eq. 13, 12)
//   huang_m3  s_ij = sum_d q_id k_jd a_{r_ij,d} / sqrt(d_h)                    (Eq. 14-15)
//   huang_m4  s_ij = (q_i . k_j + q_i . a_{r_ij} + k_j . a_{r_ij}) / sqrt(d_h)  (Eq. 16)
//             = ((q_i + a_{r_ij}) . (k_j + a_{r_ij}) - a_{r_ij} . a_{r_ij}) / sqrt(d_h)  (Eq. 17)
// Each against a naive attention layer in f64 loops (tests/pe/relative_helpers.h).
#include "pe/huang.h"
#include "tests/pe/relative_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;
using namespace ordo::rel_test;

namespace {

json::Value opts(const std::string& text) { return json::parse(text); }
double inv_sqrt(int64_t d) { return 1 / std::sqrt(static_cast<double>(d)); }

// Method 1: a scalar per |r| (row |r|); no clipping.
Equation method1(const std::string& share) {
  return {[=](const Pair& x) {
            const double w = x.p.at(table_name(share, "distance_gate", x.layer, x.h))[static_cast<size_t>(std::abs(x.r))];
            return dot(x.q, x.k, x.d) * w * inv_sqrt(x.d);
          },
          {}};
}

// Method 2: a scalar per signed, clipped r (row reach - c(r)).
Equation method2(const std::string& share, int64_t clip, int64_t reach) {
  return {[=](const Pair& x) {
            const double w =
                x.p.at(table_name(share, "distance_gate", x.layer, x.h))[static_cast<size_t>(reach - clipped(x.r, clip))];
            return dot(x.q, x.k, x.d) * w * inv_sqrt(x.d);
          },
          {}};
}

// Method 3: the three-way product.
Equation method3(const std::string& share, int64_t clip, int64_t reach) {
  return {[=](const Pair& x) {
            const std::vector<double>& a = x.p.at(table_name(share, "distance_gate", x.layer, x.h));
            const int64_t row = reach - clipped(x.r, clip);
            double s = 0;
            for (int64_t m = 0; m < x.d; ++m) s += x.q[m] * x.k[m] * a[static_cast<size_t>(row * x.d + m)];
            return s * inv_sqrt(x.d);
          },
          {}};
}

// Method 4 as Eq. 16 (three dot products), or as Eq. 17 ((q + a) . (k + a) - a . a).
Equation method4(const std::string& share, int64_t clip, int64_t reach, bool eq17 = false) {
  return {[=](const Pair& x) {
            const std::vector<double>& table = x.p.at(table_name(share, "distance_embedding", x.layer, x.h));
            const double* a = &table[static_cast<size_t>((reach - clipped(x.r, clip)) * x.d)];
            if (!eq17) return (dot(x.q, x.k, x.d) + dot(x.q, a, x.d) + dot(x.k, a, x.d)) * inv_sqrt(x.d);
            double s = 0;
            for (int64_t m = 0; m < x.d; ++m) s += (x.q[m] + a[m]) * (x.k[m] + a[m]) - a[m] * a[m];
            return s * inv_sqrt(x.d);
          },
          {}};
}

}  // namespace

TEST_CASE("huang_m1..m4 match Huang et al.'s equations in naive loops, every sharing mode", "[pe][huang]") {
  Tensor positions = random_positions(2, 6, 71, 0, 16);  // unordered; distances up to 15 (the default reach)
  for (std::string share : {"heads", "none", "layers", "all"}) {
    json::Value o = json::Value::object();
    o["share"] = share;
    require_matches(compare_with_naive(tiny_config("huang_m1", o), positions, method1(share)), "m1 share " + share);
    require_matches(compare_with_naive(tiny_config("huang_m2", o), positions, method2(share, -1, 15)), "m2 share " + share);
    require_matches(compare_with_naive(tiny_config("huang_m3", o), positions, method3(share, -1, 15)), "m3 share " + share);
    require_matches(compare_with_naive(tiny_config("huang_m4", o), positions, method4(share, -1, 15)), "m4 share " + share);
  }
}

TEST_CASE("huang_m2..m4 with clipping k match the naive, huang_m4 equals Eq. 17's rewritten form", "[pe][huang]") {
  Tensor positions = random_positions(2, 6, 72, 0, 40);  // distances well beyond k = 3
  const json::Value o = opts(R"({"clip": 3, "share": "none"})");
  require_matches(compare_with_naive(tiny_config("huang_m2", o), positions, method2("none", 3, 3)), "m2 clip 3");
  require_matches(compare_with_naive(tiny_config("huang_m3", o), positions, method3("none", 3, 3)), "m3 clip 3");
  require_matches(compare_with_naive(tiny_config("huang_m4", o), positions, method4("none", 3, 3)), "m4 clip 3");
  // Eq. 17: ((q + a) . (k + a) - a . a), a second naive of its own.
  Tensor near = random_positions(2, 6, 73, 0, 16);
  require_matches(compare_with_naive(tiny_config("huang_m4"), near, method4("heads", -1, 15, true)), "m4 as Eq. 17");
  require_matches(compare_with_naive(tiny_config("huang_m4", o), positions, method4("none", 3, 3, true)),
                  "m4 as Eq. 17, clip 3");
  // Consecutive positions: method 4's query and key terms as banded ops.
  Tensor counting = consecutive_positions({0, 5}, 6);
  REQUIRE(runs_banded(dynamic_cast<pe::HuangInteraction&>(*make(tiny_config("huang_m4"))).distances(), counting));
  require_matches(compare_with_naive(tiny_config("huang_m4"), counting, method4("heads", -1, 15)), "m4 banded");
  require_matches(compare_with_naive(tiny_config("huang_m4", o), counting, method4("none", 3, 3)), "m4 banded, clip 3");
  // Clipping makes every distance beyond k the same: two position sets that
  // agree within k = 3 and differ beyond give identical scores.
  Tensor p = Tensor::from_vector(std::vector<int64_t>{0, 1, 6, 9, 20, 3}, {1, 6});
  Tensor p2 = Tensor::from_vector(std::vector<int64_t>{0, 1, 7, 30, 50, 3}, {1, 6});
  nn::Context ctx = nn::Context::eval();
  Var q(ordo::test::random_tensor({1, 3, 6, 4}, 74)), k(ordo::test::random_tensor({1, 3, 6, 4}, 75));
  for (const char* name : {"huang_m2", "huang_m3", "huang_m4"}) {
    INFO(name);
    nn::BertConfig c = tiny_config(name, o);
    auto pe = make(c);
    randomize(*pe, 76);
    auto terms = [&](const Tensor& pos) {
      Var s = pe->contextual_scores(state(c, 1, pos, nullptr, ctx), q, k);
      Var b = pe->score_bias(state(c, 1, pos, nullptr, ctx), q, k);
      return s.defined() ? s.value() : b.value();
    };
    CHECK(max_abs_error(terms(p), terms(p2)) == 0);
    nn::BertConfig open_c = tiny_config(name, opts(R"({"share": "none", "max_distance": 60})"));
    auto open = make(open_c);
    randomize(*open, 76);
    Var s1 = open->contextual_scores(state(open_c, 1, p, nullptr, ctx), q, k);
    Var s2 = open->contextual_scores(state(open_c, 1, p2, nullptr, ctx), q, k);
    if (!s1.defined()) {
      s1 = open->score_bias(state(open_c, 1, p, nullptr, ctx), q, k);
      s2 = open->score_bias(state(open_c, 1, p2, nullptr, ctx), q, k);
    }
    CHECK(max_abs_error(s1.value(), s2.value()) > 1e-3);  // unclipped they differ
  }
}

TEST_CASE("huang_m1's positional factor is symmetric (w_|r|), m2's is not, m1 takes no clip", "[pe][huang]") {
  Tensor positions = random_positions(2, 7, 77, 0, 16);
  for (const char* name : {"huang_m1", "huang_m2"}) {
    nn::BertConfig c = tiny_config(name, opts(R"({"share": "none"})"));
    auto pe = make(c);
    randomize(*pe, 78);
    auto& scalar = dynamic_cast<pe::HuangScalar&>(*pe);
    std::vector<double> g = scalar.gates(1, positions).value().contiguous().to_doubles();
    REQUIRE(g.size() == 2 * 3 * 7 * 7);
    double asymmetry = 0;
    for (int64_t bh = 0; bh < 6; ++bh)
      for (int64_t i = 0; i < 7; ++i)
        for (int64_t j = 0; j < 7; ++j)
          asymmetry = std::max(asymmetry, std::fabs(g[static_cast<size_t>((bh * 7 + i) * 7 + j)] -
                                                    g[static_cast<size_t>((bh * 7 + j) * 7 + i)]));
    INFO(name << ": largest |w(i, j) - w(j, i)| = " << asymmetry);
    if (std::string(name) == "huang_m1")
      CHECK(asymmetry == 0);
    else
      CHECK(asymmetry > 1e-3);
  }
  // "We do not apply the clipping value k" for method 1: clip is no option of it.
  CHECK_THROWS_WITH(make(tiny_config("huang_m1", opts(R"({"clip": 2})"))), Catch::Contains("clip"));
}

TEST_CASE("huang_m1..m3 start as plain q.k attention (gates at 1), m4 as HF's normal(0, 0.02)", "[pe][huang]") {
  Tensor positions = random_positions(2, 5, 79, 0, 16);
  nn::Context ctx = nn::Context::eval();
  Var q(ordo::test::random_tensor({2, 3, 5, 4}, 80, DType::f32)), k(ordo::test::random_tensor({2, 3, 5, 4}, 81, DType::f32));
  Tensor plain = matmul(q.value(), k.value(), false, true);
  for (const char* name : {"huang_m1", "huang_m2", "huang_m3"}) {
    nn::BertConfig c = tiny_config(name);
    auto pe = make(c);
    nn::initialize(*pe, 1);
    Var s = pe->contextual_scores(state(c, 0, positions, nullptr, ctx, DType::f32), q, k);
    INFO(name);
    CHECK(max_abs_error(s.value(), plain) <= 1e-6);
    for (auto& [n, p] : pe->named_parameters()) CHECK(!p->decay);  // gates: no weight decay
  }
  auto m4 = make(tiny_config("huang_m4"));
  nn::initialize(*m4, 1);
  std::vector<double> a = values(*m4, "encoder.layer.0.attention.self.distance_embedding.weight");
  double sq = 0;
  for (double v : a) sq += v * v;
  const double sd = std::sqrt(sq / static_cast<double>(a.size()));
  CHECK(sd > 0.01);
  CHECK(sd < 0.03);
}

TEST_CASE("huang family: table sizes per sharing mode (Huang et al. 2020, Table 1)", "[pe][huang]") {
  // m layers = 2, h heads = 3, n = 16 positions, d = 4.
  const int64_t m = 2, h = 3, n = 16, d = 4;
  json::Value none = opts(R"({"share": "none"})");
  CHECK(make(tiny_config("huang_m1", none))->parameter_count() == m * h * n);
  CHECK(make(tiny_config("huang_m2", none))->parameter_count() == m * h * (2 * n - 1));
  CHECK(make(tiny_config("huang_m3", none))->parameter_count() == m * h * (2 * n - 1) * d);
  CHECK(make(tiny_config("huang_m4", none))->parameter_count() == m * h * (2 * n - 1) * d);
  // Default share = heads: one table per layer (HF's distance_embedding for m4).
  CHECK(make(tiny_config("huang_m4"))->parameter_count() == m * (2 * n - 1) * d);
  CHECK(make(tiny_config("huang_m1", opts(R"({"share": "all"})")))->parameter_count() == n);
  CHECK(make(tiny_config("huang_m3", opts(R"({"share": "layers", "clip": 2})")))->parameter_count() == h * 5 * d);
}

TEST_CASE("huang family: gradients through the hooks and the attention sublayer (f64 finite differences)",
          "[pe][huang][gradcheck]") {
  Tensor positions = random_positions(2, 5, 82, 0, 16);
  nn::Context ctx = nn::Context::eval();
  for (const char* name : {"huang_m1", "huang_m2", "huang_m3", "huang_m4"}) {
    for (const char* share : {"none", "all"}) {
      json::Value o = json::Value::object();
      o["share"] = share;
      nn::BertConfig c = tiny_config(name, o);
      auto pe = make(c);
      Tensor q = ordo::test::random_tensor({2, 3, 5, 4}, 83), k = ordo::test::random_tensor({2, 3, 5, 4}, 84);
      GradcheckResult r = check_parameters(*pe, {q, k}, [&](const std::vector<Var>& in) {
        Var s = pe->contextual_scores(state(c, 1, positions, nullptr, ctx), in[0], in[1]);
        return s.defined() ? s : pe->score_bias(state(c, 1, positions, nullptr, ctx), in[0], in[1]);
      });
      INFO(name << " share " << share << ": " << r.worst);
      CHECK(r.ok);
    }
    GradcheckResult a = check_attention(tiny_config(name), positions);
    INFO(name << " attention: " << a.worst);
    CHECK(a.ok);
  }
}

TEST_CASE("huang family beyond the training length: max_distance, clip, and a clear error", "[pe][huang]") {
  Tensor far = random_positions(2, 6, 85, 0, 90);
  const json::Value wide = opts(R"({"max_distance": 100})");
  require_matches(compare_with_naive(tiny_config("huang_m1", wide), far, method1("heads")), "m1 max_distance 100");
  require_matches(compare_with_naive(tiny_config("huang_m4", wide), far, method4("heads", -1, 100)),
                  "m4 max_distance 100");
  require_matches(compare_with_naive(tiny_config("huang_m3", opts(R"({"clip": 6})")), far, method3("heads", 6, 6)),
                  "m3 clip 6 at distances up to 89");
  nn::Context ctx = nn::Context::eval();
  Tensor beyond = Tensor::from_vector(std::vector<int64_t>{0, 40, 3}, {1, 3});
  Var q(ordo::test::random_tensor({1, 3, 3, 4}, 86, DType::f32));
  for (const char* name : {"huang_m1", "huang_m2", "huang_m3", "huang_m4"}) {
    nn::BertConfig c = tiny_config(name);
    auto pe = make(c);
    auto call = [&] {
      Var s = pe->contextual_scores(state(c, 0, beyond, nullptr, ctx, DType::f32), q, q);
      if (!s.defined()) pe->score_bias(state(c, 0, beyond, nullptr, ctx, DType::f32), q, q);
    };
    INFO(name);
    CHECK_THROWS_WITH(call(), Catch::Contains(name) && Catch::Contains("40") && Catch::Contains("max_distance"));
  }
}

TEST_CASE("relative family: every variant depends on positions only through j - i", "[pe][relative][huang]") {
  // The whole attention sublayer, positions shifted by a constant: identical
  // scores and output, bit for bit.
  Tensor positions = random_positions(2, 6, 87, 0, 16);
  for (const char* name : {"rpe_shaw", "rpe_sin", "rpe_sin_learnable", "xlnet", "huang_m1", "huang_m2", "huang_m3",
                           "huang_m4"}) {
    json::Value o = json::Value::object();
    if (std::string(name).rfind("rpe", 0) == 0) o["value"] = true;
    nn::BertConfig c = tiny_config(name, o);
    nn::SelfAttention attention(c, Device::cpu());
    auto pe = make(c);
    randomize(attention, 88);
    randomize(*pe, 89);
    Var x(ordo::test::random_tensor({2, 6, 12}, 90));
    Tensor mask = nn::attention_bias(Tensor(), 2, 6, false, DType::f64, Device::cpu());
    nn::Context ctx = nn::Context::eval();
    auto run = [&](const Tensor& p, nn::ForwardTrace& t) {
      t.keep_scores = true;
      return attention.forward(x, Var(mask), *pe, 1, p, Tensor(), ctx, &t).value();
    };
    nn::ForwardTrace t1, t2;
    Tensor a = run(positions, t1), b = run(shifted(positions, 1000), t2);
    INFO(name);
    CHECK(max_abs_error(a, b) == 0);
    CHECK(max_abs_error(t1.scores.at(0), t2.scores.at(0)) == 0);
    // And the positions do matter (a permutation that changes the distances
    // |r| too, for huang_m1, changes the output).
    Tensor reversed = Tensor::from_vector(std::vector<int64_t>{0, 3, 1, 5, 2, 4, 4, 0, 5, 1, 3, 2}, {2, 6});
    Tensor ordered = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}, {2, 6});
    nn::ForwardTrace t3, t4;
    CHECK(max_abs_error(run(reversed, t3), run(ordered, t4)) > 1e-6);
  }
}

TEST_CASE("huang_m1..m4 answer the analyses: each table's rows in ascending offset (Huang et al. 2020, Fig. 4)",
          "[pe][huang]") {
  // Row of offset r read by hand from each layout: m1 row |r| (one scalar),
  // m2 row reach - c(r) (one scalar), m3/m4 row reach - r (d_h = 4 values);
  // layer 2, the first head's table (share none) or the layer's (heads).
  struct Case {
    const char* name;
    const char* options;
    std::string table;
    int64_t reach, width;
    bool magnitude;
  };
  const std::vector<Case> cases = {
      {"huang_m1", R"({"share": "none"})", "encoder.layer.1.attention.self.distance_gate.0.weight", 15, 1, true},
      {"huang_m2", R"({"share": "none", "clip": 3})", "encoder.layer.1.attention.self.distance_gate.0.weight", 3, 1,
       false},
      {"huang_m3", R"({"share": "none"})", "encoder.layer.1.attention.self.distance_gate.0.weight", 15, 4, false},
      {"huang_m4", "{}", "encoder.layer.1.attention.self.distance_embedding.weight", 15, 4, false},
  };
  for (const Case& k : cases) {
    INFO(k.name);
    auto pe = make(tiny_config(k.name, opts(k.options)));
    randomize(*pe, 90);
    const std::vector<double> table = values(*pe, k.table);
    nn::PositionEncoding::OffsetVectors v = pe->offset_vectors(1, 5);
    const int64_t span = std::min<int64_t>(5, k.reach);
    REQUIRE(v.vectors.shape() == Shape{2 * span + 1, k.width});
    CHECK(v.first_offset == -span);
    const std::vector<double> got = v.vectors.to_doubles();
    for (int64_t r = -span; r <= span; ++r) {
      const int64_t row = k.magnitude ? std::abs(r) : k.reach - r;
      for (int64_t m = 0; m < k.width; ++m)
        CHECK(got[static_cast<size_t>((r + span) * k.width + m)] == table[static_cast<size_t>(row * k.width + m)]);
    }
  }
  CHECK(make(tiny_config("huang_m4"))->offset_vectors(0, 2).source ==
        "a_r (huang_m4 distance embedding of layer 1, offsets -2..2)");
}
