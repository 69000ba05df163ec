// The autodiff engine itself: accumulation, needs-input-grad, no-grad
// scopes, graph freeing, deep graphs.
#include <algorithm>
#include <cmath>

#include "autograd/ops.h"
#include "tensor/kernel_calls.h"
#include "tests/helpers.h"

using namespace ordo;
using ordo::test::f64;
using ordo::test::require_close;

TEST_CASE("a Var used twice receives the sum of both paths", "[autograd]") {
  Var x(f64({1, 2, 3}, {3}), true);
  // y = sum(x * x + x): dy/dx = 2x + 1
  Var y = sum(add(mul(x, x), x));
  y.backward();
  require_close(x.grad(), {3, 5, 7}, 0, 0);
}

TEST_CASE("leaf gradients accumulate across backward calls until zero_grad", "[autograd]") {
  Var w(f64({2}, {1}), true, "w");
  for (int i = 0; i < 3; ++i) sum(affine(w, 5)).backward();
  require_close(w.grad(), {15}, 0, 0);
  w.zero_grad();
  CHECK_FALSE(w.grad().defined());
  sum(affine(w, 5)).backward();
  require_close(w.grad(), {5}, 0, 0);
}

// A scalar's seed (1) is kept and reused: no fill after the first backward.
// It must never be written: scalar leaves whose gradient is the seed itself
// (add's backward passes it on), accumulated in place by later backwards,
// leave the next seed a 1.
TEST_CASE("a scalar's backward reuses one seed, which accumulating gradients never write", "[autograd]") {
  Var a(f64({0.5}, {}), true), b(f64({-2}, {}), true);
  add(a, b).backward();  // makes the seed if no earlier test did
  for (int i = 0; i < 2; ++i) {
    KernelCallRecording recording;
    add(a, b).backward();
    for (const KernelCall& call : recording.calls()) CHECK(std::string(call.kernel) != "fill");
  }
  require_close(a.grad(), {3}, 0, 0);
  require_close(b.grad(), {3}, 0, 0);
  Var c(f64({4}, {}), true);
  affine(c, 7).backward();
  require_close(c.grad(), {7}, 0, 0);
}

TEST_CASE("inputs that do not require a gradient get none and cost none", "[autograd]") {
  Var a(f64({1, 2}, {2}), true), b(f64({3, 4}, {2}), false);
  int calls_for_b = 0;
  Var y = record_op("mul", mul(a.value(), b.value()), {a, b},
                    [&, av = a.value(), bv = b.value()](const Tensor& g, const std::vector<bool>& needs) {
                      if (needs[1]) ++calls_for_b;
                      return std::vector<Tensor>{mul(g, bv), needs[1] ? mul(g, av) : Tensor()};
                    });
  sum(y).backward();
  require_close(a.grad(), {3, 4}, 0, 0);
  CHECK_FALSE(b.grad().defined());
  CHECK(calls_for_b == 0);
}

TEST_CASE("no-grad scopes record nothing", "[autograd]") {
  Var x(f64({1}, {1}), true);
  {
    NoGradGuard guard;
    CHECK_FALSE(grad_enabled());
    Var y = exp(x);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.is_leaf());
  }
  CHECK(grad_enabled());
  CHECK(exp(x).requires_grad());
}

TEST_CASE("backward frees the graph unless asked to retain it", "[autograd]") {
  Var x(f64({0.5}, {1}), true);
  Var y = sum(exp(x));
  y.backward(Tensor(), true);
  y.backward();
  require_close(x.grad(), {2 * std::exp(0.5)}, 1e-15, 0);
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("already freed"));
}

TEST_CASE("non-leaf gradients are kept only with retain_grad", "[autograd]") {
  Var x(f64({1, 2}, {2}), true);
  Var h = affine(x, 3);
  Var kept = affine(x, 2);
  kept.retain_grad();
  sum(mul(h, kept)).backward();
  CHECK_FALSE(h.grad().defined());
  require_close(kept.grad(), {3, 6}, 0, 0);  // d(h*k)/dk = h = 3x
}

