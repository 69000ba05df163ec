// The relative-position primitives (tensor/ops_relative.cpp, tensor/cpu/relative.cpp,
// autograd/ops_relative.cpp) against naive loops written here from their
// definitions, in f64; f32 against the f64 loops; their gradients against f64
// central finite differences; thread-count independence; and the errors a
// caller can provoke.
#include <omp.h>

#include <cmath>
#include <vector>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "tensor/cpu/gemm_own.h"
#include "tensor/ops.h"
#include "tests/helpers.h"

using namespace ordo;
using ordo::test::random_tensor;
using ordo::test::random_values;
using ordo::test::require_close;

namespace {

// A random index [B, L, J] with entries in [0, rows).
Tensor random_index(int64_t B, int64_t L, int64_t J, int64_t rows, uint64_t seed) {
  std::vector<double> u = random_values(B * L * J, seed, 0, 1);
  std::vector<int64_t> v;
  for (double x : u) v.push_back(std::min<int64_t>(rows - 1, static_cast<int64_t>(x * static_cast<double>(rows))));
  return Tensor::from_vector(v, {B, L, J});
}

// out[b,h,i,j] = x[b,h,i,idx[b,i,j]]
std::vector<double> naive_gather(const std::vector<double>& x, const std::vector<int64_t>& idx, int64_t B, int64_t H,
                                 int64_t L, int64_t J, int64_t R) {
  std::vector<double> out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < J; ++j) out.push_back(x[static_cast<size_t>(((b * H + h) * L + i) * R + idx[static_cast<size_t>((b * L + i) * J + j)])]);
  return out;
}

// out[b,h,i,r] = sum over j with idx[b,i,j] = r of g[b,h,i,j]
std::vector<double> naive_scatter(const std::vector<double>& g, const std::vector<int64_t>& idx, int64_t B, int64_t H,
                                  int64_t L, int64_t J, int64_t R) {
  std::vector<double> out(static_cast<size_t>(B * H * L * R), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t j = 0; j < J; ++j)
            if (idx[static_cast<size_t>((b * L + i) * J + j)] == r)
              out[static_cast<size_t>(((b * H + h) * L + i) * R + r)] += g[static_cast<size_t>(((b * H + h) * L + i) * J + j)];
  return out;
}

// s[b,h,i,j] = alpha sum_d q[b,h,i,d] k[b,h,j,d] a[h,idx[b,i,j],d]  (Huang et al. 2020, Eq. 15)
std::vector<double> naive_product(const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& a, const std::vector<int64_t>& idx, int64_t B, int64_t H,
                                  int64_t L, int64_t J, int64_t D, int64_t R, double alpha) {
  std::vector<double> s;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < J; ++j) {
          const int64_t r = idx[static_cast<size_t>((b * L + i) * J + j)];
          double sum = 0;
          for (int64_t d = 0; d < D; ++d)
            sum += q[static_cast<size_t>(((b * H + h) * L + i) * D + d)] * k[static_cast<size_t>(((b * H + h) * J + j) * D + d)] *
                   a[static_cast<size_t>((h * R + r) * D + d)];
          s.push_back(alpha * sum);
        }
  return s;
}

}  // namespace

