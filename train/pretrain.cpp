// `ordo pretrain`'s run: its checks before the first write, its set-up (the
// device, data, model and optimizer, restored when resuming), one optimizer
// step (eager, or one CUDA graph launch), the logs, evaluations and
// checkpoints, and the loop that strings them together. The config is read
// in pretrain_config.cpp, the data and evaluation made in pretrain_data.cpp,
// --resume checked in pretrain_resume.cpp.
#include "train/pretrain.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>

#include "base/file_io.h"
#include "base/output.h"
#include "model/model.h"
#include "nn/checkpoint.h"
#include "pe/registry.h"
#include "text/corpus.h"
#include "train/init_from.h"

#include "train/pretrain_parts.h"

namespace ordo::train {

using namespace pretraining;

namespace {

// ---- setup ----------------------------------------------------------------------------------

// The model config with the vocabulary's size (which a config may also fix, then checked).
nn::BertConfig model_config_for(const RunConfig& c, const text::Vocab& vocab, const std::string& vocab_path) {
  nn::BertConfig config = c.model;
  if (config.vocab_size == 0) config.vocab_size = vocab.size();
  ORDO_CHECK(config.vocab_size == vocab.size(), "model.vocab_size ", config.vocab_size, " differs from the vocabulary's ",
             vocab.size(), " tokens (", vocab_path, ")");
  nn::validate(config, "model config");
  return config;
}

// A pretraining run, set up: where it runs, its data, its model and
// optimizer, and where it stands (restored from the latest checkpoint when
// resuming). Not movable: the data streams keep references into the corpus.
struct PretrainRun {
  PretrainRun(const RunConfig& c, const std::string& run, bool resuming, bool quiet, parallel::Communicator& comm);
  PretrainRun(const PretrainRun&) = delete;
  PretrainRun& operator=(const PretrainRun&) = delete;

