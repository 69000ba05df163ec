// What the tests of the relative-vector family (rpe_shaw, rpe_sin,
// rpe_sin_learnable, xlnet, huang_m1..m4) share: a naive attention layer in
// plain f64 loops over b, h, i, j, d into which each test plugs its paper
// equation for s_ij (and the value vector added to v_j), the comparison of
// that naive with ordo's attention sublayer (scores, output) and of ordo's
// gradients with f64 central finite differences of the naive.
//
// The naive reads the weights by name from the modules (the checkpoint names
// the variants document in pe/relative.h), never through ordo's own ops.
// Positions that count up by one in every row (consecutive_positions) take
// the banded terms, any others the index path.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tests/pe/score_term_helpers.h"

namespace ordo::rel_test {

using Params = std::map<std::string, std::vector<double>>;

// One (layer, head, query i, key j) pair as the equation sees it.
struct Pair {
  const double* q;  // q_i [d]
  const double* k;  // k_j [d]
  int64_t d;        // head width
  int64_t r;        // r_ij = p_j - p_i
  int64_t h;        // head
  int layer;
  const Params& p;  // the variant's parameters by name
};

// The equation of a variant: the whole score s_ij (contextual term and
// scaling included), and optionally the vector added to v_j for query i.
struct Equation {
  std::function<double(const Pair&)> score;
  std::function<void(const Pair&, double* value)> value;  // value[e] += a^V_{r_ij, e}
};

// The name of the table of (layer, head) under a sharing mode (pe/relative.h,
// relative_table_names: HF's distance_embedding for share = heads).
inline std::string table_name(const std::string& share, const std::string& base, int layer, int64_t h) {
  const std::string l = "encoder.layer." + std::to_string(layer) + ".attention.self." + base;
  if (share == "none") return l + "." + std::to_string(h) + ".weight";
  if (share == "heads") return l + ".weight";
  if (share == "layers") return "encoder." + base + "." + std::to_string(h) + ".weight";
  return "encoder." + base + ".weight";
}

// The row of a signed table holding distance r (reach - r: HF's layout, which
// indexes by query - key + reach) and Shaw's clipping c(r) = max(-k, min(k, r)).
inline int64_t clipped(int64_t r, int64_t k) { return k < 0 ? r : std::max(-k, std::min(k, r)); }

inline double dot(const double* a, const double* b, int64_t d) {
  double s = 0;
  for (int64_t e = 0; e < d; ++e) s += a[e] * b[e];
  return s;
}

// The inputs of one attention sublayer call.
struct Layer {
  nn::BertConfig c;
  int layer = 1;
  int64_t B = 0, L = 0;
  std::vector<int64_t> positions;  // [B, L]
  std::vector<int64_t> keep;       // [B, L] 1 = key visible
  std::vector<double> x;           // [B, L, hidden]
  std::vector<double> wq, bq, wk, bk, wv, bv;  // HF Linear layout: weight [out, in]
};

struct NaiveResult {
  std::vector<double> scores;  // [B, H, L, L], no mask
  std::vector<double> out;     // [B, L, hidden]
};

// The attention sublayer in loops: q, k, v projections, s_ij from the
// equation, softmax over the visible keys, o_i = sum_j alpha_ij (v_j + a^V).
inline NaiveResult naive_attention(const Layer& in, const Params& p, const Equation& eq) {
  const int64_t B = in.B, L = in.L, D = in.c.hidden_size, H = in.c.num_attention_heads, d = in.c.head_dim();
  auto project = [&](const std::vector<double>& w, const std::vector<double>& bias) {
    std::vector<double> y(static_cast<size_t>(B * H * L * d));  // [B, H, L, d]
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t o = 0; o < D; ++o) {
          double s = bias[static_cast<size_t>(o)];
          for (int64_t c = 0; c < D; ++c) s += in.x[static_cast<size_t>((b * L + i) * D + c)] * w[static_cast<size_t>(o * D + c)];
          y[static_cast<size_t>(((b * H + o / d) * L + i) * d + o % d)] = s;
        }
    return y;
  };
  std::vector<double> q = project(in.wq, in.bq), k = project(in.wk, in.bk), v = project(in.wv, in.bv);
  NaiveResult res;
  res.scores.resize(static_cast<size_t>(B * H * L * L));
  res.out.assign(static_cast<size_t>(B * L * D), 0.0);
  std::vector<double> alpha(static_cast<size_t>(L)), value(static_cast<size_t>(d));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        const double* qi = &q[static_cast<size_t>(((b * H + h) * L + i) * d)];
        double top = -1e300;
        for (int64_t j = 0; j < L; ++j) {
          const double* kj = &k[static_cast<size_t>(((b * H + h) * L + j) * d)];
          const int64_t r = in.positions[static_cast<size_t>(b * L + j)] - in.positions[static_cast<size_t>(b * L + i)];
          const double s = eq.score(Pair{qi, kj, d, r, h, in.layer, p});
          res.scores[static_cast<size_t>(((b * H + h) * L + i) * L + j)] = s;
          if (in.keep[static_cast<size_t>(b * L + j)]) top = std::max(top, s);
        }
        double total = 0;
        for (int64_t j = 0; j < L; ++j) {
          const double s = res.scores[static_cast<size_t>(((b * H + h) * L + i) * L + j)];
          alpha[static_cast<size_t>(j)] = in.keep[static_cast<size_t>(b * L + j)] ? std::exp(s - top) : 0.0;
          total += alpha[static_cast<size_t>(j)];
        }
        for (int64_t j = 0; j < L; ++j) {
          const double a = alpha[static_cast<size_t>(j)] / total;
          const double* kj = &k[static_cast<size_t>(((b * H + h) * L + j) * d)];
          for (int64_t e = 0; e < d; ++e) value[static_cast<size_t>(e)] = v[static_cast<size_t>(((b * H + h) * L + j) * d + e)];
          if (eq.value) {
            const int64_t r = in.positions[static_cast<size_t>(b * L + j)] - in.positions[static_cast<size_t>(b * L + i)];
            eq.value(Pair{qi, kj, d, r, h, in.layer, p}, value.data());
          }
          for (int64_t e = 0; e < d; ++e) res.out[static_cast<size_t>((b * L + i) * D + h * d + e)] += a * value[static_cast<size_t>(e)];
        }
      }
  return res;
}

