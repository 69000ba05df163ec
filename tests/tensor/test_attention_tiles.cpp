// The fused attention on tensor-core tiles (tensor/cuda/attention_tiles.cu:
// bf16 operands, FP32 sums) against the CPU's kernels (f64 sums, nothing
// rounded), for the terms it takes (attention_runs_on_tiles): a relative
// table and a gate the heads share with the padding mask and dropout (their
// gradients binned by the tiles); a shared table of more rows than the tiles
// bin (its gradient from the FP32 pass over the pairs); Shaw's relative keys
// and values (query and value vectors) with the padding mask and dropout —
// batch element 0 at consecutive positions (each step's distances a window
// of A's and V's rows: tile products), element 1 scattered (beyond a window:
// FP32 dot products; A's and V's gradients from the FP32 pass); Shaw's keys
// and values at consecutive positions with tables the heads share, clipped,
// and the causal mask (their gradients by distance on the tiles); RoPE with
// the causal mask and a dense term; scores that grow along the keys (the
// forward's running max moves at every step of its keys, O rescaled each
// time) or peak at the first key (a large early max that later steps never
// move). At both widths the tiles are built for: heads 16 wide with 40
// queries and keys (the forward's keys in two steps of 32, the backward's
// two blocks of queries and of keys), and 64 wide with 80 (three steps and
// blocks); rows and keys past the end of a tile are masked.
//
// q, k, v and dO are bf16 values, so the tiles' rounding of them is exact,
// and RoPE's angles are multiples of pi / 2, so the rotated q and k are the
// same values up to f32's error in cos and sin (~1e-6 of them, which bf16's
// rounding removes or leaves below the slack). What the tiles round is P~
// (before P~ V and P~^T dO) and c_ij = scale g_ij dS_ij (before its products
// with k and q), each to within u = 2^-9 of itself. From the CPU's P and P~
// (its forward with one-hot values: o_i = P~_i. on the keys whose value is a
// unit vector) the bounds are, per element, with q' and k' rotated:
//   o_ix:  u sum_j P~_ij |v_jx|
//   dv_jx: u sum_i P~_ij |dO_ix|
//   dq_ix: sum_j (u |c_ij| + scale g_ij P_ij dD_i) |k'_jx|
//   dk_jx: sum_i (u |c_ij| + scale g_ij P_ij dD_i) |q'_ix|
// (dq and dk in the rotated frame, taken back by RoPE's inverse rotation),
// where dD_i = |dO_i . (o'_i - o_i)| + d 2^-24 sum_x |dO_ix o'_ix| bounds the
// error of D_i = dO_i . o_i, which the backward forms in f32 from the tiles'
// o' (checked against its own bound first); the table's and the gate's
// gradients (which read that D_i) by sum P_ij dD_i over the pairs of their
// row (times scale |q_i . k_j| for the gate). Shaw's relative keys add to
// dq_ix, per pair, (u |query_scale dS_ij| + query_scale P_ij dD_i) |A[row]_x|
// (the window rounds query_scale dS to bf16 before its product with A), and
// A's gradient is bounded as the table's, times query_scale |q_ix|, plus u
// |query_scale dS_ij q_ix| (by distance, dS is rounded before its product
// with q). Shaw's values add u sum_j P~_ij |V[row]_x| to o_ix (P~ rounded
// before its product with V's rows) and bound V's gradient by u sum P~_ij
// |dO_ix| over the pairs of its row. Each bound is doubled (the f32 arithmetic around the roundings:
// exp's ulps, sums of L terms), plus 2^-16 of the tensor's largest value,
// and checked to be far below the tensor's own scale (below 2^-4 of its
// largest value), so a lost term, a misplaced mask or a wrong row fails it.
#ifdef ORDO_HAS_CUDA

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tensor/device_runtime.h"
#include "tensor/ops.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {

constexpr double kLowest = std::numeric_limits<float>::lowest();
constexpr double kUnit = 0x1p-9;  // bf16's unit roundoff
constexpr int64_t kKeyStep = 32;  // the keys of a step of the forward's loop (attention_tiles.cu)

