// The relative-position kernels (tensor/cuda/relative.cu), the banded ones too, against their CPU
// references (tensor/cpu/relative.cpp, themselves tested against naive loops
// in tests/tensor/test_relative_ops.cpp), and the whole relative family
// (rpe_shaw, rpe_sin, rpe_sin_learnable, xlnet, huang_m1..m4) through one
// attention sublayer on CUDA against the CPU, forward and backward, in f32.
// Runs only where a GPU is (`ordo_tests --require-gpu "[cuda]"`).
#ifdef ORDO_HAS_CUDA

#include "tensor/device_runtime.h"
#include "tests/pe/score_term_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;

namespace {

const Device kGpu = Device::cuda(0);

Tensor index(int64_t B, int64_t L, int64_t J, int64_t rows, uint64_t seed) {
  std::vector<double> u = ordo::test::random_values(B * L * J, seed, 0, 1);
  std::vector<int64_t> v;
  for (double x : u) v.push_back(std::min<int64_t>(rows - 1, static_cast<int64_t>(x * static_cast<double>(rows))));
  return Tensor::from_vector(v, {B, L, J});
}

Tensor on_gpu(const Tensor& t) { return t.to(kGpu); }
Tensor back(const Tensor& t) { return t.to(Device::cpu()); }

// The attention sublayer with the variant on `device`: output and the
// gradients of sum(w * out) for x and every parameter (attention's and the
// variant's), parameters drawn by nn::initialize (Philox: the same on both
// devices) and moved off their starting values.
std::vector<Tensor> attention_run(const nn::BertConfig& c, Device device, const Tensor& positions) {
  nn::SelfAttention attention(c, device);
  auto pe = pe::make_position_encoding(c, device);
  nn::initialize(attention, 3);
  nn::initialize(*pe, 4);
  uint64_t seed = 50;
  for (nn::Module* m : {static_cast<nn::Module*>(&attention), static_cast<nn::Module*>(pe.get())})
    for (auto& [name, p] : m->named_parameters())
      p->var = Var(add(p->var.value(), ordo::test::random_tensor(p->var.shape(), seed++, DType::f32, -0.2, 0.2).to(device)),
                   true, name);
  const int64_t B = positions.size(0), L = positions.size(1);
  std::vector<int64_t> keep(static_cast<size_t>(B * L), 1);
  keep.back() = 0;
  Tensor mask = nn::attention_bias(Tensor::from_vector(keep, {B, L}).to(device), B, L, false, DType::f32, device);
  Var x(ordo::test::random_tensor({B, L, c.hidden_size}, 7, DType::f32).to(device), true);
  Tensor pos = positions.to(device);
  nn::Context ctx = nn::Context::eval();
  Var out = attention.forward(x, Var(mask), *pe, 1, pos, Tensor(), ctx, nullptr);
  sum(mul(out, Var(ordo::test::random_tensor(out.shape(), 8, DType::f32).to(device)))).backward();
  std::vector<Tensor> r{back(out.value()), back(x.grad())};
  for (nn::Module* m : {static_cast<nn::Module*>(&attention), static_cast<nn::Module*>(pe.get())})
    for (auto& [name, p] : m->named_parameters()) r.push_back(p->var.grad().defined() ? back(p->var.grad()) : Tensor());
  return r;
}

}  // namespace