TEST_CASE("relative_gather and relative_scatter match naive loops (f64, f32, strided inputs)", "[ops][relative]") {
  // L != J (a key axis of its own length) and R not a multiple of anything.
  const int64_t B = 2, H = 3, L = 5, J = 6, R = 7;
  Tensor idx = random_index(B, L, J, R, 1);
  std::vector<int64_t> ids = idx.to_vector<int64_t>();
  Tensor x = random_tensor({B, H, L, R}, 2);
  std::vector<double> expected = naive_gather(x.to_doubles(), ids, B, H, L, J, R);
  require_close(relative_gather(x, idx), expected, 0, 0, "gather f64");
  require_close(relative_gather(x.to(DType::f32), idx), expected, 1e-7, 0, "gather f32");
  // A non-contiguous x (a transposed view) gives the same values.
  Tensor xt = x.transpose(1, 2).contiguous().transpose(1, 2);
  REQUIRE(!xt.is_contiguous());
  require_close(relative_gather(xt, idx), expected, 0, 0, "gather strided");

  Tensor g = random_tensor({B, H, L, J}, 3);
  std::vector<double> scattered = naive_scatter(g.to_doubles(), ids, B, H, L, J, R);
  require_close(relative_scatter(g, idx, R), scattered, 1e-15, 1e-15, "scatter f64");
  require_close(relative_scatter(g.to(DType::f32), idx, R), scattered, 1e-6, 1e-6, "scatter f32");
  // More rows than the index uses: the extra rows are zero (never left as garbage).
  std::vector<double> wide = naive_scatter(g.to_doubles(), ids, B, H, L, J, R + 3);
  require_close(relative_scatter(g, idx, R + 3), wide, 1e-15, 1e-15, "scatter into extra rows");

  // The transpose relation <gather(x), g> = <x, scatter(g)>, independent of both loops.
  double lhs = 0, rhs = 0;
  std::vector<double> gx = relative_gather(x, idx).to_doubles(), gd = g.to_doubles();
  std::vector<double> xs = x.to_doubles(), sg = relative_scatter(g, idx, R).to_doubles();
  for (size_t e = 0; e < gx.size(); ++e) lhs += gx[e] * gd[e];
  for (size_t e = 0; e < xs.size(); ++e) rhs += xs[e] * sg[e];
  CHECK(std::fabs(lhs - rhs) <= 1e-12 * std::max(1.0, std::fabs(lhs)));
}

TEST_CASE("relative_product matches a naive triple loop, and its backward matches naive gradients", "[ops][relative]") {
  const int64_t B = 2, H = 3, L = 4, J = 5, D = 6, R = 7;
  const double alpha = 0.37;
  Tensor idx = random_index(B, L, J, R, 4);
  std::vector<int64_t> ids = idx.to_vector<int64_t>();
  Tensor q = random_tensor({B, H, L, D}, 5), k = random_tensor({B, H, J, D}, 6), a = random_tensor({H, R, D}, 7);
  std::vector<double> qv = q.to_doubles(), kv = k.to_doubles(), av = a.to_doubles();
  std::vector<double> expected = naive_product(qv, kv, av, ids, B, H, L, J, D, R, alpha);
  require_close(relative_product(q, k, a, idx, alpha), expected, 1e-14, 1e-15, "product f64");
  require_close(relative_product(q.to(DType::f32), k.to(DType::f32), a.to(DType::f32), idx, alpha), expected, 1e-5,
                1e-6, "product f32");
  // Strided operands.
  Tensor qs = q.transpose(0, 1).contiguous().transpose(0, 1);
  require_close(relative_product(qs, k, a, idx, alpha), expected, 1e-14, 1e-15, "product strided q");

  // The backward, written as loops from d s_ij / d q_id = alpha k_jd a_rd etc.
  Tensor gs = random_tensor({B, H, L, J}, 8);
  std::vector<double> g = gs.to_doubles();
  std::vector<double> gq(qv.size(), 0), gk(kv.size(), 0), ga(av.size(), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < J; ++j) {
          const int64_t r = ids[static_cast<size_t>((b * L + i) * J + j)];
          const double c = alpha * g[static_cast<size_t>(((b * H + h) * L + i) * J + j)];
          for (int64_t d = 0; d < D; ++d) {
            const size_t iq = static_cast<size_t>(((b * H + h) * L + i) * D + d);
            const size_t ik = static_cast<size_t>(((b * H + h) * J + j) * D + d);
            const size_t ia = static_cast<size_t>((h * R + r) * D + d);
            gq[iq] += c * kv[ik] * av[ia];
            gk[ik] += c * qv[iq] * av[ia];
            ga[ia] += c * qv[iq] * kv[ik];
          }
        }
  RelativeProductGrads all = relative_product_backward(gs, q, k, a, idx, alpha, true, true, true);
  require_close(all.gq, gq, 1e-13, 1e-14, "gq");
  require_close(all.gk, gk, 1e-13, 1e-14, "gk");
  require_close(all.ga, ga, 1e-13, 1e-14, "ga");
  // Only what is asked for is computed.
  RelativeProductGrads some = relative_product_backward(gs, q, k, a, idx, alpha, false, true, false);
  CHECK(!some.gq.defined());
  CHECK(!some.ga.defined());
  require_close(some.gk, gk, 1e-13, 1e-14, "gk alone");
  // f32 backward against the f64 loops.
  RelativeProductGrads f32 = relative_product_backward(gs.to(DType::f32), q.to(DType::f32), k.to(DType::f32),
                                                       a.to(DType::f32), idx, alpha, true, true, true);
  require_close(f32.ga, ga, 1e-5, 1e-5, "ga f32");
}

