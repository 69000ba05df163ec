// The learning rate x seed grid of a fine-tuning: its runs and their
// names, each run's line in results.json and back (a stopped grid continues
// from its finished runs), the summary over each learning rate's seeds, and
// whether --out already holds this grid.
#include <algorithm>
#include <cstdio>

#include "base/file_io.h"
#include "train/finetune_parts.h"

namespace ordo::train {

using namespace finetuning;

namespace {

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

std::string run_name(double lr, uint64_t seed) { return "lr_" + shortest_text(lr) + "_seed_" + std::to_string(seed); }

}  // namespace

json::Value finetuning::run_line(const std::string& name, uint64_t seed, const RunResult& r) {
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

RunResult finetuning::run_from_line(const json::Value& line) {
  RunResult r;
  if (!line["finished"].as_bool()) return r;
  r.finished = true;
  r.best = {line["best_epoch"].as_int(), line["best_score"].as_number(), line["best"], json::Value()};
  r.last = {line["last_epoch"].as_int(), line["last_score"].as_number(), line["last"], json::Value()};
  if (const json::Value* b = line.find("best_by_length")) r.best.by_length = *b, r.last.by_length = line["last_by_length"];
  return r;
}

std::map<std::string, RunResult> finetuning::finished_runs(const std::string& results_path) {
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

std::optional<std::string> finetuning::earlier_grid(const std::string& out, const json::Value& recorded) {
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

void finetuning::print_lr_summary(const std::string& task, const json::Value& entry, const std::string& score_name) {
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

std::vector<GridRun> finetuning::grid_runs(const FinetuneConfig& c) {
  std::vector<GridRun> grid;
  for (double lr : c.learning_rates)
    for (int64_t k = 0; k < c.seeds; ++k) {
      const uint64_t seed = c.seed + static_cast<uint64_t>(k);
      grid.push_back({lr, seed, run_name(lr, seed), std::nullopt});
    }
  return grid;
}

json::Value finetuning::with_grid_results(json::Value results, const std::vector<GridRun>& grid, const FinetuneConfig& c) {
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

}  // namespace ordo::train
