// rpe_shaw, rpe_sin, rpe_sin_learnable (pe/relative.h), r_ij = p_j - p_i:
//   rpe_shaw  s_ij = q_i . (k_j + a^K_{c(r_ij)}) / sqrt(d_h)        (Huang et al. 2020, Eq. 7-9)
//             o_i  = sum_j alpha_ij (v_j + a^V_{c(r_ij)})            (Chen et al. 2021, section 2.2.2)
//   rpe_sin   a_r = P(r), P(r)_{2m} = sin(w_m r), P(r)_{2m+1} = cos(w_m r), w_m = 10000^(-2m/d_h)
//   rpe_sin_learnable  the same with w learned                      (Wang et al. 2021, Table 1)
// Each against a naive attention layer in f64 loops (tests/pe/relative_helpers.h).
#include "pe/relative.h"
#include "tests/pe/relative_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;
using namespace ordo::rel_test;

namespace {

// Shaw et al.'s equations; the table row of distance r is reach - c(r) (HF's layout).
Equation shaw(const std::string& share, int64_t clip, int64_t reach, bool values) {
  Equation e;
  e.score = [=](const Pair& x) {
    const std::vector<double>& a = x.p.at(table_name(share, "distance_embedding", x.layer, x.h));
    const int64_t row = reach - clipped(x.r, clip);
    double s = 0;
    for (int64_t m = 0; m < x.d; ++m) s += x.q[m] * (x.k[m] + a[static_cast<size_t>(row * x.d + m)]);
    return s / std::sqrt(static_cast<double>(x.d));
  };
  if (values)
    e.value = [=](const Pair& x, double* v) {
      const std::vector<double>& a = x.p.at(table_name(share, "distance_embedding_value", x.layer, x.h));
      const int64_t row = reach - clipped(x.r, clip);
      for (int64_t m = 0; m < x.d; ++m) v[m] += a[static_cast<size_t>(row * x.d + m)];
    };
  return e;
}

// NEZHA's P(r) with w_m = 10000^(-2m/d_h) (+ the learned offset delta_m of
// rpe_sin_learnable, read from `offsets` when not empty).
std::vector<double> sinusoid_vector(const Pair& x, int64_t clip, const std::string& share, bool learnable) {
  const int64_t r = clipped(x.r, clip);
  std::vector<double> a(static_cast<size_t>(x.d));
  for (int64_t m = 0; m < x.d / 2; ++m) {
    double w = std::pow(10000.0, -2.0 * static_cast<double>(m) / static_cast<double>(x.d));
    if (learnable) w += x.p.at(table_name(share, "distance_frequency_offset", x.layer, x.h))[static_cast<size_t>(m)];
    a[static_cast<size_t>(2 * m)] = std::sin(w * static_cast<double>(r));
    a[static_cast<size_t>(2 * m + 1)] = std::cos(w * static_cast<double>(r));
  }
  return a;
}

Equation sinusoid_rpe(int64_t clip, bool values, bool learnable, const std::string& share = "all") {
  Equation e;
  e.score = [=](const Pair& x) {
    std::vector<double> a = sinusoid_vector(x, clip, share, learnable);
    double s = 0;
    for (int64_t m = 0; m < x.d; ++m) s += x.q[m] * (x.k[m] + a[static_cast<size_t>(m)]);
    return s / std::sqrt(static_cast<double>(x.d));
  };
  if (values)
    e.value = [=](const Pair& x, double* v) {
      std::vector<double> a = sinusoid_vector(x, clip, share, learnable);
      for (int64_t m = 0; m < x.d; ++m) v[m] += a[static_cast<size_t>(m)];
    };
  return e;
}

json::Value opts(const std::string& text) { return json::parse(text); }

}  // namespace

