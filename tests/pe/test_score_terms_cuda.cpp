// The score-term, sinusoid, rotary and per-head segment variants on CUDA
// against the same variants on the CPU, forward and backward, in f32. They
// are compositions of ops each tested against the CPU in
// tests/tensor/test_cuda*.cpp; this checks the compositions (the i64 index
// arithmetic, the lookups, the broadcasts) run on the device and agree.
// Runs only where a GPU is (`ordo_tests --require-gpu "[cuda]"`).
#ifdef ORDO_HAS_CUDA

#include "tests/pe/score_term_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;

namespace {

const Device kGpu = Device::cuda(0);

// A variant's contribution to one attention call, on `device`, with its
// parameters drawn by nn::initialize (Philox: the same values on both
// devices); also the gradient of sum(weights * output) for every parameter.
struct Outcome {
  Tensor value;
  std::vector<Tensor> grads;
};

Outcome run(const nn::BertConfig& c, Device device, const Tensor& positions, const Tensor& segments,
            const std::string& hook) {
  auto pe = pe::make_position_encoding(c, device);
  nn::initialize(*pe, 17);
  for (auto& [name, p] : pe->named_parameters())  // away from 0 where a table starts there (offsets)
    p->var = Var(add(p->var.value(), ordo::test::random_tensor(p->var.shape(), 3, DType::f32, -0.01, 0.01).to(device)),
                 true, name);
  Tensor pos = positions.to(device), seg = segments.to(device);
  nn::Context ctx = nn::Context::eval();
  nn::AttentionState s{1, c.num_attention_heads, c.head_dim(), &pos, &seg, &ctx, DType::f32};
  Var q(ordo::test::random_tensor({pos.size(0), c.num_attention_heads, pos.size(1), c.head_dim()}, 5, DType::f32).to(device), true);
  Var k(ordo::test::random_tensor({pos.size(0), c.num_attention_heads, pos.size(1), c.head_dim()}, 6, DType::f32).to(device), true);
  const Var q0 = q, k0 = k;
  Var out;
  if (hook == "score_bias") out = pe->score_bias(s, q, k);
  if (hook == "positional_weights") out = pe->positional_weights(s);
  if (hook == "input_embedding") out = pe->input_embedding(pos, ctx);
  if (hook == "rotate") {
    pe->rotate(s, q, k);
    out = matmul(q, k, false, true);
  }
  REQUIRE(out.defined());
  Tensor w = ordo::test::random_tensor(out.shape(), 9, out.dtype()).to(device);
  if (out.requires_grad()) sum(mul(out, Var(w))).backward();
  Outcome o{out.value().contiguous().to(Device::cpu()), {}};
  // A table of another layer than s.layer's gets no gradient (undefined on both devices).
  for (auto& [name, p] : pe->named_parameters())
    o.grads.push_back(p->var.grad().defined() ? p->var.grad().to(Device::cpu()) : Tensor());
  if (hook == "rotate") {  // the rotation's gradient reaches the unrotated q and k
    o.grads.push_back(q0.grad().to(Device::cpu()));
    o.grads.push_back(k0.grad().to(Device::cpu()));
  }
  return o;
}

void compare(const std::string& pe, const json::Value& options, const std::string& hook, const std::string& segment = "input") {
  nn::BertConfig c = tiny_config(pe, options);
  c.max_position_embeddings = 64;  // rel_scalar's table then spans |r| <= 63
  c.segment = segment;
  Tensor positions = random_positions(2, 9, 3, 0, 60);
  Tensor segments = random_positions(2, 9, 4, 0, 2);
  Outcome cpu = run(c, Device::cpu(), positions, segments, hook);
  Outcome gpu = run(c, kGpu, positions, segments, hook);
  INFO(pe << " " << json::dump(options) << " " << hook);
  // f32 on both sides: exp/sin/cos and the products differ in the last bits;
  // a wrong index or a lost term is off by the size of the values.
  ordo::test::require_close(gpu.value, cpu.value, 1e-4, 1e-5, "value");
  REQUIRE(gpu.grads.size() == cpu.grads.size());
  for (size_t i = 0; i < cpu.grads.size(); ++i)
    if (cpu.grads[i].defined()) ordo::test::require_close(gpu.grads[i], cpu.grads[i], 1e-4, 1e-4, "gradient");
}

}  // namespace

TEST_CASE("score-term variants on CUDA agree with the CPU, forward and backward", "[cuda][pe]") {
  compare("t5_bias", json::Value::object(), "score_bias");
  compare("rel_scalar", json::Value::object(), "score_bias");
  compare("abs_scalar", json::parse(R"({"max_position": 64})"), "score_bias");
  compare("alibi", json::Value::object(), "score_bias");
  compare("alibi", json::parse(R"({"learned": true})"), "positional_weights");
  compare("attenuated", json::parse(R"({"w": 0.05, "s": 0.5})"), "score_bias");
  compare("attenuated", json::parse(R"({"learned": true, "share": "heads"})"), "positional_weights");  // A*-s's matrix
  compare("attenuated", json::parse(R"({"learned": true, "learn": "kernel"})"), "score_bias");
  compare("rope", json::Value::object(), "rotate");
  compare("rope", json::parse(R"({"pairing": "half"})"), "rotate");
  compare("ape_sin", json::Value::object(), "input_embedding");
  compare("ape_sin_learnable", json::Value::object(), "input_embedding");
  compare("rel_scalar", json::Value::object(), "score_bias", "per_head");
}

#endif  // ORDO_HAS_CUDA
