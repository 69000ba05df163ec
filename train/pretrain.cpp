#include "train/pretrain.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "base/config.h"
#include "base/file_io.h"
#include "base/output.h"
#include "model/model.h"
#include "nn/checkpoint.h"
#include "nn/evaluate_batches.h"
#include "pe/registry.h"
#include "synth/synth.h"
#include "text/corpus.h"
#include "text/vocab_trainer.h"
#include "train/init_from.h"

namespace ordo::train {

// ---- config --------------------------------------------------------------------------

int64_t TrainConfig::total_steps() const {
  int64_t n = 0;
  for (const Phase& p : phases) n += p.steps;
  return n;
}

namespace {

DataConfig parse_data(const json::Value& v, const std::string& where) {
  FieldReader r(v, where);
  DataConfig d;
  d.corpus = r.string("corpus", d.corpus);
  d.synthetic_sentences = r.integer("synthetic_sentences", d.synthetic_sentences, 1, int64_t{1} << 32);
  d.synthetic_seed = static_cast<uint64_t>(r.integer("synthetic_seed", static_cast<int64_t>(d.synthetic_seed), 0, INT64_MAX));
  d.vocab = r.string("vocab", d.vocab);
  d.vocab_size = r.integer("vocab_size", d.vocab_size, 10, 1 << 24);
  d.vocab_min_frequency = r.integer("vocab_min_frequency", d.vocab_min_frequency, 1, INT64_MAX);
  d.lower_case = r.boolean("lower_case", d.lower_case);
  d.held_out_fraction = r.number("held_out_fraction", d.held_out_fraction, 0, 0.5);
  d.objective = r.string("objective", d.objective, {"mlm", "mlm+nsp", "causal"});
  d.max_predictions_per_seq = r.integer("max_predictions_per_seq", d.max_predictions_per_seq, 1, 1 << 20);
  d.masked_lm_prob = r.number("masked_lm_prob", d.masked_lm_prob, 0, 1);
  d.short_seq_prob = r.number("short_seq_prob", d.short_seq_prob, 0, 1);
  d.whole_word_mask = r.boolean("whole_word_mask", d.whole_word_mask);
  d.seed = static_cast<uint64_t>(r.integer("seed", static_cast<int64_t>(d.seed), 0, INT64_MAX));
  r.finish();
  return d;
}

Phase parse_phase(const json::Value& v, const std::string& where, Phase fallback) {
  FieldReader r(v, where);
  Phase p = fallback;
  p.steps = r.integer("steps", p.steps, 0, int64_t{1} << 40);
  p.max_seq_length = r.integer("max_seq_length", p.max_seq_length, 2, 1 << 20);
  p.batch_size = r.integer("batch_size", p.batch_size, 1, 1 << 20);
  r.finish();
  return p;
}

TrainConfig parse_train(const json::Value& v, const std::string& where) {
  FieldReader r(v, where);
  TrainConfig t;
  // One phase from the top-level keys, or a list of phases (never both).
  bool single = r.has("steps") || r.has("max_seq_length") || r.has("batch_size");
  Phase one;
  one.steps = r.integer("steps", 1000, 0, int64_t{1} << 40);
  one.max_seq_length = r.integer("max_seq_length", 128, 2, 1 << 20);
  one.batch_size = r.integer("batch_size", 32, 1, 1 << 20);
  if (const json::Value* phases = r.array("phases")) {
    ORDO_CHECK(!single, where, ": give either 'phases' or steps/max_seq_length/batch_size, not both");
    const json::Value& list = *phases;
    ORDO_CHECK(list.size() > 0, where, ": 'phases' must be a non-empty array of objects");
    for (size_t i = 0; i < list.size(); ++i)
      t.phases.push_back(parse_phase(list[i], where + ".phases[" + std::to_string(i) + "]", one));
  } else {
    t.phases.push_back(one);
  }
  t.grad_accum = r.integer("grad_accum", t.grad_accum, 1, 1 << 20);
  t.adam.lr = r.number("lr", 5e-4, 0, 10);
  t.adam.beta1 = r.number("beta1", t.adam.beta1, 0, 0.999999);
  t.adam.beta2 = r.number("beta2", t.adam.beta2, 0, 0.999999999);
  t.adam.eps = r.number("adam_eps", t.adam.eps, 1e-30, 1);
  t.adam.weight_decay = r.number("weight_decay", t.adam.weight_decay, 0, 10);
  t.adam.max_grad_norm = r.number("max_grad_norm", t.adam.max_grad_norm, 0, 1e30);
  // Warm-up in steps, or as a fraction of the run's steps (HF's warmup_ratio:
  // ceil(ratio x total steps)), which a shorter run (--set train.steps=60) keeps.
  ORDO_CHECK(!(r.has("warmup_steps") && r.has("warmup_ratio")), where,
             ": give warmup_steps or warmup_ratio, not both");
  t.adam.warmup_steps = r.integer("warmup_steps", 0, 0, int64_t{1} << 40);
  const double warmup_ratio = r.number("warmup_ratio", 0, 0, 1);
  t.seed = static_cast<uint64_t>(r.integer("seed", static_cast<int64_t>(t.seed), 0, INT64_MAX));
  t.log_every = r.integer("log_every", t.log_every, 1, INT64_MAX);
  t.eval_every = r.integer("eval_every", t.eval_every, 0, INT64_MAX);
  t.eval_batches = r.integer("eval_batches", t.eval_batches, 1, 1 << 20);
  t.checkpoint_every = r.integer("checkpoint_every", t.checkpoint_every, 0, INT64_MAX);
  t.checkpoint_initial = r.boolean("checkpoint_initial", t.checkpoint_initial);
  t.init_from = r.string("init_from", t.init_from);
  t.device = r.string("device", t.device);
  t.precision = r.string("precision", t.precision);
  t.cuda_graphs = r.boolean("cuda_graphs", t.cuda_graphs);
  resolve_precision(t.precision, Device::cpu(), where + ": train.precision");  // a wrong name is refused here
  t.threads = r.integer("threads", t.threads, 0, 4096);
  t.bucket_cap_mb = r.number("bucket_cap_mb", t.bucket_cap_mb, 1e-6, 1e6);
  r.finish();
  t.adam.total_steps = t.total_steps();
  ORDO_CHECK(t.total_steps() > 0, where, ": the run has no steps");
  if (warmup_ratio > 0)
    t.adam.warmup_steps = static_cast<int64_t>(std::ceil(warmup_ratio * static_cast<double>(t.total_steps())));
  ORDO_CHECK(t.adam.warmup_steps <= t.total_steps(), where, ": warmup_steps ", t.adam.warmup_steps,
             " exceeds the ", t.total_steps(), " steps of the run");
  return t;
}

}  // namespace

RunConfig parse_run_config(const json::Value& json_in, const std::vector<std::string>& overrides,
                           const std::string& where) {
  json::Value json = json_in;
  for (const auto& o : overrides) apply_override(json, o);
  FieldReader top(json, where);
  const json::Value* model = top.object("model");
  const json::Value* data = top.object("data");
  const json::Value* train = top.object("train");
  top.string("description", "");  // free text: what the config reproduces (configs/papers/)
  top.finish();
  ORDO_CHECK(model, where, ": missing the 'model' object");
  RunConfig c;
  c.data = parse_data(data ? *data : json::Value::object(), where + ": data");
  c.train = parse_train(train ? *train : json::Value::object(), where + ": train");
  // vocab_size follows the vocabulary unless the config fixes it (checked against it later).
  json::Value model_json = *model;
  if (!model_json.contains("vocab_size")) model_json["vocab_size"] = 0;
  json::Value probe = model_json;
  probe["vocab_size"] = 1;  // validated for real once the vocabulary is known
  c.model = nn::config_from_json(probe, where + ": model");
  c.model.vocab_size = model_json["vocab_size"].as_int();
  for (const Phase& p : c.train.phases) {
    ORDO_CHECK(p.max_seq_length <= c.model.max_position_embeddings || c.model.pe != "ape_learned", where,
               ": max_seq_length ", p.max_seq_length, " is beyond max_position_embeddings ",
               c.model.max_position_embeddings, " of the learned absolute position table");
  }
  ORDO_CHECK(!(c.data.objective == "causal") || c.model.decoder, where,
             ": objective 'causal' needs model.decoder = true (a causal decoder stack)");
  ORDO_CHECK(c.data.objective == "causal" || !c.model.decoder, where, ": a decoder model trains with objective 'causal'");
  // Sentence pairs put their second sentence in segment 1 (type_vocab_size 0: no segment embedding at all).
  ORDO_CHECK(c.data.objective != "mlm+nsp" || c.model.type_vocab_size != 1, where, ": objective 'mlm+nsp' puts a "
             "pair's second sentence in segment (token type) 1, but model.type_vocab_size is 1 (segment ids 0..0): "
             "give type_vocab_size 2, as BERT's, or objective 'mlm'");
  c.source = json;
  c.source["model"] = model_json;
  return c;
}

namespace {

// `base` with `over` laid on top: objects merge key by key (recursively),
// any other value of `over` replaces the base's.
json::Value merged(const json::Value& base, const json::Value& over) {
  if (!base.is_object() || !over.is_object()) return over;
  json::Value out = base;
  for (const auto& [key, value] : over.items()) out[key] = out.contains(key) ? merged(out[key], value) : value;
  return out;
}

// Reads a run config file and resolves its "extends": the path of a config
// this one builds on, relative to this file's folder (configs/papers/...
// name "../../tiny.json"), itself possibly extending another.
json::Value read_with_extends(const std::string& path, int depth, std::vector<InputPath>* files) {
  ORDO_CHECK(depth < 16, path, ": \"extends\" chains more than 16 files deep (a cycle?)");
  json::Value v;
  v = json::parse_file(path);
  const json::Value* base = v.is_object() ? v.find("extends") : nullptr;
  if (!base) return v;
  ORDO_CHECK(base->is_string(), path, ": \"extends\" must be a string (the path of a config file), got ",
             json::type_name(base->type()));
  std::string target = base->as_string();
  if (!target.empty() && target[0] != '/') {
    size_t slash = path.rfind('/');
    target = (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) + "/" + target;
  }
  ORDO_CHECK(file_exists(target), path, ": \"extends\": no config file ", target);
  json::Value own = json::Value::object();
  for (const auto& [key, value] : v.items())
    if (key != "extends") own[key] = value;
  if (files) files->push_back({target, "the \"extends\" of " + path});
  return merged(read_with_extends(target, depth + 1, files), own);
}

}  // namespace

json::Value read_config_file(const std::string& path, std::vector<InputPath>* files) {
  if (files) files->push_back({path, "--config"});
  return read_with_extends(path, 0, files);
}

RunConfig read_run_config(const std::string& path, const std::vector<std::string>& overrides) {
  // The resolved config (every "extends" merged in) is what the run records.
  std::vector<InputPath> files;
  RunConfig c = parse_run_config(read_config_file(path, &files), overrides, path);
  c.files = std::move(files);
  return c;
}

namespace {

// ---- data ----------------------------------------------------------------------------

text::PretrainingOptions data_options(const DataConfig& d, int64_t max_seq_length) {
  text::PretrainingOptions o;
  o.objective = text::parse_objective(d.objective);
  o.max_seq_length = max_seq_length;
  o.max_predictions_per_seq = d.max_predictions_per_seq;
  o.masked_lm_prob = d.masked_lm_prob;
  o.short_seq_prob = d.short_seq_prob;
  o.whole_word_mask = d.whole_word_mask;
  o.seed = d.seed;
  return o;
}

}  // namespace

text::CorpusSplit split_corpus(const DataConfig& d, const std::string& corpus_path, const text::Vocab& vocab) {
  text::TokenizerOptions to;
  to.lower_case = d.lower_case;
  text::Tokenizer tokenizer(vocab, to);
  text::CorpusSplitOptions so;
  so.held_out_fraction = d.held_out_fraction;
  so.seed = d.seed;
  return text::tokenize_corpus(corpus_path, tokenizer, so);
}

namespace {

struct Corpus {
  text::Vocab vocab;
  text::CorpusSplit split;
};

// The corpus and the vocabulary of a run, made or found in the run directory.
// Rank 0 writes what the run needs (the synthetic corpus, the vocabulary);
// the other ranks of a data-parallel run read it from rank 0's folder.
Corpus prepare_corpus(const RunConfig& c, const std::string& run, bool quiet, bool writes) {
  std::string corpus_path = c.data.corpus;
  if (corpus_path == "synthetic") {
    corpus_path = run + "/data/corpus.txt";
    // Reuse a corpus already generated for this seed and size (a resumed run); otherwise (re)generate.
    bool current = false;
    if (file_exists(run + "/data/meta.json")) {
      json::Value meta = json::parse_file(run + "/data/meta.json");
      current = meta["seed"].as_int() == static_cast<int64_t>(c.data.synthetic_seed) &&
                meta["sentences_requested"].as_int() == c.data.synthetic_sentences &&
                meta["grammar_version"].as_int() == synth::kGrammarVersion;
    }
    ORDO_CHECK(current || writes, "rank 0 wrote no synthetic corpus into ", run, "/data");
    if (!current) {
      if (!quiet) std::fprintf(stderr, "generating %lld synthetic sentences (seed %llu) into %s/data\n",
                               static_cast<long long>(c.data.synthetic_sentences),
                               static_cast<unsigned long long>(c.data.synthetic_seed), run.c_str());
      synth::write_synthetic(run + "/data", c.data.synthetic_sentences, c.data.synthetic_seed, synth::Config{}, true);
    }
  }
  std::string vocab_path = run + "/vocab.txt";
  if (!writes) {
    ORDO_CHECK(file_exists(vocab_path), "rank 0 wrote no vocabulary at ", vocab_path);
  } else if (!c.data.vocab.empty()) {
    text::Vocab::load(c.data.vocab).save(vocab_path);
  } else if (!file_exists(vocab_path)) {
    text::VocabTrainerOptions vo;
    vo.vocab_size = c.data.vocab_size;
    vo.min_frequency = c.data.vocab_min_frequency;
    vo.lower_case = c.data.lower_case;
    text::Vocab trained = text::train_wordpiece_from_corpus(corpus_path, vo);
    const std::string warning = text::small_vocabulary_warning(trained.size(), c.data.vocab_size, "data.vocab_size",
                                                               c.data.vocab_min_frequency, "data.vocab_min_frequency");
    if (!warning.empty()) std::fprintf(stderr, "warning: %s (corpus %s)\n", warning.c_str(), corpus_path.c_str());
    trained.save(vocab_path);
  }
  Corpus out{text::Vocab::load(vocab_path), {}};
  out.split = split_corpus(c.data, corpus_path, out.vocab);
  if (c.data.held_out_fraction > 0 && out.split.held_out.documents() == 0)
    std::fprintf(stderr, "warning: the held-out split has no document (%lld documents, held_out_fraction %g): the run "
                         "has no held-out evaluation; give a larger corpus or fraction\n",
                 static_cast<long long>(out.split.train.documents()), c.data.held_out_fraction);
  return out;
}

struct DeviceBatch {
  nn::BertInputs inputs;
  Tensor labels, nsp_labels;
  int64_t tokens = 0;  // positions processed (batch x length)
};

// The encoder's padding bias of a batch, made on the host (nn::BertInputs::padding_bias).
Tensor padding_bias(const text::Batch& b) {
  return nn::attention_bias(Tensor::from_vector(b.attention_mask, {b.batch, b.length}), b.batch, b.length,
                            /*causal=*/false, DType::f32, Device::cpu());
}

DeviceBatch to_device(const text::Batch& b, Device device) {
  const Shape shape{b.batch, b.length};
  DeviceBatch d;
  d.inputs.input_ids = Tensor::from_vector(b.input_ids, shape, device);
  d.inputs.segment_ids = Tensor::from_vector(b.segment_ids, shape, device);
  d.inputs.positions = Tensor::from_vector(b.positions, shape, device);
  d.inputs.attention_mask = Tensor::from_vector(b.attention_mask, shape, device);
  // Known here, on the host: the encodings need not read them back from the device.
  d.inputs.facts = nn::input_facts(b.positions.data(), b.segment_ids.data(), b.batch, b.length);
  d.inputs.padding_bias = padding_bias(b).to(device);
  // On the host: the model reads them there (nn/heads.h), which on a device saves a round trip.
  d.labels = Tensor::from_vector(b.clm_labels.empty() ? b.mlm_labels : b.clm_labels, shape);
  if (!b.nsp_labels.empty()) d.nsp_labels = Tensor::from_vector(b.nsp_labels, {b.batch}, device);
  d.tokens = b.batch * b.length;
  return d;
}

// ---- evaluation ------------------------------------------------------------------------

// Running sums of an evaluation: one batch at a time, then finish().
struct EvalSums {
  double loss_sum = 0, correct = 0, nsp_correct = 0, nsp_total = 0;
  int64_t predicted = 0;

