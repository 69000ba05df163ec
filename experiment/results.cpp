// An experiment's figures, gathered from its run folders (experiment/results.h).
#include "experiment/results.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json_numbers.h"
#include "downstream/glue.h"
#include "experiment/paper_table.h"
#include "experiment/statistics.h"

namespace ordo::experiment {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool is_squad(const std::string& task) { return task == "squad" || task == "squad2"; }

// The mean of one column of a run's analysis table (RUN/analysis/FILE, comma-separated,
// a header line), or nothing when the run has no such file; an error names a malformed one.
std::optional<double> analysis_column_mean(const std::string& run_dir, const std::string& file,
                                           const std::string& column) {
  const std::string path = run_dir + "/analysis/" + file;
  if (!file_exists(path)) return std::nullopt;
  std::vector<std::vector<std::string>> rows;
  for (std::string line : split_fields(read_file(path), '\n')) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) rows.push_back(split_fields(line, ','));
  }
  ORDO_CHECK(!rows.empty(), path, ": empty (a header line naming '", column, "' was expected)");
  const auto at = std::find(rows[0].begin(), rows[0].end(), column);
  ORDO_CHECK(at != rows[0].end(), path, ": no column '", column, "' in its header");
  const size_t k = static_cast<size_t>(at - rows[0].begin());
  double sum = 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    ORDO_CHECK(rows[r].size() == rows[0].size(), path, ":", r + 1, ": ", rows[r].size(), " cells, the header has ",
               rows[0].size());
    char* end = nullptr;
    const double v = std::strtod(rows[r][k].c_str(), &end);
    ORDO_CHECK(!rows[r][k].empty() && *end == '\0' && std::isfinite(v), path, ":", r + 1, ": '", rows[r][k],
               "' in column '", column, "' is not a number");
    sum += v;
  }
  ORDO_CHECK(rows.size() > 1, path, ": a header and no rows");
  return sum / static_cast<double>(rows.size() - 1);
}

// A number the analysis gives the run's own position table (Wang & Chen's
// probes): RUN/analysis/FILE's tables[table][field], or nothing when the run
// has no such file.
std::optional<double> own_table_number(const std::string& run_dir, const std::string& file, const std::string& field) {
  const std::string path = run_dir + "/analysis/" + file;
  if (!file_exists(path)) return std::nullopt;
  const json::Value j = json::parse_file(path);
  return json::reading_file(path, [&] {
    const json::Value* own = j.find("table");
    ORDO_CHECK(own && own->is_string(), "no \"table\" naming the run's own entry of \"tables\"");
    const json::Value* entry = j["tables"].find(own->as_string());
    ORDO_CHECK(entry && entry->find(field), "tables[\"", own->as_string(), "\"] has no \"", field, "\"");
    return json::to_number((*entry)[field]);
  });
}

// Wang & Chen's skip-position attack at stride 2: exp(attacked loss - unattacked
// loss), the factor the attack multiplies the held-out perplexity by.
std::optional<double> skip_perplexity_ratio(const std::string& run_dir) {
  const std::string path = run_dir + "/analysis/skip_position_attack.json";
  if (!file_exists(path)) return std::nullopt;
  const json::Value j = json::parse_file(path);
  return json::reading_file(path, [&]() -> std::optional<double> {
    for (const json::Value& c : j["conditions"].as_array())
      if (c["factor"].as_int() == 2)
        return std::exp(json::to_number(c["attacked"]["loss"]) - json::to_number(c["unattacked"]["loss"]));
    return std::nullopt;
  });
}

// An indicators file's "by_range" of one layer: the indicators over the first k
// offsets (Wang et al. 2021's Table 2 per range), "with_special" returned once
// both arrays hold numbers, one per range.
json::Value checked_ranges(const json::Value& ranges, const std::string& layer_key) {
  const json::Value& with = ranges["with_special"];
  const std::string at = layer_key + ".by_range.with_special.";
  for (const char* key : {"monotonicity_first_k", "direction_balance"}) {
    const json::Value& xs = with[key];
    ORDO_CHECK(xs.is_array(), at, key, " is ", json::with_article(xs.type()), ", not an array of numbers");
    for (size_t k = 0; k < xs.size(); ++k)
      json::reading_file(detail::cat(at, key, "[", k, "]"), [&] { json::to_number(xs[k]); });
  }
  const size_t ranges_opr = with["monotonicity_first_k"].size(), ranges_db = with["direction_balance"].size();
  ORDO_CHECK(ranges_opr == ranges_db, at, "monotonicity_first_k has ", ranges_opr, " ranges, direction_balance ",
             ranges_db);
  return with;
}

