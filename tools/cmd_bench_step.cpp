// `ordo bench step`: what one pretraining step asks of the device, counted
// after warm-up: kernel launches, host synchronisations, allocations that
// reach cudaMalloc, and bytes copied each way (tensor/device_runtime.h). A
// step on a GPU must not wait for the host; these counts say whether it does.
//
// The step is the training loop's: the batch copied from the host, forward
// with the MLM loss, backward, AdamW with clipping, and the loss read back to
// the host (the one read a logged step needs).
//
// On a CUDA device (real or emulated) it also prints a roofline estimate of
// the same step on an H100 SXM (tensor/roofline.h), from the kernel calls the
// step made: an estimate from shapes, for where the time would go.
#include <chrono>
#include <cstdlib>
#include <cstdio>

#include "nn/optim.h"
#include "pe/registry.h"
#include "tensor/device_runtime.h"
#include "tensor/roofline.h"
#include "tools/bench.h"
#include "tools/bench_model.h"
#include "tools/cli.h"
#include "train/pretrain.h"

namespace {

using namespace ordo;

struct StepCounts {
  DeviceCounters device;     // summed over the measured steps
  int64_t allocations = 0;   // tensor allocations (served from the cache or not)
  double seconds = 0;        // wall time of the measured steps
  std::vector<KernelCall> kernel_calls;  // of the measured steps
};

nn::BertInputs to_device(const nn::BertInputs& host, Device device) {
  nn::BertInputs in;
  in.input_ids = host.input_ids.to(device);
  in.attention_mask = host.attention_mask.to(device);
  return in;
}

void one_step(nn::PretrainingModel& model, nn::AdamW& opt, const nn::BertInputs& host_batch,
              const Tensor& host_labels, int64_t step, Device device) {
  nn::Context ctx = nn::Context::train(1, step);
  nn::PretrainingOutput out = model.forward(to_device(host_batch, device), host_labels, Tensor(), ctx);
  out.loss.backward();
  opt.step(/*read_norm=*/false);
  (void)out.loss.value().item();
}

StepCounts count_steps(nn::PretrainingModel& model, nn::AdamW& opt, const nn::BertInputs& batch, const Tensor& labels,
                       int warmup, int steps, Device device) {
  for (int i = 0; i < warmup; ++i) one_step(model, opt, batch, labels, i, device);
  synchronize(device);
  reset_device_counters();
  const int64_t allocations_before = allocator_stats(device).allocations;
  const auto start = std::chrono::steady_clock::now();
  StepCounts c;
  {
    KernelCallRecording recording;
    for (int i = warmup; i < warmup + steps; ++i) one_step(model, opt, batch, labels, i, device);
    c.kernel_calls = recording.calls();
  }
  if (std::getenv("ORDO_DUMP_CALLS"))
    for (const KernelCall& k : c.kernel_calls) {
      std::fprintf(stderr, "%s L%lld", k.kernel, (long long)k.launches);
      for (const Shape& s : k.shapes) std::fprintf(stderr, " %s", shape_str(s).c_str());
      std::fprintf(stderr, "\n");
    }
  c.device = device_counters();  // before the final synchronize, which is not the step's
  synchronize(device);
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  c.allocations = allocator_stats(device).allocations - allocations_before;
  return c;
}

std::string per_step(int64_t total, int steps) { return bench::fixed(static_cast<double>(total) / steps, 1); }

// The roofline table of one configuration's step: the kernels that take 1% or
// more of the estimate, slowest first, then the total under FP32 and TF32 products.
void print_roofline(const std::string& config, const std::vector<KernelCall>& calls, int steps) {
  const RooflineMachine machine = h100_sxm();
  const Roofline fp32 = roofline(calls, machine, /*tf32=*/false);
  const Roofline tf32 = roofline(calls, machine, /*tf32=*/true);
  std::printf("\nroofline ESTIMATE of one '%s' step on an %s (not a measurement: every kernel streams its tensors\n"
              "once at full bandwidth and every product runs at peak; ordo's products are FP32 unless allow_tf32)\n",
              config.c_str(), machine.name.c_str());
  bench::Table table({"kernel", "calls", "launches", "MiB touched", "GFLOP", "est. us", "share", "bound by"});
  auto us = [&](double seconds) { return bench::fixed(1e6 * seconds / steps, 1); };
  auto row_of = [&](const RooflineRow& r) -> std::vector<std::string> {
    const char* bound = r.compute_seconds > r.memory_seconds
                            ? (r.compute_seconds > r.launch_seconds ? "FLOPs" : "launches")
                            : (r.memory_seconds > r.launch_seconds ? "bytes" : "launches");
    return {r.kernel, per_step(r.calls, steps), per_step(r.launches, steps),
            bench::fixed(r.bytes / steps / (1 << 20), 2), bench::fixed(r.flops / steps / 1e9, 3), us(r.seconds),
            bench::fixed(100 * r.seconds / fp32.total.seconds, 1) + "%", bound};
  };
  for (const RooflineRow& r : fp32.rows)
    if (r.seconds >= 0.01 * fp32.total.seconds) table.add(row_of(r));
  table.add(row_of(fp32.total));
  table.print();
  std::printf("step estimate: %s us with FP32 products (%s us of it launch overhead, %s us bytes-bound, %s us "
              "FLOP-bound); %s us with TF32 products\n",
              us(fp32.total.seconds).c_str(), us(fp32.total.launch_seconds).c_str(),
              us(fp32.total.memory_seconds).c_str(), us(fp32.total.compute_seconds).c_str(),
              us(tf32.total.seconds).c_str());
  std::printf("assumed: %s\n", machine.source.c_str());
}

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"config", "set", "steps", "warmup", "batch", "length", "device"}, {});
  std::vector<std::string> configs = args.all("config");
  if (configs.empty()) configs = {"tiny"};
  const int steps = static_cast<int>(args.integer("steps", 3, 1, 100000));
  const int warmup = static_cast<int>(args.integer("warmup", 2, 1, 100000));
  Device device = args.device("device", cuda_available() ? "cuda" : "cpu");
  const bool cuda = device.is_cuda();

  std::printf("ordo bench step: per pretraining step (batch copied in, MLM forward + loss, backward, AdamW with\n"
              "clipping, loss read back), mean of %d steps after %d warm-up; device %s\n",
              steps, warmup, cuda ? cuda_device_description(device.index).c_str() : "cpu");
  if (!cuda) std::printf("(on the CPU there are no launches, syncs or copies: only tensor allocations apply)\n");
  std::printf("\n");
  bench::Table table({"config", "batch x len", "launches", "host syncs", "cudaMalloc", "KiB to device", "KiB to host",
                      "allocations", "step ms"});
  std::vector<std::vector<KernelCall>> kernel_calls;
  for (const std::string& name : configs) {
    train::RunConfig rc = train::read_run_config(bench::resolve_config(name), args.all("set"));
    nn::BertConfig mc = rc.model;
    if (mc.vocab_size == 0) mc.vocab_size = rc.data.vocab_size;
    const int64_t batch = args.integer("batch", rc.train.phases[0].batch_size, 1, 1 << 20);
    const int64_t length = args.integer("length", rc.train.phases[0].max_seq_length, 2, 1 << 20);
    auto model = pe::build_model(mc, device, false, 1);
    nn::AdamW opt(model->named_parameters(), rc.train.adam);
    Tensor labels;
    nn::BertInputs host_batch = bench::random_batch(batch, length, mc.vocab_size, Device::cpu(), labels);
    StepCounts c = count_steps(*model, opt, host_batch, labels, warmup, steps, device);
    kernel_calls.push_back(std::move(c.kernel_calls));
    auto device_figure = [&](int64_t total) { return cuda ? per_step(total, steps) : std::string("-"); };
    auto kib = [&](int64_t bytes) { return cuda ? bench::fixed(static_cast<double>(bytes) / 1024 / steps, 1) : "-"; };
    table.add({name, std::to_string(batch) + " x " + std::to_string(length), device_figure(c.device.kernel_launches),
               device_figure(c.device.host_syncs), device_figure(c.device.device_mallocs),
               kib(c.device.bytes_to_device), kib(c.device.bytes_to_host), per_step(c.allocations, steps),
               bench::fixed(1e3 * c.seconds / steps, 1)});
  }
  table.print();
  if (cuda)
    for (size_t i = 0; i < configs.size(); ++i) print_roofline(configs[i], kernel_calls[i], steps);
  else
    std::printf("\n(the roofline estimate of the step on an H100 needs --device cuda: a GPU or the emulated build)\n");
  return 0;
}

cli::Register command({"bench step", "kernel launches, host syncs, cudaMalloc calls and bytes copied per training step, and a roofline estimate of it on an H100",
                       "[--config tiny|mini|small|base|FILE ...] [--set key=value ...] [--steps N] [--warmup N]"
                       " [--batch B] [--length L] [--device cpu|cuda]",
                       run});

}  // namespace
