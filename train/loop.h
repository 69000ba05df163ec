// The pieces of a training loop, shared by pretraining (pretrain.cpp) and the
// fine-tuning loops that reuse them with their own model and batches:
//   set up       the device and threads, the run directory and its checkpoints,
//                the optimizer's moments and the trainer state for --resume;
//   one step     micro-batches with gradient accumulation, then AdamW (clipping
//                and the learning-rate schedule are the optimizer's);
//   logging      metrics.jsonl, the progress line, throughput and ETA;
//   evaluation and checkpoints
//                the cadence that decides when, Ctrl-C, and what a checkpoint
//                holds besides the model.
// The loop itself (pretrain.cpp's run_loop) strings them together: a task
// supplies its forward per micro-batch, its evaluation and its model's files.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/var.h"
#include "base/json.h"
#include "nn/optim.h"
#include "parallel/gradient_reducer.h"
#include "tensor/device_runtime.h"
#include "text/pretraining_data.h"

namespace ordo::train {

// ---- setup ------------------------------------------------------------------------------

// "auto" (a GPU if there is one, else the CPU), "cpu", "cuda", "cuda:N". A
// data-parallel process takes, for "auto" and "cuda", the GPU of its rank
// among the node's processes (modulo the GPUs: more processes than GPUs share).
Device resolve_device(const std::string& name, int local_rank = 0);
// CPU threads for the run; 0 leaves OpenMP's default.
void set_threads(int64_t threads);

// The products' precision a run names (train.precision, --precision), parsed
// once where it is read: "auto" (nullopt) is bf16 on a GPU (PyTorch's bf16
// autocast for products) and fp32 on the CPU; "fp32", "tf32" and "bf16" are
// themselves on either device (on the CPU tf32 and bf16 are emulated
// exactly, as slow as fp32: for comparing with a GPU's run). Anything else is
// an error naming `where`.
std::optional<MatmulPrecision> parse_precision(const std::string& name, const std::string& where = "precision");
// "auto" or the precision's name: the text parse_precision reads back.
std::string precision_setting_name(const std::optional<MatmulPrecision>& setting);
// The setting on `device` (auto resolved): the value every forward of the
// run takes (nn::Context::precision).
MatmulPrecision resolve_precision(const std::optional<MatmulPrecision>& setting, Device device);
// A flag's name parsed and resolved at once (--precision).
MatmulPrecision resolve_precision(const std::string& name, Device device, const std::string& where = "precision");
// "bf16 products (FP32 sums, master weights and statistics)", "... emulated on the CPU", for a run's header.
std::string precision_description(MatmulPrecision precision, Device device);
// The device for a run's header, with what multiplies on the CPU: "cpu
// (OpenBLAS's SkylakeX kernels)", "cpu (ordo's own product kernel)", "cuda:0".
// The kernels decide the last bits of every product: an auditor comparing
// two runs' logs sees whether they ran the same ones.
std::string device_description(Device device);

// RUN/checkpoints/step_000000N (nine digits).
std::string checkpoint_dir(const std::string& run, int64_t step);
// The step of the newest complete checkpoint (its trainer_state.json written), or -1.
int64_t latest_checkpoint(const std::string& run);

// Where a run stands: what a checkpoint keeps, besides the model and the
// optimizer, for --resume to continue exactly.
struct TrainerState {
  int64_t step = 0;
  int64_t phase = 0;
  text::Cursor cursor;  // the next training example of the phase
  double elapsed_seconds = 0;
  // The data-parallel processes that trained it: a step's global batch is
  // theirs together, so a resume takes as many (1 in checkpoints before it was kept).
  int64_t ranks = 1;
  // The run's config.json as it was at the save (null in checkpoints before it was kept).
  json::Value run_config;
};

// Writes the optimizer's moments, the run's vocabulary and, last (marking the
// checkpoint complete), trainer_state.json into checkpoint_dir(run, s.step),
// with the SHA-256 of the checkpoint's files (config.json, model.safetensors,
// optimizer.safetensors) and the run's config.json. The task writes its model there first.
void save_training_state(const std::string& run, const nn::AdamW& opt, const TrainerState& s);
// Reads a checkpoint's trainer_state.json after checking what it says of
// itself against where it is: its step must be its folder's (step_N), it
// must record the SHA-256 of each of the checkpoint's files, and each must
// still have it. An error names the file that disagrees, before anything of
// the run is changed. (What it says against the run's config: pretrain.cpp.)
TrainerState load_trainer_state(const std::string& checkpoint);
// Loads the optimizer's moments and step count from a checkpoint onto `device`.
void restore_optimizer(const std::string& checkpoint, nn::AdamW& opt, int64_t step, Device device);

// ---- one optimizer step -----------------------------------------------------------------

// What the forward of one micro-batch gives the step.
struct MicroBatch {
  Var loss;  // minimised: its gradient accumulates with weight 1 / micro-batches
  // One-element device tensors to log by name, the loss first. They stay on
  // the device: the step reads them with one host copy, and only when asked.
  std::vector<std::pair<std::string, Tensor>> scalars;
  int64_t tokens = 0;  // positions processed, for the throughput
};

struct StepResult {
  nn::AdamW::StepInfo optimizer;
  // Each scalar's mean over the micro-batches; empty unless the step read them.
  std::vector<std::pair<std::string, double>> means;
  int64_t tokens = 0;
};

// Runs micro-batch m's forward (drawing its batch).
using MicroBatchForward = std::function<MicroBatch(int64_t m)>;
// Names the first tensor behind micro-batch m's non-finite loss and throws.
using NonFiniteReport = std::function<void(int64_t m)>;

// A data-parallel step's company: the ranks, and the reducer that sums their
// gradients during the last micro-batch's backward. Empty: one process.
struct DataParallel {
  parallel::Communicator* comm = nullptr;
  parallel::GradientReducer* reducer = nullptr;
  // The ranks' micro-batches may hold different numbers of tokens (a
  // fine-tuning batch split unevenly): the step's tokens are summed over the
  // ranks rather than taken as this rank's times the ranks.
  bool uneven_shares = false;
  int64_t ranks() const { return comm ? comm->size() : 1; }
};

// One optimizer step of step number `step`: `micro_batches` forwards and
// backwards, then AdamW. Data parallel, `micro_batches` are this rank's:
// each loss is weighted 1 / (ranks x micro_batches), the gradients are summed
// over the ranks, and the logged scalars and tokens are the global batch's. With `read_scalars` (a logged step) the scalars are
// read once, before the update, and a non-finite loss goes to `report`. On
// the other steps nothing is read: a non-finite loss gives non-finite
// gradients, which AdamW refuses before updating anything, and only then are
// the scalars read, so that `report` still names the step and the tensor.
StepResult optimizer_step(nn::AdamW& opt, int64_t step, int64_t micro_batches, bool read_scalars,
                          const MicroBatchForward& forward, const NonFiniteReport& report,
                          const DataParallel& dp = {});

// One optimizer step of one micro-batch whose device work — the forward,
// the backward and AdamW's update — is captured once as a CUDA graph and
// replayed: one launch a step (train.cuda_graphs). `forward` must read its
// inputs from tensors made before the capture, which `stage` fills with the
// step's values (host copies, outside the graph), and take its dropout
// streams from `stream_base` (nn::Context::stream_base, set here to the
// step's first stream). Steps run as they are (their allocations fill the
// caching allocator) — at least two, and until one calls no cudaMalloc (its
// every block was in the cache, as a capture needs; at most 8) — the next
// is captured, and every later step replays;
// a step whose `key` (the shapes and host-side facts the captured work was
// made for) differs from the capture's runs as it is (what it needs that no
// earlier step made — a new length's blocks, a position encoding's constants
// for it — is made outside a capture), by the same rule, and is captured a
// later time it comes. Everything else
// is optimizer_step's: a logged step reads its scalars and the norm in one
// host copy, and a non-finite loss goes to `report`. AdamW must be fused
// (its update skips a step whose norm is not finite, so an unlogged
// non-finite step changes nothing). A capture the driver refuses throws
// CaptureRefused (nothing of the step was done), and the caller may go on
// with optimizer_step.
struct CaptureRefused : Error {
  explicit CaptureRefused(const std::string& what) : Error(what) {}
};

class GraphedStep {
 public:
  GraphedStep(nn::AdamW& opt, Device device);
  StepResult run(int64_t step, bool read_scalars, const std::function<void()>& stage, const MicroBatchForward& forward,
                 const NonFiniteReport& report, const std::string& key);
  // The one i64 on the device each step's dropout streams count from.
  const Tensor& stream_base() const { return stream_base_; }
  int64_t captures() const { return captures_; }

