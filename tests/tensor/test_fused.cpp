// The fused transformer pieces (tensor/kernels.inc: residual_layernorm,
// bias_activation, bias_activation_layernorm) against the unfused ops they replace, on fresh random
// inputs: on the CPU the fused path runs the same roundings in the same
// order, so values agree bit for bit (the column sums of the bias gradient,
// summed in another order, within their bound); on CUDA (emulated in CI)
// against the CPU within LayerNorm's and the activations' bounds, with the
// launches each makes. The f64 gradient checks are autograd/gradcheck_suite.cpp's;
// the pieces' bf16 operands and outputs are test_fused_bf16.cpp's.
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

struct Branch {
  Tensor y, gh, gbias, gresidual, ggamma, gbeta;
};

// LayerNorm(residual + dropout(h + bias)) and its gradients from gy, fused or
// composed from the unfused ops, on the inputs' device.
Branch residual_branch(bool fused, const Tensor& h, const Tensor& bias, const Tensor& residual, const Tensor& gamma,
                       const Tensor& beta, const Tensor& gy, double p, const PhiloxStream& stream) {
  Var vh(h, true), vr(residual, true), vg(gamma, true), vb(beta, true);
  Var vbias = bias.defined() ? Var(bias, true) : Var();
  Var y;
  if (fused) {
    y = residual_layernorm(vh, vbias, vr, vg, vb, 1e-5, p, stream);
  } else {
    Var sum = vbias.defined() ? add(vh, vbias) : vh;
    y = layernorm(add(dropout(sum, p, stream), vr), vg, vb, 1e-5);
  }
  y.backward(gy);
  Branch b{y.value(), vh.grad(), vbias.defined() ? vbias.grad() : Tensor(), vr.grad(), vg.grad(), vb.grad()};
  return b;
}

}  // namespace

TEST_CASE("fused residual + dropout + LayerNorm computes the unfused ops' values and gradients", "[tensor]") {
  for (const bool with_bias : {true, false})
    for (const double p : {0.3, 0.0}) {
      INFO("bias " << with_bias << ", p " << p);
      const Shape shape{3, 5, 17};
      Tensor h = rand_f32(shape, 1), r = rand_f32(shape, 2, -2, 2), gy = rand_f32(shape, 3);
      Tensor bias = with_bias ? rand_f32({17}, 4) : Tensor();
      Tensor gamma = rand_f32({17}, 5, 0.5, 1.5), beta = rand_f32({17}, 6);
      const PhiloxStream stream{31, 7, Tensor()};
      const Branch f = residual_branch(true, h, bias, r, gamma, beta, gy, p, stream);
      const Branch u = residual_branch(false, h, bias, r, gamma, beta, gy, p, stream);
      CHECK(test::bit_identical(f.y, u.y));
      CHECK(test::bit_identical(f.gh, u.gh));
      CHECK(test::bit_identical(f.gresidual, u.gresidual));
      CHECK(test::bit_identical(f.ggamma, u.ggamma));
      CHECK(test::bit_identical(f.gbeta, u.gbeta));
      if (with_bias) check_column_sums(f.gbias, u.gbias, u.gh, "gbias");
      if (p > 0) {  // the mask acted: some of h's gradient is exactly 0, where the residual's is not
        const std::vector<double> gh = f.gh.to_doubles();
        CHECK(std::count(gh.begin(), gh.end(), 0.0) > 0);
      }
    }
}

TEST_CASE("fused bias + activation computes the unfused ops' values and gradients, bf16 output rounded once",
          "[tensor]") {
  // 33 columns, and 300: the CPU sums the bias's gradient 256 columns at a time.
  for (const Shape& shape : {Shape{4, 3, 33}, Shape{2, 3, 300}})
  for (const UnaryOp act : {UnaryOp::gelu, UnaryOp::gelu_tanh, UnaryOp::relu, UnaryOp::tanh}) {
    INFO(unary_name(act) << " " << shape_str(shape));
    Tensor x = rand_f32(shape, 10, -3, 3), b = rand_f32({shape.back()}, 11), gy = rand_f32(shape, 12);
    Var fx(x, true), fb(b, true), ux(x, true), ub(b, true);
    Var fused = bias_activation(fx, fb, act), unfused = unary(act, add(ux, ub));
    // The same formulas on the same values; the compiler may contract their
    // multiply-adds differently in the two loops: a few ulps of values <= 3.
    test::require_close(fused.value(), unfused.value(), 4 * kU, 4 * kU, "y");
    fused.backward(gy);
    unfused.backward(gy);
    test::require_close(fx.grad(), ux.grad(), 4 * kU, 4 * kU, "gx");
    check_column_sums(fb.grad(), ub.grad(), ux.grad(), "gbias");
    // As a bf16 product's operand: the f32 value rounded to nearest even, once.
    Var operand =
        bias_activation(Var(x), Var(b), act, /*as_operand=*/true, /*x_is_product=*/false, MatmulPrecision::bf16);
    REQUIRE(operand.dtype() == DType::bf16);
    CHECK(test::bit_identical(operand.value(), fused.value().to(DType::bf16)));
  }
  CHECK_THROWS_WITH(bias_activation(rand_f32({2, 3}, 1), rand_f32({3}, 2), UnaryOp::exp, DType::f32),
                    "bias_activation: 'exp' is not an activation (gelu, gelu_tanh, relu, tanh)");
}

