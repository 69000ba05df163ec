// t5_bias: s_ij += R_h[bucket(p_j - p_i)] (Chen et al. 2021, Eq. 4; Raffel et al. 2020).
#include "pe/scalar_bias.h"
#include "tests/pe/score_term_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;

namespace {

// T5's bucket as its published code computes it (HF transformers'
// T5Attention._relative_position_bucket, bidirectional, relative_position =
// memory_position - query_position), in the f32 arithmetic of that code.
int64_t t5_reference_bucket(int64_t relative_position, int64_t num_buckets = 32, int64_t max_distance = 128) {
  int64_t buckets = 0;
  num_buckets /= 2;
  if (relative_position > 0) buckets += num_buckets;
  int64_t n = relative_position < 0 ? -relative_position : relative_position;
  int64_t max_exact = num_buckets / 2;
  if (n < max_exact) return buckets + n;
  float large = std::log(static_cast<float>(n) / static_cast<float>(max_exact)) /
                static_cast<float>(std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact))) *
                static_cast<float>(num_buckets - max_exact);
  int64_t if_large = max_exact + static_cast<int64_t>(large);
  return buckets + std::min<int64_t>(if_large, num_buckets - 1);
}

// The bucket of a distance n >= 0 on the query's side (r = -n), worked by
// hand for 32 buckets and max distance 128: exact below 8, then the
// boundaries 8 * 16^(k/8) rounded up: 12, 16, 23, 32, 46, 64, 91.
int64_t hand_bucket(int64_t n) {
  if (n < 8) return n;
  if (n < 12) return 8;
  if (n < 16) return 9;
  if (n < 23) return 10;
  if (n < 32) return 11;
  if (n < 46) return 12;
  if (n < 64) return 13;
  if (n < 91) return 14;
  return 15;
}

}  // namespace

TEST_CASE("t5_bias: the buckets worked by hand, T5's published code, bucket 16 never used", "[pe]") {
  std::vector<int> used(32, 0);
  for (int64_t r = -2000; r <= 2000; ++r) {
    int64_t b = pe::t5_bucket(r, 32, 128);
    int64_t n = r < 0 ? -r : r;
    int64_t expected = (r > 0 ? 16 : 0) + hand_bucket(n);
    INFO("r = " << r);
    REQUIRE(b == expected);
    REQUIRE(b == t5_reference_bucket(r));
    used[static_cast<size_t>(b)]++;
  }
  CHECK(used[16] == 0);  // r > 0 with |r| = 0 cannot happen
  for (int b = 0; b < 32; ++b)
    if (b != 16) CHECK(used[static_cast<size_t>(b)] > 0);
  // Exact below 8, on both sides; keys after the query in the upper half.
  for (int64_t n = 1; n < 8; ++n) {
    CHECK(pe::t5_bucket(-n, 32, 128) == n);
    CHECK(pe::t5_bucket(n, 32, 128) == 16 + n);
  }
  CHECK(pe::t5_bucket(0, 32, 128) == 0);
  // The last bucket of a side starts at distance 91.
  CHECK(pe::t5_bucket(-90, 32, 128) == 14);
  CHECK(pe::t5_bucket(-91, 32, 128) == 15);
  CHECK(pe::t5_bucket(90, 32, 128) == 30);
  CHECK(pe::t5_bucket(91, 32, 128) == 31);
  CHECK(pe::t5_bucket(100000, 32, 128) == 31);
  // Other sizes follow T5's code too.
  for (int64_t r = -600; r <= 600; ++r) {
    INFO("r = " << r);
    REQUIRE(pe::t5_bucket(r, 64, 256) == t5_reference_bucket(r, 64, 256));
    REQUIRE(pe::t5_bucket(r, 16, 40) == t5_reference_bucket(r, 16, 40));
  }
}

