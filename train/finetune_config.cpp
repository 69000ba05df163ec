// A fine-tuning config read strictly (train/finetune.h's FinetuneConfig),
// the names of the tasks fine-tuning knows, and the spread (mean, standard
// deviation, median) its summaries give over a learning rate's runs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "base/config.h"
#include "downstream/glue.h"
#include "train/finetune.h"
#include "train/loop.h"

namespace ordo::train {

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
  c.precision = parse_precision(t.string("precision", precision_setting_name(c.precision)), where + ": train.precision");
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

}  // namespace ordo::train
