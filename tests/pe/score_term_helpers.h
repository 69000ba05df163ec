// What the tests of the score-term, sinusoid, rotary and segment variants
// share: a tiny config, a variant made by name with its options, parameters
// set to random f64 values, the state one attention call hands a hook,
// gradient checks through a hook and through a whole attention layer, and
// a smoke pretraining run.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "nn/bert.h"
#include "pe/registry.h"
#include "tests/helpers.h"
#include "train/pretrain.h"

namespace ordo::pe_test {

// 2 layers, 3 heads of width 4 (hidden 12): an odd head count catches
// head/layer mix-ups that 2 x 2 would hide.
inline nn::BertConfig tiny_config(const std::string& pe, const json::Value& options = json::Value::object()) {
  nn::BertConfig c = ordo::test::tiny_bert_config(/*vocab_size=*/13, /*hidden_size=*/12, /*layers=*/2, /*heads=*/3,
                                                  /*intermediate_size=*/16, /*max_position_embeddings=*/16);
  c.pe = pe;
  c.pe_options = options;
  return c;
}

inline std::unique_ptr<nn::PositionEncoding> make(const nn::BertConfig& c) {
  return pe::make_position_encoding(c, Device::cpu());
}

// The name of a score-term variant's table for (layer, head) under a sharing
// mode (pe/per_head.h table_names): base, base.layer_L, base.head_H or
// base.layer_L.head_H.
inline std::string shared_table_name(const std::string& base, const std::string& share, int layer, int head) {
  if (share == "all") return base;
  if (share == "heads") return base + ".layer_" + std::to_string(layer);
  if (share == "layers") return base + ".head_" + std::to_string(head);
  return base + ".layer_" + std::to_string(layer) + ".head_" + std::to_string(head);
}

// Every parameter of `m` in f64 with values uniform in [low, high) from
// std::mt19937_64 (not from ordo's own generator); returns them by name.
inline std::map<std::string, std::vector<double>> randomize(nn::Module& m, uint64_t seed, double low = -0.5,
                                                            double high = 0.5) {
  m.to_dtype(DType::f64);
  std::map<std::string, std::vector<double>> values;
  for (auto& [name, p] : m.named_parameters()) {
    Tensor t = ordo::test::random_tensor(p->var.shape(), seed++, DType::f64, low, high);
    p->var = Var(t, true, name);
    values[name] = t.to_doubles();
  }
  return values;
}

// The values of parameter `name` of `m`, row-major; fails the test when absent.
inline std::vector<double> values(nn::Module& m, const std::string& name) {
  nn::Parameter* p = m.find_parameter(name);
  INFO("parameter " << name);
  REQUIRE(p != nullptr);
  return p->var.value().to_doubles();
}

inline nn::AttentionState state(const nn::BertConfig& c, int layer, const Tensor& positions, const Tensor* segments,
                                nn::Context& ctx, DType dtype = DType::f64) {
  return nn::AttentionState{layer, c.num_attention_heads, c.head_dim(), &positions, segments, &ctx, dtype};
}

// Random integer positions in [low, high), [batch, length] i64 (any order).
inline Tensor random_positions(int64_t batch, int64_t length, uint64_t seed, int64_t low, int64_t high) {
  std::vector<double> u = ordo::test::random_values(batch * length, seed, 0, 1);
  std::vector<int64_t> p;
  for (double x : u) p.push_back(low + static_cast<int64_t>(x * static_cast<double>(high - low)));
  return Tensor::from_vector(p, {batch, length});
}

inline Tensor shifted(const Tensor& positions, int64_t by) {
  return add(positions, Tensor::scalar(static_cast<double>(by), DType::i64));
}

// Largest |a - b| over two same-sized tensors (b as doubles).
inline double max_abs_error(const Tensor& a, const std::vector<double>& b) {
  std::vector<double> x = a.contiguous().to_doubles();
  REQUIRE(x.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - b[i]));
  return worst;
}
inline double max_abs_error(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  return max_abs_error(a, b.contiguous().to_doubles());
}

// Gradient check of f with the module's parameters as the checked inputs
// (each set to a random f64 value first) and `extra` inputs before them.
inline GradcheckResult check_parameters(nn::Module& m, const std::vector<Tensor>& extra,
                                        const std::function<Var(const std::vector<Var>&)>& f, uint64_t seed = 7) {
  randomize(m, seed);
  std::vector<nn::NamedParameter> params = m.named_parameters();
  std::vector<Tensor> inputs = extra;
  for (auto& [name, p] : params) inputs.push_back(p->var.value());
  return gradcheck(
      [&](const std::vector<Var>& in) {
        for (size_t i = 0; i < params.size(); ++i) params[i].second->var = in[extra.size() + i];
        return f(std::vector<Var>(in.begin(), in.begin() + static_cast<long>(extra.size())));
      },
      inputs);
}