// Values of order 1 that bf16 holds exactly.
Tensor bf16_values(const Shape& shape, uint64_t seed, double low = -1, double high = 1) {
  return ordo::test::random_tensor(shape, seed, DType::f32, low, high).to(DType::bf16).to(DType::f32);
}

struct Case {
  std::string name;
  AttentionTerms terms;
  bool learned_tables = false;  // the table's and the gate's gradients
  bool moving_max = false;      // the running max moves (batch element 0) or stays (the others)
};

AttentionTerms on(const AttentionTerms& terms, Device device) {
  AttentionTerms t = terms;
  for (Tensor* x : {&t.positions, &t.row_of, &t.table, &t.gate, &t.query_vectors, &t.value_vectors, &t.key_bias,
                    &t.dense_bias, &t.rotary})
    if (x->defined()) *x = x->to(device);
  return t;
}

struct Result {
  Tensor out, lse, gq, gk, gv, gtable, ggate, gvectors, gvalues;
};

Result run(const Case& c, const std::vector<Tensor>& qkvg, Device device, int64_t* launches = nullptr) {
  AttentionTerms t = on(c.terms, device);
  t.bf16_products = true;  // the CPU's kernels ignore it
  const Tensor q = qkvg[0].to(device), k = qkvg[1].to(device), v = qkvg[2].to(device), g = qkvg[3].to(device);
  if (device.is_cuda()) {
    synchronize(device);
    reset_device_counters();
  }
  const AttentionOutput f = attention_forward(q, k, v, t);
  if (launches) launches[0] = device_counters().kernel_launches;
  AttentionNeeds needs;
  needs.q = needs.k = needs.v = true;
  needs.table = c.learned_tables && t.table.defined();
  needs.gate = c.learned_tables && t.gate.defined();
  needs.query_vectors = c.learned_tables && t.query_vectors.defined();
  needs.value_vectors = c.learned_tables && t.value_vectors.defined();
  if (device.is_cuda()) {
    synchronize(device);
    reset_device_counters();
  }
  const AttentionGrads gr = attention_backward(g, q, k, v, f, t, needs);
  if (launches) launches[1] = device_counters().kernel_launches;
  auto cpu = [](const Tensor& x) { return x.defined() ? x.to(Device::cpu()) : Tensor(); };
  return {cpu(f.out),  cpu(f.lse),  cpu(gr.q),             cpu(gr.k),
          cpu(gr.v),    cpu(gr.table), cpu(gr.gate),        cpu(gr.query_vectors),
          cpu(gr.value_vectors)};
}

double largest(const Tensor& x) {
  double m = 0;
  for (double e : x.to_doubles()) m = std::max(m, std::fabs(e));
  return m;
}

// |gpu - cpu| <= bound[n] + 2^-16 max |cpu| for every element n (bound per
// element, or one value for all), the bound far below the tensor's scale.
void require_within(const Tensor& gpu, const Tensor& cpu, const std::vector<double>& bound) {
  const std::vector<double> a = gpu.to_doubles(), e = cpu.to_doubles();
  REQUIRE(a.size() == e.size());
  const double scale = largest(cpu), slack = 0x1p-16 * scale;
  double widest = 0;
  int violations = 0;
  for (size_t n = 0; n < a.size(); ++n) {
    const double b = bound.size() == 1 ? bound[0] : bound[n];
    widest = std::max(widest, b);
    if (!(std::fabs(a[n] - e[n]) <= b + slack) && violations++ < 3)
      UNSCOPED_INFO("[" << n << "] cuda " << a[n] << ", cpu " << e[n] << ", bound " << b + slack);
  }
  CHECK(violations == 0);
  INFO("the widest bound " << widest << " against the largest value " << scale);
  CHECK(widest < 0x1p-4 * scale);
}


// The bounds of the top of the file, per element of each result.
struct Bounds {
  std::vector<double> out, q, k, v, table, gate, vectors, values;
};

// A shape of the tests: B batch elements, H heads d wide, L queries and keys.
struct TileShape {
  int64_t B, H, L, d;

