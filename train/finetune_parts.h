// The pieces of `ordo finetune` its files share (train/finetune.h is the
// interface; this is not): the tasks (finetune_tasks.cpp, their files and
// readers in finetune_data.cpp), one run's loop (finetune_run.cpp), the
// learning rate x seed grid and its results.json (finetune_grid.cpp), and the
// grid's runs as worker processes (finetune_workers.cpp); finetune.cpp
// strings them together.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/json.h"
#include "downstream/glue.h"
#include "nn/bert_config.h"
#include "nn/module.h"
#include "parallel/communicator.h"
#include "text/subword.h"
#include "train/finetune.h"
#include "train/position_init.h"

namespace ordo::train::finetuning {

// ---- a task: its data, its model, its evaluation (finetune_tasks.cpp, finetune_data.cpp) -----

// The first n of `items` (train.max_train_examples); all when n is 0.
template <class T>
void keep_first(std::vector<T>& items, int64_t n) {
  if (n > 0 && static_cast<int64_t>(items.size()) > n) items.resize(static_cast<size_t>(n));
}

// squad or squad2.
bool is_squad(const std::string& task);

// One epoch's evaluation: the metrics per dev set ("dev" or MNLI's "dev_matched"
// and "dev_mismatched") and the score that picks the best epoch.
struct Evaluation {
  json::Value metrics = json::Value::object();
  double score = 0;
  json::Value by_length;  // per evaluated set, the accuracy by length (classification; null otherwise)
};

// What --from-scratch builds: the checkpoint's config with the model.* keys,
// and the position table copied into it (--init-positions-from) when given.
struct Scratch {
  nn::BertConfig config;
  std::optional<PositionTable> positions;
};

class Task {
 public:
  virtual ~Task() = default;
  virtual int64_t train_size() const = 0;
  virtual std::string describe() const = 0;
  // A fresh model from the checkpoint for one run (the new head from `seed`).
  // With `scratch`, its config with new random weights (and a copied position
  // table): the baseline that shows what pretraining brings. `precision`:
  // of the products of the task's own forwards (evaluation, predictions).
  virtual void load(const std::string& checkpoint, Device device, MatmulPrecision precision, uint64_t seed,
                    bool quiet, const Scratch* scratch, bool new_head) = 0;
  virtual nn::Module& model() = 0;
  // The loss on training examples `indices`, and the positions it processed.
  virtual Var loss(const std::vector<int64_t>& indices, nn::Context& ctx, int64_t* tokens) = 0;
  virtual Evaluation evaluate() = 0;
  // The last evaluation's predictions (and, for GLUE, the test files') into `dir`.
  virtual void write_predictions(const std::string& dir) = 0;
  // The model's checkpoint into `dir`.
  virtual void save(const std::string& dir) = 0;
};

// A classification task's examples: GLUE's files, or a SentEval probing file
// (its own label set; downstream/senteval.h).
struct ClassificationData {
  std::shared_ptr<const downstream::GlueTask> task;  // the sets point at it
  downstream::GlueSet train;
  // The labelled sets evaluated each epoch, by name ("dev", "dev_matched",
  // "dev_shuffle_3", SentEval's "test"); the first picks the best epoch.
  std::vector<std::pair<std::string, downstream::GlueSet>> evaluated;
  std::vector<downstream::GlueSet> test;  // GLUE's unlabelled test files, predicted into submission files
};

// "dev", "dev_matched", "dev_mismatched": a data file's name without its folder and extension.
std::string dev_key(const std::string& path);
ClassificationData read_glue_data(const downstream::GlueTask& task, const TaskFiles& files);
ClassificationData read_senteval_data(const std::string& path);

// The task `name` on its files, its examples made into the model's inputs:
// SQuAD (v1.1, v2.0 for squad2), or a classification task (GLUE's, a
// SentEval file) on its first train.max_train_examples examples.
std::unique_ptr<Task> make_task(const std::string& name, const TaskFiles& files, const text::SubwordTokenizer& tokenizer,
                                const FinetuneConfig& c);

// ---- one run (finetune_run.cpp) ---------------------------------------------------------------

struct EpochResult {
  int64_t epoch = 0;
  double score = 0;
  json::Value metrics;
  json::Value by_length;  // null for a task without it
};

// A run's best epoch (by the task's score) and its last; the config's
// select_epoch says which one the run reports.
struct RunResult {
  bool finished = false;
  EpochResult best, last;
  const EpochResult& selected(const std::string& select_epoch) const { return select_epoch == "last" ? last : best; }
};

// Fine-tunes one model (learning rate `lr`, seed `seed`) into root/name;
// `started` is called after its first optimizer step, and may move `root`
// (the staged output taking its place): paths are made from it when used.
// Data parallel, rank 0 alone evaluates and writes (its result is the run's).
RunResult run_one(Task& task, const FinetuneConfig& c, const FinetuneOptions& o, const Scratch* scratch, double lr,
                  uint64_t seed, const std::string& root, const std::string& name, Device device,
                  MatmulPrecision precision, parallel::Communicator& comm, const std::function<void()>& started);

// ---- the grid and its results (finetune_grid.cpp) --------------------------------------------

// One run of the grid: its learning rate and seed, and its result once it has one.
struct GridRun {
  double lr = 0;
  uint64_t seed = 0;
  std::string name;
  std::optional<RunResult> result;
};

// Every learning rate x seed, in the order they run one after another.
std::vector<GridRun> grid_runs(const FinetuneConfig& c);

// A run's line in results.json; an unfinished run has no best epoch yet.
json::Value run_line(const std::string& name, uint64_t seed, const RunResult& r);
// A run's result read back from its line in results.json (run_line's inverse).
RunResult run_from_line(const json::Value& line);
// The finished runs of an earlier call on the same grid, from its results.json, by run name.
std::map<std::string, RunResult> finished_runs(const std::string& results_path);

// `results` with the grid's learning_rates (an entry per learning rate with a
// run that has a result: its runs in seed order and their summary) and best_lr
// (the best mean score).
json::Value with_grid_results(json::Value results, const std::vector<GridRun>& grid, const FinetuneConfig& c);

// Whether `out` holds a fine-tuning grid (its recorded config.json), and when
// it does, where that config first differs from `recorded` ("" when it is this grid).
std::optional<std::string> earlier_grid(const std::string& out, const json::Value& recorded);

// The dev line of one learning rate's summary, also under --quiet.
void print_lr_summary(const std::string& task, const json::Value& entry, const std::string& score_name);

// ---- the grid's runs at once, each a process (finetune_workers.cpp) ----------------------------

// How many runs at once, with how many threads each (0: the default), from
// train.parallel_runs and train.threads.
struct Parallelism {
  int64_t runs = 1;
  int64_t threads = 0;
  bool threads_given = true;  // train.threads set: every run has exactly that many

