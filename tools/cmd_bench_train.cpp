// `ordo bench train`: the speed and memory of one pretraining step (forward
// with the MLM loss, backward, AdamW) for a model config, split by phase,
// optionally beside the same step in PyTorch (scripts/bench_torch.py).
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "base/file_io.h"
#include "model/model.h"
#include "nn/optim.h"
#include "tensor/device_runtime.h"
#include "tools/bench.h"
#include "tools/bench_model.h"
#include "tools/cli.h"
#include "train/loop.h"
#include "train/pretrain.h"

namespace {

using namespace ordo;
using bench::random_batch;
using bench::resolve_config;

struct StepTimes {
  double forward = 0, backward = 0, optimizer = 0;  // seconds per step (median)
  size_t peak_bytes = 0;
};

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

StepTimes time_steps(nn::PretrainingModel& model, nn::AdamW& opt, const nn::BertInputs& in, const Tensor& labels,
                     int warmup, int steps, Device device, MatmulPrecision precision) {
  std::vector<double> fwd, bwd, upd;
  for (int i = 0; i < warmup + steps; ++i) {
    if (i == warmup) reset_peak_memory(device);
    nn::Context ctx = nn::Context::train(1, i);
    ctx.precision = precision;
    ctx.rounded_weights = opt.rounded_weights();
    synchronize(device);
    double t0 = now();
    nn::PretrainingOutput out = model.forward(in, labels, Tensor(), ctx);
    synchronize(device);
    double t1 = now();
    out.loss.backward();
    synchronize(device);
    double t2 = now();
    opt.step();
    synchronize(device);
    double t3 = now();
    if (i >= warmup) fwd.push_back(t1 - t0), bwd.push_back(t2 - t1), upd.push_back(t3 - t2);
  }
  StepTimes t{median(fwd), median(bwd), median(upd), allocator_stats(device).peak_bytes_in_use};
  return t;
}

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"config", "set", "steps", "warmup", "batch", "length", "device", "precision"},
                 {"compare-torch", "torch-compile"});
  std::vector<std::string> configs = args.all("config");
  if (configs.empty()) configs = {"tiny", "mini"};
  const int steps = static_cast<int>(args.integer("steps", 5, 1, 100000));
  const int warmup = static_cast<int>(args.integer("warmup", 2, 0, 100000));
  Device device = args.device("device", cuda_available() ? "cuda" : "cpu");
  // The products' precision, as train.precision; PyTorch's twin runs bf16 under autocast.
  const MatmulPrecision precision = train::resolve_precision(args.str("precision", "auto"), device, "--precision");

  std::printf("ordo bench train: one pretraining step (MLM forward + loss, backward, AdamW), median of %d after %d warm-up\n",
              steps, warmup);
  std::printf("machine: %s, %d threads; device %s; %s\n\n", bench::cpu_model().c_str(), bench::cpu_threads(),
              device.is_cpu() ? "cpu" : cuda_device_description(device.index).c_str(),
              train::precision_description(precision, device).c_str());
  // torch: the same step in PyTorch (vocabulary projection of the predicted
  // rows only, as ordo); torch HF: BertForMaskedLM as is (every row projected);
  // compiled: torch's step under torch.compile (--torch-compile). in use: the
  // allocator's peak of live tensors in a step; RSS: what the model and the
  // steps add to the peak resident memory (bench::ResidentPeak), ordo's and torch's.
  const bool compile = args.has("torch-compile");
  bench::Table table({"config", "params", "batch x len", "forward ms", "backward ms", "optimizer ms", "step ms",
                      "tokens/s", "in use MiB", "RSS MiB", "torch tok/s", "ordo/torch", "torch HF tok/s",
                      "ordo/torch HF", "compiled tok/s", "ordo/compiled", "torch RSS MiB"});
  for (const std::string& name : configs) {
    std::string path = resolve_config(name);
    train::RunConfig rc = train::read_run_config(path, args.all("set"));
    nn::BertConfig mc = rc.model;
    if (mc.vocab_size == 0) mc.vocab_size = rc.data.vocab_size;
    const int64_t batch = args.integer("batch", rc.train.phases[0].batch_size, 1, 1 << 20);
    const int64_t length = args.integer("length", rc.train.phases[0].max_seq_length, 2, 1 << 20);
    const bench::ResidentPeak resident;
    auto model = model::build_model(mc, device, false, 1);
    nn::AdamW opt(model->named_parameters(), rc.train.adam);
    if (precision == MatmulPrecision::bf16) opt.keep_weights_rounding();  // as pretrain
    Tensor labels;
    nn::BertInputs in = random_batch(batch, length, mc.vocab_size, device, labels);
    StepTimes t = time_steps(*model, opt, in, labels, warmup, steps, device, precision);
    double step = t.forward + t.backward + t.optimizer;
    double tokens_per_s = static_cast<double>(batch * length) / step;

    const double resident_mib = resident.mib();
    std::vector<std::string> torch(7, "-");
    if (args.has("compare-torch")) {
      // The same step in PyTorch: HF BertForMaskedLM with the same config and threads.
      const std::string cmd = "python3 " + std::string(ORDO_SOURCE_DIR) + "/scripts/bench_torch.py --config " + path +
                              " --vocab-size " + std::to_string(mc.vocab_size) + " --batch " + std::to_string(batch) +
                              " --length " + std::to_string(length) + " --steps " + std::to_string(steps) +
                              " --warmup " + std::to_string(warmup) + " --threads " +
                              std::to_string(bench::cpu_threads()) + (compile ? " --compile" : "") +
                              " --precision " + (precision == MatmulPrecision::bf16 ? "bf16" : "fp32") + " 2>/dev/null";
      const auto figures = bench::command_figures(cmd);
      const auto rates = figures.find("tokens_per_s");
      if (rates == figures.end() || rates->second.size() != 2) {
        torch[0] = "unavailable";
      } else {
        torch[0] = bench::fixed(rates->second[0], 0);
        torch[1] = bench::fixed(tokens_per_s / rates->second[0], 2);
        torch[2] = bench::fixed(rates->second[1], 0);
        torch[3] = bench::fixed(tokens_per_s / rates->second[1], 2);
        if (const auto c = figures.find("compile_tokens_per_s"); compile && c != figures.end()) {
          const double compiled = c->second[0];
          torch[4] = compiled > 0 ? bench::fixed(compiled, 0) : "failed";
          if (compiled > 0) torch[5] = bench::fixed(tokens_per_s / compiled, 2);
        }
        if (const auto m = figures.find("peak_rss_mib"); m != figures.end() && m->second[0] >= 0)
          torch[6] = bench::fixed(m->second[0], 1);
      }
    }
    std::vector<std::string> row{name, std::to_string(model->parameter_count()),
                                 std::to_string(batch) + " x " + std::to_string(length),
                                 bench::fixed(1e3 * t.forward, 1), bench::fixed(1e3 * t.backward, 1),
                                 bench::fixed(1e3 * t.optimizer, 1), bench::fixed(1e3 * step, 1),
                                 bench::fixed(tokens_per_s, 0), bench::fixed(static_cast<double>(t.peak_bytes) / (1 << 20), 1),
                                 resident_mib < 0 ? "-" : bench::fixed(resident_mib, 1)};
    row.insert(row.end(), torch.begin(), torch.end());
    table.add(row);
  }
  table.print();
  return 0;
}

cli::Register command({"bench train", "tokens/s, step time by phase and peak memory of a pretraining step",
                       "[--config tiny|mini|small|base|FILE ...] [--set key=value ...] [--steps N] [--warmup N]"
                       " [--batch B] [--length L] [--device cpu|cuda] [--precision auto|fp32|tf32|bf16]"
                       " [--compare-torch [--torch-compile]]",
                       run});

}  // namespace
