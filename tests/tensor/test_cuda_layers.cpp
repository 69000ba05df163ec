// The layers' CUDA kernels against the CPU's on fresh random inputs: matrix
// products (FP32 for every transpose, batches and strided operands, alpha and
// beta, TF32), softmax and log-softmax with their backwards, layernorm and
// cross-entropy (the bounds: cuda_vs_cpu.h). Runs only where a GPU is (or the
// emulated one); a build without CUDA compiles this file to nothing.
#ifdef ORDO_HAS_CUDA

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/tensor/cuda_vs_cpu.h"

using namespace ordo;
using namespace cuda_vs_cpu;

// ---- matrix products --------------------------------------------------------------------

namespace {

// |A| |B| in f64 on the CPU: the magnitudes a product's rounding error scales with.
Tensor magnitudes(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  return matmul(ordo::abs(a.to(kCpu).to(DType::f64)), ordo::abs(b.to(kCpu).to(DType::f64)), ta, tb);
}

// FP32 products: lambda = 8 in the probabilistic bound over k terms, plus a
// few roundings outside the sum: (8 sqrt(k) + 4) u |A||B| per element,
// against the product computed in f64 (exact to ~1e-16 relative).
void check_product(const Tensor& on_gpu, const Tensor& a, const Tensor& b, bool ta, bool tb,
                   const std::string& what) {
  const int64_t k = ta ? a.size(-2) : a.size(-1);
  Tensor exact = matmul(a.to(kCpu).to(DType::f64), b.to(kCpu).to(DType::f64), ta, tb);
  std::vector<double> tol = magnitudes(a, b, ta, tb).to_doubles();
  const double scale = (8 * std::sqrt(static_cast<double>(std::max<int64_t>(k, 1))) + 4) * kU;
  for (double& t : tol) t = scale * t + 1e-30;
  check_within(on_gpu, exact, tol, what);
}

}  // namespace

TEST_CASE("cuda: matmul for every transpose, odd sizes and batches (FP32)", "[cuda]") {
  // matmul's default precision: fp32.
  struct Size {
    int64_t m, k, n;
  };
  const Size sizes[] = {{1, 1, 1}, {3, 17, 5}, {17, 1, 33}, {64, 1000, 33}, {257, 129, 65}, {5, 4097, 3}};
  uint64_t seed = 500;
  for (const Size& s : sizes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        Tensor a = rand_f32(ta ? Shape{s.k, s.m} : Shape{s.m, s.k}, ++seed);
        Tensor b = rand_f32(tb ? Shape{s.n, s.k} : Shape{s.k, s.n}, ++seed);
        check_product(matmul(gpu(a), gpu(b), ta, tb), a, b, ta, tb,
                      detail::cat("m=", s.m, " k=", s.k, " n=", s.n, " ta=", ta, " tb=", tb));
      }
    }
  }
  // A weight shared by a batch (one tall product), a shared left operand
  // (batch stride 0), broadcast batch axes, and views passed without a copy.
  Tensor x = rand_f32({4, 7, 33}, ++seed), w = rand_f32({33, 19}, ++seed);
  check_product(matmul(gpu(x), gpu(w)), x, w, false, false, "[4, 7, 33] @ [33, 19]");
  Tensor left = rand_f32({7, 33}, ++seed), right = rand_f32({3, 33, 19}, ++seed);
  check_product(matmul(gpu(left), gpu(right)), left.expand({3, 7, 33}), right, false, false,
                "[7, 33] @ [3, 33, 19] (left operand shared)");
  Tensor p = rand_f32({2, 3, 9, 16}, ++seed), q = rand_f32({1, 3, 16, 11}, ++seed);
  check_product(matmul(gpu(p), gpu(q)), p, q.expand({2, 3, 16, 11}), false, false, "broadcast batch axes");
  Tensor base = rand_f32({2, 16, 9}, ++seed);  // [2, 9, 16] seen through a transpose: column-major
  Tensor r = rand_f32({16, 11}, ++seed);
  check_product(matmul(gpu(base).transpose(1, 2), gpu(r)), base.transpose(1, 2), r.expand({2, 16, 11}),
                false, false, "column-major left view");
  Tensor strided = rand_f32({16, 22}, ++seed);  // every other column: copied by the op layer first
  check_product(matmul(gpu(p), gpu(strided).slice(1, 0, 22, 2)), p, strided.slice(1, 0, 22, 2).expand({2, 3, 16, 11}),
                false, false, "strided right operand");
}

