// Pretraining: the loop behind `ordo pretrain`.
//
// A run is a JSON config {"model": {...}, "data": {...}, "train": {...}}
// (configs/*.json; --set key=value overrides) and a run directory that holds
// everything the run writes:
//   RUN/config.json              the resolved run config
//   RUN/vocab.txt                the vocabulary (trained on the corpus unless given)
//   RUN/data/                    the generated synthetic corpus (when data.corpus is "synthetic")
//   RUN/metrics.jsonl            one JSON object per logged step and per evaluation
//   RUN/checkpoints/step_N/      config.json + model.safetensors (HF names, loadable by HF),
//                                optimizer.safetensors + trainer_state.json (for --resume), vocab.txt
// Every file is written atomically. Resuming from a checkpoint continues the
// run exactly: on the CPU the losses that follow are bit-identical to those
// of an uninterrupted run (the data cursor, the optimizer moments, the step
// and hence every dropout stream are restored).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/output.h"
#include "nn/bert_config.h"
#include "nn/heads.h"
#include "nn/optim.h"
#include "parallel/communicator.h"
#include "text/pretraining_data.h"
#include "train/loop.h"

namespace ordo::train {

struct DataConfig {
  std::string corpus = "synthetic";  // "synthetic" or a corpus path (file or directory)
  int64_t synthetic_sentences = 20000;
  uint64_t synthetic_seed = 1;
  std::string vocab;                 // a vocab.txt; empty: train one on the corpus
  int64_t vocab_size = 4000;
  int64_t vocab_min_frequency = 2;
  bool lower_case = true;
  double held_out_fraction = 0.05;
  std::string objective = "mlm";     // "mlm", "mlm+nsp", "causal"
  int64_t max_predictions_per_seq = 20;
  double masked_lm_prob = 0.15;
  double short_seq_prob = 0.1;
  bool whole_word_mask = true;
  uint64_t seed = 12345;             // masking, instance and order draws
};

// One phase of the length schedule (Wang et al. 2021 train at 128, then 512).
struct Phase {
  int64_t steps = 0;
  int64_t max_seq_length = 128;
  int64_t batch_size = 32;
};

struct TrainConfig {
  std::vector<Phase> phases;         // total steps = sum of phase steps
  int64_t grad_accum = 1;            // micro-batches per optimizer step
  nn::AdamWConfig adam;              // lr, betas, eps, weight decay, clipping, warm-up (total_steps set from phases)
  uint64_t seed = 1;                 // initial weights and dropout masks
  int64_t log_every = 10;
  int64_t eval_every = 200;          // 0: only at the end
  int64_t eval_batches = 8;
  int64_t checkpoint_every = 0;      // 0: only at the end (and on Ctrl-C)
  // Also checkpoint the weights as initialised, step 0 (the locality/symmetry
  // paper's "before pretraining", Fig. 2 left; ordo analyze's trajectory starts there).
  bool checkpoint_initial = false;
  // A checkpoint or run whose weights the run starts from, all but its own
  // position encoding's (train/init_from.h: Wang et al. 2021 continue
  // BERT-base-uncased with each PE); empty: every weight initialised.
  std::string init_from;
  std::string device = "auto";       // auto, cpu, cuda, cuda:N
  // Of the products, parsed (train::parse_precision): nullopt is auto (bf16
  // on a GPU, fp32 on the CPU), else fp32, tf32 or bf16.
  std::optional<MatmulPrecision> precision;
  // On a GPU, with one process and no accumulation: each step one CUDA graph
  // launch (train::GraphedStep), its shapes fixed by the phase's batch and
  // length and data.max_predictions_per_seq; a capture the driver refuses
  // (a position encoding that copies from the host in its forward) runs
  // the step as it is, said once.
  bool cuda_graphs = true;
  int64_t threads = 0;               // CPU threads; 0: OpenMP's default
  double bucket_cap_mb = 25;         // data parallel: gradient bucket size (PyTorch DDP's bucket_cap_mb)
  int64_t total_steps() const;
};

struct RunConfig {
  nn::BertConfig model;
  DataConfig data;
  TrainConfig train;
  json::Value source;  // the resolved JSON, written to RUN/config.json
  // The config files read (read_run_config): the file and its "extends"
  // chain, inputs an output must spare (base/output.h).
  std::vector<InputPath> files;
};

// Reads a run config (strict: unknown keys and bad values are errors naming
// the key) after applying the --set overrides in order.
RunConfig parse_run_config(const json::Value& json, const std::vector<std::string>& overrides,
                           const std::string& where);
// A file may build on another with "extends": "PATH" (relative to the
// file's folder): objects merge key by key, the extending file's values win
// (configs/papers/ extend ../../tiny.json and set only the model's pe).
RunConfig read_run_config(const std::string& path, const std::vector<std::string>& overrides);
// The JSON of such a file with its "extends" chain merged in (also read by
// ordo finetune); `files`, when given, receives the files read, each with
// what named it ("--config", "the \"extends\" of FILE").
json::Value read_config_file(const std::string& path, std::vector<InputPath>* files = nullptr);

struct PretrainOptions {
  std::string out;        // the run directory
  bool resume = false;    // continue the run in `out` from its latest checkpoint
  bool overwrite = false; // replace a run already in `out`
  bool quiet = false;     // no progress lines (tests)
  // Claim `out` for this process (base/output.h's OutputLock) while the run
  // writes; false when the caller holds that claim already (ordo experiment).
  bool lock = true;
  int64_t stop_after = -1;  // stop (with a checkpoint) after this many steps (tests of resume)
  // With resume: train the run on to this many steps (--resume RUN --set
  // train.steps=N, N beyond the steps done; a finished run too). The warm-up
  // keeps the steps it had; the linear decay is re-aimed at the new end, so the
  // next step's learning rate is lr x (N - s) / (N - warm-up) for step s. The
  // run's config.json is updated. Single-phase runs only.
  int64_t extend_to = -1;
  // The processes of a data-parallel run (mpirun -np N); null: one process.
  // Every rank calls pretrain() alike; rank 0 alone writes and prints.
  parallel::Communicator* comm = nullptr;
};

// What one call did: the command's exit status and its last line come from it.
struct RunSummary {
  int64_t steps = 0;         // optimizer steps done by this call
  int64_t step = 0;          // where the run stands
  int64_t total_steps = 0;   // the run's planned steps
  bool interrupted = false;  // Ctrl-C: stopped after a checkpoint (`ordo pretrain` exits 130)
};

// Runs (or resumes) a pretraining run and ends with one line saying where the
// last checkpoint is, the final held-out metrics and the wall time (also when
// quiet). Ctrl-C stops cleanly after the current step with a checkpoint.
RunSummary pretrain(const RunConfig& config, const PretrainOptions& options, const MetricsObserver& observer = {});
// Resumes the run in `out` with the config stored there. A finished run (and
// no extend_to) is left untouched: it says it is complete and does nothing.
RunSummary resume_pretrain(const PretrainOptions& options, const MetricsObserver& observer = {});

// ---- for analyses of a finished run (ordo analyze) -----------------------------------------
// (checkpoint_dir and latest_checkpoint are train/loop.h's.)

// A run's corpus tokenized and split into training and held-out documents,
// as pretraining splits it (data.lower_case, held_out_fraction, seed).
text::CorpusSplit split_corpus(const DataConfig& data, const std::string& corpus_path, const text::Vocab& vocab);

// e^loss: the perplexity of a mean LM loss (natural log); inf when it
// overflows, so a diverged run reads inf rather than a 300-digit number.
double perplexity(double mean_loss);

// A held-out evaluation: mean LM loss and accuracy over the predicted tokens
// (labels != -100), NSP accuracy where the model has the head and the batch
// NSP labels (-1 otherwise).
struct EvalResult {
  double loss = 0, accuracy = 0, nsp_accuracy = -1;
  int64_t predicted = 0;
};
// The training loop's evaluation on given batches, in evaluation mode
// (no dropout) — e.g. with altered positions (the skip-position attack) —
// with products of the given precision.
EvalResult evaluate_batches(nn::PretrainingModel& model, const std::vector<text::Batch>& batches, Device device,
                            MatmulPrecision precision);

}  // namespace ordo::train
