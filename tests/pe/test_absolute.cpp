// ape_learned and none: x_i = w_i + s_i + P[p_i] (Wang et al. 2021, Eq. 5;
// Huang et al. 2020, Eq. 6), read at explicit positions, and the clear error
// for a position the table does not hold.
#include "tests/pe/score_term_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;
using Catch::Matchers::Contains;

TEST_CASE("ape_learned: P(p_i) at explicit positions, row by row, none adds nothing", "[pe]") {
  nn::BertConfig c = tiny_config("ape_learned");  // a 16 x 12 table
  auto pe = make(c);
  randomize(*pe, 5);
  std::vector<double> table = values(*pe, "weight");
  Tensor positions = random_positions(2, 7, 11, 0, 16);  // any order, repeats allowed
  std::vector<int64_t> p = positions.to_vector<int64_t>();
  nn::Context ctx = nn::Context::eval();
  std::vector<double> got = pe->input_embedding(positions, ctx).value().contiguous().to_doubles();
  REQUIRE(got.size() == p.size() * 12);
  for (size_t n = 0; n < p.size(); ++n)
    for (int64_t d = 0; d < 12; ++d) CHECK(got[n * 12 + d] == table[p[n] * 12 + d]);  // a copy: exact

  auto none = make(tiny_config("none"));
  CHECK_FALSE(none->input_embedding(positions, ctx).defined());
  CHECK(none->parameter_count() == 0);
}

TEST_CASE("ape_learned: a position beyond the table is a clear error, not a wrapped read", "[pe]") {
  auto pe = make(tiny_config("ape_learned"));
  nn::Context ctx = nn::Context::eval();
  Tensor inside = Tensor::from_vector(std::vector<int64_t>{0, 15}, {1, 2});
  CHECK_NOTHROW(pe->input_embedding(inside, ctx));
  Tensor beyond = Tensor::from_vector(std::vector<int64_t>{3, 16}, {1, 2});
  CHECK_THROWS_WITH(pe->input_embedding(beyond, ctx),
                    Contains("ape_learned: position 16") && Contains("16 positions (0..15)") &&
                        Contains("max_position_embeddings"));
  Tensor negative = Tensor::from_vector(std::vector<int64_t>{-1, 2}, {1, 2});
  CHECK_THROWS_WITH(pe->input_embedding(negative, ctx), Contains("position -1"));
}