TEST_CASE("rpe_shaw matches Shaw et al.'s equations in naive loops: every sharing mode, values, clipping",
          "[pe][relative]") {
  // Positions random and unordered, in [0, 16): distances up to 15, the
  // default reach (max_position_embeddings - 1).
  Tensor positions = random_positions(2, 6, 51, 0, 16);
  for (std::string share : {"none", "heads", "layers", "all"})
    for (bool values : {false, true}) {
      json::Value o = json::Value::object();
      o["share"] = share;
      o["value"] = values;
      nn::BertConfig c = tiny_config("rpe_shaw", o);
      require_matches(compare_with_naive(c, positions, shaw(share, -1, 15, values)),
                      "share " + share + (values ? ", values" : ", keys only"));
    }
  // Clipped at k = 3 (table of 2k + 1 rows): distances beyond 3 share a row.
  for (bool values : {false, true}) {
    json::Value o = opts(R"({"clip": 3, "share": "none"})");
    o["value"] = values;
    require_matches(compare_with_naive(tiny_config("rpe_shaw", o), positions, shaw("none", 3, 3, values)),
                    values ? "clip 3, values" : "clip 3");
  }
  // k = 0: every pair the same vector.
  require_matches(compare_with_naive(tiny_config("rpe_shaw", opts(R"({"clip": 0, "value": true})")), positions,
                                     shaw("heads", 0, 0, true)),
                  "clip 0");
}

TEST_CASE("rpe_sin and rpe_sin_learnable match NEZHA's sinusoids in naive loops", "[pe][relative]") {
  // No table: any distance, here up to 199 both ways.
  Tensor positions = random_positions(2, 6, 52, 0, 200);
  require_matches(compare_with_naive(tiny_config("rpe_sin"), positions, sinusoid_rpe(-1, true, false)), "rpe_sin");
  require_matches(compare_with_naive(tiny_config("rpe_sin", opts(R"({"value": false})")), positions,
                                     sinusoid_rpe(-1, false, false)),
                  "rpe_sin keys only");
  require_matches(compare_with_naive(tiny_config("rpe_sin", opts(R"({"clip": 5})")), positions,
                                     sinusoid_rpe(5, true, false)),
                  "rpe_sin clip 5");
  // Learned frequencies (offsets delta random in [-0.5, 0.5)): the gradient
  // of every delta against finite differences of the naive.
  for (std::string share : {"all", "none", "heads", "layers"}) {
    json::Value o = json::Value::object();
    o["share"] = share;
    require_matches(compare_with_naive(tiny_config("rpe_sin_learnable", o), positions, sinusoid_rpe(-1, true, true, share)),
                    "rpe_sin_learnable share " + share);
  }
  require_matches(compare_with_naive(tiny_config("rpe_sin_learnable", opts(R"({"clip": 4, "value": false})")),
                                     positions, sinusoid_rpe(4, false, true)),
                  "rpe_sin_learnable clip 4, keys only");
}

TEST_CASE("rpe_shaw, rpe_sin, rpe_sin_learnable on consecutive positions (the banded terms) match the naive loops",
          "[pe][relative]") {
  // Rows 3..8 and 0..5: distances j - i only; with set_banded_terms(false)
  // the same positions take the index path, the reference.
  Tensor positions = consecutive_positions({3, 0}, 6);
  auto spec_of = [](const nn::BertConfig& c) {
    auto pe = make(c);
    if (auto* shaw = dynamic_cast<pe::ShawRelative*>(pe.get())) return shaw->distances();
    return dynamic_cast<pe::SinusoidRelative&>(*pe).distances();
  };
  for (bool banded : {true, false}) {
    pe::set_banded_terms(banded);
    CHECK(runs_banded(spec_of(tiny_config("rpe_shaw")), positions) == banded);
    CHECK(runs_banded(spec_of(tiny_config("rpe_sin")), positions) == banded);
    const std::string path = banded ? "banded, " : "index path, ";
    for (std::string share : {"none", "heads"}) {
      json::Value o = json::Value::object();
      o["share"] = share;
      o["value"] = true;
      require_matches(compare_with_naive(tiny_config("rpe_shaw", o), positions, shaw(share, -1, 15, true)),
                      path + "rpe_shaw values, share " + share);
    }
    require_matches(compare_with_naive(tiny_config("rpe_shaw", opts(R"({"clip": 2, "value": true, "share": "layers"})")),
                                       positions, shaw("layers", 2, 2, true)),
                    path + "rpe_shaw clip 2");
    require_matches(compare_with_naive(tiny_config("rpe_sin_learnable", opts(R"({"share": "none"})")), positions,
                                       sinusoid_rpe(-1, true, true, "none")),
                    path + "rpe_sin_learnable");
    require_matches(compare_with_naive(tiny_config("rpe_sin", opts(R"({"clip": 3})")), positions,
                                       sinusoid_rpe(3, true, false)),
                    path + "rpe_sin clip 3");
  }
  pe::set_banded_terms(true);
  // Unordered positions never run banded.
  CHECK_FALSE(runs_banded(spec_of(tiny_config("rpe_shaw")), random_positions(2, 6, 51, 0, 16)));
}