  Tensor positions() const {
    std::vector<int64_t> p;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < L; ++i) p.push_back(b == 0 ? i : (i * 7) % 31 + (i > 20 ? 3 : 0));
    return Tensor::from_vector(p, {B, L});
  }

  // Every row counting up by one, from 0 and from 3.
  Tensor consecutive_positions() const {
    std::vector<int64_t> p;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < L; ++i) p.push_back(3 * b + i);
    return Tensor::from_vector(p, {B, L});
  }

  // t's rows of the distances -L..L (every distance the positions above
  // reach): row(distance) each.
  template <class Row>
  void set_rows(AttentionTerms& t, Row row) const {
    std::vector<int64_t> rows;
    for (int64_t r = -L; r <= L; ++r) rows.push_back(row(r));
    t.row_of = Tensor::from_vector(rows, {2 * L + 1});
    t.first_distance = -L;
  }

  // A padding mask [B, 1, L]: the last `count` keys of batch element `b` masked.
  Tensor padding(int64_t b, int64_t count) const {
    std::vector<float> m(static_cast<size_t>(B * L), 0.0f);
    for (int64_t j = L - count; j < L; ++j) m[static_cast<size_t>(b * L + j)] = static_cast<float>(kLowest);
    return Tensor::from_vector(m, {B, 1, L});
  }

  std::vector<Case> cases() const {
    auto clip = [](int64_t r, int64_t c) { return std::max(-c, std::min(c, r)); };
    std::vector<Case> c;
    {
      AttentionTerms t;
      t.positions = positions();
      set_rows(t, [&](int64_t r) { return 4 - clip(r, 4); });  // 9 rows
      t.table = ordo::test::random_tensor({H, 9}, 4, DType::f32, -1, 1);
      t.gate = ordo::test::random_tensor({1, 9}, 5, DType::f32, 0.5, 1.5);  // one for every head
      t.key_bias = padding(1, 7);
      t.scale = 0.25, t.dropout = 0.2, t.seed = 3, t.stream = 9;
      c.push_back({"a relative table and a gate the heads share, the padding mask, dropout", t, true});
    }
    {
      AttentionTerms t;
      t.positions = positions();
      set_rows(t, [](int64_t r) { return 550 + r; });  // rows 550 - L .. 550 + L of 1100
      t.table = ordo::test::random_tensor({1, 1100}, 7, DType::f32, -1, 1);
      t.scale = 0.25;
      REQUIRE_FALSE(attention_table_grads_on_tiles(t));
      c.push_back({"a table of 1,100 rows the heads share (beyond the tiles' bins)", t, true});
    }
    {
      AttentionTerms t;
      t.positions = positions();
      set_rows(t, [&](int64_t r) { return 4 + clip(r, 4); });  // 9 rows
      t.query_vectors = bf16_values({H, 9, d}, 8);
      t.value_vectors = bf16_values({H, 9, d}, 10);
      t.key_bias = padding(0, 5);
      t.scale = t.query_scale = 0.25, t.dropout = 0.2, t.seed = 5, t.stream = 2;
      c.push_back({"Shaw's relative keys and values, the padding mask, dropout", t, true});
    }
    {
      AttentionTerms t;
      t.positions = consecutive_positions();
      t.consecutive_positions = true;
      // Clipped at 6 (L = 40) to 11 (L = 80): the rows at the ends, which
      // take every pair beyond, sum as many of them at both lengths.
      const int64_t reach = L / 8 + 1, rows = 2 * reach + 1;
      set_rows(t, [&](int64_t r) { return reach + clip(r, reach); });
      t.query_vectors = bf16_values({1, rows, d}, 9);  // one for every head
      t.value_vectors = bf16_values({1, rows, d}, 15);
      t.causal = true;
      t.scale = t.query_scale = 0.25;
      REQUIRE(attention_table_grads_on_tiles(t));
      c.push_back({"Shaw's keys and values at consecutive positions (their gradients by distance), causal", t, true});
    }
    {
      AttentionTerms t;
      t.positions = positions();
      const float quarter = static_cast<float>(M_PI / 2);
      const int turns[] = {1, 0, 2, 3, 1, 0, 1, 2};
      std::vector<float> angles;
      for (int64_t m = 0; m < d / 2; ++m) angles.push_back(static_cast<float>(turns[m % 8]) * quarter);
      t.rotary = Tensor::from_vector(angles, {d / 2});
      t.causal = true;
      t.dense_bias = ordo::test::random_tensor({1, H, L, L}, 6, DType::f32, -1, 1);
      t.scale = 0.25;
      c.push_back({"RoPE (angles of pi / 2), the causal mask, a dense term", t, false});
    }
    {
      AttentionTerms t;
      t.key_bias = Tensor::from_vector(moving_max_bias(), {B, 1, L});
      t.scale = 0.25;
      c.push_back({"scores growing along the keys (the running max moves at every key tile), and a large early max",
                   t, false, true});
    }
    return c;
  }

  // A key bias [B, 1, L]: batch element 0's grows by 1/4 a key, 8 a step of
  // 32 keys, far beyond the spread of scale q . k, so the forward's running
  // max moves at every step and O's rows are rescaled by about e^-8; the
  // others' first key is 6 above the rest, so the max comes at the first step
  // and stays while the later steps still add (e^-6 of the first key's weight each).
  std::vector<float> moving_max_bias() const {
    std::vector<float> m(static_cast<size_t>(B * L), 0.0f);
    for (int64_t j = 0; j < L; ++j) m[static_cast<size_t>(j)] = static_cast<float>(j) / 4;
    for (int64_t b = 1; b < B; ++b) m[static_cast<size_t>(b * L)] = 6;
    return m;
  }

  // Element (b, h, n, x) of a [B, H, L, d] tensor's values.
  size_t at(int64_t b, int64_t h, int64_t n, int64_t x) const {
    return static_cast<size_t>(((b * H + h) * L + n) * d + x);
  }

  // P~_ij [B, H, L, L] from the CPU's forward: values one-hot on d keys at a
  // time (and no value vectors, which the probabilities do not depend on).
  std::vector<double> probabilities(const Tensor& q, const Tensor& k, AttentionTerms t) const {
    t.value_vectors = Tensor();
    std::vector<double> p(static_cast<size_t>(B * H * L * L));
    for (int64_t first = 0; first < L; first += d) {
      std::vector<float> v(static_cast<size_t>(B * H * L * d), 0.0f);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t j = first; j < std::min(first + d, L); ++j) v[at(b, h, j, j - first)] = 1.0f;
      const std::vector<double> o = attention_forward(q, k, Tensor::from_vector(v, {B, H, L, d}), t).out.to_doubles();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = 0; i < L; ++i)
            for (int64_t j = first; j < std::min(first + d, L); ++j)
              p[static_cast<size_t>(((b * H + h) * L + i) * L + j)] = o[at(b, h, i, j - first)];
    }
    return p;
  }

  // x's values rotated by RoPE as t gives it (interleaved pairs), in double;
  // `bound`: a bound on a rotated vector's elements taken back, |R^T e| per
  // element within |cos| e_a + |sin| e_b.
  std::vector<double> rotated(std::vector<double> r, const AttentionTerms& t, bool bound = false) const {
    if (!t.rotary.defined()) return r;
    const std::vector<double> theta = t.rotary.to_doubles(), pos = t.positions.to_doubles();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t n = 0; n < L; ++n)
          for (int64_t m = 0; m < d / 2; ++m) {
            const double angle = pos[static_cast<size_t>(b * L + n)] * theta[static_cast<size_t>(m)];
            const double a = r[at(b, h, n, 2 * m)], e = r[at(b, h, n, 2 * m + 1)];
            const double c = std::cos(angle), sn = std::sin(angle);
            r[at(b, h, n, 2 * m)] = bound ? std::fabs(c) * a + std::fabs(sn) * e : a * c - e * sn;
            r[at(b, h, n, 2 * m + 1)] = bound ? std::fabs(sn) * a + std::fabs(c) * e : a * sn + e * c;
          }
    return r;
  }

  Bounds bounds(const Case& c, const std::vector<Tensor>& inputs, const Tensor& cpu_out,
                const Tensor& gpu_out) const {
    const AttentionTerms& t = c.terms;
    AttentionTerms plain = t;
    plain.dropout = 0;
    const std::vector<double> pt = probabilities(inputs[0], inputs[1], t),
                              p = probabilities(inputs[0], inputs[1], plain);
    const std::vector<double> q = rotated(inputs[0].to_doubles(), t), k = rotated(inputs[1].to_doubles(), t),
                              v = inputs[2].to_doubles(), g = inputs[3].to_doubles(), o = cpu_out.to_doubles(),
                              o_gpu = gpu_out.to_doubles();
    std::vector<double> gate_of(static_cast<size_t>(B * H * L * L), 1.0);
    std::vector<int64_t> row_of(gate_of.size(), -1);
    // Element (h, row) of a table [H or 1, rows]: its index, and the table's size.
    auto entry = [](const Tensor& table, int64_t h, int64_t row) {
      return static_cast<size_t>((table.size(0) == 1 ? 0 : h) * table.size(1) + row);
    };
    auto size_of = [](const Tensor& table) { return static_cast<size_t>(table.defined() ? table.numel() : 0); };
    if (t.row_of.defined()) {
      const std::vector<double> pos = t.positions.to_doubles(), rows = t.row_of.to_doubles(),
                                gates = t.gate.defined() ? t.gate.to_doubles() : std::vector<double>();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = 0; i < L; ++i)
            for (int64_t j = 0; j < L; ++j) {
              const size_t ij = static_cast<size_t>(((b * H + h) * L + i) * L + j);
              const auto distance =
                  static_cast<int64_t>(pos[static_cast<size_t>(b * L + j)] - pos[static_cast<size_t>(b * L + i)]);
              row_of[ij] = static_cast<int64_t>(rows[static_cast<size_t>(distance - t.first_distance)]);
              if (t.gate.defined()) gate_of[ij] = gates[entry(t.gate, h, row_of[ij])];
            }
    }
    Bounds r;
    for (auto* x : {&r.out, &r.q, &r.k, &r.v}) x->assign(o.size(), 0.0);
    r.table.assign(size_of(t.table), 0.0);
    r.gate.assign(size_of(t.gate), 0.0);
    r.vectors.assign(size_of(t.query_vectors), 0.0);
    r.values.assign(size_of(t.value_vectors), 0.0);
    const std::vector<double> a = t.query_vectors.defined() ? t.query_vectors.to_doubles() : std::vector<double>(),
                              vv = t.value_vectors.defined() ? t.value_vectors.to_doubles() : std::vector<double>();
    // Element x of a table's row `row` for head h ([H or 1, rows, d]): its index.
    auto vector_at = [&](const Tensor& table, int64_t h, int64_t row, int64_t x) {
      return static_cast<size_t>(((table.size(0) == 1 ? 0 : h) * table.size(1) + row) * d + x);
    };
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i) {
          auto pair = [&](int64_t j) { return static_cast<size_t>(((b * H + h) * L + i) * L + j); };
          double D = 0, shift = 0, magnitude = 0;
          for (int64_t x = 0; x < d; ++x) {
            double sum = 0;
            for (int64_t j = 0; j < L; ++j) sum += pt[pair(j)] * std::fabs(v[at(b, h, j, x)]);
            r.out[at(b, h, i, x)] = 2 * kUnit * sum;
            D += g[at(b, h, i, x)] * o[at(b, h, i, x)];
            shift += g[at(b, h, i, x)] * (o_gpu[at(b, h, i, x)] - o[at(b, h, i, x)]);
            magnitude += std::fabs(g[at(b, h, i, x)] * o_gpu[at(b, h, i, x)]);
          }
          const double dD = std::fabs(shift) + static_cast<double>(d) * 0x1p-24 * magnitude;
          for (int64_t j = 0; j < L; ++j) {
            const size_t ij = pair(j);
            double dP = 0, qk = 0;
            for (int64_t x = 0; x < d; ++x) {
              dP += g[at(b, h, i, x)] * v[at(b, h, j, x)], qk += q[at(b, h, i, x)] * k[at(b, h, j, x)];
              if (t.value_vectors.defined() && row_of[ij] >= 0)
                dP += g[at(b, h, i, x)] * vv[vector_at(t.value_vectors, h, row_of[ij], x)];
            }
            const double z = p[ij] > 0 ? pt[ij] / p[ij] : 0.0, scale = t.scale * gate_of[ij];
            const double ds = scale * p[ij] * (z * dP - D), moved = scale * p[ij] * dD;
            const double each = 2 * kUnit * std::fabs(ds) + moved;
            for (int64_t x = 0; x < d; ++x) {
              r.q[at(b, h, i, x)] += each * std::fabs(k[at(b, h, j, x)]);
              r.k[at(b, h, j, x)] += each * std::fabs(q[at(b, h, i, x)]);
              r.v[at(b, h, j, x)] += 2 * kUnit * pt[ij] * std::fabs(g[at(b, h, i, x)]);
            }
            if (row_of[ij] >= 0 && t.query_vectors.defined()) {
              const double qs = t.query_scale, raw = p[ij] * (z * dP - D);
              for (int64_t x = 0; x < d; ++x) {
                const size_t ax = vector_at(t.query_vectors, h, row_of[ij], x);
                r.q[at(b, h, i, x)] += (2 * kUnit * std::fabs(qs * raw) + qs * p[ij] * dD) * std::fabs(a[ax]);
                r.vectors[ax] += (2 * kUnit * std::fabs(qs * raw) + qs * p[ij] * dD) * std::fabs(q[at(b, h, i, x)]);
              }
            }
            if (row_of[ij] >= 0 && t.value_vectors.defined())
              for (int64_t x = 0; x < d; ++x) {
                const size_t vx = vector_at(t.value_vectors, h, row_of[ij], x);
                r.out[at(b, h, i, x)] += 2 * kUnit * pt[ij] * std::fabs(vv[vx]);
                r.values[vx] += 2 * kUnit * pt[ij] * std::fabs(g[at(b, h, i, x)]);
              }
            if (row_of[ij] >= 0 && t.table.defined()) r.table[entry(t.table, h, row_of[ij])] += p[ij] * dD;
            if (row_of[ij] >= 0 && t.gate.defined())
              r.gate[entry(t.gate, h, row_of[ij])] += t.scale * p[ij] * dD * std::fabs(qk);
          }
        }
    r.q = rotated(r.q, t, /*bound=*/true);  // the gradients are rotated back
    r.k = rotated(r.k, t, /*bound=*/true);
    return r;
  }

  // The running max of batch element 0's rows moves at every step of the
  // forward's keys; the others' is set at the first step and never moves
  // (their scores s_ij = scale q_i . k_j + key_bias_j, in double).
  void require_moving_max(const std::vector<Tensor>& inputs, const AttentionTerms& t) const {
    const std::vector<double> q = inputs[0].to_doubles(), k = inputs[1].to_doubles(), bias = t.key_bias.to_doubles();
    int64_t rows_as_said = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i) {
          bool as_said = true;
          double running = -INFINITY;
          for (int64_t j0 = 0; j0 < L; j0 += kKeyStep) {
            double step_max = -INFINITY;
            for (int64_t j = j0; j < std::min(j0 + kKeyStep, L); ++j) {
              double dot = 0;
              for (int64_t x = 0; x < d; ++x) dot += q[at(b, h, i, x)] * k[at(b, h, j, x)];
              step_max = std::max(step_max, t.scale * dot + bias[static_cast<size_t>(b * L + j)]);
            }
            if (j0 > 0) as_said = as_said && (b == 0 ? step_max > running : step_max < running);
            running = std::max(running, step_max);
          }
          rows_as_said += as_said;
        }
    REQUIRE(L > kKeyStep);
    REQUIRE(rows_as_said == B * H * L);
  }

  void check(const Case& c) const {
    INFO(c.name << " (heads " << d << " wide, " << L << " queries and keys)");
    const std::vector<Tensor> inputs{bf16_values({B, H, L, d}, 11), bf16_values({B, H, L, d}, 12),
                                     bf16_values({B, H, L, d}, 13), bf16_values({B, H, L, d}, 14)};
    if (c.moving_max) require_moving_max(inputs, c.terms);
    REQUIRE(attention_runs_on_tiles([&] { AttentionTerms t = c.terms; t.bf16_products = true; return t; }(), d));
    int64_t launches[2] = {0, 0};
    const Result cpu = run(c, inputs, Device::cpu()), gpu = run(c, inputs, Device::cuda(0), launches);
    CHECK(launches[0] == 1);
    // By query rows, by key rows; the tables' gradients: the sum of the
    // blocks' bins, or the FP32 pass: the pairs' keys and the tables (cub's
    // sort between them is not one of ordo's kernels).
    // Shaw's vectors by distance: its pass and the sum into each table's rows.
    const bool binned = attention_table_grads_on_tiles(c.terms);
    const int vector_tables = c.terms.query_vectors.defined() + c.terms.value_vectors.defined();
    CHECK(launches[1] == (!c.learned_tables ? 2 : !binned ? 4 : vector_tables > 0 ? 3 + vector_tables : 3));

    const Bounds bound = bounds(c, inputs, cpu.out, gpu.out);
    {
      INFO("the output and lse");
      require_within(gpu.out, cpu.out, bound.out);
      ordo::test::require_close(gpu.lse, cpu.lse, 1e-6, 1e-6);
    }
    {
      INFO("dq, by query rows");
      require_within(gpu.gq, cpu.gq, bound.q);
    }
    {
      INFO("dk and dv, by key rows");
      require_within(gpu.gk, cpu.gk, bound.k);
      require_within(gpu.gv, cpu.gv, bound.v);
    }
    if (c.learned_tables) {
      INFO("the tables' gradients, " << (binned ? "on the tiles" : "from the FP32 pass"));
      if (c.terms.table.defined()) require_within(gpu.gtable, cpu.gtable, bound.table);
      if (c.terms.gate.defined()) require_within(gpu.ggate, cpu.ggate, bound.gate);
      if (c.terms.query_vectors.defined()) require_within(gpu.gvectors, cpu.gvectors, bound.vectors);
      if (c.terms.value_vectors.defined()) require_within(gpu.gvalues, cpu.gvalues, bound.values);
    }
  }
};

}  // namespace