// The whole attention sublayer with the variant, in f64: the gradient of its
// output with respect to its input x, to W^Q, W^K, W^V and to every parameter
// of the variant, against finite differences. A padded key in the second
// sequence checks that the variant's terms flow through the mask.
inline GradcheckResult check_attention(const nn::BertConfig& c, const Tensor& positions, const Tensor& segments = Tensor()) {
  nn::SelfAttention attention(c, Device::cpu());
  auto pe = make(c);
  randomize(attention, 11);
  randomize(*pe, 23);
  const int64_t batch = positions.size(0), length = positions.size(1);
  std::vector<int64_t> mask(static_cast<size_t>(batch * length), 1);
  mask.back() = 0;
  Tensor bias = nn::attention_bias(Tensor::from_vector(mask, {batch, length}), batch, length, false, DType::f64, Device::cpu());
  std::vector<nn::NamedParameter> params = attention.named_parameters();
  for (auto& np : pe->named_parameters()) params.push_back(np);
  std::vector<Tensor> inputs{ordo::test::random_tensor({batch, length, c.hidden_size}, 5)};
  for (auto& [name, p] : params) inputs.push_back(p->var.value());
  nn::Context ctx = nn::Context::eval();
  GradcheckResult r = gradcheck(
      [&](const std::vector<Var>& in) {
        for (size_t i = 0; i < params.size(); ++i) params[i].second->var = in[i + 1];
        return attention.forward(in[0], Var(bias), *pe, 1, positions, segments, ctx, nullptr);
      },
      inputs);
  return r;
}

// The attention probabilities of a layer whose queries are all zero (W^Q = 0,
// no bias), so the contextual term q_i . k_j / sqrt(d_h) vanishes: they are
// softmax_j of the variant's score term as it enters the scores. Returned
// next to softmax_j(score_bias) computed here in plain loops, to show the
// term enters unscaled (no 1/sqrt(d_h)).
struct UnscaledCheck {
  Tensor probs;
  std::vector<double> expected;
};
inline UnscaledCheck attention_of_bias_alone(const nn::BertConfig& c, const Tensor& positions) {
  nn::SelfAttention attention(c, Device::cpu());
  auto pe = make(c);
  randomize(attention, 31);
  randomize(*pe, 37);
  attention.query.weight.var = Var(Tensor::zeros(attention.query.weight.var.shape(), DType::f64));
  attention.query.bias->var = Var(Tensor::zeros(attention.query.bias->var.shape(), DType::f64));
  const int64_t batch = positions.size(0), length = positions.size(1);
  Tensor mask = nn::attention_bias(Tensor(), batch, length, false, DType::f64, Device::cpu());
  nn::Context ctx = nn::Context::eval();
  nn::ForwardTrace trace;
  trace.keep_attentions = true;
  Var x(ordo::test::random_tensor({batch, length, c.hidden_size}, 3));
  attention.forward(x, Var(mask), *pe, 0, positions, Tensor(), ctx, &trace);
  std::vector<double> bias =
      pe->score_bias(state(c, 0, positions, nullptr, ctx), Var(Tensor::zeros({1}, DType::f64)), Var()).value().contiguous().to_doubles();
  UnscaledCheck out{trace.attentions.at(0), {}};
  for (size_t row = 0; row < bias.size() / static_cast<size_t>(length); ++row) {
    double top = -1e300, total = 0;
    for (int64_t j = 0; j < length; ++j) top = std::max(top, bias[row * length + j]);
    for (int64_t j = 0; j < length; ++j) total += std::exp(bias[row * length + j] - top);
    for (int64_t j = 0; j < length; ++j) out.expected.push_back(std::exp(bias[row * length + j] - top) / total);
  }
  return out;
}

// A few steps of `ordo pretrain` on a tiny model and a small synthetic
// corpus with the given variant: the logged losses, one per step.
inline std::vector<double> smoke_pretrain(const std::string& pe, const json::Value& options = json::Value::object(),
                                          const std::string& segment = "input", const std::string& objective = "mlm") {
  json::Value c = json::parse(R"({
    "model": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
              "max_position_embeddings": 64, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
    "data": {"corpus": "synthetic", "synthetic_sentences": 300, "vocab_size": 200, "held_out_fraction": 0.1,
             "max_predictions_per_seq": 8},
    "train": {"steps": 10, "batch_size": 8, "max_seq_length": 32, "lr": 2e-3, "warmup_steps": 1,
              "log_every": 1, "eval_every": 0, "eval_batches": 1, "device": "cpu"}
  })");
  c["model"]["pe"] = pe;
  c["model"]["pe_options"] = options;
  c["model"]["segment"] = segment;
  c["data"]["objective"] = objective;
  std::string dir = "/tmp/ordo_test_pe_smoke_" + pe + "_" + segment + "_" + std::to_string(::getpid());
  std::system(("rm -rf " + dir).c_str());
  train::PretrainOptions o;
  o.out = dir;
  o.quiet = true;
  std::vector<double> losses;
  train::pretrain(train::parse_run_config(c, {}, "test"), o, [&](const json::Value& line) {
    if (line.contains("loss") && !line.contains("eval_loss")) losses.push_back(line["loss"].as_number());
  });
  std::system(("rm -rf " + dir).c_str());
  return losses;
}

// Finite losses whose mean over the last three steps is below that of the first three.
inline void require_learning(const std::vector<double>& losses) {
  REQUIRE(losses.size() >= 6);
  for (double l : losses) REQUIRE(std::isfinite(l));
  double first = (losses[0] + losses[1] + losses[2]) / 3;
  size_t n = losses.size();
  double last = (losses[n - 1] + losses[n - 2] + losses[n - 3]) / 3;
  INFO("first three " << first << ", last three " << last);
  CHECK(last < first);
}

}  // namespace ordo::pe_test