TEST_CASE("cuda: gemm honours alpha, beta, batch stride 0 and k = 0", "[cuda]") {
  const MatmulPrecision fp32 = MatmulPrecision::fp32;
  const int64_t batch = 3, m = 17, n = 9, k = 40;
  Tensor a = rand_f32({batch, m, k}, 600), b = rand_f32({k, n}, 601), c0 = rand_f32({batch, m, n}, 602);
  const double alpha = 0.75, beta = -1.5;
  Tensor c = gpu(c0).clone();
  Tensor ag = gpu(a), bg = gpu(b);
  cuda::gemm(c, MatrixBatch{ag, false, k, m * k}, MatrixBatch{bg, false, n, 0}, batch, m, n, k, alpha, beta, fp32);
  // exact: alpha A B + beta C0 in f64; bound: the FP32 product bound on
  // alpha |A||B| plus two roundings of |beta C0|.
  Tensor a64 = a.to(DType::f64), b64 = b.to(DType::f64), c64 = c0.to(DType::f64);
  Tensor exact = add(affine(matmul(a64, b64), alpha), affine(c64, beta));
  std::vector<double> ab = matmul(ordo::abs(a64), ordo::abs(b64)).to_doubles(), c_abs = ordo::abs(c64).to_doubles();
  std::vector<double> tol(ab.size());
  for (size_t i = 0; i < tol.size(); ++i)
    tol[i] = (8 * std::sqrt(double(k)) + 4) * kU * std::fabs(alpha) * ab[i] + 2 * kU * std::fabs(beta) * c_abs[i];
  check_within(c, exact, tol, "alpha 0.75, beta -1.5, B shared across the batch");

  // k = 0: C = beta C, exactly (one multiplication).
  Tensor d = gpu(c0).clone();
  Tensor empty_a = Tensor::empty({m, 0}, DType::f32, kGpu), empty_b = Tensor::empty({0, n}, DType::f32, kGpu);
  cuda::gemm(d, MatrixBatch{empty_a, false, 1, 0}, MatrixBatch{empty_b, false, n, 0}, batch, m, n, 0, 1.0, 2.0, fp32);
  check_identical(d, affine(c0, 2.0), "k = 0 scales C by beta");
  // beta = 0 ignores NaN in C.
  Tensor nan_c = Tensor::full({1, m, n}, std::nan(""), DType::f32, kGpu);
  cuda::gemm(nan_c, MatrixBatch{ag, false, k, 0}, MatrixBatch{bg, false, n, 0}, 1, m, n, k, 1.0, 0.0, fp32);
  check_product(nan_c.squeeze(0), a.select(0, 0), b, false, false, "beta = 0 over a NaN C");
  // A broadcast row (ld 0), which cuBLAS cannot take as it is: A is [m, k]
  // with every row the same stored row.
  Tensor row = rand_f32({k}, 603), out = Tensor::empty({1, m, n}, DType::f32, kGpu);
  cuda::gemm(out, MatrixBatch{gpu(row), false, 0, 0}, MatrixBatch{bg, false, n, 0}, 1, m, n, k, 1.0, 0.0, fp32);
  check_product(out.squeeze(0), row.unsqueeze(0).expand({m, k}), b, false, false, "A a broadcast row (ld 0)");
  // alpha = 0: A and B are not read (their NaNs do not matter), C = beta C.
  Tensor nan_a = Tensor::full({m, k}, std::nan(""), DType::f32, kGpu);
  Tensor nan_b = Tensor::full({k, n}, std::nan(""), DType::f32, kGpu);
  Tensor c1 = rand_f32({1, m, n}, 604), e = gpu(c1);
  cuda::gemm(e, MatrixBatch{nan_a, false, k, 0}, MatrixBatch{nan_b, false, n, 0}, 1, m, n, k, 0.0, -1.0, fp32);
  check_identical(e, affine(c1, -1.0), "alpha = 0 ignores NaN in A and B");
  // matmul with an empty inner axis gives zeros.
  check_identical(matmul(empty_a, empty_b), Tensor::zeros({m, n}), "[m, 0] @ [0, n]");
}

