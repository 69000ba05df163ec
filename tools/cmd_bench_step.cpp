// `ordo bench step`: one pretraining step — the batch copied in, MLM forward
// and loss, backward, AdamW with clipping, the loss read back — in the two
// ways ordo runs it:
//   before  fp32 products, the unfused ops (nn::Context::fused = false), a
//           norm, a clip and an update per parameter tensor, each launch
//           made by the host;
//   after   bf16 products with FP32 sums, the fused kernels, the attention
//           a GPU run picks (nn/bert.h: by default the unfused ops, the
//           faster today; ORDO_FUSED_ATTENTION=1 the fused kernels), one
//           multi-tensor AdamW, each step one CUDA graph launch.
//
// Counted on the device (a real GPU, or the emulated one): kernel launches
// (ordo's, cuBLAS's products, cub's sorts — one each, a lower bound — and
// device-to-device memcpys), graph launches, host synchronisations,
// cudaMalloc calls and tensor allocations per step. The emulator runs every
// CUDA thread on the CPU, so there the counts come from a small step of the
// same structure (the config's layers, heads and position encoding; hidden
// 16 wide heads, batch 2 x 16): launches depend on the layers and kernels, not
// on the sizes.
//
// On a real GPU, --parts times *after* with each of its parts changed
// on its own (the products in fp32, the attention's fused kernels, the other fused
// ops and the optimizer unfused, no graph), and --kernel-times gives one
// eager step's device time kernel by kernel (CUDA events around each launch
// and product: KernelTiming): where a step's time goes, measured.
//
// MODELED (tensor/roofline.h), never measured: the bytes and FLOPs of the
// step's kernel calls recorded at the full shape on the CPU (whose op layer
// makes the same calls, bf16 emulated exactly, and runs the fused
// attention's reference kernels for the after step, so that the calls
// recorded are the fused kernels a GPU runs), and a roofline estimate of
// them on an H100 SXM: each call max(bytes / bandwidth, FLOPs / its units'
// peak), plus 3 us per launch (one graph launch for the after step, whose
// kernels the model lets start back to back), and the modeled MFU: the
// products' FLOPs over that time at the bf16 tensor-core peak.
//
// PREDICTED (tensor/gpu_calibration.h), never measured either: the same
// recorded calls, each kernel class's roofline time times that class's
// measured/modeled ratio fitted on a real GPU's logs (the calibration file,
// docs/gpu_runs/calibration_h200.txt by default; `ordo bench calibrate`
// refits it), printed beside the modeled figures, never in their columns.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>

#include "model/model.h"
#include "nn/bert.h"
#include "nn/fused_attention_scope.h"
#include "nn/optim.h"
#include "pe/registry.h"
#include "base/file_io.h"
#include "tensor/device_runtime.h"
#include "tensor/gpu_calibration.h"
#include "tensor/roofline.h"
#include "tools/bench.h"
#include "tools/bench_model.h"
#include "tools/cli.h"
#include "train/pretrain.h"

namespace {

using namespace ordo;

struct Mode {
  const char* name;
  MatmulPrecision precision;
  bool fused;   // the fused ops and the multi-tensor AdamW
  bool graphs;  // one CUDA graph launch a step
  // The fused attention's switch for this mode (where `fused`): as it is set
  // (ORDO_FUSED_ATTENTION; auto, the default, runs the unfused ops), or forced.
  std::optional<nn::FusedAttention> attention;
};
const Mode kBefore{"before", MatmulPrecision::fp32, false, false, std::nullopt};
const Mode kAfter{"after", MatmulPrecision::bf16, true, true, std::nullopt};

struct Case {
  std::string name;
  nn::BertConfig model;
  nn::AdamWConfig adam;
  int64_t batch = 0, length = 0;
};

// What the device did in one step (means over the measured steps).
struct Counts {
  double launches = 0;        // kernels (ordo's, cuBLAS's products, cub's sorts) and device-to-device memcpys
  double graph_launches = 0;
  double host_syncs = 0, mallocs = 0, allocations = 0;
  double seconds = 0;         // wall time
};

// One model, optimizer and batch on a device, stepped in a mode.
struct Stepper {
  std::unique_ptr<nn::PretrainingModel> model;
  std::unique_ptr<nn::AdamW> opt;
  nn::BertInputs host;
  Tensor labels;
  nn::BertInputs device_inputs;  // the graph's inputs
  nn::MlmRows rows;
  std::unique_ptr<train::GraphedStep> graphed;
  Mode mode;
  Device device;
  bool fused_attention_on_cpu = false;  // nn::Context's: the CPU recording of the after step

