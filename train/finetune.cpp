#include "train/finetune.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/config.h"
#include "base/counter_rng.h"
#include "base/error.h"
#include "base/file_io.h"
#include "base/output.h"
#include "base/subprocess.h"
#include "downstream/classification.h"
#include "downstream/glue.h"
#include "downstream/length_bins.h"
#include "downstream/metrics.h"
#include "downstream/senteval.h"
#include "downstream/squad.h"
#include "downstream/squad_eval.h"
#include "downstream/squad_features.h"
#include "downstream/squad_predict.h"
#include "downstream/tsv.h"
#include "model/model.h"
#include "nn/checkpoint.h"
#include "nn/evaluate_batches.h"
#include "nn/task_heads.h"
#include "parallel/communicator.h"
#include "parallel/gradient_reducer.h"
#include "pe/registry.h"
#include "text/tokenizer.h"
#include "train/checkpoint_paths.h"
#include "train/loop.h"
#include "train/position_init.h"

namespace ordo::train {

// ---- the config ------------------------------------------------------------------------------

namespace {

// The config with its learning rate(s) replaced by `lrs`: train.lr and
// train.learning_rates dropped, train.learning_rates set.
json::Value with_learning_rates(const json::Value& config, const std::vector<double>& lrs) {
  json::Value out = json::Value::object(), train = json::Value::object(), grid = json::Value::array();
  for (const auto& [key, value] : config.items())
    if (key != "train") out[key] = value;
  if (const json::Value* t = config.find("train"); t && t->is_object())
    for (const auto& [key, value] : t->items())
      if (key != "lr" && key != "learning_rates") train[key] = value;
  for (double lr : lrs) grid.push_back(lr);
  train["learning_rates"] = grid;
  out["train"] = train;
  return out;
}

}  // namespace

std::string shortest_text(double value) {
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

FinetuneConfig parse_finetune_config(const json::Value& json_in, const std::vector<std::string>& overrides,
                                     const std::string& where, const std::vector<double>& learning_rates) {
  json::Value json = json_in.is_null() ? json::Value::object() : json_in;
  for (const auto& o : overrides) apply_override(json, o);
  ORDO_CHECK(json.is_object(), where, ": a fine-tuning config is a JSON object");
  if (!learning_rates.empty()) json = with_learning_rates(json, learning_rates);
  FieldReader top(json, where);
  const json::Value* train = top.object("train");
  const json::Value* tokenizer = top.object("tokenizer");
  const json::Value* squad = top.object("squad");
  const json::Value* model = top.object("model");
  top.string("description", "");
  top.finish();
  FinetuneConfig c;

  const json::Value empty = json::Value::object();
  FieldReader t(train ? *train : empty, where + ": train");
  ORDO_CHECK(!(t.has("lr") && t.has("learning_rates")), where,
             ": train: give lr or learning_rates, not both (to replace a config's grid: --lr A[,B...], which sets "
             "train.learning_rates)");
  if (const json::Value* grid = t.array("learning_rates")) {
    c.learning_rates.clear();
    for (size_t i = 0; i < grid->size(); ++i) {
      const json::Value& lr = (*grid)[i];
      ORDO_CHECK(lr.is_number() && lr.as_number() > 0 && lr.as_number() <= 10, where,
                 ": train: learning_rates[", i, "] must be a number in (0, 10]");
      ORDO_CHECK(std::find(c.learning_rates.begin(), c.learning_rates.end(), lr.as_number()) == c.learning_rates.end(),
                 where, ": train: learning_rates lists ", shortest_text(lr.as_number()),
                 " twice; each learning rate is one set of runs");
      c.learning_rates.push_back(lr.as_number());
    }
    ORDO_CHECK(!c.learning_rates.empty(), where, ": train: learning_rates is empty");
  } else {
    c.learning_rates = {t.number("lr", c.learning_rates[0], 1e-12, 10)};
  }
  c.seeds = t.integer("seeds", c.seeds, 1, 1000);
  c.seed = static_cast<uint64_t>(t.integer("seed", static_cast<int64_t>(c.seed), 0, int64_t{1} << 40));
  c.epochs = t.integer("epochs", c.epochs, 1, 100000);
  c.batch_size = t.integer("batch_size", c.batch_size, 1, 1 << 16);
  c.eval_batch_size = t.integer("eval_batch_size", c.eval_batch_size, 1, 1 << 16);
  c.max_seq_length = t.integer("max_seq_length", c.max_seq_length, 4, 1 << 16);
  c.warmup_ratio = t.number("warmup_ratio", c.warmup_ratio, 0, 1);
  c.weight_decay = t.number("weight_decay", c.weight_decay, 0, 10);
  c.max_grad_norm = t.number("max_grad_norm", c.max_grad_norm, 0, 1e30);
  c.log_every = t.integer("log_every", c.log_every, 1, INT64_MAX);
  c.save_best = t.boolean("save_best", c.save_best);
  c.select_epoch = t.string("select_epoch", c.select_epoch, {"best", "last"});
  c.max_train_examples = t.integer("max_train_examples", c.max_train_examples, 0, INT64_MAX);
  c.device = t.string("device", c.device);
  c.precision = t.string("precision", c.precision);
  resolve_precision(c.precision, Device::cpu(), where + ": train.precision");  // a wrong name is refused here
  c.threads = t.integer("threads", c.threads, 0, 4096);
  c.parallel_runs = t.integer("parallel_runs", c.parallel_runs, 0, 4096);
  c.bucket_cap_mb = t.number("bucket_cap_mb", c.bucket_cap_mb, 1e-6, 1e6);
  t.finish();

  FieldReader k(tokenizer ? *tokenizer : empty, where + ": tokenizer");
  c.lower_case = k.string("lower_case", c.lower_case, {"auto", "true", "false"});
  k.finish();

  FieldReader s(squad ? *squad : empty, where + ": squad");
  c.doc_stride = s.integer("doc_stride", c.doc_stride, 1, 1 << 16);
  c.max_query_length = s.integer("max_query_length", c.max_query_length, 1, 1 << 16);
  c.n_best_size = s.integer("n_best_size", c.n_best_size, 1, 1000);
  c.max_answer_length = s.integer("max_answer_length", c.max_answer_length, 1, 1 << 16);
  c.null_score_diff_threshold = s.number("null_score_diff_threshold", c.null_score_diff_threshold, -1e30, 1e30);
  s.finish();
  if (model) c.model = *model;  // its keys are checked against the checkpoint's config (nn::with_overrides)
  c.source = json;
  return c;
}

const std::vector<std::string>& finetune_task_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const downstream::GlueTask& t : downstream::glue_tasks())
      if (t.name != "ax") n.push_back(t.name);  // AX is a test-only diagnostic: nothing to train on
    n.push_back("squad");
    n.push_back("squad2");
    n.push_back("senteval");
    return n;
  }();
  return names;
}

Spread spread(const std::vector<double>& values) {
  Spread s;
  s.n = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / s.n;
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.std = s.n > 1 ? std::sqrt(squares / (s.n - 1)) : 0.0;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  s.median = s.n % 2 ? sorted[s.n / 2] : (sorted[s.n / 2 - 1] + sorted[s.n / 2]) / 2;
  return s;
}