TEST_CASE("relative ops: gradients against f64 finite differences", "[ops][relative][gradcheck]") {
  const int64_t B = 2, H = 2, L = 3, J = 4, D = 3, R = 5;
  Tensor idx = random_index(B, L, J, R, 9);
  GradcheckResult g = gradcheck([&](const std::vector<Var>& v) { return relative_gather(v[0], idx); },
                                {random_tensor({B, H, L, R}, 10)});
  INFO(g.worst);
  CHECK(g.ok);
  GradcheckResult s = gradcheck([&](const std::vector<Var>& v) { return relative_scatter(v[0], idx, R); },
                                {random_tensor({B, H, L, J}, 11)});
  INFO(s.worst);
  CHECK(s.ok);
  GradcheckResult p = gradcheck(
      [&](const std::vector<Var>& v) { return relative_product(v[0], v[1], v[2], idx, 0.6); },
      {random_tensor({B, H, L, D}, 12), random_tensor({B, H, J, D}, 13), random_tensor({H, R, D}, 14)});
  INFO(p.worst);
  CHECK(p.ok);
  // A table shared by the heads (an expanded view, as huang_m3 passes it):
  // the gradient sums over the heads.
  GradcheckResult shared = gradcheck(
      [&](const std::vector<Var>& v) { return relative_product(v[0], v[1], expand(unsqueeze(v[2], 0), {H, R, D}), idx); },
      {random_tensor({B, H, L, D}, 15), random_tensor({B, H, J, D}, 16), random_tensor({R, D}, 17)});
  INFO(shared.worst);
  CHECK(shared.ok);
  // Only some inputs require a gradient.
  GradcheckResult partial = gradcheck(
      [&](const std::vector<Var>& v) { return relative_product(v[0], v[1], v[2], idx); },
      {random_tensor({B, H, L, D}, 18), random_tensor({B, H, J, D}, 19), random_tensor({H, R, D}, 20)}, {}, {0, 2});
  INFO(partial.worst);
  CHECK(partial.ok);
}

TEST_CASE("relative ops: results do not depend on the thread count", "[ops][relative][determinism]") {
  const int64_t B = 3, H = 4, L = 9, J = 9, D = 8, R = 17;
  Tensor idx = random_index(B, L, J, R, 21);
  Tensor x = random_tensor({B, H, L, R}, 22, DType::f32), g = random_tensor({B, H, L, J}, 23, DType::f32);
  Tensor q = random_tensor({B, H, L, D}, 24, DType::f32), k = random_tensor({B, H, J, D}, 25, DType::f32);
  Tensor a = random_tensor({H, R, D}, 26, DType::f32);
  auto run = [&] {
    RelativeProductGrads pg = relative_product_backward(g, q, k, a, idx, 0.5, true, true, true);
    return std::vector<Tensor>{relative_gather(x, idx), relative_scatter(g, idx, R), relative_product(q, k, a, idx, 0.5),
                               pg.gq, pg.gk, pg.ga};
  };
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  std::vector<Tensor> one = run();
  omp_set_num_threads(std::max(threads, 2) + 1);
  std::vector<Tensor> many = run();
  omp_set_num_threads(threads);
  for (size_t e = 0; e < one.size(); ++e) {
    INFO("result " << e);
    CHECK(ordo::test::bit_identical(one[e], many[e]));
  }
}