TEST_CASE("t5_bias matches a naive loop over i, j from Raffel et al.'s definition", "[pe]") {
  for (std::string share : {"layers", "none", "heads", "all"}) {
    json::Value o = json::Value::object();
    o["share"] = share;
    nn::BertConfig c = tiny_config("t5_bias", o);
    auto pe = make(c);
    randomize(*pe, 3);
    // Positions in any order and beyond the training length (16) and the
    // bucketing's max distance (128): distances up to 299 both ways.
    Tensor positions = random_positions(2, 9, 41, 0, 300);
    std::vector<int64_t> p = positions.to_vector<int64_t>();
    nn::Context ctx = nn::Context::eval();
    for (int layer = 0; layer < 2; ++layer) {
      Var bias = pe->score_bias(state(c, layer, positions, nullptr, ctx), Var(), Var());
      REQUIRE(bias.shape() == Shape{2, 3, 9, 9});
      std::vector<double> expected;
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t h = 0; h < 3; ++h) {
          // The table of (layer, head) as the sharing mode names it.
          std::string name = share == "all"      ? "relative_attention_bias"
                             : share == "heads"  ? "relative_attention_bias.layer_" + std::to_string(layer)
                             : share == "layers" ? "relative_attention_bias.head_" + std::to_string(h)
                                                 : "relative_attention_bias.layer_" + std::to_string(layer) + ".head_" +
                                                       std::to_string(h);
          std::vector<double> table = values(*pe, name);
          REQUIRE(table.size() == 32);
          for (int64_t i = 0; i < 9; ++i)
            for (int64_t j = 0; j < 9; ++j)
              expected.push_back(table[static_cast<size_t>(t5_reference_bucket(p[b * 9 + j] - p[b * 9 + i]))]);
        }
      double err = max_abs_error(bias.value(), expected);
      INFO("share " << share << ", layer " << layer);
      CHECK(err <= 1e-12);
    }
  }
}

TEST_CASE("t5_bias: gradients of the tables and of the attention inputs", "[pe][gradcheck]") {
  nn::BertConfig c = tiny_config("t5_bias");
  auto pe = make(c);
  Tensor positions = random_positions(2, 6, 5, 0, 200);
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

TEST_CASE("t5_bias: relative (shifted positions give the same term), any position, sharing counts", "[pe]") {
  nn::BertConfig c = tiny_config("t5_bias");
  auto pe = make(c);
  randomize(*pe, 9);
  nn::Context ctx = nn::Context::eval();
  Tensor positions = random_positions(2, 7, 8, 0, 100);
  Var a = pe->score_bias(state(c, 0, positions, nullptr, ctx), Var(), Var());
  Var b = pe->score_bias(state(c, 0, shifted(positions, 5000), nullptr, ctx), Var(), Var());
  CHECK(max_abs_error(a.value(), b.value()) == 0);
  CHECK(pe->max_position() == -1);
  // One table of 32 per head shared across layers by default; the options.
  const int64_t L = 2, H = 3;
  std::vector<std::pair<std::string, int64_t>> counts = {
      {"layers", H * 32}, {"none", L * H * 32}, {"heads", L * 32}, {"all", 32}};
  for (auto& [share, n] : counts) {
    json::Value o = json::Value::object();
    o["share"] = share;
    CHECK(make(tiny_config("t5_bias", o))->parameter_count() == n);
  }
  CHECK(make(c)->parameter_count() == H * 32);
  json::Value o = json::parse(R"({"num_buckets": 64, "max_distance": 256})");
  CHECK(make(tiny_config("t5_bias", o))->parameter_count() == H * 64);
  CHECK_THROWS_WITH(make(tiny_config("t5_bias", json::parse(R"({"num_buckets": 30})"))), Catch::Contains("num_buckets"));
  CHECK_THROWS_WITH(make(tiny_config("t5_bias", json::parse(R"({"clip": 3})"))), Catch::Contains("clip"));
}

TEST_CASE("t5_bias: a short pretraining run learns", "[pe][pretrain]") {
  require_learning(smoke_pretrain("t5_bias"));
}

TEST_CASE("t5_bias enters the scores without the 1/sqrt(d_h) of the contextual term", "[pe]") {
  UnscaledCheck u = attention_of_bias_alone(tiny_config("t5_bias"), random_positions(2, 6, 4, 0, 150));
  CHECK(max_abs_error(u.probs, u.expected) <= 1e-12);
}
