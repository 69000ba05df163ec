// The multi-tensor AdamW step (tensor/ops.h adamw_multi_; nn::AdamW with
// fused = true): the global norm, torch's clip factor and every parameter's
// update in two kernels, against AdamW written out here per element in
// f64 from Loshchilov & Hutter / PyTorch's formula, on fresh random values
// whose tensors cross the chunk boundaries; on CUDA (emulated in CI) too,
// with the launches and host reads it makes; and nn::AdamW's fused step
// against its per-tensor reference path.
#include <cmath>

#include "autograd/ops.h"
#include "model/model.h"
#include "nn/optim.h"
#include "tensor/device_runtime.h"
#include "tests/helpers.h"
#include "tests/nn/optim_steps.h"

using namespace ordo;

namespace {

constexpr double kU = 0x1p-24;  // f32's unit roundoff

struct Case {
  std::vector<std::vector<double>> p, g, m, v;
  std::vector<bool> decay;
};

// Tensors of sizes around the 4096-element chunks: a chunk and one more, a
// single element, several chunks and a tail, exactly one chunk. Moments
// start non-zero (v > 0), as after earlier steps.
Case random_case(const std::vector<int64_t>& sizes, uint64_t seed) {
  Case c;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const uint64_t s = seed + 10 * i;
    c.p.push_back(test::random_values(sizes[i], s, -1, 1));
    c.g.push_back(test::random_values(sizes[i], s + 1, -0.5, 0.5));
    c.m.push_back(test::random_values(sizes[i], s + 2, -0.05, 0.05));
    c.v.push_back(test::random_values(sizes[i], s + 3, 1e-4, 4e-3));
    c.decay.push_back(i % 2 == 0);
  }
  return c;
}

std::vector<Tensor> tensors(const std::vector<std::vector<double>>& parts, DType dtype, Device device) {
  std::vector<Tensor> out;
  for (const auto& v : parts)
    out.push_back(Tensor::from_vector(v, {static_cast<int64_t>(v.size())}).to(dtype).to(device));
  return out;
}

struct Settings {
  double lr = 3e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-6, weight_decay = 0.01, max_norm = 1.0;
  int64_t step = 3;
};

// AdamW by hand in f64, every element, and per element the bound on an f32
// implementation's error: each f32 operation rounds once (u relative), so
// each quantity is within a few u of the terms that make it, carried
// through the update's formula. Returns the norm.
double adamw_by_hand(Case& c, const Settings& s, Case& bound) {
  double total = 0;
  for (const auto& g : c.g)
    for (double x : g) total += x * x;
  const double norm = std::sqrt(total);
  const double clip = s.max_norm > 0 && norm > s.max_norm ? s.max_norm / (norm + 1e-6) : 1.0;
  const double ib1 = 1 / (1 - std::pow(s.beta1, s.step)), isb2 = 1 / std::sqrt(1 - std::pow(s.beta2, s.step));
  bound = c;
  for (size_t t = 0; t < c.p.size(); ++t) {
    const double wd = c.decay[t] ? s.weight_decay : 0;
    for (size_t i = 0; i < c.p[t].size(); ++i) {
      const double g = c.g[t][i] * clip, p0 = c.p[t][i];
      const double m_terms = s.beta1 * std::fabs(c.m[t][i]) + (1 - s.beta1) * std::fabs(g);
      const double v_terms = s.beta2 * c.v[t][i] + (1 - s.beta2) * g * g;
      const double m = s.beta1 * c.m[t][i] + (1 - s.beta1) * g;
      const double v = s.beta2 * c.v[t][i] + (1 - s.beta2) * g * g;
      const double denominator = std::sqrt(v) * isb2 + s.eps;
      const double update = m * ib1 / denominator;
      // m and v: the clip factor's, the product's and two sums' roundings.
      const double dm = 6 * kU * m_terms, dv = 8 * kU * v_terms;
      // the update: m's error over the denominator, sqrt(v)'s through it, and
      // its own three roundings.
      const double dupdate = dm * ib1 / denominator + std::fabs(update) * (dv / (2 * v) * std::sqrt(v) * isb2 / denominator) +
                             4 * kU * std::fabs(update);
      c.p[t][i] = p0 - s.lr * (wd * p0 + update);
      c.m[t][i] = m;
      c.v[t][i] = v;
      bound.p[t][i] = s.lr * dupdate + 4 * kU * (std::fabs(p0) + s.lr * (wd * std::fabs(p0) + std::fabs(update)));
      bound.m[t][i] = dm;
      bound.v[t][i] = dv;
    }
  }
  return norm;
}

