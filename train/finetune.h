// Fine-tuning: the loop behind `ordo finetune`, BERT's recipe on a pretrained
// encoder (Devlin et al. 2019, §4 and appendix A.3; Google's run_classifier.py
// and run_squad.py):
//
//   GLUE tasks (classification, STS-B regression): SequenceClassifier on the
//     pooled [CLS] vector, cross-entropy (MSE for STS-B);
//   SentEval's probing files (downstream/senteval.h): the same classifier with
//     the file's label set, chosen on its "va" partition, "te" evaluated beside;
//   SQuAD v1.1 / v2.0: SpanExtractor, start/end cross-entropy over windows
//     of max_seq_length with a document stride; answers chosen by n-best with
//     a maximum answer length (and v2.0's null-score threshold).
//
// AdamW with a linear warm-up over warmup_ratio of the steps, then linear
// decay to 0; the training set shuffled each epoch (RngPurpose::finetune_order);
// dev evaluated after every epoch with the official metrics; the best epoch
// (by the task's score: the mean of its GLUE metrics, MNLI's on the matched
// set; SQuAD's F1) kept with its predictions.
//
// Repeated runs as the papers report them: every learning rate of
// train.learning_rates x train.seeds seeds (seed, seed + 1, ...). For each
// learning rate, over its seeds: the mean, the standard deviation (n - 1
// in the denominator; 0 for one run) and the median of each run's best-epoch
// score and metrics (Wang et al. 2021 report mean ± std of 5 runs; Chen et al.
// 2021 the median over 5 runs of the best checkpoint).
//
// The output folder (built beside its place, as `ordo pretrain`'s run, and
// swapped in after the first training step):
//   OUT/config.json        the resolved fine-tuning config, with the checkpoint, task and data
//   OUT/results.json       per learning rate: each run's best epoch and the summary over seeds;
//                          the best learning rate (by the mean score); for a classification
//                          task each run's accuracy by sentence length on every evaluated set
//                          at its best and last epoch (best_by_length, last_by_length:
//                          downstream/length_bins.h, Wang & Chen 2020's Figure 4)
//   OUT/runs/lr_<lr>_seed_<seed>/
//       metrics.jsonl      a line per logged step and per epoch's evaluation
//       best/              the best epoch's model (config.json with the architecture and
//                          labels, model.safetensors with HF names, the tokenizer's
//                          vocab.txt or vocab.json + merges.txt) unless
//                          train.save_best is false
//       dev predictions of the best epoch: GLUE, a GLUE submission file per dev set
//                          (dev.tsv -> dev_predictions.tsv; MNLI dev_matched_predictions.tsv
//                          and dev_mismatched_predictions.tsv; every further dev_*.tsv in
//                          --data, such as the word-swap probes, is evaluated and predicted
//                          too, the main dev set alone choosing the best epoch); SQuAD, predictions.json,
//                          nbest_predictions.json and (v2.0) null_odds.json
//       test/              GLUE only, when --data has the test files: the submission
//                          files as the GLUE server names them (SST-2.tsv, MNLI-m.tsv, ...)
//   With train.parallel_runs, several runs at once, each a process of its own
//   writing into a folder beside OUT (.OUT.ordo-worker-<run>-XXXXXX) that is moved
//   to OUT/runs/<run> when it ends.
// There is no --resume: a run that stops (an error, Ctrl-C) keeps what it has
// written so far, and its results.json says which runs finished.
//
// Data parallel (mpirun -np N): every rank builds the same model (rank 0's
// weights broadcast) and takes a contiguous share of each batch, its loss
// weighted by its share of the batch's examples, so that the summed gradient
// is the whole batch's mean loss's, as one process computes it (up to the
// order of the sums; the dropout masks differ, drawn per share). A rank whose
// share is empty (a last batch smaller than N) runs one example at weight 0.
// Rank 0 alone evaluates, prints and writes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/output.h"
#include "tensor/device_runtime.h"

namespace ordo::parallel {
class Communicator;
}