TEST_CASE("backward needs a seed for a non-scalar output", "[autograd][errors]") {
  Var x(f64({1, 2}, {2}), true);
  CHECK_THROWS_WITH(exp(x).backward(), Catch::Contains("seed"));
  CHECK_THROWS_WITH(Var(f64({1}, {1})).backward(), Catch::Contains("does not require a gradient"));
  CHECK_THROWS_WITH(exp(x).backward(f64({1, 2, 3}, {3})), Catch::Contains("seed"));
  CHECK_THROWS_WITH(Var(Tensor::arange(3), true), Catch::Contains("floating-point"));
}

TEST_CASE("a graph deeper than any recursion limit back-propagates", "[autograd]") {
  Var x(f64({1}, {1}), true);
  Var y = x;
  const int depth = 200000;
  for (int i = 0; i < depth; ++i) y = affine(y, 1.0, 1e-6);
  sum(y).backward();
  require_close(x.grad(), {1}, 0, 0);
  require_close(y.value(), {1 + depth * 1e-6}, 1e-9, 0);
}

TEST_CASE("slices that tile their input have their gradients written into one buffer: no zeros, no adds",
          "[autograd]") {
  // x [2, 3, 4], each part x[:, :, 2i:2i+2] as Q, K and V heads would take it.
  Var x(ordo::test::random_tensor({2, 3, 6}, 31, DType::f64), true);
  Var parts = reshape(affine(x, 2.0), {2, 3, 3, 1, 2});
  auto part = [&](int64_t i) { return permute(select(parts, 2, i), {0, 2, 1, 3}); };
  Var y = sum(add(mul(part(0), part(1)), part(2)));
  sum(Var(f64({1}, {1}), true)).backward();  // the f64 scalar seed made, kept from then on
  std::vector<std::string> kernels;
  {
    KernelCallRecording recording;
    y.backward();
    for (const KernelCall& k : recording.calls()) kernels.push_back(k.kernel);
  }
  // dy/dx = 2 (2 x_k), 2 (2 x_q), 2 in the q, k, v columns: worked by hand from y = sum(q k + v), q = 2 x_q, ...
  const std::vector<double> xv = x.value().to_doubles(), g = x.grad().to_doubles();
  for (int64_t r = 0; r < 6; ++r) {
    for (int64_t c = 0; c < 2; ++c) {
      CHECK(g[r * 6 + c] == Approx(4 * xv[r * 6 + 2 + c]).epsilon(1e-15));
      CHECK(g[r * 6 + 2 + c] == Approx(4 * xv[r * 6 + c]).epsilon(1e-15));
      CHECK(g[r * 6 + 4 + c] == 2.0);
    }
  }
  CHECK(std::count(kernels.begin(), kernels.end(), std::string("fill")) == 0);  // no zeros (and the seed kept)
  CHECK(std::count(kernels.begin(), kernels.end(), std::string("copy")) == 3);  // each part into its columns
}