TEST_CASE("relative_gather, relative_scatter, relative_product and its backward on CUDA agree with the CPU",
          "[cuda][ops][relative]") {
  const int64_t B = 3, H = 4, L = 17, J = 13, D = 16, R = 29;
  Tensor idx = index(B, L, J, R, 1);
  Tensor x = ordo::test::random_tensor({B, H, L, R}, 2, DType::f32);
  Tensor g = ordo::test::random_tensor({B, H, L, J}, 3, DType::f32);
  ordo::test::require_close(back(relative_gather(on_gpu(x), on_gpu(idx))), relative_gather(x, idx), 0, 0, "gather");
  ordo::test::require_close(back(relative_scatter(on_gpu(g), on_gpu(idx), R)), relative_scatter(g, idx, R), 1e-5, 1e-6,
                            "scatter");
  Tensor q = ordo::test::random_tensor({B, H, L, D}, 4, DType::f32), k = ordo::test::random_tensor({B, H, J, D}, 5, DType::f32);
  Tensor a = ordo::test::random_tensor({H, R, D}, 6, DType::f32);
  ordo::test::require_close(back(relative_product(on_gpu(q), on_gpu(k), on_gpu(a), on_gpu(idx), 0.25)),
                            relative_product(q, k, a, idx, 0.25), 1e-5, 1e-6, "product");
  RelativeProductGrads cpu = relative_product_backward(g, q, k, a, idx, 0.25, true, true, true);
  RelativeProductGrads gpu =
      relative_product_backward(on_gpu(g), on_gpu(q), on_gpu(k), on_gpu(a), on_gpu(idx), 0.25, true, true, true);
  ordo::test::require_close(back(gpu.gq), cpu.gq, 1e-4, 1e-5, "gq");
  ordo::test::require_close(back(gpu.gk), cpu.gk, 1e-4, 1e-5, "gk");
  ordo::test::require_close(back(gpu.ga), cpu.ga, 1e-4, 1e-5, "ga");
  // Heads wider than a warp's 32 lanes and rows of more than 32 keys (the
  // forward's warp takes 32 keys at a time, its lanes over d).
  {
    const int64_t L2 = 5, J2 = 45, D2 = 40;
    Tensor idx2 = index(2, L2, J2, R, 11);
    Tensor q2 = ordo::test::random_tensor({2, H, L2, D2}, 12, DType::f32);
    Tensor k2 = ordo::test::random_tensor({2, H, J2, D2}, 13, DType::f32);
    Tensor a2 = ordo::test::random_tensor({H, R, D2}, 14, DType::f32);
    ordo::test::require_close(back(relative_product(on_gpu(q2), on_gpu(k2), on_gpu(a2), on_gpu(idx2), 0.5)),
                              relative_product(q2, k2, a2, idx2, 0.5), 1e-5, 1e-6, "product, 40 wide, 45 keys");
  }
  // An index outside the table is an error on the device too.
  Tensor bad = Tensor::from_vector(std::vector<int64_t>(static_cast<size_t>(B * L * J), R), {B, L, J});
  // The kernel reports it at the next synchronisation, as every device index error (tests/tensor/test_cuda_indexing.cpp).
  Tensor gathered = relative_gather(on_gpu(x), on_gpu(bad));
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("index out of range") && Catch::Contains("relative_gather"));
}

TEST_CASE("band_scores, band_apply and band_table_grad on CUDA agree with the CPU", "[cuda][ops][relative]") {
  const int64_t B = 2, H = 3, L = 9, D = 8;
  Tensor x = ordo::test::random_tensor({B, H, L, D}, 9, DType::f32);
  Tensor p = ordo::test::random_tensor({B, H, L, L}, 10, DType::f32);
  for (int64_t Ht : {int64_t{1}, H}) {
    CAPTURE(Ht);
    Tensor t = ordo::test::random_tensor({Ht, 2 * L - 1, D}, 11, DType::f32);
    ordo::test::require_close(back(band_scores(on_gpu(x), on_gpu(t))), band_scores(x, t), 1e-5, 1e-6, "scores");
    ordo::test::require_close(back(band_apply(on_gpu(p), on_gpu(t))), band_apply(p, t), 1e-5, 1e-6, "apply");
    ordo::test::require_close(back(band_table_grad(on_gpu(p), on_gpu(x), Ht)), band_table_grad(p, x, Ht), 1e-5, 1e-6,
                              "table gradient");
  }
}

TEST_CASE("the relative family through attention on CUDA agrees with the CPU, forward and backward",
          "[cuda][pe][relative]") {
  Tensor positions = random_positions(2, 9, 11, 0, 16);
  for (const char* text : {R"({"pe": "rpe_shaw", "o": {"value": true, "share": "none"}})",
                           R"({"pe": "rpe_shaw", "o": {"clip": 3}})", R"({"pe": "rpe_sin", "o": {}})",
                           R"({"pe": "rpe_sin_learnable", "o": {"share": "heads"}})", R"({"pe": "xlnet", "o": {}})",
                           R"({"pe": "huang_m1", "o": {}})", R"({"pe": "huang_m2", "o": {"share": "none"}})",
                           R"({"pe": "huang_m3", "o": {}})", R"({"pe": "huang_m3", "o": {"share": "none"}})",
                           R"({"pe": "huang_m4", "o": {}})"}) {
    json::Value v = json::parse(text);
    nn::BertConfig c = tiny_config(v["pe"].as_string(), v["o"]);
    std::vector<Tensor> cpu = attention_run(c, Device::cpu(), positions);
    std::vector<Tensor> gpu = attention_run(c, kGpu, positions);
    INFO(text);
    REQUIRE(cpu.size() == gpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      INFO("result " << i << " (0: output, 1: x's gradient, then parameters' gradients)");
      REQUIRE(cpu[i].defined() == gpu[i].defined());
      if (cpu[i].defined()) ordo::test::require_close(gpu[i], cpu[i], 1e-4, 1e-5);
    }
  }
}

#endif  // ORDO_HAS_CUDA