namespace {

// An MLM head's transform, LayerNorm(act(x + bias)), and its gradients from
// gy, as the unfused kernels compute them on the CPU: bias_activation, then
// layernorm; layernorm_backward, then bias_activation_backward.
struct Transform {
  Tensor y, y16, t, mean, rstd, gx, gbias, ggamma, gbeta;
};
Transform unfused_transform(const Tensor& x, const Tensor& bias, UnaryOp act, const Tensor& gamma,
                            const Tensor& beta, const Tensor& gy) {
  Transform r;
  r.t = bias_activation(x, bias, act, DType::f32);
  LayerNormResult ln = layernorm(r.t, gamma, beta, 1e-5, /*with_operand=*/true);
  r.y = ln.y, r.y16 = ln.y_operand, r.mean = ln.mean, r.rstd = ln.rstd;
  const LayerNormGrads lg = layernorm_backward(gy, r.t, ln.mean, ln.rstd, gamma);
  const BiasActivationGrads bg = bias_activation_backward(lg.gx, x, bias, act, DType::f32);
  r.gx = bg.gx, r.gbias = bg.gbias, r.ggamma = lg.ggamma, r.gbeta = lg.gbeta;
  return r;
}

// The fused op on the inputs' device, with its gradient of x in gx_dtype.
Transform fused_transform(const Tensor& x, const Tensor& bias, UnaryOp act, const Tensor& gamma, const Tensor& beta,
                          const Tensor& gy, DType gx_dtype) {
  const BiasActivationLayerNormResult f = bias_activation_layernorm(x, bias, act, gamma, beta, 1e-5, true);
  const BiasActivationLayerNormGrads g = bias_activation_layernorm_backward(gy, x, bias, act, f, gamma, gx_dtype);
  return {f.y, f.y_operand, f.t, f.mean, f.rstd, g.gx, g.gbias, g.ggamma, g.gbeta};
}

}  // namespace

// On the CPU the fused op runs the unfused kernels in order: the same bits
// (the gradcheck suite's "bias_activation_layernorm gelu" checks the
// formulas against f64 finite differences). x's gradient as bf16 is the f32
// one rounded once; y's rounding beside y is a cast's.
TEST_CASE("bias + activation + LayerNorm computes the unfused ops' values and gradients", "[tensor]") {
  for (const Shape& shape : {Shape{5, 17}, Shape{3, 4, 300}})
    for (const UnaryOp act : {UnaryOp::gelu, UnaryOp::gelu_tanh, UnaryOp::tanh}) {
      INFO(unary_name(act) << " " << shape_str(shape));
      const int64_t n = shape.back();
      const Tensor x = rand_f32(shape, 20, -3, 3), b = rand_f32({n}, 21), gy = rand_f32(shape, 22);
      const Tensor gamma = rand_f32({n}, 23, 0.5, 1.5), beta = rand_f32({n}, 24);
      const Transform u = unfused_transform(x, b, act, gamma, beta, gy);
      const Transform f = fused_transform(x, b, act, gamma, beta, gy, DType::f32);
      for (const auto& [got, want, what] : {std::tuple{f.y, u.y, "y"}, {f.y16, u.y16, "y16"}, {f.t, u.t, "t"},
                                            {f.mean, u.mean, "mean"}, {f.rstd, u.rstd, "rstd"}, {f.gx, u.gx, "gx"},
                                            {f.gbias, u.gbias, "gbias"}, {f.ggamma, u.ggamma, "ggamma"},
                                            {f.gbeta, u.gbeta, "gbeta"}}) {
        INFO(what);
        CHECK(test::bit_identical(got, want));
      }
      CHECK(f.y16.dtype() == DType::bf16);
      const Transform rounded = fused_transform(x, b, act, gamma, beta, gy, DType::bf16);
      REQUIRE(rounded.gx.dtype() == DType::bf16);
      CHECK(test::bit_identical(rounded.gx, f.gx.to(DType::bf16)));
      CHECK(test::bit_identical(rounded.gbias, f.gbias));
    }
  CHECK_THROWS_WITH(bias_activation_layernorm(rand_f32({2, 3}, 1), rand_f32({3}, 2), UnaryOp::gelu, rand_f32({4}, 3),
                                              rand_f32({3}, 4), 1e-5),
                    Catch::Contains("bias_activation_layernorm: gamma has shape [4], expected [3]"));
}

