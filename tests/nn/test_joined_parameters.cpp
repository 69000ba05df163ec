// Attention's Q, K and V parameters in one block of memory (nn::join_parameters):
// nothing a user sees changes (names, initial values, checkpoints), the
// stacked projection reads them as one view, and on the GPU that saves the
// launches that copied them together each forward.
#include "autograd/ops.h"
#include "nn/bert.h"
#include "pe/registry.h"
#include "tensor/device_runtime.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {

Tensor rand_f32(const Shape& shape, uint64_t seed) { return test::random_tensor(shape, seed, DType::f32, -1, 1); }

// Three [4, 6] weights and [4] biases: `joined` in one block each (as
// SelfAttention keeps them), else three separate tensors holding the same values.
struct Projections {
  std::vector<Var> weights, biases;
};
Projections projections(bool joined, Device device) {
  const Tensor w = rand_f32({12, 6}, 1).to(device), b = rand_f32({12}, 2).to(device);
  Projections p;
  for (int64_t i = 0; i < 3; ++i) {
    Tensor wi = w.slice(0, 4 * i, 4 * i + 4), bi = b.slice(0, 4 * i, 4 * i + 4);
    p.weights.emplace_back(joined ? wi : wi.clone(), true);
    p.biases.emplace_back(joined ? bi : bi.clone(), true);
  }
  return p;
}

struct Result {
  Tensor y, gx;
  std::vector<Tensor> gw, gb;
};
Result stacked_product(const Projections& p, const Tensor& x, const Tensor& gy) {
  Var xv(x, true);
  Var y = linear_stacked(xv, p.weights, p.biases);
  y.backward(gy);
  Result r{y.value(), xv.grad(), {}, {}};
  for (size_t i = 0; i < 3; ++i) {
    r.gw.push_back(p.weights[i].grad());
    r.gb.push_back(p.biases[i].grad());
  }
  return r;
}

void check_equal(const Result& a, const Result& b) {
  CHECK(a.y.to_doubles() == b.y.to_doubles());
  CHECK(a.gx.to_doubles() == b.gx.to_doubles());
  for (size_t i = 0; i < 3; ++i) {
    CHECK(a.gw[i].to_doubles() == b.gw[i].to_doubles());
    CHECK(a.gb[i].to_doubles() == b.gb[i].to_doubles());
  }
}

}  // namespace

TEST_CASE("SelfAttention keeps Q, K and V in one block, with the names and initial values of three", "[nn]") {
  const nn::BertConfig c = test::tiny_bert_config(13, 8, 2, 2, 12, 9);
  nn::BertModel model(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), /*with_pooler=*/false);
  nn::initialize(model, 7);
  for (const nn::EncoderLayer* layer : model.encoder.layers) {
    const nn::SelfAttention& self = layer->attention.self;
    const Tensor joined_w = Tensor::joined_rows(
        {self.query.weight.var.value(), self.key.weight.var.value(), self.value.weight.var.value()});
    const Tensor joined_b =
        Tensor::joined_rows({self.query.bias->var.value(), self.key.bias->var.value(), self.value.bias->var.value()});
    CHECK(joined_w.shape() == Shape{24, 8});
    CHECK(joined_b.shape() == Shape{24});
  }
  // Each drawn from its own name's stream, as before they were joined.
  for (const auto& [name, p] : model.named_parameters()) {
    if (name.find(".attention.self.") == std::string::npos || name.find("weight") == std::string::npos) continue;
    INFO(name);
    Tensor alone = Tensor::zeros(p->var.shape());
    normal_(alone, 0, c.initializer_range, 7, nn::init_stream(name));
    CHECK(p->var.value().to_doubles() == alone.to_doubles());
    CHECK(p->var.name() == "weight");
  }
  // Module::to_dtype gives each parameter a tensor of its own: no longer joined.
  const nn::SelfAttention& self = model.encoder.layers[0]->attention.self;
  model.to_dtype(DType::f64);
  CHECK(!Tensor::joined_rows({self.query.weight.var.value(), self.key.weight.var.value()}).defined());
}

TEST_CASE("the stacked Q/K/V product gives the same values and gradients from joined and separate parameters",
          "[nn]") {
  const Tensor x = rand_f32({2, 5, 6}, 3), gy = rand_f32({2, 5, 12}, 4);
  check_equal(stacked_product(projections(true, Device::cpu()), x, gy),
              stacked_product(projections(false, Device::cpu()), x, gy));
}

// Under bf16 the forward writes x's bf16 rounding, the stacked bf16 weight
// and the biases broadcast into the output: 3 launches from joined
// parameters, 7 (three weight casts, three bias copies) from separate ones.
TEST_CASE("cuda: the stacked Q/K/V product from joined parameters takes 3 launches instead of 7, same bits",
          "[cuda]") {
  const Device gpu = Device::cuda(0);
  MatmulPrecisionScope bf16(MatmulPrecision::bf16);
  const Tensor x = rand_f32({2, 5, 6}, 3).to(gpu), gy = rand_f32({2, 5, 12}, 4).to(gpu);
  Result r[2];
  int64_t launches[2];
  for (const bool joined : {true, false}) {
    const Projections p = projections(joined, gpu);
    synchronize(gpu);
    reset_device_counters();
    linear_stacked(Var(x), p.weights, p.biases);
    launches[joined] = device_counters().kernel_launches;
    r[joined] = stacked_product(p, x, gy);
  }
  CHECK(launches[true] == 3);
  CHECK(launches[false] == 7);
  check_equal(r[true], r[false]);
}
