// The training loop's pieces (train/loop.h): one optimizer step over
// micro-batches, its host reads and its non-finite losses, and the cadence.
#include <cmath>

#include "autograd/ops.h"
#include "tensor/cpu/blas_core.h"
#include "tensor/cpu/gemm_amx.h"
#include "tensor/cpu/gemm_own.h"
#include "tensor/device_runtime.h"
#include "tests/helpers.h"
#include "train/loop.h"

using namespace ordo;
using Catch::Contains;

namespace {

// One weight w = 2 and micro-batch m's loss c[m] * w: every number of a step
// follows by hand.
struct OneWeight {
  nn::Parameter p;
  std::unique_ptr<nn::AdamW> opt;

  explicit OneWeight(Device device = Device::cpu(), double max_grad_norm = 0) {
    p.var = Var(Tensor::full({1}, 2.0, DType::f32, device), true, "w");
    nn::AdamWConfig c;
    c.lr = 0.1;
    c.weight_decay = 0;
    c.max_grad_norm = max_grad_norm;  // 0: no clipping
    opt = std::make_unique<nn::AdamW>(std::vector<nn::NamedParameter>{{"w", &p}}, c);
  }

  // Micro-batch m's loss c[m] * w, logged with twice itself; 10 tokens each.
  train::MicroBatchForward forward(std::vector<double> c) {
    return [this, c](int64_t m) {
      Var loss = sum(affine(p.var, c[m]));
      Tensor two = Tensor::scalar(2.0, DType::f32, loss.value().device());
      return train::MicroBatch{loss, {{"loss", loss.value()}, {"twice", mul(loss.value(), two)}}, 10};
    };
  }
  double w() const { return p.var.value().item(); }
};

// A report that names the micro-batch it was handed.
void name_micro_batch(int64_t m) { throw Error("micro-batch " + std::to_string(m)); }

}  // namespace

TEST_CASE("an optimizer step accumulates its micro-batches and logs their means", "[train]") {
  OneWeight model;
  // Losses 1*2 and 3*2: means 4 (loss) and 8 (twice); the gradient of
  // (1w + 3w) / 2 is 2, and Adam's first step moves w by lr against its sign.
  train::StepResult s = train::optimizer_step(*model.opt, 1, 2, true, model.forward({1, 3}), name_micro_batch);
  using Means = std::vector<std::pair<std::string, double>>;
  CHECK(s.means == Means{{"loss", 4.0}, {"twice", 8.0}});
  CHECK(s.optimizer.grad_norm == 2.0);
  CHECK(s.tokens == 20);
  CHECK(model.w() == Approx(1.9).margin(1e-6));
  // A step that does not log reads nothing.
  train::StepResult quiet = train::optimizer_step(*model.opt, 2, 2, false, model.forward({1, 3}), name_micro_batch);
  CHECK(quiet.means.empty());
  CHECK(quiet.tokens == 20);
}

TEST_CASE("a non-finite loss goes to the report, logged step or not, before anything is updated", "[train][errors]") {
  for (bool logged : {true, false}) {
    INFO("logged " << logged);
    OneWeight model;
    CHECK_THROWS_WITH(train::optimizer_step(*model.opt, 7, 3, logged, model.forward({1, NAN, INFINITY}), name_micro_batch),
                      "micro-batch 1");
    CHECK(model.w() == 2.0);
    CHECK(model.opt->steps_taken() == 0);
  }
  // A report that names nothing still stops the step, naming it.
  OneWeight model;
  CHECK_THROWS_WITH(train::optimizer_step(*model.opt, 7, 2, true, model.forward({NAN, 1}), [](int64_t) {}),
                    Contains("step 7") && Contains("micro-batch 0"));
}

TEST_CASE("the cadence logs the first, every n-th and the last step, evaluates and checkpoints every n-th and the last", "[train]") {
  train::Cadence cadence{10, 4, 5, 0};
  std::vector<int64_t> logs, evaluations, checkpoints;
  for (int64_t step = 1; step <= 10; ++step) {
    if (cadence.logs(step)) logs.push_back(step);
    if (cadence.evaluates(step)) evaluations.push_back(step);
    if (cadence.checkpoints(step)) checkpoints.push_back(step);
  }
  CHECK(logs == std::vector<int64_t>{1, 4, 8, 10});
  CHECK(evaluations == std::vector<int64_t>{5, 10});
  CHECK(checkpoints == std::vector<int64_t>{10});
}