  parallel::Communicator& comm;
  Device device;
  MatmulPrecision precision;  // of every forward's products (train.precision on `device`)
  Corpus corpus;
  nn::BertConfig model_config;
  std::unique_ptr<nn::PretrainingModel> model;
  std::unique_ptr<nn::AdamW> opt;
  TrainerState state;
  // One data stream per phase (lengths differ), one held-out stream per phase
  // for evaluation (none when the held-out split is empty).
  std::vector<std::unique_ptr<text::PretrainingData>> train_data, eval_data;
  std::unique_ptr<parallel::GradientReducer> reducer;  // data parallel only
  // CUDA graphs (train.cuda_graphs): the step and the inputs it reads, made
  // for the current phase's shapes.
  std::unique_ptr<GraphedStep> graphed;
  DeviceBatch graph_inputs;
  nn::MlmRows graph_rows;
  int64_t max_predictions = 0;  // per sequence (data.max_predictions_per_seq)
  std::optional<InitFromReport> warm_start;  // train.init_from's, at a fresh start
};

// A checkpoint's data cursor against where its phase's steps leave the
// data: each step draws ranks x grad_accum x batch_size examples. Any other
// cursor would make the resumed run differ from the uninterrupted one.
void check_cursor(const TrainerState& s, const RunConfig& c, text::PretrainingData& data, const std::string& where) {
  int64_t phase_start = 0;
  for (int64_t i = 0; i < s.phase; ++i) phase_start += c.train.phases[static_cast<size_t>(i)].steps;
  const int64_t steps = s.step - phase_start;
  const int64_t per_step = s.ranks * c.train.grad_accum * c.train.phases[static_cast<size_t>(s.phase)].batch_size;
  text::Cursor expected;
  data.skip(expected, steps * per_step);
  ORDO_CHECK(s.cursor == expected, where, " says epoch ", s.cursor.epoch, ", example ", s.cursor.example, ", but the ",
             steps, " step(s) of phase ", s.phase, " before it drew ", steps * per_step, " examples (", per_step,
             " a step), which end at epoch ", expected.epoch, ", example ", expected.example,
             ": the trainer state was edited or belongs to another run; nothing was changed");
}

PretrainRun::PretrainRun(const RunConfig& c, const std::string& run, bool resuming, bool quiet,
                         parallel::Communicator& comm)
    : comm(comm),
      device(resolve_device(c.train.device, comm.local_rank())),
      precision(resolve_precision(c.train.precision, device)),
      corpus(prepare_corpus(c, run, quiet, comm.rank() == 0)),
      model_config(model_config_for(c, corpus.vocab, run + "/vocab.txt")) {
  const bool nsp = c.data.objective == "mlm+nsp";
  if (resuming) {
    int64_t step = latest_checkpoint(run);
    ORDO_CHECK(step >= 0, "--resume: no complete checkpoint under ", run, "/checkpoints");
    std::string dir = checkpoint_dir(run, step);
    model = model::load_model(dir, device, nsp, c.train.seed);
    state = load_trainer_state(dir);
    ORDO_CHECK(state.ranks == comm.size(), "--resume: ", dir, " was trained by ", state.ranks,
               " process(es) and this is ", comm.size(), "; a step's global batch is all of theirs together, so resume it "
               "with as many (", state.ranks == 1 ? "one process" : "mpirun -np " + std::to_string(state.ranks), ")");
  } else {
    model = model::build_model(model_config, device, nsp, c.train.seed);
    if (!c.train.init_from.empty()) warm_start = init_from(*model, c.train.init_from);
  }
  state.ranks = comm.size();
  opt = std::make_unique<nn::AdamW>(model->named_parameters(), c.train.adam);
  max_predictions = c.data.max_predictions_per_seq;
  if (c.train.cuda_graphs && device.is_cuda() && comm.size() == 1 && c.train.grad_accum == 1 && c.train.adam.fused)
    graphed = std::make_unique<GraphedStep>(*opt, device);
  if (resuming) restore_optimizer(checkpoint_dir(run, state.step), *opt, state.step, device);
  // The weights are loaded: from here only AdamW writes them, and it keeps
  // their bf16 rounding for each forward's products.
  if (precision == MatmulPrecision::bf16) opt->keep_weights_rounding();
  for (const Phase& p : c.train.phases) {
    train_data.push_back(std::make_unique<text::PretrainingData>(corpus.split.train, corpus.vocab, data_options(c.data, p.max_seq_length)));
    eval_data.push_back(corpus.split.held_out.documents() > 0
                            ? std::make_unique<text::PretrainingData>(corpus.split.held_out, corpus.vocab, data_options(c.data, p.max_seq_length))
                            : nullptr);
  }
  if (resuming) {
    check_cursor(state, c, *train_data[static_cast<size_t>(state.phase)],
                 checkpoint_dir(run, state.step) + "/trainer_state.json");
    if (comm.rank() == 0) truncate_metrics(run + "/metrics.jsonl", state.step);
  }
}

// ---- checks before the first write ------------------------------------------------------------

// The corpus opens and holds a first sentence (reading all of it is the run's job).
void check_corpus_readable(const std::string& path) {
  text::CorpusReader reader(path);
  text::Document first;
  reader.next(first);
}

// The model the run will build, built on the CPU and left uninitialised:
// building it runs every check of the PE variant and its options. An
// absolute table must reach the longest sequence of the schedule.
void build_dry_model(const nn::BertConfig& config, const RunConfig& c) {
  std::unique_ptr<nn::PositionEncoding> position = pe::make_position_encoding(config, Device::cpu());
  const int64_t reach = position->max_position();
  for (const Phase& p : c.train.phases)
    ORDO_CHECK(reach < 0 || p.max_seq_length - 1 <= reach, "train.max_seq_length ", p.max_seq_length,
               " is beyond the ", reach + 1, " positions of pe '", config.pe,
               "' (its absolute table: model.max_position_embeddings)");
  nn::PretrainingModel dry(config, std::move(position), Device::cpu(), c.data.objective == "mlm+nsp");
}

// Everything a run can be refused for without training — the device, the
// model and its PE on the vocabulary's size (data.vocab_size until a trained
// vocabulary is known), a given vocabulary (its special tokens), a corpus
// file — checked before the run writes anything, so that a refused start
// leaves the disk as it was.
void check_before_writing(const RunConfig& c) {
  resolve_device(c.train.device);
  nn::BertConfig model = c.model;
  if (!c.data.vocab.empty()) {
    model = model_config_for(c, text::Vocab::load(c.data.vocab), c.data.vocab);
  } else {
    if (model.vocab_size == 0) model.vocab_size = c.data.vocab_size;
    nn::validate(model, "model config");
  }
  build_dry_model(model, c);
  if (!c.train.init_from.empty()) check_init_from(c, model);
  if (c.data.corpus != "synthetic") check_corpus_readable(c.data.corpus);
}

void print_start(const RunConfig& c, const PretrainRun& r, bool resuming) {
  std::fprintf(stderr, "ordo pretrain: %s, %lld layers x %lld hidden, pe %s, %lld parameters, on %s, %s\n",
               c.data.objective.c_str(), static_cast<long long>(r.model_config.num_hidden_layers),
               static_cast<long long>(r.model_config.hidden_size), r.model_config.pe.c_str(),
               static_cast<long long>(r.model->parameter_count()), device_description(r.device).c_str(),
               precision_description(r.precision, r.device).c_str());
  if (r.device.is_cuda())
    std::fprintf(stderr, "attention: %s\n",
                 nn::attention_kernels(r.model->bert.position_encoding(), r.model_config, r.device).c_str());
  std::fprintf(stderr, "data: %lld training / %lld held-out documents, vocabulary %d\n",
               static_cast<long long>(r.corpus.split.train.documents()),
               static_cast<long long>(r.corpus.split.held_out.documents()), r.corpus.vocab.size());
  if (r.eval_data[0])
    std::fprintf(stderr, "held-out baseline (always the most frequent target): accuracy %.1f%%\n",
                 100 * unigram_baseline(*r.eval_data[0], c.train.phases[0].batch_size, c.train.eval_batches));
  if (r.comm.size() > 1) {
    const Phase& p = c.train.phases[0];
    std::fprintf(stderr, "data parallel: %d processes (%s), gradient buckets %lld (%.1f MB each step); global batch "
                 "%d x %lld micro-batches x %lld = %lld\n", r.comm.size(), r.comm.backend(r.device).c_str(),
                 static_cast<long long>(r.reducer->buckets()), r.reducer->bytes_per_step() / 1e6, r.comm.size(),
                 static_cast<long long>(c.train.grad_accum), static_cast<long long>(p.batch_size),
                 static_cast<long long>(r.comm.size() * c.train.grad_accum * p.batch_size));
  }
  if (r.warm_start) {
    const InitFromReport& w = *r.warm_start;
    auto joined = [](const std::vector<std::string>& names) {
      std::string s;
      for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
      return s.empty() ? std::string("none") : s;
    };
    std::fprintf(stderr, "init_from %s: %lld parameter tensors copied; initialised: %s; left out: %s\n",
                 w.checkpoint.c_str(), static_cast<long long>(w.copied), joined(w.fresh).c_str(),
                 joined(w.unused).c_str());
  }
  if (r.graphed) std::fprintf(stderr, "cuda graphs: on (from the third step at the earliest, once a step finds every block it needs cached: one graph launch a step)\n");
  if (resuming) std::fprintf(stderr, "resuming at step %lld\n", static_cast<long long>(r.state.step));
}

}  // namespace

int64_t pretraining::phase_of_step(int64_t step, const std::vector<Phase>& phases) {
  int64_t end = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    end += phases[i].steps;
    if (step <= end) return static_cast<int64_t>(i);
  }
  return static_cast<int64_t>(phases.size()) - 1;
}