TEST_CASE("relative ops: bad indices and shapes are clear errors", "[ops][relative][errors]") {
  Tensor x = random_tensor({1, 2, 3, 4}, 27);
  Tensor bad = Tensor::from_vector(std::vector<int64_t>{0, 1, 4, 0, 0, 0, 0, 0, 0}, {1, 3, 3});
  CHECK_THROWS_WITH(relative_gather(x, bad), Catch::Contains("outside the table's 4 rows"));
  Tensor negative = Tensor::from_vector(std::vector<int64_t>{0, -1, 0, 0, 0, 0, 0, 0, 0}, {1, 3, 3});
  CHECK_THROWS_WITH(relative_gather(x, negative), Catch::Contains("relative index -1"));
  CHECK_THROWS_WITH(relative_scatter(random_tensor({1, 2, 3, 3}, 28), bad, 4), Catch::Contains("outside"));
  Tensor wrong_l = Tensor::from_vector(std::vector<int64_t>{0, 0}, {1, 2, 1});
  CHECK_THROWS_WITH(relative_gather(x, wrong_l), Catch::Contains("idx has shape"));
  CHECK_THROWS_WITH(relative_gather(x, bad.to(DType::f64)), Catch::Contains("idx"));
  CHECK_THROWS_WITH(relative_scatter(random_tensor({1, 2, 3, 5}, 29), bad, 4), Catch::Contains("keys"));
  Tensor q = random_tensor({1, 2, 3, 4}, 30), k = random_tensor({1, 2, 3, 4}, 31);
  CHECK_THROWS_WITH(relative_product(q, k, random_tensor({3, 5, 4}, 32), bad), Catch::Contains("a has shape"));
  CHECK_THROWS_WITH(relative_product(q, random_tensor({1, 2, 3, 5}, 33), random_tensor({2, 5, 4}, 32), bad),
                    Catch::Contains("k has shape"));
  CHECK_THROWS_WITH(relative_product(q, k, random_tensor({2, 4, 4}, 34), bad), Catch::Contains("outside"));
  // Empty batches give empty results, not errors.
  Tensor none = Tensor::from_vector(std::vector<int64_t>{}, {0, 3, 3});
  CHECK(relative_gather(random_tensor({0, 2, 3, 4}, 35), none).shape() == Shape{0, 2, 3, 3});
}

// ---- banded terms ------------------------------------------------------------------------

namespace {

// Naive loops from the definitions (tensor/ops.h): Ht tables of 2L - 1 rows,
// head h reading table (Ht == 1 ? 0 : h), pair (i, j) the row j - i + L - 1.
struct BandShape {
  int64_t B, H, L, D, Ht;
  size_t x(int64_t b, int64_t h, int64_t i, int64_t d) const { return static_cast<size_t>(((b * H + h) * L + i) * D + d); }
  size_t p(int64_t b, int64_t h, int64_t i, int64_t j) const { return static_cast<size_t>(((b * H + h) * L + i) * L + j); }
  size_t t(int64_t h, int64_t i, int64_t j, int64_t d) const {
    return static_cast<size_t>(((Ht == 1 ? 0 : h) * (2 * L - 1) + j - i + L - 1) * D + d);
  }
};

std::vector<double> naive_band_scores(const std::vector<double>& x, const std::vector<double>& t, const BandShape& s) {
  std::vector<double> out;
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.H; ++h)
      for (int64_t i = 0; i < s.L; ++i)
        for (int64_t j = 0; j < s.L; ++j) {
          double sum = 0;
          for (int64_t d = 0; d < s.D; ++d) sum += x[s.x(b, h, i, d)] * t[s.t(h, i, j, d)];
          out.push_back(sum);
        }
  return out;
}

std::vector<double> naive_band_apply(const std::vector<double>& p, const std::vector<double>& t, const BandShape& s) {
  std::vector<double> out;
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.H; ++h)
      for (int64_t i = 0; i < s.L; ++i)
        for (int64_t d = 0; d < s.D; ++d) {
          double sum = 0;
          for (int64_t j = 0; j < s.L; ++j) sum += p[s.p(b, h, i, j)] * t[s.t(h, i, j, d)];
          out.push_back(sum);
        }
  return out;
}