  void add(nn::PretrainingModel& model, const DeviceBatch& b, nn::Context& ctx) {
    nn::PretrainingOutput out = model.forward(b.inputs, b.labels, b.nsp_labels, ctx);
    const int64_t n = out.lm_targets.numel();
    if (n == 0) return;
    loss_sum += out.lm_loss.value().item() * n;
    Tensor hits = eq(argmax(out.lm_logits.value(), 1).to(DType::f32), out.lm_targets.to(DType::f32));
    correct += sum(hits).item();
    predicted += n;
    if (out.nsp_logits.defined() && b.nsp_labels.defined()) {
      nsp_correct += sum(eq(argmax(out.nsp_logits, 1).to(DType::f32), b.nsp_labels.to(DType::f32))).item();
      nsp_total += static_cast<double>(b.nsp_labels.numel());
    }
  }
  void merge(const EvalSums& other) {
    loss_sum += other.loss_sum;
    correct += other.correct;
    nsp_correct += other.nsp_correct;
    nsp_total += other.nsp_total;
    predicted += other.predicted;
  }
  EvalResult finish() const {
    EvalResult r;
    r.predicted = predicted;
    if (predicted > 0) {
      r.loss = loss_sum / predicted;
      r.accuracy = correct / predicted;
    }
    if (nsp_total > 0) r.nsp_accuracy = nsp_correct / nsp_total;
    return r;
  }
};

// Mean LM loss and accuracy over the first `batches` batches of the held-out
// split (always the same batches: a fresh cursor each time).
EvalResult evaluate(nn::PretrainingModel& model, text::PretrainingData& data, int64_t batch_size, int64_t batches,
                    Device device) {
  text::Cursor cursor;
  std::vector<text::Batch> held_out;
  for (int64_t i = 0; i < batches; ++i) {
    held_out.push_back(data.next_batch(cursor, batch_size));
    if (cursor.epoch > 0) break;  // the held-out split is smaller than asked: once through
  }
  return evaluate_batches(model, held_out, device);
}

// The accuracy of always predicting the most frequent target: the baseline a
// model that ignores its context reaches (about what a unigram model gets).
double unigram_baseline(text::PretrainingData& data, int64_t batch_size, int64_t batches) {
  std::map<int64_t, int64_t> counts;
  int64_t total = 0;
  text::Cursor cursor;
  for (int64_t i = 0; i < batches && cursor.epoch == 0; ++i) {
    text::Batch b = data.next_batch(cursor, batch_size);
    const auto& labels = b.clm_labels.empty() ? b.mlm_labels : b.clm_labels;
    for (int64_t l : labels)
      if (l != text::kIgnoreLabel) ++counts[l], ++total;
  }
  int64_t best = 0;
  for (const auto& [id, n] : counts) best = std::max(best, n);
  return total ? static_cast<double>(best) / total : 0.0;
}

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
  if (matmul_precision() == MatmulPrecision::bf16) opt->keep_weights_rounding();
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
               precision_description(matmul_precision(), r.device).c_str());
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

// The phase whose steps hold `step` (a checkpoint at step S is saved in the
// phase of step S; step 0 is phase 0's).
int64_t phase_of_step(int64_t step, const std::vector<Phase>& phases) {
  int64_t end = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    end += phases[i].steps;
    if (step <= end) return static_cast<int64_t>(i);
  }
  return static_cast<int64_t>(phases.size()) - 1;
}

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
[[noreturn]] void report_non_finite(int64_t step, nn::PretrainingModel& model, const DeviceBatch& b) {
  for (const auto& [name, p] : model.named_parameters()) {
    if (!std::isfinite(global_norm({p->var.value()})))
      throw Error(detail::cat("step ", step, ": the loss is not finite; parameter '", name, "' holds NaN or Inf"));
  }
  NoGradGuard no_grad;
  nn::Context ctx = nn::Context::eval();
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
    ctx.next_stream = 0;  // counted from the step's base on the device
    ctx.stream_base = r.graphed->stream_base();
    ctx.rounded_weights = r.opt->rounded_weights();
    nn::PretrainingOutput out = r.model->forward(in.inputs, r.graph_rows, in.nsp_labels, ctx);
    MicroBatch mb{out.loss, {{"loss", out.loss.value()}, {"lm_loss", out.lm_loss.value()}}, b.batch * b.length};
    if (out.nsp_loss.defined()) mb.scalars.emplace_back("nsp_loss", out.nsp_loss.value());
    return mb;
  };
  auto report = [&](int64_t) { report_non_finite(step, *r.model, to_device(b, r.device)); };
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
    ctx.rounded_weights = r.opt->rounded_weights();
    const int64_t padded = r.device.is_cuda() ? predicted_row_count(r, b) : 0;
    nn::PretrainingOutput out = r.model->forward(b.inputs, nn::mlm_rows(b.labels, r.device, padded), b.nsp_labels, ctx);
    MicroBatch mb{out.loss, {{"loss", out.loss.value()}, {"lm_loss", out.lm_loss.value()}}, b.tokens};
    if (out.nsp_loss.defined()) mb.scalars.emplace_back("nsp_loss", out.nsp_loss.value());
    return mb;
  };
  auto report = [&](int64_t m) { report_non_finite(step, *r.model, batches[m]); };
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
  EvalResult e = evaluate(*r.model, *held_out, t.phases[r.state.phase].batch_size, t.eval_batches, r.device);
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