TEST_CASE("cuda: gemm reads operands whose leading dimension exceeds their width (strided views)", "[cuda]") {
  // A: a window of columns [3, 3 + width) of a [batch, rows, 11] tensor (ld 11,
  // batch stride rows * 11); B: columns [2, 2 + width) of a [rows, 9] tensor
  // shared by the batch (ld 9, batch stride 0). Expected: the product of the
  // windows by a naive loop in double over the host storage (FP32 products).
  const int64_t batch = 2, m = 5, n = 4, k = 6, lda = 11, ldb = 9, a_first = 3, b_first = 2;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      const int64_t a_rows = ta ? k : m, b_rows = tb ? n : k;
      Tensor a = rand_f32({batch, a_rows, lda}, 610 + 2 * ta + tb), b = rand_f32({b_rows, ldb}, 620 + 2 * ta + tb);
      const std::vector<double> ah = a.to_doubles(), bh = b.to_doubles();
      auto a_at = [&](int64_t p, int64_t i, int64_t l) {  // op(A)(i, l) of batch p
        return ah[static_cast<size_t>(p * a_rows * lda + (ta ? l * lda + i : i * lda + l) + a_first)];
      };
      auto b_at = [&](int64_t l, int64_t j) {  // op(B)(l, j)
        return bh[static_cast<size_t>((tb ? j * ldb + l : l * ldb + j) + b_first)];
      };
      std::vector<double> want, tol;
      for (int64_t p = 0; p < batch; ++p)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0, magnitude = 0;
            for (int64_t l = 0; l < k; ++l) {
              sum += a_at(p, i, l) * b_at(l, j);
              magnitude += std::fabs(a_at(p, i, l) * b_at(l, j));
            }
            want.push_back(sum);
            tol.push_back((8 * std::sqrt(double(k)) + 4) * kU * magnitude);
          }
      Tensor c = Tensor::empty({batch, m, n}, DType::f32, kGpu);
      const Tensor a_window = gpu(a).slice(-1, a_first, a_first + (ta ? m : k));
      const Tensor b_window = gpu(b).slice(-1, b_first, b_first + (tb ? k : n));
      cuda::gemm(c, MatrixBatch{a_window, ta, lda, a_rows * lda}, MatrixBatch{b_window, tb, ldb, 0}, batch, m, n, k,
                 1.0, 0.0, MatmulPrecision::fp32);
      check_within(c, Tensor::from_vector(want, {batch, m, n}), tol, detail::cat("ta=", ta, " tb=", tb));
    }
  }
}

TEST_CASE("cuda: TF32 products are within the TF32 bound and actually use TF32", "[cuda]") {
  // TF32 rounds each input to 10 mantissa bits: relative error at most 2^-11
  // (round to nearest) or 2^-10 (truncation), so each product is off by at
  // most 2^-9 of |a||b| and the sum by 2^-9 sum|a||b| in the worst case, plus
  // the FP32 accumulation bound. A missing term (~1/k of sum|a||b| = 1/256)
  // is still twice that bound.
  const int64_t m = 64, k = 256, n = 48;
  Tensor a = rand_f32({m, k}, 700), b = rand_f32({k, n}, 701);
  const Tensor fp32 = matmul(gpu(a), gpu(b), false, false, 1.0, MatmulPrecision::fp32);
  const Tensor tf32 = matmul(gpu(a), gpu(b), false, false, 1.0, MatmulPrecision::tf32);
  Tensor exact = matmul(a.to(DType::f64), b.to(DType::f64));
  std::vector<double> tol = magnitudes(a, b, false, false).to_doubles();
  for (double& t : tol) t *= 0x1p-9 + (8 * std::sqrt(double(k)) + 4) * kU;
  check_within(tf32, exact, tol, "TF32 product");
  // Inputs with full 24-bit mantissas: rounding them to TF32 must show.
  CHECK_FALSE(bit_identical(tf32, fp32));
  check_product(matmul(gpu(a), gpu(b)), a, b, false, false, "the default (FP32) after a TF32 product");
}

