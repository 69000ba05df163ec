// segment = per_head: S_ij = Seg_h[seg(i), seg(j)] added to every head's
// scores, no token-type embedding at the input (Chen et al. 2021, Eq. 9-11).
#include "nn/heads.h"
#include "pe/segments.h"
#include "tests/pe/score_term_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;

namespace {

nn::BertConfig per_head(const std::string& pe, const std::string& share = "none", int64_t types = 2) {
  nn::BertConfig c = tiny_config(pe, pe == "rel_scalar" ? json::parse(R"({"max_distance": 20})") : json::Value::object());
  c.segment = "per_head";
  c.segment_share = share;
  c.type_vocab_size = types;
  return c;
}

}  // namespace

TEST_CASE("per-head segments match a naive loop over i, j from Eq. 9-11, on top of REL-SCALAR", "[pe]") {
  for (std::string share : {"none", "heads", "layers", "all"}) {
    nn::BertConfig c = per_head("rel_scalar", share, 3);  // three segment types: 9 scalars a head
    auto pe = make(c);
    REQUIRE(pe->adds_segment_scores());
    CHECK(pe->name() == "rel_scalar");
    randomize(*pe, 13);
    Tensor positions = random_positions(2, 7, 3, 0, 16);
    Tensor segments = random_positions(2, 7, 4, 0, 3);
    std::vector<int64_t> p = positions.to_vector<int64_t>(), g = segments.to_vector<int64_t>();
    nn::Context ctx = nn::Context::eval();
    for (int layer = 0; layer < 2; ++layer) {
      Var bias = pe->score_bias(state(c, layer, positions, &segments, ctx), Var(), Var());
      std::vector<double> expected;
      for (int64_t b = 0; b < 2; ++b)
        for (int h = 0; h < 3; ++h) {
          std::vector<double> seg = values(*pe, shared_table_name("segment_encoding", share, layer, h));
          std::vector<double> R = values(*pe, "position_encoding.relative_scalar.layer_" + std::to_string(layer) +
                                                  ".head_" + std::to_string(h));
          REQUIRE(seg.size() == 9);
          for (int64_t i = 0; i < 7; ++i)
            for (int64_t j = 0; j < 7; ++j)
              expected.push_back(R[static_cast<size_t>(p[b * 7 + j] - p[b * 7 + i] + 20)] +
                                 seg[static_cast<size_t>(g[b * 7 + i] * 3 + g[b * 7 + j])]);
        }
      INFO("share " << share << ", layer " << layer);
      CHECK(max_abs_error(bias.value(), expected) <= 1e-12);
    }
  }
}

TEST_CASE("per-head segments alone (input-level positions): S only, all-zero segments when none are given", "[pe]") {
  nn::BertConfig c = per_head("ape_learned");
  auto pe = make(c);
  randomize(*pe, 2);
  Tensor positions = nn::default_positions(1, 4, Device::cpu());
  nn::Context ctx = nn::Context::eval();
  std::vector<double> seg = values(*pe, "segment_encoding.layer_1.head_2");
  Tensor bias = pe->score_bias(state(c, 1, positions, nullptr, ctx), Var(), Var()).value();
  REQUIRE(bias.shape() == Shape{1, 3, 4, 4});
  // Head 2, every entry Seg[0, 0].
  std::vector<double> head2 = bias.select(1, 2).contiguous().to_doubles();
  for (double x : head2) CHECK(x == seg[0]);
  Tensor bad = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 0}, {1, 4});
  CHECK_THROWS_WITH(pe->score_bias(state(c, 0, positions, &bad, ctx), Var(), Var()),
                    Catch::Contains("segment id 2") && Catch::Contains("type_vocab_size"));
}

TEST_CASE("per-head segments: gradients of the segment scalars and of the attention inputs", "[pe][gradcheck]") {
  nn::BertConfig c = per_head("rel_scalar");
  auto pe = make(c);
  Tensor positions = random_positions(2, 6, 3, 0, 16);
  Tensor segments = Tensor::from_vector(std::vector<int64_t>{0, 0, 0, 1, 1, 1, 0, 1, 0, 1, 1, 0}, {2, 6});
  nn::Context ctx = nn::Context::eval();
  GradcheckResult r = check_parameters(*pe, {}, [&](const std::vector<Var>&) {
    return pe->score_bias(state(c, 0, positions, &segments, ctx), Var(), Var());
  });
  INFO(r.worst);
  CHECK(r.ok);
  GradcheckResult a = check_attention(c, positions, segments);
  INFO(a.worst);
  CHECK(a.ok);
}

