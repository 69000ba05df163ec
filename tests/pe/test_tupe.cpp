// TUPE (Ke et al. 2021; Chen et al. 2021, Eq. 5; the locality/symmetry paper,
// Eq. 3 and 13) against plain f64 loops written from the equation:
//
//   s_ij = q_i . k_j / sqrt(2 d_h) + Reset_theta( (p_i U^Q)_h . (p_j U^K)_h / sqrt(2 d_h) + b_h[bucket(j - i)], i, j )
//
// with T5's buckets taken from a hand-written table of boundaries (EQUATIONS.md, t5_bias:
// exact below 8, the last bucket a side from 91 for max distance 128), not
// from ordo's bucketing function. Gradients of P, U^Q, U^K, the bias table
// and the [CLS] scalars against finite differences; the properties the
// definition implies.
#include <cmath>
#include <map>

#include "autograd/gradcheck.h"
#include "model/model.h"
#include "nn/bert.h"
#include "pe/registry.h"
#include "pe/tupe.h"
#include "tests/helpers.h"
#include "tests/pe/score_term_helpers.h"

using namespace ordo;

namespace {

nn::BertConfig tupe_config(bool relative = true, bool cls_reset = true) {
  nn::BertConfig c = ordo::test::tiny_bert_config(/*vocab_size=*/13, /*hidden_size=*/8, /*layers=*/2, /*heads=*/2,
                                                  /*intermediate_size=*/12, /*max_position_embeddings=*/128);
  c.position_embedding_type = "absolute";
  c.pe = "tupe";
  c.pe_options = json::Value::object();
  c.pe_options["relative"] = relative;
  c.pe_options["cls_reset"] = cls_reset;
  return c;
}

// T5's bucket for 32 buckets and max distance 128, by the table of its
// boundaries: |r| = 0..7 exact, 8-11 -> 8, 12-15 -> 9, 16-22 -> 10,
// 23-31 -> 11, 32-45 -> 12, 46-63 -> 13, 64-90 -> 14, 91 and beyond -> 15;
// keys after the query (r > 0) 16 higher.
int64_t bucket_by_hand(int64_t r) {
  const int64_t n = r < 0 ? -r : r;
  const int64_t upper[] = {12, 16, 23, 32, 46, 64, 91};  // first distance of buckets 9 .. 15
  int64_t b = n < 8 ? n : 8;
  if (n >= 8)
    for (int64_t edge : upper) b += n >= edge ? 1 : 0;
  return (r > 0 ? 16 : 0) + b;
}

// Two rows of positions that differ (the general, per-row path) and span
// distances into the logarithmic buckets; the first token is [CLS] whatever its number.
Tensor test_positions() {
  return Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 9, 40, 101, 5, 3, 23, 16, 120, 7}, {2, 6});
}

// The positional term of head h for (i, j) from the equation, in f64 loops.
struct NaiveTupe {
  std::map<std::string, std::vector<double>> v;
  int64_t D = 8, H = 2, dh = 4;
  bool relative = true, cls_reset = true;

  // (p U)_h[d] = sum_e P[pos, e] U[h*dh + d, e]  (U stored as a Linear weight, out x in)
  double projected(const std::string& u, int64_t pos, int64_t h, int64_t d) const {
    double s = 0;
    for (int64_t e = 0; e < D; ++e) s += v.at("position_embeddings")[pos * D + e] * v.at(u)[(h * dh + d) * D + e];
    return s;
  }
  double term(const std::vector<int64_t>& pos, int64_t h, int64_t i, int64_t j) const {
    if (cls_reset && i == 0) return v.at("cls")[h * 2 + 0];  // cls -> others
    if (cls_reset && j == 0) return v.at("cls")[h * 2 + 1];  // others -> cls
    double dot = 0;
    for (int64_t d = 0; d < dh; ++d) dot += projected("position_query", pos[i], h, d) * projected("position_key", pos[j], h, d);
    double t = dot / std::sqrt(2.0 * dh);
    if (relative) t += v.at("relative_attention_bias")[bucket_by_hand(pos[j] - pos[i]) * H + h];
    return t;
  }
};