 private:
  nn::AdamW& opt_;
  Device device_;
  Tensor stream_base_;
  CudaGraph graph_;
  std::string key_;         // the captured step's
  std::string warmed_key_;  // the last key run as it is
  int64_t warm_steps_ = 0;  // steps of warmed_key_ run as they are, in a row
  bool warm_step_found_all_ = false;  // the last of them called no cudaMalloc
  int64_t steps_ = 0, captures_ = 0;
  // The captured step's outputs: rewritten by each replay.
  MicroBatch outputs_;
  Tensor norm_and_clip_;
};

// Every rank of a data-parallel run must train the same run: a rank whose
// resolved config (or output folder) differs from rank 0's throws, naming the
// first differing key ("train.lr"). Nothing for one process.
void check_same_config(parallel::Communicator& comm, const json::Value& config, const std::string& out);

// ---- logging ------------------------------------------------------------------------------

// One line of metrics.jsonl, also handed to an optional observer.
using MetricsObserver = std::function<void(const json::Value& line)>;

// RUN/metrics.jsonl, appended to a line at a time (flushed: a crash loses no line).
class MetricsLog {
 public:
  MetricsLog(const std::string& path, MetricsObserver observer);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const json::Value& line);

 private:
  std::FILE* file_;
  MetricsObserver observer_;
};