// ---- the files of a task -------------------------------------------------------------------------

namespace {

bool is_squad(const std::string& task) { return task == "squad" || task == "squad2"; }

// The one of `names` present in `folder`, or "" when none is; two present
// are refused rather than one picked silently (SQuAD's train-v1.1.json beside a train.json).
std::string the_one_present(const std::string& folder, const std::vector<std::string>& names) {
  std::vector<std::string> present;
  for (const std::string& n : names)
    if (file_exists(folder + "/" + n)) present.push_back(n);
  ORDO_CHECK(present.size() <= 1, "--data ", folder, " holds both ", present[0], " and ", present[1],
             ": ordo would have to pick one; keep only the one to fine-tune on (or give a folder holding one)");
  return present.empty() ? "" : folder + "/" + present[0];
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : " or ") + n;
  return s;
}

}  // namespace

TaskFiles find_task_files(const std::string& task, const std::string& folder) {
  const auto& names = finetune_task_names();
  ORDO_CHECK(std::find(names.begin(), names.end(), task) != names.end(), "unknown task '", task,
             "': fine-tuning knows ", downstream::join_fields(names, ", "));
  TaskFiles f;
  if (task == "senteval") {  // one file holds the three partitions: the file, or the folder's only .txt
    if (file_exists(folder) && !directory_exists(folder)) return f.train = folder, f;
    ORDO_CHECK(directory_exists(folder), "--data ", folder, ": neither a SentEval .txt file nor a folder");
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(folder))
      if (entry.path().extension() == ".txt") found.push_back(entry.path().string());
    std::sort(found.begin(), found.end());
    ORDO_CHECK(found.size() == 1, "--data ", folder, ": the senteval task reads one SentEval .txt file; the folder has ",
               found.size(), found.empty() ? "" : " (" + downstream::join_fields(found, ", ") + ")");
    f.train = found[0];
    return f;
  }
  ORDO_CHECK(directory_exists(folder), "--data ", folder, ": not a directory");
  std::vector<std::string> train_names{"train.tsv"}, dev_names{"dev.tsv"};
  if (task == "squad") train_names = {"train-v1.1.json", "train.json"}, dev_names = {"dev-v1.1.json", "dev.json"};
  if (task == "squad2") train_names = {"train-v2.0.json", "train.json"}, dev_names = {"dev-v2.0.json", "dev.json"};
  if (task == "mnli") dev_names = {"dev_matched.tsv"};
  f.train = the_one_present(folder, train_names);
  const std::string dev = the_one_present(folder, dev_names);
  ORDO_CHECK(!f.train.empty() && !dev.empty(), "--data ", folder, ": the ", task, " task needs its training file (",
             joined(train_names), ") and its dev file (", joined(dev_names), "); ",
             f.train.empty() ? "the training file" : "the dev file", " is missing");
  f.dev.push_back(dev);
  if (!is_squad(task)) {
    // Further dev sets beside the main one, evaluated too (MNLI's mismatched
    // set; probes such as ordo data tasks' dev_shuffle_3.tsv), in name order.
    std::vector<std::string> more;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("dev_", 0) == 0 && name.size() > 8 && name.substr(name.size() - 4) == ".tsv" &&
          folder + "/" + name != dev)
        more.push_back(folder + "/" + name);
    }
    std::sort(more.begin(), more.end());
    f.dev.insert(f.dev.end(), more.begin(), more.end());
  }
  if (!is_squad(task)) {
    const std::vector<std::string> tests =
        task == "mnli" ? std::vector<std::string>{"test_matched.tsv", "test_mismatched.tsv"}
                       : std::vector<std::string>{"test.tsv"};
    for (const std::string& t : tests)
      if (file_exists(folder + "/" + t)) f.test.push_back(folder + "/" + t);
  }
  return f;
}

namespace {

// The first n of `items` (train.max_train_examples); all when n is 0.
template <class T>
void keep_first(std::vector<T>& items, int64_t n) {
  if (n > 0 && static_cast<int64_t>(items.size()) > n) items.resize(static_cast<size_t>(n));
}

// ---- batches ---------------------------------------------------------------------------------------

// Rows of token ids padded to the longest, with their segments, positions
// 0..L-1 and the attention mask, on `device`.
nn::BertInputs pad_batch(const std::vector<const std::vector<int32_t>*>& ids,
                         const std::vector<const std::vector<int32_t>*>& segments, int32_t pad_id, Device device,
                         int64_t* tokens) {
  const int64_t batch = static_cast<int64_t>(ids.size());
  int64_t length = 1;
  for (const auto* row : ids) length = std::max<int64_t>(length, static_cast<int64_t>(row->size()));
  std::vector<int64_t> input(batch * length, pad_id), segment(batch * length, 0), position(batch * length),
      mask(batch * length, 0);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < length; ++i) position[b * length + i] = i;
    for (size_t i = 0; i < ids[b]->size(); ++i) {
      input[b * length + i] = (*ids[b])[i];
      segment[b * length + i] = (*segments[b])[i];
      mask[b * length + i] = 1;
    }
  }
  const Shape shape{batch, length};
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(input, shape, device);
  in.segment_ids = Tensor::from_vector(segment, shape, device);
  in.positions = Tensor::from_vector(position, shape, device);
  in.attention_mask = Tensor::from_vector(mask, shape, device);
  in.facts = nn::input_facts(position.data(), segment.data(), batch, length);
  if (tokens) *tokens = batch * length;
  return in;
}

// ---- a task: its data, its model, its evaluation ----------------------------------------------------

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
  // table): the baseline that shows what pretraining brings.
  virtual void load(const std::string& checkpoint, Device device, uint64_t seed, bool quiet, const Scratch* scratch,
                    bool new_head) = 0;
  virtual nn::Module& model() = 0;
  // The loss on training examples `indices`, and the positions it processed.
  virtual Var loss(const std::vector<int64_t>& indices, nn::Context& ctx, int64_t* tokens) = 0;
  virtual Evaluation evaluate() = 0;
  // The last evaluation's predictions (and, for GLUE, the test files') into `dir`.
  virtual void write_predictions(const std::string& dir) = 0;
  // The model's checkpoint into `dir`.
  virtual void save(const std::string& dir) = 0;
};

// The score of a GLUE evaluation: the mean of its metrics (GLUE's per-task score), nulls left out.
double mean_of_metrics(const json::Value& metrics) {
  double sum = 0;
  int n = 0;
  for (const auto& [key, value] : metrics.items())
    if (value.is_number()) sum += value.as_number(), ++n;
  return n ? sum / n : 0.0;
}

std::string dev_key(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  return name.substr(0, name.rfind('.'));  // "dev", "dev_matched", "dev_mismatched"
}

// What the task model took from the checkpoint and what it made new.
void print_load_report(const nn::LoadReport& r) {
  for (const std::string& name : r.missing)
    std::fprintf(stderr, "  new (not in the checkpoint, initialised): %s\n", name.c_str());
  if (!r.unused.empty())
    std::fprintf(stderr, "  left out of the checkpoint: %zu tensors (%s ...)\n", r.unused.size(), r.unused[0].c_str());
}