std::vector<int64_t> row_of(const Tensor& positions, int64_t b) {
  std::vector<int64_t> all = positions.to_vector<int64_t>();
  const int64_t L = positions.size(1);
  return std::vector<int64_t>(all.begin() + b * L, all.begin() + (b + 1) * L);
}

}  // namespace

TEST_CASE("tupe: the positional term equals the equation's loops (TUPE-R and TUPE-A, with and without the reset)",
          "[pe][tupe]") {
  for (bool relative : {true, false}) {
    for (bool reset : {true, false}) {
      nn::BertConfig c = tupe_config(relative, reset);
      auto pe = pe::make_position_encoding(c, Device::cpu());
      auto& tupe = dynamic_cast<pe::Tupe&>(*pe);
      NaiveTupe naive{pe_test::randomize(tupe, 11), 8, 2, 4, relative, reset};
      Tensor positions = test_positions();
      Tensor term = tupe.positional_term(positions).value();
      REQUIRE(term.shape() == Shape{2, 2, 6, 6});
      std::vector<double> expected;
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t i = 0; i < 6; ++i)
            for (int64_t j = 0; j < 6; ++j) expected.push_back(naive.term(row_of(positions, b), h, i, j));
      test::require_close(term, expected, 1e-12, 1e-14,
                          std::string("relative ") + (relative ? "on" : "off") + ", reset " + (reset ? "on" : "off"));
      CHECK((tupe.find_parameter("relative_attention_bias") != nullptr) == relative);
      // No position at the input.
      nn::Context ctx = nn::Context::eval();
      CHECK_FALSE(tupe.input_embedding(positions, ctx).defined());
    }
  }
}

TEST_CASE("tupe: the relative bias follows T5's bucket boundaries on both sides", "[pe][tupe]") {
  nn::BertConfig c = tupe_config(true, false);
  auto pe = pe::make_position_encoding(c, Device::cpu());
  auto& tupe = dynamic_cast<pe::Tupe&>(*pe);
  // Distances 0..127 both ways from position 0 and from position 127.
  std::vector<int64_t> p(128);
  for (int64_t i = 0; i < 128; ++i) p[i] = i;
  Tensor buckets = tupe.buckets(Tensor::from_vector(p, {1, 128}));
  std::vector<int64_t> got = buckets.to_vector<int64_t>();
  int bad = 0;
  for (int64_t i = 0; i < 128; ++i)
    for (int64_t j = 0; j < 128; ++j) bad += got[i * 128 + j] != bucket_by_hand(j - i);
  CHECK(bad == 0);
  CHECK(got[0 * 128 + 90] == 16 + 14);  // r = +90: the second-to-last upper bucket
  CHECK(got[0 * 128 + 91] == 16 + 15);  // r = +91: the last
  CHECK(got[91 * 128 + 0] == 15);       // r = -91
  for (int64_t b : got) CHECK(b != 16);  // r > 0 with |r| = 0 cannot happen
}