// A backward that writes its inputs' gradients into one block, each where its
// slice lies (the fused attention's q, k and v on CUDA): the engine takes the
// block whole. Placed anywhere else, the parts are copied into their regions.
// (The node is recorded under the op that does this, "attention".)
TEST_CASE("slices whose gradients already lie in their regions of one block are taken whole: no copy",
          "[autograd]") {
  for (const int64_t shift : {0, 1}) {
    INFO("gradient n placed at part (n + " << shift << ") % 3");
    Var x(ordo::test::random_tensor({2, 3, 6}, 31, DType::f64), true);
    Var parts = reshape(affine(x, 2.0), {2, 3, 3, 1, 2});
    std::vector<Var> heads;
    for (int64_t i = 0; i < 3; ++i) heads.push_back(permute(select(parts, 2, i), {0, 2, 1, 3}));
    const Tensor block = Tensor::arange(36, DType::f64).reshape({2, 3, 3, 1, 2});
    Var out = record_op("attention", Tensor::zeros({1}, DType::f64), heads,
                        [block, shift](const Tensor&, const std::vector<bool>&) {
                          std::vector<Tensor> g;
                          for (int64_t n = 0; n < 3; ++n) g.push_back(block.select(2, (n + shift) % 3).permute({0, 2, 1, 3}));
                          return g;
                        });
    parts.retain_grad();
    std::vector<std::string> kernels;
    {
      KernelCallRecording recording;
      out.backward(Tensor::ones({1}, DType::f64));
      for (const KernelCall& k : recording.calls()) kernels.push_back(k.kernel);
    }
    // parts' gradient at (r, n, c) = block at (r, (n + 3 - shift) % 3, c): which part received which view.
    const std::vector<double> gp = parts.grad().to_doubles(), gx = x.grad().to_doubles();
    for (int64_t r = 0; r < 6; ++r)
      for (int64_t n = 0; n < 3; ++n)
        for (int64_t c = 0; c < 2; ++c) {
          const double expected = static_cast<double>(r * 6 + (n + shift) % 3 * 2 + c);
          CHECK(gp[r * 6 + n * 2 + c] == expected);
          CHECK(gx[r * 6 + n * 2 + c] == 2 * expected);
        }
    CHECK(parts.grad().shares_storage_with(block) == (shift == 0));
    CHECK(std::count(kernels.begin(), kernels.end(), std::string("copy")) == (shift == 0 ? 0 : 3));
  }
}

TEST_CASE("a product adds its input's gradient onto the one already gathered: no separate add", "[autograd]") {
  // h = 2x feeds r = h * c2 (whose backward runs first) and y = h [W1; W2]^T;
  // out = sum((y + r) * c): dh = c * c2 + c [W1; W2], dx = 2 dh, worked by hand below.
  Var x(ordo::test::random_tensor({3, 4}, 41, DType::f64), true);
  const Tensor w1 = ordo::test::random_tensor({2, 4}, 42, DType::f64), w2 = ordo::test::random_tensor({2, 4}, 43, DType::f64);
  const Tensor c = ordo::test::random_tensor({3, 4}, 44, DType::f64), c2 = ordo::test::random_tensor({3, 4}, 45, DType::f64);
  Var h = affine(x, 2.0);
  Var out = sum(mul(add(linear_stacked(h, {Var(w1), Var(w2)}, {}), mul(h, Var(c2))), Var(c)));
  std::vector<std::string> kernels;
  {
    KernelCallRecording recording;
    out.backward();
    for (const KernelCall& k : recording.calls()) kernels.push_back(k.kernel);
  }
  const std::vector<double> cv = c.to_doubles(), c2v = c2.to_doubles(), g = x.grad().to_doubles();
  std::vector<double> w = w1.to_doubles();
  for (double v : w2.to_doubles()) w.push_back(v);  // [W1; W2], 4 x 4
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t k = 0; k < 4; ++k) {
      double dh = cv[r * 4 + k] * c2v[r * 4 + k];
      for (int64_t j = 0; j < 4; ++j) dh += cv[r * 4 + j] * w[j * 4 + k];
      CHECK(g[r * 4 + k] == Approx(2 * dh).epsilon(1e-14));
    }
  }
  // The two products' elementwise backwards (by c, by c2), and no add of h's two terms.
  CHECK(std::count(kernels.begin(), kernels.end(), std::string("binary")) == 2);
  CHECK(std::count(kernels.begin(), kernels.end(), std::string("gemm")) == 1);
}