namespace {

// The embeddings' front: a word table [7, d] (row 0 its padding row, which
// the ids name), a token-type table [2, d], a position table [6, d] looked up
// alike for every sequence ([1, L]); 3 sequences of 5.
struct Front {
  std::vector<Tensor> tables, ids;
  Tensor gamma, beta, gy;
};
Front embeddings_front(int64_t d, uint64_t seed, Device device) {
  Front f;
  f.tables = {rand_f32({7, d}, seed).to(device), rand_f32({2, d}, seed + 1).to(device),
              rand_f32({6, d}, seed + 2).to(device)};
  f.ids = {Tensor::from_vector(std::vector<int64_t>{3, 0, 6, 6, 1, 2, 2, 5, 0, 4, 1, 6, 3, 3, 0}, {3, 5}).to(device),
           Tensor::from_vector(std::vector<int64_t>{0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1}, {3, 5}).to(device),
           Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3, 4}, {1, 5}).to(device)};
  f.gamma = rand_f32({d}, seed + 3, 0.5, 1.5).to(device);
  f.beta = rand_f32({d}, seed + 4).to(device);
  f.gy = rand_f32({3, 5, d}, seed + 5).to(device);
  return f;
}
const std::vector<int64_t> kFrontPadding{0, -1, -1};

struct FrontGrads {
  Tensor y;
  std::vector<Tensor> grads;  // the three tables', gamma's, beta's
};
// dropout(LayerNorm(embedding_sum)) and its gradients from gy, fused or composed of the unfused ops.
FrontGrads front(bool fused, const Front& f, double p, const PhiloxStream& stream) {
  std::vector<Var> tables;
  for (const Tensor& t : f.tables) tables.emplace_back(t, true);
  Var gamma(f.gamma, true), beta(f.beta, true);
  const Var y = fused ? embedding_layernorm(tables, f.ids, kFrontPadding, gamma, beta, 1e-5, p, stream)
                      : dropout(layernorm(embedding_sum(tables, f.ids, kFrontPadding), gamma, beta, 1e-5), p, stream);
  y.backward(f.gy);
  FrontGrads r{y.value(), {}};
  for (const Var& t : tables) r.grads.push_back(t.grad());
  r.grads.push_back(gamma.grad());
  r.grads.push_back(beta.grad());
  return r;
}

}  // namespace

// On the CPU the fused front runs the unfused kernels in order: the same bits
// (the f64 gradient check: the gradcheck suite's "embedding_layernorm"); y's
// rounding beside it is a cast's of the dropped values.
TEST_CASE("the embeddings' front (sum, LayerNorm, dropout) computes the unfused ops' values and gradients",
          "[tensor]") {
  const Front f = embeddings_front(20, 130, Device::cpu());
  for (const double p : {0.3, 0.0}) {
    INFO("p " << p);
    const PhiloxStream stream{31, 9, Tensor()};
    const FrontGrads fused = front(true, f, p, stream), unfused = front(false, f, p, stream);
    CHECK(test::bit_identical(fused.y, unfused.y));
    for (size_t i = 0; i < fused.grads.size(); ++i) {
      INFO("gradient " << i << " (3: gamma, 4: beta)");
      CHECK(test::bit_identical(fused.grads[i], unfused.grads[i]));
    }
    const EmbeddingLayerNormResult r = embedding_layernorm(f.tables, f.ids, f.gamma, f.beta, 1e-5, p, stream, true);
    CHECK(test::bit_identical(r.y_operand, r.y.to(DType::bf16)));
    if (p > 0) {
      const std::vector<double> y = r.y.to_doubles();
      CHECK(std::count(y.begin(), y.end(), 0.0) > 0);  // the mask acted
    }
  }
  CHECK_THROWS_WITH(embedding_layernorm(f.tables, f.ids, rand_f32({19}, 1), f.beta, 1e-5, 0.0, PhiloxStream{}),
                    Catch::Contains("embedding_layernorm: gamma has shape [19], expected [20]"));
}