// A task model of the scratch config with new weights from `seed`, and the position table copied in.
template <class Model, class... Args>
std::unique_ptr<Model> fresh_model(const Scratch& scratch, Device device, uint64_t seed, Args... args) {
  const nn::BertConfig& config = scratch.config;
  auto model = std::make_unique<Model>(config, pe::make_position_encoding(config, device), device, args...);
  nn::initialize_bert(*model, model->bert, seed);
  if (scratch.positions) copy_position_table(*model, config, *scratch.positions);
  return model;
}

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

ClassificationData read_glue_data(const downstream::GlueTask& task, const TaskFiles& files) {
  auto labelled = [&](const std::string& path) {
    downstream::GlueSet set = downstream::read_glue(task, path);
    ORDO_CHECK(set.labelled, path, ": ", task.display, " training and dev files carry labels; this one has none");
    ORDO_CHECK(!set.examples.empty(), path, ": no examples");
    return set;
  };
  ClassificationData data;
  data.task = std::shared_ptr<const downstream::GlueTask>(std::shared_ptr<void>(), &task);  // a static task
  data.train = labelled(files.train);
  for (const std::string& path : files.dev) data.evaluated.emplace_back(dev_key(path), labelled(path));
  for (const std::string& path : files.test) {
    data.test.push_back(downstream::read_glue(task, path));
    ORDO_CHECK(!data.test.back().labelled, path, ": a test file is GLUE's unlabelled one (index and text)");
  }
  return data;
}

ClassificationData read_senteval_data(const std::string& path) {
  downstream::SentEvalData file = downstream::read_senteval(path);
  ClassificationData data;
  data.task = file.task;
  data.train = std::move(file.train);
  data.evaluated.emplace_back("dev", std::move(file.dev));
  if (!file.test.examples.empty()) data.evaluated.emplace_back("test", std::move(file.test));
  return data;
}

class ClassificationFinetuneTask : public Task {
 public:
  ClassificationFinetuneTask(ClassificationData data, const text::SubwordTokenizer& tokenizer, int64_t max_seq_length,
                             int64_t eval_batch_size)
      : data_(std::move(data)), task_(*data_.task), tokenizer_(tokenizer), eval_batch_size_(eval_batch_size) {
    const int length = static_cast<int>(max_seq_length);
    train_ = downstream::make_glue_features(data_.train, tokenizer, length);
    for (const auto& [name, set] : data_.evaluated)
      evaluated_features_.push_back(downstream::make_glue_features(set, tokenizer, length));
    for (const auto& set : data_.test) test_features_.push_back(downstream::make_glue_features(set, tokenizer, length));
    predictions_.resize(data_.evaluated.size());
    // The lengths in words, and their mean and spread over the whole dataset
    // (the training examples used, the main dev set, SentEval's test set):
    // the bins of the accuracy by length (Wang & Chen 2020, Figure 4).
    std::vector<int64_t> all;
    for (const auto& example : data_.train.examples) all.push_back(downstream::example_length(example));
    for (size_t d = 0; d < data_.evaluated.size(); ++d) {
      lengths_.emplace_back();
      for (const auto& example : data_.evaluated[d].second.examples)
        lengths_.back().push_back(downstream::example_length(example));
      if (d == 0 || data_.evaluated[d].first == "test") all.insert(all.end(), lengths_[d].begin(), lengths_[d].end());
    }
    length_stats_ = downstream::length_stats(all);
  }

  int64_t train_size() const override { return static_cast<int64_t>(train_.size()); }
  std::string describe() const override {
    std::string s = task_.display + ": " + std::to_string(train_.size()) + " training examples";
    for (const auto& [name, set] : data_.evaluated) s += ", " + std::to_string(set.examples.size()) + " " + name;
    for (const auto& t : data_.test) s += ", " + std::to_string(t.examples.size()) + " " + dev_key(t.path);
    return s + (task_.regression() ? " (regression)" : ", labels " + task_.label_list());
  }

  void load(const std::string& checkpoint, Device device, uint64_t seed, bool quiet, const Scratch* scratch,
            bool new_head) override {
    const int labels = task_.regression() ? 1 : static_cast<int>(task_.labels.size());
    device_ = device;
    if (scratch) {
      model_ = fresh_model<nn::SequenceClassifier>(*scratch, device, seed, labels);
      return;
    }
    nn::LoadReport report;
    model_ = model::load_classifier(checkpoint, labels, device, seed, &report, new_head);
    if (!quiet) print_load_report(report);
  }
  nn::Module& model() override { return *model_; }

  Var loss(const std::vector<int64_t>& indices, nn::Context& ctx, int64_t* tokens) override {
    std::vector<int64_t> labels;
    std::vector<float> scores;
    nn::BertInputs in = inputs(train_, indices, tokens);
    for (int64_t i : indices) task_.regression() ? scores.push_back(static_cast<float>(train_[i].score))
                                                 : labels.push_back(train_[i].label);
    const int64_t n = static_cast<int64_t>(indices.size());
    const Tensor gold = task_.regression() ? Tensor::from_vector(scores, {n}) : Tensor::from_vector(labels, {n});
    return model_->loss(model_->forward(in, ctx), gold);
  }

  Evaluation evaluate() override {
    Evaluation e;
    for (size_t d = 0; d < data_.evaluated.size(); ++d) {
      const auto& [name, set] = data_.evaluated[d];
      predictions_[d] = predict(evaluated_features_[d]);
      e.metrics[name] = downstream::glue_metrics(set, predictions_[d]);
      if (task_.regression()) continue;
      std::vector<int> gold;
      for (const auto& example : set.examples) gold.push_back(example.label);
      if (e.by_length.is_null()) e.by_length = json::Value::object();
      e.by_length[name] = downstream::length_bins_json(
          length_stats_, downstream::accuracy_by_length(length_stats_, lengths_[d], gold, predictions_[d].labels));
    }
    add_answer_changes(e);
    e.score = mean_of_metrics(e.metrics[data_.evaluated[0].first]);  // MNLI: the matched set's
    return e;
  }

  // The roles task's Shuffle-SR probe (synth/tasks.h): row i of dev_shuffle_sr
  // is row i of dev_sr_original with the premise's agent and patient
  // exchanged, so the fraction of answers that change under the swap is
  // measured pair by pair ("answers_changed" of dev_shuffle_sr).
  void add_answer_changes(Evaluation& e) const {
    const auto index_of = [&](const std::string& name) {
      for (size_t d = 0; d < data_.evaluated.size(); ++d)
        if (data_.evaluated[d].first == name) return static_cast<int64_t>(d);
      return int64_t{-1};
    };
    const int64_t original = index_of("dev_sr_original"), swapped = index_of("dev_shuffle_sr");
    if (original < 0 || swapped < 0 || task_.regression()) return;
    const auto& before = predictions_[static_cast<size_t>(original)].labels;
    const auto& after = predictions_[static_cast<size_t>(swapped)].labels;
    if (before.size() != after.size() || before.empty()) return;  // not the synthetic task's pairs
    e.metrics["dev_shuffle_sr"]["answers_changed"] = downstream::answer_change_rate(before, after);
  }