TEST_CASE("tupe: self-attention equals the naive loops of Eq. 5 with sqrt(2 d_h)", "[pe][tupe]") {
  nn::BertConfig c = tupe_config();
  auto pe = pe::make_position_encoding(c, Device::cpu());
  NaiveTupe naive{pe_test::randomize(*pe, 21), 8, 2, 4, true, true};
  nn::SelfAttention attention(c, Device::cpu());
  auto w = pe_test::randomize(attention, 31);
  Tensor x = test::random_tensor({2, 6, 8}, 41);
  Tensor mask = Tensor::from_vector(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {2, 6});
  Tensor bias = nn::attention_bias(mask, 2, 6, false, DType::f64, Device::cpu());
  Tensor positions = test_positions();
  nn::Context ctx = nn::Context::eval();
  Tensor out = attention.forward(Var(x), Var(bias), *pe, 1, positions, Tensor(), ctx, nullptr).value();

  std::vector<double> xs = x.to_doubles(), expected;
  auto project = [&](const std::string& m, int64_t b, int64_t i, int64_t o) {
    double s = w[m + ".bias"][o];
    for (int64_t e = 0; e < 8; ++e) s += xs[(b * 6 + i) * 8 + e] * w[m + ".weight"][o * 8 + e];
    return s;
  };
  for (int64_t b = 0; b < 2; ++b) {
    std::vector<int64_t> pos = row_of(positions, b);
    for (int64_t i = 0; i < 6; ++i) {
      std::vector<double> o(8, 0.0);
      for (int64_t h = 0; h < 2; ++h) {
        std::vector<double> s(6);
        double top = -1e300;
        for (int64_t j = 0; j < 6; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < 4; ++d) dot += project("query", b, i, h * 4 + d) * project("key", b, j, h * 4 + d);
          s[j] = dot / std::sqrt(8.0) + naive.term(pos, h, i, j);
          if (b == 1 && j >= 4) s[j] = -1e300;  // padding
          top = std::max(top, s[j]);
        }
        double z = 0;
        for (double& e : s) z += (e = e < -1e299 ? 0 : std::exp(e - top));
        for (int64_t j = 0; j < 6; ++j)
          for (int64_t d = 0; d < 4; ++d) o[h * 4 + d] += s[j] / z * project("value", b, j, h * 4 + d);
      }
      expected.insert(expected.end(), o.begin(), o.end());
    }
  }
  test::require_close(out, expected, 1e-12, 1e-13);
}

TEST_CASE("tupe: P, U^Q, U^K, the bias table and the CLS scalars pass the f64 gradient check", "[pe][tupe][gradcheck]") {
  for (bool relative : {true, false}) {
    nn::BertConfig c = tupe_config(relative, true);
    auto pe = pe::make_position_encoding(c, Device::cpu());
    auto& tupe = dynamic_cast<pe::Tupe&>(*pe);
    pe_test::randomize(tupe, 51);
    std::vector<nn::NamedParameter> params = tupe.named_parameters();
    std::vector<Tensor> values;
    for (auto& [name, p] : params) values.push_back(p->var.value());
    // Small positions so P's checked rows are few; both rows differ.
    Tensor positions = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 12, 3, 5, 4, 0}, {2, 4});
    GradcheckResult r = gradcheck(
        [&](const std::vector<Var>& in) {
          for (size_t i = 0; i < params.size(); ++i) params[i].second->var = in[i];
          return tupe.positional_term(positions);
        },
        values);
    INFO((relative ? "TUPE-R: " : "TUPE-A: ") << r.worst);
    CHECK(r.ok);
    INFO("max abs error " << r.max_abs_error);
    CHECK(params.size() == (relative ? 5u : 4u));
  }
}

TEST_CASE("tupe: a whole self-attention with TUPE passes the f64 gradient check", "[pe][tupe][gradcheck]") {
  nn::BertConfig c = tupe_config();
  c.max_position_embeddings = 12;
  auto pe = pe::make_position_encoding(c, Device::cpu());
  nn::SelfAttention attention(c, Device::cpu());
  pe_test::randomize(*pe, 61);
  pe_test::randomize(attention, 71);
  std::vector<nn::NamedParameter> params = attention.named_parameters();
  for (auto& np : pe->named_parameters()) params.push_back(np);
  std::vector<Tensor> values;
  for (auto& [name, p] : params) values.push_back(p->var.value());
  Tensor x = test::random_tensor({2, 5, 8}, 81);
  Tensor bias = nn::attention_bias(Tensor::from_vector(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {2, 5}), 2, 5,
                                   false, DType::f64, Device::cpu());
  Tensor positions = nn::default_positions(2, 5, Device::cpu());
  nn::Context ctx = nn::Context::eval();
  GradcheckResult r = gradcheck(
      [&](const std::vector<Var>& in) {
        for (size_t i = 0; i < params.size(); ++i) params[i].second->var = in[i];
        return attention.forward(Var(x), Var(bias), *pe, 0, positions, Tensor(), ctx, nullptr);
      },
      values);
  INFO(r.worst);
  CHECK(r.ok);
}