  Stepper(const Case& c, int64_t batch, int64_t length, Mode m, Device d) : mode(m), device(d) {
    model = model::build_model(c.model, device, false, 1);
    nn::AdamWConfig adam = c.adam;
    adam.fused = mode.fused;
    opt = std::make_unique<nn::AdamW>(model->named_parameters(), adam);
    // After: AdamW writes the weights' bf16 rounding with its update (pretrain's).
    if (mode.fused && mode.precision == MatmulPrecision::bf16) opt->keep_weights_rounding();
    host = bench::random_batch(batch, length, c.model.vocab_size, Device::cpu(), labels);
    // One segment, given with the facts a training batch brings (pretrain's to_device).
    if (!host.segment_ids.defined()) host.segment_ids = Tensor::zeros({batch, length}, DType::i64, Device::cpu());
    const Tensor positions = nn::default_positions(batch, length, Device::cpu());
    host.facts = nn::input_facts(positions.data<int64_t>(), host.segment_ids.data<int64_t>(), batch, length);
    // After: the padding bias made on the host with the batch, as pretrain's to_device makes it.
    if (mode.fused)
      host.padding_bias = nn::attention_bias(host.attention_mask, batch, length, false, DType::f32, Device::cpu());
    if (mode.graphs) {
      // Everything the forward reads made before the capture, the facts known on the host.
      device_inputs.input_ids = host.input_ids.to(device);
      device_inputs.attention_mask = host.attention_mask.to(device);
      device_inputs.positions = positions.to(device);
      device_inputs.segment_ids = host.segment_ids.to(device);
      device_inputs.facts = host.facts;
      if (host.padding_bias.defined()) device_inputs.padding_bias = host.padding_bias.to(device);
      rows = nn::mlm_rows(labels, device);  // the same batch every step: its own count is the fixed shape
      graphed = std::make_unique<train::GraphedStep>(*opt, device);
    }
  }