  void write_predictions(const std::string& dir) override {
    for (size_t d = 0; d < data_.evaluated.size(); ++d) {
      const auto& [name, set] = data_.evaluated[d];
      downstream::write_glue_submission(dir + "/" + name + "_predictions.tsv", set, predictions_[d]);
    }
    if (!data_.test.empty()) make_directories(dir + "/test");
    for (size_t t = 0; t < data_.test.size(); ++t)
      downstream::write_glue_submission(dir + "/test/" + downstream::glue_submission_name(task_, data_.test[t].mnli),
                                        data_.test[t], predict(test_features_[t]));
  }

  void save(const std::string& dir) override {
    json::Value extra = json::Value::object();
    extra["finetuning_task"] = task_.name;
    if (task_.regression()) {
      extra["problem_type"] = "regression";
    } else {
      json::Value id2label = json::Value::object(), label2id = json::Value::object();
      for (size_t i = 0; i < task_.labels.size(); ++i) {
        id2label[std::to_string(i)] = task_.labels[i];
        label2id[task_.labels[i]] = static_cast<int64_t>(i);
      }
      extra["id2label"] = id2label;
      extra["label2id"] = label2id;
    }
    nn::save_weights(dir, *model_, model_->bert.config(), "BertForSequenceClassification", extra);
    tokenizer_.save(dir);
  }

 private:
  nn::BertInputs inputs(const std::vector<downstream::ClassificationFeature>& features,
                        const std::vector<int64_t>& indices, int64_t* tokens) const {
    std::vector<const std::vector<int32_t>*> ids, segments;
    for (int64_t i : indices) ids.push_back(&features[i].input_ids), segments.push_back(&features[i].token_type_ids);
    return pad_batch(ids, segments, tokenizer_.layout().pad, device_, tokens);
  }

  downstream::GluePredictions predict(const std::vector<downstream::ClassificationFeature>& features) {
    const int64_t n = static_cast<int64_t>(features.size());
    const int64_t batches = (n + eval_batch_size_ - 1) / eval_batch_size_;
    std::vector<std::vector<double>> logits(static_cast<size_t>(batches));  // each batch's, rows of `labels`
    int64_t labels = 0;
    nn::evaluate_batches(batches, device_, [&](int64_t b) {
      std::vector<int64_t> indices;
      for (int64_t i = b * eval_batch_size_; i < std::min(n, (b + 1) * eval_batch_size_); ++i) indices.push_back(i);
      nn::Context ctx = nn::Context::eval();
      const Tensor out = model_->forward(inputs(features, indices, nullptr), ctx).value();
      logits[static_cast<size_t>(b)] = out.to_doubles();
      if (b == 0) labels = out.shape()[1];
    });
    downstream::GluePredictions p;
    for (const std::vector<double>& batch : logits)
      for (size_t r = 0; r * static_cast<size_t>(labels) < batch.size(); ++r) {
        const double* row = batch.data() + r * static_cast<size_t>(labels);
        if (task_.regression()) p.scores.push_back(row[0]);
        else p.labels.push_back(static_cast<int>(std::max_element(row, row + labels) - row));  // first of ties, as argmax
      }
    return p;
  }

  const ClassificationData data_;
  const downstream::GlueTask& task_;
  const text::SubwordTokenizer& tokenizer_;
  int64_t eval_batch_size_;
  std::vector<downstream::ClassificationFeature> train_;
  std::vector<std::vector<downstream::ClassificationFeature>> evaluated_features_, test_features_;
  std::vector<downstream::GluePredictions> predictions_;  // of the evaluated sets, the last evaluation's
  std::vector<std::vector<int64_t>> lengths_;  // of the evaluated sets' examples, in words
  downstream::LengthStats length_stats_;       // over the whole dataset
  std::unique_ptr<nn::SequenceClassifier> model_;
  Device device_ = Device::cpu();
};

class SquadFinetuneTask : public Task {
 public:
  SquadFinetuneTask(bool version_2, const TaskFiles& files, const text::SubwordTokenizer& tokenizer, const FinetuneConfig& c)
      : tokenizer_(tokenizer), eval_batch_size_(c.eval_batch_size) {
    post_.version_2 = version_2;
    post_.n_best_size = static_cast<int>(c.n_best_size);
    post_.max_answer_length = static_cast<int>(c.max_answer_length);
    post_.null_score_diff_threshold = c.null_score_diff_threshold;
    downstream::SquadWindowOptions w;
    w.max_seq_length = static_cast<int>(c.max_seq_length);
    w.doc_stride = static_cast<int>(c.doc_stride);
    w.max_query_length = static_cast<int>(c.max_query_length);
    train_data_ = downstream::read_squad(files.train);
    keep_first(train_data_.questions, c.max_train_examples);
    dev_ = downstream::read_squad(files.dev[0]);
    check_version(train_data_);
    check_version(dev_);
    downstream::SquadFeatureStats stats;
    train_ = downstream::make_squad_features(train_data_, tokenizer, w, /*training=*/true, &stats);
    // Counted and said even under --quiet: a skipped question is never silent.
    if (!stats.skipped.empty()) std::fprintf(stderr, "warning: %s\n", stats.skipped_report().c_str());
    skipped_ = static_cast<int64_t>(stats.skipped.size());
    dev_features_ = downstream::make_squad_features(dev_, tokenizer, w, /*training=*/false);
    ORDO_CHECK(!train_.empty(), files.train, ": no training question could be used");
  }

  int64_t train_size() const override { return static_cast<int64_t>(train_.size()); }
  std::string describe() const override {
    return std::string(post_.version_2 ? "SQuAD v2.0" : "SQuAD v1.1") + ": " +
           std::to_string(train_data_.questions.size()) + " training questions (" + std::to_string(train_.size()) +
           " windows, " + std::to_string(skipped_) + " skipped), " + std::to_string(dev_.questions.size()) +
           " dev questions (" + std::to_string(dev_features_.size()) + " windows)";
  }

  void load(const std::string& checkpoint, Device device, uint64_t seed, bool quiet, const Scratch* scratch,
            bool new_head) override {
    device_ = device;
    if (scratch) {
      model_ = fresh_model<nn::SpanExtractor>(*scratch, device, seed);
      return;
    }
    nn::LoadReport report;
    model_ = model::load_span_extractor(checkpoint, device, seed, &report, new_head);
    if (!quiet) print_load_report(report);
  }
  nn::Module& model() override { return *model_; }

  Var loss(const std::vector<int64_t>& indices, nn::Context& ctx, int64_t* tokens) override {
    std::vector<int64_t> starts, ends;
    for (int64_t i : indices) starts.push_back(train_[i].start_position), ends.push_back(train_[i].end_position);
    const int64_t n = static_cast<int64_t>(indices.size());
    return model_->loss(model_->forward(inputs(train_, indices, tokens), ctx), Tensor::from_vector(starts, {n}),
                        Tensor::from_vector(ends, {n}));
  }