TEST_CASE("rpe_sin_learnable starts at the fixed frequencies, and equals rpe_sin there", "[pe][relative]") {
  auto fixed = make(tiny_config("rpe_sin"));
  auto learnable = make(tiny_config("rpe_sin_learnable"));
  learnable->to_dtype(DType::f64);
  nn::initialize(*learnable, 1);
  auto& s = dynamic_cast<pe::SinusoidRelative&>(*learnable);
  std::vector<double> w = s.frequencies(0).to_doubles();
  REQUIRE(w.size() == 2);  // d_h / 2
  CHECK(w[0] == 1.0);
  CHECK(std::fabs(w[1] - std::pow(10000.0, -0.5)) <= 1e-15);
  // The whole positional term agrees at initialisation.
  nn::BertConfig c = tiny_config("rpe_sin");
  Tensor positions = random_positions(2, 5, 53, 0, 40);
  nn::Context ctx = nn::Context::eval();
  Var q(ordo::test::random_tensor({2, 3, 5, 4}, 54));
  Var a = fixed->score_bias(state(c, 1, positions, nullptr, ctx), q, Var());
  Var b = learnable->score_bias(state(c, 1, positions, nullptr, ctx), q, Var());
  CHECK(max_abs_error(a.value(), b.value()) <= 1e-15);
  // Frequencies are kept out of weight decay.
  for (auto& [name, p] : learnable->named_parameters()) CHECK(!p->decay);
}

TEST_CASE("rpe family: gradients through the hooks and the attention sublayer (f64 finite differences)",
          "[pe][relative][gradcheck]") {
  Tensor positions = random_positions(2, 5, 55, 0, 16);
  nn::Context ctx = nn::Context::eval();
  for (const char* text : {R"({"value": true, "share": "none"})", R"({"value": true, "clip": 2, "share": "layers"})"}) {
    nn::BertConfig c = tiny_config("rpe_shaw", opts(text));
    auto pe = make(c);
    Tensor q = ordo::test::random_tensor({2, 3, 5, 4}, 56), probs = ordo::test::random_tensor({2, 3, 5, 5}, 57, DType::f64, 0, 1);
    GradcheckResult keys = check_parameters(*pe, {q}, [&](const std::vector<Var>& in) {
      return pe->score_bias(state(c, 1, positions, nullptr, ctx), in[0], Var());
    });
    INFO(text << ": " << keys.worst);
    CHECK(keys.ok);
    GradcheckResult vals = check_parameters(*pe, {probs}, [&](const std::vector<Var>& in) {
      return pe->value_term(state(c, 0, positions, nullptr, ctx), in[0]);
    });
    INFO(vals.worst);
    CHECK(vals.ok);
    GradcheckResult a = check_attention(c, positions);
    INFO(a.worst);
    CHECK(a.ok);
  }
  for (const char* name : {"rpe_sin", "rpe_sin_learnable"}) {
    nn::BertConfig c = tiny_config(name, opts(R"({"value": true})"));
    GradcheckResult a = check_attention(c, random_positions(2, 5, 58, 0, 100));
    INFO(name << ": " << a.worst);
    CHECK(a.ok);
  }
}