  int64_t cores() const { return runs * threads; }
  // The threads of each of `left` runs, in the order they start: `threads`
  // each; but where the runs do not fill the last round and the count is
  // ordo's to choose, the remainder goes first with the cores shared among
  // it, so that no core idles while a short last round runs. CPU results do
  // not depend on the thread count (tests/tensor/test_determinism.cpp): no
  // run changes.
  std::vector<int64_t> plan(int64_t left) const {
    std::vector<int64_t> threads_of(static_cast<size_t>(left), threads);
    const int64_t remainder = left % runs;
    if (!threads_given && remainder != 0)
      for (int64_t k = 0; k < remainder; ++k) threads_of[static_cast<size_t>(k)] = cores() / remainder;
    return threads_of;
  }
};

Parallelism parallelism(const FinetuneConfig& c, Device device, int ranks);

// The folders a killed grid's workers left beside `out`
// (.OUT.ordo-worker-RUN-XXXXXX, base/output.h's bookkeeping: only those
// whose marker says they are this output's; its lock, now ours, says no
// process of it lives on: a worker stops when its parent dies), removed; how many.
int64_t remove_stale_worker_folders(const std::string& out);

// The grid's runs without a result, on p.cores() cores as p.plan() shares
// them, each `ordo finetune --worker NAME` (`worker_args` its other flags) in
// a folder of its own beside `out`, so that the grid's folder can be swapped in (started(): after a
// worker's first step) without moving anything a worker writes in; a run
// that ends is moved to root()/runs/NAME and `ended` called. A signal to this
// process stops every worker at its next step, and so does the first worker
// that fails (its run and exit status in *failed); a worker stopped before its
// first step leaves no run.
void run_in_workers(std::vector<GridRun>& grid, const Parallelism& p, const json::Value& config,
                    const std::vector<std::string>& worker_args, const std::string& out,
                    const std::function<std::string()>& root, const std::function<void()>& started,
                    const std::function<void(const GridRun&)>& ended, bool quiet, bool* stopped, std::string* failed);

// One run of a parallel grid, in a worker process (FinetuneOptions::worker_run).
FinetuneSummary run_worker(Task& task, const FinetuneConfig& c, const FinetuneOptions& o, const Scratch* scratch,
                           Device device, MatmulPrecision precision);

// What a worker is given beside --worker, --out, --config and its threads: the grid's inputs.
std::vector<std::string> worker_flags(const FinetuneOptions& o);

}  // namespace ordo::train::finetuning