// One multi-tensor step of `c` on `device` in `dtype` (writing `rounded`,
// adamw_tensors' roundings): the norm it computed, and p, m, v after it (in c).
double fused_step(Case& c, const Settings& s, DType dtype, Device device, const std::vector<Tensor>& rounded = {}) {
  std::vector<Tensor> p = tensors(c.p, dtype, device), g = tensors(c.g, dtype, device),
                      m = tensors(c.m, dtype, device), v = tensors(c.v, dtype, device);
  const AdamWTensors t = adamw_tensors(p, g, m, v, c.decay, rounded);
  const Tensor norm_and_clip = global_norm_and_clip(t, s.max_norm);
  Tensor schedule = Tensor::empty({3}, DType::f64, device);
  write_adamw_schedule(schedule, s.lr, s.beta1, s.beta2, s.step);
  AdamWConstants k;
  k.beta1 = s.beta1;
  k.beta2 = s.beta2;
  k.eps = s.eps;
  k.weight_decay = s.weight_decay;
  adamw_multi_(t, norm_and_clip, schedule, k);
  for (size_t i = 0; i < c.p.size(); ++i) {
    c.p[i] = p[i].to_doubles();
    c.m[i] = m[i].to_doubles();
    c.v[i] = v[i].to_doubles();
  }
  return norm_and_clip.to_doubles()[0];
}

void require_within(const Case& got, const Case& want, const Case& bound, const char* where) {
  INFO(where);
  int violations = 0;
  for (size_t t = 0; t < got.p.size(); ++t)
    for (size_t i = 0; i < got.p[t].size(); ++i) {
      const bool ok = std::fabs(got.p[t][i] - want.p[t][i]) <= bound.p[t][i] &&
                      std::fabs(got.m[t][i] - want.m[t][i]) <= bound.m[t][i] &&
                      std::fabs(got.v[t][i] - want.v[t][i]) <= bound.v[t][i];
      if (!ok && violations++ < 3)
        UNSCOPED_INFO("tensor " << t << " [" << i << "]: p " << got.p[t][i] << " vs " << want.p[t][i] << " (bound "
                                << bound.p[t][i] << "), m " << got.m[t][i] << " vs " << want.m[t][i] << ", v "
                                << got.v[t][i] << " vs " << want.v[t][i]);
    }
  CHECK(violations == 0);
}

const std::vector<int64_t> kSizes = {4097, 1, 9000, 37, 4096};

// x rounded to bf16 (8 significant bits), to nearest, ties to even: written
// here from the format, not with the library's conversion. For the normal
// numbers the tests give it.
double bf16_nearest_even(double x) {
  if (x == 0) return x;
  int e = 0;
  std::frexp(x, &e);  // |x| = f 2^e, f in [0.5, 1): the last of 8 bits is 2^(e - 8)
  const double ulp = std::ldexp(1.0, e - 8);
  return std::nearbyint(x / ulp) * ulp;  // the default rounding mode: to nearest, ties to even
}

constexpr double kSentinel = 7.0;  // exact in bf16; where nothing should be written

// One multi-tensor step (f32 on `device`) that also writes the roundings of
// tensors 0, 2 and 4 into views of one bf16 block (the others and the gaps
// between them left at kSentinel). Returns the block on the host, and p, m
// and v after the step in c.
std::vector<double> step_with_roundings(Case& c, const Settings& s, Device device, std::vector<int64_t>& offsets) {
  int64_t total = 0;
  for (const auto& values : c.p) {
    offsets.push_back(total);
    total += static_cast<int64_t>(values.size()) + 3;  // a gap after each
  }
  const Tensor block = Tensor::full({total}, kSentinel, DType::bf16, device);
  std::vector<Tensor> rounded(c.p.size());
  for (size_t i = 0; i < c.p.size(); i += 2)
    rounded[i] = block.slice(0, offsets[i], offsets[i] + static_cast<int64_t>(c.p[i].size()));
  reset_device_counters();
  fused_step(c, s, DType::f32, device, rounded);
  if (device.is_cuda()) CHECK(device_counters().kernel_launches == 2);  // the roundings in the update's launch
  return block.to_doubles();
}

