// The fused pieces' bf16 operands and outputs: the gradients a fused
// backward writes as bf16 for the next product, activations and
// residuals read from a product's bf16 output, operand_column_sums,
// split_heads, the probabilities softmax keeps as bf16, and the bf16
// rounding LayerNorm writes beside its output — each the bits of the
// unfused ops (a cast after the f32 kernel), on the CPU and on CUDA
// (emulated in CI). The f32 pieces: test_fused.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "autograd/ops.h"
#include "tensor/device_runtime.h"
#include "tensor/kernel_calls.h"
#include "tests/helpers.h"
#include "tests/tensor/fused_checks.h"

using namespace ordo;
using namespace fused_test;

namespace {

// The residual + LayerNorm and bias + activation backwards, rows of `width`.
void check_bf16_layer_gradients(Device device, int64_t width) {
  INFO("rows of " << width);
  const Shape shape{4, 9, width};
  Tensor h = rand_f32(shape, 30).to(device), r = rand_f32(shape, 31, -2, 2).to(device);
  Tensor gy = rand_f32(shape, 32).to(device), bias = rand_f32({width}, 33).to(device);
  Tensor gamma = rand_f32({width}, 34, 0.5, 1.5).to(device), beta = rand_f32({width}, 35).to(device);
  for (const double p : {0.3, 0.0}) {
    const PhiloxStream stream{5, 1, Tensor()};
    const ResidualLayerNormResult saved = residual_layernorm(h, bias, r, gamma, beta, 1e-5, p, stream);
    const ResidualLayerNormGrads f32 = residual_layernorm_backward(gy, saved, gamma, true, p, stream, DType::f32);
    const ResidualLayerNormGrads bf16 = residual_layernorm_backward(gy, saved, gamma, true, p, stream, DType::bf16);
    REQUIRE(bf16.gh.dtype() == DType::bf16);
    CHECK(test::bit_identical(bf16.gh, f32.gh.to(DType::bf16)));
    CHECK(test::bit_identical(bf16.gbias, f32.gbias));
    CHECK(test::bit_identical(bf16.gresidual, f32.gresidual));
  }
  Tensor x = rand_f32(shape, 36, -3, 3).to(device);
  const BiasActivationGrads f32 = bias_activation_backward(gy, x, bias, UnaryOp::gelu, DType::f32);
  const BiasActivationGrads bf16 = bias_activation_backward(gy, x, bias, UnaryOp::gelu, DType::bf16);
  CHECK(test::bit_identical(bf16.gx, f32.gx.to(DType::bf16)));
  CHECK(test::bit_identical(bf16.gbias, f32.gbias));
}

// A product's output's gradient written as bf16: the f32 gradient rounded to
// nearest even once, the bias's column sums those of the unrounded values.
void check_bf16_gradients(Device device) {
  INFO(device.str());
  // Rows of 24 and of 300 (the CPU sums a bias's gradient 256 columns at a
  // time, rounding the gradient as it reads it).
  for (const int64_t width : {24, 300}) check_bf16_layer_gradients(device, width);
  const Shape shape{4, 9, 24};
  // The attention's pieces: the scores' gradient and the dropped
  // probabilities, in rows of 24 (a warp's on CUDA) and of 1101 (a block's;
  // 3303 elements: dropout's packs of four and a tail of three).
  for (const Shape& rows : {shape, Shape{3, 1101}}) {
    INFO(shape_str(rows));
    const Tensor y = softmax(rand_f32(rows, 37, -4, 4).to(device)), g = rand_f32(rows, 38).to(device);
    const Tensor gx = softmax_backward(y, g, DType::bf16);
    REQUIRE(gx.dtype() == DType::bf16);
    CHECK(test::bit_identical(gx, softmax_backward(y, g).to(DType::bf16)));
    const PhiloxStream stream{5, 2, Tensor()};
    const Tensor dropped = dropout(y, 0.3, stream, DType::bf16);
    REQUIRE(dropped.dtype() == DType::bf16);
    CHECK(test::bit_identical(dropped, dropout(y, 0.3, stream).to(DType::bf16)));
    // The backward of dropout(softmax): gy through the mask as it is read,
    // the values of dropout's kernel then softmax's backward.
    const Tensor through_mask = softmax_backward(y, dropout(g, 0.3, stream));
    CHECK(test::bit_identical(softmax_backward(y, g, DType::f32, 0.3, stream), through_mask));
    CHECK(test::bit_identical(softmax_backward(y, g, DType::bf16, 0.3, stream), through_mask.to(DType::bf16)));
    // The forward's dropped probabilities written beside y: dropout's values
    // from y (p = 0: y rounded), with a mask that leaves a row nothing.
    std::vector<float> mask_values(static_cast<size_t>(shape_numel(rows)), 0.0f);
    const int64_t n = rows.back();
    for (int64_t j = 0; j < n; ++j) {
      mask_values[n + j] = -INFINITY;                      // row 1: every position masked out
      if (j % 5 == 2) mask_values[2 * n + j] = -10000.0f;  // row 2: some
    }
    const Tensor x = rand_f32(rows, 39, -4, 4).to(device), mask = Tensor::from_vector(mask_values, rows).to(device);
    const Tensor masked = softmax(x, mask);
    for (const double p : {0.3, 0.0})
      for (const DType dtype : {DType::bf16, DType::f32}) {
        INFO("p " << p << ", out " << dtype_name(dtype));
        const SoftmaxDropoutResult both = softmax_dropout(x, mask, p, stream, dtype);
        CHECK(test::bit_identical(both.y, masked));
        CHECK(test::bit_identical(both.out, dropout(masked, p, stream, dtype)));
        CHECK(both.out.shares_storage_with(both.y) == (p == 0 && dtype == DType::f32));
      }
  }
  // The decoder's loss (linear_cross_entropy): the logits z + bias read with
  // the bias added as each is read — the loss, lse and count bit for bit
  // those of cross_entropy on add(z, bias) (the same f32 add), one launch on
  // CUDA; its backward cross_entropy's gradient of those logits as it is, or
  // rounded once, and the bias's gradient the column sums of the unrounded
  // values (one launch on CUDA); a row ignored. Rows of 24 and 300 classes.
  for (const int64_t c : {24, 300}) {
    INFO("classes " << c);
    const Tensor z = rand_f32({5, c}, 40, -4, 4).to(device), bias = rand_f32({c}, 41, -2, 2).to(device);
    const Tensor logits = add(z, bias);
    const Tensor targets = Tensor::from_vector(std::vector<int64_t>{3, -100, 0, c - 1, 7}, {5}).to(device);
    const CrossEntropyResult saved = cross_entropy(logits, targets);
    if (device.is_cuda()) synchronize(device);
    reset_device_counters();
    const CrossEntropyResult biased = cross_entropy(z, targets, -100, bias);
    if (device.is_cuda()) CHECK(device_counters().kernel_launches == 1);
    CHECK(test::bit_identical(biased.loss, saved.loss));
    CHECK(test::bit_identical(biased.lse, saved.lse));
    CHECK(test::bit_identical(biased.count, saved.count));
    const Tensor gy = Tensor::scalar(0.75, DType::f32, device);
    const Tensor plain = cross_entropy_backward(gy, logits, saved, targets);
    if (device.is_cuda()) synchronize(device);
    reset_device_counters();
    const CrossEntropyGrads bf16 = cross_entropy_backward_with_bias(gy, z, bias, biased, targets, -100, DType::bf16);
    if (device.is_cuda()) CHECK(device_counters().kernel_launches == 1);
    const CrossEntropyGrads f32 = cross_entropy_backward_with_bias(gy, z, bias, biased, targets, -100, DType::f32);
    REQUIRE(bf16.glogits.dtype() == DType::bf16);
    CHECK(test::bit_identical(f32.glogits, plain));
    CHECK(test::bit_identical(bf16.glogits, plain.to(DType::bf16)));
    CHECK(test::bit_identical(bf16.gbias, f32.gbias));
    const std::vector<double> g = plain.to_doubles();
    std::vector<double> sums(static_cast<size_t>(c), 0.0);
    for (size_t i = 0; i < g.size(); ++i) sums[i % c] += g[i];
    check_column_sums(f32.gbias, Tensor::from_vector(sums, {c}), plain, "the bias's gradient");
  }
}

// split_heads against the ops it replaces, worked on the host from x's
// values: heads[p, b, h, l, e] = x[b, l, (p H + h) d + e] + bias[...] (the
// same f32 add: the same bits; bf16 that value rounded), the backward the
// inverse layout (exact copies) and the bias's column sums within their
// bound. Part counts 3 (q | k | v) and 2, with and without a bias; rows of
// 5 x 7 and d = 3 (no multiple of a warp or a pack).
void check_split_heads(Device device) {
  INFO(device.str());
  uint64_t seed = 90;
  for (const int64_t parts : {3, 2})
    for (const bool with_bias : {true, false}) {
      const int64_t B = 5, L = 7, H = 2, d = 3, columns = parts * H * d;
      const Tensor x = rand_f32({B, L, columns}, ++seed), bias = rand_f32({columns}, ++seed);
      const Tensor g = rand_f32({parts, B, H, L, d}, ++seed);
      const std::vector<double> xs = x.to_doubles(), bs = bias.to_doubles(), gs = g.to_doubles();
      std::vector<float> want(xs.size()), want_gx(xs.size());
      for (int64_t p = 0; p < parts; ++p)
        for (int64_t b = 0; b < B; ++b)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t l = 0; l < L; ++l)
              for (int64_t e = 0; e < d; ++e) {
                const int64_t column = (p * H + h) * d + e, from = (b * L + l) * columns + column;
                const int64_t to = (((p * B + b) * H + h) * L + l) * d + e;
                want[to] = with_bias ? static_cast<float>(xs[from]) + static_cast<float>(bs[column])
                                     : static_cast<float>(xs[from]);
                want_gx[from] = static_cast<float>(gs[to]);
              }
      const Tensor want_heads = Tensor::from_vector(want, {parts, B, H, L, d});
      const Tensor b_arg = with_bias ? bias.to(device) : Tensor();
      CHECK(test::bit_identical(split_heads(x.to(device), b_arg, parts, H, DType::f32), want_heads));
      CHECK(test::bit_identical(split_heads(x.to(device), b_arg, parts, H, DType::bf16), want_heads.to(DType::bf16)));
      const Tensor want_g = Tensor::from_vector(want_gx, {B, L, columns});
      for (const DType dtype : {DType::f32, DType::bf16}) {
        const SplitHeadsGrads got = split_heads_backward(g.to(device), with_bias, dtype);
        CHECK(test::bit_identical(got.gx, want_g.to(dtype)));
        REQUIRE(got.gbias.defined() == with_bias);
        if (with_bias) check_column_sums(got.gbias.to(Device::cpu()), sum_to(want_g, {columns}), want_g, "gbias");
      }
    }
}

