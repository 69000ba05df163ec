// rel_scalar: s_ij += R_h[p_j - p_i] per layer and head, no bucketing or
// clipping (Chen et al. 2021, Eq. 8 and 11, REL-SCALAR).
#include "tests/pe/score_term_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;

TEST_CASE("rel_scalar matches a naive loop over i, j from Chen et al.'s Eq. 8", "[pe]") {
  for (std::string share : {"none", "heads", "layers", "all"}) {
    json::Value o = json::parse(R"({"max_distance": 40})");
    o["share"] = share;
    nn::BertConfig c = tiny_config("rel_scalar", o);
    auto pe = make(c);
    randomize(*pe, 5);
    // Positions far beyond the training length (16): only distances matter.
    Tensor positions = random_positions(2, 8, 17, 500, 541);
    std::vector<int64_t> p = positions.to_vector<int64_t>();
    nn::Context ctx = nn::Context::eval();
    for (int layer = 0; layer < 2; ++layer) {
      Var bias = pe->score_bias(state(c, layer, positions, nullptr, ctx), Var(), Var());
      std::vector<double> expected;
      for (int64_t b = 0; b < 2; ++b)
        for (int h = 0; h < 3; ++h) {
          std::vector<double> R = values(*pe, shared_table_name("relative_scalar", share, layer, h));
          REQUIRE(R.size() == 81);  // r = -40 .. 40
          for (int64_t i = 0; i < 8; ++i)
            for (int64_t j = 0; j < 8; ++j) expected.push_back(R[static_cast<size_t>(p[b * 8 + j] - p[b * 8 + i] + 40)]);
        }
      INFO("share " << share << ", layer " << layer);
      CHECK(max_abs_error(bias.value(), expected) <= 1e-12);
    }
  }
}

TEST_CASE("rel_scalar: gradients of the tables and of the attention inputs", "[pe][gradcheck]") {
  nn::BertConfig c = tiny_config("rel_scalar");
  auto pe = make(c);
  Tensor positions = random_positions(2, 6, 3, 0, 16);
  nn::Context ctx = nn::Context::eval();
  GradcheckResult r = check_parameters(*pe, {}, [&](const std::vector<Var>&) {
    return pe->score_bias(state(c, 0, positions, nullptr, ctx), Var(), Var());
  });
  INFO(r.worst);
  CHECK(r.ok);
  GradcheckResult a = check_attention(c, positions);
  INFO(a.worst);
  CHECK(a.ok);
}

TEST_CASE("rel_scalar: relative, unscaled, a distance beyond the table names max_distance, sharing counts", "[pe]") {
  nn::BertConfig c = tiny_config("rel_scalar");  // max_distance defaults to 15
  auto pe = make(c);
  randomize(*pe, 2);
  nn::Context ctx = nn::Context::eval();
  Tensor positions = random_positions(1, 9, 6, 0, 16);
  Var a = pe->score_bias(state(c, 1, positions, nullptr, ctx), Var(), Var());
  // Shifted and beyond the training length: the same term.
  Var b = pe->score_bias(state(c, 1, shifted(positions, 1000), nullptr, ctx), Var(), Var());
  CHECK(max_abs_error(a.value(), b.value()) == 0);
  // Positions twice as far apart: distances up to 30 > 15 are outside the table.
  Tensor doubled = mul(positions, Tensor::scalar(2, DType::i64));
  Tensor spread = Tensor::from_vector(std::vector<int64_t>{0, 3, 16}, {1, 3});
  CHECK_THROWS_WITH(pe->score_bias(state(c, 0, spread, nullptr, ctx), Var(), Var()),
                    Catch::Contains("rel_scalar") && Catch::Contains("max_distance") && Catch::Contains("16"));
  json::Value wide = json::parse(R"({"max_distance": 40})");
  auto wider = make(tiny_config("rel_scalar", wide));
  CHECK_NOTHROW(wider->score_bias(state(c, 0, doubled, nullptr, ctx), Var(), Var()));

  UnscaledCheck u = attention_of_bias_alone(c, positions);
  CHECK(max_abs_error(u.probs, u.expected) <= 1e-12);

  const int64_t L = 2, H = 3, width = 2 * 15 + 1;
  std::vector<std::pair<std::string, int64_t>> counts = {
      {"none", L * H * width}, {"heads", L * width}, {"layers", H * width}, {"all", width}};
  for (auto& [share, n] : counts) {
    json::Value o = json::Value::object();
    o["share"] = share;
    CHECK(make(tiny_config("rel_scalar", o))->parameter_count() == n);
  }
  CHECK(pe->parameter_count() == L * H * width);  // a table per layer and head by default
  CHECK_THROWS_WITH(make(tiny_config("rel_scalar", json::parse(R"({"share": "rows"})"))), Catch::Contains("share"));
}

TEST_CASE("rel_scalar: a short pretraining run learns", "[pe][pretrain]") {
  require_learning(smoke_pretrain("rel_scalar"));
}
