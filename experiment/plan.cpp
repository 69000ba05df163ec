// An experiment's plan, read and checked (experiment/plan.h).
#include "experiment/plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "base/config.h"
#include "base/error.h"
#include "base/file_io.h"
#include "base/output.h"
#include "experiment/findings.h"
#include "experiment/ladder.h"
#include "experiment/disagreements.h"
#include "experiment/paper_table.h"
#include "probe/layer_probing.h"
#include "probe/probe_folder.h"
#include "train/position_init.h"

namespace ordo::experiment {

namespace fs = std::filesystem;

const std::vector<std::string>& stage_names() {
  static const std::vector<std::string> names = {"pretrain", "probe", "analyze", "tasks", "layers", "finetune", "report"};
  return names;
}

size_t stage_index(const std::string& stage) {
  const auto& names = stage_names();
  const auto it = std::find(names.begin(), names.end(), stage);
  ORDO_CHECK(it != names.end(), "unknown stage '", stage, "': the stages are pretrain, probe, analyze, tasks, "
             "layers, finetune, report");
  return static_cast<size_t>(it - names.begin());
}

namespace {

const synth::TaskFolder* stand_in_folder(const std::string& name) {
  for (const synth::TaskFolder& f : synth::task_folders())
    if (f.folder == name) return &f;
  return nullptr;
}

}  // namespace

std::string FinetuneTask::finetune_task() const {
  if (!data.empty() || stand_in.empty()) return task;
  const synth::TaskFolder* f = stand_in_folder(stand_in);
  return f ? f->finetune_task : task;
}

std::string FinetuneTask::source() const {
  if (!data.empty()) return "given: " + data;
  if (!stand_in.empty()) return "stand-in: the run's synthetic " + stand_in + " (" + finetune_task() + " layout)";
  return "no data (give --data " + name + "=DIR)";
}

bool FinetuneTask::for_run(const std::string& config) const {
  return runs.empty() || std::find(runs.begin(), runs.end(), config) != runs.end();
}

bool LayerSettings::for_run(const std::string& config) const {
  return runs.empty() || std::find(runs.begin(), runs.end(), config) != runs.end();
}

bool Plan::fine_tunes(size_t i, const FinetuneTask& t) const {
  if (!t.for_run(row_of[i])) return false;
  if (const Rung* rung = rung_of(*this, i); rung && !rung->fine_tunes_on(t.name)) return false;
  if (!is_replicate(i)) return true;
  return !t.sweep && (replicate_tasks.empty() ||
                      std::find(replicate_tasks.begin(), replicate_tasks.end(), t.name) != replicate_tasks.end());
}

bool Plan::has_stage(const std::string& stage) const {
  return std::find(stages.begin(), stages.end(), stage) != stages.end();
}

bool Plan::is_row(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return !is_replicate(i);
  return false;
}

const FinetuneTask* Plan::task(const std::string& name) const {
  for (const FinetuneTask& t : finetune)
    if (t.name == name) return &t;
  return nullptr;
}

json::Value Plan::settings(const std::string& stage, size_t i) const {
  json::Value s = json::Value::object();
  if (stage == "pretrain") return configs[i].source;
  if (stage == "probe") {
    s["words"] = probe.options.words;
    s["length"] = probe.options.length;
    s["seed"] = static_cast<int64_t>(probe.options.seed);
    s["layers"] = probe.layers;
    return s;
  }
  if (stage == "analyze") {
    s["seed"] = static_cast<int64_t>(analyze.seed);
    s["eval_sequences"] = analyze.eval_sequences;
    return s;
  }
  if (stage == "tasks") {
    s["seed"] = static_cast<int64_t>(tasks.seed);
    s["dev_fraction"] = tasks.dev_fraction;
    s["test_fraction"] = tasks.test_fraction;
    return s;
  }
  if (stage == "layers") {
    json::Value tasks_json = json::Value::array();
    for (const std::string& t : layers.tasks.empty() ? probe::layer_probe_tasks() : layers.tasks) tasks_json.push_back(t);
    s["tasks"] = tasks_json;
    s["max_fit"] = layers.max_fit;
    return s;
  }
  if (stage.rfind("finetune:", 0) == 0) {
    const FinetuneTask* t = task(stage.substr(9));
    ORDO_ASSERT(t != nullptr);
    s["task"] = t->task;
    s["data"] = t->data.empty() ? "stand-in:" + t->stand_in : t->data;
    s["config"] = t->config;
    if (!t->init_positions.empty()) s["init_positions"] = t->init_positions;
    return s;
  }
  throw Error("internal error: no settings for stage '" + stage + "'");
}

json::Value Plan::to_json() const {
  json::Value j = json::Value::object();
  j["written_by"] = "ordo experiment";
  j["folder"] = folder;
  j["quick"] = quick;
  json::Value list = json::Value::array();
  for (const std::string& s : stages) list.push_back(s);
  j["stages"] = list;
  json::Value sets = json::Value::array();
  for (const std::string& s : overrides) sets.push_back(s);
  j["overrides"] = sets;
  json::Value configs_json = json::Value::object();
  for (size_t i = 0; i < names.size(); ++i) configs_json[names[i]] = configs[i].source;
  j["configs"] = configs_json;  // in order: the runs' configs as their files and the overrides resolve them
  if (!replicate_seeds.empty()) {
    json::Value replicates = json::Value::object(), seeds = json::Value::array();
    for (uint64_t s : replicate_seeds) seeds.push_back(static_cast<int64_t>(s));
    replicates["seeds"] = seeds;
    json::Value of = json::Value::object();
    for (size_t i = 0; i < names.size(); ++i)
      if (is_replicate(i)) of[names[i]] = row_of[i];
    replicates["runs"] = of;  // each replicate's run config
    if (!replicate_tasks.empty()) {
      json::Value tasks = json::Value::array();
      for (const std::string& t : replicate_tasks) tasks.push_back(t);
      replicates["tasks"] = tasks;
    }
    j["replicates"] = replicates;
  }
  if (has_stage("probe")) j["probe"] = settings("probe", 0);
  if (has_stage("analyze")) j["analyze"] = settings("analyze", 0);
  if (has_stage("tasks")) j["tasks"] = settings("tasks", 0);
  if (has_stage("layers")) {
    json::Value l = settings("layers", 0);
    json::Value runs = json::Value::array();
    for (const std::string& r : layers.runs) runs.push_back(r);
    l["runs"] = runs;
    j["layers"] = l;
  }
  if (has_stage("finetune")) {
    json::Value tasks_json = json::Value::array();
    for (const FinetuneTask& t : finetune) {
      json::Value entry = settings("finetune:" + t.name, 0);
      entry["name"] = t.name;
      entry["source"] = t.source();
      if (!t.init_positions.empty()) entry["column"] = t.column;
      if (!t.runs.empty()) {
        json::Value runs = json::Value::array();
        for (const std::string& r : t.runs) runs.push_back(r);
        entry["runs"] = runs;
      }
      tasks_json.push_back(entry);
    }
    j["finetune"] = tasks_json;
  }
  json::Value report = json::Value::object();
  report["baseline"] = baseline;
  report["alpha"] = alpha;
  if (wang_chen) report["wang_chen"] = true;
  if (!dependency_run.empty()) report["dependency_heads"] = dependency_run;
  if (bench_pe) report["bench_pe"] = true;
  if (!english_out.empty()) report["english"] = english_out;
  if (!pretrained.empty()) {
    json::Value models = json::Value::array();
    for (const PretrainedModel& m : pretrained) {
      json::Value model = json::Value::object();
      model["name"] = m.name;
      model["probe"] = m.probe;
      model["row"] = m.row;
      models.push_back(model);
    }
    report["pretrained"] = models;
  }
  report["learning_rates"] = average_learning_rates ? "average" : "best";
  if (!length_figure.empty()) {
    json::Value columns = json::Value::array();
    for (const std::string& c : length_figure) columns.push_back(c);
    report["length_figure"] = columns;
  }
  json::Value tables = json::Value::array();
  for (const std::string& t : paper_tables) tables.push_back(t);
  report["paper_tables"] = tables;
  j["report"] = report;
  return j;
}

namespace {

// The run configs of a folder, in order (file names without ".json",
// experiment.json excepted); an error when it has none.
std::vector<std::string> run_config_names(const std::string& folder) {
  ORDO_CHECK(directory_exists(folder), "'", folder, "' is not a folder of run configs");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.is_regular_file() && e.path().extension() == ".json" && e.path().filename() != "experiment.json") {
      names.push_back(e.path().stem().string());
      // The run's folder is OUT/runs/<name>: a name that is a path could reach anything.
      check_path_name(names.back(), e.path().string() + ": the run's name (its file name without .json)");
    }
  std::sort(names.begin(), names.end());
  ORDO_CHECK(!names.empty(), "'", folder, "' holds no run configs (*.json)");
  return names;
}

std::vector<std::string> paper_tables_in(const std::string& folder) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.rfind("paper_", 0) == 0 && e.path().extension() == ".tsv")
      found.push_back(e.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<std::string> strings(FieldReader& r, const std::string& key, const std::string& where) {
  std::vector<std::string> out;
  if (const json::Value* list = r.array(key))
    for (size_t i = 0; i < list->size(); ++i) {
      ORDO_CHECK((*list)[i].is_string(), where, ": ", key, "[", i, "] must be a string");
      out.push_back((*list)[i].as_string());
    }
  return out;
}

// A list of --set-style assignments (KEY=VALUE), each checked where it is read.
std::vector<std::string> assignments(FieldReader& r, const std::string& key, const std::string& where) {
  std::vector<std::string> out = strings(r, key, where);
  check_assignments(out, where + ": " + key);
  return out;
}

std::vector<double> numbers(FieldReader& r, const std::string& key, const std::string& where) {
  std::vector<double> out;
  if (const json::Value* list = r.array(key))
    for (size_t i = 0; i < list->size(); ++i) {
      ORDO_CHECK((*list)[i].is_number(), where, ": ", key, "[", i, "] must be a number");
      out.push_back((*list)[i].as_number());
    }
  return out;
}

// A path in experiment.json, relative to its folder.
std::string relative_to(const std::string& folder, const std::string& path) {
  return !path.empty() && path[0] == '/' ? path : folder + "/" + path;
}

// A config file that experiment.json names (its "config"), read with the key's place named.
json::Value read_plan_config(const std::string& folder, const std::string& path, const std::string& where) {
  ORDO_CHECK(std::filesystem::is_regular_file(relative_to(folder, path)), where, ": config '", path,
             "' is no file (a path from ", folder, ")");
  return train::read_config_file(relative_to(folder, path));
}

// The probe settings: experiment.json's, then the command line's where given.
void read_probe(const json::Value* spec, const PlanRequest& request, const std::string& where, Plan& plan) {
  const json::Value empty = json::Value::object();
  FieldReader r(spec ? *spec : empty, where + ": probe");
  plan.probe.options.words = r.integer("words", 300, 1, 1 << 20);
  plan.probe.options.length = r.integer("length", 0, 0, 1 << 16);
  plan.probe.layers = r.string("layer", "1");
  probe::layer_number(plan.probe.layers, where + ": probe: layer");
  plan.probe.options.seed = static_cast<uint64_t>(r.integer("seed", 1, 0, int64_t{1} << 40));
  r.finish();
  if (request.probe_words >= 0) plan.probe.options.words = request.probe_words;
  if (request.probe_length >= 0) plan.probe.options.length = request.probe_length;
  if (request.probe_seed >= 0) plan.probe.options.seed = static_cast<uint64_t>(request.probe_seed);
  if (!request.probe_layer.empty()) {
    probe::layer_number(request.probe_layer, "--probe-layer");
    plan.probe.layers = request.probe_layer;
  }
}

// "replicates": each named run pretrained again per seed, as runs of their own
// after the run configs (plan.h).
void read_replicates(const json::Value& spec, const PlanRequest& request, const std::string& where, Plan& plan) {
  FieldReader r(spec, where);
  const std::vector<std::string> runs = strings(r, "runs", where);
  const std::vector<double> seeds = numbers(r, "seeds", where);
  plan.replicate_tasks = strings(r, "tasks", where);  // checked against the tasks once they are read
  r.finish();
  ORDO_CHECK(!runs.empty() && !seeds.empty(), where, ": give the runs to replicate (\"runs\") and their seeds "
             "(\"seeds\"), neither empty");
  std::set<uint64_t> distinct;
  for (size_t k = 0; k < seeds.size(); ++k) {
    const double s = seeds[k];
    ORDO_CHECK(s >= 0 && s <= 1e12 && s == std::floor(s), where, ": seeds[", k, "] must be a whole number from 0 "
               "to 1e12, got ", s);
    ORDO_CHECK(distinct.insert(static_cast<uint64_t>(s)).second, where, ": seed ", s, " is given twice");
  }
  plan.replicate_seeds.assign(distinct.begin(), distinct.end());
  if (request.quick) plan.replicate_seeds.resize(1);  // a smoke test of the path, not a spread
  const size_t rows = plan.names.size();
  std::set<std::string> named;
  for (const std::string& run : runs) {
    const auto it = std::find(plan.names.begin(), plan.names.begin() + static_cast<std::ptrdiff_t>(rows), run);
    ORDO_CHECK(it != plan.names.begin() + static_cast<std::ptrdiff_t>(rows), where, ": runs names '", run,
               "', which is no run config of ", plan.folder);
    ORDO_CHECK(named.insert(run).second, where, ": runs names '", run, "' twice");
    const size_t row = static_cast<size_t>(it - plan.names.begin());
    for (uint64_t seed : plan.replicate_seeds) {
      // Another draw of everything pretraining draws (train.seed: initial weights, dropout; data.seed: masking,
      // instances, order, the held-out split); the same corpus (data.synthetic_seed).
      ORDO_CHECK(seed != plan.configs[row].train.seed, where, ": seed ", seed, " is ", run, "'s own train.seed: "
                 "that replicate would be the run itself");
      std::vector<std::string> sets = plan.overrides;
      sets.push_back("train.seed=" + std::to_string(seed));
      sets.push_back("data.seed=" + std::to_string(seed));
      plan.configs.push_back(train::read_run_config(plan.folder + "/" + run + ".json", sets));
      plan.names.push_back(run + ".seed" + std::to_string(seed));
      plan.row_of.push_back(run);
      ORDO_CHECK(std::count(plan.names.begin(), plan.names.end(), plan.names.back()) == 1, where, ": the replicate ",
                 plan.names.back(), " has the name of a run config of ", plan.folder, "; rename that file");
    }
  }
}

// finetune.sweep: a fresh positional-only encoder per (w, s) (plan.h).
void read_sweep(const json::Value& spec, const std::string& folder, const std::vector<std::string>& quick_set,
                const std::string& where, Plan& plan) {
  FieldReader r(spec, where);
  const std::string run = r.string("run", "");
  const std::string task = r.string("task", "sst2");
  const std::string stand_in = r.string("stand_in", "");
  const std::string config_file = r.string("config", "");
  const std::vector<double> locality_w = numbers(r, "locality_w", where);
  const std::vector<double> symmetry_s = numbers(r, "symmetry_s", where);
  const double symmetry_w = r.number("symmetry_w", 0.011, 1e-12, 1e12);
  r.finish();
  ORDO_CHECK(plan.is_row(run), where, ": run '", run,
             "' is no run config of ", folder);
  const synth::TaskFolder* f = stand_in_folder(stand_in);
  ORDO_CHECK(f != nullptr && f->finetune_task == task, where, ": stand_in '", stand_in, "' is not a synthetic task in ",
             task, "'s layout");
  ORDO_CHECK(!config_file.empty(), where, ": no config (the positional encoder's fine-tuning config)");
  const json::Value base = read_plan_config(folder, config_file, where);
  auto add = [&](double w, double s) {
    ORDO_CHECK(w > 0 && s >= 0, where, ": w must be positive and s not negative, got w ", w, ", s ", s);
    FinetuneTask t;
    char name[64];
    std::snprintf(name, sizeof name, "sweep_w%g_s%g", w, s);
    t.name = name;
    std::replace(t.name.begin(), t.name.end(), '.', 'p');  // a figure key splits at the first '.'
    check_path_name(t.name, where + ": encoder");  // RUN/finetune/<name>
    t.column = t.name;
    ORDO_CHECK(plan.task(t.name) == nullptr, where, ": encoder ", t.name, " is named twice");
    t.task = task;
    t.stand_in = stand_in;
    t.runs = {run};
    t.init_positions = "none";
    t.sweep = true;
    t.sweep_w = w;
    t.sweep_s = s;
    std::vector<std::string> sets = quick_set;
    sets.push_back("model.pe_options.w=" + json::dump(json::Value(w)));
    sets.push_back("model.pe_options.s=" + json::dump(json::Value(s)));
    t.config = train::parse_finetune_config(base, sets, where + ": " + t.name).source;
    const json::Value& model = t.config["model"];
    ORDO_CHECK(model.contains("pe") && model["pe"].as_string() == "attenuated", where, ": ", config_file,
               " must make the encoder model.pe attenuated (Eq. 9: w and s are its parameters)");
    plan.finetune.push_back(t);
  };
  // Each list is a curve whose trend the report reads: two points at least, or none.
  ORDO_CHECK(!locality_w.empty() || !symmetry_s.empty(), where, ": give locality_w, symmetry_s or both");
  ORDO_CHECK(locality_w.size() != 1 && symmetry_s.size() != 1, where,
             ": a sweep's curve needs at least two points (locality_w and symmetry_s)");
  for (double w : locality_w) add(w, 1.0);
  for (double s : symmetry_s) add(symmetry_w, s);
}

// The fine-tuning tasks: each column, its data and its resolved config.
void read_finetune(const json::Value* spec, const PlanRequest& request, const std::string& folder,
                   const std::vector<std::string>& quick_set, const std::string& where, Plan& plan) {
  const json::Value empty = json::Value::object();
  FieldReader r(spec ? *spec : empty, where + ": finetune");
  const std::string config_file = r.string("config", "");
  std::vector<std::string> common = assignments(r, "set", where + ": finetune");
  common.insert(common.end(), quick_set.begin(), quick_set.end());
  const json::Value* tasks = r.array("tasks");
  const json::Value* sweep = r.object("sweep");
  r.finish();
  const json::Value base =
      config_file.empty() ? json::Value::object() : read_plan_config(folder, config_file, where + ": finetune");
  std::set<std::string> seen;
  for (size_t i = 0; tasks && i < tasks->size(); ++i) {
    const std::string at = where + ": finetune.tasks[" + std::to_string(i) + "]";
    FieldReader t((*tasks)[i], at);
    FinetuneTask task;
    task.name = t.string("name", "");
    task.task = t.string("task", "");
    task.stand_in = t.string("stand_in", "");
    task.set = assignments(t, "set", at);
    task.runs = strings(t, "runs", at);
    task.init_positions = t.string("init_positions", "", {"", "run", "none"});
    task.column = t.string("column", task.name);
    t.finish();
    ORDO_CHECK(!(*tasks)[i].contains("column") || !task.init_positions.empty(), at,
               ": 'column' names a Table 3 column, for a task with init_positions");
    std::set<std::string> named;
    for (const std::string& run : task.runs) {
      ORDO_CHECK(plan.is_row(run), at, ": runs names '", run, "', which is no run config of ", folder);
      ORDO_CHECK(named.insert(run).second, at, ": runs names '", run, "' twice");
    }
    ORDO_CHECK(!task.name.empty() && seen.insert(task.name).second, at, ": 'name' ",
               task.name.empty() ? "is missing" : "'" + task.name + "' is used twice");
    check_path_name(task.name, at + ": 'name'");  // RUN/finetune/<name>: a name that is a path could reach anything
    const auto& known = train::finetune_task_names();
    ORDO_CHECK(std::find(known.begin(), known.end(), task.task) != known.end(), at, ": unknown task '", task.task,
               "'");
    if (!task.stand_in.empty()) {
      const synth::TaskFolder* f = stand_in_folder(task.stand_in);
      ORDO_CHECK(f != nullptr, at, ": stand_in '", task.stand_in, "' is not a task ordo data tasks writes");
      // A single-sentence classification in SST-2's layout may stand for SentEval's (a label, a sentence).
      ORDO_CHECK(f->finetune_task == task.task || (task.task == "senteval" && f->finetune_task == "sst2"), at,
                 ": stand_in '", task.stand_in, "' is in the ", f->finetune_task, " layout, not ", task.task, "'s");
    }
    // --data NAME=DIR: the task of that name, or every task filling that Table 3 column ("mr" and "mr_random").
    auto d = request.data.find(task.name);
    if (d == request.data.end() && !task.init_positions.empty()) d = request.data.find(task.column);
    if (d != request.data.end()) {
      task.data = d->second;
      train::find_task_files(task.task, task.data);  // refused now, naming the files looked for, if they are not there
    }
    std::vector<std::string> sets = common;
    sets.insert(sets.end(), task.set.begin(), task.set.end());
    task.config = train::parse_finetune_config(base, sets, at).source;
    plan.finetune.push_back(task);
  }
  if (sweep) read_sweep(*sweep, folder, quick_set, where + ": finetune.sweep", plan);
  for (const auto& [name, dir] : request.data)
    ORDO_CHECK(plan.task(name) != nullptr ||
                   std::any_of(plan.finetune.begin(), plan.finetune.end(),
                               [&](const FinetuneTask& t) { return !t.init_positions.empty() && t.column == name; }),
               "--data ", name, "=", dir, ": the plan has no fine-tuning task '", name, "' (nor a Table 3 column of that name)");
}

// A config's fine-tuning length against its learned position table, as ordo
// finetune checks it; a fresh model's config (model.*) and the run's table
// against it for init_positions.
void check_finetune_fits(const Plan& plan) {
  for (size_t i = 0; i < plan.names.size(); ++i)
    for (const FinetuneTask& t : plan.finetune) {
      if (!t.for_run(plan.row_of[i])) continue;
      const std::string where = plan.folder + "/" + plan.names[i] + ".json: fine-tuning task " + t.name;
      const train::FinetuneConfig c = train::parse_finetune_config(t.config, {}, "finetune " + t.name);
      ORDO_CHECK(!t.init_positions.empty() || c.model.size() == 0, where, ": its config's model.* keys shape a "
                 "fresh model: give the task init_positions (\"run\" or \"none\")");
      nn::BertConfig run = plan.configs[i].model;
      if (run.vocab_size <= 0) run.vocab_size = plan.configs[i].data.vocab_size;  // it follows the vocabulary trained
      const nn::BertConfig m = t.init_positions.empty() ? run : nn::with_overrides(run, c.model, where + ": model");
      ORDO_CHECK(c.max_seq_length <= m.max_position_embeddings || m.pe.find("ape_learned") == std::string::npos,
                 where, " has max_seq_length ", c.max_seq_length, ", beyond the model's learned table of ",
                 m.max_position_embeddings, " positions");
      if (t.init_positions == "run") train::check_position_copy(run, m, c.max_seq_length, where + ": init_positions run");
    }
}

}  // namespace