// ---- softmax -------------------------------------------------------------------------------

TEST_CASE("cuda: softmax and log-softmax, with and without a mask, match the CPU", "[cuda]") {
  // v - max is computed identically on both devices. Per row of n, the sum
  // of exponentials is within sum_bound(n) (relative) on each device, so
  // within pair_bound(n) of each other, plus
  // the CUDA side's roundings (expf, 2 ulp = 4u; for rows longer than a
  // warp's 1024, the online rescaling's multiply per level of the 10-level
  // reduction tree and per running-max update): softmax rtol pair_bound(n) + 64u.
  // log-softmax = (v - max) - log(sum): absolute error the sum's relative
  // error, plus logf's ulp of log(sum) <= 11 and the final rounding of |y| <= 27:
  // atol pair_bound(n) + 128u, rtol 1e-6.
  const double log_margin = 128 * kU;
  // (A warp's row in 4, 8, 16 or 32 registers a lane: n <= 128, 256, 512, 1024; a block beyond.)
  const Shape shapes[] = {{1, 1},   {3, 17},  {5, 1000},  {2, 3, 128}, {3, 129},
                          {4, 512}, {7, 1025}, {2, 4097}, {4, 30000}};
  uint64_t seed = 800;
  for (const Shape& shape : shapes) {
    const int64_t n = shape.back();
    Tensor x = rand_f32(shape, ++seed, -8, 8), xg = gpu(x);
    const std::string what = "softmax " + shape_str(shape);
    check_close(softmax(xg), softmax(x), pair_bound(n) + 64 * kU, 0, what);
    check_close(log_softmax(xg), log_softmax(x), 1e-6, pair_bound(n) + log_margin, "log-" + what);
  }
  // A padding mask [B, 1, 1, L] broadcast over heads and queries, -inf where
  // forbidden, including a batch whose every key is masked (rows of 0, or -inf).
  const int64_t B = 3, H = 2, L = 37;
  Tensor scores = rand_f32({B, H, L, L}, ++seed, -4, 4);
  std::vector<float> mask_values(B * L, 0.0f);
  for (int64_t j = 30; j < L; ++j) mask_values[0 * L + j] = -INFINITY;   // batch 0: last 7 keys padded
  for (int64_t j = 0; j < L; ++j) mask_values[2 * L + j] = -INFINITY;    // batch 2: everything masked
  for (int64_t j = 0; j < L; j += 5) mask_values[1 * L + j] = -10000.0f;  // batch 1: a large negative
  Tensor mask = Tensor::from_vector(mask_values, {B, 1, 1, L});
  check_close(softmax(gpu(scores), gpu(mask)), softmax(scores, mask), pair_bound(L) + 64 * kU, 0, "masked softmax");
  check_close(log_softmax(gpu(scores), gpu(mask)), log_softmax(scores, mask), 1e-6, pair_bound(L) + log_margin,
              "masked log-softmax");
  // A mask that is a strided view of its own storage (every other column).
  Tensor wide = rand_f32({5, 2 * 1000}, ++seed, -2, 0);
  Tensor x = rand_f32({5, 1000}, ++seed);
  check_close(softmax(gpu(x), gpu(wide).slice(1, 0, 2000, 2)), softmax(x, wide.slice(1, 0, 2000, 2)),
              pair_bound(1000) + 64 * kU, 0, "strided mask");
}