  Evaluation evaluate() override {
    const int64_t n = static_cast<int64_t>(dev_features_.size());
    std::vector<std::vector<float>> starts(static_cast<size_t>(n)), ends(static_cast<size_t>(n));  // a row a feature
    nn::evaluate_batches((n + eval_batch_size_ - 1) / eval_batch_size_, device_, [&](int64_t b) {
      std::vector<int64_t> indices;
      for (int64_t i = b * eval_batch_size_; i < std::min(n, (b + 1) * eval_batch_size_); ++i) indices.push_back(i);
      nn::Context ctx = nn::Context::eval();
      nn::SpanLogits logits = model_->forward(inputs(dev_features_, indices, nullptr), ctx);
      const std::vector<double> s = logits.start.value().to_doubles(), e = logits.end.value().to_doubles();
      const int64_t length = logits.start.value().shape()[1];
      for (size_t r = 0; r < indices.size(); ++r) {
        starts[static_cast<size_t>(indices[r])].assign(s.begin() + r * length, s.begin() + (r + 1) * length);
        ends[static_cast<size_t>(indices[r])].assign(e.begin() + r * length, e.begin() + (r + 1) * length);
      }
    });
    predictions_ = downstream::predict_squad(dev_, dev_features_, starts, ends, post_);
    downstream::SquadPredictionMap answers;
    downstream::SquadNaProbs null_odds;
    for (const auto& p : predictions_) answers.emplace_back(p.id, p.text), null_odds.emplace_back(p.id, p.score_diff);
    Evaluation e;
    e.metrics["dev"] = post_.version_2 ? downstream::evaluate_squad_v2(dev_, answers, &null_odds)
                                       : downstream::evaluate_squad_v1(dev_, answers);
    e.score = e.metrics["dev"]["f1"].as_number();
    return e;
  }

  void write_predictions(const std::string& dir) override {
    downstream::write_squad_predictions(dir + "/predictions.json", predictions_);
    downstream::write_squad_nbest(dir + "/nbest_predictions.json", predictions_);
    if (post_.version_2) downstream::write_squad_null_odds(dir + "/null_odds.json", predictions_);
  }

  void save(const std::string& dir) override {
    json::Value extra = json::Value::object();
    extra["finetuning_task"] = post_.version_2 ? "squad2" : "squad";
    nn::save_weights(dir, *model_, model_->bert.config(), "BertForQuestionAnswering", extra);
    tokenizer_.save(dir);
  }

 private:
  void check_version(const downstream::SquadDataset& d) const {
    if (post_.version_2) return;
    for (const auto& q : d.questions)
      ORDO_CHECK(!q.is_impossible, d.path, ": question '", q.id,
                 "' is unanswerable: a SQuAD v2.0 file; fine-tune it as --task squad2");
  }

  nn::BertInputs inputs(const std::vector<downstream::SquadFeature>& features, const std::vector<int64_t>& indices,
                        int64_t* tokens) const {
    std::vector<const std::vector<int32_t>*> ids, segments;
    for (int64_t i : indices) ids.push_back(&features[i].input_ids), segments.push_back(&features[i].token_type_ids);
    return pad_batch(ids, segments, tokenizer_.layout().pad, device_, tokens);
  }

  const text::SubwordTokenizer& tokenizer_;
  int64_t eval_batch_size_;
  downstream::SquadPostOptions post_;
  downstream::SquadDataset train_data_, dev_;
  std::vector<downstream::SquadFeature> train_, dev_features_;
  int64_t skipped_ = 0;
  std::vector<downstream::SquadPrediction> predictions_;
  std::unique_ptr<nn::SpanExtractor> model_;
  Device device_ = Device::cpu();
};

// ---- one run ------------------------------------------------------------------------------------------

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

// Fine-tunes one model (learning rate `lr`, seed `seed`) into root/name;
// `started` is called after its first optimizer step, and may move `root`
// (the staged output taking its place): paths are made from it when used.
// Data parallel, rank 0 alone evaluates and writes (its result is the run's).
RunResult run_one(Task& task, const FinetuneConfig& c, const FinetuneOptions& o, const Scratch* scratch, double lr,
                  uint64_t seed, const std::string& root, const std::string& name, Device device,
                  parallel::Communicator& comm, const std::function<void()>& started) {
  task.load(o.checkpoint, device, seed, /*quiet=*/true, scratch, o.new_head);  // what is new was said once, up front
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
  if (matmul_precision() == MatmulPrecision::bf16) opt.keep_weights_rounding();  // see nn/optim.h

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

// ---- the grid and its summary ---------------------------------------------------------------------

// Each metric's spread over the finished runs: {"score": {...}, "metrics":
// {"dev": {"accuracy": {"mean", "std", "median", "runs"}}}}. Without a
// finished run there is no figure: every statistic is null, never a zero a
// script would read as a score.
json::Value summarise(const std::vector<RunResult>& runs, const std::string& select_epoch) {
  json::Value out = json::Value::object();
  std::vector<double> scores;
  for (const RunResult& r : runs)
    if (r.finished) scores.push_back(r.selected(select_epoch).score);
  auto as_json = [](const Spread& s) {
    json::Value v = json::Value::object();
    v["mean"] = s.n ? json::Value(s.mean) : json::Value();
    v["std"] = s.n ? json::Value(s.std) : json::Value();
    v["median"] = s.n ? json::Value(s.median) : json::Value();
    v["runs"] = s.n;
    return v;
  };
  out["score"] = as_json(spread(scores));
  if (scores.empty()) return out;
  const RunResult& first = *std::find_if(runs.begin(), runs.end(), [](const RunResult& r) { return r.finished; });
  json::Value metrics = json::Value::object();
  for (const auto& [set, keys] : first.selected(select_epoch).metrics.items()) {
    json::Value per_set = json::Value::object();
    for (const auto& [key, value] : keys.items()) {
      if (!value.is_number()) continue;
      std::vector<double> values;
      for (const RunResult& r : runs) {
        if (!r.finished) continue;
        const json::Value* v = r.selected(select_epoch).metrics[set].find(key);
        if (v && v->is_number()) values.push_back(v->as_number());
      }
      per_set[key] = as_json(spread(values));
    }
    metrics[set] = per_set;
  }
  out["metrics"] = metrics;
  return out;
}

// A run's line in results.json; an unfinished run has no best epoch yet.
json::Value run_line(const std::string& name, uint64_t seed, const RunResult& r) {
  json::Value line = json::Value::object();
  line["run"] = name;
  line["seed"] = static_cast<int64_t>(seed);
  line["finished"] = r.finished;
  line["best_epoch"] = r.finished ? json::Value(r.best.epoch) : json::Value();
  line["best_score"] = r.finished ? json::Value(r.best.score) : json::Value();
  line["best"] = r.finished ? r.best.metrics : json::Value();
  line["last_epoch"] = r.finished ? json::Value(r.last.epoch) : json::Value();
  line["last_score"] = r.finished ? json::Value(r.last.score) : json::Value();
  line["last"] = r.finished ? r.last.metrics : json::Value();
  if (r.finished && !r.best.by_length.is_null()) {
    line["best_by_length"] = r.best.by_length;
    line["last_by_length"] = r.last.by_length;
  }
  return line;
}

// A run's result read back from its line in results.json (run_line's inverse).
RunResult run_from_line(const json::Value& line) {
  RunResult r;
  if (!line["finished"].as_bool()) return r;
  r.finished = true;
  r.best = {line["best_epoch"].as_int(), line["best_score"].as_number(), line["best"], json::Value()};
  r.last = {line["last_epoch"].as_int(), line["last_score"].as_number(), line["last"], json::Value()};
  if (const json::Value* b = line.find("best_by_length")) r.best.by_length = *b, r.last.by_length = line["last_by_length"];
  return r;
}

// The finished runs of an earlier call on the same grid, from its results.json, by run name.
std::map<std::string, RunResult> finished_runs(const std::string& results_path) {
  std::map<std::string, RunResult> done;
  if (!file_exists(results_path)) return done;
  const json::Value results = json::parse_file(results_path);
  const json::Value* per_lr = results.find("learning_rates");
  if (!per_lr || !per_lr->is_array()) return done;
  for (const json::Value& entry : per_lr->as_array())
    for (const json::Value& line : entry["runs"].as_array())
      if (line["finished"].as_bool()) done[line["run"].as_string()] = run_from_line(line);
  return done;
}

std::string run_name(double lr, uint64_t seed) { return "lr_" + shortest_text(lr) + "_seed_" + std::to_string(seed); }

text::TokenizerOptions tokenizer_options(const FinetuneConfig& c, const std::string& checkpoint) {
  text::TokenizerOptions t;
  if (c.lower_case == "auto") t.lower_case = checkpoint_lower_case(checkpoint).value_or(true);
  else t.lower_case = c.lower_case == "true";
  return t;
}

}  // namespace

