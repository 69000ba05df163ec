// A whole training step — forward in training mode (dropout on), backward,
// AdamW with clipping — of a tiny pretraining model on CUDA against the same
// step on the CPU from the same seed, for every registered position encoding
// and every option family of the seam (sharing, clip, Shaw's values,
// combine = sequence, per-head segments, the ablations, INPUT+ATTENTION), and
// for MLM+NSP and the causal decoder. The initial weights and the dropout
// masks come from Philox on both devices, so the two steps compute the same
// function and differ only by f32 rounding (summation orders, exp/log ulps).
// The CPU side is the independent reference: it is itself checked against
// f64 gradient checks and the HF golden files (tests/nn/).
//
// Runs only where a GPU is (`ordo_tests --require-gpu "[cuda]"`; emulated on
// the CPU in CI).
#ifdef ORDO_HAS_CUDA

#include <algorithm>
#include <cmath>
#include <fstream>

#include "pe/registry.h"
#include "tensor/device_runtime.h"
#include "tensor/kernel_calls.h"
#include "tests/train/device_step.h"
#include "tests/train/learning_curve.h"
#include "base/file_io.h"
#include "train/pretrain.h"

using namespace ordo;
using ordo::test::relative_error;
using ordo::test::StepOutcome;
using ordo::test::step_config;
using ordo::test::training_step;

namespace {

const Device kGpu = Device::cuda(0);
constexpr double kF32Roundoff = 0x1p-24;  // unit roundoff of f32

// Bounds (f32; u = 2^-24). A step of this model is a chain of about 40
// operations forward and as many backward, each a dot product or a reduction
// of at most 53 terms (the vocabulary) whose CPU and CUDA summation orders
// differ, plus exp/log/tanh/erf whose CUDA ulps are not the CPU's. Each
// contributes a relative error of at most sqrt(n) u ~ 8u (Higham & Mary's
// probabilistic bound, see tests/tensor/cuda_vs_cpu.h), amplified by the
// conditioning of softmax and LayerNorm (whose 1/sigma multiplies it by at
// most ~10 here). 80 operations x 8u x 10 ~ 6400u ~ 4e-4 would be the worst
// case; 2^-12 ~ 2.4e-4 (4096u) relative to the tensor's largest element is
// the bound. A wrong mask, a misplaced term, a missed dropout element or a
// lost gradient contribution moves some element by O(1) of the tensor's
// scale and fails it.
constexpr double kLossBound = 4096 * kF32Roundoff;      // relative, on the scalar loss
constexpr double kGradientBound = 4096 * kF32Roundoff;  // max |diff| / max |cpu| per gradient tensor

// The first AdamW step from zero moments updates each element by
// lr (c g / (c |g| + eps) + wd p) with c the clipping scale. The CUDA
// gradient differs from the CPU one by the measured |dg|, and the CUDA scale
// by dc; the update's derivative in c g is at most 1 / eps, so the updated
// parameters may differ by lr * min(2, (c |dg| + |g| |dc|) / eps), plus the
// rounding of p0 - update, a few u of |p0| <= |p| + 2 lr (the new value may
// be far smaller than the old one). A parameter without a gradient (the
// position table under an ablation that leaves it out) only decays.
void require_updates_close(const StepOutcome& cpu, const StepOutcome& gpu, const nn::AdamWConfig& o) {
  const double c = cpu.info.clip_scale, dc = std::fabs(gpu.info.clip_scale - cpu.info.clip_scale);
  for (size_t i = 0; i < cpu.names.size(); ++i) {
    INFO("updated parameter " << cpu.names[i]);
    std::vector<double> p_cpu = cpu.updated[i].to_doubles(), p_gpu = gpu.updated[i].to_doubles();
    std::vector<double> g_cpu(p_cpu.size(), 0.0), g_gpu(p_cpu.size(), 0.0);
    if (cpu.grads[i].defined()) g_cpu = cpu.grads[i].to_doubles(), g_gpu = gpu.grads[i].to_doubles();
    int violations = 0;
    for (size_t k = 0; k < p_cpu.size(); ++k) {
      const double dg = std::fabs(g_gpu[k] - g_cpu[k]);
      const double bound = o.lr * std::min(2.0, (c * dg + std::fabs(g_cpu[k]) * dc) / o.eps) +
                           4 * kF32Roundoff * (std::fabs(p_cpu[k]) + 2 * o.lr);
      if (!(std::fabs(p_gpu[k] - p_cpu[k]) <= bound) && violations++ < 3)
        UNSCOPED_INFO("[" << k << "] cpu " << p_cpu[k] << ", cuda " << p_gpu[k] << ", bound " << bound);
    }
    CHECK(violations == 0);
  }
}

// The GPU's step (fused kernels unless `gpu_fused` is false) against the
// CPU's unfused reference step.
void require_steps_agree(const nn::BertConfig& c, bool nsp, nn::Ablation ablate = nn::Ablation::none,
                         bool gpu_fused = true) {
  const StepOutcome cpu = training_step(c, nsp, Device::cpu(), ablate, /*fused=*/false);
  const StepOutcome gpu = training_step(c, nsp, kGpu, ablate, gpu_fused);
  REQUIRE(std::isfinite(cpu.loss));
  CHECK(std::fabs(gpu.loss - cpu.loss) <= kLossBound * std::fabs(cpu.loss));
  // Clipping acted, by the same factor (the norm is a sum of squares over
  // every gradient element: the gradients' bound carries over).
  CHECK(cpu.info.clip_scale < 1);
  CHECK(std::fabs(gpu.info.grad_norm - cpu.info.grad_norm) <= kGradientBound * cpu.info.grad_norm);
  REQUIRE(gpu.names == cpu.names);
  for (size_t i = 0; i < cpu.names.size(); ++i) {
    INFO("gradient of " << cpu.names[i]);
    REQUIRE(gpu.grads[i].defined() == cpu.grads[i].defined());
    if (!cpu.grads[i].defined()) continue;
    if (ordo::test::gradient_is_exactly_zero(cpu.names[i])) {
      for (const StepOutcome* side : {&cpu, &gpu})
        CHECK(ordo::test::max_abs(side->grads[i]) <= kGradientBound * cpu.info.grad_norm);
    } else {
      CHECK(relative_error(gpu.grads[i], cpu.grads[i]) <= kGradientBound);
    }
  }
  require_updates_close(cpu, gpu, ordo::test::step_optimizer());
}

}  // namespace