TEST_CASE("cuda: softmax and log-softmax backward match the CPU", "[cuda]") {
  // softmax:     gx = y (gy - dot), dot = sum gy y: the two devices' dots
  //              differ by at most pair_bound(n) sum|gy y|, so gx by y times
  //              that, plus a few roundings: 4u (|gx| + |gy| + y |dot|).
  // log-softmax: gx = gy - exp(y) s, s = sum gy: exp(y) pair_bound(n) sum|gy|
  //              plus 4u (|gx| + |gy| + exp(y) |s|).
  // (A warp's row in 4, 8, 16 or 32 registers a lane; a block beyond 1024.)
  const Shape shapes[] = {{1, 1}, {3, 17}, {4, 200}, {3, 300}, {5, 1000}, {7, 1025}, {2, 4097}};
  uint64_t seed = 900;
  for (const Shape& shape : shapes) {
    const int64_t n = shape.back(), rows = shape_numel(shape) / n;
    Tensor x = rand_f32(shape, ++seed, -3, 3), gy = rand_f32(shape, ++seed);
    for (bool log : {false, true}) {
      Tensor y = log ? log_softmax(x) : softmax(x);
      Tensor expected = log ? log_softmax_backward(y, gy) : softmax_backward(y, gy);
      Tensor got = log ? log_softmax_backward(gpu(y), gpu(gy)) : softmax_backward(gpu(y), gpu(gy));
      std::vector<double> yv = y.to_doubles(), gv = gy.to_doubles(), ev = expected.to_doubles();
      std::vector<double> tol(yv.size());
      for (int64_t r = 0; r < rows; ++r) {
        double magnitude = 0, s = 0;
        for (int64_t j = 0; j < n; ++j) {
          const double term = log ? gv[r * n + j] : gv[r * n + j] * yv[r * n + j];
          magnitude += std::fabs(term);
          s += term;
        }
        for (int64_t j = 0; j < n; ++j) {
          const size_t i = static_cast<size_t>(r * n + j);
          const double p = log ? std::exp(yv[i]) : yv[i];
          tol[i] = p * pair_bound(n) * magnitude + 4 * kU * (std::fabs(ev[i]) + std::fabs(gv[i]) + p * std::fabs(s)) + 1e-30;
        }
      }
      check_within(got, expected, tol, (log ? "log-softmax backward " : "softmax backward ") + shape_str(shape));
    }
  }
}

// ---- layernorm -------------------------------------------------------------------------------

TEST_CASE("cuda: layernorm forward and backward match the CPU", "[cuda]") {
  // Both devices compute mean and variance in double and round once: mean and
  // rstd within one f32 rounding (rtol 2u, atol 1e-9 for a mean near 0).
  // y = (x - mean) rstd gamma + beta: a few roundings of terms of size
  // |xhat gamma| + |beta| <= 6 here (x in [1, 3]), plus one-ulp differences
  // of mean (2u * 3, times rstd gamma <= 5) and of rstd (2u |xhat gamma|):
  // atol 128u, rtol 8u.
  // gx = rstd (gy gamma - a - xhat c) with a, c row means in double: terms of
  // size <= rstd (|gy gamma| + |a| + |xhat c|) <= 8 here: atol 128u, rtol 8u.
  // ggamma, gbeta: sums over rows in double of f32 products that are the same
  // on both devices: rtol 2u, atol 1e-9.
  const Shape shapes[] = {{1, 1}, {3, 17}, {33, 768}, {2, 3, 100}, {5, 1025}, {2, 4097}, {1000, 64}};
  uint64_t seed = 1000;
  for (const Shape& shape : shapes) {
    const int64_t n = shape.back();
    const std::string what = "layernorm " + shape_str(shape);
    Tensor x = rand_f32(shape, ++seed, 1, 3), gamma = rand_f32({n}, ++seed, 0.5, 1.5),
           beta = rand_f32({n}, ++seed, -1, 1), gy = rand_f32(shape, ++seed);
    LayerNormResult c = layernorm(x, gamma, beta, 1e-5);
    LayerNormResult g = layernorm(gpu(x), gpu(gamma), gpu(beta), 1e-5);
    check_close(g.mean, c.mean, 2 * kU, 1e-9, what + " mean");
    check_close(g.rstd, c.rstd, 2 * kU, 1e-9, what + " rstd");
    check_close(g.y, c.y, 8 * kU, 128 * kU, what + " y");
    // The backward from the same (CPU) statistics on both devices.
    LayerNormGrads cg = layernorm_backward(gy, x, c.mean, c.rstd, gamma);
    LayerNormGrads gg = layernorm_backward(gpu(gy), gpu(x), gpu(c.mean), gpu(c.rstd), gpu(gamma));
    check_close(gg.gx, cg.gx, 8 * kU, 128 * kU, what + " gx");
    check_close(gg.ggamma, cg.ggamma, 2 * kU, 1e-9, what + " ggamma");
    check_close(gg.gbeta, cg.gbeta, 2 * kU, 1e-9, what + " gbeta");
  }
}