TEST_CASE("tupe: one positional term for every layer, and the CLS row and column are the reset scalars", "[pe][tupe]") {
  nn::BertConfig c = tupe_config();
  c.num_hidden_layers = 3;
  auto model = model::build_model(c, Device::cpu(), false, 3);
  // One set of positional parameters in the whole model, whatever the depth.
  int tables = 0, projections = 0, cls = 0;
  for (auto& [name, p] : model->named_parameters()) {
    tables += name.find("position_embeddings") != std::string::npos;
    projections += name.find("position_query") != std::string::npos || name.find("position_key") != std::string::npos;
    cls += name.find(".cls") != std::string::npos && p->var.shape() == Shape{2, 2};
  }
  CHECK(tables == 1);
  CHECK(projections == 2);
  CHECK(cls == 1);

  nn::PositionEncoding& pe = model->bert.position_encoding();
  auto values = pe_test::randomize(pe, 91);
  const std::vector<double>& theta = values["cls"];
  // The first token carries position 4 here: the reset follows the token, not the number.
  Tensor positions = Tensor::from_vector(std::vector<int64_t>{4, 5, 6, 7, 8}, {1, 5});
  Tensor segments = Tensor::zeros({1, 5}, DType::i64);
  nn::Context ctx = nn::Context::eval();
  std::vector<Tensor> per_layer;
  for (int layer = 0; layer < 3; ++layer) {
    nn::AttentionState s{layer, 2, 4, &positions, &segments, &ctx};
    per_layer.push_back(pe.score_bias(s, Var(), Var()).value());
  }
  CHECK(test::bit_identical(per_layer[0], per_layer[1]));
  CHECK(test::bit_identical(per_layer[0], per_layer[2]));
  std::vector<double> t = per_layer[0].to_doubles();  // [1, 2, 5, 5]
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t j = 0; j < 5; ++j) CHECK(t[(h * 5 + 0) * 5 + j] == theta[h * 2 + 0]);  // cls -> others, cls -> cls
    for (int64_t i = 1; i < 5; ++i) CHECK(t[(h * 5 + i) * 5 + 0] == theta[h * 2 + 1]);  // others -> cls
    CHECK(t[(h * 5 + 1) * 5 + 2] != theta[h * 2 + 0]);
  }
}

TEST_CASE("tupe: positions beyond the table and bad options are clear errors", "[pe][tupe]") {
  nn::BertConfig c = tupe_config();
  c.max_position_embeddings = 8;
  auto pe = pe::make_position_encoding(c, Device::cpu());
  auto& tupe = dynamic_cast<pe::Tupe&>(*pe);
  CHECK(tupe.max_position() == 7);
  CHECK_THROWS_WITH(tupe.positional_term(Tensor::from_vector(std::vector<int64_t>{0, 8}, {1, 2})),
                    Catch::Contains("position 8 is outside the learned table of 8 positions"));
  nn::BertConfig bad = tupe_config();
  bad.pe_options["num_buckets"] = 30;
  CHECK_THROWS_WITH(pe::make_position_encoding(bad, Device::cpu()), Catch::Contains("multiple of 4"));
  bad = tupe_config();
  bad.pe_options["relativ"] = true;
  CHECK_THROWS_WITH(pe::make_position_encoding(bad, Device::cpu()), Catch::Contains("relativ"));
}