namespace {

// Moves past the phases that end at or before the run's step; a new phase
// starts its data afresh.
void enter_current_phase(TrainerState& s, const std::vector<Phase>& phases) {
  int64_t phase_end = 0;
  for (int64_t i = 0; i <= s.phase; ++i) phase_end += phases[i].steps;
  while (s.step >= phase_end) {
    ++s.phase;
    s.cursor = text::Cursor{};
    phase_end += phases[s.phase].steps;
  }
}

// ---- one step ---------------------------------------------------------------------------------

// When the loss is not finite, name the first tensor that went wrong: a
// parameter, or else the first hidden state of a traced re-run.
[[noreturn]] void report_non_finite(int64_t step, nn::PretrainingModel& model, const DeviceBatch& b,
                                    MatmulPrecision precision) {
  for (const auto& [name, p] : model.named_parameters()) {
    if (!std::isfinite(global_norm({p->var.value()})))
      throw Error(detail::cat("step ", step, ": the loss is not finite; parameter '", name, "' holds NaN or Inf"));
  }
  NoGradGuard no_grad;
  nn::Context ctx = nn::Context::eval(precision);
  nn::ForwardTrace trace;
  trace.keep_hidden_states = true;
  model.bert.forward(b.inputs, ctx, &trace);
  for (size_t i = 0; i < trace.hidden_states.size(); ++i) {
    if (!std::isfinite(global_norm({trace.hidden_states[i]})))
      throw Error(detail::cat("step ", step, ": the loss is not finite; hidden_states.", i,
                              i == 0 ? " (the embeddings)" : " (after a layer)", " is the first tensor with NaN or Inf"));
  }
  throw Error(detail::cat("step ", step, ": the loss is not finite; the hidden states are finite, so the heads or the loss produced it"));
}

// One optimizer step of the pretraining objective on the phase's next
// micro-batches; their losses are read (once) only when the step is logged.
// Data parallel, the step's global batch is ranks x grad_accum micro-batches
// in data order, rank r taking the r-th run of grad_accum of them — with the
// dropout streams of those micro-batches: the same batches and masks as one
// process with grad_accum x ranks micro-batches.
// The host-side facts a captured step was made for: its shapes and the
// positions' and segments' ranges (nn::InputFacts).
std::string graph_key(const text::Batch& b, const nn::InputFacts& f) {
  return detail::cat(b.batch, "x", b.length, " positions ", f.position_min, "..", f.position_max, " widest ", f.widest,
                     f.rows_identical ? " same rows" : "", f.consecutive ? " consecutive" : "", " segments ", f.segment_min, "..", f.segment_max,
                     b.nsp_labels.empty() ? "" : " nsp");
}

// The predicted rows' fixed count on a GPU: every position of a causal
// batch, max_predictions a sequence for MLM, the padding rows ignored by the
// loss. The graphed step needs a fixed shape; the eager step on a GPU pads the
// same, so that the head's products have one shape with and without graphs:
// cuBLAS picks its kernel, and so its summation order, by shape, and a
// predicted count's M against the padded one's moved the head's bias
// gradients by an ulp on an H200 (docs/gpu_runs/2026-11-26-h200-b).
// (A decoder trains with the causal objective and only with it: validated with the run config.)
int64_t predicted_row_count(const PretrainRun& r, const DeviceBatch& b) {
  const int64_t batch = b.labels.size(0), length = b.labels.size(1);
  return batch * (r.model_config.decoder ? length : r.max_predictions);
}

// The step as one CUDA graph launch: the batch copied into the inputs the
// graph reads (made again, and the step captured again, when the shapes
// change), the predicted rows padded to batch x max_predictions (x length
// for the causal objective).
StepResult graphed_pretrain_step(PretrainRun& r, const TrainConfig& t, const text::Batch& b, int64_t step, bool logged) {
  const Shape shape{b.batch, b.length};
  const bool causal = !b.clm_labels.empty();
  DeviceBatch& in = r.graph_inputs;
  if (!in.inputs.input_ids.defined() || in.inputs.input_ids.shape() != shape) {
    in = to_device(b, r.device);
    r.graph_rows = nn::mlm_rows(in.labels, r.device, predicted_row_count(r, in));
  }
  in.inputs.facts = nn::input_facts(b.positions.data(), b.segment_ids.data(), b.batch, b.length);
  auto stage = [&] {
    in.inputs.input_ids.copy_from(Tensor::from_vector(b.input_ids, shape));
    in.inputs.segment_ids.copy_from(Tensor::from_vector(b.segment_ids, shape));
    in.inputs.positions.copy_from(Tensor::from_vector(b.positions, shape));
    in.inputs.attention_mask.copy_from(Tensor::from_vector(b.attention_mask, shape));
    in.inputs.padding_bias.copy_from(padding_bias(b));
    const nn::MlmRows rows = nn::mlm_rows(Tensor::from_vector(causal ? b.clm_labels : b.mlm_labels, shape),
                                          Device::cpu(), r.graph_rows.rows.numel());
    ORDO_ASSERT(rows.ascending == r.graph_rows.ascending);  // the captured head picks the rows one way
    r.graph_rows.rows.copy_from(rows.rows);
    r.graph_rows.targets.copy_from(rows.targets);
    if (in.nsp_labels.defined()) in.nsp_labels.copy_from(Tensor::from_vector(b.nsp_labels, {b.batch}));
  };
  auto forward = [&](int64_t) {
    nn::Context ctx = nn::Context::train(t.seed, 0);
    ctx.precision = r.precision;
    ctx.next_stream = 0;  // counted from the step's base on the device
    ctx.stream_base = r.graphed->stream_base();
    ctx.rounded_weights = r.opt->rounded_weights();
    nn::PretrainingOutput out = r.model->forward(in.inputs, r.graph_rows, in.nsp_labels, ctx);
    MicroBatch mb{out.loss, {{"loss", out.loss.value()}, {"lm_loss", out.lm_loss.value()}}, b.batch * b.length};
    if (out.nsp_loss.defined()) mb.scalars.emplace_back("nsp_loss", out.nsp_loss.value());
    return mb;
  };
  auto report = [&](int64_t) { report_non_finite(step, *r.model, to_device(b, r.device), r.precision); };
  return r.graphed->run(step, logged, stage, forward, report, graph_key(b, *in.inputs.facts));
}

StepResult pretrain_step(PretrainRun& r, const TrainConfig& t, int64_t step, bool logged) {
  const Phase& phase = t.phases[r.state.phase];
  text::PretrainingData& data = *r.train_data[r.state.phase];
  const int64_t ranks = r.comm.size(), rank = r.comm.rank();
  data.skip(r.state.cursor, rank * t.grad_accum * phase.batch_size);
  std::optional<text::Batch> drawn;  // a graphed step's batch, for the step as it is when its capture is refused
  if (r.graphed) {
    drawn = data.next_batch(r.state.cursor, phase.batch_size);
    try {
      return graphed_pretrain_step(r, t, *drawn, step, logged);
    } catch (const CaptureRefused& e) {
      if (r.comm.rank() == 0)
        std::fprintf(stderr, "cuda graphs: off, each step's launches made one by one (%s)\n", e.what());
      r.graphed.reset();
    }
  }
  std::vector<DeviceBatch> batches;  // kept to name the tensor behind a non-finite loss
  auto forward = [&](int64_t m) {
    batches.push_back(to_device(m == 0 && drawn ? *drawn : data.next_batch(r.state.cursor, phase.batch_size), r.device));
    const DeviceBatch& b = batches.back();
    nn::Context ctx = nn::Context::train(t.seed, step, rank * t.grad_accum + m, ranks * t.grad_accum);
    ctx.precision = r.precision;
    ctx.rounded_weights = r.opt->rounded_weights();
    const int64_t padded = r.device.is_cuda() ? predicted_row_count(r, b) : 0;
    nn::PretrainingOutput out = r.model->forward(b.inputs, nn::mlm_rows(b.labels, r.device, padded), b.nsp_labels, ctx);
    MicroBatch mb{out.loss, {{"loss", out.loss.value()}, {"lm_loss", out.lm_loss.value()}}, b.tokens};
    if (out.nsp_loss.defined()) mb.scalars.emplace_back("nsp_loss", out.nsp_loss.value());
    return mb;
  };
  auto report = [&](int64_t m) { report_non_finite(step, *r.model, batches[m], r.precision); };
  StepResult result = optimizer_step(*r.opt, step, t.grad_accum, logged, forward, report, {&r.comm, r.reducer.get()});
  data.skip(r.state.cursor, (ranks - 1 - rank) * t.grad_accum * phase.batch_size);
  return result;
}

// ---- logging, evaluation, checkpoints -----------------------------------------------------

void log_step(MetricsLog& log, const PretrainRun& r, int64_t step, const StepResult& s, double tokens_per_s) {
  json::Value line = json::Value::object();
  line["step"] = step;
  line["phase"] = r.state.phase;
  log.write(step_line(line, s, tokens_per_s));
}

void print_progress(int64_t step, int64_t total, const StepResult& s, double tokens_per_s, double seconds_left) {
  std::fprintf(stderr, "step %lld/%lld | loss %.4f | lr %.2e | %.0f tok/s | ETA %s\n", static_cast<long long>(step),
               static_cast<long long>(total), s.means.at(0).second, s.optimizer.lr, tokens_per_s,
               format_duration(seconds_left).c_str());
}

// Evaluates on the phase's held-out batches (if any) and logs the result.
std::optional<EvalResult> evaluate_and_log(MetricsLog& log, PretrainRun& r, const TrainConfig& t, int64_t step,
                                           bool quiet) {
  text::PretrainingData* held_out = r.eval_data[r.state.phase].get();
  if (!held_out) return std::nullopt;
  EvalResult e =
      evaluate(*r.model, *held_out, t.phases[r.state.phase].batch_size, t.eval_batches, r.device, r.precision);
  const double ppl = perplexity(e.loss);
  json::Value line = json::Value::object();
  line["step"] = step;
  line["eval_loss"] = e.loss;
  line["eval_accuracy"] = e.accuracy;
  line["eval_perplexity"] = std::isinf(ppl) ? json::Value("inf") : json::Value(ppl);  // JSON has no inf: a string, as indicators.json writes it
  line["eval_predicted_tokens"] = e.predicted;
  if (e.nsp_accuracy >= 0) line["eval_nsp_accuracy"] = e.nsp_accuracy;
  log.write(line);
  if (!quiet)
    std::fprintf(stderr, "eval step %lld | held-out loss %.4f | accuracy %.2f%% | perplexity %.2f\n",
                 static_cast<long long>(step), e.loss, 100 * e.accuracy, ppl);
  return e;
}

// The run's last line, printed also when quiet: where it stands, where its
// last checkpoint is, its final held-out metrics and its wall time.
void print_summary(const RunSummary& s, const std::string& out, const std::optional<EvalResult>& eval,
                   double run_seconds, double call_seconds) {
  char metrics[96] = "no held-out evaluation at this step";
  if (eval) std::snprintf(metrics, sizeof metrics, "held-out loss %.4f, accuracy %.2f%%", eval->loss, 100 * eval->accuracy);
  std::fprintf(stderr, "ordo pretrain: %s at step %lld of %lld; checkpoint %s; %s; wall time %s (this call %s)%s\n",
               s.interrupted ? (std::string("interrupted by ") + InterruptScope::signal_name()).c_str()
               : s.step >= s.total_steps ? "complete" : "stopped",
               static_cast<long long>(s.step), static_cast<long long>(s.total_steps),
               checkpoint_dir(out, s.step).c_str(), metrics, format_duration(run_seconds).c_str(),
               format_duration(call_seconds).c_str(),
               s.step < s.total_steps ? (std::string("; continue with --resume ") + out).c_str() : "");
}

void save_checkpoint(const std::string& run, PretrainRun& r) {
  make_directories(run + "/checkpoints");
  nn::save_model(checkpoint_dir(run, r.state.step), *r.model);
  save_training_state(run, *r.opt, r.state);
}

// The output policy (base/output.h), with the hint a folder holding a run
// deserves; what the run reads must survive the old output's removal.
void check_output(const RunConfig& c, const PretrainOptions& o) {
  ORDO_CHECK(!o.out.empty(), "pretrain: no run directory given (--out)");
  const bool holds_run = file_exists(o.out + "/config.json") || file_exists(o.out + "/metrics.jsonl");
  ORDO_CHECK(!holds_run || o.overwrite, "'", o.out, "' already holds a run; use --resume to continue it or --overwrite to replace it");
  std::vector<InputPath> inputs = c.files;
  if (c.data.corpus != "synthetic") inputs.push_back({c.data.corpus, "data.corpus"});
  inputs.push_back({c.data.vocab, "data.vocab"});
  inputs.push_back({c.train.init_from, "train.init_from"});
  ordo::check_output(o.out, OutputKind::folder, o.overwrite, inputs);
}

}  // namespace