#ifdef ORDO_HAS_CUDA
TEST_CASE("cuda: a logged optimizer step reads its losses and the gradient norm in one host synchronisation",
          "[cuda][train]") {
  // As the CPU case above, clipped at 1.5: the norm 2 is read, the
  // gradient scaled by 1.5 / (2 + 1e-6), and Adam's first step still moves w
  // by lr against the gradient's sign.
  OneWeight model(Device::cuda(0), 1.5);
  auto forward = model.forward({1, 3});
  synchronize(Device::cuda(0));
  reset_device_counters();
  train::StepResult s = train::optimizer_step(*model.opt, 1, 2, true, forward, name_micro_batch);
  CHECK(device_counters().host_syncs == 1);
  using Means = std::vector<std::pair<std::string, double>>;
  CHECK(s.means == Means{{"loss", 4.0}, {"twice", 8.0}});
  CHECK(s.optimizer.grad_norm == 2.0);
  CHECK(s.optimizer.clip_scale == 1.5 / (2.0 + 1e-6));
  CHECK(model.w() == Approx(1.9).margin(1e-6));
  // A step that does not log never waits for the device.
  reset_device_counters();
  train::StepResult quiet = train::optimizer_step(*model.opt, 2, 2, false, model.forward({1, 3}), name_micro_batch);
  CHECK(device_counters().host_syncs == 0);
  CHECK(quiet.means.empty());
}
#endif  // ORDO_HAS_CUDA

TEST_CASE("train.precision: auto is bf16 on a GPU and fp32 on the CPU, the others are themselves", "[train]") {
  using train::resolve_precision;
  CHECK(resolve_precision("auto", Device::cpu()) == MatmulPrecision::fp32);
  CHECK(resolve_precision("auto", Device::cuda(0)) == MatmulPrecision::bf16);
  for (MatmulPrecision p : {MatmulPrecision::fp32, MatmulPrecision::tf32, MatmulPrecision::bf16})
    for (Device d : {Device::cpu(), Device::cuda(0)}) CHECK(resolve_precision(precision_name(p), d) == p);
  CHECK_THROWS_WITH(resolve_precision("half", Device::cpu(), "--precision"),
                    "--precision: unknown precision 'half' (auto, fp32, tf32 or bf16)");
  // A config's setting is parsed once (auto: no precision yet) and resolved on the run's device.
  const std::optional<MatmulPrecision> automatic = train::parse_precision("auto", "train.precision");
  CHECK_FALSE(automatic.has_value());
  CHECK(train::precision_setting_name(automatic) == "auto");
  CHECK(resolve_precision(automatic, Device::cpu()) == MatmulPrecision::fp32);
  CHECK(resolve_precision(automatic, Device::cuda(0)) == MatmulPrecision::bf16);
  const std::optional<MatmulPrecision> tf32 = train::parse_precision("tf32", "train.precision");
  CHECK(tf32 == MatmulPrecision::tf32);
  CHECK(train::precision_setting_name(tf32) == "tf32");
  CHECK(resolve_precision(tf32, Device::cuda(0)) == MatmulPrecision::tf32);
  CHECK_THROWS_WITH(train::parse_precision("fp16", "train.precision"),
                    "train.precision: unknown precision 'fp16' (auto, fp32, tf32 or bf16)");
  CHECK(train::precision_description(MatmulPrecision::bf16, Device::cpu()) ==
        std::string("bf16 products (FP32 sums, weights, optimizer state and statistics), ") +
            (cpu::amx_enabled() ? "on the CPU's AMX-BF16 tiles" : "emulated on the CPU"));
  CHECK(train::precision_description(MatmulPrecision::tf32, Device::cpu()) ==
        "tf32 products (FP32 sums, weights, optimizer state and statistics), emulated on the CPU");
}

TEST_CASE("a run's header names the CPU's product kernels", "[train]") {
  CHECK(train::device_description(Device::cuda(0)) == "cuda:0");
  if (cpu::blas_compiled()) {
    const std::string core = cpu::blas_core();
    CHECK_FALSE(core.empty());
    CHECK(train::device_description(Device::cpu()) == "cpu (OpenBLAS's " + core + " kernels)");
  }
  const bool blas = cpu::use_blas();
  cpu::set_use_blas(false);
  CHECK(train::device_description(Device::cpu()) == "cpu (ordo's own product kernel)");
  cpu::set_use_blas(blas);
}