#ifdef ORDO_HAS_CUDA

namespace {

const Device kGpu = Device::cuda(0);

// rtol * |want| + atol, per element.
void check_close(const Tensor& got, const Tensor& want, double rtol, double atol, const std::string& what) {
  INFO(what);
  const std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  REQUIRE(g.size() == w.size());
  int violations = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::fabs(g[i] - w[i]) <= rtol * std::fabs(w[i]) + atol) && violations++ < 3)
      UNSCOPED_INFO("[" << i << "] cuda " << g[i] << ", cpu " << w[i]);
  CHECK(violations == 0);
}

}  // namespace

// s = r + mask(h + b) is the same few roundings on both devices, but the
// compiler may fuse the multiply by the dropout scale with the add (one
// rounding instead of two): s within 2u relative. Then LayerNorm's bounds
// (tests/tensor/test_cuda_layers.cpp, "layernorm forward and backward"), with s of
// size <= 4 here: mean and rstd 4u relative, y and the gradients 8u relative
// and 128u absolute; the column sums (double on both sides, of terms that
// differ by those bounds) as the gradients.
TEST_CASE("cuda: fused residual + dropout + LayerNorm matches the CPU, in 1 launch forward and 1 backward",
          "[cuda]") {
  // Warp rows (the backward's column sums in its one launch: {67, 70} in 5
  // chunks of rows, the last shorter, and 3 strips of columns), 100 wide,
  // and block rows (the sums in a second launch).
  const Shape shapes[] = {{3, 17}, {67, 70}, {2, 3, 100}, {2, 1025}};
  uint64_t seed = 40;
  for (const Shape& shape : shapes)
    for (const double p : {0.3, 0.0}) {
      const int64_t n = shape.back();
      const std::string what = shape_str(shape) + " p " + std::to_string(p);
      Tensor h = rand_f32(shape, ++seed), r = rand_f32(shape, ++seed, -2, 2), gy = rand_f32(shape, ++seed);
      Tensor bias = rand_f32({n}, ++seed), gamma = rand_f32({n}, ++seed, 0.5, 1.5), beta = rand_f32({n}, ++seed);
      const PhiloxStream stream{77, 12, Tensor()};
      const Branch cpu = residual_branch(true, h, bias, r, gamma, beta, gy, p, stream);
      const Tensor base = Tensor::from_vector(std::vector<int64_t>{10}, {1}, kGpu);  // 10 + 2: the same stream
      synchronize(kGpu);
      reset_device_counters();
      ResidualLayerNormResult forward =
          residual_layernorm(h.to(kGpu), bias.to(kGpu), r.to(kGpu), gamma.to(kGpu), beta.to(kGpu), 1e-5, p,
                             PhiloxStream{77, 2, base});
      CHECK(device_counters().kernel_launches == 1);
      reset_device_counters();
      ResidualLayerNormGrads g = residual_layernorm_backward(gy.to(kGpu), forward, gamma.to(kGpu), true, p,
                                                             PhiloxStream{77, 2, base}, DType::f32);
      CHECK(device_counters().kernel_launches == (n <= 1024 ? 1 : 2));
      check_close(forward.y, cpu.y, 8 * kU, 128 * kU, what + " y");
      check_close(g.gresidual, cpu.gresidual, 8 * kU, 128 * kU, what + " gresidual");
      check_close(g.gh, cpu.gh, 8 * kU, 128 * kU, what + " gh");
      const int64_t rows = h.numel() / n;
      check_close(g.gbias, cpu.gbias, 8 * kU, 128 * kU * static_cast<double>(rows), what + " gbias");
      check_close(g.ggamma, cpu.ggamma, 8 * kU, 128 * kU * static_cast<double>(rows), what + " ggamma");
      check_close(g.gbeta, cpu.gbeta, 2 * kU, 1e-9, what + " gbeta");  // sums of gy: the same terms
      if (p > 0) {  // the same elements dropped on both devices
        const std::vector<double> a = g.gh.to_doubles(), b = cpu.gh.to_doubles();
        for (size_t i = 0; i < a.size(); ++i) CHECK((a[i] == 0) == (b[i] == 0));
      }
    }
}