std::unique_ptr<OutputLock> pretraining::lock_output(const PretrainOptions& o, parallel::Communicator& comm) {
  if (comm.rank() != 0 || !o.lock) return nullptr;
  const std::string& out = o.out;
  auto lock = std::make_unique<OutputLock>(out, "ordo pretrain");
  if (!lock->stale_owner().empty())
    std::fprintf(stderr, "ordo pretrain: note: took over %s, left by %s, which has ended\n", lock->path().c_str(),
                 lock->stale_owner().c_str());
  return lock;
}

namespace {

// ---- the loop -------------------------------------------------------------------------------

// Rank 0 sets up first (writing the corpus and vocabulary where the run
// needs them); the other ranks then read them from its folder.
std::unique_ptr<PretrainRun> set_up(const RunConfig& c, const std::string& path, bool resuming, bool quiet,
                                    parallel::Communicator& comm) {
  std::unique_ptr<PretrainRun> r;
  std::string lead_path = path;
  if (comm.rank() == 0) r = std::make_unique<PretrainRun>(c, path, resuming, quiet, comm);
  comm.broadcast(lead_path, 0);
  if (comm.rank() != 0) r = std::make_unique<PretrainRun>(c, lead_path, resuming, true, comm);
  if (comm.size() > 1) {
    // Every rank starts from rank 0's weights (the same seed builds the same
    // ones; the broadcast makes it so whatever happened).
    parallel::broadcast_parameters(comm, r->model->named_parameters());
    r->reducer = std::make_unique<parallel::GradientReducer>(
        comm, r->model->named_parameters(), static_cast<int64_t>(c.train.bucket_cap_mb * (1 << 20)));
  }
  return r;
}

}  // namespace