TEST_CASE("cuda: a training step of every variant matches the CPU's: loss, gradients, updated parameters",
          "[cuda][step]") {
  for (const std::string& name : pe::variant_names()) {
    INFO("variant " << name);
    require_steps_agree(step_config(name), false);
  }
}

TEST_CASE("cuda: a steady-state training step of every variant waits for the host once and allocates nothing",
          "[cuda][step]") {
  const Device gpu = Device::cuda(0);
  for (const std::string& name : pe::variant_names()) {
    INFO("variant " << name);
    const nn::BertConfig c = step_config(name);
    auto model = model::build_model(c, gpu, false, 5);
    nn::AdamW opt(model->named_parameters(), ordo::test::step_optimizer());
    // As the training loop hands a batch over: the inputs on the device with
    // their facts from the host, the labels on the host.
    const ordo::test::StepBatch host = ordo::test::step_batch(c, false);
    ordo::test::StepBatch device = ordo::test::to_device(host, gpu);
    const Shape& shape = host.inputs.positions.shape();
    device.inputs.facts = nn::input_facts(host.inputs.positions.data<int64_t>(),
                                          host.inputs.segment_ids.data<int64_t>(), shape[0], shape[1]);
    auto step = [&](int64_t s) {
      nn::Context ctx = nn::Context::train(9, s);
      nn::PretrainingOutput out = model->forward(device.inputs, host.labels, Tensor(), ctx);
      out.loss.backward();
      opt.step(/*read_norm=*/false);
      return out.loss.value().item();  // the one read a logged step makes
    };
    step(1);
    step(2);  // the caching allocator holds every block the step needs
    synchronize(gpu);
    reset_device_counters();
    const double loss = step(3);
    const DeviceCounters counted = device_counters();
    CHECK(std::isfinite(loss));
    CHECK(counted.host_syncs == 1);
    CHECK(counted.device_mallocs == 0);
    CHECK(counted.bytes_to_host == 4);  // the f32 loss
  }
}

