// xlnet (pe/xlnet.h), Huang et al. 2020, Eq. 10, r_ij = p_j - p_i:
//   s_ij = ((q_i + u) . k_j + (q_i + v) . (R_{i-j} W^R)) / sqrt(d_h)
// R_x the fixed sinusoid at x = i - j = -r_ij over the hidden size D,
// (sin, cos) pairs interleaved, w_m = 10000^(-2m/D); W^R [H d_h, D] per layer.
#include "pe/xlnet.h"
#include "tests/pe/relative_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;
using namespace ordo::rel_test;

namespace {

json::Value opts(const std::string& text) { return json::parse(text); }

// Eq. 10 in loops. hidden = D; W^R under its checkpoint name, per layer
// (share none/heads) or one (layers/all); u, v tables by `share`.
Equation xlnet_equation(const std::string& share, int64_t clip, bool biases, int64_t hidden) {
  return {[=](const Pair& x) {
            const bool per_layer = share == "none" || share == "heads";
            const std::vector<double>& W = x.p.at(
                per_layer ? "encoder.layer." + std::to_string(x.layer) + ".attention.self.xlnet_r.weight"
                          : "encoder.xlnet_r.weight");
            const double at = -static_cast<double>(clipped(x.r, clip));  // i - j, the papers' sign
            std::vector<double> R(static_cast<size_t>(hidden));
            for (int64_t m = 0; m < hidden / 2; ++m) {
              const double w = std::pow(10000.0, -2.0 * static_cast<double>(m) / static_cast<double>(hidden));
              R[static_cast<size_t>(2 * m)] = std::sin(w * at);
              R[static_cast<size_t>(2 * m + 1)] = std::cos(w * at);
            }
            double s = 0;
            for (int64_t e = 0; e < x.d; ++e) {
              // (R_{i-j} W^R)_{h, e}: row h d + e of the [H d, D] weight.
              double loc = 0;
              for (int64_t c = 0; c < hidden; ++c)
                loc += R[static_cast<size_t>(c)] * W[static_cast<size_t>((x.h * x.d + e) * hidden + c)];
              const double u = biases ? x.p.at(table_name(share, "xlnet_u", x.layer, x.h))[static_cast<size_t>(e)] : 0.0;
              const double v = biases ? x.p.at(table_name(share, "xlnet_v", x.layer, x.h))[static_cast<size_t>(e)] : 0.0;
              s += (x.q[e] + u) * x.k[e] + (x.q[e] + v) * loc;
            }
            return s / std::sqrt(static_cast<double>(x.d));
          },
          {}};
}

}  // namespace

TEST_CASE("xlnet matches Eq. 10 of Huang et al. in naive loops: sharing modes, no biases, clipping", "[pe][xlnet]") {
  // No table: distances up to 299 both ways, positions unordered.
  Tensor positions = random_positions(2, 6, 91, 0, 300);
  for (std::string share : {"none", "heads", "layers", "all"}) {
    json::Value o = json::Value::object();
    o["share"] = share;
    require_matches(compare_with_naive(tiny_config("xlnet", o), positions, xlnet_equation(share, -1, true, 12)),
                    "share " + share);
  }
  require_matches(compare_with_naive(tiny_config("xlnet", opts(R"({"biases": false})")), positions,
                                     xlnet_equation("none", -1, false, 12)),
                  "no biases");
  require_matches(compare_with_naive(tiny_config("xlnet", opts(R"({"clip": 7})")), positions,
                                     xlnet_equation("none", 7, true, 12)),
                  "clip 7");
  // Consecutive positions: the location term as a banded op.
  Tensor counting = consecutive_positions({2, 0}, 6);
  REQUIRE(runs_banded(dynamic_cast<pe::XLNetRelative&>(*make(tiny_config("xlnet"))).distances(), counting));
  require_matches(compare_with_naive(tiny_config("xlnet", opts(R"({"share": "none"})")), counting,
                                     xlnet_equation("none", -1, true, 12)),
                  "banded");
}

TEST_CASE("xlnet: parameters, gradients (f64 finite differences), clipping", "[pe][xlnet][gradcheck]") {
  // W^R [H d, D] per layer, u and v [d] per layer and head by default.
  const int64_t L = 2, H = 3, d = 4, D = 12;
  CHECK(make(tiny_config("xlnet"))->parameter_count() == L * H * d * D + 2 * L * H * d);
  CHECK(make(tiny_config("xlnet", opts(R"({"biases": false})")))->parameter_count() == L * H * d * D);
  CHECK(make(tiny_config("xlnet", opts(R"({"share": "all"})")))->parameter_count() == H * d * D + 2 * d);
  CHECK_THROWS_WITH(make(tiny_config("xlnet", opts(R"({"max_distance": 40})"))), Catch::Contains("max_distance"));

  Tensor positions = random_positions(2, 5, 92, 0, 50);
  nn::Context ctx = nn::Context::eval();
  nn::BertConfig c = tiny_config("xlnet");
  auto pe = make(c);
  Tensor q = ordo::test::random_tensor({2, 3, 5, 4}, 93), k = ordo::test::random_tensor({2, 3, 5, 4}, 94);
  GradcheckResult r = check_parameters(*pe, {q, k}, [&](const std::vector<Var>& in) {
    return pe->score_bias(state(c, 1, positions, nullptr, ctx), in[0], in[1]);
  });
  INFO(r.worst);
  CHECK(r.ok);
  GradcheckResult a = check_attention(tiny_config("xlnet", opts(R"({"share": "heads"})")), positions);
  INFO(a.worst);
  CHECK(a.ok);

  // Clipped at k = 2: distances beyond 2 are the same.
  Tensor p = Tensor::from_vector(std::vector<int64_t>{0, 1, 4, 9, 20}, {1, 5});
  Tensor p2 = Tensor::from_vector(std::vector<int64_t>{0, 1, 6, 30, 50}, {1, 5});
  nn::BertConfig cc = tiny_config("xlnet", opts(R"({"clip": 2})"));
  auto clipped_pe = make(cc);
  randomize(*clipped_pe, 95);
  Var qv(ordo::test::random_tensor({1, 3, 5, 4}, 96)), kv(ordo::test::random_tensor({1, 3, 5, 4}, 97));
  CHECK(max_abs_error(clipped_pe->score_bias(state(cc, 0, p, nullptr, ctx), qv, kv).value(),
                      clipped_pe->score_bias(state(cc, 0, p2, nullptr, ctx), qv, kv).value()) == 0);
  auto free_pe = make(c);
  randomize(*free_pe, 95);
  CHECK(max_abs_error(free_pe->score_bias(state(c, 0, p, nullptr, ctx), qv, kv).value(),
                      free_pe->score_bias(state(c, 0, p2, nullptr, ctx), qv, kv).value()) > 1e-3);
}