TEST_CASE("rpe family: clipping makes distances beyond k identical", "[pe][relative]") {
  // p and p2 order the tokens alike and agree on every distance within k = 2;
  // beyond it the distances differ (3 vs 5, 9 vs 29, ...), same signs.
  Tensor p = Tensor::from_vector(std::vector<int64_t>{0, 1, 4, 9, 20, 2}, {1, 6});
  Tensor p2 = Tensor::from_vector(std::vector<int64_t>{0, 1, 6, 30, 50, 2}, {1, 6});
  nn::Context ctx = nn::Context::eval();
  Var q(ordo::test::random_tensor({1, 3, 6, 4}, 60));
  Var probs(ordo::test::random_tensor({1, 3, 6, 6}, 61, DType::f64, 0, 1));
  for (const char* name : {"rpe_shaw", "rpe_sin", "rpe_sin_learnable"}) {
    INFO(name);
    nn::BertConfig clipped_c = tiny_config(name, opts(R"({"clip": 2, "value": true})"));
    auto pe = make(clipped_c);
    randomize(*pe, 62);
    Var a = pe->score_bias(state(clipped_c, 1, p, nullptr, ctx), q, Var());
    Var b = pe->score_bias(state(clipped_c, 1, p2, nullptr, ctx), q, Var());
    CHECK(max_abs_error(a.value(), b.value()) == 0);
    CHECK(max_abs_error(pe->value_term(state(clipped_c, 1, p, nullptr, ctx), probs).value(),
                        pe->value_term(state(clipped_c, 1, p2, nullptr, ctx), probs).value()) == 0);
    // Unclipped, the same two position sets differ (the check above can fail).
    nn::BertConfig open = tiny_config(name, opts(R"({"value": true, "max_distance": 60})"));
    if (std::string(name) != "rpe_shaw") open = tiny_config(name, opts(R"({"value": true})"));
    auto free_pe = make(open);
    randomize(*free_pe, 62);
    CHECK(max_abs_error(free_pe->score_bias(state(open, 1, p, nullptr, ctx), q, Var()).value(),
                        free_pe->score_bias(state(open, 1, p2, nullptr, ctx), q, Var()).value()) > 1e-3);
  }
  // A clipped table has 2k + 1 rows, whatever max_position_embeddings is.
  CHECK(make(tiny_config("rpe_shaw", opts(R"({"clip": 2})")))->parameter_count() == 2 * 5 * 4);
}

TEST_CASE("rpe_shaw: table sizes per sharing mode (Huang et al. 2020, Table 1)", "[pe][relative]") {
  // 2 layers, 3 heads, d_h = 4, 2 * 15 + 1 = 31 rows.
  const int64_t rows = 31, d = 4, L = 2, H = 3;
  std::vector<std::pair<std::string, int64_t>> counts = {
      {"heads", L * rows * d}, {"none", L * H * rows * d}, {"layers", H * rows * d}, {"all", rows * d}};
  for (auto& [share, n] : counts) {
    json::Value o = json::Value::object();
    o["share"] = share;
    CHECK(make(tiny_config("rpe_shaw", o))->parameter_count() == n);
    o["value"] = true;
    CHECK(make(tiny_config("rpe_shaw", o))->parameter_count() == 2 * n);
  }
  CHECK(make(tiny_config("rpe_shaw"))->parameter_count() == L * rows * d);  // HF: keys only, one table per layer
  CHECK(make(tiny_config("rpe_sin"))->parameter_count() == 0);
  CHECK(make(tiny_config("rpe_sin_learnable"))->parameter_count() == d / 2);  // share = all
  CHECK(make(tiny_config("rpe_sin_learnable", opts(R"({"share": "none"})")))->parameter_count() == L * H * d / 2);
  CHECK_THROWS_WITH(make(tiny_config("rpe_shaw", opts(R"({"share": "some"})"))), Catch::Contains("share"));
  CHECK_THROWS_WITH(make(tiny_config("rpe_shaw", opts(R"({"clip": 2, "max_distance": 40})"))),
                    Catch::Contains("clip or max_distance"));
  CHECK_THROWS_WITH(make(tiny_config("rpe_shaw", opts(R"({"clip": -1})"))), Catch::Contains("clip"));
  CHECK_THROWS_WITH(make(tiny_config("rpe_sin", opts(R"({"share": "none"})"))), Catch::Contains("share"));
}

