// ape_sin and ape_sin_learnable: P_{x,2i} = sin(w_i x), P_{x,2i+1} = cos(w_i x),
// w_i = 10000^(-2i/D), fixed or learned (Wang et al. 2021, Table 1 and section 3.1).
#include "nn/heads.h"
#include "pe/sinusoid.h"
#include "tests/pe/score_term_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;

namespace {

// The table of Wang et al.'s Table 1 in plain loops, [B, L, D]; w_i may carry an offset.
std::vector<double> naive_sinusoid(const std::vector<int64_t>& p, int64_t D, const std::vector<double>& offset = {}) {
  std::vector<double> out;
  for (int64_t x : p)
    for (int64_t i = 0; i < D / 2; ++i) {
      double w = std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(D));
      if (!offset.empty()) w += offset[static_cast<size_t>(i)];
      out.push_back(std::sin(w * static_cast<double>(x)));
      out.push_back(std::cos(w * static_cast<double>(x)));
    }
  return out;
}

}  // namespace

TEST_CASE("ape_sin matches Table 1 of Wang et al. in plain loops, at any position", "[pe]") {
  nn::BertConfig c = tiny_config("ape_sin");
  auto pe = make(c);
  nn::Context ctx = nn::Context::eval();
  // Beyond the training length (16), scaled, in any order: no table, no error.
  Tensor positions = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 15, 16, 5000, 7, 7, 3, 100000}, {2, 5});
  Var P = pe->input_embedding(positions, ctx);
  REQUIRE(P.shape() == Shape{2, 5, 12});
  CHECK(max_abs_error(P.value(), naive_sinusoid(positions.to_vector<int64_t>(), 12)) <= 1e-12);
  CHECK(pe->max_position() == -1);
  CHECK(pe->parameter_count() == 0);
}

TEST_CASE("ape_sin: P_x . P_y depends on x - y only and is even in it", "[pe]") {
  nn::BertConfig c = tiny_config("ape_sin");
  auto pe = make(c);
  nn::Context ctx = nn::Context::eval();
  const int64_t n = 40;
  Tensor P = pe->input_embedding(nn::default_positions(1, n, Device::cpu()), ctx).value().reshape({n, 12});
  std::vector<double> G = matmul(P, P, false, true).to_doubles();  // P P^T
  // sum_i sin(w x) sin(w y) + cos(w x) cos(w y) = sum_i cos(w_i (x - y)).
  double worst = 0;
  for (int64_t x = 0; x < n; ++x)
    for (int64_t y = 0; y < n; ++y) {
      double expected = 0;
      for (int64_t i = 0; i < 6; ++i) expected += std::cos(std::pow(10000.0, -2.0 * i / 12.0) * static_cast<double>(x - y));
      worst = std::max(worst, std::fabs(G[x * n + y] - expected));
      worst = std::max(worst, std::fabs(G[x * n + y] - G[y * n + x]));
    }
  CHECK(worst <= 1e-12);
}

TEST_CASE("ape_sin_learnable: learned frequencies start at the fixed ones, match the loops, pass the gradient check",
          "[pe][gradcheck]") {
  nn::BertConfig c = tiny_config("ape_sin_learnable");
  auto pe = make(c);
  CHECK(pe->parameter_count() == 6);  // D / 2
  nn::Parameter* offsets = pe->find_parameter("frequency_offsets");
  REQUIRE(offsets != nullptr);
  CHECK_FALSE(offsets->decay);
  pe->to_dtype(DType::f64);
  nn::Context ctx = nn::Context::eval();
  Tensor positions = random_positions(2, 6, 3, 0, 20);
  std::vector<int64_t> p = positions.to_vector<int64_t>();
  // At initialisation (offsets 0): the fixed sinusoid.
  CHECK(max_abs_error(pe->input_embedding(positions, ctx).value(), naive_sinusoid(p, 12)) <= 1e-12);
  randomize(*pe, 5, -0.01, 0.01);
  std::vector<double> d = values(*pe, "frequency_offsets");
  CHECK(max_abs_error(pe->input_embedding(positions, ctx).value(), naive_sinusoid(p, 12, d)) <= 1e-12);
  auto* sin_pe = dynamic_cast<pe::SinusoidalAbsolute*>(pe.get());
  REQUIRE(sin_pe != nullptr);
  std::vector<double> w = sin_pe->frequencies().value().to_doubles();
  for (int64_t i = 0; i < 6; ++i) CHECK(w[i] == Approx(std::pow(10000.0, -2.0 * i / 12.0) + d[i]).epsilon(1e-15));

  GradcheckResult r = check_parameters(*pe, {}, [&](const std::vector<Var>&) { return pe->input_embedding(positions, ctx); });
  INFO(r.worst);
  CHECK(r.ok);
}