// ---- cross-entropy ---------------------------------------------------------------------------

TEST_CASE("cuda: cross-entropy forward and backward match the CPU", "[cuda]") {
  // lse = max + log(sum of c exponentials): the two devices' lse differ by
  // the sums' relative difference (pair_bound(c) plus the online rescaling's
  // 64u, as for softmax) plus logf's and the final addition's ulps of
  // |lse| <= 17: pair_bound(c) + 128u.
  // The loss (lse - z_t, averaged) inherits it. The gradient s exp(z - lse)
  // is then within (that + 8u) relative, and the target's entry (p - s)
  // within that times s absolute.
  struct Case {
    int64_t rows, c;
  };
  const Case cases[] = {{1, 3}, {17, 1000}, {300, 3}, {64, 4097}, {8, 30522}};
  uint64_t seed = 1100;
  for (const Case& cs : cases) {
    const std::string what = detail::cat("cross-entropy rows=", cs.rows, " classes=", cs.c);
    Tensor logits = rand_f32({cs.rows, cs.c}, ++seed, -6, 6);
    std::vector<int64_t> t = random_ints(cs.rows, ++seed, 0, cs.c - 1);
    for (size_t i = 1; i < t.size(); i += 5) t[i] = -100;  // some rows ignored
    Tensor targets = i64_tensor(t, {cs.rows});
    CrossEntropyResult c = cross_entropy(logits, targets);
    CrossEntropyResult g = cross_entropy(gpu(logits), gpu(targets));
    const double lse_tol = pair_bound(cs.c) + 128 * kU;
    check_close(g.lse, c.lse, 0, lse_tol, what + " lse");
    check_identical(g.count, c.count, what + " count");
    check_close(g.loss, c.loss, 4 * kU, lse_tol, what + " loss");
    Tensor gy = Tensor::scalar(0.75);
    Tensor gc = cross_entropy_backward(gy, logits, c, targets);
    Tensor gg = cross_entropy_backward(gpu(gy), gpu(logits), g, gpu(targets));
    const double s = 0.75 / std::max(1.0, c.count.item());
    check_close(gg, gc, lse_tol + 8 * kU, (lse_tol + 8 * kU) * s, what + " gradient");
  }
  // Logits of more than two axes and every target ignored.
  Tensor logits = rand_f32({2, 3, 11}, ++seed);
  Tensor ignored = i64_tensor(std::vector<int64_t>(6, -100), {2, 3});
  CrossEntropyResult g = cross_entropy(gpu(logits), gpu(ignored));
  CHECK(g.loss.item() == 0);
  CHECK(g.count.item() == 0);
  check_identical(cross_entropy_backward(gpu(Tensor::scalar(1.0)), gpu(logits), g, gpu(ignored)),
                  Tensor::zeros({2, 3, 11}), "every row ignored: zero gradient");
  // The mean in the rows' launch (its last block), also with no rows at all.
  synchronize(kGpu);
  reset_device_counters();
  const CrossEntropyResult counted = cross_entropy(gpu(logits), gpu(i64_tensor({1, -100, 10, 0, 3, 3}, {2, 3})));
  CHECK(device_counters().kernel_launches == 1);
  CHECK(counted.count.item() == 5);
  const CrossEntropyResult none = cross_entropy(gpu(rand_f32({0, 7}, ++seed)), gpu(i64_tensor({}, {0})));
  CHECK(none.loss.item() == 0);
  CHECK(none.count.item() == 0);
}

#endif  // ORDO_HAS_CUDA