// The output's bf16 rounding written beside it (the next product's operand):
// the bits a cast of the output gives, the output itself unchanged.
void check_bf16_operand(Device device) {
  INFO(device.str());
  const Shape shapes[] = {{3, 17}, {2, 3, 100}, {2, 1025}};  // warp rows, 100 wide, block rows on CUDA
  uint64_t seed = 70;
  for (const Shape& shape : shapes)
    for (const double p : {0.3, 0.0}) {
      const int64_t n = shape.back();
      Tensor h = rand_f32(shape, ++seed).to(device), r = rand_f32(shape, ++seed, -2, 2).to(device);
      Tensor bias = rand_f32({n}, ++seed).to(device), gamma = rand_f32({n}, ++seed, 0.5, 1.5).to(device);
      Tensor beta = rand_f32({n}, ++seed).to(device);
      const PhiloxStream stream{5, 1, Tensor()};
      const ResidualLayerNormResult plain = residual_layernorm(h, bias, r, gamma, beta, 1e-5, p, stream);
      const ResidualLayerNormResult both = residual_layernorm(h, bias, r, gamma, beta, 1e-5, p, stream, true);
      CHECK(!plain.y_operand.defined());
      REQUIRE(both.y_operand.dtype() == DType::bf16);
      CHECK(test::bit_identical(both.y, plain.y));
      CHECK(test::bit_identical(both.y_operand, plain.y.to(DType::bf16)));
    }  // LayerNorm alone (the embeddings', the MLM head's): the same rule.
  {  // The MLM head's gather (select_rows): its rows and their rounding, one launch on CUDA.
    const Tensor x = rand_f32({9, 37}, ++seed).to(device);
    const Tensor rows = Tensor::from_vector(std::vector<int64_t>{0, 4, 5, 8}, {4}).to(device);
    const SelectedRows plain = select_rows(x, rows, false);
    if (device.is_cuda()) synchronize(device);
    reset_device_counters();
    const SelectedRows both = select_rows(x, rows, true);
    if (device.is_cuda()) CHECK(device_counters().kernel_launches == 1);
    CHECK(!plain.y_operand.defined());
    REQUIRE(both.y_operand.dtype() == DType::bf16);
    CHECK(test::bit_identical(plain.y, index_select(x, 0, rows)));
    CHECK(test::bit_identical(both.y, plain.y));
    CHECK(test::bit_identical(both.y_operand, plain.y.to(DType::bf16)));
  }
  for (const Shape& shape : shapes) {
    const int64_t n = shape.back();
    const Tensor x = rand_f32(shape, ++seed, -3, 3).to(device), gamma = rand_f32({n}, ++seed, 0.5, 1.5).to(device);
    const Tensor beta = rand_f32({n}, ++seed).to(device);
    const LayerNormResult plain = layernorm(x, gamma, beta, 1e-5), both = layernorm(x, gamma, beta, 1e-5, true);
    CHECK(!plain.y_operand.defined());
    REQUIRE(both.y_operand.dtype() == DType::bf16);
    CHECK(test::bit_identical(both.y, plain.y));
    CHECK(test::bit_identical(both.mean, plain.mean));
    CHECK(test::bit_identical(both.y_operand, plain.y.to(DType::bf16)));
  }
  if (device.is_cpu()) {  // f64 values keep no bf16 rounding
    const Tensor x = rand_f32({2, 5}, ++seed).to(DType::f64), ones = Tensor::ones({5}, DType::f64);
    CHECK(!layernorm(x, ones, ones, 1e-5, true).y_operand.defined());
  }
}

}  // namespace

