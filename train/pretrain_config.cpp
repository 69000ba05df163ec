// A pretraining run's config: the JSON of configs/*.json (its "extends"
// chain merged, the --set overrides applied) read strictly into RunConfig
// (train/pretrain.h), every key checked and every bad value named.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/file_io.h"
#include "train/pretrain.h"

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
  t.precision = parse_precision(r.string("precision", precision_setting_name(t.precision)), where + ": train.precision");
  t.cuda_graphs = r.boolean("cuda_graphs", t.cuda_graphs);
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

}  // namespace ordo::train