// ---- where a run writes -------------------------------------------------------------------

// The folder a run writes into. A resumed run writes in place. A new run is
// built in base/output.h's StagedFolder beside its output (.OUT.ordo-new-XXXXXX in
// the same parent) and replaces the output — a previous run there, whole —
// only once it has done its first step; until then a failure or Ctrl-C
// removes the new folder and leaves the output (and the folders above it)
// exactly as they were.
class RunDirectory {
 public:
  static RunDirectory in_place(const std::string& out) { return RunDirectory(out, std::nullopt); }
  static RunDirectory beside(const std::string& out) { return RunDirectory(out, StagedFolder(out)); }

  const std::string& path() const { return building() ? staged_->path() : out_; }
  bool building() const { return staged_ && !staged_->committed(); }
  // Swaps the new run in for whatever the output held, which is then removed.
  void take_place() { staged_->commit(); }

 private:
  RunDirectory(std::string out, std::optional<StagedFolder> staged) : out_(std::move(out)), staged_(std::move(staged)) {}
  std::string out_;
  std::optional<StagedFolder> staged_;
};

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

// Rank 0 claims the run directory for this process (base/output.h's
// OutputLock): a second ordo process given the same run is refused. A lock
// left by a process that ended is taken over and said.
std::unique_ptr<OutputLock> lock_output(const PretrainOptions& o, parallel::Communicator& comm) {
  if (comm.rank() != 0 || !o.lock) return nullptr;
  const std::string& out = o.out;
  auto lock = std::make_unique<OutputLock>(out, "ordo pretrain");
  if (!lock->stale_owner().empty())
    std::fprintf(stderr, "ordo pretrain: note: took over %s, left by %s, which has ended\n", lock->path().c_str(),
                 lock->stale_owner().c_str());
  return lock;
}

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