TEST_CASE("fused backwards write a product output's gradient as bf16: the f32 one rounded once", "[tensor]") {
  check_bf16_gradients(Device::cpu());
}

namespace {

// operand_column_sums over 300 rows of 70 (three column strips, several row
// chunks on CUDA): the rounding is the cast's bits on both devices; the sums
// are sum(x, {0})'s bits on the CPU (its kernels in order) and within 2^-20
// of each column's sum of |x| on CUDA (FP32 rounding of a double sum, against
// the CPU's own order: both within a few 2^-24 of it), in one launch.
void check_operand_column_sums(Device device) {
  const Tensor x = rand_f32({300, 70}, 61, -3, 3);
  const Tensor rounded = x.to(DType::bf16), sums = sum(x, {0});
  if (device.is_cuda()) {
    synchronize(device);
    reset_device_counters();
  }
  const OperandColumnSums both = operand_column_sums(x.to(device));
  if (device.is_cuda()) CHECK(device_counters().kernel_launches == 1);
  CHECK(test::bit_identical(both.operand.to(Device::cpu()), rounded));
  if (device.is_cpu()) {
    CHECK(test::bit_identical(both.sums, sums));
    return;
  }
  const std::vector<double> got = both.sums.to(Device::cpu()).to_doubles(), want = sums.to_doubles(),
                            magnitude = sum(abs(x), {0}).to_doubles();
  for (size_t c = 0; c < want.size(); ++c) {
    INFO("column " << c);
    CHECK(std::fabs(got[c] - want[c]) <= 0x1p-20 * magnitude[c]);
  }
}

}  // namespace