// GLUE's metrics are fractions; the papers print percent (SQuAD's are percent already).
double percent_scale(const std::string& task) { return is_squad(task) ? 1.0 : 100.0; }

// all_rates: every learning rate's finished runs (report.learning_rates = "average").
TaskResults read_task(const std::string& path, const FinetuneTask& task, bool all_rates) {
  TaskResults t;
  t.source = task.source();
  t.path = path;
  if (!file_exists(path)) return t;
  const json::Value results = json::parse_file(path);
  json::reading_file(path, [&] {
    t.select_epoch = results.contains("select_epoch") ? results["select_epoch"].as_string() : "best";
    const json::Value* best_lr = results.find("best_lr");
    if (!best_lr) return;  // no run finished
    t.lr = all_rates ? 0 : best_lr->as_number();
    t.over_rates = all_rates;
    t.runs = json::Value::array();
    for (const json::Value& entry : results["learning_rates"].as_array()) {
      if (!all_rates && entry["lr"].as_number() != t.lr) continue;
      bool finished = false;
      for (json::Value line : entry["runs"].as_array()) {
        if (!line["finished"].as_bool()) continue;
        ORDO_CHECK(!all_rates || (line.contains("seed") && line["seed"].is_number()), "a finished run of "
                   "learning rate ", entry["lr"].as_number(), " has no \"seed\"; report.learning_rates = \"average\" "
                   "averages each seed over the learning rates and needs it");
        line["lr"] = entry["lr"];
        t.runs.push_back(line);
        finished = true;
      }
      t.rates += finished;
    }
    t.present = t.runs.size() > 0;
  });
  return t;
}

// The accuracy of always answering the most frequent label of the task's
// main dev set in `folder`, in percent; NaN for a task not scored by
// accuracy (CoLA's MCC, STS-B's correlations, MRPC's and QQP's F1 beside
// accuracy count: their score is accuracy's mean with F1, not accuracy) or
// without its files.
double majority_accuracy(const FinetuneTask& task, const std::string& folder) {
  const std::string name = task.finetune_task();
  const auto& known = downstream::glue_tasks();
  if (std::none_of(known.begin(), known.end(), [&](const downstream::GlueTask& g) { return g.name == name; }))
    return kNaN;  // SQuAD, SentEval
  const downstream::GlueTask& glue = downstream::glue_task(name);
  if (glue.regression() || glue.metrics.size() != 1 || glue.metrics[0] != downstream::GlueMetric::accuracy)
    return kNaN;
  if (!directory_exists(folder)) return kNaN;
  const train::TaskFiles files = train::find_task_files(name, folder);
  if (files.dev.empty()) return kNaN;
  const downstream::GlueSet dev = downstream::read_glue(glue, files.dev.front());
  std::map<int, int64_t> counts;
  for (const downstream::GlueExample& e : dev.examples) ++counts[e.label];
  int64_t most = 0;
  for (const auto& [label, n] : counts) most = std::max(most, n);
  return dev.examples.empty() ? kNaN : 100.0 * static_cast<double>(most) / static_cast<double>(dev.examples.size());
}

// report.learning_rates = "average": a learning rate is not a replicate
// (SPEC §4), so each seed's value is its mean over the learning rates, as
// the paper averages them, and the spread and tests run over seeds. A seed
// missing at some learning rate is left out: its mean would be over fewer.
std::vector<double> average_over_rates(const TaskResults& t, const std::vector<double>& per_line) {
  std::map<int64_t, std::vector<double>> by_seed;
  for (size_t k = 0; k < per_line.size(); ++k) by_seed[t.runs[k]["seed"].as_int()].push_back(per_line[k]);
  std::vector<double> out;
  for (const auto& [seed, values] : by_seed)
    if (static_cast<int64_t>(values.size()) == t.rates) out.push_back(mean_std(values).mean);
  return out;
}