// Attention's q, k and v as slices of one block of heads (split_heads'): the
// products' backwards write each slice's gradient into its place in the
// block's gradient, so nothing is gathered by copies. Expected values from
// naive loops of O = (Q K^T) V, out = sum(C * O): dV = S^T C, dS = C V^T,
// dQ = dS K, dK = dS^T Q, and the block's gradient is 2 (dQ; dK; dV).
TEST_CASE("products write the gradients of slices of one block into that block: no copies", "[autograd]") {
  const int64_t B = 2, L = 4, D = 3;
  Var x(ordo::test::random_tensor({3, B, L, D}, 51, DType::f64), true);
  const Tensor c = ordo::test::random_tensor({B, L, D}, 52, DType::f64);
  Var heads = affine(x, 2.0);  // not a leaf: its gradient is gathered, then passed on
  Var q = select(heads, 0, 0), k = select(heads, 0, 1), v = select(heads, 0, 2);
  Var out = sum(mul(matmul(matmul(q, k, false, true), v), Var(c)));
  std::vector<std::string> kernels;
  {
    KernelCallRecording recording;
    out.backward();
    for (const KernelCall& call : recording.calls()) kernels.push_back(call.kernel);
  }
  const std::vector<double> h = heads.value().to_doubles(), cv = c.to_doubles(), g = x.grad().to_doubles();
  auto at = [&](int p, int64_t b, int64_t i, int64_t d) { return ((p * B + b) * L + i) * D + d; };
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> s(L * L, 0.0), ds(L * L, 0.0);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j)
        for (int64_t d = 0; d < D; ++d) {
          s[i * L + j] += h[at(0, b, i, d)] * h[at(1, b, j, d)];
          ds[i * L + j] += cv[(b * L + i) * D + d] * h[at(2, b, j, d)];
        }
    for (int64_t i = 0; i < L; ++i)
      for (int64_t d = 0; d < D; ++d) {
        double dq = 0, dk = 0, dv = 0;
        for (int64_t j = 0; j < L; ++j) {
          dq += ds[i * L + j] * h[at(1, b, j, d)];
          dk += ds[j * L + i] * h[at(0, b, j, d)];
          dv += s[j * L + i] * cv[(b * L + j) * D + d];
        }
        CHECK(g[at(0, b, i, d)] == Approx(2 * dq).epsilon(1e-13));
        CHECK(g[at(1, b, i, d)] == Approx(2 * dk).epsilon(1e-13));
        CHECK(g[at(2, b, i, d)] == Approx(2 * dv).epsilon(1e-13));
      }
  }
  CHECK(std::count(kernels.begin(), kernels.end(), std::string("gemm")) == 4);  // dS, dV; dQ, dK
  CHECK(std::count(kernels.begin(), kernels.end(), std::string("copy")) == 0);
}

// A backward that returns several inputs' gradients as parts of one tensor
// (linear_stacked's weights and biases) gives each leaf its part as it lies:
// no copy. Each leaf then owns its elements alone — a second backward adds
// into them in place without reaching the others' — and a gradient given
// whole to two leaves (add's) is never shared by them.
TEST_CASE("leaves own their parts of one gradient block: accumulation stays apart", "[autograd]") {
  Var x(ordo::test::random_tensor({3, 4}, 61, DType::f64));
  auto leaf = [](const Shape& shape, uint64_t seed) { return Var(ordo::test::random_tensor(shape, seed, DType::f64), true); };
  Var w1 = leaf({2, 4}, 62), w2 = leaf({2, 4}, 63), b1 = leaf({2}, 64), b2 = leaf({2}, 65);
  const Tensor c = ordo::test::random_tensor({3, 4}, 66, DType::f64);
  // out = sum(C * [x W1^T + b1, x W2^T + b2]): dW = C^T x (its columns), db = C summed over rows.
  const std::vector<double> xv = x.value().to_doubles(), cv = c.to_doubles();
  for (int round = 1; round <= 2; ++round) {
    Var out = sum(mul(linear_stacked(x, {w1, w2}, {b1, b2}), Var(c)));
    std::vector<std::string> kernels;
    {
      KernelCallRecording recording;
      out.backward();
      for (const KernelCall& call : recording.calls()) kernels.push_back(call.kernel);
    }
    if (round == 1) {
      CHECK(std::count(kernels.begin(), kernels.end(), std::string("copy")) == 0);
      CHECK(w1.grad().shares_storage_with(w2.grad()));
      CHECK(b1.grad().shares_storage_with(b2.grad()));
    }
    const Var* weights[] = {&w1, &w2};
    const Var* biases[] = {&b1, &b2};
    for (int part = 0; part < 2; ++part) {
      const std::vector<double> gw = weights[part]->grad().to_doubles(), gb = biases[part]->grad().to_doubles();
      for (int64_t o = 0; o < 2; ++o) {
        const int64_t column = part * 2 + o;
        double db = 0;
        for (int64_t r = 0; r < 3; ++r) db += cv[r * 4 + column];
        CHECK(gb[o] == Approx(round * db).epsilon(1e-14));
        for (int64_t i = 0; i < 4; ++i) {
          double dw = 0;
          for (int64_t r = 0; r < 3; ++r) dw += cv[r * 4 + column] * xv[r * 4 + i];
          CHECK(gw[o * 4 + i] == Approx(round * dw).epsilon(1e-14));
        }
      }
    }
  }
  Var a(f64({1, 2}, {2}), true), b(f64({3, 4}, {2}), true);
  for (int round = 1; round <= 2; ++round) sum(add(a, b)).backward();
  CHECK_FALSE(a.grad().shares_storage_with(b.grad()));
  require_close(a.grad(), {2, 2}, 0, 0);
  require_close(b.grad(), {2, 2}, 0, 0);
}