namespace {

// A product's bf16 output as bias_activation's x (and its bf16 gradient as
// gy): the f32 kernels' values on the widened inputs, rounded once — the same
// bits on each device, the bias's gradient (f32) the sums of the unrounded
// gx — in a launch each way on CUDA.
void check_bf16_activation_input(Device device) {
  uint64_t seed = 120;
  for (const UnaryOp act : {UnaryOp::gelu, UnaryOp::gelu_tanh, UnaryOp::relu, UnaryOp::tanh}) {
    INFO(unary_name(act));
    const Tensor x16 = rand_f32({70, 130}, ++seed, -3, 3).to(DType::bf16).to(device);
    const Tensor gy16 = rand_f32({70, 130}, ++seed).to(DType::bf16).to(device);
    const Tensor b = rand_f32({130}, ++seed).to(device);
    const Tensor x = x16.to(DType::f32), gy = gy16.to(DType::f32);  // exact
    if (device.is_cuda()) {
      synchronize(device);
      reset_device_counters();
    }
    const Tensor y = bias_activation(x16, b, act, DType::bf16);
    if (device.is_cuda()) CHECK(device_counters().kernel_launches == 1);
    CHECK(test::bit_identical(y.to(Device::cpu()), bias_activation(x, b, act, DType::bf16).to(Device::cpu())));
    if (device.is_cuda()) {
      synchronize(device);
      reset_device_counters();
    }
    const BiasActivationGrads g = bias_activation_backward(gy16, x16, b, act, DType::bf16);
    if (device.is_cuda()) CHECK(device_counters().kernel_launches == 1);
    const BiasActivationGrads want = bias_activation_backward(gy, x, b, act, DType::bf16);
    REQUIRE((g.gx.dtype() == DType::bf16 && g.gbias.dtype() == DType::f32));
    CHECK(test::bit_identical(g.gx.to(Device::cpu()), want.gx.to(Device::cpu())));
    CHECK(test::bit_identical(g.gbias.to(Device::cpu()), want.gbias.to(Device::cpu())));
  }
  const Tensor x16 = rand_f32({2, 3}, 1).to(DType::bf16).to(device), b = rand_f32({3}, 2).to(device);
  CHECK_THROWS_WITH(bias_activation(x16, b.to(DType::bf16), UnaryOp::gelu, DType::bf16),
                    "bias_activation: bias has dtype bf16, expected f32");
  CHECK_THROWS_WITH(bias_activation(x16, b, UnaryOp::gelu, DType::f32),
                    "bias_activation: a f32 output from bf16 values (theirs, or bf16 from f32)");
  CHECK_THROWS_WITH(bias_activation_backward(x16.to(DType::f32), x16, b, UnaryOp::gelu, DType::bf16),
                    Catch::Matchers::StartsWith("bias_activation_backward: "));
}

// A product's bf16 output as residual_layernorm's h beside an f32 residual
// (with dropout and a bias): the f32 kernel's outputs on the widened h, bit
// for bit, in one launch on CUDA.
void check_bf16_residual_input(Device device) {
  const Tensor h16 = rand_f32({50, 40}, 130, -3, 3).to(DType::bf16).to(device);
  const Tensor residual = rand_f32({50, 40}, 131).to(device), bias = rand_f32({40}, 132).to(device);
  const Tensor gamma = rand_f32({40}, 133).to(device), beta = rand_f32({40}, 134).to(device);
  const PhiloxStream stream{7, 3, Tensor()};
  if (device.is_cuda()) {
    synchronize(device);
    reset_device_counters();
  }
  const ResidualLayerNormResult got = residual_layernorm(h16, bias, residual, gamma, beta, 1e-5, 0.1, stream, true);
  if (device.is_cuda()) CHECK(device_counters().kernel_launches == 1);
  const ResidualLayerNormResult want =
      residual_layernorm(h16.to(DType::f32), bias, residual, gamma, beta, 1e-5, 0.1, stream, true);
  REQUIRE(got.y.dtype() == DType::f32);
  for (const auto& [g, w] : {std::pair{got.y, want.y}, std::pair{got.s, want.s}, std::pair{got.mean, want.mean},
                             std::pair{got.rstd, want.rstd}, std::pair{got.y_operand, want.y_operand}})
    CHECK(test::bit_identical(g.to(Device::cpu()), w.to(Device::cpu())));
  CHECK_THROWS_WITH(residual_layernorm(residual, bias, h16, gamma, beta, 1e-5, 0.0, stream),
                    "residual_layernorm: operands have different dtypes (f32 and bf16)");
}

}  // namespace

