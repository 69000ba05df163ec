// `ordo bench dp`: what data parallelism costs, measured where it can be and
// modelled where it cannot.
//
// Measured, per config: the bytes each rank all-reduces per step and the
// all-reduce calls (buckets) — the reducer's own layout (parallel/gradient_reducer.h)
// — and the CPU step time of 1 process and of 2 processes (mpirun -np 2,
// started by this command) at one thread each, with the per-rank batch
// fixed: the 2-process efficiency is t1 / t2 (the same work per rank, twice
// the global batch).
//
// Modelled, for N GPUs of one node (default 8 H100 SXM over NVLink): the
// step's compute is the roofline ESTIMATE of its recorded kernel calls
// (tensor/roofline.h; forward, then backward, then AdamW, recorded apart);
// each bucket's ring all-reduce takes latency + 2 (N-1)/N x bytes / bandwidth
// at a stated bus bandwidth; bucket i is ready when the backward has produced
// its share of the gradient bytes (gradients assumed to come out at an even
// rate in bytes), and the buckets go over the link one after another. What
// is left of the communication when the backward ends is exposed. Predicted
// efficiency = compute / (compute + exposed). None of this is a measurement.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "model/model.h"
#include "nn/optim.h"
#include "parallel/communicator.h"
#include "parallel/gradient_reducer.h"
#include "tensor/roofline.h"
#include "tools/bench.h"
#include "tools/bench_model.h"
#include "tools/cli.h"
#include "train/pretrain.h"

namespace {

using namespace ordo;

struct Setup {
  train::RunConfig run;
  nn::BertConfig model;
};

Setup load(const std::string& name, const std::vector<std::string>& sets) {
  Setup s{train::read_run_config(bench::resolve_config(name), sets), {}};
  s.model = s.run.model;
  if (s.model.vocab_size == 0) s.model.vocab_size = s.run.data.vocab_size;
  return s;
}

int64_t bucket_cap(const Setup& s) { return static_cast<int64_t>(s.run.train.bucket_cap_mb * (1 << 20)); }

// Mean seconds of a training step on the CPU (forward, backward with the
// reducer's hook when data parallel, AdamW), after one warm-up step.
double cpu_step_seconds(const Setup& s, int64_t batch, int steps, parallel::Communicator& comm) {
  auto model = model::build_model(s.model, Device::cpu(), false, 1);
  nn::AdamW opt(model->named_parameters(), s.run.train.adam);
  std::unique_ptr<parallel::GradientReducer> reducer;
  if (comm.size() > 1)
    reducer = std::make_unique<parallel::GradientReducer>(comm, model->named_parameters(), bucket_cap(s));
  Tensor labels;
  const nn::BertInputs inputs =
      bench::random_batch(batch, s.run.train.phases[0].max_seq_length, s.model.vocab_size, Device::cpu(), labels);
  auto step = [&](int64_t i) {
    nn::Context ctx = nn::Context::train(1, i, comm.rank(), comm.size());
    Var loss = affine(model->forward(inputs, labels, Tensor(), ctx).loss, 1.0 / comm.size());
    if (reducer) {
      loss.backward(Tensor(), false, reducer->hook());
      reducer->finish();
    } else {
      loss.backward();
    }
    opt.step();
  };
  step(0);
  comm.barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1; i <= steps; ++i) step(i);
  comm.barrier();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps;
}

// The 2-process time: this command again under mpirun, as a worker (its
// errors, if any, go to this command's standard error). -1: not measured.
double two_process_seconds(const std::string& config, const std::vector<std::string>& sets, int64_t batch, int steps) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0 || !parallel::has_mpi()) return -1;
  self[n] = '\0';
  std::string command = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                        "OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 "
                        "OMP_NUM_THREADS=1 mpirun --bind-to core -np 2 " + std::string(self) +
                        " bench dp --worker " + config + " --cpu-batch " + std::to_string(batch) + " --steps " +
                        std::to_string(steps);
  for (const std::string& set : sets) command += " --set " + set;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return -1;
  double seconds = -1;
  char line[256];
  while (std::fgets(line, sizeof line, pipe)) std::sscanf(line, "worker step seconds %lf", &seconds);
  return pclose(pipe) == 0 ? seconds : -1;
}