TEST_CASE("segment = per_head in the model: no token-type embedding, segments act through the scores", "[pe]") {
  nn::BertConfig c = per_head("rel_scalar");
  auto model = model::build_model(c, Device::cpu(), true, 3);
  CHECK(model->bert.embeddings.token_type_embeddings == nullptr);
  CHECK(model->find_parameter("bert.embeddings.token_type_embeddings.weight") == nullptr);
  CHECK(model->find_parameter("bert.segment_encoding.layer_0.head_0") != nullptr);
  CHECK(model->find_parameter("bert.position_encoding.relative_scalar.layer_1.head_2") != nullptr);
  nn::BertConfig input = tiny_config("rel_scalar", json::parse(R"({"max_distance": 20})"));
  auto with_input = model::build_model(input, Device::cpu(), true, 3);
  REQUIRE(with_input->bert.embeddings.token_type_embeddings != nullptr);
  // k^2 scalars a head and layer replace the [k, hidden] token-type table.
  CHECK(model->parameter_count() - with_input->parameter_count() == 2 * 3 * 4 - 2 * 12);

  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(std::vector<int64_t>{2, 7, 4, 9, 3, 5}, {1, 6});
  in.segment_ids = Tensor::from_vector(std::vector<int64_t>{0, 0, 0, 1, 1, 1}, {1, 6});
  nn::Context ctx = nn::Context::eval();
  Tensor a = model->bert.forward(in, ctx).value();
  in.segment_ids = Tensor::from_vector(std::vector<int64_t>{0, 0, 1, 1, 1, 1}, {1, 6});
  Tensor b = model->bert.forward(in, ctx).value();
  CHECK(max_abs_error(a, b) > 1e-6);  // the segments reach the output

  // A position encoding not made for per-head segments is refused by the model.
  CHECK_THROWS_WITH(nn::BertModel(c, make(input), Device::cpu(), false), Catch::Contains("per-head segment"));
  CHECK_THROWS_WITH(nn::BertModel(input, make(c), Device::cpu(), false), Catch::Contains("per-head segment"));
}

TEST_CASE("segment and segment_share in the config: validated, round trip, sharing counts", "[pe]") {
  json::Value j = json::parse(R"({"hidden_size": 12, "num_attention_heads": 3, "segment": "per_head",
                                  "segment_share": "layers"})");
  nn::BertConfig c = nn::config_from_json(j, "test");
  CHECK(c.segment == "per_head");
  CHECK(c.segment_share == "layers");
  nn::BertConfig back = nn::config_from_json(nn::config_to_json(c), "test", true);
  CHECK(back.segment == "per_head");
  CHECK(back.segment_share == "layers");
  CHECK(nn::config_from_json(json::parse("{}"), "test").segment == "input");
  CHECK_THROWS_WITH(nn::config_from_json(json::parse(R"({"segment": "both"})"), "test"), Catch::Contains("segment"));
  CHECK_THROWS_WITH(nn::config_from_json(json::parse(R"({"segment_share": "heads"})"), "test"),
                    Catch::Contains("segment_share") && Catch::Contains("per_head"));
  CHECK_THROWS_WITH(nn::config_from_json(json::parse(R"({"segment": "per_head", "segment_share": "rows"})"), "test"),
                    Catch::Contains("segment_share"));
  const int64_t L = 2, H = 3, k2 = 4;
  std::vector<std::pair<std::string, int64_t>> counts = {{"none", L * H * k2}, {"heads", L * k2}, {"layers", H * k2}, {"all", k2}};
  for (auto& [share, n] : counts) CHECK(make(per_head("none", share))->parameter_count() == n);
}

TEST_CASE("per-head segments: a short pretraining run with NSP (two segments) learns", "[pe][pretrain]") {
  require_learning(smoke_pretrain("rel_scalar", json::Value::object(), "per_head", "mlm+nsp"));
}