// Under bf16 products both devices round the same operands, but an operand
// whose f32 value differs between them by the f32 bound above (2^-12 of its
// tensor's scale) can round to the neighbouring bf16 value: 2^-8 of that
// element. The bound is that rounding (2^-8) amplified through the step's
// conditioning as above (x 10 < 2^4): 2^-4 of the tensor's scale for the
// gradients, 2^-8 of the loss (a mean over the predicted tokens). A
// misplaced head, part or bias moves whole rows by O(1) of the scale.
// (Measured on the emulated GPU: gradients within 0.005, the loss 2e-5.)
// ape_learned and t5_bias (a term of the positions alone) run split_heads
// (q, k, v as bf16 operands in one pass), ape_learned the rounded dropout and
// softmax gradient too, t5_bias only the dropout's; rpe_shaw reads q for its
// term and keeps q, k, v f32, each product casting its view. The GPU runs
// the fused attention on tensor-core tiles (heads 16 wide;
// tensor/cuda/attention_tiles.cu, which rounds what the unfused ops round):
// rpe_shaw's relative keys over its window of distances, its table's
// gradient by distance (the positions are consecutive).
TEST_CASE("cuda: a bf16 training step matches the CPU's bf16 step within bf16's rounding", "[cuda][step][bf16]") {
  const MatmulPrecision bf16 = MatmulPrecision::bf16;
  for (const std::string name : {"ape_learned", "t5_bias", "rope", "rpe_shaw"}) {
    INFO("variant " << name);
    const nn::BertConfig c = step_config(name);
    int64_t split = 0;
    StepOutcome cpu;
    {
      KernelCallRecording recording;
      cpu = training_step(c, false, Device::cpu(), nn::Ablation::none, true, bf16);
      for (const KernelCall& k : recording.calls()) split += std::string(k.kernel) == "split_heads";
    }
    CHECK(split == (name == "ape_learned" || name == "t5_bias" ? c.num_hidden_layers : 0));
    StepOutcome gpu;
    int64_t on_tiles = 0;  // the attention's forward and backward calls on tensor-core tiles
    {
      KernelCallRecording recording;
      gpu = training_step(c, false, kGpu, nn::Ablation::none, true, bf16);
      for (const KernelCall& k : recording.calls())
        on_tiles += std::string(k.kernel).rfind("attention_", 0) == 0 && !k.integers.empty() && k.integers.back() != 0;
    }
    CHECK(on_tiles == 2 * c.num_hidden_layers);
    REQUIRE(std::isfinite(cpu.loss));
    CHECK(std::fabs(gpu.loss - cpu.loss) <= 0x1p-8 * std::fabs(cpu.loss));
    REQUIRE(gpu.names == cpu.names);
    for (size_t i = 0; i < cpu.names.size(); ++i) {
      INFO("gradient of " << cpu.names[i] << ": relative error " << relative_error(gpu.grads[i], cpu.grads[i]));
      if (cpu.grads[i].defined() && !ordo::test::gradient_is_exactly_zero(cpu.names[i]))
        CHECK(relative_error(gpu.grads[i], cpu.grads[i]) <= 0x1p-4);
    }
  }
}

TEST_CASE("cuda: the GPU's unfused step matches the CPU's too (the reference the fused kernels replace)",
          "[cuda][step]") {
  require_steps_agree(step_config("ape_learned"), false, nn::Ablation::none, /*gpu_fused=*/false);
}