// The H100 roofline estimate of one step's forward, backward and AdamW.
struct StepEstimate {
  double forward = 0, backward = 0, optimizer = 0;
  double total() const { return forward + backward + optimizer; }
};

double estimate(std::vector<KernelCall> calls, const RooflineMachine& gpu) {
  // A CPU recording launches nothing; on the GPU each of ordo's kernels
  // launches at least once.
  for (KernelCall& c : calls) {
    c.launches = std::max<int64_t>(c.launches, 1);
    if (std::string(c.kernel) == "gemm") c.precision = MatmulPrecision::tf32;  // as this estimate has always taken them
  }
  return roofline(calls, gpu).total.seconds;
}

StepEstimate estimate_step(const Setup& s, const RooflineMachine& gpu) {
  auto model = model::build_model(s.model, Device::cpu(), false, 1);
  nn::AdamW opt(model->named_parameters(), s.run.train.adam);
  Tensor labels;
  const auto& phase = s.run.train.phases[0];
  const nn::BertInputs inputs = bench::random_batch(phase.batch_size, phase.max_seq_length, s.model.vocab_size,
                                                    Device::cpu(), labels);
  StepEstimate e;
  Var loss;
  {
    KernelCallRecording r;
    nn::Context ctx = nn::Context::train(1, 1);
    loss = model->forward(inputs, labels, Tensor(), ctx).loss;
    e.forward = estimate(r.calls(), gpu);
  }
  {
    KernelCallRecording r;
    loss.backward();
    e.backward = estimate(r.calls(), gpu);
  }
  {
    KernelCallRecording r;
    opt.step();
    e.optimizer = estimate(r.calls(), gpu);
  }
  return e;
}

struct Overlap {
  double communication = 0;  // all buckets, back to back
  double exposed = 0;        // after the backward ends
};

