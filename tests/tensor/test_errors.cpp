// Shape, dtype and device mistakes: each is an ordo::Error that names the op,
// the argument and what was expected.
#include "autograd/ops.h"
#include "tensor/device_runtime.h"
#include "tensor/product_onto.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Contains;
using ordo::test::f64;
using ordo::test::i64;

TEST_CASE("shape mistakes name the shapes", "[errors]") {
  Tensor a = f64({1, 2, 3, 4, 5, 6}, {2, 3}), b = f64({1, 2}, {2});
  CHECK_THROWS_WITH(add(a, b), Contains("[2, 3]") && Contains("[2]") && Contains("broadcast"));
  CHECK_THROWS_WITH(matmul(a, a), Contains("matmul") && Contains("inner sizes differ") && Contains("3 vs 2"));
  CHECK_THROWS_WITH(matmul(b, b), Contains("at least 2 dims"));
  CHECK_THROWS_WITH(layernorm(a, b, b, 1e-5), Contains("layernorm: gamma has shape [2], expected [3]"));
  CHECK_THROWS_WITH(softmax(a, f64({0, 0}, {2})), Contains("mask of shape [2]"));
  CHECK_THROWS_WITH(cross_entropy(a, i64({0, 1, 2}, {3})), Contains("targets has shape [3], expected [2]"));
  CHECK_THROWS_WITH(cross_entropy(a, i64({0, 1}, {2}), -100, b), Contains("cross_entropy: bias has shape [2], expected [3]"));
  CHECK_THROWS_WITH(sum(a, {2}), Contains("sum: axis 2 is out of range"));
  CHECK_THROWS_WITH(sum(a, {1, -1}), Contains("listed twice"));
  CHECK_THROWS_WITH(max(Tensor::zeros({2, 0}, DType::f64), {1}), Contains("empty axis"));
  CHECK_THROWS_WITH(var(a, {1}, false, 3), Contains("correction 3"));
  CHECK_THROWS_WITH(gather(a, 1, i64({0, 1}, {2})), Contains("gather: index has 1 dims"));
  CHECK_THROWS_WITH(adamw_(a, b, a, a, AdamWStep{}), Contains("adamw_") && Contains("[2]"));
}

TEST_CASE("dtype mistakes name the dtypes", "[errors]") {
  Tensor a = f64({1, 2}, {2});
  Tensor a32 = a.to(DType::f32);
  CHECK_THROWS_WITH(add(a, a32), Contains("different dtypes (f64 and f32)"));
  CHECK_THROWS_WITH(exp(i64({1}, {1})), Contains("exp: x has dtype i64, expected f32 or f64"));
  CHECK_THROWS_WITH(embedding(f64({1, 2}, {1, 2}), a), Contains("embedding: index has dtype f64, expected i64"));
  CHECK_THROWS_WITH(cross_entropy(f64({1, 2}, {1, 2}), f64({0}, {1})), Contains("targets has dtype f64, expected i64"));
  CHECK_THROWS_WITH(cross_entropy(f64({1, 2}, {1, 2}), i64({0}, {1}), -100, a32), Contains("cross_entropy") && Contains("f32"));
  CHECK_THROWS_WITH(add(Tensor::zeros({1}, DType::u8), Tensor::zeros({1}, DType::u8)), Contains("u8 is not supported"));
}

TEST_CASE("bad values are refused before any kernel runs", "[errors]") {
  Tensor a = f64({1, 2}, {2});
  CHECK_THROWS_WITH(dropout(a, 1.0, 0, 0), Contains("dropout: p must be in [0, 1), got 1"));
  CHECK_THROWS_WITH(layernorm(f64({1, 2}, {1, 2}), a, a, 0), Contains("eps must be positive"));
  CHECK_THROWS_WITH(uniform_(a, 1, 0, 0, 0), Contains("low 1 is above high 0"));
  CHECK_THROWS_WITH(normal_(a.transpose(0, 0).expand({2, 2}), 0, 1, 0, 0), Contains("contiguous"));
  AdamWStep s;
  s.step = 0;
  CHECK_THROWS_WITH(adamw_(a, a, a.clone(), a.clone(), s), Contains("step counts from 1"));
  CHECK_THROWS_WITH(index_select(f64({1, 2, 3}, {3}), 0, i64({3}, {1})), Contains("index 3") && Contains("size 3"));
}

TEST_CASE("device mistakes name the devices", "[errors]") {
  if (!cuda_available()) {
    // Without a GPU a CUDA tensor cannot exist; the mistake shows at .to().
    CHECK_THROWS_AS(f64({1}, {1}).to(Device::cuda()), Error);
    return;
  }
  Tensor cpu = Tensor::ones({2}), gpu = Tensor::ones({2}).to(Device::cuda());
  CHECK_THROWS_WITH(add(cpu, gpu), Contains("different devices (cpu and cuda:0)"));
  CHECK_THROWS_WITH(exp(Tensor::ones({2}, DType::f64).to(Device::cuda())), Contains("f64 is computed on the CPU only"));
}

TEST_CASE("autograd mistakes", "[errors]") {
  Var x(f64({1, 2}, {2}), true);
  CHECK_THROWS_WITH(binary(BinaryOp::lt, x, x), Contains("comparison and has no gradient"));
  CHECK_THROWS_WITH(Var().value(), Contains("undefined Var"));
}

TEST_CASE("a product onto a tensor of another shape, and stacked biases that miss the weight's rows, are refused",
          "[tensor][errors]") {
  const Tensor a = Tensor::ones({2, 3}, DType::f32), b = Tensor::ones({3, 4}, DType::f32);
  CHECK_THROWS_WITH(matmul_onto(Tensor::zeros({2, 5}, DType::f32), a, b),
                    Contains("matmul") && Contains("added onto is [2, 5]") && Contains("the product is [2, 4]"));
  CHECK_THROWS_WITH(matmul_onto(Tensor::zeros({4, 2}, DType::f32).transpose(0, 1), a, b), Contains("(strided)"));
  CHECK_THROWS_WITH(linear_stacked(a, Tensor::ones({5, 3}, DType::f32),
                                   {Tensor::zeros({2}, DType::f32), Tensor::zeros({2}, DType::f32)}),
                    Contains("the biases have 4 outputs") && Contains("[5, 3]"));
}