TEST_CASE("bias + activation of a product's bf16 output: the f32 kernels on its widened values, rounded once",
          "[tensor]") {
  check_bf16_activation_input(Device::cpu());
}

TEST_CASE("residual + LayerNorm of a product's bf16 output: the f32 kernel's bits on its widened values",
          "[tensor]") {
  check_bf16_residual_input(Device::cpu());
}

TEST_CASE("operand_column_sums: a gradient's bf16 rounding and its column sums in one pass, the bits of the two",
          "[tensor]") {
  check_operand_column_sums(Device::cpu());
}

TEST_CASE("split_heads lays the stacked product's parts out as heads with the bias added, its backward the inverse",
          "[tensor]") {
  check_split_heads(Device::cpu());
  CHECK_THROWS_WITH(split_heads(rand_f32({2, 3, 10}, 1), Tensor(), 3, 2, DType::f32),
                    "split_heads: 10 columns do not split into 3 parts of 2 heads");
  CHECK_THROWS_WITH(split_heads(rand_f32({2, 3, 12}, 1), rand_f32({6}, 2), 3, 2, DType::f32),
                    "split_heads: bias has shape [6], expected [12]");
}

namespace {

// softmax_dropout keeping the probabilities as bf16: y is the f32 y's
// rounding and out the same bits as without (p = 0: y itself); the backward
// from the kept y is the f32 backward of its widened values, bit for bit (the
// same kernel on the same numbers), a launch each way on a device. Rows of 7
// and of 1,100 (a block a row on CUDA), a masked row.
void check_kept_probabilities(Device device) {
  INFO(device.str());
  for (const int64_t n : {7, 1100}) {
    const Tensor x = rand_f32({3, 4, n}, 60, -4, 4).to(device), gy = rand_f32({3, 4, n}, 61).to(device);
    Tensor mask = Tensor::zeros({3, 1, n}, DType::f32);
    mask.select(0, 1).fill_(-std::numeric_limits<float>::infinity());  // batch 1: every position masked
    mask = mask.to(device);
    for (const double p : {0.3, 0.0}) {
      INFO("n " << n << ", p " << p);
      const PhiloxStream stream{7, 3, Tensor()};
      const SoftmaxDropoutResult plain = softmax_dropout(x, mask, p, stream, DType::bf16);
      if (device.is_cuda()) synchronize(device);
      reset_device_counters();
      const SoftmaxDropoutResult kept = softmax_dropout(x, mask, p, stream, DType::bf16, /*keep_rounded=*/true);
      if (device.is_cuda()) CHECK(device_counters().kernel_launches == 1);
      REQUIRE(kept.y.dtype() == DType::bf16);
      CHECK(test::bit_identical(kept.y, plain.y.to(DType::bf16)));
      CHECK(test::bit_identical(kept.out, plain.out));
      CHECK(kept.out.shares_storage_with(kept.y) == (p == 0));
      const Tensor widened = kept.y.to(DType::f32);
      for (const DType gx_dtype : {DType::f32, DType::bf16}) {
        if (device.is_cuda()) synchronize(device);
        reset_device_counters();
        const Tensor from_kept = softmax_backward(kept.y, gy, gx_dtype, p, stream);
        if (device.is_cuda()) CHECK(device_counters().kernel_launches == 1);
        CHECK(test::bit_identical(from_kept, softmax_backward(widened, gy, gx_dtype, p, stream)));
      }
    }
  }
  CHECK_THROWS_WITH(softmax_dropout(rand_f32({2, 3}, 62).to(device), Tensor(), 0.0, PhiloxStream{}, DType::f32, true),
                    Catch::Contains("kept as bf16 only beside a bf16 output of f32 scores"));
}

}  // namespace