namespace {

// Whether `out` holds a fine-tuning grid (its recorded config.json), and when
// it does, where that config first differs from `recorded` ("" when it is this grid).
std::optional<std::string> earlier_grid(const std::string& out, const json::Value& recorded) {
  const std::string path = out + "/config.json";
  if (!file_exists(path)) return std::nullopt;
  json::Value stored;
  try {
    stored = json::parse_file(path);
  } catch (const Error&) {
    return std::nullopt;  // not a grid's: the output policy decides
  }
  if (!stored.is_object() || !stored.contains("task") || !stored.contains("checkpoint") ||
      !directory_exists(out + "/runs"))
    return std::nullopt;
  // How many runs go at once changes no run: a grid continues under another train.parallel_runs.
  auto without_parallel_runs = [](json::Value config) {
    if (json::Value* train = config.find("train"); train && train->is_object()) train->erase("parallel_runs");
    return config;
  };
  return json::first_difference(without_parallel_runs(stored), without_parallel_runs(recorded));
}

// The dev line of one learning rate's summary, also under --quiet.
void print_lr_summary(const std::string& task, const json::Value& entry, const std::string& score_name) {
  const json::Value& score = entry["summary"]["score"];
  if (score["runs"].as_int() == 0) {
    std::fprintf(stderr, "ordo finetune: %s lr %s: no run finished, no %s\n", task.c_str(),
                 shortest_text(entry["lr"].as_number()).c_str(), score_name.c_str());
    return;
  }
  std::fprintf(stderr, "ordo finetune: %s lr %s: %s %.4f +- %.4f (median %.4f) over %lld run(s)\n", task.c_str(),
               shortest_text(entry["lr"].as_number()).c_str(), score_name.c_str(), score["mean"].as_number(),
               score["std"].as_number(), score["median"].as_number(), static_cast<long long>(score["runs"].as_int()));
}

// ---- the grid's runs, one after another or several at once ----------------------------------------

// One run of the grid: its learning rate and seed, and its result once it has one.
struct GridRun {
  double lr = 0;
  uint64_t seed = 0;
  std::string name;
  std::optional<RunResult> result;
};

// Every learning rate x seed, in the order they run one after another.
std::vector<GridRun> grid_runs(const FinetuneConfig& c) {
  std::vector<GridRun> grid;
  for (double lr : c.learning_rates)
    for (int64_t k = 0; k < c.seeds; ++k) {
      const uint64_t seed = c.seed + static_cast<uint64_t>(k);
      grid.push_back({lr, seed, run_name(lr, seed), std::nullopt});
    }
  return grid;
}

// `results` with the grid's learning_rates (an entry per learning rate with a
// run that has a result: its runs in seed order and their summary) and best_lr
// (the best mean score).
json::Value with_grid_results(json::Value results, const std::vector<GridRun>& grid, const FinetuneConfig& c) {
  json::Value per_lr = json::Value::array();
  std::optional<double> best_lr;
  double best_mean = 0;
  for (double lr : c.learning_rates) {
    json::Value entry = json::Value::object();
    entry["lr"] = lr;
    entry["runs"] = json::Value::array();
    std::vector<RunResult> runs;
    for (const GridRun& run : grid)
      if (run.lr == lr && run.result) {
        entry["runs"].push_back(run_line(run.name, run.seed, *run.result));
        runs.push_back(*run.result);
      }
    if (runs.empty()) continue;
    entry["summary"] = summarise(runs, c.select_epoch);
    const json::Value& score = entry["summary"]["score"];
    if (score["runs"].as_int() > 0 && (!best_lr || score["mean"].as_number() > best_mean)) {
      best_mean = score["mean"].as_number();
      best_lr = lr;
    }
    per_lr.push_back(entry);
  }
  results["learning_rates"] = per_lr;
  if (best_lr) results["best_lr"] = *best_lr;
  return results;
}

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

Parallelism parallelism(const FinetuneConfig& c, Device device, int ranks) {
  if (c.parallel_runs == 1) return {1, c.threads};
  if (device.is_cuda() || ranks > 1) {
    ORDO_CHECK(c.parallel_runs == 0, "train.parallel_runs ", c.parallel_runs, ": runs at once are processes on the CPU; ",
               device.is_cuda() ? "on a GPU" : "under mpirun", " the runs go one after another (give 1)");
    return {1, c.threads};
  }
  const int64_t cores = available_cores();
  const int64_t threads = c.threads > 0 ? c.threads : c.parallel_runs == 0 ? 1 : std::max<int64_t>(1, cores / c.parallel_runs);
  const int64_t runs = c.parallel_runs == 0 ? std::max<int64_t>(1, cores / threads) : c.parallel_runs;
  ORDO_CHECK(runs == 1 || runs * threads <= cores, "train.parallel_runs ", runs, " x train.threads ", threads, " = ",
             runs * threads, " threads on ", cores, " cores: runs that share a core only slow each other (each ",
             "parallel loop waits for its descheduled threads); lower one of them, or give train.parallel_runs 0 ",
             "(as many runs as the cores hold)");
  return {runs, threads, c.threads > 0};
}

// The folders a killed grid's workers left beside `out`
// (.OUT.ordo-worker-RUN-XXXXXX, base/output.h's bookkeeping: only those
// whose marker says they are this output's; its lock, now ours, says no
// process of it lives on: a worker stops when its parent dies), removed; how many.
int64_t remove_stale_worker_folders(const std::string& out) { return remove_stale_bookkeeping(out, "worker"); }

// A worker process of a parallel grid (its pid the key): its run, the folder it writes in, its threads.
struct Worker {
  GridRun* run = nullptr;
  std::shared_ptr<BookkeepingFolder> made;  // removes the folder with the last copy
  std::string folder;
  int64_t threads = 0;
};

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
                    const std::function<void(const GridRun&)>& ended, bool quiet, bool* stopped, std::string* failed) {
  std::map<pid_t, Worker> running;
  // Whatever ends this call (an error here too), no worker outlives it and no folder is left beside `out`.
  struct Reaper {
    std::map<pid_t, Worker>& running;
    ~Reaper() {
      std::error_code ignored;
      for (const auto& [pid, w] : running) {
        ::kill(pid, SIGTERM);
        ::waitpid(pid, nullptr, 0);
        std::filesystem::remove_all(w.folder, ignored);
      }
    }
  } reaper{running};
  std::vector<GridRun*> todo;
  for (GridRun& run : grid)
    if (!run.result) todo.push_back(&run);
  const std::vector<int64_t> threads = p.plan(static_cast<int64_t>(todo.size()));
  int64_t busy = 0;  // the running workers' threads
  size_t next = 0;
  bool signalled = false;
  // Every worker stops at its next step, as on a Ctrl-C it sees itself (and writes what it has).
  auto stop_all = [&] {
    if (signalled) return;
    signalled = true;
    for (const auto& [pid, w] : running) ::kill(pid, SIGINT);
  };
  auto may_start = [&] { return next < todo.size() && !*stopped && failed->empty(); };
  while (!running.empty() || may_start()) {
    while (may_start() && busy + threads[next] <= p.cores()) {
      GridRun& run = *todo[next];
      const int64_t run_threads = threads[next++];
      auto made = std::make_shared<BookkeepingFolder>(out, "worker-" + run.name);
      const std::string folder = made->path();
      write_file_atomic(folder + "/grid.json", json::dump(config, 2) + "\n");
      std::vector<std::string> args{"finetune", "--worker",  run.name, "--out", folder, "--config", folder + "/grid.json",
                                    "--set",    "train.threads=" + std::to_string(run_threads)};
      args.insert(args.end(), worker_args.begin(), worker_args.end());
      std::error_code ignored;
      std::filesystem::remove_all(root() + "/runs/" + run.name, ignored);  // what a stopped call left of it
      const pid_t pid = spawn_self(args);
      running[pid] = {&run, made, folder, run_threads};
      busy += run_threads;
      if (!quiet)
        std::fprintf(stderr, "run %s: started (process %d, %lld thread(s))\n", run.name.c_str(), static_cast<int>(pid),
                     static_cast<long long>(run_threads));
    }
    const std::optional<ChildExit> exit = wait_for_child(0.2);
    if (!exit) {
      for (const auto& [pid, w] : running)
        if (file_exists(w.folder + "/started")) started();
      if (InterruptScope::interrupted()) {
        *stopped = true;
        stop_all();
      }
      continue;
    }
    const auto it = running.find(exit->pid);
    if (it == running.end()) continue;
    const Worker w = it->second;
    running.erase(it);
    busy -= w.threads;
    const std::string result = w.folder + "/result.json";
    const bool began = file_exists(w.folder + "/started");  // its first step taken
    const bool ran = began || file_exists(result);
    const RunResult r = file_exists(result) ? run_from_line(json::parse_file(result)) : RunResult{};
    if (exit->code != 0 && exit->code != 130 && failed->empty()) {
      *failed = detail::cat("run ", w.run->name, " ended with exit status ", exit->code, " (its error is above)");
      stop_all();  // as one after another, where the error ends the grid
    }
    if (began) {
      started();
      make_directories(root() + "/runs");
      std::filesystem::rename(w.folder + "/run", root() + "/runs/" + w.run->name);
    }
    std::error_code ignored;
    std::filesystem::remove_all(w.folder, ignored);
    if (!ran) continue;  // stopped before it began: as if it had not started
    *stopped = *stopped || !r.finished;
    w.run->result = r;
    if (!quiet)
      std::fprintf(stderr, "run %s: %s\n", w.run->name.c_str(),
                   r.finished ? detail::cat("finished, best epoch ", r.best.epoch, " score ", r.best.score).c_str()
                              : "stopped");
    ended(*w.run);
  }
}