std::vector<double> naive_band_table_grad(const std::vector<double>& g, const std::vector<double>& y,
                                          const BandShape& s) {
  std::vector<double> out(static_cast<size_t>(s.Ht * (2 * s.L - 1) * s.D), 0.0);
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.H; ++h)
      for (int64_t i = 0; i < s.L; ++i)
        for (int64_t j = 0; j < s.L; ++j)
          for (int64_t d = 0; d < s.D; ++d) out[s.t(h, i, j, d)] += g[s.p(b, h, i, j)] * y[s.x(b, h, i, d)];
  return out;
}

}  // namespace

TEST_CASE("banded terms match naive loops and the gather path (a table per head or shared, f64, f32, no BLAS)",
          "[ops][relative]") {
  for (int64_t Ht : {int64_t{1}, int64_t{3}}) {
    const BandShape s{2, 3, 5, 4, Ht};
    Tensor x = random_tensor({s.B, s.H, s.L, s.D}, 40), t = random_tensor({Ht, 2 * s.L - 1, s.D}, 41);
    Tensor p = random_tensor({s.B, s.H, s.L, s.L}, 42);
    const std::vector<double> scores = naive_band_scores(x.to_doubles(), t.to_doubles(), s);
    const std::vector<double> applied = naive_band_apply(p.to_doubles(), t.to_doubles(), s);
    const std::vector<double> table_grad = naive_band_table_grad(p.to_doubles(), x.to_doubles(), s);
    auto expect = [&](const std::vector<double>& v, const Shape& shape) { return Tensor::from_vector(v, shape); };
    for (bool blas : {true, false}) {
      if (!blas && !cpu::blas_compiled()) continue;
      cpu::set_use_blas(blas && cpu::blas_compiled());
      CAPTURE(Ht, blas);
      require_close(band_scores(x, t), expect(scores, {s.B, s.H, s.L, s.L}), 1e-12, 1e-12, "band_scores f64");
      require_close(band_apply(p, t), expect(applied, {s.B, s.H, s.L, s.D}), 1e-12, 1e-12, "band_apply f64");
      require_close(band_table_grad(p, x, Ht), expect(table_grad, {Ht, 2 * s.L - 1, s.D}), 1e-12, 1e-12,
                    "band_table_grad f64");
      require_close(band_scores(x.to(DType::f32), t.to(DType::f32)), expect(scores, {s.B, s.H, s.L, s.L}), 1e-5, 1e-5,
                    "band_scores f32");
      require_close(band_table_grad(p.to(DType::f32), x.to(DType::f32), Ht),
                    expect(table_grad, {Ht, 2 * s.L - 1, s.D}), 1e-5, 1e-5, "band_table_grad f32");
    }
    cpu::set_use_blas(cpu::blas_compiled());
    // The index path's Q A^T then gather, with idx[b, i, j] = j - i + L - 1 (one table: every head's).
    if (Ht == 1) {
      std::vector<int64_t> idx;
      for (int64_t b = 0; b < s.B; ++b)
        for (int64_t i = 0; i < s.L; ++i)
          for (int64_t j = 0; j < s.L; ++j) idx.push_back(j - i + s.L - 1);
      Tensor index = Tensor::from_vector(idx, {s.B, s.L, s.L});
      Tensor table = t.reshape({2 * s.L - 1, s.D});
      require_close(band_scores(x, t), relative_gather(matmul(x, table, false, true), index), 1e-12, 1e-12,
                    "band_scores against the gather path");
      require_close(band_apply(p, t), matmul(relative_scatter(p, index, 2 * s.L - 1), table), 1e-12, 1e-12,
                    "band_apply against the scatter path");
    }
  }
}