TEST_CASE("softmax keeps its probabilities as bf16 for the backward: the rounding's bits, read back exactly",
          "[tensor]") {
  check_kept_probabilities(Device::cpu());
}

// softmax(q k^T) v with dropout under bf16 products, as the attention runs
// it: by the unfused ops (softmax, dropout, each product casting its
// operand), and by softmax_dropout, which writes the dropped probabilities
// and the scores' gradient rounded and keeps the probabilities for the
// backward as bf16: the same output and v gradient bits, no cast of a
// [.., L, L] tensor left, one kernel for the backward of both; q's and k's
// gradients from the kept rounding within 2^-7 of their largest (the
// scores' gradient is rounded to bf16 either way, 2^-9 relative; the kept
// probabilities add at most as much again to each term).
TEST_CASE("the attention's probabilities and scores' gradient reach bf16 products rounded as written: no casts",
          "[tensor]") {
  const MatmulPrecision bf16 = MatmulPrecision::bf16;
  const int64_t length = 7;
  const PhiloxStream stream{3, 4, Tensor()};
  struct Run {
    std::vector<Tensor> values;
    int64_t square_copies = 0, forward_kernels = 0, backward_kernels = 0;
  };
  auto run = [&](bool fused, double p) {
    Var q(rand_f32({2, 3, length, 8}, 50), true), k(rand_f32({2, 3, length, 8}, 51), true);
    Var v(rand_f32({2, 3, length, 8}, 52), true);
    Run r;
    KernelCallRecording recording;
    const Var scores = matmul(q, k, false, true, 0.25, bf16);
    const Var dropped = fused ? softmax_dropout(scores, Var(), p, stream, true, true, nullptr, bf16)
                        : p > 0 ? dropout(softmax(scores), p, stream)
                                : softmax(scores);
    const Var out = matmul(dropped, v, false, false, 1.0, bf16);
    const size_t forward_calls = recording.calls().size();
    sum(mul(out, Var(rand_f32(out.shape(), 53)))).backward();
    const std::vector<KernelCall> calls = recording.calls();
    for (size_t i = 0; i < calls.size(); ++i) {
      const std::string kernel = calls[i].kernel;
      const Shape& s = calls[i].shapes[0];
      if (kernel == "copy" && s.back() == length && s.end()[-2] == length) ++r.square_copies;
      const bool attention_kernel = kernel == "softmax" || kernel == "dropout" || kernel == "softmax_backward";
      if (attention_kernel) ++(i < forward_calls ? r.forward_kernels : r.backward_kernels);
    }
    r.values = {out.value(), q.grad(), k.grad(), v.grad()};
    return r;
  };
  const Run unfused = run(false, 0.2), fused = run(true, 0.2);
  CHECK(unfused.square_copies == 2);  // the dropped probabilities and the scores' gradient, cast to bf16
  CHECK(fused.square_copies == 0);
  CHECK(unfused.forward_kernels == 2);  // softmax, dropout
  CHECK(fused.forward_kernels == 1);    // softmax writing the dropped probabilities beside y
  CHECK(unfused.backward_kernels == 2);
  CHECK(fused.backward_kernels == 1);
  auto check_values = [](const Run& got, const Run& want) {
    CHECK(test::bit_identical(got.values[0], want.values[0]));  // the output
    CHECK(test::bit_identical(got.values[3], want.values[3]));  // v's gradient: the dropped probabilities'
    for (size_t i : {1, 2}) {                                   // q's and k's
      const std::vector<double> a = got.values[i].to_doubles(), b = want.values[i].to_doubles();
      double largest = 0, worst = 0;
      for (size_t e = 0; e < a.size(); ++e) {
        largest = std::max(largest, std::fabs(b[e]));
        worst = std::max(worst, std::fabs(a[e] - b[e]));
      }
      CHECK(worst <= 0x1p-7 * largest);
      CHECK(worst > 0);  // the kept rounding is what the backward read
    }
  };
  check_values(fused, unfused);
  // Without dropout: the probabilities written rounded beside y instead of cast by the product.
  const Run plain = run(false, 0.0), rounded = run(true, 0.0);
  CHECK(plain.square_copies == 2);
  CHECK(rounded.square_copies == 0);
  CHECK(plain.forward_kernels == 1);
  CHECK(rounded.forward_kernels == 1);
  check_values(rounded, plain);
  // Rounded output only from f32 values.
  CHECK_THROWS_WITH(dropout(rand_f32({2, 3}, 54).to(DType::f64), 0.5, PhiloxStream{1, 1, Tensor()}, DType::bf16),
                    "dropout: a bf16 out from f64 values (theirs, or bf16 from f32)");
  CHECK_THROWS_WITH(softmax_dropout(rand_f32({2, 3}, 55).to(DType::f64), Tensor(), 0.5, PhiloxStream{1, 1, Tensor()},
                                    DType::bf16),
                    "softmax_dropout: a bf16 out from f64 values (theirs, or bf16 from f32)");
  CHECK_THROWS_WITH(softmax_dropout(rand_f32({2, 3}, 56), Tensor(), 1.5, PhiloxStream{1, 1, Tensor()}, DType::bf16),
                    Catch::Contains("softmax_dropout: dropout's p must be in [0, 1)"));
}