TEST_CASE("rpe_shaw beyond the training length: with max_distance it matches the naive, without it a clear error",
          "[pe][relative]") {
  // Positions up to 99 with a model trained for 16: distances up to 98.
  Tensor far = random_positions(2, 6, 63, 0, 100);
  std::vector<int64_t> pv = far.to_vector<int64_t>();
  REQUIRE(*std::max_element(pv.begin(), pv.end()) - *std::min_element(pv.begin(), pv.end()) > 15);
  require_matches(compare_with_naive(tiny_config("rpe_shaw", opts(R"({"max_distance": 120, "value": true})")), far,
                                     shaw("heads", -1, 120, true)),
                  "max_distance 120");
  // Clipped, any distance is in the table.
  require_matches(compare_with_naive(tiny_config("rpe_shaw", opts(R"({"clip": 4})")), far, shaw("heads", 4, 4, false)),
                  "clip 4 at distances up to 98");
  // The default table holds |r| <= 15: the error names the variant, the distance and the options.
  nn::BertConfig c = tiny_config("rpe_shaw");
  auto pe = make(c);
  nn::Context ctx = nn::Context::eval();
  Tensor beyond = Tensor::from_vector(std::vector<int64_t>{0, 3, 16}, {1, 3});
  Var q(ordo::test::random_tensor({1, 3, 3, 4}, 64, DType::f32));
  try {
    pe->score_bias(state(c, 0, beyond, nullptr, ctx, DType::f32), q, Var());
    FAIL("no error for a distance of 16 in a table of reach 15");
  } catch (const Error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("rpe_shaw") != std::string::npos);
    CHECK(what.find("16") != std::string::npos);
    CHECK(what.find("max_distance") != std::string::npos);
    CHECK(what.find("clip") != std::string::npos);
  }
  // Unordered positions: the pair (3, 20) is as far as (20, 3).
  Tensor before = Tensor::from_vector(std::vector<int64_t>{20, 3, 4}, {1, 3});
  CHECK_THROWS_WITH(pe->score_bias(state(c, 0, before, nullptr, ctx, DType::f32), q, Var()),
                    Catch::Contains("rpe_shaw") && Catch::Contains("17"));
  // rpe_sin has no table: any distance.
  auto sin_pe = make(tiny_config("rpe_sin"));
  CHECK_NOTHROW(sin_pe->score_bias(state(c, 0, Tensor::from_vector(std::vector<int64_t>{0, 5000, 12}, {1, 3}), nullptr,
                                         ctx, DType::f32),
                                   q, Var()));
}

TEST_CASE("relative family: a whole model runs on sequences longer than max_position_embeddings", "[pe][relative]") {
  // Trained for 16 positions; a sequence of 40 (distances up to 39).
  auto logits = [](const std::string& pe, const json::Value& options) {
    nn::BertConfig c = tiny_config(pe, options);
    auto model = model::build_model(c, Device::cpu(), /*nsp=*/false, /*seed=*/3);
    nn::BertInputs in;
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < 40; ++i) ids.push_back(1 + i % 12);
    in.input_ids = Tensor::from_vector(ids, {1, 40});
    nn::Context ctx = nn::Context::eval();
    return model->all_logits(in, ctx).value();
  };
  for (const char* text : {R"({"pe": "rpe_shaw", "o": {"max_distance": 39}})", R"({"pe": "rpe_shaw", "o": {"clip": 8}})",
                           R"({"pe": "rpe_sin", "o": {}})", R"({"pe": "rpe_sin_learnable", "o": {}})",
                           R"({"pe": "xlnet", "o": {}})", R"({"pe": "huang_m1", "o": {"max_distance": 39}})",
                           R"({"pe": "huang_m2", "o": {"clip": 8}})", R"({"pe": "huang_m3", "o": {"max_distance": 50}})",
                           R"({"pe": "huang_m4", "o": {"max_distance": 39}})"}) {
    json::Value v = json::parse(text);
    INFO(text);
    Tensor out = logits(v["pe"].as_string(), v["o"]);
    CHECK(out.shape() == Shape{1, 40, 13});
    CHECK(std::isfinite(max(abs(out.to(DType::f64))).item()));
  }
  // The default tables reach 15: the model says which variant and which option.
  for (const char* name : {"rpe_shaw", "huang_m1", "huang_m2", "huang_m3", "huang_m4"}) {
    INFO(name);
    CHECK_THROWS_WITH(logits(name, json::Value::object()),
                      Catch::Contains(name) && Catch::Contains("39") && Catch::Contains("max_distance"));
  }
}