// Tied word embeddings: the table is looked up first and multiplies the
// output last, so its decoder term arrives first and the lookup's backward
// adds its rows onto it (take_pending_gradient) — no add over the table.
// Worked from logits = h T^T, h = 2 T[ids], out = sum(C * logits):
// dT = C^T h (the decoder) + the rows of 2 C T scattered to ids (the lookup).
TEST_CASE("a lookup adds its table's gradient onto the decoder's term of tied embeddings: no separate add",
          "[autograd]") {
  const int64_t V = 4, D = 3, K = 5;
  Var table(ordo::test::random_tensor({V, D}, 71, DType::f64), true);
  const std::vector<int64_t> ids = {2, 0, 2, 3, 2};
  const Tensor c = ordo::test::random_tensor({K, V}, 72, DType::f64);
  Var h = affine(embedding(table, Tensor::from_vector(ids, {K})), 2.0);
  Var out = sum(mul(matmul(h, table, false, true), Var(c)));
  std::vector<std::string> kernels;
  {
    KernelCallRecording recording;
    out.backward();
    for (const KernelCall& call : recording.calls()) kernels.push_back(call.kernel);
  }
  const std::vector<double> t = table.value().to_doubles(), cv = c.to_doubles(), g = table.grad().to_doubles();
  for (int64_t r = 0; r < V; ++r)
    for (int64_t d = 0; d < D; ++d) {
      double expected = 0;
      for (int64_t j = 0; j < K; ++j) {
        expected += cv[j * V + r] * 2 * t[ids[j] * D + d];                          // C^T h
        if (ids[j] == r)
          for (int64_t v = 0; v < V; ++v) expected += 2 * cv[j * V + v] * t[v * D + d];  // 2 (C T)[j]
      }
      CHECK(g[r * D + d] == Approx(expected).epsilon(1e-13));
    }
  CHECK(std::count(kernels.begin(), kernels.end(), std::string("index_add")) == 1);
  // The one binary kernel is mul's backward (gy times c): no add of the table's two terms.
  CHECK(std::count(kernels.begin(), kernels.end(), std::string("binary")) == 1);
}