  // Step `step`; returns the loss (the one read a logged step makes).
  double step(int64_t step) {
    nn::FusedAttentionScope attention(mode.attention);
    if (!graphed) {
      nn::Context ctx = nn::Context::train(1, step);
      ctx.precision = mode.precision;
      ctx.fused = mode.fused;
      ctx.fused_attention_on_cpu = fused_attention_on_cpu;
      ctx.rounded_weights = opt->rounded_weights();
      nn::BertInputs in;
      in.input_ids = host.input_ids.to(device);
      in.attention_mask = host.attention_mask.to(device);
      in.segment_ids = host.segment_ids.to(device);
      in.facts = host.facts;
      if (host.padding_bias.defined()) in.padding_bias = host.padding_bias.to(device);
      nn::PretrainingOutput out = model->forward(in, labels, Tensor(), ctx);
      out.loss.backward();
      opt->step(/*read_norm=*/false);
      return out.loss.value().item();
    }
    auto stage = [&] { device_inputs.input_ids.copy_from(host.input_ids); };
    auto forward = [&](int64_t) {
      nn::Context ctx = nn::Context::train(1, 0);
      ctx.precision = mode.precision;
      ctx.next_stream = 0;
      ctx.stream_base = graphed->stream_base();
      ctx.rounded_weights = opt->rounded_weights();
      nn::PretrainingOutput out = model->forward(device_inputs, rows, Tensor(), ctx);
      return train::MicroBatch{out.loss, {{"loss", out.loss.value()}}, 0};
    };
    auto report = [](int64_t) { throw Error("bench step: the loss is not finite"); };
    return graphed->run(step, true, stage, forward, report, "bench").means.at(0).second;
  }
};

Counts count(const Case& c, int64_t batch, int64_t length, Mode mode, Device device, int warmup, int steps) {
  Stepper s(c, batch, length, mode, device);
  int64_t n = 0;
  // With graphs, on until the step is captured (steps run as they are until
  // one finds every block cached: train::GraphedStep).
  for (int i = 0; i < warmup || (s.graphed && s.graphed->captures() == 0); ++i) s.step(++n);
  synchronize(device);
  reset_device_counters();
  const int64_t allocations_before = allocator_stats(device).allocations;
  int64_t products = 0;
  const auto start = std::chrono::steady_clock::now();
  {
    KernelCallRecording recording;  // the products' launches, which cuBLAS makes
    for (int i = 0; i < steps; ++i) s.step(++n);
    for (const KernelCall& k : recording.calls()) products += std::strcmp(k.kernel, "gemm") == 0;
  }
  const DeviceCounters d = device_counters();
  synchronize(device);
  Counts r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps;
  // A device-to-device memcpy is a stream operation as a kernel is (a node of a graph, a slot eagerly);
  // a cub sort is one launch or more (cub's kernels, by the input's size): counted as one.
  r.launches = static_cast<double>(d.kernel_launches + d.device_copies + products + d.sorts) / steps;
  r.graph_launches = static_cast<double>(d.graph_launches) / steps;
  r.host_syncs = static_cast<double>(d.host_syncs) / steps;
  r.mallocs = static_cast<double>(d.device_mallocs) / steps;
  r.allocations = static_cast<double>(allocator_stats(device).allocations - allocations_before) / steps;
  return r;
}

// The same structure at the smallest sizes, for counting on the emulator:
// heads 16 wide, the narrowest the attention's tensor-core tiles take
// (attention_runs_on_tiles), so that the kernels counted are the ones a
// 64-wide head runs.
Case small_of(const Case& c) {
  Case s = c;
  s.model.hidden_size = 16 * c.model.num_attention_heads;
  s.model.intermediate_size = 2 * s.model.hidden_size;
  s.model.vocab_size = 64;
  return s;
}

// One step's kernel calls at the full shape, recorded on the CPU.
std::vector<KernelCall> record_on_cpu(const Case& c, Mode mode) {
  Mode eager = mode;
  eager.graphs = false;  // the CPU has no graphs; the graph holds these very calls
  Stepper s(c, c.batch, c.length, eager, Device::cpu());
  s.fused_attention_on_cpu = mode.fused;  // the attention's calls as a GPU makes them (fused, or its fallback)
  KernelCallRecording recording;
  s.step(1);
  return recording.calls();
}

// A call of the attention proper: it touches a [B, H, L, *] tensor (the
// scores, the heads, the relative terms) or Q, K and V's [B, L, 3, H, d]
// (their gradients' layout copies), which nothing else in BERT has.
bool attention_call(const KernelCall& call) {
  for (const Shape& s : call.shapes)
    if (s.size() >= 4) return true;
  return false;
}

struct Model {
  double bytes = 0, flops = 0, product_flops = 0;
  double kernels_seconds = 0;    // the calls' roofline time, launches left out
  double attention_seconds = 0;  // of it, the attention's
};

Model model_of(const std::vector<KernelCall>& calls, const RooflineMachine& machine) {
  Model m;
  for (const KernelCall& call : calls) {
    const double flops = kernel_flops(call);
    const double seconds = std::max(call.bytes / machine.bytes_per_second, kernel_compute_seconds(call, machine));
    m.bytes += call.bytes;
    m.flops += flops;
    m.kernels_seconds += seconds;
    if (attention_call(call)) m.attention_seconds += seconds;
  }
  m.product_flops = product_flops(calls);
  return m;
}

std::string arrow(const std::string& a, const std::string& b) { return a + " -> " + b; }
std::string fixed(double v, int d) { return bench::fixed(v, d); }

// One eager step's device time kernel by kernel (the means over `steps`
// steps), and the timed steps' wall time each.
struct KernelTimes {
  std::vector<KernelTime> kernels;
  double step_seconds = 0;
};
KernelTimes time_kernels(const Case& c, int64_t batch, int64_t length, Mode mode, Device device, int warmup,
                         int steps) {
  mode.graphs = false;  // a graph's replay runs its kernels unseen
  Stepper s(c, batch, length, mode, device);
  int64_t n = 0;
  for (int i = 0; i < warmup; ++i) s.step(++n);
  synchronize(device);
  KernelTimes r;
  KernelTiming timing;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) s.step(++n);
  synchronize(device);
  r.step_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps;
  r.kernels = timing.stop();
  for (KernelTime& k : r.kernels) k.seconds /= steps;
  return r;
}