namespace {

// Every parameter of `m` set to values from mt19937, returned by name.
std::map<std::string, std::vector<double>> fill_parameters(nn::Module& m) {
  std::map<std::string, std::vector<double>> values;
  uint64_t seed = 70;
  for (auto& [name, p] : m.named_parameters()) {
    p->var = Var(ordo::test::random_tensor(p->var.shape(), seed++));
    values[name] = p->var.value().to_doubles();
  }
  return values;
}

double fixed_frequency(int64_t i, int64_t dim) {
  return std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
}

}  // namespace

TEST_CASE("rpe_shaw answers the analyses: its key table's rows in ascending offset, |r| within its reach",
          "[pe][relative]") {
  auto shaw = make(tiny_config("rpe_shaw", opts(R"({"share": "none"})")));  // reach 15, d_h 4
  auto p = fill_parameters(*shaw);
  // Layer 2, head 1; a_r is row 15 - r (HF's relative_key layout).
  const std::vector<double>& table = p.at("encoder.layer.1.attention.self.distance_embedding.0.weight");
  nn::PositionEncoding::OffsetVectors v = shaw->offset_vectors(1, 4);
  REQUIRE(v.vectors.shape() == Shape{9, 4});
  CHECK(v.first_offset == -4);
  std::vector<double> got = v.vectors.to_doubles();
  for (int64_t r = -4; r <= 4; ++r)
    for (int64_t m = 0; m < 4; ++m) CHECK(got[static_cast<size_t>((r + 4) * 4 + m)] == table[static_cast<size_t>((15 - r) * 4 + m)]);
  CHECK(v.source == "a^K (rpe_shaw key table of layer 2, offsets -4..4)");
  CHECK(shaw->offset_vectors(0, 100).first_offset == -15);  // the table holds |r| <= 15
  CHECK_FALSE(shaw->learned_frequencies(0).fixed.defined());
  CHECK_FALSE(make(tiny_config("none"))->offset_vectors(0, 4).vectors.defined());
}

TEST_CASE("rpe_sin_learnable answers the analyses: P(r) within the clip and its frequencies, alone and combined",
          "[pe][relative]") {
  auto rel = make(tiny_config("rpe_sin_learnable", opts(R"({"share": "none", "clip": 3})")));  // d_h 4
  auto p = fill_parameters(*rel);
  const std::vector<double>& delta = p.at("encoder.layer.1.attention.self.distance_frequency_offset.0.weight");
  const std::vector<double> w = {fixed_frequency(0, 4) + delta[0], fixed_frequency(1, 4) + delta[1]};
  nn::PositionEncoding::OffsetVectors v = rel->offset_vectors(1, 10);
  REQUIRE(v.vectors.shape() == Shape{7, 4});  // clipped: r = -3 .. 3
  CHECK(v.first_offset == -3);
  std::vector<double> got = v.vectors.to_doubles();
  for (int64_t r = -3; r <= 3; ++r)
    for (int64_t m = 0; m < 2; ++m) {
      const size_t at = static_cast<size_t>((r + 3) * 4 + 2 * m);
      CHECK(std::fabs(got[at] - std::sin(w[m] * static_cast<double>(r))) <= 1e-15);
      CHECK(std::fabs(got[at + 1] - std::cos(w[m] * static_cast<double>(r))) <= 1e-15);
    }
  CHECK(v.source == "P(r) (rpe_sin_learnable, layer 2, offsets -3..3)");
  nn::PositionEncoding::LearnedFrequencies f = rel->learned_frequencies(1);
  REQUIRE(f.fixed.numel() == 2);
  for (int64_t m = 0; m < 2; ++m) {
    CHECK(std::fabs(f.fixed.to_doubles()[m] - fixed_frequency(m, 4)) <= 1e-15);
    CHECK(std::fabs(f.learned.to_doubles()[m] - w[m]) <= 1e-15);
  }
  CHECK(f.source == "rpe_sin_learnable, layer 2, first table (d_h = 4)");
  CHECK_FALSE(make(tiny_config("rpe_sin"))->learned_frequencies(0).fixed.defined());

  // Combined with ape_sin_learnable: the input part's frequencies (D = 12), the attention part's vectors.
  auto both = make(tiny_config("ape_sin_learnable+rpe_sin_learnable"));
  auto q = fill_parameters(*both);
  const std::vector<double>* offsets = nullptr;
  for (const auto& [name, values] : q)
    if (name.size() >= 17 && name.compare(name.size() - 17, 17, "frequency_offsets") == 0) offsets = &values;
  REQUIRE(offsets != nullptr);
  f = both->learned_frequencies(0);
  REQUIRE(f.learned.numel() == 6);
  for (int64_t i = 0; i < 6; ++i)
    CHECK(std::fabs(f.learned.to_doubles()[i] - (fixed_frequency(i, 12) + (*offsets)[i])) <= 1e-15);
  CHECK(f.source == "ape_sin_learnable (D = 12)");
  CHECK(both->offset_vectors(0, 5).source == "P(r) (rpe_sin_learnable, layer 1, offsets -5..5)");
}