// Buckets in the order they become ready (the reducer's index order), bucket
// i ready once the backward has produced the gradient bytes up to its end.
Overlap model_overlap(const parallel::GradientReducer& reducer, double backward, int gpus, double bus_bytes_per_s,
                      double latency) {
  const double total = static_cast<double>(reducer.bytes_per_step());
  Overlap o;
  double produced = 0, link_free = 0;
  for (int64_t i = 0; i < reducer.buckets(); ++i) {
    const double bytes = static_cast<double>(reducer.bucket_bytes(i));
    produced += bytes;
    const double ready = backward * produced / total;
    const double seconds = latency + 2.0 * (gpus - 1) / gpus * bytes / bus_bytes_per_s;
    o.communication += seconds;
    link_free = std::max(link_free, ready) + seconds;
  }
  o.exposed = std::max(0.0, link_free - backward);
  return o;
}

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"config", "cpu-config", "set", "steps", "cpu-batch", "gpus", "bus-gb-s", "latency-us", "worker"},
                 {});
  const std::vector<std::string> sets = args.all("set");
  const int steps = static_cast<int>(args.integer("steps", 3, 1, 100000));
  const int64_t cpu_batch = args.integer("cpu-batch", 8, 1, 1 << 20);
  if (args.has("worker")) {  // one rank of the 2-process measurement
    std::unique_ptr<parallel::Communicator> comm = parallel::make_communicator();
    const double seconds = cpu_step_seconds(load(args.required("worker"), sets), cpu_batch, steps, *comm);
    if (comm->rank() == 0) std::printf("worker step seconds %.9f\n", seconds);
    return 0;
  }
  std::vector<std::string> configs = args.all("config"), cpu_configs = args.all("cpu-config");
  if (configs.empty()) configs = {"tiny", "mini", "base"};
  if (cpu_configs.empty()) cpu_configs = {"tiny", "mini"};
  const int gpus = static_cast<int>(args.integer("gpus", 8, 2, 1 << 16));
  const double bus = args.number("bus-gb-s", 360, 1e-3, 1e6) * 1e9;
  const double latency = args.number("latency-us", 15, 0, 1e6) * 1e-6;
  const RooflineMachine gpu = h100_sxm();
  train::set_threads(1);  // one thread per process, as each rank of the 2-process run

  std::printf("ordo bench dp: gradient all-reduce per step (measured layout), CPU steps of 1 and 2 processes at one\n"
              "thread each (measured, mean of %d steps, %lld sequences per rank), and a MODEL of %d GPUs (not a measurement)\n\n",
              steps, static_cast<long long>(cpu_batch), gpus);
  parallel::SingleProcess single;
  std::printf("measured on the CPU (%s)\n", bench::cpu_model().c_str());
  bench::Table measured({"config", "parameters", "MB all-reduced", "all-reduce calls", "1 process ms", "2 processes ms",
                         "2-process efficiency"});
  for (const std::string& name : cpu_configs) {
    const Setup s = load(name, sets);
    auto model = model::build_model(s.model, Device::cpu(), false, 1);
    parallel::GradientReducer layout(single, model->named_parameters(), bucket_cap(s));
    const double one = cpu_step_seconds(s, cpu_batch, steps, single);
    const double two = two_process_seconds(name, sets, cpu_batch, steps);
    measured.add({name, std::to_string(model->parameter_count()), bench::fixed(layout.bytes_per_step() / 1e6, 2),
                  std::to_string(layout.buckets()), bench::fixed(1e3 * one, 1),
                  two > 0 ? bench::fixed(1e3 * two, 1) : parallel::has_mpi() ? "mpirun failed" : "no MPI",
                  two > 0 ? bench::fixed(100 * one / two, 1) + "%" : "-"});
  }
  measured.print();

  std::printf("\nMODEL of one step on %d x %s, data parallel within a node, the config's own batch per GPU\n"
              "(compute: roofline estimate with TF32 products; ring all-reduce at %.0f GB/s bus bandwidth + %.0f us per call)\n",
              gpus, gpu.name.c_str(), bus / 1e9, latency * 1e6);
  bench::Table model_table({"config", "batch x len / GPU", "buckets", "MB / step", "compute ms", "of it backward ms",
                            "all-reduce ms", "exposed ms", "hidden", "efficiency", "no overlap"});
  for (const std::string& name : configs) {
    const Setup s = load(name, sets);
    auto model = model::build_model(s.model, Device::cpu(), false, 1);
    parallel::GradientReducer layout(single, model->named_parameters(), bucket_cap(s));
    const StepEstimate e = estimate_step(s, gpu);
    const Overlap o = model_overlap(layout, e.backward, gpus, bus, latency);
    const auto& phase = s.run.train.phases[0];
    model_table.add({name, std::to_string(phase.batch_size) + " x " + std::to_string(phase.max_seq_length),
                     std::to_string(layout.buckets()), bench::fixed(layout.bytes_per_step() / 1e6, 1),
                     bench::fixed(1e3 * e.total(), 2), bench::fixed(1e3 * e.backward, 2),
                     bench::fixed(1e3 * o.communication, 2), bench::fixed(1e3 * o.exposed, 2),
                     bench::fixed(100 * (1 - o.exposed / o.communication), 0) + "%",
                     bench::fixed(100 * e.total() / (e.total() + o.exposed), 1) + "%",
                     bench::fixed(100 * e.total() / (e.total() + o.communication), 1) + "%"});
  }
  model_table.print();
  std::printf("assumed: %s; bus bandwidth %.0f GB/s is NCCL's all-reduce bus bandwidth on 8 H100 SXM (NVLink 4, "
              "900 GB/s per GPU both ways), a planning figure, not measured here\n",
              gpu.source.c_str(), bus / 1e9);
  return 0;
}

cli::Register command({"bench dp",
                       "data parallelism: bytes and all-reduce calls per step, CPU steps of 1 and 2 processes, and a "
                       "model of the step on 8 GPUs",
                       "[--config NAME ... (tiny mini base)] [--cpu-config NAME ... (tiny mini)] [--set key=value ...]"
                       " [--steps N] [--cpu-batch B (8)] [--gpus N (8)] [--bus-gb-s G (360)] [--latency-us U (15)]",
                       run});

}  // namespace