TEST_CASE("ape_sin in a model: f32 and f64, and the whole model's gradient check with learned frequencies",
          "[pe][gradcheck]") {
  nn::BertConfig c = tiny_config("ape_sin");
  auto model = model::build_model(c, Device::cpu(), false, 1);
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(std::vector<int64_t>{2, 7, 4, 9, 3, 5}, {1, 6});
  in.positions = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 30, 31, 400}, {1, 6});  // beyond 16: fine
  nn::Context ctx = nn::Context::eval();
  Tensor h32 = model->bert.forward(in, ctx).value();
  CHECK(h32.dtype() == DType::f32);
  model->to_dtype(DType::f64);
  Tensor h64 = model->bert.forward(in, ctx).value();
  CHECK(h64.dtype() == DType::f64);
  CHECK(max_abs_error(h32, h64) <= 1e-4);  // the same model in two precisions

  nn::BertConfig lc = tiny_config("ape_sin_learnable");
  auto learned = model::build_model(lc, Device::cpu(), false, 2);
  Tensor labels = Tensor::from_vector(std::vector<int64_t>{-100, 5, -100, 8, -100, 6}, {1, 6});
  in.positions = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3, 5, 8}, {1, 6});
  std::vector<nn::NamedParameter> params = learned->named_parameters();
  randomize(*learned, 40);
  // Keep LayerNorm gains near 1 and the frequency offsets small, as in training.
  for (auto& [name, p] : params) {
    if (name.find("LayerNorm.weight") != std::string::npos) p->var = Var(affine(p->var.value(), 1.0, 1.0), true, name);
    if (name.find("frequency_offsets") != std::string::npos) p->var = Var(affine(p->var.value(), 0.02), true, name);
  }
  std::vector<Tensor> inputs;
  for (auto& [name, p] : params) inputs.push_back(p->var.value());
  GradcheckResult r = gradcheck(
      [&](const std::vector<Var>& v) {
        for (size_t i = 0; i < params.size(); ++i) params[i].second->var = v[i];
        return learned->forward(in, labels, Tensor(), ctx).loss;
      },
      inputs);
  INFO(r.worst);
  CHECK(r.ok);
}

TEST_CASE("ape_sin, ape_sin_learnable: short pretraining runs learn", "[pe][pretrain]") {
  require_learning(smoke_pretrain("ape_sin"));
  require_learning(smoke_pretrain("ape_sin_learnable"));
}

TEST_CASE("ape_sin's amplitude option scales the table: A sin(w_i x), A cos(w_i x)", "[pe]") {
  const double amplitude = 0.02 * std::sqrt(2.0);  // configs/papers/wang2021's sinusoid rows
  auto pe = make(tiny_config("ape_sin", json::parse(R"({"amplitude": 0.028284271247461901})")));
  nn::Context ctx = nn::Context::eval();
  Tensor positions = Tensor::from_vector(std::vector<int64_t>{0, 1, 7, 15, 40, 3}, {2, 3});
  std::vector<double> expected = naive_sinusoid(positions.to_vector<int64_t>(), 12);
  for (double& v : expected) v *= amplitude;
  CHECK(max_abs_error(pe->input_embedding(positions, ctx).value(), expected) <= 1e-15);
  CHECK_THROWS_WITH(make(tiny_config("ape_sin", json::parse(R"({"amplitude": 0})"))), Catch::Contains("amplitude"));
}

TEST_CASE("model.word_embedding_scale s: the encoder equals one whose word table is s times larger", "[pe]") {
  // Vaswani et al.'s tokens x sqrt(D): scaling the looked-up rows is the same
  // model as scaling the table, every other parameter equal.
  const double s = std::sqrt(12.0);
  nn::BertConfig scaled_config = tiny_config("ape_sin");
  scaled_config.word_embedding_scale = s;
  nn::BertModel scaled(scaled_config, make(scaled_config), Device::cpu(), false);
  nn::BertModel plain(tiny_config("ape_sin"), make(tiny_config("ape_sin")), Device::cpu(), false);
  randomize(scaled, 11);
  randomize(plain, 11);
  nn::Parameter* table = plain.find_parameter("embeddings.word_embeddings.weight");
  REQUIRE(table != nullptr);
  std::vector<double> w = table->var.value().to_doubles();
  for (double& v : w) v *= s;
  table->var = Var(Tensor::from_vector(w, table->var.shape()), true, "embeddings.word_embeddings.weight");
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(std::vector<int64_t>{2, 7, 4, 9, 3, 2, 11, 3, 0, 5}, {2, 5});
  nn::Context ctx = nn::Context::eval();
  const std::vector<double> a = scaled.forward(in, ctx).value().to_doubles();
  CHECK(max_abs_error(plain.forward(in, ctx).value(), a) <= 1e-12);
  // And it is not the identity: at scale 1 the same parameters give another encoder.
  nn::BertModel unscaled(tiny_config("ape_sin"), make(tiny_config("ape_sin")), Device::cpu(), false);
  randomize(unscaled, 11);
  CHECK(max_abs_error(unscaled.forward(in, ctx).value(), a) > 1e-3);
}
