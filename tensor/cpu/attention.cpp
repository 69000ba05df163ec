// CPU kernels of the fused attention (tensor/kernels.inc, tensor/attention_terms.h):
// the reference the CUDA kernels are tested against. The equations of
// attention_terms.h as plain loops, one (batch, head, query) row at a time,
// every sum accumulated in double in increasing order, one thread (the
// tables' gradients sum over every row, in (b, h, i, j) order).
#include <cmath>
#include <limits>
#include <vector>

#include "base/philox.h"
#include "tensor/cpu/common.h"

namespace ordo::cpu {

namespace {

constexpr double kLowest = std::numeric_limits<float>::lowest();  // nn::attention_bias's mask value

// Element (t, r) of a per-head table [Ht, R, w] for head h: Ht is H or 1.
template <class T>
const T* table_row(const Tensor& t, int64_t h, int64_t row) {
  const int64_t w = t.dim() == 3 ? t.size(2) : 1;
  return t.data<T>() + ((t.size(0) == 1 ? 0 : h) * t.size(1) + row) * w;
}

// Rows (b, h, n) of q, k or v [B, H, n, d] through their strides, each row
// contiguous: any such view (the stacked Q/K/V product's [B, L, 3, H, d]
// seen per head, as the CUDA kernels read it), or a contiguous copy.
template <class T>
struct HeadRows {
  const T* data;
  int64_t batch, head, row;
  const T* at(int64_t b, int64_t h, int64_t n) const { return data + b * batch + h * head + n * row; }
};
template <class T>
HeadRows<T> head_rows_of(const Tensor& t) {
  return {t.data<T>(), t.stride(0), t.stride(1), t.stride(2)};
}

// The terms of one call, and the score of one (query, key) pair.
template <class T>
struct Pairs {
  const AttentionTerms& t;
  int64_t B, H, L, J, d;
  HeadRows<T> q, k, v;

  const T* q_row(int64_t b, int64_t h, int64_t i) const { return q.at(b, h, i); }
  const T* k_row(int64_t b, int64_t h, int64_t j) const { return k.at(b, h, j); }
  const T* v_row(int64_t b, int64_t h, int64_t j) const { return v.at(b, h, j); }
  // [B or 1, H, L, e] at (b, h, i).
  const T* pos_row(const Tensor& x, int64_t b, int64_t h, int64_t i) const {
    return x.data<T>() + (((x.size(0) == 1 ? 0 : b) * H + h) * x.size(2) + i) * x.size(3);
  }

  // The row of the relative tables for (b, i, j), checked against the lut and the tables.
  int64_t row(int64_t b, int64_t i, int64_t j) const {
    if (!t.row_of.defined()) return -1;
    const int64_t* p = t.positions.data<int64_t>() + b * L;
    const int64_t at = p[j] - p[i] - t.first_distance;
    ORDO_CHECK(at >= 0 && at < t.row_of.numel(), "attention: the distance ", p[j] - p[i], " (key position minus query",
               " position) is outside the rows given for distances ", t.first_distance, "..",
               t.first_distance + t.row_of.numel() - 1);
    return t.row_of.data<int64_t>()[at];
  }
  // TUPE's reset: the pair's replacement row of T, or -1.
  int64_t cls_row(int64_t i, int64_t j) const {
    if (t.cls_row < 0) return -1;
    return i == 0 ? t.cls_row : j == 0 ? t.cls_row + 1 : -1;
  }

  static double dot(const T* a, const T* b, int64_t n) {
    double s = 0;
    for (int64_t x = 0; x < n; ++x) s += static_cast<double>(a[x]) * static_cast<double>(b[x]);
    return s;
  }

  // The contextual term c_ij before `scale`.
  double contextual(const T* qi, const T* kj, int64_t h, int64_t r) const {
    if (t.product.defined()) {
      const T* w = table_row<T>(t.product, h, r);
      double s = 0;
      for (int64_t x = 0; x < d; ++x) s += static_cast<double>(qi[x]) * static_cast<double>(kj[x]) * static_cast<double>(w[x]);
      return s;
    }
    const double c = dot(qi, kj, d);
    return t.gate.defined() ? c * static_cast<double>(*table_row<T>(t.gate, h, r)) : c;
  }