// Each finished seed's value of a task's figure: "score", "METRIC" (on the
// main dev set) or "SET.METRIC", in percent; "SET.METRIC.delta[.BASE]" the
// difference run by run from METRIC on BASE (the main dev set by default).
std::vector<double> task_values(const TaskResults& t, const FinetuneTask& task, const std::string& what) {
  std::vector<double> values;
  if (!t.present) return values;
  const size_t delta = what.find(".delta");
  if (delta != std::string::npos && (delta + 6 == what.size() || what[delta + 6] == '.')) {
    const std::string measured = what.substr(0, delta);
    const std::string metric = measured.substr(measured.rfind('.') + 1);
    const std::string base = delta + 6 == what.size() ? metric : what.substr(delta + 7) + "." + metric;
    const std::vector<double> a = task_values(t, task, measured), b = task_values(t, task, base);
    if (a.empty() || a.size() != b.size()) return {};
    for (size_t k = 0; k < a.size(); ++k) values.push_back(a[k] - b[k]);
    return values;
  }
  const double scale = percent_scale(task.task);
  return json::reading_file(t.path, [&]() -> std::vector<double> {
    for (const json::Value& line : t.runs.as_array()) {
      if (what == "score") {
        values.push_back(scale * line[t.select_epoch + "_score"].as_number());
        continue;
      }
      const json::Value& sets = line[t.select_epoch];
      ORDO_CHECK(sets.is_object() && sets.size() > 0, "a finished run's \"", t.select_epoch,
                 "\" holds no dev set's figures");
      const size_t dot = what.find('.');
      // The main dev set is the first evaluated: the one that picks the best epoch.
      const json::Value* set = dot == std::string::npos ? &sets.items().front().second : sets.find(what.substr(0, dot));
      if (!set) return {};  // a dev set this task does not have
      const json::Value* v = set->find(dot == std::string::npos ? what : what.substr(dot + 1));
      if (!v || v->is_null()) return {};
      // A number, or the codec's "nan"/"inf" (a metric undefined there: the figure is absent);
      // anything else is a damaged file, refused with its name.
      const double x = json::to_number(*v);
      if (!std::isfinite(x)) return {};
      values.push_back(scale * x);
    }
    return t.over_rates ? average_over_rates(t, values) : values;
  });
}

}  // namespace

double Figure::mean() const { return mean_std(values).mean; }
double Figure::std() const { return mean_std(values).std; }

double recorded_seconds(const json::Value& stages, const std::string& unit, const std::string& file) {
  const json::Value* record = stages.find(unit);
  const json::Value* seconds = record && record->is_object() ? record->find("seconds") : nullptr;
  ORDO_CHECK(seconds && seconds->is_number(), file, ": stage '", unit, "': its \"seconds\" is missing or no number");
  return seconds->as_number();
}

std::vector<RunResults> gather_results(const Plan& plan) {
  std::vector<RunResults> out;
  for (size_t i = 0; i < plan.names.size(); ++i) {
    RunResults r;
    r.config = plan.names[i];
    r.run_dir = plan.out + "/runs/" + r.config;
    r.pe = plan.configs[i].model.pe;
    if (file_exists(r.run_dir + "/stages.json")) r.stages = json::parse_file(r.run_dir + "/stages.json");
    if (file_exists(r.run_dir + "/probe/probe.json")) {
      r.record = report::read_run(r.run_dir);
      r.probed = true;
      const std::string path = r.run_dir + "/probe/indicators.json";
      const json::Value indicators = json::parse_file(path);
      json::reading_file(path, [&] {
        const std::string layer_key = "layer_" + std::to_string(r.record.layer);
        if (const json::Value* ranges = indicators[layer_key].find("by_range")) r.by_range = checked_ranges(*ranges, layer_key);
      });
    }
    for (const FinetuneTask& t : plan.finetune) {
      TaskResults& task = r.tasks[t.name] =
          read_task(r.run_dir + "/finetune/" + t.name + "/results.json", t, plan.average_learning_rates);
      if (task.present) task.chance = majority_accuracy(t, t.data.empty() ? r.run_dir + "/tasks/" + t.stand_in : t.data);
    }
    if (!plan.is_replicate(i)) {
      out.push_back(std::move(r));
      continue;
    }
    for (RunResults& row : out)  // the replicates come after every run config (experiment/plan.h)
      if (row.config == plan.row_of[i] && r.pretrained()) row.replicates.push_back(std::move(r));
  }
  return out;
}