Plan make_plan(const PlanRequest& request) {
  Plan plan;
  plan.folder = request.folder;
  plan.out = request.out;
  plan.quick = request.quick;
  ORDO_CHECK(!request.out.empty(), "no output folder given (--out)");
  plan.names = run_config_names(request.folder);

  const std::string spec_path = request.folder + "/experiment.json";
  const json::Value spec = file_exists(spec_path) ? json::parse_file(spec_path) : json::Value::object();
  const std::string where = file_exists(spec_path) ? spec_path : request.folder + " (no experiment.json)";
  ORDO_CHECK(spec.is_object(), spec_path, ": an experiment spec is a JSON object");
  FieldReader top(spec, where);
  top.string("description", "");
  std::vector<std::string> stages = strings(top, "stages", where);
  const json::Value* probe_spec = top.object("probe");
  const json::Value* analyze_spec = top.object("analyze");
  const json::Value* tasks_spec = top.object("tasks");
  const json::Value* layers_spec = top.object("layers");
  const json::Value* finetune_spec = top.object("finetune");
  const json::Value* report_spec = top.object("report");
  const json::Value* quick_spec = top.object("quick");
  const json::Value* replicates_spec = top.object("replicates");
  const json::Value* ladder_spec = top.object("ladder");
  top.finish();

  // --quick: the spec's smoke-test settings, else these (minutes on two cores). The spec's are read
  // whether or not --quick is given, so that a mistake there shows on the first run, not the first smoke test.
  std::vector<std::string> quick_set, quick_finetune;
  json::Value quick_probe = json::Value::object();
  if (quick_spec) {
    FieldReader q(*quick_spec, where + ": quick");
    quick_set = assignments(q, "set", where + ": quick");
    quick_finetune = assignments(q, "finetune_set", where + ": quick");
    if (const json::Value* p = q.object("probe")) quick_probe = *p;
    q.finish();
  } else {
    quick_set = {"train.steps=100", "data.synthetic_sentences=1500", "train.eval_every=0", "train.checkpoint_every=0"};
    quick_finetune = {"train.epochs=1", "train.seeds=2"};
    quick_probe["words"] = 20;
  }
  if (!request.quick) quick_set.clear(), quick_finetune.clear(), quick_probe = json::Value::object();

  // The stages: the command line's, else the spec's, else Table 2's; in stage order.
  const bool folder_finetunes = std::count(stages.begin(), stages.end(), "finetune") > 0;
  if (!request.stages.empty()) stages = request.stages;
  if (stages.empty()) stages = {"pretrain", "probe", "report"};
  for (size_t k = 0; k < stages.size(); ++k)
    json::reading_file(request.stages.empty() ? detail::cat(where, ": stages[", k, "]") : "--stages",
                       [&] { stage_index(stages[k]); });
  for (const std::string& s : stage_names())
    if (std::find(stages.begin(), stages.end(), s) != stages.end()) plan.stages.push_back(s);
  ORDO_CHECK(plan.has_stage("pretrain"), where, ": the stages must include pretrain (every other stage reads the "
             "run); to gather the report of finished runs give --report");

  // The run configs, with --quick's and the command line's overrides.
  plan.overrides = quick_set;
  plan.overrides.insert(plan.overrides.end(), request.overrides.begin(), request.overrides.end());
  for (const std::string& name : plan.names)
    plan.configs.push_back(train::read_run_config(request.folder + "/" + name + ".json", plan.overrides));
  plan.row_of = plan.names;
  if (replicates_spec) read_replicates(*replicates_spec, request, where + ": replicates", plan);
  if (ladder_spec) expand_ladder(*ladder_spec, where + ": ladder", plan);  // every run at every rung
  // The synthetic stand-ins are tasks on the synthetic language (the tasks
  // stage reads its annotations): runs pretrained on a real corpus have none,
  // so the tasks stage is left out and only the tasks given --data fine-tune.
  std::vector<std::string> synthetic, real;
  std::string corpus;  // the first real one
  for (size_t i = 0; i < plan.names.size(); ++i) {
    const std::string& c = plan.configs[i].data.corpus;
    (c == "synthetic" ? synthetic : real).push_back(plan.names[i]);
    if (c != "synthetic" && corpus.empty()) corpus = c;
  }
  ORDO_CHECK(synthetic.empty() || real.empty(), where, ": ", synthetic.front(), " pretrains on the synthetic language "
             "and ", real.front(), " on data.corpus '", corpus, "'; the synthetic stand-in tasks exist for the first "
             "kind only: give every run one kind of corpus (two experiments otherwise)");
  const bool real_corpus = !real.empty();
  if (real_corpus)  // the tasks, and the layers stage that probes them, are the synthetic language's
    for (const char* stage : {"tasks", "layers"})
      plan.stages.erase(std::remove(plan.stages.begin(), plan.stages.end(), stage), plan.stages.end());

  // Every stage's settings, checked against every config.
  json::Value probe_settings = probe_spec ? *probe_spec : json::Value::object();
  for (const auto& [key, value] : quick_probe.items()) probe_settings[key] = value;
  read_probe(&probe_settings, request, where, plan);
  if (plan.has_stage("probe"))
    for (size_t i = 0; i < plan.names.size(); ++i)
      probe::check_probe_settings(plan.probe, plan.configs[i].model, request.folder + "/" + plan.names[i] + ".json");
  {
    const json::Value empty = json::Value::object();
    FieldReader a(analyze_spec ? *analyze_spec : empty, where + ": analyze");
    plan.analyze.seed = static_cast<uint64_t>(a.integer("seed", 1, 0, int64_t{1} << 40));
    plan.analyze.eval_sequences = a.integer("eval_sequences", 64, 1, 1 << 20);
    a.finish();
    FieldReader t(tasks_spec ? *tasks_spec : empty, where + ": tasks");
    plan.tasks.seed = static_cast<uint64_t>(t.integer("seed", 1, 0, int64_t{1} << 40));
    plan.tasks.dev_fraction = t.number("dev_fraction", plan.tasks.dev_fraction, 1e-6, 0.9);
    plan.tasks.test_fraction = t.number("test_fraction", plan.tasks.test_fraction, 0, 0.9);
    t.finish();
    FieldReader l(layers_spec ? *layers_spec : empty, where + ": layers");
    plan.layers.runs = strings(l, "runs", where + ": layers");
    plan.layers.tasks = strings(l, "tasks", where + ": layers");
    plan.layers.max_fit = l.integer("max_fit", 5000, 2, int64_t{1} << 30);
    if (request.quick) plan.layers.max_fit = std::min<int64_t>(plan.layers.max_fit, 200);
    l.finish();
    for (const std::string& r : plan.layers.runs)
      ORDO_CHECK(plan.is_row(r), where, ": layers.runs names '",
                 r, "', no run config of ", request.folder);
    for (const std::string& t : plan.layers.tasks)
      ORDO_CHECK(std::find(probe::layer_probe_tasks().begin(), probe::layer_probe_tasks().end(), t) !=
                     probe::layer_probe_tasks().end(),
                 where, ": layers.tasks names '", t, "', not a synthetic probing task (sentence_length, word_content, "
                 "tree_depth, top_constituents, bigram_shift, tense, subject_number, object_number)");
    ORDO_CHECK(!plan.has_stage("layers") || plan.has_stage("tasks"), where, ": the layers stage reads the run's "
               "synthetic probing tasks, which the tasks stage writes; add it to the stages");
    FieldReader r(report_spec ? *report_spec : empty, where + ": report");
    plan.baseline = r.string("baseline", "");
    plan.alpha = r.number("alpha", plan.alpha, 1e-9, 0.5);
    plan.wang_chen = r.boolean("wang_chen", false);
    plan.average_learning_rates = r.string("learning_rates", "best", {"best", "average"}) == "average";
    plan.length_figure = strings(r, "length_figure", where + ": report");
    plan.dependency_run = r.string("dependency_heads", "");
    plan.bench_pe = r.boolean("bench_pe", false);
    plan.english_out = r.string("english", "");
    if (const json::Value* models = r.array("pretrained"))
      for (size_t k = 0; k < models->as_array().size(); ++k) {
        const std::string at = where + ": report.pretrained[" + std::to_string(k) + "]";
        ORDO_CHECK((*models)[k].is_object(), at, ": expected an object {\"name\", \"probe\", \"row\"}");
        FieldReader m((*models)[k], at);
        PretrainedModel model{m.string("name", ""), m.string("probe", ""), m.string("row", "")};
        m.finish();
        ORDO_CHECK(!model.name.empty() && !model.probe.empty(), at, ": a name and a probe folder are required");
        plan.pretrained.push_back(model);
      }
    r.finish();
  }
  ORDO_CHECK(plan.dependency_run.empty() ||
                 plan.is_row(plan.dependency_run),
             where, ": report.dependency_heads '", plan.dependency_run, "' names no run config of ", request.folder);
  ORDO_CHECK(plan.baseline.empty() ||
                 plan.is_row(plan.baseline),
             where, ": report.baseline '", plan.baseline, "' names no run config of ", request.folder);
  if (plan.has_stage("finetune")) {
    read_finetune(finetune_spec, request, request.folder, quick_finetune, where, plan);
    if (real_corpus)
      for (FinetuneTask& t : plan.finetune) t.stand_in.clear();  // "no data (give --data ...)" where none is given
    ORDO_CHECK(!plan.finetune.empty(), where, ": the finetune stage has no tasks (finetune.tasks)");
    for (const std::string& t : plan.replicate_tasks)
      ORDO_CHECK(plan.task(t) != nullptr, where, ": replicates.tasks names '", t, "', no task of finetune.tasks");
    for (const Rung& rung : plan.ladder.rungs)
      for (const std::string& t : rung.tasks)
        ORDO_CHECK(plan.task(t) != nullptr, where, ": ladder: rung '", rung.name, "' tasks names '", t,
                   "', no task of finetune.tasks");
    check_finetune_fits(plan);
    for (const std::string& column : plan.length_figure)
      ORDO_CHECK(std::any_of(plan.finetune.begin(), plan.finetune.end(),
                             [&](const FinetuneTask& t) { return !t.init_positions.empty() && t.column == column; }),
                 where, ": report.length_figure names '", column, "', no Table 3 column (a task with init_positions)");
    for (const FinetuneTask& t : plan.finetune)
      ORDO_CHECK(t.stand_in.empty() || !t.data.empty() || plan.has_stage("tasks"), where, ": task ", t.name,
                 " reads the run's synthetic ", t.stand_in, ", which the tasks stage writes; add it to the stages or "
                 "give --data ", t.name, "=DIR");
  } else {
    ORDO_CHECK(request.data.empty(), "--data is for the finetune stage, which this plan does not run");
    // (Where --stages leaves out the folder's finetune stage, its tasks are checked when it runs.)
    ORDO_CHECK(plan.replicate_tasks.empty() || folder_finetunes, where, ": replicates.tasks names fine-tuning tasks, "
               "and the plan has no finetune stage");
    for (const Rung& rung : plan.ladder.rungs)
      ORDO_CHECK(rung.tasks.empty() || folder_finetunes, where, ": ladder: rung '", rung.name, "' names fine-tuning "
                 "tasks, and the plan has no finetune stage");
  }

  // The paper's tables: read now, so that a bad one is refused before any run.
  plan.paper_tables = paper_tables_in(request.folder);
  std::vector<PaperTable> tables;
  for (const std::string& path : plan.paper_tables) {
    tables.push_back(read_paper_table(path));
    check_paper_table(tables.back(), plan);
  }
  if (file_exists(request.folder + "/disagreements.tsv")) {
    plan.disagreements = request.folder + "/disagreements.tsv";
    check_disagreements(read_disagreements(plan.disagreements, plan.folder), plan.disagreements, plan);
  }
  ORDO_CHECK(plan.english_out.empty() || !plan.disagreements.empty(), where, ": report.english sets real-English "
             "runs beside a ladder's disagreements, and ", request.folder, " has no disagreements.tsv");
  ORDO_CHECK(plan.pretrained.empty() || !plan.disagreements.empty(), where, ": report.pretrained sets models "
             "beside a ladder's disagreements, and ", request.folder, " has no disagreements.tsv");
  for (size_t k = 0; k < plan.pretrained.size(); ++k)  // a run config of the ladder, as the disagreements name them
    ORDO_CHECK(plan.is_row(ladder_run_name(plan.pretrained[k].row, plan.ladder.rungs.front().name)), where,
               ": report.pretrained[", k, "]: row '", plan.pretrained[k].row, "' names no run config of ",
               request.folder);
  if (file_exists(request.folder + "/claims.tsv")) {
    plan.claims = request.folder + "/claims.tsv";
    check_claims(read_claims(plan.claims).claims, plan.claims, tables, plan);
  }
  if (quick_spec && !request.quick) {  // the smoke test's settings as --quick would apply them
    PlanRequest smoke = request;
    smoke.quick = true;
    json::reading_file(where + ": quick (as --quick reads it)", [&] { make_plan(smoke); });
  }
  return plan;
}

}  // namespace ordo::experiment