struct Comparison {
  double score_error = 0, output_error = 0;  // max |ordo - naive|
  double grad_error = 0;                     // max |ordo - finite differences| over x and every PE parameter
  double grad_scale = 0;                     // max |finite difference| (so the error means something)
  std::string worst;                         // where the largest gradient error is
  size_t checked = 0;                        // gradient entries compared
};

// An evaluation context with the facts BertModel::forward gives its layers:
// positions that count up by one in every row take the banded terms
// (pe/relative.h, vector_rows).
inline nn::Context forward_context(const Tensor& positions) {
  nn::Context ctx = nn::Context::eval();
  const std::vector<int64_t> p = positions.to_vector<int64_t>();
  ctx.facts = nn::input_facts(p.data(), nullptr, positions.size(0), positions.size(1));
  return ctx;
}

// ordo's SelfAttention::forward with the variant of `c` against the naive
// with `eq`, on random weights, random inputs and the given positions (the
// last key of the last sequence padded). Gradients of L = sum(w * out) with
// respect to x and to every parameter of the variant: ordo's backward
// against central finite differences (h = 1e-6) of the naive's L.
inline Comparison compare_with_naive(const nn::BertConfig& c, const Tensor& positions, const Equation& eq,
                                     int layer = 1, uint64_t seed = 5) {
  nn::SelfAttention attention(c, Device::cpu());
  auto pe = pe_test::make(c);
  pe_test::randomize(attention, seed + 100);
  pe_test::randomize(*pe, seed + 200);
  Layer in;
  in.c = c;
  in.layer = layer;
  in.B = positions.size(0);
  in.L = positions.size(1);
  in.positions = positions.to_vector<int64_t>();
  in.keep.assign(static_cast<size_t>(in.B * in.L), 1);
  in.keep.back() = 0;
  Tensor x = ordo::test::random_tensor({in.B, in.L, c.hidden_size}, seed + 300);
  in.x = x.to_doubles();
  in.wq = attention.query.weight.var.value().to_doubles();
  in.bq = attention.query.bias->var.value().to_doubles();
  in.wk = attention.key.weight.var.value().to_doubles();
  in.bk = attention.key.bias->var.value().to_doubles();
  in.wv = attention.value.weight.var.value().to_doubles();
  in.bv = attention.value.bias->var.value().to_doubles();
  Params p;
  for (auto& [name, param] : pe->named_parameters()) p[name] = param->var.value().to_doubles();
  std::vector<double> w = ordo::test::random_values(in.B * in.L * c.hidden_size, seed + 400);

  // ordo: forward with the scores kept, then the backward of sum(w * out).
  Tensor mask = nn::attention_bias(Tensor::from_vector(in.keep, {in.B, in.L}), in.B, in.L, false, DType::f64,
                                   Device::cpu());
  nn::Context ctx = forward_context(positions);
  nn::ForwardTrace trace;
  trace.keep_scores = true;
  Var xv(x, true, "x");
  Var out = attention.forward(xv, Var(mask), *pe, layer, positions, Tensor(), ctx, &trace);
  Var loss = sum(mul(out, Var(Tensor::from_vector(w, out.shape()))));
  loss.backward();

  NaiveResult naive = naive_attention(in, p, eq);
  Comparison res;
  res.score_error = pe_test::max_abs_error(trace.scores.at(0), naive.scores);
  res.output_error = pe_test::max_abs_error(out.value(), naive.out);

  auto naive_loss = [&]() {
    NaiveResult r = naive_attention(in, p, eq);
    double l = 0;
    for (size_t e = 0; e < r.out.size(); ++e) l += w[e] * r.out[e];
    return l;
  };
  const double h = 1e-6;
  auto compare = [&](std::vector<double>& values, const Tensor& grad, const std::string& what) {
    std::vector<double> g = grad.defined() ? grad.contiguous().to_doubles() : std::vector<double>(values.size(), 0.0);
    REQUIRE(g.size() == values.size());
    for (size_t e = 0; e < values.size(); ++e) {
      const double keep = values[e];
      values[e] = keep + h;
      const double up = naive_loss();
      values[e] = keep - h;
      const double down = naive_loss();
      values[e] = keep;
      const double numeric = (up - down) / (2 * h);
      const double err = std::fabs(g[e] - numeric);
      res.grad_scale = std::max(res.grad_scale, std::fabs(numeric));
      if (err > res.grad_error) {
        res.grad_error = err;
        res.worst = what + "[" + std::to_string(e) + "]: ordo " + std::to_string(g[e]) + " vs naive " + std::to_string(numeric);
      }
      ++res.checked;
    }
  };
  compare(in.x, xv.grad(), "x");
  for (auto& [name, param] : pe->named_parameters()) compare(p[name], param->var.grad(), name);
  return res;
}

