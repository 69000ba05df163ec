// `ordo finetune` (train/finetune.h): finetune() checks everything before
// the first write, then runs the learning rate x seed grid, one run after
// another or several at once as worker processes, writing results.json after
// each. Its pieces: finetune_config.cpp (the config), finetune_data.cpp and
// finetune_tasks.cpp (the tasks), finetune_run.cpp (one run's loop),
// finetune_grid.cpp (the grid and its results), finetune_workers.cpp (runs
// at once), declared in finetune_parts.h.
#include "train/finetune.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "base/error.h"
#include "base/file_io.h"
#include "base/output.h"
#include "base/subprocess.h"
#include "downstream/glue.h"
#include "nn/checkpoint.h"
#include "parallel/communicator.h"
#include "pe/registry.h"
#include "text/tokenizer.h"
#include "train/checkpoint_paths.h"
#include "train/finetune_parts.h"
#include "train/loop.h"
#include "train/position_init.h"

namespace ordo::train {

using namespace finetuning;

namespace {

text::TokenizerOptions tokenizer_options(const FinetuneConfig& c, const std::string& checkpoint) {
  text::TokenizerOptions t;
  if (c.lower_case == "auto") t.lower_case = checkpoint_lower_case(checkpoint).value_or(true);
  else t.lower_case = c.lower_case == "true";
  return t;
}

// The options that contradict each other or the config, refused.
void check_options(const FinetuneConfig& c, const FinetuneOptions& o, const parallel::Communicator& comm) {
  ORDO_CHECK(!o.out.empty(), "finetune: no output folder given (--out)");
  ORDO_CHECK(o.from_scratch || c.model.size() == 0, "model.", c.model.size() == 0 ? "" : c.model.items().front().first,
             ": the model config's keys shape a fresh model (--from-scratch); a pretrained checkpoint's shape is its own");
  ORDO_CHECK(o.from_scratch || o.init_positions_from.empty(),
             "--init-positions-from copies a position table into a fresh model: give --from-scratch too");
  ORDO_CHECK(o.worker_run.empty() || comm.size() == 1, "--worker: a worker is one process");
}

// What --from-scratch builds (none without it), with --init-positions-from's
// path resolved in `o`.
std::optional<Scratch> scratch_model(const FinetuneConfig& c, FinetuneOptions& o) {
  if (!o.from_scratch) return std::nullopt;
  Scratch scratch;
  scratch.config = nn::with_overrides(nn::load_config(o.checkpoint), c.model, "model");
  if (!o.init_positions_from.empty()) {
    o.init_positions_from = resolve_checkpoint(o.init_positions_from);
    scratch.positions = read_position_table(o.init_positions_from, scratch.config, c.max_seq_length);
  }
  return scratch;
}

// The grid's config.json: the resolved config with the checkpoint, task and data.
json::Value recorded_config(const FinetuneConfig& c, const FinetuneOptions& o) {
  json::Value recorded = c.source;
  recorded["checkpoint"] = o.checkpoint;
  recorded["task"] = o.task;
  recorded["data"] = o.data;
  recorded["from_scratch"] = o.from_scratch;
  recorded["new_head"] = o.new_head;
  if (!o.vocab.empty()) recorded["vocab"] = o.vocab;
  if (!o.init_positions_from.empty()) recorded["init_positions_from"] = o.init_positions_from;
  return recorded;
}

// Whether --out holds this grid, to be continued: the same grid in --out,
// stopped or finished, is continued (its finished runs are kept and the
// others run again); another grid there is replaced only with --overwrite.
// A worker's output is its parent's to check.
bool continues_grid(const FinetuneOptions& o, const json::Value& recorded) {
  const bool worker = !o.worker_run.empty();
  const std::optional<std::string> earlier =
      o.overwrite || worker ? std::nullopt : earlier_grid(o.out, recorded);
  ORDO_CHECK(!earlier || earlier->empty(), "'", o.out, "' holds a fine-tuning of another config: its config.json ",
             "differs at '", *earlier, "'. Give --overwrite to replace it, or another --out");
  const bool continuing = earlier.has_value();
  std::vector<InputPath> inputs = o.config_files;
  inputs.push_back({o.checkpoint, "--checkpoint"});
  inputs.push_back({o.data, "--data"});
  inputs.push_back({o.vocab, "--vocab"});
  inputs.push_back({o.init_positions_from, "--init-positions-from"});
  if (!worker) check_output(o.out, OutputKind::folder, o.overwrite || continuing, inputs);
  return continuing;
}

// The task's model from the checkpoint (read even from scratch: its tensors
// must match its config), its training examples and its positions checked.
void check_task(Task& task, const FinetuneConfig& c, const FinetuneOptions& o, const TaskFiles& files,
                const nn::BertConfig& model_config, bool scratch, Device device, MatmulPrecision precision) {
  task.load(o.checkpoint, device, precision, c.seed, o.quiet || o.from_scratch, /*scratch=*/nullptr, o.new_head);
  ORDO_CHECK(task.train_size() > 0, files.train, ": no training examples");
  ORDO_CHECK(c.max_seq_length <= model_config.max_position_embeddings - model_config.position_offset ||
                 model_config.pe.find("ape_learned") == std::string::npos,
             "train.max_seq_length ", c.max_seq_length, " is beyond the ", scratch ? "fresh model's" : "checkpoint's",
             " learned absolute position table of ", model_config.max_position_embeddings - model_config.position_offset,
             " positions (max_position_embeddings)");
}

// Rank 0's claim on the output, and what a killed grid left beside it removed.
std::unique_ptr<OutputLock> lock_grid_output(const std::string& out) {
  auto lock = std::make_unique<OutputLock>(out, "ordo finetune");
  if (!lock->stale_owner().empty())
    std::fprintf(stderr, "ordo finetune: note: took over %s, left by %s, which has ended\n", lock->path().c_str(),
                 lock->stale_owner().c_str());
  if (const int64_t removed = remove_stale_worker_folders(out))
    std::fprintf(stderr, "ordo finetune: note: removed %lld folder(s) that the workers of a killed grid left beside %s\n",
                 static_cast<long long>(removed), out.c_str());
  return lock;
}

// The runs an earlier call finished, as rank 0 reads them (every rank skips the same ones).
std::map<std::string, RunResult> runs_done_before(parallel::Communicator& comm, bool continuing, const std::string& out) {
  const bool lead = comm.rank() == 0;
  std::map<std::string, RunResult> done = lead && continuing ? finished_runs(out + "/results.json")
                                                             : std::map<std::string, RunResult>{};
  std::string names;
  for (const auto& [name, r] : done) names += name + "\n";
  comm.broadcast(names, 0);
  if (!lead)
    for (size_t start = 0, end; (end = names.find('\n', start)) != std::string::npos; start = end + 1)
      done[names.substr(start, end - start)].finished = true;
  return done;
}

// What the grid is about to do: the task and the model, the learning rates,
// seeds and epochs, the device, the processes and the runs at once.
void print_plan(const FinetuneConfig& c, const FinetuneOptions& o, const Task& task, const std::optional<Scratch>& scratch,
                const text::SubwordTokenizer& tokenizer, const nn::BertConfig& model_config, Device device,
                MatmulPrecision precision, parallel::Communicator& comm, const Parallelism& parallel,
                int64_t at_once) {
  std::string from = o.checkpoint;
  if (scratch) {
    from = "random weights in the config of " + o.checkpoint;
    if (c.model.size() > 0) from += " with model " + json::dump(c.model);
    if (scratch->positions) from += "; " + scratch->positions->description + ", trained with the rest";
  }
  std::fprintf(stderr, "ordo finetune: %s from %s (lower_case %s), %zu learning rate(s) x %lld seed(s), %lld epochs, on %s, %s\n",
               task.describe().c_str(), from.c_str(),
               tokenizer.lower_case() ? "true" : "false", c.learning_rates.size(),
               static_cast<long long>(c.seeds), static_cast<long long>(c.epochs),
               device_description(device).c_str(), precision_description(precision, device).c_str());
  if (device.is_cuda())
    std::fprintf(stderr, "attention: %s\n",
                 nn::attention_kernels(*pe::make_position_encoding(model_config, Device::cpu()), model_config, device)
                     .c_str());
  if (comm.size() > 1)
    std::fprintf(stderr, "data parallel: %d processes (%s); each batch of %lld shared among them\n", comm.size(),
                 comm.backend(device).c_str(), static_cast<long long>(c.batch_size));
  if (at_once > 1)
    std::fprintf(stderr, "up to %lld runs at once on %lld of %lld cores, each a process (train.parallel_runs)\n",
                 static_cast<long long>(at_once), static_cast<long long>(parallel.cores()),
                 static_cast<long long>(available_cores()));
}

// The grid's runs without a result, one after another (every rank alike),
// until one is stopped (by a signal); whether one was. `root` is read when
// each run starts (started() may move it); `ended` follows each run.
bool run_in_order(std::vector<GridRun>& grid, Task& task, const FinetuneConfig& c, const FinetuneOptions& o,
                  const Scratch* scratch, const std::string& root, bool continuing, Device device,
                  MatmulPrecision precision, parallel::Communicator& comm, const std::function<void()>& started,
                  const std::function<void(const GridRun&)>& ended) {
  const bool lead = comm.rank() == 0;
  bool stopped = false;
  for (GridRun& run : grid) {
    if (stopped) break;
    if (run.result) {
      if (!o.quiet) std::fprintf(stderr, "run %s: finished before, kept\n", run.name.c_str());
      continue;
    }
    if (!o.quiet) std::fprintf(stderr, "run %s\n", run.name.c_str());
    // What a stopped call left of this run is made again from its start.
    if (lead && continuing) std::filesystem::remove_all(root + "/runs/" + run.name);
    run.result =
        run_one(task, c, o, scratch, run.lr, run.seed, root, "runs/" + run.name, device, precision, comm, started);
    stopped = !run.result->finished;
    ended(run);
  }
  return stopped;
}

// The outcome, also under --quiet: one line per learning rate, then where the results are.
void print_outcome(const json::Value& results, const FinetuneOptions& o, const std::string& score_name,
                   int64_t runs_finished, bool stopped) {
  for (const json::Value& entry : results["learning_rates"].as_array()) print_lr_summary(o.task, entry, score_name);
  std::fprintf(stderr, "ordo finetune: %lld run(s) finished%s; results in %s/results.json\n",
               static_cast<long long>(runs_finished),
               stopped ? (std::string(", stopped by ") + InterruptScope::signal_name() +
                          " (the same command continues the grid)").c_str()
                       : "",
               o.out.c_str());
}

}  // namespace

FinetuneSummary finetune(const FinetuneConfig& c, const FinetuneOptions& o_in) {
  FinetuneOptions o = o_in;
  parallel::SingleProcess single;
  parallel::Communicator& comm = o.comm ? *o.comm : single;
  const bool lead = comm.rank() == 0;
  const bool worker = !o.worker_run.empty();  // its parent checked and holds the output
  if (!lead) o.quiet = true;
  // Everything is read and checked before anything is written.
  const TaskFiles files = find_task_files(o.task, o.data);
  o.checkpoint = resolve_checkpoint(o.checkpoint);
  check_options(c, o, comm);
  // The model trained: the checkpoint's, or a fresh one of its config with model.* (and a copied table).
  const std::optional<Scratch> scratch = scratch_model(c, o);
  const Scratch* fresh = scratch ? &*scratch : nullptr;
  const nn::BertConfig model_config = scratch ? scratch->config : nn::load_config(o.checkpoint);
  const json::Value recorded = recorded_config(c, o);
  const bool continuing = continues_grid(o, recorded);
  const Device device = resolve_device(c.device, comm.local_rank());
  const MatmulPrecision precision = resolve_precision(c.precision, device);
  const Parallelism parallel = parallelism(c, device, comm.size());
  set_threads(parallel.threads);
  const CheckpointTokenizer tokenizer_files = load_tokenizer(o.checkpoint, o.vocab, tokenizer_options(c, o.checkpoint),
                                                             model_config.vocab_size, o.checkpoint + "/config.json");
  const text::SubwordTokenizer& tokenizer = *tokenizer_files.tokenizer;
  if (is_squad(o.task) || (o.task != "senteval" && downstream::glue_task(o.task).pair))
    check_pair_segments(tokenizer_files, model_config.type_vocab_size, o.checkpoint + "/config.json");
  const std::unique_ptr<Task> task = make_task(o.task, files, tokenizer, c);
  check_task(*task, c, o, files, model_config, fresh != nullptr, device, precision);
  if (worker) return run_worker(*task, c, o, fresh, device, precision);
  check_same_config(comm, recorded, o.out);
  // One process writes an output at a time (rank 0 for all ranks).
  const std::unique_ptr<OutputLock> lock = lead ? lock_grid_output(o.out) : nullptr;
  const std::map<std::string, RunResult> done = runs_done_before(comm, continuing, o.out);
  std::vector<GridRun> grid = grid_runs(c);
  for (GridRun& run : grid)
    if (auto it = done.find(run.name); it != done.end()) run.result = it->second;
  const int64_t runs_left = std::count_if(grid.begin(), grid.end(), [](const GridRun& r) { return !r.result; });
  const int64_t at_once = std::min(parallel.runs, runs_left);
  if (at_once == 1 && runs_left == 1 && parallel.runs > 1) set_threads(parallel.plan(1)[0]);  // one run left: it alone
  if (!o.quiet) print_plan(c, o, *task, scratch, tokenizer, model_config, device, precision, comm, parallel, at_once);
  if (lead && continuing)
    std::fprintf(stderr, "ordo finetune: continuing the grid in %s: %zu of %zu run(s) finished before\n",
                 o.out.c_str(), done.size(), grid.size());

  // Rank 0 writes; the others only train. A new grid is built beside --out
  // and takes its place after its first step; a continued one is written in place.
  std::optional<StagedFolder> staged;
  std::string root = o.out;
  if (lead && !continuing) {
    staged.emplace(o.out);
    root = staged->path();
    write_file_atomic(root + "/config.json", json::dump(recorded, 2) + "\n");
  }
  auto in_place = [&] { return !staged || staged->committed(); };
  // The new output takes the old one's place once a run has done its first step.
  auto started = [&] {
    if (!lead || in_place()) return;
    staged->commit();
    root = o.out;
  };

  InterruptScope interrupt;
  FinetuneSummary summary;
  const std::string score_name = is_squad(o.task) ? "dev f1" : "mean of the dev metrics";
  json::Value results = json::Value::object();
  results["task"] = o.task;
  results["score"] = score_name;
  results["select_epoch"] = c.select_epoch;
  // results.json after every run, so that a grid killed at any point keeps what it finished.
  auto write_results = [&] {
    if (!lead || !in_place()) return;
    results = with_grid_results(results, grid, c);
    write_file_atomic(root + "/results.json", json::dump(results, 2) + "\n");
  };
  // After each run: the count, and results.json.
  auto ended = [&](const GridRun& run) {
    summary.runs_finished += run.result->finished;
    write_results();
  };
  bool stopped = false;  // by a signal (on any rank)
  if (at_once > 1) {
    std::string failed;
    run_in_workers(grid, parallel, c.source, worker_flags(o), o.out, [&] { return root; }, started, ended, o.quiet,
                   &stopped, &failed);
    ORDO_CHECK(failed.empty(), failed,
               in_place() ? "; the runs that ended are in " + o.out + "/results.json" : "; '" + o.out + "' is left as it was");
  } else {
    stopped = run_in_order(grid, *task, c, o, fresh, root, continuing, device, precision, comm, started, ended);
  }
  summary.interrupted = stopped;
  // The others wait for rank 0's last files: when the command returns, the runs are on disk.
  if (!lead) {  // rank 0's results are the grid's: the others evaluate nothing
    comm.barrier();
    return summary;
  }
  results = with_grid_results(results, grid, c);
  summary.results = results;
  ORDO_CHECK(in_place(), "stopped (", InterruptScope::signal_name(), ") before the first step; '", o.out,
             "' is left as it was");
  comm.barrier();
  print_outcome(results, o, score_name, summary.runs_finished + static_cast<int64_t>(done.size()), stopped);
  return summary;
}

}  // namespace ordo::train