// (Their gradients against f64 finite differences: autograd/gradcheck_suite.cpp.)
TEST_CASE("banded terms: the same bits on any thread count, and clear errors", "[ops][relative][determinism]") {
  // Large enough that the table gradient takes its window buffer in chunks of queries.
  Tensor g = random_tensor({4, 4, 64, 64}, 47, DType::f32), y = random_tensor({4, 4, 64, 64}, 48, DType::f32);
  Tensor t = random_tensor({4, 127, 64}, 49, DType::f32);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  Tensor s1 = band_scores(y, t), a1 = band_apply(g, t), t1 = band_table_grad(g, y, 4);
  omp_set_num_threads(std::max(threads, 2) + 1);
  Tensor s3 = band_scores(y, t), a3 = band_apply(g, t), t3 = band_table_grad(g, y, 4);
  omp_set_num_threads(threads);
  require_close(s3, s1, 0, 0, "band_scores threads");
  require_close(a3, a1, 0, 0, "band_apply threads");
  require_close(t3, t1, 0, 0, "band_table_grad threads");

  Tensor x = random_tensor({1, 2, 3, 4}, 50);
  CHECK_THROWS_WITH(band_scores(x, random_tensor({2, 4, 4}, 51)), Catch::Contains("expected [1 or 2, 5, width]"));
  CHECK_THROWS_WITH(band_scores(x, random_tensor({3, 5, 4}, 51)), Catch::Contains("table has shape"));
  CHECK_THROWS_WITH(band_scores(x, random_tensor({1, 5, 3}, 51)), Catch::Contains("width"));
  CHECK_THROWS_WITH(band_apply(random_tensor({1, 2, 3, 4}, 52), random_tensor({1, 5, 4}, 51)),
                    Catch::Contains("square"));
  CHECK_THROWS_WITH(band_table_grad(random_tensor({1, 2, 3, 3}, 52), x, 3), Catch::Contains("table_heads"));
  CHECK(band_scores(random_tensor({0, 2, 3, 4}, 53), random_tensor({2, 5, 4}, 54)).shape() == Shape{0, 2, 3, 3});
  CHECK(band_table_grad(random_tensor({0, 2, 3, 3}, 53), random_tensor({0, 2, 3, 4}, 54), 1).to_doubles() ==
        std::vector<double>(20, 0.0));
}

// Under bf16 products the band ops take their operands rounded to bf16, as a
// product does: each result the FP32 sum of the exact products of the
// rounded operands, within D u sum |x t| of the naive loop over them.
TEST_CASE("banded terms under bf16 products sum the exact products of bf16-rounded operands", "[ops][relative]") {
  const BandShape s{2, 3, 6, 5, 3};
  const Tensor x = random_tensor({s.B, s.H, s.L, s.D}, 60, DType::f32);
  const Tensor t = random_tensor({s.Ht, 2 * s.L - 1, s.D}, 61, DType::f32);
  const Tensor p = random_tensor({s.B, s.H, s.L, s.L}, 62, DType::f32);
  auto rounded = [](const Tensor& v) { return v.to(DType::bf16).to_doubles(); };
  auto within = [](const Tensor& got, const std::vector<double>& exact, const std::vector<double>& magnitude,
                   double terms, const char* what) {
    const std::vector<double> g = got.to_doubles();
    REQUIRE(g.size() == exact.size());
    for (size_t i = 0; i < g.size(); ++i) {
      INFO(what << " element " << i);
      CHECK(std::fabs(g[i] - exact[i]) <= terms * 0x1p-24 * magnitude[i]);
    }
  };
  auto absolute = [](std::vector<double> v) {
    for (double& e : v) e = std::fabs(e);
    return v;
  };
  const std::vector<double> xr = rounded(x), tr = rounded(t), pr = rounded(p);
  const MatmulPrecision bf16 = MatmulPrecision::bf16;
  within(band_scores(x, t, bf16), naive_band_scores(xr, tr, s), naive_band_scores(absolute(xr), absolute(tr), s), s.D,
         "band_scores");
  within(band_apply(p, t, bf16), naive_band_apply(pr, tr, s), naive_band_apply(absolute(pr), absolute(tr), s), s.L,
         "band_apply");
  within(band_table_grad(p, x, s.Ht, bf16), naive_band_table_grad(pr, xr, s),
         naive_band_table_grad(absolute(pr), absolute(xr), s), s.B * s.L, "band_table_grad");
  // The rounding shows: FP32 products of the unrounded operands differ.
  const Tensor unrounded = band_scores(x, t, MatmulPrecision::fp32);
  CHECK_FALSE(test::bit_identical(band_scores(x, t, bf16), unrounded));
}