  // The mask and the fixed terms (no gradient).
  double fixed(int64_t b, int64_t h, int64_t i, int64_t j) const {
    double m = 0;
    if (t.key_bias.defined()) {
      const Tensor& kb = t.key_bias;
      m = static_cast<double>(kb.data<T>()[((kb.size(0) == 1 ? 0 : b) * kb.size(1) + (kb.size(1) == 1 ? 0 : h)) * J + j]);
    }
    if (t.causal && j > i) m = std::min(m, kLowest);
    if (t.dense_bias.defined()) {
      const Tensor& db = t.dense_bias;
      m += static_cast<double>(
          db.data<T>()[(((db.size(0) == 1 ? 0 : b) * db.size(1) + (db.size(1) == 1 ? 0 : h)) * L + i) * J + j]);
    }
    return m;
  }

  double score(int64_t b, int64_t h, int64_t i, int64_t j) const {
    const T *qi = q_row(b, h, i), *kj = k_row(b, h, j);
    const int64_t r = row(b, i, j), reset = cls_row(i, j);
    double s = t.scale * contextual(qi, kj, h, r);
    if (t.query_vectors.defined()) s += t.query_scale * dot(qi, table_row<T>(t.query_vectors, h, r), d);
    if (t.key_vectors.defined()) s += t.key_scale * dot(kj, table_row<T>(t.key_vectors, h, r), d);
    if (reset >= 0) {
      s += static_cast<double>(*table_row<T>(t.table, h, reset));
    } else {
      if (t.table.defined() && r >= 0) s += static_cast<double>(*table_row<T>(t.table, h, r));
      if (t.pos_query.defined())
        s += t.pos_scale * dot(pos_row(t.pos_query, b, h, i), pos_row(t.pos_key, b, h, j), t.pos_query.size(3));
    }
    if (t.segment_table.defined()) {
      const int64_t* seg = t.segments.data<int64_t>() + b * L;
      s += static_cast<double>(*table_row<T>(t.segment_table, h, seg[i] * t.segment_types + seg[j]));
    }
    return s + fixed(b, h, i, j);
  }

  // keep / (1 - p) of element (b, h, i, j) of the probabilities, or 1 without dropout.
  double dropout_factor(int64_t b, int64_t h, int64_t i, int64_t j, uint64_t threshold, double scale) const {
    if (t.dropout == 0) return 1;
    const uint64_t e = static_cast<uint64_t>(((b * H + h) * L + i) * J + j);
    const uint64_t stream = t.stream + (t.stream_base.defined() ? static_cast<uint64_t>(t.stream_base.item()) : 0);
    return philox::dropout_keep(t.seed, stream, e, threshold) ? scale : 0;
  }