// Against the CPU's unfused kernels, bounds as the fused bias + activation's
// (the device's erff/tanhf a few ulps from the host's, |x + b| <= 4) carried
// through LayerNorm as residual + LayerNorm's; the bias's, gamma's sums over
// the rows. One launch each way (two backward for rows over 1024); bf16 x
// gradient and y beside y: the device's f32 values rounded once.
TEST_CASE("cuda: bias + activation + LayerNorm matches the CPU, in 1 launch forward and 1 backward", "[cuda]") {
  uint64_t seed = 120;
  for (const UnaryOp act : {UnaryOp::gelu, UnaryOp::tanh})
    for (const Shape& shape : {Shape{5, 17}, Shape{40, 300}, Shape{3, 1100}}) {
      const std::string what = std::string(unary_name(act)) + " " + shape_str(shape);
      INFO(what);
      const int64_t n = shape.back(), rows = shape_numel(shape) / n;
      const Tensor x = rand_f32(shape, ++seed, -3, 3), b = rand_f32({n}, ++seed), gy = rand_f32(shape, ++seed);
      const Tensor gamma = rand_f32({n}, ++seed, 0.5, 1.5), beta = rand_f32({n}, ++seed);
      const Transform cpu = unfused_transform(x, b, act, gamma, beta, gy);
      const Tensor xg = x.to(kGpu), bg = b.to(kGpu), gammag = gamma.to(kGpu), betag = beta.to(kGpu), gyg = gy.to(kGpu);
      synchronize(kGpu);
      reset_device_counters();
      const BiasActivationLayerNormResult f = bias_activation_layernorm(xg, bg, act, gammag, betag, 1e-5, true);
      CHECK(device_counters().kernel_launches == 1);
      reset_device_counters();
      const BiasActivationLayerNormGrads g = bias_activation_layernorm_backward(gyg, xg, bg, act, f, gammag, DType::f32);
      CHECK(device_counters().kernel_launches == (n <= 1024 ? 1 : 2));
      check_close(f.t, cpu.t, 8 * kU, 8 * kU * 4, what + " t");
      check_close(f.y, cpu.y, 8 * kU, 128 * kU, what + " y");
      check_close(g.gx, cpu.gx, 8 * kU, 128 * kU, what + " gx");
      check_close(g.gbias, cpu.gbias, 8 * kU, 128 * kU * static_cast<double>(rows), what + " gbias");
      check_close(g.ggamma, cpu.ggamma, 8 * kU, 128 * kU * static_cast<double>(rows), what + " ggamma");
      check_close(g.gbeta, cpu.gbeta, 2 * kU, 1e-9, what + " gbeta");  // sums of gy: the same terms
      CHECK(test::bit_identical(f.y_operand.to(Device::cpu()), f.y.to(Device::cpu()).to(DType::bf16)));
      const BiasActivationLayerNormGrads g16 =
          bias_activation_layernorm_backward(gyg, xg, bg, act, f, gammag, DType::bf16);
      CHECK(test::bit_identical(g16.gx.to(Device::cpu()), g.gx.to(Device::cpu()).to(DType::bf16)));
      CHECK(test::bit_identical(g16.gbias.to(Device::cpu()), g.gbias.to(Device::cpu())));
    }
}