void print_kernel_times(const std::string& what, const KernelTimes& t, int steps, bool emulated) {
  double total = 0, calls = 0;
  for (const KernelTime& k : t.kernels) total += k.seconds, calls += k.calls;
  std::printf("\n%s, one eager step kernel by kernel (MEASURED%s: CUDA events around each launch and\n"
              "product, means of %d steps; kernels of 0.5%% of the sum or more): %.0f launches, their spans' sum\n"
              "%.3f ms, the timed step's wall time %.3f ms (the events' own cost included; the gap is the device idle)\n",
              what.c_str(), emulated ? " on the emulated GPU: the CPU's time, not a GPU's" : "", steps, calls / steps,
              1e3 * total, 1e3 * t.step_seconds);
  bench::Table table({"kernel", "calls", "ms", "us a call", "share"});
  double rest = 0, rest_calls = 0;
  for (const KernelTime& k : t.kernels) {
    if (k.seconds < 0.005 * total) {
      rest += k.seconds, rest_calls += k.calls;
      continue;
    }
    const double per_step = static_cast<double>(k.calls) / steps;
    table.add({k.kernel, fixed(per_step, 0), fixed(1e3 * k.seconds, 3), fixed(1e6 * k.seconds / per_step, 1),
               fixed(100 * k.seconds / total, 1) + "%"});
  }
  table.add({"(the rest)", fixed(rest_calls / steps, 0), fixed(1e3 * rest, 3), "-",
             fixed(total > 0 ? 100 * rest / total : 0, 1) + "%"});
  table.print();
}

// The per-kernel roofline of one recorded step (the kernels taking 1% or more).
void print_kernels(const std::string& what, const std::vector<KernelCall>& calls, const RooflineMachine& machine) {
  const Roofline r = roofline(calls, machine);
  std::printf("\n%s: its kernels, MODELED (no launch overhead: the step is one graph launch)\n", what.c_str());
  bench::Table table({"kernel", "calls", "MiB touched", "GFLOP", "modeled us", "share", "bound by"});
  const double total = r.total.memory_seconds + r.total.compute_seconds;
  for (const RooflineRow& row : r.rows) {
    const double seconds = row.memory_seconds + row.compute_seconds;
    if (seconds < 0.01 * total) continue;
    table.add({row.kernel, std::to_string(row.calls), fixed(row.bytes / (1 << 20), 1), fixed(row.flops / 1e9, 2),
               fixed(1e6 * seconds, 1), fixed(100 * seconds / total, 1) + "%",
               row.compute_seconds > row.memory_seconds ? "FLOPs" : "bytes"});
  }
  table.print();
}

// One recorded step's kernel classes: calls and MODELED us (the table
// `ordo bench calibrate` reads back), and beside them, with a calibration,
// the ratio each takes (from which class: '*' where not its own) and the
// PREDICTED us.
void print_classes(const std::string& what, const ClassTimes& modeled, const Calibration* calibration) {
  std::printf("\n%s: MODELED by kernel class, %.0f launches (roofline, no launch overhead)%s\n", what.c_str(),
              modeled.launches, calibration ? "; PREDICTED beside it (ratio from: '*' a nearest class's)" : "");
  std::vector<std::string> columns = {"class", "calls", "modeled us"};
  if (calibration) columns.insert(columns.end(), {"ratio", "from", "predicted us"});
  bench::Table table(columns);
  std::optional<Prediction> p;
  if (calibration) p = predict(modeled, *calibration);
  for (const auto& [name, seconds] : modeled.seconds) {
    std::vector<std::string> row = {name, fixed(modeled.calls.at(name), 0), fixed(1e6 * seconds, 1)};
    if (p) {
      for (const ClassPrediction& c : p->classes) {
        if (c.kernel_class != name) continue;
        row.insert(row.end(), {fixed(c.ratio, 2), c.ratio_from == name ? "" : "*" + c.ratio_from,
                               fixed(1e6 * c.predicted_seconds, 1)});
      }
    }
    table.add(row);
  }
  table.print();
}