namespace ordo::train {

struct FinetuneConfig {
  // train
  std::vector<double> learning_rates{3e-5};  // one run per lr and seed
  int64_t seeds = 1;                         // runs per learning rate: seed, seed + 1, ...
  uint64_t seed = 42;                        // the new head's weights, dropout, the epochs' orders
  int64_t epochs = 3;
  int64_t batch_size = 32;
  int64_t eval_batch_size = 64;
  int64_t max_seq_length = 128;
  double warmup_ratio = 0.1;
  double weight_decay = 0.01;
  double max_grad_norm = 1.0;
  int64_t log_every = 50;
  bool save_best = true;        // the selected epoch's model, in RUN/best/ (or RUN/last/)
  // Which epoch a run reports (results.json's summary, the predictions, the
  // saved model): its best by the dev score, or its last (Wang et al. 2021
  // report GLUE's last checkpoint and SQuAD's best, App. E).
  std::string select_epoch = "best";
  // Train on the first N training examples (SQuAD: questions) of the file
  // only; 0: all (HuggingFace's run_glue / run_qa max_train_samples).
  int64_t max_train_examples = 0;
  std::string device = "auto";
  // Of the products, parsed (train::parse_precision): nullopt is auto (bf16
  // on a GPU, fp32 on the CPU), else fp32, tf32 or bf16.
  std::optional<MatmulPrecision> precision;
  int64_t threads = 0;
  // Runs of the grid at once on the CPU, each a process of its own with
  // train.threads threads (0 there: the cores shared evenly); 0: as many as the
  // cores hold at train.threads each (1 thread when that is 0). A run's
  // results are the same as when it runs alone with as many threads; runs x
  // threads beyond the cores is refused (they would only slow each other).
  int64_t parallel_runs = 1;
  double bucket_cap_mb = 25;  // data parallel: gradient bucket size (PyTorch DDP's bucket_cap_mb)
  // tokenizer: BERT's uncased default; a checkpoint of an ordo run or with an
  // HF tokenizer_config.json says what it was trained with (lower_case "auto").
  std::string lower_case = "auto";  // "auto", "true", "false"
  // squad
  int64_t doc_stride = 128;
  int64_t max_query_length = 64;
  int64_t n_best_size = 20;
  int64_t max_answer_length = 30;
  double null_score_diff_threshold = 0.0;
  // model: the fresh model's config under --from-scratch, as the checkpoint's
  // with these keys replaced (a run config's "model" keys: --set
  // model.num_hidden_layers=1); refused without --from-scratch.
  json::Value model = json::Value::object();

  json::Value source;  // the resolved JSON
};

// Reads a fine-tuning config {"train": {...}, "tokenizer": {...}, "squad": {...}, "model": {...}}
// strictly after applying the --set overrides; `json` may be an empty object
// (every default). `learning_rates`, when not empty (--lr), replaces the
// config's train.lr or train.learning_rates.
FinetuneConfig parse_finetune_config(const json::Value& json, const std::vector<std::string>& overrides,
                                     const std::string& where, const std::vector<double>& learning_rates = {});

// The shortest decimal text that reads back as exactly `value` ("0.0001",
// "0.000100000001"): distinct learning rates never share a run folder's name.
std::string shortest_text(double value);

struct FinetuneOptions {
  std::string checkpoint;  // a checkpoint folder or a run folder (its latest checkpoint)
  std::string task;        // cola sst2 mrpc stsb qqp mnli qnli rte wnli | squad | squad2 | senteval
  std::string data;        // the task's folder as GLUE / SQuAD ship it
  std::string out;
  // The tokenizer (vocab.txt, vocab.json with merges.txt beside it, tokenizer.json,
  // or a folder holding one); empty: the checkpoint's own, else its run's.
  std::string vocab;
  bool overwrite = false;
  bool quiet = false;
  // The checkpoint's config (with the config's model.* keys) and vocabulary
  // with random weights instead of its own (initialised as pretraining
  // starts): the baseline pretraining is to beat.
  bool from_scratch = false;
  // With from_scratch: the absolute position table copied from this
  // checkpoint or run into the fresh model (train/position_init.h; Wang &
  // Chen 2020, Table 3); empty: none.
  std::string init_positions_from;
  // The checkpoint's task head (a classifier trained for another label set)
  // left out and a new one initialised.
  bool new_head = false;
  // The ranks of a data-parallel run (mpirun); nullptr: one process.
  parallel::Communicator* comm = nullptr;
  // The config files read (--config and its "extends" chain): inputs the
  // output must spare.
  std::vector<InputPath> config_files;
  // Internal (ordo finetune --worker NAME): this process is the run NAME of a
  // grid whose train.parallel_runs started it; `out` is the folder its parent
  // made for it, where it writes the run (out/run/) and its result (out/result.json).
  std::string worker_run;
};

// The names fine-tuning takes, in order: the GLUE tasks, then squad, squad2, senteval.
const std::vector<std::string>& finetune_task_names();

// The data files of a task in `folder`, [train, dev..., test...] as found; an
// error naming the folder and the files looked for when train or dev is missing.
// senteval: `folder` is the SentEval file or a folder holding exactly one
// .txt file, found as `train` (its partitions are train, dev and test).
struct TaskFiles {
  std::string train;
  std::vector<std::string> dev;   // the main dev file (MNLI: dev_matched.tsv), then GLUE's other dev_*.tsv by name
  std::vector<std::string> test;  // GLUE test files present (unlabelled)
};
TaskFiles find_task_files(const std::string& task, const std::string& folder);

struct FinetuneSummary {
  int64_t runs_finished = 0;
  bool interrupted = false;
  json::Value results;  // what results.json holds
};

// Validates everything (the checkpoint, the task, the files, the output) before
// writing, then runs the grid.
FinetuneSummary finetune(const FinetuneConfig& config, const FinetuneOptions& options);

// mean, sample standard deviation and median of values (for the summaries; exposed for tests).
struct Spread {
  double mean = 0, std = 0, median = 0;
  int64_t n = 0;
};
Spread spread(const std::vector<double>& values);

}  // namespace ordo::train