// Against the CPU: the sum's bits (the same adds in the same order), then
// LayerNorm's bounds (residual + LayerNorm's); the tables' gradients sums of
// gs rows, within a sum's bound of those rows' errors; the same elements
// dropped. One launch forward; backward the rows with their sort keys, the
// sort, the pieces and the rows' sums: 3 launches and 1 sort.
TEST_CASE("cuda: the embeddings' front matches the CPU, in 1 launch forward and 3 and a sort backward", "[cuda]") {
  for (const int64_t d : {20, 300}) {
    const Front cpu = embeddings_front(d, 140, Device::cpu()), gpu = embeddings_front(d, 140, kGpu);
    for (const double p : {0.3, 0.0}) {
      const std::string what = "d " + std::to_string(d) + ", p " + std::to_string(p);
      INFO(what);
      const PhiloxStream stream{31, 9, Tensor()};
      const EmbeddingLayerNormResult want = embedding_layernorm(cpu.tables, cpu.ids, cpu.gamma, cpu.beta, 1e-5, p,
                                                                stream, true);
      synchronize(kGpu);
      reset_device_counters();
      const EmbeddingLayerNormResult got = embedding_layernorm(gpu.tables, gpu.ids, gpu.gamma, gpu.beta, 1e-5, p,
                                                               stream, true);
      CHECK(device_counters().kernel_launches == 1);
      CHECK(test::bit_identical(got.s.to(Device::cpu()), want.s));
      check_close(got.y, want.y, 8 * kU, 128 * kU, what + " y");
      CHECK(test::bit_identical(got.y_operand.to(Device::cpu()), got.y.to(Device::cpu()).to(DType::bf16)));
      const std::vector<bool> wanted{true, true, true};
      const std::vector<int64_t> rows{7, 2, 6};
      const EmbeddingLayerNormGrads gw = embedding_layernorm_backward(cpu.gy, want, cpu.gamma, p, stream, cpu.ids, rows,
                                                                      kFrontPadding, {Tensor(), Tensor(), Tensor()},
                                                                      wanted);
      synchronize(kGpu);
      reset_device_counters();
      const EmbeddingLayerNormGrads gg = embedding_layernorm_backward(gpu.gy, got, gpu.gamma, p, stream, gpu.ids, rows,
                                                                      kFrontPadding, {Tensor(), Tensor(), Tensor()},
                                                                      wanted);
      CHECK(device_counters().kernel_launches == 3);
      CHECK(device_counters().sorts == 1);
      // gs is LayerNorm's gradient (|gs| within 128u of the CPU's); a table's
      // row sums at most 15 of them (the position table: 3 each).
      for (size_t t = 0; t < 3; ++t) check_close(gg.tables[t], gw.tables[t], 8 * kU, 15 * 128 * kU, what + " table");
      check_close(gg.ggamma, gw.ggamma, 8 * kU, 128 * kU * 15, what + " ggamma");
      check_close(gg.gbeta, gw.gbeta, 2 * kU, 1e-9, what + " gbeta");  // sums of gy: the same terms
      if (p > 0) {
        const std::vector<double> a = got.y.to_doubles(), b = want.y.to_doubles();
        for (size_t i = 0; i < a.size(); ++i) CHECK((a[i] == 0) == (b[i] == 0));
      }
    }
  }
}

// The activations on the device use CUDA's erff/tanhf/expf, a few ulps from
// the host's: y within 8u relative plus 8u of |x + b| (the argument's scale);
// gx likewise times |gy|; gbias the sum of rows such terms.
// 1500 rows: the bias's sum in 24 chunks, added up by the block that
// completes them (last_of_group), its counters reset for each next call.
TEST_CASE("cuda: fused bias + activation matches the CPU, in 1 launch forward and 1 backward", "[cuda]") {
  uint64_t seed = 60;
  for (const UnaryOp act : {UnaryOp::gelu, UnaryOp::gelu_tanh, UnaryOp::relu, UnaryOp::tanh})
    for (const Shape& shape : {Shape{3, 17}, Shape{70, 130}, Shape{1500, 40}}) {
      const std::string what = std::string(unary_name(act)) + " " + shape_str(shape);
      const int64_t n = shape.back(), rows = shape_numel(shape) / n;
      Tensor x = rand_f32(shape, ++seed, -3, 3), b = rand_f32({n}, ++seed), gy = rand_f32(shape, ++seed);
      const Tensor y_cpu = bias_activation(x, b, act, DType::f32);
      const BiasActivationGrads g_cpu = bias_activation_backward(gy, x, b, act, DType::f32);
      synchronize(kGpu);
      reset_device_counters();
      const Tensor y = bias_activation(x.to(kGpu), b.to(kGpu), act, DType::f32);
      CHECK(device_counters().kernel_launches == 1);
      reset_device_counters();
      const BiasActivationGrads g = bias_activation_backward(gy.to(kGpu), x.to(kGpu), b.to(kGpu), act, DType::f32);
      CHECK(device_counters().kernel_launches == 1);
      check_close(y, y_cpu, 8 * kU, 8 * kU * 4, what + " y");
      check_close(g.gx, g_cpu.gx, 8 * kU, 8 * kU * 4, what + " gx");
      check_close(g.gbias, g_cpu.gbias, 8 * kU, 8 * kU * 4 * static_cast<double>(rows), what + " gbias");
      // The bf16 output is the device's f32 value rounded to nearest even.
      const Tensor y16 = bias_activation(x.to(kGpu), b.to(kGpu), act, DType::bf16);
      CHECK(test::bit_identical(y16.to(Device::cpu()), y.to(Device::cpu()).to(DType::bf16)));
    }
}

#endif