// Rows that count up by one from their own start (the banded terms' case):
// row b is starts[b], starts[b] + 1, ...
inline Tensor consecutive_positions(const std::vector<int64_t>& starts, int64_t length) {
  std::vector<int64_t> p;
  for (int64_t s : starts)
    for (int64_t i = 0; i < length; ++i) p.push_back(s + i);
  return Tensor::from_vector(p, {static_cast<int64_t>(starts.size()), length});
}

// Whether a variant's vector terms run banded for these positions (so a test
// on consecutive positions knows it exercised that path).
inline bool runs_banded(const pe::DistanceSpec& spec, const Tensor& positions,
                        MatmulPrecision precision = MatmulPrecision::fp32) {
  nn::Context ctx = forward_context(positions);
  ctx.precision = precision;
  return !spec.vector_rows(positions, "test", false, &ctx).band.empty();
}

// The tolerances the comparisons are held to: f64 loops against f64 ops
// (rounding only), and finite differences with h = 1e-6 (error ~1e-9).
inline void require_matches(const Comparison& r, const std::string& what) {
  INFO(what << ": scores " << r.score_error << ", output " << r.output_error << ", gradients " << r.grad_error
            << " (largest " << r.grad_scale << ", " << r.checked << " entries; worst " << r.worst << ")");
  CHECK(r.score_error <= 1e-12);
  CHECK(r.output_error <= 1e-12);
  CHECK(r.grad_error <= 1e-7 * std::max(1.0, r.grad_scale));
  CHECK(r.grad_scale > 1e-3);  // the gradients compared are not all zero
  CHECK(r.checked > 0);
}

}  // namespace ordo::rel_test