  // The probabilities of row (b, h, i) from its scores: P_ij = exp(s_ij - lse).
  double softmax(std::vector<double>& s) const {
    double m = -INFINITY;
    for (double x : s) m = std::max(m, x);
    double sum = 0;
    for (double x : s) sum += std::exp(x - m);
    const double lse = m + std::log(sum);
    for (double& x : s) x = std::exp(x - lse);
    return lse;
  }
};

// RoPE: rows [B, H, n, d] of x rotated pair by pair by positions[b, i]
// theta_m, or rotated back (inverse: the transpose, for gradients).
template <class V, class T>
void rotate_rows(V* x, int64_t B, int64_t H, int64_t n, int64_t d, const AttentionTerms& t, bool inverse) {
  const int64_t* p = t.positions.data<int64_t>();
  const T* theta = t.rotary.data<T>();
  const int64_t half = d / 2;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < n; ++i) {
        V* row = x + ((b * H + h) * n + i) * d;
        for (int64_t m = 0; m < half; ++m) {
          const double angle = static_cast<double>(p[b * n + i]) * static_cast<double>(theta[m]);
          const double c = std::cos(angle), s = inverse ? -std::sin(angle) : std::sin(angle);
          V& a = row[t.rotary_half ? m : 2 * m];
          V& e = row[t.rotary_half ? m + half : 2 * m + 1];
          const double a0 = static_cast<double>(a), e0 = static_cast<double>(e);
          a = static_cast<V>(a0 * c - e0 * s);
          e = static_cast<V>(a0 * s + e0 * c);
        }
      }
}

// Row (b, h, i) of out or gout [B, H, L, d], a view whose last axis is
// contiguous (the heads-merged block of tensor/ops_attention.cpp).
template <class T>
T* head_row(const Tensor& t, int64_t b, int64_t h, int64_t i) {
  return static_cast<T*>(t.raw_data()) + b * t.stride(0) + h * t.stride(1) + i * t.stride(2);
}

// x [B, H, n, d] (rows through its strides) as a contiguous vector.
template <class T>
std::vector<T> dense_rows(const Tensor& x) {
  const HeadRows<T> rows = head_rows_of<T>(x);
  const int64_t d = x.size(3);
  std::vector<T> out;
  out.reserve(static_cast<size_t>(x.numel()));
  for (int64_t b = 0; b < x.size(0); ++b)
    for (int64_t h = 0; h < x.size(1); ++h)
      for (int64_t n = 0; n < x.size(2); ++n) out.insert(out.end(), rows.at(b, h, n), rows.at(b, h, n) + d);
  return out;
}

// Rows of a contiguous [B, H, n, d] vector.
template <class T>
HeadRows<T> head_rows_of(const std::vector<T>& x, int64_t H, int64_t n, int64_t d) {
  return {x.data(), H * n * d, n * d, d};
}

// q and k as the pairs see them: rotated copies under RoPE, else the inputs.
template <class T>
struct Rotated {
  std::vector<T> q, k;
  Rotated(const AttentionTerms& t, const Tensor& qt, const Tensor& kt) {
    if (!t.rotary.defined()) return;
    q = dense_rows<T>(qt);
    k = dense_rows<T>(kt);
    rotate_rows<T, T>(q.data(), qt.size(0), qt.size(1), qt.size(2), qt.size(3), t, false);
    rotate_rows<T, T>(k.data(), kt.size(0), kt.size(1), kt.size(2), kt.size(3), t, false);
  }
};

template <class T>
Pairs<T> pairs_of(const AttentionTerms& t, const Tensor& q, const Tensor& k, const Tensor& v, const Rotated<T>& r) {
  const int64_t H = q.size(1), L = q.size(2), J = k.size(2), d = q.size(3);
  return {t,
          q.size(0),
          H,
          L,
          J,
          d,
          r.q.empty() ? head_rows_of<T>(q) : head_rows_of<T>(r.q, H, L, d),
          r.k.empty() ? head_rows_of<T>(k) : head_rows_of<T>(r.k, H, J, d),
          head_rows_of<T>(v)};
}

// The dropout scale as the dropout kernel rounds it, in T.
template <class T>
double dropout_scale(double p) {
  return static_cast<double>(static_cast<T>(1.0 / (1.0 - p)));
}

}  // namespace

void attention_forward(const Tensor& out, const Tensor& out_operand, const Tensor& lse, const Tensor& q,
                       const Tensor& k, const Tensor& v, const AttentionTerms& terms) {
  dispatch_float(q.dtype(), "attention_forward", [&](auto tag) {
    using T = decltype(tag);
    const Rotated<T> rotated(terms, q, k);
    const Pairs<T> P = pairs_of<T>(terms, q, k, v, rotated);
    const uint64_t threshold = philox::dropout_threshold(terms.dropout);
    const double keep_scale = dropout_scale<T>(terms.dropout);
    T* l = lse.data<T>();
    std::vector<double> p(static_cast<size_t>(P.J)), acc(static_cast<size_t>(P.d));
    for (int64_t b = 0; b < P.B; ++b)
      for (int64_t h = 0; h < P.H; ++h)
        for (int64_t i = 0; i < P.L; ++i) {
          for (int64_t j = 0; j < P.J; ++j) p[j] = P.score(b, h, i, j);
          l[(b * P.H + h) * P.L + i] = static_cast<T>(P.softmax(p));
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t j = 0; j < P.J; ++j) {
            const double w = p[j] * P.dropout_factor(b, h, i, j, threshold, keep_scale);
            const T* vj = P.v_row(b, h, j);
            const T* extra = terms.value_vectors.defined() ? table_row<T>(terms.value_vectors, h, P.row(b, i, j)) : nullptr;
            for (int64_t x = 0; x < P.d; ++x)
              acc[x] += w * (static_cast<double>(vj[x]) + (extra ? static_cast<double>(extra[x]) : 0.0));
          }
          T* oi = head_row<T>(out, b, h, i);
          for (int64_t x = 0; x < P.d; ++x) oi[x] = static_cast<T>(acc[x]);
          if (!out_operand.defined()) continue;
          uint16_t* rounded = head_row<uint16_t>(out_operand, b, h, i);
          for (int64_t x = 0; x < P.d; ++x) rounded[x] = f32_to_bf16(static_cast<float>(oi[x]));
        }
  });
}