TEST_CASE("cuda: a training step with every option family of the seam matches the CPU's", "[cuda][step]") {
  struct Case {
    std::string pe, options, segment = "input";
  };
  const std::vector<Case> cases = {
      // Sharing of the relative tables (rpe_shaw's default is "heads").
      {"rpe_shaw", R"({"share": "none"})"},
      {"rpe_shaw", R"({"share": "layers"})"},
      {"rpe_shaw", R"({"share": "all"})"},
      // Clipping of the distances, and Shaw's value vectors.
      {"rpe_shaw", R"({"clip": 3, "value": true})"},
      // The sequence combination (Eq. 10 of the locality/symmetry paper).
      {"attenuated", R"({"combine": "sequence"})"},
      {"alibi", R"({"combine": "sequence"})"},
      // Per-head segments (Chen et al. 2021, Eq. 9-11).
      {"rel_scalar", "{}", "per_head"},
      // Training-time ablations: only-c / only-p at the input and in attention.
      {"ape_learned", R"({"ablate": "contextual"})"},
      {"ape_learned", R"({"ablate": "positional"})"},
      {"tupe", R"({"ablate": "contextual"})"},
      {"tupe", R"({"ablate": "positional"})"},
      // An input-level and an attention-level variant together.
      {"ape_learned+rpe_shaw", "{}"},
      {"ape_sin_learnable+rpe_sin_learnable", "{}"},
  };
  for (const Case& k : cases) {
    INFO(k.pe << " " << k.options << " segment " << k.segment);
    require_steps_agree(step_config(k.pe, k.options, k.segment), false);
  }
}

TEST_CASE("cuda: the inference-time ablations BERT-p and BERT-c match the CPU's", "[cuda][step]") {
  for (const char* pe : {"ape_learned", "tupe"})
    for (nn::Ablation a : {nn::Ablation::contextual, nn::Ablation::positional}) {
      INFO(pe << " ablate " << nn::ablation_name(a));
      require_steps_agree(step_config(pe), false, a);
    }
}

TEST_CASE("cuda: a training step of MLM+NSP and of the causal decoder matches the CPU's", "[cuda][step]") {
  SECTION("MLM + NSP") { require_steps_agree(step_config("ape_learned"), true); }
  SECTION("causal decoder") { require_steps_agree(step_config("rope", "{}", "input", true), false); }
}


// Twenty steps compound the one step's rounding differences through AdamW,
// whose first updates are near sign(g): an element with |g| ~ eps may move
// by up to 2 lr more on one device than on the other. Such elements carry
// almost none of the loss's gradient, so the losses stay within the single
// step's bound, 2^-12 relative (measured: ~1e-7). The loss falls by more than
// 1 over the run, so a wrong update, a stale gradient, another batch or
// another dropout mask would leave the CPU's curve by far more. (The run:
// test::pretrain_losses, tests/train/learning_curve.h.)

TEST_CASE("cuda: 20 steps of ordo pretrain on cuda track the CPU's losses", "[cuda][step]") {
  test::TempDir dir("track");
  test::write_tracking_corpus(dir);
  const std::vector<double> cpu = test::pretrain_losses(dir, "cpu"), gpu = test::pretrain_losses(dir, "cuda");
  REQUIRE(cpu.size() == 20);
  REQUIRE(gpu.size() == 20);
  double worst = 0;
  for (size_t i = 0; i < cpu.size(); ++i) worst = std::max(worst, std::fabs(gpu[i] - cpu[i]) / cpu[i]);
  INFO("losses: first " << cpu.front() << ", last " << cpu.back() << "; worst relative difference " << worst);
  CHECK(worst <= kLossBound);
  CHECK(cpu.back() < cpu.front() - 1);  // the run learns: the bound is small against what it tracks
}

// bf16 products (train.precision = bf16, the default on a GPU) against FP32
// over 200 steps of the same run: the bf16 run's learning curve must track
// the FP32 one's within the resolution of the FP32 curve's own noise
// (test::check_tracks_learning_curve, where the bound is derived; measured:
// at most 0.017 against a bound of ~0.15 with windows of 20 steps). The
// reference is the CPU's FP32 run (the GPU's FP32 run is within 2.4e-6 of it
// over these 200 steps, measured), which keeps one 200-step run on the
// emulated GPU, not two.
TEST_CASE("cuda: 200 steps with bf16 products track the FP32 run's learning curve", "[cuda][bf16]") {
  test::TempDir dir("bf16");
  test::write_tracking_corpus(dir);
  const int64_t steps = 200;
  test::check_tracks_learning_curve(test::pretrain_losses(dir, "cpu", "fp32", steps),
                                    test::pretrain_losses(dir, "cuda", "bf16", steps), 20);
}