// A BERT's input embeddings as the model sums them (word + token type +
// position, the position ids shared by the batch, the word table tied to a
// decoder and with a padding row) by the lookups and adds, and by
// embedding_sum: one kernel forward instead of three lookups and two adds,
// one backward for the three tables instead of three index_adds, and every
// value and gradient the same bits (f32) as the lookups with the position ids
// repeated for each sequence (the order embedding_sum_backward states); the
// word table's lookup still adds onto the decoder's term.
TEST_CASE("embedding_sum gives the lookups' and adds' values and gradients bit for bit, in one kernel each way",
          "[autograd]") {
  const int64_t B = 3, L = 5, D = 4, V = 7;
  auto rnd = [](const Shape& shape, uint64_t seed) { return ordo::test::random_tensor(shape, seed, DType::f32); };
  const Tensor words = rnd({V, D}, 80), types = rnd({2, D}, 81), positions = rnd({L + 2, D}, 82), c = rnd({B, L, V}, 83);
  const Tensor ids = Tensor::from_vector(std::vector<int64_t>{1, 4, 4, 0, 6, 2, 4, 1, 1, 0, 3, 3, 4, 0, 5}, {B, L});
  const Tensor type_ids = Tensor::from_vector(std::vector<int64_t>{0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 0, 1, 0, 1, 1}, {B, L});
  const Tensor position_ids = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3, 4}, {1, L});
  const Tensor repeated_position_ids = position_ids.expand({B, L}).contiguous();
  struct Run {
    std::vector<Tensor> values;
    int64_t forward_kernels = 0, index_adds = 0, sum_backwards = 0;
  };
  auto run = [&](bool one_pass) {
    Var w(words, true), t(types, true), p(positions, true);
    Run r;
    KernelCallRecording recording;
    const Var x = one_pass ? embedding_sum({w, t, p}, {ids, type_ids, position_ids}, {0, -1, -1})
                           : add(add(embedding(w, ids, 0), embedding(t, type_ids)), embedding(p, repeated_position_ids));
    r.forward_kernels = static_cast<int64_t>(recording.calls().size());
    Var out = sum(mul(matmul(tanh(x), w, false, true), Var(c)));  // the decoder reads the word table too
    out.backward();
    for (const KernelCall& call : recording.calls()) {
      r.index_adds += std::string(call.kernel) == "index_add";
      r.sum_backwards += std::string(call.kernel) == "embedding_sum_backward";
    }
    r.values = {x.value(), w.grad(), t.grad(), p.grad()};
    return r;
  };
  const Run separate = run(false), one_pass = run(true);
  CHECK(separate.forward_kernels == 5);
  CHECK(one_pass.forward_kernels == 1);
  CHECK(one_pass.index_adds == 0);
  CHECK(one_pass.sum_backwards == 1);
  CHECK(separate.index_adds == 3);
  for (size_t i = 0; i < separate.values.size(); ++i) {
    INFO("value " << i << " (the sum, then the word, type and position tables' gradients)");
    CHECK(ordo::test::bit_identical(one_pass.values[i], separate.values[i]));
  }
  const std::vector<double> padding = one_pass.values[1].slice(0, 0, 1).to_doubles();
  CHECK_FALSE(std::all_of(padding.begin(), padding.end(), [](double g) { return g == 0; }));  // the decoder's term
}