void attention_backward(const AttentionGrads& g, const Tensor& gout, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out, const Tensor& lse, const AttentionTerms& terms) {
  (void)out, (void)lse;  // recomputed here in double, as the forward computed them
  dispatch_float(q.dtype(), "attention_backward", [&](auto tag) {
    using T = decltype(tag);
    const Rotated<T> rotated(terms, q, k);
    const Pairs<T> P = pairs_of<T>(terms, q, k, v, rotated);
    const int64_t B = P.B, H = P.H, L = P.L, J = P.J, d = P.d;
    const uint64_t threshold = philox::dropout_threshold(terms.dropout);
    const double keep_scale = dropout_scale<T>(terms.dropout);
    // Accumulators in double, in the gradients' own layouts.
    auto zeros = [](const Tensor& x) { return std::vector<double>(x.defined() ? static_cast<size_t>(x.numel()) : 0, 0.0); };
    std::vector<double> gq = zeros(g.q), gk = zeros(g.k), gv = zeros(g.v), ggate = zeros(g.gate),
                        gproduct = zeros(g.product), gqv = zeros(g.query_vectors), gkv = zeros(g.key_vectors),
                        gtable = zeros(g.table), gvv = zeros(g.value_vectors), gpq = zeros(g.pos_query),
                        gpk = zeros(g.pos_key), gseg = zeros(g.segment_rows);
    // Offset of (h, row) in a table gradient laid out as its table [Ht, R, w].
    auto at = [](const Tensor& table, int64_t h, int64_t row) {
      const int64_t w = table.dim() == 3 ? table.size(2) : 1;
      return ((table.size(0) == 1 ? 0 : h) * table.size(1) + row) * w;
    };
    const int64_t e = terms.pos_query.defined() ? terms.pos_query.size(3) : 0;
    std::vector<double> p(static_cast<size_t>(J)), z(static_cast<size_t>(J)), dp(static_cast<size_t>(J));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i) {
          const T* go = head_row<T>(gout, b, h, i);
          for (int64_t j = 0; j < J; ++j) p[j] = P.score(b, h, i, j);
          P.softmax(p);
          // dP~_ij = gout_i . (v_j + V[row]); D_i = sum_j P~_ij dP~_ij.
          double D = 0;
          for (int64_t j = 0; j < J; ++j) {
            z[j] = P.dropout_factor(b, h, i, j, threshold, keep_scale);
            const T* vj = P.v_row(b, h, j);
            double s = Pairs<T>::dot(go, vj, d);
            if (terms.value_vectors.defined()) s += Pairs<T>::dot(go, table_row<T>(terms.value_vectors, h, P.row(b, i, j)), d);
            dp[j] = s;
            D += p[j] * z[j] * s;
          }
          const T* qi = P.q_row(b, h, i);
          for (int64_t j = 0; j < J; ++j) {
            const double pt = p[j] * z[j];                 // P~_ij
            const double ds = p[j] * (z[j] * dp[j] - D);   // dS_ij
            const T* kj = P.k_row(b, h, j);
            const int64_t r = P.row(b, i, j), reset = P.cls_row(i, j);
            if (!gv.empty())
              for (int64_t x = 0; x < d; ++x) gv[((b * H + h) * J + j) * d + x] += pt * static_cast<double>(go[x]);
            if (!gvv.empty())
              for (int64_t x = 0; x < d; ++x) gvv[at(g.value_vectors, h, r) + x] += pt * static_cast<double>(go[x]);
            // The contextual term: d c / d q_i, d c / d k_j, and the gate's or product's.
            const double c_scale = terms.scale * ds;
            const double gate = terms.gate.defined() ? static_cast<double>(*table_row<T>(terms.gate, h, r)) : 1.0;
            const T* w = terms.product.defined() ? table_row<T>(terms.product, h, r) : nullptr;
            for (int64_t x = 0; x < d; ++x) {
              const double wx = w ? static_cast<double>(w[x]) : gate;
              if (!gq.empty()) gq[((b * H + h) * L + i) * d + x] += c_scale * wx * static_cast<double>(kj[x]);
              if (!gk.empty()) gk[((b * H + h) * J + j) * d + x] += c_scale * wx * static_cast<double>(qi[x]);
              if (!gproduct.empty())
                gproduct[at(g.product, h, r) + x] += c_scale * static_cast<double>(qi[x]) * static_cast<double>(kj[x]);
            }
            if (!ggate.empty()) ggate[at(g.gate, h, r)] += c_scale * Pairs<T>::dot(qi, kj, d);
            if (terms.query_vectors.defined()) {
              const T* a = table_row<T>(terms.query_vectors, h, r);
              for (int64_t x = 0; x < d; ++x) {
                if (!gq.empty()) gq[((b * H + h) * L + i) * d + x] += terms.query_scale * ds * static_cast<double>(a[x]);
                if (!gqv.empty()) gqv[at(g.query_vectors, h, r) + x] += terms.query_scale * ds * static_cast<double>(qi[x]);
              }
            }
            if (terms.key_vectors.defined()) {
              const T* a = table_row<T>(terms.key_vectors, h, r);
              for (int64_t x = 0; x < d; ++x) {
                if (!gk.empty()) gk[((b * H + h) * J + j) * d + x] += terms.key_scale * ds * static_cast<double>(a[x]);
                if (!gkv.empty()) gkv[at(g.key_vectors, h, r) + x] += terms.key_scale * ds * static_cast<double>(kj[x]);
              }
            }
            if (!gtable.empty() && (reset >= 0 || r >= 0)) gtable[at(g.table, h, reset >= 0 ? reset : r)] += ds;
            if (e > 0 && reset < 0) {
              const T* ei = P.pos_row(terms.pos_query, b, h, i);
              const T* fj = P.pos_row(terms.pos_key, b, h, j);
              for (int64_t x = 0; x < e; ++x) {
                if (!gpq.empty()) gpq[((b * H + h) * L + i) * e + x] += terms.pos_scale * ds * static_cast<double>(fj[x]);
                if (!gpk.empty()) gpk[((b * H + h) * J + j) * e + x] += terms.pos_scale * ds * static_cast<double>(ei[x]);
              }
            }
            if (!gseg.empty())
              gseg[((b * H + h) * L + i) * terms.segment_types + terms.segments.data<int64_t>()[b * L + j]] += ds;
          }
        }
    if (terms.rotary.defined()) {  // the gradients of the rotated q and k, rotated back
      if (!gq.empty()) rotate_rows<double, T>(gq.data(), B, H, L, d, terms, true);
      if (!gk.empty()) rotate_rows<double, T>(gk.data(), B, H, J, d, terms, true);
    }
    auto store = [](const Tensor& x, const std::vector<double>& acc) {
      if (!x.defined()) return;
      T* dst = x.data<T>();
      for (size_t n = 0; n < acc.size(); ++n) dst[n] = static_cast<T>(acc[n]);
    };
    // q's, k's and v's through their strides (the stacked block's parts, or contiguous).
    auto store_rows = [](const Tensor& x, const std::vector<double>& acc) {
      if (!x.defined()) return;
      const int64_t H = x.size(1), n = x.size(2), d = x.size(3);
      for (int64_t b = 0; b < x.size(0); ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = 0; i < n; ++i) {
            T* row = head_row<T>(x, b, h, i);
            for (int64_t c = 0; c < d; ++c) row[c] = static_cast<T>(acc[static_cast<size_t>(((b * H + h) * n + i) * d + c)]);
          }
    };
    store_rows(g.q, gq);
    store_rows(g.k, gk);
    store_rows(g.v, gv);
    store(g.gate, ggate);
    store(g.product, gproduct);
    store(g.query_vectors, gqv);
    store(g.key_vectors, gkv);
    store(g.table, gtable);
    store(g.value_vectors, gvv);
    store(g.pos_query, gpq);
    store(g.pos_key, gpk);
    store(g.segment_rows, gseg);
  });
}

}  // namespace ordo::cpu