RunSummary run_loop(const RunConfig& c, const PretrainOptions& o, const MetricsObserver& observer, RunDirectory run,
                    bool resuming, parallel::Communicator& comm) {
  const bool lead = comm.rank() == 0, quiet = o.quiet || !lead;
  set_threads(c.train.threads);
  MatmulPrecisionScope precision(
      resolve_precision(c.train.precision, resolve_device(c.train.device, comm.local_rank()), "train.precision"));
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

// The stored config of a run trained on to `steps` (PretrainOptions::extend_to):
// train.steps = steps, the warm-up fixed at the steps it had.
RunConfig extended_config(const RunConfig& c, int64_t steps, int64_t done, const std::string& where) {
  ORDO_CHECK(c.train.phases.size() == 1, "--set train.steps=", steps, ": the run has ", c.train.phases.size(),
             " phases; only a single-phase run can be extended this way");
  ORDO_CHECK(steps > done, "--set train.steps=", steps, ": a run is extended beyond the ", done,
             " steps it has done; give more steps");
  json::Value source = c.source;
  json::Value train = json::Value::object();
  for (const auto& [key, value] : source["train"].items())
    if (key != "warmup_ratio") train[key] = value;
  train["steps"] = steps;
  train["warmup_steps"] = c.train.adam.warmup_steps;  // a ratio would move it with the new end
  source["train"] = train;
  return parse_run_config(source, {}, where);
}

// Every key under which `a` and `b` differ ("train.lr", "model.pe"), objects compared key by key.
void differing_keys(const json::Value& a, const json::Value& b, const std::string& at, std::vector<std::string>& out) {
  if (!a.is_object() || !b.is_object()) {
    if (!(a == b)) out.push_back(at.empty() ? "(the whole config)" : at);
    return;
  }
  std::set<std::string> keys;
  for (const auto& [key, value] : a.items()) keys.insert(key);
  for (const auto& [key, value] : b.items()) keys.insert(key);
  const json::Value none;
  for (const std::string& key : keys) {
    const json::Value* x = a.find(key);
    const json::Value* y = b.find(key);
    differing_keys(x ? *x : none, y ? *y : none, at.empty() ? key : at + "." + key, out);
  }
}

// The run's config.json against the one the checkpoint was trained with:
// only the schedule's end may differ (--resume --set train.steps=N writes a
// new train.steps, and the warm-up as a number of steps), the warm-up itself not.
void check_config_unchanged(const json::Value& trained, const RunConfig& c, const std::string& state_path,
                            const std::string& config_path) {
  if (trained.is_null()) return;  // a checkpoint from before the config was kept with it
  std::vector<std::string> keys;
  differing_keys(trained, c.source, "", keys);
  std::string named;
  for (const std::string& key : keys)
    if (key != "train.steps" && key != "train.warmup_steps" && key != "train.warmup_ratio")
      named += (named.empty() ? "" : ", ") + key;
  if (named.empty() && !keys.empty()) {
    const RunConfig before = parse_run_config(trained, {}, state_path + ": run_config");
    if (before.train.adam.warmup_steps != c.train.adam.warmup_steps) named = "train.warmup_steps (as resolved)";
  }
  ORDO_CHECK(named.empty(), config_path, " differs from the config its latest checkpoint was trained with (",
             state_path, ": run_config) at ", named, ": a resumed run must go on as it began. Restore the config, ",
             "or start a new run with the new one; nothing was changed");
}

// What the latest checkpoint's trainer state says against the run's config:
// a phase and a step the schedule has, the step inside its phase, and the
// config it was trained with. (Its data cursor is checked against the data
// when the run is set up: PretrainRun.)
void check_state_fits_run(const TrainerState& s, const RunConfig& c, const std::string& state_path,
                          const std::string& config_path) {
  const std::vector<Phase>& phases = c.train.phases;
  ORDO_CHECK(s.phase < static_cast<int64_t>(phases.size()), state_path, " says phase ", s.phase, " (counted from 0), but ",
             config_path, " has ", phases.size(), " phase(s): the trainer state was edited or belongs to another run; "
             "nothing was changed");
  ORDO_CHECK(s.step <= c.train.total_steps(), state_path, " says step ", s.step, ", beyond the ", c.train.total_steps(),
             " steps of ", config_path, "; nothing was changed");
  ORDO_CHECK(s.phase == phase_of_step(s.step, phases), state_path, " says phase ", s.phase, " at step ", s.step,
             ", which the schedule of ", config_path, " trains in phase ", phase_of_step(s.step, phases),
             " (counted from 0): the trainer state was edited or belongs to another run; nothing was changed");
  check_config_unchanged(s.run_config, c, state_path, config_path);
}

}  // namespace