// The MLM decoder's product and loss as one node against the product, the
// bias's add and cross_entropy, under f32 and bf16 products: the same loss
// and logits bits, the same gradients of x and the weight (the logits'
// gradient rounded once, as the product's backward rounds it), the bias's
// within its column sums' bound (another order of the same f32 terms). A
// forward of one product and one loss kernel where apart there are two
// kernels (the bias's add); one kernel for the logits' gradient and the
// bias's where apart there are three (the gradient, its cast, the sum).
TEST_CASE("linear_cross_entropy is the product, its bias and cross_entropy: the same loss and gradients, fewer kernels",
          "[autograd]") {
  auto rnd = [](const Shape& shape, uint64_t seed) { return ordo::test::random_tensor(shape, seed, DType::f32); };
  const Tensor x = rnd({6, 8}, 90), w = rnd({11, 8}, 91), b = rnd({11}, 92);
  const Tensor targets = Tensor::from_vector(std::vector<int64_t>{3, -100, 10, 0, 3, 7}, {6});
  for (const MatmulPrecision precision : {MatmulPrecision::fp32, MatmulPrecision::bf16}) {
    INFO((precision == MatmulPrecision::bf16 ? "bf16 products" : "f32 products"));
    struct Run {
      double loss;
      Tensor logits, gx, gw, gb;
      int64_t forward_kernels = 0, forward_copies = 0, backward_kernels = 0;
    };
    // Kernels besides the products, their operands' casts (copies) and fills.
    auto not_products = [](const KernelCallRecording& recording) {
      int64_t n = 0;
      for (const KernelCall& call : recording.calls()) {
        const std::string kernel = call.kernel;
        n += kernel != "gemm" && kernel != "fill" && kernel != "copy";
      }
      return n;
    };
    auto copies = [](const KernelCallRecording& recording) {
      int64_t n = 0;
      for (const KernelCall& call : recording.calls()) n += std::string(call.kernel) == "copy";
      return n;
    };
    auto run = [&](bool fused) {
      Var xv(x, true), wv(w, true), bv(b, true);
      Run r;
      Var loss;
      Tensor product;  // the fused node's, before its bias
      {
        KernelCallRecording recording;
        if (fused) {
          loss = linear_cross_entropy(xv, wv, bv, targets, -100, &product, precision);
        } else {
          const Var z = add(matmul(xv, wv, false, true, 1.0, precision), bv);
          r.logits = z.value();
          loss = cross_entropy(z, targets);
        }
        r.forward_kernels = not_products(recording);
        r.forward_copies = copies(recording);
      }
      if (fused) r.logits = add(product, b);
      {
        KernelCallRecording recording;
        loss.backward();
        r.backward_kernels = not_products(recording) + copies(recording);
      }
      r.loss = loss.value().item();
      r.gx = xv.grad(), r.gw = wv.grad(), r.gb = bv.grad();
      return r;
    };
    const Run apart = run(false), one = run(true);
    CHECK(one.loss == apart.loss);
    CHECK(ordo::test::bit_identical(one.logits, apart.logits));
    CHECK(ordo::test::bit_identical(one.gx, apart.gx));
    CHECK(ordo::test::bit_identical(one.gw, apart.gw));
    const std::vector<double> got = one.gb.to_doubles(), want = apart.gb.to_doubles();
    // 2 rows u sum_r |g_rj| for two orders of 6 terms, |g| <= 1/5 (5 rows count).
    const double bound = 2 * 6 * 0x1p-24 * (6 * 0.2);
    for (size_t j = 0; j < got.size(); ++j) CHECK(std::fabs(got[j] - want[j]) <= bound);
    CHECK(one.forward_kernels == 1);
    CHECK(apart.forward_kernels == 2);
    CHECK(one.forward_copies == apart.forward_copies);  // the operands' casts under bf16; no bias broadcast
    CHECK(one.backward_kernels == 1);
    CHECK(apart.backward_kernels == (precision == MatmulPrecision::bf16 ? 3 : 2));
  }
}

namespace {
// A slice's gradient in the whole, by hand: element (o, i, r) of [outer, n,
// inner] is g's (o, (i - start) / step, r) where i is one of the slice's
// indices, else 0.
std::vector<double> padded_by_hand(const std::vector<double>& g, int64_t outer, int64_t n, int64_t inner,
                                   int64_t start, int64_t count, int64_t step) {
  std::vector<double> out(static_cast<size_t>(outer * n * inner), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j)
      for (int64_t r = 0; r < inner; ++r)
        out[static_cast<size_t>((o * n + start + j * step) * inner + r)] = g[static_cast<size_t>((o * count + j) * inner + r)];
  return out;
}
}  // namespace

TEST_CASE("a slice's gradient is padded into the whole in one call, any axis, start and step", "[autograd]") {
  struct Case {
    int axis;
    int64_t start, end, step;
  };
  const Shape whole{3, 7, 4};
  for (const Case c : {Case{0, 1, 3, 1}, Case{1, 2, 6, 1}, Case{1, -5, 7, 2}, Case{2, 0, 4, 3}, Case{1, 3, 3, 1}}) {
    INFO("axis " << c.axis << " [" << c.start << ", " << c.end << ") step " << c.step);
    for (const DType dtype : {DType::f64, DType::f32, DType::bf16}) {
      INFO(dtype_name(dtype));
      Var x(test::random_tensor(whole, 5, DType::f64).to(dtype), true);
      const Var y = slice(x, c.axis, c.start, c.end, c.step);
      const Tensor g = test::random_tensor(y.shape(), 6, DType::f64).to(dtype);
      std::vector<KernelCall> calls;
      {
        KernelCallRecording recording;
        y.backward(g);
        calls = recording.calls();
      }
      REQUIRE(calls.size() == 1);  // not a fill and a copy
      CHECK(std::string(calls[0].kernel) == "pad_slice");
      const int d = c.axis;
      int64_t outer = 1, inner = 1;
      for (int a = 0; a < d; ++a) outer *= whole[a];
      for (int a = d + 1; a < 3; ++a) inner *= whole[a];
      const int64_t start = c.start < 0 ? c.start + whole[d] : c.start;
      CHECK(x.grad().to_doubles() ==
            padded_by_hand(g.to_doubles(), outer, whole[d], inner, start, y.size(d), c.step));
    }
  }
  CHECK_THROWS_WITH(pad_slice(Tensor::zeros({2, 3}), {2, 4}, 1, 2, 1), Catch::Contains("do not fit"));
  CHECK_THROWS_WITH(pad_slice(Tensor::zeros({2, 3}), {3, 4}, 1, 0, 1), Catch::Contains("is no slice of"));
}

