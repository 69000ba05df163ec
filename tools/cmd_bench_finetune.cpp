// `ordo bench finetune`: examples per second of fine-tuning (a training step:
// forward with the task loss, backward, AdamW) and of evaluation (forwards
// without gradients, a batch a thread on the CPU as ordo finetune evaluates)
// for sequence classification and span extraction,
// optionally beside HuggingFace's BertForSequenceClassification and
// BertForQuestionAnswering doing the same work (scripts/bench_torch_finetune.py).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "nn/evaluate_batches.h"
#include "nn/optim.h"
#include "nn/task_heads.h"
#include "pe/registry.h"
#include "tensor/device_runtime.h"
#include "tools/bench.h"
#include "tools/bench_model.h"
#include "tools/cli.h"
#include "train/loop.h"
#include "train/pretrain.h"

namespace {

using namespace ordo;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The median seconds of `work` over `steps` calls after `warmup`.
template <class Work>
double median_seconds(int warmup, int steps, Device device, Work work) {
  std::vector<double> t;
  for (int i = 0; i < warmup + steps; ++i) {
    synchronize(device);
    const double t0 = now();
    work(i);
    synchronize(device);
    if (i >= warmup) t.push_back(now() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Rates {
  double train = 0, eval = 0;            // examples per second
  double eval_mib = -1, train_mib = -1;  // what the model and the evaluation, then both, add to the peak RSS
};

// Classification: 2 labels on the pooled [CLS]; span extraction: start/end
// targets inside the window.
Rates time_task(bool span, const nn::BertConfig& mc, int64_t batch, int64_t length, int warmup, int steps,
                Device device, MatmulPrecision precision) {
  Tensor unused;
  const nn::BertInputs in = bench::random_batch(batch, length, mc.vocab_size, device, unused);
  std::vector<int64_t> labels(batch), starts(batch), ends(batch);
  for (int64_t b = 0; b < batch; ++b) labels[b] = b % 2, starts[b] = 1 + b % (length - 2), ends[b] = starts[b] + 1;
  const Tensor label_t = Tensor::from_vector(labels, {batch}), start_t = Tensor::from_vector(starts, {batch}),
               end_t = Tensor::from_vector(ends, {batch});
  nn::AdamWConfig adam;
  adam.lr = 3e-5;
  Rates r;
  // Evaluation first (a fresh model's inference memory), then training, as scripts/bench_torch_finetune.py.
  // An evaluation call is as many batches as threads, as ordo finetune's dev
  // set goes: a batch a thread (nn/evaluate_batches.h).
  const int64_t evaluated = device.is_cpu() ? bench::cpu_threads() : 1;
  const bench::ResidentPeak resident;
  if (span) {
    nn::SpanExtractor model(mc, pe::make_position_encoding(mc, device), device);
    nn::initialize_bert(model, model.bert, 1);
    r.eval = evaluated * batch / median_seconds(warmup, steps, device, [&](int) {
      nn::evaluate_batches(evaluated, device, [&](int64_t) {
        nn::Context ctx = nn::Context::eval(precision);
        model.forward(in, ctx).start.value().to_doubles();
      });
    });
    r.eval_mib = resident.mib();
    nn::AdamW opt(model.named_parameters(), adam);
    r.train = batch / median_seconds(warmup, steps, device, [&](int i) {
      nn::Context ctx = nn::Context::train(1, i);
      ctx.precision = precision;
      model.loss(model.forward(in, ctx), start_t, end_t).backward();
      opt.step();
    });
  } else {
    nn::SequenceClassifier model(mc, pe::make_position_encoding(mc, device), device, 2);
    nn::initialize_bert(model, model.bert, 1);
    r.eval = evaluated * batch / median_seconds(warmup, steps, device, [&](int) {
      nn::evaluate_batches(evaluated, device, [&](int64_t) {
        nn::Context ctx = nn::Context::eval(precision);
        model.forward(in, ctx).value().to_doubles();
      });
    });
    r.eval_mib = resident.mib();
    nn::AdamW opt(model.named_parameters(), adam);
    r.train = batch / median_seconds(warmup, steps, device, [&](int i) {
      nn::Context ctx = nn::Context::train(1, i);
      ctx.precision = precision;
      model.loss(model.forward(in, ctx), label_t).backward();
      opt.step();
    });
  }
  r.train_mib = resident.mib();
  return r;
}

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"config", "set", "steps", "warmup", "batch", "length", "squad-length", "device", "precision"},
                 {"compare-torch"});
  std::vector<std::string> configs = args.all("config");
  if (configs.empty()) configs = {"tiny", "mini"};
  const int steps = static_cast<int>(args.integer("steps", 5, 1, 100000));
  const int warmup = static_cast<int>(args.integer("warmup", 2, 0, 100000));
  const int64_t batch = args.integer("batch", 32, 1, 1 << 16);
  const int64_t length = args.integer("length", 128, 4, 1 << 16);
  const int64_t squad_length = args.integer("squad-length", 384, 4, 1 << 16);
  Device device = args.device("device", cuda_available() ? "cuda" : "cpu");
  // The products' precision, as train.precision; PyTorch's twin runs bf16 under autocast.
  const MatmulPrecision precision = train::resolve_precision(args.str("precision", "auto"), device, "--precision");
  std::printf("ordo bench finetune: examples/s of a training step (forward + task loss, backward, AdamW) and of an\n"
              "evaluation (a batch a thread on the CPU); classification %lld x %lld, SQuAD %lld x %lld; median of %d after %d warm-up\n",
              static_cast<long long>(batch), static_cast<long long>(length), static_cast<long long>(batch),
              static_cast<long long>(squad_length), steps, warmup);
  std::printf("machine: %s, %d threads; device %s; %s\n\n", bench::cpu_model().c_str(), bench::cpu_threads(),
              device.is_cpu() ? "cpu" : cuda_device_description(device.index).c_str(),
              train::precision_description(precision, device).c_str());
  // RSS: what the model and its evaluation (eval), then its training too (train), add to the peak
  // resident memory (bench::ResidentPeak), ordo's and torch's.
  bench::Table table({"config", "task", "train ex/s", "eval ex/s", "torch train ex/s", "torch eval ex/s",
                      "ordo/torch train", "ordo/torch eval", "eval RSS MiB", "torch eval RSS", "train RSS MiB",
                      "torch train RSS"});
  auto mib = [](double v) { return v < 0 ? std::string("-") : bench::fixed(v, 1); };
  for (const std::string& name : configs) {
    const std::string path = bench::resolve_config(name);
    train::RunConfig rc = train::read_run_config(path, args.all("set"));
    nn::BertConfig mc = rc.model;
    if (mc.vocab_size == 0) mc.vocab_size = rc.data.vocab_size;
    for (const bool span : {false, true}) {
      const int64_t len = std::min<int64_t>(span ? squad_length : length, mc.max_position_embeddings);
      const Rates r = time_task(span, mc, batch, len, warmup, steps, device, precision);
      std::vector<std::string> torch(6, "-");
      if (args.has("compare-torch")) {
        const std::string cmd = "python3 " + std::string(ORDO_SOURCE_DIR) + "/scripts/bench_torch_finetune.py --config " +
                                path + " --vocab-size " + std::to_string(mc.vocab_size) + " --task " +
                                (span ? "span" : "classification") + " --batch " + std::to_string(batch) +
                                " --length " + std::to_string(len) + " --steps " + std::to_string(steps) +
                                " --warmup " + std::to_string(warmup) + " --threads " +
                                std::to_string(bench::cpu_threads()) + " --precision " +
                                (precision == MatmulPrecision::bf16 ? "bf16" : "fp32") + " 2>/dev/null";
        const auto figures = bench::command_figures(cmd);
        const auto rates = figures.find("examples_per_s");
        if (rates == figures.end() || rates->second.size() != 2 || rates->second[0] <= 0 || rates->second[1] <= 0) {
          torch[0] = "unavailable";
        } else {
          const double train = rates->second[0], eval = rates->second[1];
          torch = {bench::fixed(train, 1), bench::fixed(eval, 1), bench::fixed(r.train / train, 2),
                   bench::fixed(r.eval / eval, 2), "-", "-"};
          if (const auto m = figures.find("peak_rss_mib"); m != figures.end() && m->second.size() == 2) {
            torch[4] = mib(m->second[0]);
            torch[5] = mib(m->second[1]);
          }
        }
      }
      table.add({name, span ? "span (" + std::to_string(len) + ")" : "classification (" + std::to_string(len) + ")",
                 bench::fixed(r.train, 1), bench::fixed(r.eval, 1), torch[0], torch[1], torch[2], torch[3],
                 mib(r.eval_mib), torch[4], mib(r.train_mib), torch[5]});
    }
  }
  table.print();
  return 0;
}

cli::Register command({"bench finetune",
                       "examples/s of fine-tuning and evaluation: classification and SQuAD-style span extraction",
                       "[--config tiny|mini|small|base|FILE ...] [--set key=value ...] [--steps N] [--warmup N]"
                       " [--batch B (32)] [--length L (128)] [--squad-length L (384, at most the position table)]"
                       " [--device cpu|cuda] [--precision auto|fp32|tf32|bf16] [--compare-torch]",
                       run});

}  // namespace