// Keeps the metrics lines up to `step` (a resumed run rewrites what followed).
void truncate_metrics(const std::string& path, int64_t step);

// A step's metrics line: `line` (the step, and what the task adds, such as
// its phase), then the means of the step's scalars, the learning rate, the
// gradient norm before clipping and the tokens per second.
json::Value step_line(json::Value line, const StepResult& result, double tokens_per_s);

// Tokens per second over the window since the last logged step.
class Throughput {
 public:
  void add(int64_t tokens) { tokens_ += tokens; }
  double per_second_and_restart();

 private:
  int64_t tokens_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// The wall time of a run across its resumes, and the ETA at this call's rate.
class RunClock {
 public:
  explicit RunClock(double seconds_before) : before_(seconds_before) {}
  double elapsed() const;
  double seconds_left(int64_t steps_done_this_call, int64_t steps_left) const;

 private:
  double before_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

// "42.0s", "3m07s", "2h05m".
std::string format_duration(double seconds);

// ---- evaluation, checkpoints, stopping -------------------------------------------------------

// When the loop logs, evaluates and checkpoints.
struct Cadence {
  int64_t total_steps = 0;
  int64_t log_every = 1;
  int64_t eval_every = 0;        // 0: only at the end
  int64_t checkpoint_every = 0;  // 0: only at the end (and when stopped)

  bool logs(int64_t step) const { return step % log_every == 0 || step == total_steps || step == 1; }
  bool evaluates(int64_t step) const { return (eval_every > 0 && step % eval_every == 0) || step == total_steps; }
  bool checkpoints(int64_t step) const {
    return (checkpoint_every > 0 && step % checkpoint_every == 0) || step == total_steps;
  }
};

// While alive, Ctrl-C (SIGINT) or SIGTERM sets interrupted() instead of
// killing the process, so the loop stops after the current step with a checkpoint.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
  static bool interrupted();
  // The signal that interrupted: "Ctrl-C (SIGINT)" or "SIGTERM" ("" before one).
  static const char* signal_name();

 private:
  void (*previous_)(int);
  void (*previous_term_)(int);
};

}  // namespace ordo::train
