// One fine-tuning run: a model from the checkpoint fine-tuned at one
// learning rate and seed, AdamW with its warm-up and decay, the training set
// shuffled each epoch, dev evaluated after each, the selected epoch's model
// and predictions kept; data parallel, each rank a share of each batch.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include "autograd/ops.h"
#include "base/counter_rng.h"
#include "base/file_io.h"
#include "parallel/gradient_reducer.h"
#include "train/finetune_parts.h"
#include "train/loop.h"

namespace ordo::train {

using namespace finetuning;

namespace {

// This rank's share of a batch of `n` examples among `ranks`: a contiguous
// run of them, and the weight of its mean loss — ranks x share / n, so that
// the reducer's mean over the ranks is the batch's mean over its examples.
struct Share {
  int64_t begin = 0, end = 0;
  double weight = 1;
};

Share batch_share(int64_t n, int rank, int ranks) {
  Share s{n * rank / ranks, n * (rank + 1) / ranks, 0};
  s.weight = static_cast<double>(ranks) * static_cast<double>(s.end - s.begin) / static_cast<double>(n);
  if (s.begin == s.end) s.end = std::min(s.begin + 1, n), s.begin = s.end - 1;  // one example, at weight 0
  return s;
}

}  // namespace

RunResult finetuning::run_one(Task& task, const FinetuneConfig& c, const FinetuneOptions& o, const Scratch* scratch, double lr,
                              uint64_t seed, const std::string& root, const std::string& name, Device device,
                              MatmulPrecision precision, parallel::Communicator& comm,
                              const std::function<void()>& started) {
  // What is new was said once, up front.
  task.load(o.checkpoint, device, precision, seed, /*quiet=*/true, scratch, o.new_head);
  const bool lead = comm.rank() == 0;
  std::unique_ptr<parallel::GradientReducer> reducer;
  if (comm.size() > 1) {
    parallel::broadcast_parameters(comm, task.model().named_parameters());
    reducer = std::make_unique<parallel::GradientReducer>(comm, task.model().named_parameters(),
                                                      static_cast<int64_t>(c.bucket_cap_mb * (1 << 20)));
  }
  nn::AdamWConfig adam;
  adam.lr = lr;
  adam.weight_decay = c.weight_decay;
  adam.max_grad_norm = c.max_grad_norm;
  const int64_t n = task.train_size();
  const int64_t steps_per_epoch = (n + c.batch_size - 1) / c.batch_size;
  adam.total_steps = steps_per_epoch * c.epochs;
  adam.warmup_steps = static_cast<int64_t>(std::ceil(c.warmup_ratio * static_cast<double>(adam.total_steps)));
  nn::AdamW opt(task.model().named_parameters(), adam);
  if (precision == MatmulPrecision::bf16) opt.keep_weights_rounding();  // see nn/optim.h

  std::optional<MetricsLog> log;  // the open file follows its folder
  if (lead) {
    make_directories(root + "/" + name);
    log.emplace(root + "/" + name + "/metrics.jsonl", MetricsObserver{});
  }
  RunClock clock(0);
  Throughput throughput;
  RunResult result;
  int64_t step = 0;
  for (int64_t epoch = 1; epoch <= c.epochs; ++epoch) {
    const std::vector<int64_t> order =
        shuffled_order(n, CounterRng(seed, rng_stream(RngPurpose::finetune_order, epoch)));
    for (int64_t first = 0; first < n; first += c.batch_size) {
      const int64_t size = std::min(n, first + c.batch_size) - first;
      const Share share = batch_share(size, comm.rank(), comm.size());
      const std::vector<int64_t> indices(order.begin() + first + share.begin, order.begin() + first + share.end);
      ++step;
      const bool logged = step % c.log_every == 0 || step == 1 || step == adam.total_steps;
      auto forward = [&](int64_t) {
        nn::Context ctx = nn::Context::train(seed, step, comm.rank(), comm.size());
        ctx.precision = precision;
        ctx.rounded_weights = opt.rounded_weights();
        int64_t tokens = 0;
        Var loss = task.loss(indices, ctx, &tokens);
        if (share.weight != 1) loss = affine(loss, share.weight);
        return MicroBatch{loss, {{"loss", loss.value()}}, share.weight == 0 ? 0 : tokens};
      };
      auto report = [&](int64_t) -> void {
        throw Error(detail::cat("step ", step, " (epoch ", epoch, "): the fine-tuning loss is not finite; try a "
                                "smaller learning rate than ", lr));
      };
      StepResult s = optimizer_step(opt, step, 1, logged, forward, report, {&comm, reducer.get(), true});
      throughput.add(s.tokens);
      if (step == 1) started();
      if (logged && lead) {
        json::Value line = json::Value::object();
        line["step"] = step;
        line["epoch"] = epoch;
        const double tokens_per_s = throughput.per_second_and_restart();
        log->write(step_line(line, s, tokens_per_s));
        if (!o.quiet)
          std::fprintf(stderr, "  epoch %lld/%lld step %lld/%lld | loss %.4f | lr %.2e | %.0f tok/s | ETA %s\n",
                       static_cast<long long>(epoch), static_cast<long long>(c.epochs), static_cast<long long>(step),
                       static_cast<long long>(adam.total_steps), s.means.empty() ? 0.0 : s.means[0].second,
                       s.optimizer.lr, tokens_per_s,
                       format_duration(clock.seconds_left(step, adam.total_steps - step)).c_str());
      }
      // Every rank stops at the same step: a Ctrl-C seen by any stops all.
      if (comm.any(InterruptScope::interrupted())) return result;
    }
    if (!lead) continue;
    const Evaluation e = task.evaluate();
    json::Value line = json::Value::object();
    line["epoch"] = epoch;
    line["step"] = step;
    line["eval"] = e.metrics;
    line["score"] = e.score;
    log->write(line);
    const bool best = epoch == 1 || e.score > result.best.score;
    if (!o.quiet)
      std::fprintf(stderr, "  epoch %lld: dev %s, score %.4f%s\n", static_cast<long long>(epoch),
                   json::dump(e.metrics).c_str(), e.score, best ? " (best so far)" : "");
    if (best) result.best = {epoch, e.score, e.metrics, e.by_length};
    result.last = {epoch, e.score, e.metrics, e.by_length};
    // The selected epoch's predictions and model: the best so far, or the last.
    if (c.select_epoch == "last" ? epoch == c.epochs : best) {
      task.write_predictions(root + "/" + name);
      if (c.save_best) task.save(root + "/" + name + "/" + c.select_epoch);
    }
  }
  result.finished = true;
  return result;
}

}  // namespace ordo::train