// The block holds each rounded tensor's updated values rounded to bf16, and
// kSentinel everywhere else.
void require_roundings(const Case& c, const std::vector<double>& block, const std::vector<int64_t>& offsets) {
  std::vector<bool> written(block.size(), false);
  int wrong = 0;
  for (size_t t = 0; t < c.p.size(); t += 2)
    for (size_t i = 0; i < c.p[t].size(); ++i) {
      const size_t at = static_cast<size_t>(offsets[t]) + i;
      written[at] = true;
      if (block[at] != bf16_nearest_even(c.p[t][i]) && wrong++ < 3)
        UNSCOPED_INFO("tensor " << t << " [" << i << "]: " << block[at] << ", want " << bf16_nearest_even(c.p[t][i]));
    }
  for (size_t at = 0; at < block.size(); ++at)
    if (!written[at] && block[at] != kSentinel && wrong++ < 6) UNSCOPED_INFO("written outside: [" << at << "]");
  CHECK(wrong == 0);
}

// test::train_tiny under bf16 products, with clipping, the norm not read.
test::TinyTraining train_bf16(Device device, int steps, bool fused, bool keep) {
  return test::train_tiny(device, steps, /*read_norm=*/false, fused, keep, MatmulPrecision::bf16);
}

void require_same_training(const test::TinyTraining& a, const test::TinyTraining& b) {
  REQUIRE(a.losses.size() == b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i) CHECK(a.losses[i].item() == b.losses[i].item());
  REQUIRE(a.params.size() == b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) CHECK(a.params[i].to_doubles() == b.params[i].to_doubles());
}

