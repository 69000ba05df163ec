// abs_scalar: s_ij += (P_h P_h^T)_{p_i p_j}, P_h in R^{Lmax x rank} per
// layer and head (Chen et al. 2021, Eq. 7, ABS-SCALAR).
#include "tests/pe/score_term_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;

TEST_CASE("abs_scalar matches a naive loop over i, j, d from Chen et al.'s Eq. 7", "[pe]") {
  for (std::string share : {"none", "heads", "layers", "all"}) {
    json::Value o = json::parse(R"({"rank": 3})");
    o["share"] = share;
    nn::BertConfig c = tiny_config("abs_scalar", o);
    auto pe = make(c);
    randomize(*pe, 8);
    Tensor positions = random_positions(2, 7, 12, 0, 16);
    std::vector<int64_t> p = positions.to_vector<int64_t>();
    nn::Context ctx = nn::Context::eval();
    for (int layer = 0; layer < 2; ++layer) {
      Var bias = pe->score_bias(state(c, layer, positions, nullptr, ctx), Var(), Var());
      std::vector<double> expected;
      for (int64_t b = 0; b < 2; ++b)
        for (int h = 0; h < 3; ++h) {
          std::vector<double> P = values(*pe, shared_table_name("position_scalar", share, layer, h));
          REQUIRE(P.size() == 16 * 3);
          for (int64_t i = 0; i < 7; ++i)
            for (int64_t j = 0; j < 7; ++j) {
              double dot = 0;
              for (int64_t d = 0; d < 3; ++d) dot += P[p[b * 7 + i] * 3 + d] * P[p[b * 7 + j] * 3 + d];
              expected.push_back(dot);
            }
        }
      INFO("share " << share << ", layer " << layer);
      CHECK(max_abs_error(bias.value(), expected) <= 1e-12);
    }
  }
}

TEST_CASE("abs_scalar: gradients of the tables and of the attention inputs", "[pe][gradcheck]") {
  nn::BertConfig c = tiny_config("abs_scalar");
  auto pe = make(c);
  // Repeated positions: the gradient of a row used twice adds up.
  Tensor positions = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3, 4, 15, 3, 3, 9, 0}, {2, 5});
  nn::Context ctx = nn::Context::eval();
  GradcheckResult r = check_parameters(*pe, {}, [&](const std::vector<Var>&) {
    return pe->score_bias(state(c, 1, positions, nullptr, ctx), Var(), Var());
  });
  INFO(r.worst);
  CHECK(r.ok);
  GradcheckResult a = check_attention(c, positions);
  INFO(a.worst);
  CHECK(a.ok);
}

TEST_CASE("abs_scalar: symmetric in (i, j), a position beyond the table names max_position, rank and sharing counts",
          "[pe]") {
  nn::BertConfig c = tiny_config("abs_scalar");
  auto pe = make(c);
  randomize(*pe, 4);
  nn::Context ctx = nn::Context::eval();
  Tensor positions = random_positions(1, 8, 2, 0, 16);
  Tensor term = pe->score_bias(state(c, 0, positions, nullptr, ctx), Var(), Var()).value().contiguous();
  CHECK(max_abs_error(term, term.transpose(2, 3).contiguous()) == 0);
  CHECK(pe->max_position() == 15);
  Tensor beyond = Tensor::from_vector(std::vector<int64_t>{0, 5, 16}, {1, 3});
  CHECK_THROWS_WITH(pe->score_bias(state(c, 0, beyond, nullptr, ctx), Var(), Var()),
                    Catch::Contains("abs_scalar") && Catch::Contains("16") && Catch::Contains("max_position"));
  auto longer = make(tiny_config("abs_scalar", json::parse(R"({"max_position": 40})")));
  CHECK_NOTHROW(longer->score_bias(state(c, 0, beyond, nullptr, ctx), Var(), Var()));

  UnscaledCheck u = attention_of_bias_alone(c, positions);
  CHECK(max_abs_error(u.probs, u.expected) <= 1e-12);

  // rank d_h = 4 by default, Lmax = max_position_embeddings = 16.
  const int64_t L = 2, H = 3, table = 16 * 4;
  CHECK(pe->parameter_count() == L * H * table);
  std::vector<std::pair<std::string, int64_t>> counts = {
      {"none", L * H * table}, {"heads", L * table}, {"layers", H * table}, {"all", table}};
  for (auto& [share, n] : counts) {
    json::Value o = json::Value::object();
    o["share"] = share;
    CHECK(make(tiny_config("abs_scalar", o))->parameter_count() == n);
  }
  CHECK(make(tiny_config("abs_scalar", json::parse(R"({"rank": 8})")))->parameter_count() == L * H * 16 * 8);
}

TEST_CASE("abs_scalar: a short pretraining run learns", "[pe][pretrain]") {
  require_learning(smoke_pretrain("abs_scalar"));
}