TEST_CASE("residual + LayerNorm and LayerNorm write their output's bf16 rounding beside it: a cast's bits",
          "[tensor]") {
  check_bf16_operand(Device::cpu());
}

TEST_CASE("a dropout stream's base on the device moves the mask as its offset would", "[tensor]") {
  Tensor x = rand_f32({5, 40}, 20);
  const Tensor base = Tensor::from_vector(std::vector<int64_t>{1000}, {1});
  CHECK(test::bit_identical(dropout(x, 0.4, PhiloxStream{9, 3, base}), dropout(x, 0.4, 9, 1003)));
  CHECK_FALSE(test::bit_identical(dropout(x, 0.4, PhiloxStream{9, 3, base}), dropout(x, 0.4, 9, 3)));
}

#ifdef ORDO_HAS_CUDA

namespace {

const Device kGpu = Device::cuda(0);

}  // namespace

TEST_CASE("cuda: softmax keeps its probabilities as bf16 for the backward, a launch each way", "[cuda]") {
  check_kept_probabilities(kGpu);
}

TEST_CASE("cuda: fused backwards write a product output's gradient as bf16: the f32 one rounded once", "[cuda]") {
  check_bf16_gradients(kGpu);
}

TEST_CASE("cuda: bias + activation of a product's bf16 output: the bits of the f32 kernels on its widened values",
          "[cuda]") {
  check_bf16_activation_input(kGpu);
}