// The kept rounding is the weights' block rounded, element for element.
void require_current(const RoundedWeights& kept) {
  REQUIRE(kept.weights.defined());
  const std::vector<double> w = kept.weights.to_doubles(), r = kept.rounding.to_doubles();
  REQUIRE(w.size() == r.size());
  int wrong = 0;
  for (size_t i = 0; i < w.size(); ++i) wrong += r[i] != bf16_nearest_even(w[i]);
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("multi-tensor AdamW: norm, clip factor and updates are AdamW's, element by element", "[tensor][optim]") {
  for (const double max_norm : {1.0, 0.0, 1e6}) {  // clipping acts; no clipping; a limit above the norm
    INFO("max_norm " << max_norm);
    Settings s;
    s.max_norm = max_norm;
    Case want = random_case(kSizes, 40), bound;
    Case f64_case = want, f32_case = want;
    const double norm = adamw_by_hand(want, s, bound);
    // f64: the same formula rounding at 2^-53, as the reference here does:
    // twice the f32 bound scaled from 2^-24 to 2^-53.
    CHECK(fused_step(f64_case, s, DType::f64, Device::cpu()) == Approx(norm).epsilon(1e-14));
    Case f64_bound = bound;
    for (auto* part : {&f64_bound.p, &f64_bound.m, &f64_bound.v})
      for (auto& v : *part)
        for (double& x : v) x *= 0x1p-28;
    require_within(f64_case, want, f64_bound, "f64 on the CPU");
    // f32: the gradients rounded to f32 (u each), the norm summed in f64 and rounded once.
    CHECK(std::fabs(fused_step(f32_case, s, DType::f32, Device::cpu()) - norm) <= 2 * kU * norm);
    require_within(f32_case, want, bound, "f32 on the CPU");
  }
}

TEST_CASE("multi-tensor AdamW: a non-finite gradient updates nothing", "[tensor][optim]") {
  Case c = random_case({5, 4100}, 60), before = c;
  c.g[1][4099] = std::nan("");
  Settings s;
  CHECK(std::isnan(fused_step(c, s, DType::f32, Device::cpu())));
  for (size_t t = 0; t < c.p.size(); ++t)
    for (size_t i = 0; i < c.p[t].size(); ++i) {
      CHECK(c.p[t][i] == static_cast<float>(before.p[t][i]));
      CHECK(c.m[t][i] == static_cast<float>(before.m[t][i]));
      CHECK(c.v[t][i] == static_cast<float>(before.v[t][i]));
    }
}

TEST_CASE("multi-tensor AdamW writes the updated parameters' bf16 roundings where asked, nothing elsewhere",
          "[tensor][optim]") {
  Settings s;
  Case c = random_case(kSizes, 45), want = c, bound;
  std::vector<int64_t> offsets;
  const std::vector<double> block = step_with_roundings(c, s, Device::cpu(), offsets);
  adamw_by_hand(want, s, bound);
  require_within(c, want, bound, "the update with roundings");  // the update itself unchanged
  require_roundings(c, block, offsets);
  // A non-finite gradient: nothing updated, nothing written.
  Case bad = random_case({5, 4100}, 61);
  bad.g[0][2] = std::nan("");
  std::vector<int64_t> bad_offsets;
  for (double x : step_with_roundings(bad, s, Device::cpu(), bad_offsets)) CHECK(x == kSentinel);
  // A rounding of another dtype or shape, or of an f64 parameter, is refused.
  std::vector<Tensor> p = tensors({{1, 2, 3}}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(adamw_tensors(p, p, p, p, {true}, {Tensor::zeros({3})}),
                    Catch::Contains("rounded") && Catch::Contains("bf16"));
  CHECK_THROWS_WITH(adamw_tensors(p, p, p, p, {true}, {Tensor::zeros({4}, DType::bf16)}),
                    Catch::Contains("rounded"));
  std::vector<Tensor> p64 = tensors({{1, 2, 3}}, DType::f64, Device::cpu());
  CHECK_THROWS_WITH(adamw_tensors(p64, p64, p64, p64, {true}, {Tensor::zeros({3}, DType::bf16)}),
                    Catch::Contains("with a bf16 rounding"));
}

// The kept rounding is exactly the cast the forward would make (the same
// bits), so training with it is training without it, step for step; and the
// forward does take it (a rounding of other values changes the loss).
TEST_CASE("nn::AdamW: the weights' rounding it keeps is current after every step and changes no bit of training",
          "[optim][determinism]") {
  for (const bool fused : {true, false}) {
    INFO((fused ? "the multi-tensor update" : "the per-tensor reference path"));
    const test::TinyTraining without = train_bf16(Device::cpu(), 3, fused, false);
    const test::TinyTraining with = train_bf16(Device::cpu(), 3, fused, true);
    CHECK(!without.kept.weights.defined());
    require_current(with.kept);
    require_same_training(with, without);
  }
  // Taken by the forward: every weight's rounding halved gives another loss.
  auto model = model::build_model(test::tiny_bert_config(50, 16, 2, 2, 32, 16), Device::cpu(), false, 7);
  nn::AdamW opt(model->named_parameters(), nn::AdamWConfig{});
  REQUIRE(opt.keep_weights_rounding());
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(std::vector<int64_t>{5, 9, 13, 21}, {1, 4});
  const Tensor labels = Tensor::from_vector(std::vector<int64_t>{5, -100, 13, -100}, {1, 4});
  nn::Context plain = nn::Context::eval(MatmulPrecision::bf16), halved = nn::Context::eval(MatmulPrecision::bf16);
  halved.rounded_weights = {opt.rounded_weights().weights, affine(opt.rounded_weights().weights, 0.5).to(DType::bf16)};
  const double loss = model->forward(in, labels, Tensor(), plain).loss.value().item();
  CHECK(model->forward(in, labels, Tensor(), halved).loss.value().item() != loss);
  // One of another shape is refused.
  nn::Context wrong = nn::Context::eval(MatmulPrecision::bf16);
  wrong.rounded_weights = {opt.rounded_weights().weights, Tensor::zeros({3}, DType::bf16)};
  CHECK_THROWS_WITH(model->forward(in, labels, Tensor(), wrong), Catch::Contains("the kept rounding"));
}

// Three steps compound the two paths' roundings (the norm summed in another
// order, the clip factor in f64 or f32); each step moves an element by at
// most lr = 1e-2, so 1e-5 absolute is ~0.1% of a step: a lost clip (a
// factor of ~100) or a skipped parameter shows far above it.
TEST_CASE("nn::AdamW: the fused step equals the per-tensor reference path within rounding", "[optim]") {
  const std::vector<Tensor> reference = test::parameters_after_steps(Device::cpu(), true, 3, /*fused=*/false);
  const std::vector<Tensor> fused = test::parameters_after_steps(Device::cpu(), true, 3);
  REQUIRE(fused.size() == reference.size());
  for (size_t i = 0; i < fused.size(); ++i) test::require_close(fused[i], reference[i], 1e-4, 1e-5, "parameter");
}

#ifdef ORDO_HAS_CUDA

TEST_CASE("cuda: multi-tensor AdamW in two launches, no host read, AdamW's values", "[cuda][optim]") {
  const Device gpu = Device::cuda(0);
  Settings s;
  Case want = random_case(kSizes, 80), bound, got = want;
  const double norm = adamw_by_hand(want, s, bound);
  std::vector<Tensor> p = tensors(got.p, DType::f32, gpu), g = tensors(got.g, DType::f32, gpu),
                      m = tensors(got.m, DType::f32, gpu), v = tensors(got.v, DType::f32, gpu);
  const AdamWTensors t = adamw_tensors(p, g, m, v, got.decay);
  Tensor schedule = Tensor::empty({3}, DType::f64, gpu);
  write_adamw_schedule(schedule, s.lr, s.beta1, s.beta2, s.step);
  AdamWConstants k;
  k.eps = s.eps;
  k.weight_decay = s.weight_decay;
  synchronize(gpu);
  reset_device_counters();
  const Tensor norm_and_clip = global_norm_and_clip(t, s.max_norm);
  adamw_multi_(t, norm_and_clip, schedule, k);
  const DeviceCounters counted = device_counters();
  CHECK(counted.kernel_launches == 2);  // the squares' sums (the norm by their last block), the update
  CHECK(counted.host_syncs == 0);
  CHECK(counted.bytes_to_host == 0);
  // The gradients rounded to f32, the norm's f64 sums in another order, rounded once to f32.
  CHECK(std::fabs(norm_and_clip.to_doubles()[0] - norm) <= 2 * kU * norm);
  for (size_t i = 0; i < got.p.size(); ++i) {
    got.p[i] = p[i].to_doubles();
    got.m[i] = m[i].to_doubles();
    got.v[i] = v[i].to_doubles();
  }
  require_within(got, want, bound, "f32 on CUDA");
}

TEST_CASE("cuda: multi-tensor AdamW writes the bf16 roundings in its update's launch, the CPU's bits",
          "[cuda][optim]") {
  Settings s;
  Case c = random_case(kSizes, 46), on_cpu = c;
  std::vector<int64_t> offsets, cpu_offsets;
  const std::vector<double> block = step_with_roundings(c, s, Device::cuda(0), offsets);
  require_roundings(c, block, offsets);
  CHECK(block == step_with_roundings(on_cpu, s, Device::cpu(), cpu_offsets));
}

// On the device the kept rounding saves the forward's cast of the weights
// (one launch a step) and changes no bit.
TEST_CASE("cuda: nn::AdamW's kept rounding saves the weights' cast and changes no bit of training", "[cuda][optim]") {
  reset_device_counters();
  const test::TinyTraining without = train_bf16(Device::cuda(0), 2, true, false);
  const int64_t launches_without = device_counters().kernel_launches;
  reset_device_counters();
  const test::TinyTraining with = train_bf16(Device::cuda(0), 2, true, true);
  // One cast a forward fewer, the kept rounding's own cast once.
  CHECK(device_counters().kernel_launches == launches_without - 2 + 1);
  require_current(with.kept);
  require_same_training(with, without);
}

TEST_CASE("cuda: multi-tensor AdamW over more tensors than one launch takes (two launches a pass)", "[cuda][optim]") {
  const Device gpu = Device::cuda(0);
  Settings s;
  Case want = random_case(std::vector<int64_t>(1100, 3), 90), bound, got = want;
  adamw_by_hand(want, s, bound);
  reset_device_counters();
  fused_step(got, s, DType::f32, gpu);
  CHECK(device_counters().kernel_launches == 4);  // 2 + 2: 1,024 tensors per launch, the norm in the second
  require_within(got, want, bound, "1,100 tensors on CUDA");
}

TEST_CASE("cuda: multi-tensor AdamW with a non-finite gradient updates nothing on the device", "[cuda][optim]") {
  Case c = random_case({4100, 7}, 70), before = c;
  c.g[0][4098] = INFINITY;
  Settings s;
  CHECK(!std::isfinite(fused_step(c, s, DType::f32, Device::cuda(0))));
  for (size_t t = 0; t < c.p.size(); ++t)
    for (size_t i = 0; i < c.p[t].size(); ++i) CHECK(c.p[t][i] == static_cast<float>(before.p[t][i]));
}

TEST_CASE("cuda: nn::AdamW's fused step on the device tracks the CPU's per-tensor reference", "[cuda][optim]") {
  const std::vector<Tensor> reference = test::parameters_after_steps(Device::cpu(), true, 3, /*fused=*/false);
  const std::vector<Tensor> gpu = test::parameters_after_steps(Device::cuda(0), false, 3);
  REQUIRE(gpu.size() == reference.size());
  for (size_t i = 0; i < gpu.size(); ++i) test::require_close(gpu[i], reference[i], 1e-4, 1e-5, "parameter");
}

#endif