// One run of a parallel grid, in a worker process (FinetuneOptions::worker_run).
FinetuneSummary run_worker(Task& task, const FinetuneConfig& c, const FinetuneOptions& o, const Scratch* scratch,
                           Device device) {
  const std::vector<GridRun> grid = grid_runs(c);
  const auto run = std::find_if(grid.begin(), grid.end(), [&](const GridRun& r) { return r.name == o.worker_run; });
  ORDO_CHECK(run != grid.end(), "--worker ", o.worker_run, ": the grid has no such run");
  parallel::SingleProcess single;
  InterruptScope interrupt;
  // A worker outlives no parent: SIGTERM when it dies (stop at the next step, as on a signal); a parent
  // that died before this line left it to init (ppid 1).
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  ORDO_CHECK(::getppid() != 1, "--worker ", o.worker_run, ": the grid that started this worker has ended");
  const RunResult r = run_one(task, c, o, scratch, run->lr, run->seed, o.out, "run", device, single,
                              [&] { write_file_atomic(o.out + "/started", ""); });
  write_file_atomic(o.out + "/result.json", json::dump(run_line(run->name, run->seed, r), 2) + "\n");
  FinetuneSummary summary;
  summary.runs_finished = r.finished;
  summary.interrupted = !r.finished;
  return summary;
}