TEST_CASE("cuda: residual + LayerNorm of a product's bf16 output: the f32 kernel's bits, in 1 launch", "[cuda]") {
  check_bf16_residual_input(kGpu);
}

TEST_CASE("cuda: operand_column_sums rounds as the cast and sums the columns in 1 launch", "[cuda]") {
  check_operand_column_sums(kGpu);
}

TEST_CASE("cuda: split_heads and its backward match the worked layout, in 1 launch each", "[cuda]") {
  check_split_heads(kGpu);
  const Tensor x = rand_f32({4, 6, 24}, 95).to(kGpu), bias = rand_f32({24}, 96).to(kGpu);
  synchronize(kGpu);
  reset_device_counters();
  const Tensor heads = split_heads(x, bias, 3, 2, DType::f32);
  CHECK(device_counters().kernel_launches == 1);
  reset_device_counters();
  split_heads_backward(heads, true, DType::bf16);
  CHECK(device_counters().kernel_launches == 1);
}

TEST_CASE("cuda: residual + LayerNorm and LayerNorm write their output's bf16 rounding in the same launch",
          "[cuda]") {
  check_bf16_operand(kGpu);
  const Tensor h = rand_f32({4, 40}, 80).to(kGpu), gamma = rand_f32({40}, 81).to(kGpu);
  synchronize(kGpu);
  reset_device_counters();
  residual_layernorm(h, Tensor(), h, gamma, gamma, 1e-5, 0.0, PhiloxStream{}, true);
  CHECK(device_counters().kernel_launches == 1);
  layernorm(h, gamma, gamma, 1e-5, true);
  CHECK(device_counters().kernel_launches == 2);
}

#endif