TEST_CASE("attention on tensor-core tiles: the CUDA kernels agree with the CPU's within the bf16 rounding of P and dS",
          "[cuda][attention]") {
  const TileShape shape{2, 2, 40, 16};  // the forward's keys in two steps, the backward's blocks two
  for (const Case& c : shape.cases()) shape.check(c);
}

// Every width the tiles are built for: 64, every shipped config's, as well.
// Its D-dependent loops (a lane's columns of O and of the gradients, an
// operand's leading dimension) do what 16 cannot show. 80 queries and keys:
// the forward's keys in three steps (the running max moves at each in the
// case made for it), its queries in two blocks, the backward's in three.
TEST_CASE("attention on tensor-core tiles: heads 64 wide agree with the CPU's within the bf16 rounding",
          "[cuda][attention][wide]") {
  const TileShape shape{2, 2, 80, 64};
  for (const Case& c : shape.cases()) shape.check(c);
}

TEST_CASE("attention on tensor-core tiles: terms with vectors per pair but Shaw's take the FP32 kernels",
          "[cuda][attention]") {
  AttentionTerms t;
  t.bf16_products = true;
  CHECK(attention_runs_on_tiles(t, 64));
  CHECK(attention_runs_on_tiles(t, 16));
  CHECK_FALSE(attention_runs_on_tiles(t, 8));  // no tiles built for that width
  t.query_vectors = Tensor::zeros({1, 3, 64}, DType::f32);
  CHECK(attention_runs_on_tiles(t, 64));  // Shaw's relative keys
  CHECK_FALSE(attention_runs_on_tiles(t, 16));  // vectors of another width than the heads'
  t.rotary = Tensor::zeros({32}, DType::f32);
  CHECK_FALSE(attention_runs_on_tiles(t, 64));  // with RoPE
  t.rotary = Tensor();
  t.value_vectors = t.query_vectors;
  CHECK(attention_runs_on_tiles(t, 64));  // Shaw's values
  t.key_vectors = t.query_vectors;
  CHECK_FALSE(attention_runs_on_tiles(t, 64));
  t = AttentionTerms();
  CHECK_FALSE(attention_runs_on_tiles(t, 64));  // FP32 products asked for
}

#endif