// The calibration to predict with: --calibration FILE, or the repository's
// (none: no PREDICTED figures, said so).
std::optional<Calibration> load_calibration(const cli::Args& args, std::string& path) {
  path = args.str("calibration", std::string(ORDO_SOURCE_DIR) + "/docs/gpu_runs/calibration_h200.txt");
  if (!args.has("calibration") && !file_exists(path)) return std::nullopt;
  return parse_calibration(read_file(path), path);
}

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"config", "set", "steps", "warmup", "batch", "length", "device", "calibration"},
                 {"detail", "parts", "kernel-times", "no-model", "classes", "model-only"});
  const int steps = static_cast<int>(args.integer("steps", 3, 1, 100000));
  const int warmup = static_cast<int>(args.integer("warmup", 2, 0, 100000));
  const Device device = args.device("device", cuda_available() ? "cuda" : "cpu");
  const bool cuda = device.is_cuda();
  const bool emulated = cuda && cuda_device_description(device.index).find("emulated") != std::string::npos;
  const bool with_model = !args.has("no-model");
  ORDO_CHECK(!args.has("detail") || with_model, "bench step: --detail is the MODELED table's; drop --no-model");
  ORDO_CHECK(!args.has("classes") || with_model, "bench step: --classes is the MODELED table's; drop --no-model");
  // The CPU's steps counted only tensor allocations: half a base run's minutes.
  const bool model_only = args.has("model-only");
  ORDO_CHECK(!model_only || (!cuda && with_model),
             "bench step: --model-only is the CPU's (--device cpu), with the MODELED tables");
  std::string calibration_path;
  const std::optional<Calibration> calibration = with_model ? load_calibration(args, calibration_path) : std::nullopt;
  ORDO_CHECK(cuda || !(args.has("parts") || args.has("kernel-times")),
             "bench step: --parts and --kernel-times time a CUDA device's step (--device cuda)");

  // The shapes, or the configs asked for at their own (or the given) batch and length.
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> wanted;
  if (args.all("config").empty()) {
    wanted = {{"tiny", {32, 64}}, {"base", {32, 128}}, {"base", {8, 512}}};
  } else {
    for (const std::string& name : args.all("config")) wanted.push_back({name, {0, 0}});
  }
  std::vector<Case> cases;
  for (const auto& [name, shape] : wanted) {
    const train::RunConfig rc = train::read_run_config(bench::resolve_config(name), args.all("set"));
    Case c;
    c.name = name;
    c.model = rc.model;
    if (c.model.vocab_size == 0) c.model.vocab_size = rc.data.vocab_size;
    c.adam = rc.train.adam;
    c.batch = args.integer("batch", shape.first ? shape.first : rc.train.phases[0].batch_size, 1, 1 << 20);
    c.length = args.integer("length", shape.second ? shape.second : rc.train.phases[0].max_seq_length, 2, 1 << 20);
    cases.push_back(c);
  }

  std::printf("ordo bench step: one pretraining step (batch copied in, MLM forward + loss, backward, AdamW with\n"
              "clipping, loss read back), before -> after:\n"
              "  before: fp32 products, unfused ops, a norm, a clip and an update per parameter, launches one by one\n"
              "  after:  bf16 products (FP32 sums), fused residual+dropout+LayerNorm and bias+activation, the\n"
              "          attention a GPU run picks (below), one multi-tensor AdamW (2 launches; its update writes\n"
              "          the weights' bf16 rounding, which the next forward's products take), one CUDA graph\n"
              "          launch a step\n"
              "launches: ordo's kernels, cuBLAS's products, cub's radix sorts (one each: cub launches one or more)\n"
              "          and device-to-device memcpys (a stream operation each)\n"
              "counts: %s%s\n\n",
              cuda ? cuda_device_description(device.index).c_str() : "cpu",
              emulated ? " — each config's structure at heads 16 wide, batch 2 x 16 (launches depend on the "
                         "layers and kernels, not the sizes)"
                       : "");
  if (!cuda) std::printf("(on the CPU there are no launches, syncs or copies: only tensor allocations apply)\n");
  for (const Case& c : cases)  // the after step's attention on a GPU (the CPU recording follows it)
    std::printf("attention of %s after: %s\n", c.name.c_str(),
                nn::attention_kernels(*pe::make_position_encoding(c.model, Device::cpu()), c.model, Device::cuda(0))
                    .c_str());

  bench::Table counts({"config", "batch x len", "launches", "per layer", "outside layers", "graph launches",
                       "host syncs", "cudaMalloc", "allocations", "step ms"});
  const RooflineMachine machine = h100_sxm();
  bench::Table modeled({"config", "batch x len", "GB moved", "TFLOP", "ms, launches one by one", "ms",
                        "MFU", "attention ms"});
  std::vector<std::pair<std::string, std::vector<KernelCall>>> details;
  bench::Table predicted({"config", "batch x len", "before ms (eager)", "after ms, launches one by one", "after ms",
                          "after, flagged classes"});
  std::vector<std::pair<std::string, ClassTimes>> classes;
  bench::Table parts({"config", "batch x len", "after", "eager (no graph)", "eager, fp32 products",
                      "eager, fused attention", "eager, unfused ops + AdamW", "before"});
  std::vector<std::pair<std::string, KernelTimes>> kernel_times;
  for (const Case& c : cases) {
    const std::string shape = std::to_string(c.batch) + " x " + std::to_string(c.length);
    Counts before, after, after_eager;
    double per_layer_before = 0, per_layer_after = 0;
    const Case counted = emulated ? small_of(c) : c;
    const int64_t b = emulated ? 2 : c.batch, l = emulated ? 16 : c.length;
    Mode fused_eager = kAfter;  // after, its kernels launched one by one
    fused_eager.graphs = false;
    if (cuda) {
      before = count(counted, b, l, kBefore, device, warmup, steps);
      after = count(counted, b, l, kAfter, device, warmup, steps);
      after_eager = count(counted, b, l, fused_eager, device, warmup, steps);
      // One layer more: the launches a layer makes.
      Case deeper = counted;
      ++deeper.model.num_hidden_layers;
      per_layer_before = count(deeper, b, l, kBefore, device, warmup, 1).launches - before.launches;
      Mode deeper_after = fused_eager;
      per_layer_after = count(deeper, b, l, deeper_after, device, warmup, 1).launches - after_eager.launches;
    } else if (!model_only) {
      before = count(c, c.batch, c.length, kBefore, device, warmup, steps);
      after = after_eager = count(c, c.batch, c.length, fused_eager, device, warmup, steps);
    }
    const int64_t layers = c.model.num_hidden_layers;
    auto figure = [&](double v) { return cuda ? fixed(v, 0) : std::string("-"); };
    counts.add({c.name, shape, cuda ? arrow(fixed(before.launches, 0), fixed(after_eager.launches, 0)) : "-",
                cuda ? arrow(fixed(per_layer_before, 0), fixed(per_layer_after, 0)) : "-",
                cuda ? arrow(fixed(before.launches - layers * per_layer_before, 0),
                             fixed(after_eager.launches - layers * per_layer_after, 0))
                     : "-",
                cuda ? arrow("0", fixed(after.graph_launches, 0) + " (" + fixed(after.launches, 0) + " kernels)")
                     : "-",
                cuda ? arrow(figure(before.host_syncs), figure(after.host_syncs)) : "-",
                cuda ? arrow(figure(before.mallocs), figure(after.mallocs)) : "-",
                model_only ? "-" : arrow(fixed(before.allocations, 0), fixed(after.allocations, 0)),
                emulated || !cuda ? "-" : arrow(fixed(1e3 * before.seconds, 2), fixed(1e3 * after.seconds, 2))});

    if (args.has("parts")) {  // each part changed on the eager step (a graph's capture is its own question)
      auto ms = [&](Mode m) { return fixed(1e3 * count(counted, b, l, m, device, warmup, steps).seconds, 2); };
      Mode fp32 = fused_eager, fused_attention = fused_eager, unfused = fused_eager;
      fp32.precision = MatmulPrecision::fp32;
      fused_attention.attention = nn::FusedAttention::on;
      unfused.fused = false;
      parts.add({c.name, shape, fixed(1e3 * after.seconds, 2), fixed(1e3 * after_eager.seconds, 2), ms(fp32),
                 ms(fused_attention), ms(unfused), fixed(1e3 * before.seconds, 2)});
    }
    if (args.has("kernel-times")) {
      kernel_times.emplace_back(c.name + " " + shape + " after",
                                time_kernels(counted, b, l, fused_eager, device, warmup, steps));
      kernel_times.emplace_back(c.name + " " + shape + " before",
                                time_kernels(counted, b, l, kBefore, device, warmup, steps));
    }
    if (!with_model) continue;
    // The model at the full shape, from the CPU's recording.
    const std::vector<KernelCall> calls_before = record_on_cpu(c, kBefore), calls_after = record_on_cpu(c, kAfter);
    const Model mb = model_of(calls_before, machine), ma = model_of(calls_after, machine);
    // Launches: the device's counts where there is one; else the recorded calls (one each, at least).
    auto launches_of = [&](const std::vector<KernelCall>& calls, const Counts& counted) {
      if (cuda) return counted.launches;
      double n = 0;
      for (const KernelCall& k : calls) n += std::max<int64_t>(1, kernel_launches(k));
      return n;
    };
    const double t_before = mb.kernels_seconds + launches_of(calls_before, before) * machine.launch_seconds;
    const double t_after_eager = ma.kernels_seconds + launches_of(calls_after, after_eager) * machine.launch_seconds;
    const double t_after = ma.kernels_seconds + 1 * machine.launch_seconds;  // one graph launch
    const double mfu_before = mb.product_flops / (t_before * machine.bf16_flops);
    const double mfu_after = ma.product_flops / (t_after * machine.bf16_flops);
    modeled.add({c.name, shape, arrow(fixed(mb.bytes / 1e9, 2), fixed(ma.bytes / 1e9, 2)),
                 arrow(fixed(mb.flops / 1e12, 2), fixed(ma.flops / 1e12, 2)),
                 arrow(fixed(1e3 * t_before, 2), fixed(1e3 * t_after_eager, 2)), fixed(1e3 * t_after, 2),
                 arrow(fixed(100 * mfu_before, 1) + "%", fixed(100 * mfu_after, 1) + "%"),
                 arrow(fixed(1e3 * mb.attention_seconds, 2), fixed(1e3 * ma.attention_seconds, 2))});
    if (args.has("detail")) details.emplace_back(c.name + " " + shape + " after", calls_after);
    const ClassTimes classes_before = modeled_by_class(calls_before, machine),
                     classes_after = modeled_by_class(calls_after, machine);
    if (args.has("classes")) {
      classes.emplace_back(c.name + " " + shape + " after", classes_after);
      classes.emplace_back(c.name + " " + shape + " before", classes_before);
    }
    if (calibration) {
      const Prediction pb = predict(classes_before, *calibration), pa = predict(classes_after, *calibration);
      std::string flagged;
      for (const ClassPrediction& k : pa.classes)
        if (k.ratio_from != k.kernel_class) flagged += (flagged.empty() ? "" : ", ") + k.kernel_class + " as " + k.ratio_from;
      predicted.add({c.name, shape, fixed(1e3 * pb.eager_seconds, 2), fixed(1e3 * pa.eager_seconds, 2),
                     fixed(1e3 * pa.graph_seconds, 2), flagged.empty() ? "none" : flagged});
    }
  }
  std::printf("per step%s:\n", cuda ? "" : " (tensor allocations only)");
  counts.print();
  if (args.has("parts")) {
    std::printf("\nafter with one part changed at a time, step ms (MEASURED%s; 'eager' launches after's\n"
                "kernels one by one; each 'eager, ...' column is that eager step with the one part named changed;\n"
                "'unfused ops + AdamW': the unfused LayerNorm, GELU and loss and the per-tensor AdamW):\n",
                emulated ? " on the emulated GPU, at heads 16 wide and batch 2 x 16:\nthe CPU's time, not a GPU's" : "");
    parts.print();
  }
  for (const auto& [what, times] : kernel_times) print_kernel_times(what, times, steps, emulated);
  if (!with_model) return 0;
  std::printf("\nMODELED, not measured: each recorded kernel call at max(bytes / %.2f TB/s, FLOPs / its units' peak)\n"
              "on an %s (products: bf16 %.0f, TF32 %.0f, FP32 %.0f TFLOP/s dense; every other kernel FP32, but\n"
              "the fused attention's tensor-core tiles, whose products count at the bf16 peak);\n"
              "'ms, launches one by one' adds %.0f us per launch, 'ms' (after) one graph launch; MFU = the products'\n"
              "FLOPs (the fused attention's scores and P V counted as the unfused products would be) / (ms x %.0f\n"
              "TFLOP/s); 'attention ms' = the calls touching a [B, H, L, *] or [B, L, 3, H, d] tensor (before: the\n"
              "unfused attention's scores, softmax, dropout, P V, the heads' layout copies, their gradients; after:\n"
              "the fused kernels, the heads' layout copies and their gradients):\n",
              machine.bytes_per_second / 1e12, machine.name.c_str(), machine.bf16_flops / 1e12,
              machine.tf32_flops / 1e12, machine.fp32_flops / 1e12, 1e6 * machine.launch_seconds,
              machine.bf16_flops / 1e12);
  modeled.print();
  std::printf("assumed: %s; every kernel streams its tensors once at full bandwidth and every product runs at\n"
              "peak (a lower bound); a graph's kernels start back to back (an H100 still leaves ~1-2 us between\n"
              "them, not modeled); bytes and FLOPs recorded on the CPU at the full shape, bf16 emulated there\n",
              machine.source.c_str());
  if (calibration) {
    std::printf("\nPREDICTED, not measured, for %s:\n"
                "each kernel class's MODELED time (above, from the same calls) x its measured/modeled ratio, x %.4f\n"
                "for the kernels the logs lump as '(the rest)'; with a graph nothing more, launched one by one\n"
                "%.2f us a launch more; a class no lease measured, or whose kernels changed since (the\n"
                "calibration's 'changed' lines), takes its nearest measured class's ratio (flagged). The ratios\n"
                "carry no floor a launch: a step of small kernels (tiny) comes out far too fast (its measured\n"
                "steps took 3.6-6x this). Calibration: %s\n",
                calibration->device.c_str(), 1 + calibration->unlisted_fraction,
                1e6 * calibration->eager_gap_seconds_per_launch, calibration_path.c_str());
    predicted.print();
  } else {
    std::printf("\n(no calibration file at %s: no PREDICTED figures)\n", calibration_path.c_str());
  }
  for (const auto& [what, times] : classes) print_classes(what, times, calibration ? &*calibration : nullptr);
  for (const auto& [what, calls] : details) print_kernels(what, calls, machine);
  return 0;
}