// A feed-forward block under bf16 products: the up-projection's output is
// written in bf16 (linear's output_as_operand) and bias_activation reads it
// so; the down-projection then writes the activation's gradient in bf16
// (bias_activation's node takes_bf16_gradient), as a bf16 autocast keeps
// both. Against the same block with those two in f32: each extra rounding is
// at most half a bf16 ulp (2^-9 relative) of an element, and the products
// that follow average them, so every output and gradient is within 2^-7 of
// the f32 one, norm-wise (a 4x margin over two such roundings); and the
// roundings show (the bits differ).
TEST_CASE("an FFN under bf16 products keeps its pre-activation and that gradient in bf16, within their rounding",
          "[autograd]") {
  const Tensor x = test::random_tensor({4, 6, 16}, 1, DType::f32), gy = test::random_tensor({4, 6, 16}, 2, DType::f32);
  const Tensor w1 = test::random_tensor({32, 16}, 3, DType::f32, -0.5, 0.5), b1 = test::random_tensor({32}, 4, DType::f32);
  const Tensor w2 = test::random_tensor({16, 32}, 5, DType::f32, -0.5, 0.5);
  const MatmulPrecision bf16 = MatmulPrecision::bf16;
  // readers: 1, or 2 (the activation read by the down-projection twice, its two
  // bf16 gradients summed in f32 and read by bias_activation's backward so).
  auto run = [&](bool rounded, int readers) {
    Var xv(x, true), w1v(w1, true), b1v(b1, true), w2v(w2, true);
    const Var pre = linear(xv, w1v, Var(), /*output_as_operand=*/rounded, bf16);
    const Var act = bias_activation(pre, b1v, UnaryOp::gelu, /*as_operand=*/true, /*x_is_product=*/true, bf16);
    pre.retain_grad();
    act.retain_grad();
    const Var out = readers == 1 ? linear(act, w2v, Var(), false, bf16)
                                 : add(linear(act, w2v, Var(), false, bf16), linear(act, w2v, Var(), false, bf16));
    out.backward(gy);
    const DType kept = rounded ? DType::bf16 : DType::f32;
    CHECK(pre.dtype() == kept);
    CHECK(pre.grad().dtype() == DType::bf16);  // a product's operand either way
    CHECK(act.grad().dtype() == (readers == 1 ? kept : DType::f32));
    return std::vector<Tensor>{out.value(), xv.grad(), w1v.grad(), b1v.grad(), w2v.grad()};
  };
  for (const int readers : {1, 2}) {
    INFO(readers << " readers");
    const std::vector<Tensor> got = run(true, readers), want = run(false, readers);
    const char* names[] = {"out", "gx", "gw1", "gb1", "gw2"};
    for (size_t i = 0; i < got.size(); ++i) {
      INFO(names[i]);
      const std::vector<double> g = got[i].to_doubles(), w = want[i].to_doubles();
      double diff = 0, norm = 0;
      for (size_t e = 0; e < g.size(); ++e) diff += (g[e] - w[e]) * (g[e] - w[e]), norm += w[e] * w[e];
      CHECK(std::sqrt(diff) <= 0x1p-7 * std::sqrt(norm));
      CHECK(diff > 0);
    }
  }
}