// Under bf16 products the banded terms round their operands as the index
// path's products do, so a whole model's hidden states and gradients agree
// between the two paths up to the order of the FP32 sums (relative 1e-4: a
// path that skipped the rounding differs by bf16's 2^-9; at these 4-wide
// heads the sums of bf16 products are exact in FP32, and the bits agree).
TEST_CASE("under bf16 products the banded terms and the index path give one model the same values",
          "[pe][relative]") {
  // Consecutive positions run banded under fp32 and bf16 products, not under tf32.
  auto shaw_pe = make(tiny_config("rpe_shaw"));
  const pe::DistanceSpec spec = dynamic_cast<pe::ShawRelative&>(*shaw_pe).distances();
  const Tensor positions = consecutive_positions({3, 0}, 6);
  for (MatmulPrecision p : {MatmulPrecision::fp32, MatmulPrecision::bf16, MatmulPrecision::tf32})
    CHECK(runs_banded(spec, positions, p) == (p != MatmulPrecision::tf32));
  for (const std::string& options : {std::string(R"({"value": true})"), std::string(R"({"share": "none"})")}) {
    for (const std::string& variant : {std::string("rpe_shaw"), std::string("rpe_sin_learnable")}) {
      INFO(variant << " " << options);
      auto model = model::build_model(tiny_config(variant, json::parse(options)), Device::cpu(), false, 1);
      std::vector<int64_t> ids;
      for (int64_t i = 0; i < 2 * 9; ++i) ids.push_back(1 + (5 * i) % 12);
      nn::BertInputs in;
      in.input_ids = Tensor::from_vector(ids, {2, 9});
      std::vector<Tensor> hidden, grads;
      for (bool banded : {true, false}) {
        pe::set_banded_terms(banded);
        for (auto& named : model->named_parameters()) named.second->var.zero_grad();
        nn::Context ctx = nn::Context::eval(MatmulPrecision::bf16);
        const Var h = model->bert.forward(in, ctx);
        sum(mul(h, h)).backward();
        hidden.push_back(h.value());
        std::vector<Tensor> g;
        for (auto& [name, p] : model->named_parameters())
          if (p->var.grad().defined()) g.push_back(p->var.grad().reshape({-1}));
        grads.push_back(concat(g, 0));
      }
      pe::set_banded_terms(true);
      CHECK(max_abs_error(hidden[0], hidden[1]) <= 1e-4 * test::max_abs(hidden[1]));
      CHECK(max_abs_error(grads[0], grads[1]) <= 1e-4 * test::max_abs(grads[1]));
    }
  }
}