double perplexity(double mean_loss) { return std::exp(mean_loss); }

// The batches go a thread each on the CPU (nn/evaluate_batches.h); their sums
// are added in order, as one after another.
EvalResult evaluate_batches(nn::PretrainingModel& model, const std::vector<text::Batch>& batches, Device device) {
  std::vector<EvalSums> each(batches.size());
  nn::evaluate_batches(static_cast<int64_t>(batches.size()), device, [&](int64_t i) {
    nn::Context ctx = nn::Context::eval();
    each[static_cast<size_t>(i)].add(model, to_device(batches[static_cast<size_t>(i)], device), ctx);
  });
  EvalSums sums;
  for (const EvalSums& e : each) sums.merge(e);
  return sums.finish();
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

RunSummary resume_pretrain(const PretrainOptions& o, const MetricsObserver& observer) {
  parallel::SingleProcess single;
  parallel::Communicator& comm = o.comm ? *o.comm : single;
  ORDO_CHECK(directory_exists(o.out), "--resume: '", o.out, "' is not a directory");
  const std::string config_path = o.out + "/config.json";
  ORDO_CHECK(file_exists(config_path), "--resume: '", o.out, "' holds no run (no config.json)");
  RunConfig c = read_run_config(config_path, {});
  const std::unique_ptr<OutputLock> lock = lock_output(o, comm);
  const int64_t done = std::max<int64_t>(latest_checkpoint(o.out), 0);
  // The checkpoint to resume from vouches for itself before anything is changed.
  if (latest_checkpoint(o.out) >= 0) {
    const std::string dir = checkpoint_dir(o.out, done);
    check_state_fits_run(load_trainer_state(dir), c, dir + "/trainer_state.json", config_path);
  }
  comm.barrier();  // every rank has read the stored config before rank 0 updates it
  if (o.extend_to >= 0) {
    c = extended_config(c, o.extend_to, done, config_path);
    if (comm.rank() == 0)
      write_file_atomic(config_path, json::dump(c.source, 2) + "\n");  // validated above: the run's new plan
  } else if (done >= c.train.total_steps()) {
    if (comm.rank() == 0)
      std::fprintf(stderr,
                 "ordo pretrain: '%s' is complete (step %lld of %lld); nothing to do. To train it further: "
                 "ordo pretrain --resume %s --set train.steps=N (N > %lld)\n",
                 o.out.c_str(), static_cast<long long>(done), static_cast<long long>(c.train.total_steps()),
                 o.out.c_str(), static_cast<long long>(done));
    RunSummary complete;
    complete.step = complete.total_steps = done;
    return complete;
  }
  check_same_config(comm, c.source, o.out);
  return run_loop(c, o, observer, RunDirectory::in_place(o.out), true, comm);
}

}  // namespace ordo::train