cli::Register command({"bench step",
                       "one pretraining step before -> after: launches, host syncs, allocations per step, and its "
                       "bytes, FLOPs, roofline time and MFU MODELED on an H100",
                       "[--config tiny|mini|small|base|FILE ...] [--set key=value ...] [--batch B] [--length L]"
                       " [--steps N] [--warmup N] [--device cpu|cuda] [--detail] [--parts] [--kernel-times]"
                       " [--no-model] [--classes] [--model-only] [--calibration FILE]\n"
                       "  --parts: after's step time with each part changed on its own (a CUDA device);\n"
                       "  --kernel-times: one eager step's device time kernel by kernel, after and before (CUDA\n"
                       "  events; a CUDA device); --no-model: leave out the MODELED table and its CPU recording\n"
                       "  without --config: tiny 32 x 64, base 32 x 128 and base 8 x 512 (the MODELED figures record\n"
                       "  one step of each on the CPU at that shape: minutes for base);\n"
                       "  PREDICTED: the MODELED calls x each kernel class's measured/modeled ratio from the\n"
                       "  calibration (default docs/gpu_runs/calibration_h200.txt; `ordo bench calibrate` fits it);\n"
                       "  --classes: each step's MODELED (and PREDICTED) time by kernel class; --model-only (the\n"
                       "  CPU): only the recording behind them, no step counted",
                       run});

}  // namespace