#endif  // ORDO_HAS_CUDA

#ifdef ORDO_HAS_CUDA
namespace {

// metrics.jsonl's step lines of a run.
std::vector<json::Value> step_lines_of(const std::string& run) {
  std::vector<json::Value> lines;
  std::ifstream in(run + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    json::Value v = json::parse(line);
    if (v.contains("loss")) lines.push_back(v);
  }
  return lines;
}

}  // namespace

// A run whose steps replay one CUDA graph computes what the same run with
// its launches made one by one computes: the same kernels on the same
// inputs in the same order, so the same bits (the predicted rows padded to
// the fixed shape are ignored by the loss and add exact zeros). After the
// two steps run as they are and the capture, a step is one graph launch.
TEST_CASE("cuda: a pretraining run replaying one CUDA graph a step equals the run without graphs, bit for bit",
          "[cuda][step][graphs]") {
  test::TempDir dir("graphs");
  test::write_tracking_corpus(dir);
  const std::string base = "pretrain --config " + (dir / "config.json") + " --quiet --set train.steps=6 ";
  json::Value c = json::parse(R"({
    "model": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 48,
              "max_position_embeddings": 24},
    "data": {"vocab_size": 120, "vocab_min_frequency": 1, "max_predictions_per_seq": 5, "held_out_fraction": 0},
    "train": {"batch_size": 4, "max_seq_length": 13, "lr": 5e-3, "warmup_steps": 2, "log_every": 1,
              "eval_every": 0, "threads": 1, "device": "cuda"}})");
  c["data"]["corpus"] = dir / "corpus.txt";
  std::ofstream(dir / "config.json") << json::dump(c);
  // Every variant keeps what it computes on the host as a constant on the device
  // (nn::PositionEncoding::constant), made on the first steps (run as they are):
  // one of each kind — sinusoid frequencies (ape_sin), distance values and
  // learned frequencies (rpe_sin_learnable), XLNet's i - j, ALiBi's slopes,
  // TUPE's [CLS] masks, the fused attention's distance rows (rpe_shaw, t5_bias),
  // RoPE's frequencies. (All 22 variants passed this once, 2026-11-26.)
  for (const char* pe : {"ape_learned", "rope", "ape_sin", "rpe_sin_learnable", "xlnet", "alibi", "tupe", "rpe_shaw",
                         "t5_bias"}) {
    INFO(pe);
    const std::string with = dir / (std::string("with_") + pe), without = dir / (std::string("without_") + pe);
    const test::CommandResult graphed = test::run_ordo(base + "--set model.pe=" + pe + " --out " + with);
    REQUIRE(graphed.exit_code == 0);
    REQUIRE(test::run_ordo(base + "--set model.pe=" + pe + " --set train.cuda_graphs=false --out " + without)
                .exit_code == 0);
    const auto a = step_lines_of(with), b = step_lines_of(without);
    REQUIRE(a.size() == 6);
    REQUIRE(b.size() == 6);
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i]["loss"].as_number() == b[i]["loss"].as_number());
      CHECK(a[i]["grad_norm"].as_number() == b[i]["grad_norm"].as_number());
    }
    const std::string ckpt = "/checkpoints/step_000000006/model.safetensors";
    CHECK(read_file(with + ckpt) == read_file(without + ckpt));
    CHECK(graphed.output.find("cuda graphs: off") == std::string::npos);
  }
  // Two phases of lengths 8 and 13: the second phase's first step makes its
  // distance rows as it is, then the step is captured again, with no fallback.
  const std::string phases = base + "--set model.pe=rpe_shaw --set train.steps=null --set train.max_seq_length=null "
                             "--set train.batch_size=null --set 'train.phases=[{\"steps\":3,\"max_seq_length\":8,"
                             "\"batch_size\":4},{\"steps\":3,\"max_seq_length\":13,\"batch_size\":4}]' ";
  const test::CommandResult two = test::run_ordo(phases + "--out " + (dir / "phases"));
  REQUIRE(two.exit_code == 0);
  REQUIRE(test::run_ordo(phases + "--set train.cuda_graphs=false --out " + (dir / "phases_off")).exit_code == 0);
  CHECK(two.output.find("cuda graphs: off") == std::string::npos);
  CHECK(read_file(dir / "phases/checkpoints/step_000000006/model.safetensors") ==
        read_file(dir / "phases_off/checkpoints/step_000000006/model.safetensors"));
}