// What a worker is given beside --worker, --out, --config and its threads: the grid's inputs.
std::vector<std::string> worker_flags(const FinetuneOptions& o) {
  std::vector<std::string> flags{"--checkpoint", o.checkpoint, "--task", o.task, "--data", o.data, "--quiet",
                                 "--set", "train.parallel_runs=1"};
  if (!o.vocab.empty()) flags.insert(flags.end(), {"--vocab", o.vocab});
  if (o.from_scratch) flags.push_back("--from-scratch");
  if (!o.init_positions_from.empty()) flags.insert(flags.end(), {"--init-positions-from", o.init_positions_from});
  if (o.new_head) flags.push_back("--new-head");
  return flags;
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
  ORDO_CHECK(!o.out.empty(), "finetune: no output folder given (--out)");
  ORDO_CHECK(o.from_scratch || c.model.size() == 0, "model.", c.model.size() == 0 ? "" : c.model.items().front().first,
             ": the model config's keys shape a fresh model (--from-scratch); a pretrained checkpoint's shape is its own");
  ORDO_CHECK(o.from_scratch || o.init_positions_from.empty(),
             "--init-positions-from copies a position table into a fresh model: give --from-scratch too");
  ORDO_CHECK(!worker || comm.size() == 1, "--worker: a worker is one process");
  // The model trained: the checkpoint's, or a fresh one of its config with model.* (and a copied table).
  std::optional<Scratch> scratch;
  if (o.from_scratch) {
    scratch.emplace();
    scratch->config = nn::with_overrides(nn::load_config(o.checkpoint), c.model, "model");
    if (!o.init_positions_from.empty()) {
      o.init_positions_from = resolve_checkpoint(o.init_positions_from);
      scratch->positions = read_position_table(o.init_positions_from, scratch->config, c.max_seq_length);
    }
  }
  const nn::BertConfig model_config = scratch ? scratch->config : nn::load_config(o.checkpoint);
  json::Value recorded = c.source;
  recorded["checkpoint"] = o.checkpoint;
  recorded["task"] = o.task;
  recorded["data"] = o.data;
  recorded["from_scratch"] = o.from_scratch;
  recorded["new_head"] = o.new_head;
  if (!o.vocab.empty()) recorded["vocab"] = o.vocab;
  if (!o.init_positions_from.empty()) recorded["init_positions_from"] = o.init_positions_from;
  // The same grid in --out, stopped or finished, is continued: its finished
  // runs are kept and the others run (again). Another grid there is replaced
  // only with --overwrite.
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
  const Device device = resolve_device(c.device, comm.local_rank());
  MatmulPrecisionScope precision(resolve_precision(c.precision, device, "train.precision"));
  const Parallelism parallel = parallelism(c, device, comm.size());
  set_threads(parallel.threads);
  const CheckpointTokenizer tokenizer_files = load_tokenizer(o.checkpoint, o.vocab, tokenizer_options(c, o.checkpoint),
                                                             model_config.vocab_size, o.checkpoint + "/config.json");
  const text::SubwordTokenizer& tokenizer = *tokenizer_files.tokenizer;
  if (is_squad(o.task) || (o.task != "senteval" && downstream::glue_task(o.task).pair))
    check_pair_segments(tokenizer_files, model_config.type_vocab_size, o.checkpoint + "/config.json");
  std::unique_ptr<Task> task;
  if (is_squad(o.task)) {
    task = std::make_unique<SquadFinetuneTask>(o.task == "squad2", files, tokenizer, c);
  } else {
    ClassificationData data =
        o.task == "senteval" ? read_senteval_data(files.train) : read_glue_data(downstream::glue_task(o.task), files);
    keep_first(data.train.examples, c.max_train_examples);
    task = std::make_unique<ClassificationFinetuneTask>(std::move(data), tokenizer, c.max_seq_length, c.eval_batch_size);
  }
  // The checkpoint fits the task's model (read even from scratch: its tensors must match its config).
  task->load(o.checkpoint, device, c.seed, o.quiet || o.from_scratch, /*scratch=*/nullptr, o.new_head);
  ORDO_CHECK(task->train_size() > 0, files.train, ": no training examples");
  ORDO_CHECK(c.max_seq_length <= model_config.max_position_embeddings - model_config.position_offset ||
                 model_config.pe.find("ape_learned") == std::string::npos,
             "train.max_seq_length ", c.max_seq_length, " is beyond the ", scratch ? "fresh model's" : "checkpoint's",
             " learned absolute position table of ", model_config.max_position_embeddings - model_config.position_offset,
             " positions (max_position_embeddings)");
  if (worker) return run_worker(*task, c, o, scratch ? &*scratch : nullptr, device);
  check_same_config(comm, recorded, o.out);
  // One process writes an output at a time (rank 0 for all ranks).
  std::unique_ptr<OutputLock> lock;
  if (lead) {
    lock = std::make_unique<OutputLock>(o.out, "ordo finetune");
    if (!lock->stale_owner().empty())
      std::fprintf(stderr, "ordo finetune: note: took over %s, left by %s, which has ended\n", lock->path().c_str(),
                   lock->stale_owner().c_str());
    if (const int64_t removed = remove_stale_worker_folders(o.out))
      std::fprintf(stderr, "ordo finetune: note: removed %lld folder(s) that the workers of a killed grid left beside %s\n",
                   static_cast<long long>(removed), o.out.c_str());
  }
  // The runs an earlier call finished, as rank 0 reads them (every rank skips the same ones).
  std::map<std::string, RunResult> done = lead && continuing ? finished_runs(o.out + "/results.json")
                                                               : std::map<std::string, RunResult>{};
  {
    std::string names;
    for (const auto& [name, r] : done) names += name + "\n";
    comm.broadcast(names, 0);
    if (!lead)
      for (size_t start = 0, end; (end = names.find('\n', start)) != std::string::npos; start = end + 1)
        done[names.substr(start, end - start)].finished = true;
  }
  std::vector<GridRun> grid = grid_runs(c);
  for (GridRun& run : grid)
    if (auto it = done.find(run.name); it != done.end()) run.result = it->second;
  const int64_t runs_left = std::count_if(grid.begin(), grid.end(), [](const GridRun& r) { return !r.result; });
  const int64_t at_once = std::min(parallel.runs, runs_left);
  if (at_once == 1 && runs_left == 1 && parallel.runs > 1) set_threads(parallel.plan(1)[0]);  // one run left: it alone
  if (!o.quiet) {
    std::string from = o.checkpoint;
    if (scratch) {
      from = "random weights in the config of " + o.checkpoint;
      if (c.model.size() > 0) from += " with model " + json::dump(c.model);
      if (scratch->positions) from += "; " + scratch->positions->description + ", trained with the rest";
    }
    std::fprintf(stderr, "ordo finetune: %s from %s (lower_case %s), %zu learning rate(s) x %lld seed(s), %lld epochs, on %s, %s\n",
                 task->describe().c_str(), from.c_str(),
                 tokenizer.lower_case() ? "true" : "false", c.learning_rates.size(),
                 static_cast<long long>(c.seeds), static_cast<long long>(c.epochs),
                 device_description(device).c_str(), precision_description(matmul_precision(), device).c_str());
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
  bool stopped = false;  // by a signal (on any rank)
  if (at_once > 1) {
    std::string failed;
    run_in_workers(grid, parallel, c.source, worker_flags(o), o.out,
                   [&] { return root; }, started, [&](const GridRun& run) {
                     summary.runs_finished += run.result->finished;
                     write_results();
                   }, o.quiet, &stopped, &failed);
    ORDO_CHECK(failed.empty(), failed,
               in_place() ? "; the runs that ended are in " + o.out + "/results.json" : "; '" + o.out + "' is left as it was");
  } else {
    for (GridRun& run : grid) {
      if (stopped) break;
      if (run.result) {
        if (!o.quiet) std::fprintf(stderr, "run %s: finished before, kept\n", run.name.c_str());
        continue;
      }
      if (!o.quiet) std::fprintf(stderr, "run %s\n", run.name.c_str());
      // What a stopped call left of this run is made again from its start.
      if (lead && continuing) std::filesystem::remove_all(root + "/runs/" + run.name);
      run.result = run_one(*task, c, o, scratch ? &*scratch : nullptr, run.lr, run.seed, root, "runs/" + run.name,
                           device, comm, started);
      stopped = !run.result->finished;
      summary.runs_finished += run.result->finished;
      write_results();
    }
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
  // The outcome, also under --quiet: one line per learning rate.
  for (const json::Value& entry : results["learning_rates"].as_array()) print_lr_summary(o.task, entry, score_name);
  std::fprintf(stderr, "ordo finetune: %lld run(s) finished%s; results in %s/results.json\n",
               static_cast<long long>(summary.runs_finished + static_cast<int64_t>(done.size())),
               stopped ? (std::string(", stopped by ") + InterruptScope::signal_name() +
                          " (the same command continues the grid)").c_str()
                       : "",
               o.out.c_str());
  return summary;
}

}  // namespace ordo::train
