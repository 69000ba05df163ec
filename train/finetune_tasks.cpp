// The two kinds of fine-tuning task behind finetuning::Task: classification
// (GLUE, STS-B's regression, SentEval's probing files) on the pooled [CLS]
// vector, and SQuAD v1.1 / v2.0 span extraction; each builds its model,
// its loss on a batch, its evaluation with the official metrics, its
// predictions and its checkpoint.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "base/file_io.h"
#include "downstream/classification.h"
#include "downstream/length_bins.h"
#include "downstream/metrics.h"
#include "downstream/squad.h"
#include "downstream/squad_eval.h"
#include "downstream/squad_features.h"
#include "downstream/squad_predict.h"
#include "model/model.h"
#include "nn/checkpoint.h"
#include "nn/evaluate_batches.h"
#include "nn/task_heads.h"
#include "pe/registry.h"
#include "train/finetune_parts.h"

namespace ordo::train {

using namespace finetuning;

namespace {

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

// The score of a GLUE evaluation: the mean of its metrics (GLUE's per-task score), nulls left out.
double mean_of_metrics(const json::Value& metrics) {
  double sum = 0;
  int n = 0;
  for (const auto& [key, value] : metrics.items())
    if (value.is_number()) sum += value.as_number(), ++n;
  return n ? sum / n : 0.0;
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

  void load(const std::string& checkpoint, Device device, MatmulPrecision precision, uint64_t seed, bool quiet,
            const Scratch* scratch, bool new_head) override {
    const int labels = task_.regression() ? 1 : static_cast<int>(task_.labels.size());
    device_ = device;
    precision_ = precision;
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

  // The synthetic tasks' role swaps (downstream::kRoleSwaps): the fraction
  // of answers that change under the swap, measured pair by pair (the
  // swapped set's "answers_changed").
  void add_answer_changes(Evaluation& e) const {
    const auto index_of = [&](const std::string& name) {
      for (size_t d = 0; d < data_.evaluated.size(); ++d)
        if (data_.evaluated[d].first == name) return static_cast<int64_t>(d);
      return int64_t{-1};
    };
    for (const auto& [original_name, swapped_name] : downstream::kRoleSwaps) {
      const int64_t original = index_of(original_name), swapped = index_of(swapped_name);
      if (original < 0 || swapped < 0 || task_.regression()) continue;
      const auto& before = predictions_[static_cast<size_t>(original)].labels;
      const auto& after = predictions_[static_cast<size_t>(swapped)].labels;
      if (before.size() != after.size() || before.empty()) continue;  // not the synthetic task's pairs
      e.metrics[swapped_name]["answers_changed"] = downstream::answer_change_rate(before, after);
    }
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
      nn::Context ctx = nn::Context::eval(precision_);
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
  MatmulPrecision precision_ = MatmulPrecision::fp32;
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

  void load(const std::string& checkpoint, Device device, MatmulPrecision precision, uint64_t seed, bool quiet,
            const Scratch* scratch, bool new_head) override {
    device_ = device;
    precision_ = precision;
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
      nn::Context ctx = nn::Context::eval(precision_);
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
  MatmulPrecision precision_ = MatmulPrecision::fp32;
};

}  // namespace

std::unique_ptr<Task> finetuning::make_task(const std::string& name, const TaskFiles& files,
                                            const text::SubwordTokenizer& tokenizer, const FinetuneConfig& c) {
  if (is_squad(name)) return std::make_unique<SquadFinetuneTask>(name == "squad2", files, tokenizer, c);
  ClassificationData data =
      name == "senteval" ? read_senteval_data(files.train) : read_glue_data(downstream::glue_task(name), files);
  keep_first(data.train.examples, c.max_train_examples);
  return std::make_unique<ClassificationFinetuneTask>(std::move(data), tokenizer, c.max_seq_length, c.eval_batch_size);
}

}  // namespace ordo::train