TEST_CASE("cuda: a graphed step is one graph launch: no kernel launch, allocation or host read of its own",
          "[cuda][step][graphs]") {
  const nn::BertConfig c = step_config("ape_learned");
  auto model = model::build_model(c, kGpu, false, 5);
  nn::AdamWConfig o = ordo::test::step_optimizer();
  nn::AdamW opt(model->named_parameters(), o);
  const ordo::test::StepBatch host = ordo::test::step_batch(c, false);
  ordo::test::StepBatch device = ordo::test::to_device(host, kGpu);
  const Shape& shape = host.inputs.positions.shape();
  device.inputs.facts = nn::input_facts(host.inputs.positions.data<int64_t>(), host.inputs.segment_ids.data<int64_t>(),
                                        shape[0], shape[1]);
  const nn::MlmRows rows = nn::mlm_rows(host.labels, kGpu, shape[0] * shape[1]);
  // A cache left by earlier work in blocks of assorted sizes (as a test
  // suite's or an evaluation's), which the first steps take from unevenly.
  for (int64_t kib = 1; kib <= 96; kib += 5) Tensor::empty({kib * 256}, DType::f32, kGpu);
  train::GraphedStep step(opt, kGpu);
  auto forward = [&](int64_t) {
    nn::Context ctx = nn::Context::train(9, 0);
    ctx.next_stream = 0;
    ctx.stream_base = step.stream_base();
    nn::PretrainingOutput out = model->forward(device.inputs, rows, Tensor(), ctx);
    return train::MicroBatch{out.loss, {{"loss", out.loss.value()}}, 26};
  };
  auto nothing = [] {};
  auto report = [](int64_t) { throw Error("non-finite"); };
  // Steps run as they are (at least two) until one calls no cudaMalloc; the next is captured.
  int64_t s = 0, last_warm_mallocs = -1;
  while (step.captures() == 0 && s < 8) {
    const int64_t mallocs = allocator_stats(kGpu).device_mallocs;
    step.run(++s, false, nothing, forward, report, "one shape");
    if (step.captures() == 0) last_warm_mallocs = allocator_stats(kGpu).device_mallocs - mallocs;
  }
  REQUIRE(step.captures() == 1);
  CHECK(s >= 3);
  CHECK(last_warm_mallocs == 0);
  synchronize(kGpu);
  reset_device_counters();
  const train::StepResult quiet = step.run(++s, false, nothing, forward, report, "one shape");
  const DeviceCounters counted = device_counters();
  CHECK(counted.graph_launches == 1);
  CHECK(counted.kernel_launches == 0);
  CHECK(counted.device_copies == 0);
  CHECK(counted.device_mallocs == 0);
  CHECK(counted.host_syncs == 0);
  CHECK(counted.bytes_to_device == 8 + 24);  // the step's dropout base and AdamW's schedule
  CHECK(std::isnan(quiet.optimizer.grad_norm));
  reset_device_counters();
  const train::StepResult logged = step.run(++s, true, nothing, forward, report, "one shape");
  CHECK(device_counters().host_syncs == 1);  // the loss and the norm, in one read
  CHECK(std::isfinite(logged.means.at(0).second));
  CHECK(std::isfinite(logged.optimizer.grad_norm));
  CHECK(step.captures() == 1);
  // New facts, the same shapes (every block cached): run as they are once, then captured.
  step.run(++s, false, nothing, forward, report, "another shape");
  CHECK(step.captures() == 1);
  step.run(++s, false, nothing, forward, report, "another shape");
  CHECK(step.captures() == 2);
  step.run(++s, false, nothing, forward, report, "one shape");  // back to the first: once as it is again,
  CHECK(step.captures() == 2);
  step.run(++s, false, nothing, forward, report, "one shape");  // then captured
  CHECK(step.captures() == 3);
}
#endif