std::optional<Figure> figure(const RunResults& run, const std::string& key, const Plan& plan) {
  Figure f;
  if (is_indicator_key(key)) {
    if (!run.probed) return std::nullopt;
    const json::Value* v = run.record.with_special.find(key);
    if (!v) return std::nullopt;
    f.values = {json::to_number(*v)};
    return f;
  }
  if (key == "positional_rank") {  // Chen et al.'s Figure 2: layer 1's positional term, mean over heads
    const std::optional<double> rank = analysis_column_mean(run.run_dir, "attention_rank.csv", key);
    if (!rank) return std::nullopt;
    f.values = {*rank};
    return f;
  }
  if (key == "position_mae" || key == "order_error" || key == "components_90") {  // Wang & Chen's Tables 1-2, Fig. 2
    const std::string file = key == "position_mae"    ? "position_regression.json"
                             : key == "order_error" ? "relative_order.json"
                                                    : "informativeness.json";
    const std::string field = key == "position_mae" ? "mae" : key == "order_error" ? "error_rate" : key;
    const std::optional<double> v = own_table_number(run.run_dir, file, field);
    if (!v) return std::nullopt;
    f.values = {*v};
    return f;
  }
  if (key == "skip_perplexity_ratio") {  // Wang & Chen's Table 4
    const std::optional<double> v = skip_perplexity_ratio(run.run_dir);
    if (!v) return std::nullopt;
    f.values = {*v};
    return f;
  }
  if (key == "eval_accuracy") {
    if (!run.probed || !run.record.has_eval) return std::nullopt;
    f.values = {100 * run.record.eval_accuracy};
    return f;
  }
  if (key == "glue.mean" || key == "senteval.mean") {
    // Seed by seed, the mean over the tasks the key averages: glue.mean the classification tasks (WNLI
    // left out, as Wang et al.'s Table 3 does); senteval.mean the classifiers started from the run's
    // own position table (Wang & Chen's Table 3 "Average").
    const bool own_table = key == "senteval.mean";
    std::vector<std::vector<double>> per_task;
    for (const FinetuneTask& t : plan.finetune) {
      const bool averaged = own_table ? t.init_positions == "run"
                                      : !(t.sweep || is_squad(t.task) || t.task == "wnli" || t.task == "senteval");
      if (!averaged) continue;
      auto it = run.tasks.find(t.name);
      if (it == run.tasks.end() || !it->second.present) continue;
      per_task.push_back(task_values(it->second, t, "score"));
      f.tasks += (f.tasks.empty() ? "" : ", ") + t.name;
    }
    if (per_task.empty()) return std::nullopt;
    size_t seeds = per_task[0].size();
    for (const auto& v : per_task) seeds = std::min(seeds, v.size());
    for (size_t k = 0; k < seeds; ++k) {
      double sum = 0;
      for (const auto& v : per_task) sum += v[k];
      f.values.push_back(sum / static_cast<double>(per_task.size()));
    }
    return f.values.empty() ? std::nullopt : std::optional<Figure>(f);
  }
  const size_t dot = key.find('.');
  if (dot == std::string::npos) return std::nullopt;
  const FinetuneTask* task = plan.task(key.substr(0, dot));
  if (!task) return std::nullopt;
  auto it = run.tasks.find(task->name);
  if (it == run.tasks.end()) return std::nullopt;
  f.values = task_values(it->second, *task, key.substr(dot + 1));
  return f.values.empty() ? std::nullopt : std::optional<Figure>(f);
}

std::vector<double> pretraining_means(const RunResults& run, const std::string& key, const Plan& plan) {
  std::vector<double> out;
  if (const std::optional<Figure> f = figure(run, key, plan)) out.push_back(f->mean());
  for (const RunResults& again : run.replicates)
    if (const std::optional<Figure> f = figure(again, key, plan)) out.push_back(f->mean());
  return out;
}

json::Value figures_json(const RunResults& run, const Plan& plan, const std::vector<std::string>& keys) {
  json::Value out = json::Value::object();
  for (const std::string& key : keys) {
    const std::optional<Figure> f = figure(run, key, plan);
    if (!f) continue;
    json::Value v = json::Value::object(), values = json::Value::array();
    for (double x : f->values) values.push_back(json::number(x));
    v["mean"] = json::number(f->mean());
    v["std"] = f->values.size() > 1 ? json::number(f->std()) : json::Value();
    v["values"] = values;
    out[key] = v;
  }
  return out;
}

}  // namespace ordo::experiment