RunSummary pretraining::run_loop(const RunConfig& c, const PretrainOptions& o, const MetricsObserver& observer, RunDirectory run,
                                 bool resuming, parallel::Communicator& comm) {
  const bool lead = comm.rank() == 0, quiet = o.quiet || !lead;
  set_threads(c.train.threads);
  std::unique_ptr<PretrainRun> owned = set_up(c, run.path(), resuming, quiet, comm);
  PretrainRun& r = *owned;
  if (!quiet) print_start(c, r, resuming);
  std::optional<MetricsLog> log;  // rank 0's; the open file follows its folder when it takes its place
  if (lead) log.emplace(run.path() + "/metrics.jsonl", observer);
  InterruptScope interrupt;
  RunClock clock(r.state.elapsed_seconds);
  Throughput throughput;
  const Cadence cadence{c.train.total_steps(), c.train.log_every, c.train.eval_every, c.train.checkpoint_every};
  const auto call_started = std::chrono::steady_clock::now();
  RunSummary summary;
  summary.total_steps = cadence.total_steps;
  std::optional<EvalResult> last_eval;
  int64_t steps_this_call = 0;
  if (c.train.checkpoint_initial && r.state.step == 0 && lead) save_checkpoint(run.path(), r);
  while (r.state.step < cadence.total_steps) {
    const int64_t phase_before = r.state.phase;
    enter_current_phase(r.state, c.train.phases);
    if (r.state.phase != phase_before && !quiet) {
      const Phase& p = c.train.phases[r.state.phase];
      std::fprintf(stderr, "phase %lld of %zu from step %lld: max_seq_length %lld, batch %lld\n",
                   static_cast<long long>(r.state.phase + 1), c.train.phases.size(),
                   static_cast<long long>(r.state.step + 1), static_cast<long long>(p.max_seq_length),
                   static_cast<long long>(p.batch_size));
    }
    const int64_t step = r.state.step + 1;
    StepResult s = pretrain_step(r, c.train, step, cadence.logs(step));
    r.state.step = step;
    ++steps_this_call;
    throughput.add(s.tokens);
    if (cadence.logs(step) && lead) {
      double tokens_per_s = throughput.per_second_and_restart();
      log_step(*log, r, step, s, tokens_per_s);
      if (!quiet)
        print_progress(step, cadence.total_steps, s, tokens_per_s,
                       clock.seconds_left(steps_this_call, cadence.total_steps - step));
    }
    if (cadence.evaluates(step) && lead) last_eval = evaluate_and_log(*log, r, c.train, step, quiet);
    // Every rank stops at the same step: a Ctrl-C seen by any stops all.
    bool interrupted = InterruptScope::interrupted();
    if (comm.size() > 1) interrupted = comm.any(interrupted);
    if (run.building()) {
      // The first step is done: the new run has started and takes the output's place.
      ORDO_CHECK(!interrupted, "interrupted during the first step; '", o.out, "' is left as it was");
      run.take_place();
    }
    const bool stop = interrupted || (o.stop_after >= 0 && steps_this_call >= o.stop_after);
    if ((cadence.checkpoints(step) || stop) && lead) {
      r.state.elapsed_seconds = clock.elapsed();
      save_checkpoint(run.path(), r);
    }
    if (stop) {
      summary.interrupted = interrupted;
      if (!cadence.evaluates(step)) last_eval.reset();  // an older evaluation is not this step's
      break;
    }
  }
  summary.steps = steps_this_call;
  summary.step = r.state.step;
  if (lead)
    print_summary(summary, o.out, last_eval, clock.elapsed(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - call_started).count());
  // The others wait for rank 0's last checkpoint: when the command returns, the run is on disk.
  comm.barrier();
  return summary;
}

RunSummary pretrain(const RunConfig& c, const PretrainOptions& o, const MetricsObserver& observer) {
  parallel::SingleProcess single;
  parallel::Communicator& comm = o.comm ? *o.comm : single;
  check_same_config(comm, c.source, o.out);
  check_output(c, o);
  check_before_writing(c);
  const std::unique_ptr<OutputLock> lock = lock_output(o, comm);
  comm.barrier();  // every rank passed its checks before rank 0 writes anything
  if (comm.rank() != 0) return run_loop(c, o, observer, RunDirectory::in_place(o.out), false, comm);
  RunDirectory run = RunDirectory::beside(o.out);
  write_file_atomic(run.path() + "/config.json", json::dump(c.source, 2) + "\n");
  return run_loop(c, o, observer, std::move(run), false, comm);
}

}  // namespace ordo::train
