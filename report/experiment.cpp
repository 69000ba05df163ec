// A folder of run configs pretrained, probed and reported (report/experiment.h).
#include "report/experiment.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json.h"
#include "base/output.h"
#include "probe/probe_folder.h"
#include "report/paper_table.h"
#include "report/report.h"
#include "train/checkpoint_paths.h"
#include "train/loop.h"
#include "train/pretrain.h"

namespace ordo::report {

namespace fs = std::filesystem;

namespace {

// The folder's paper table (paper_*.tsv), "" when it has none.
std::string find_paper_table(const std::string& folder) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.rfind("paper_", 0) == 0 && e.path().extension() == ".tsv")
      found.push_back(e.path().string());
  }
  ORDO_CHECK(found.size() <= 1, folder, " holds ", found.size(), " paper tables (paper_*.tsv); an experiment compares "
             "with one");
  return found.empty() ? "" : found[0];
}

// Whether the run's probe is of its latest checkpoint, with the plan's settings.
bool probed(const std::string& run_dir, const json::Value& probe_plan) {
  const std::string meta_path = run_dir + "/probe/probe.json";
  if (!file_exists(meta_path)) return false;
  json::Value meta;
  try {
    meta = json::parse_file(meta_path);
  } catch (const Error&) {
    return false;  // a damaged probe is made again
  }
  auto same = [&](const char* key) { return meta.contains(key) && meta[key] == probe_plan[key]; };
  return meta.contains("checkpoint") && meta["checkpoint"] == json::Value(train::resolve_checkpoint(run_dir)) &&
         same("words") && same("seed") && (probe_plan["length"].as_number() == 0 || same("length"));
}

}  // namespace

std::vector<std::string> experiment_configs(const std::string& folder) {
  ORDO_CHECK(directory_exists(folder), "'", folder, "' is not a folder of run configs");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.is_regular_file() && e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  ORDO_CHECK(!names.empty(), "'", folder, "' holds no run configs (*.json)");
  return names;
}

ExperimentSummary run_experiment(const ExperimentOptions& o) {
  // Everything is read and checked before anything is trained or written.
  const std::vector<std::string> names = experiment_configs(o.folder);
  std::vector<train::RunConfig> configs;
  json::Value resolved = json::Value::object();
  for (const std::string& name : names) {
    configs.push_back(train::read_run_config(o.folder + "/" + name + ".json", o.overrides));
    resolved[name] = configs.back().source;
  }
  // Every stage's settings against every config, before the first run trains.
  for (size_t i = 0; i < names.size(); ++i) {
    probe::ProbeRequest request;
    request.layers = o.probe_layers;
    request.options = o.probe;
    probe::check_probe_settings(request, configs[i].model, o.folder + "/" + names[i] + ".json");
  }
  const std::string paper_path = find_paper_table(o.folder);
  PaperTable paper;
  if (!paper_path.empty()) {
    paper = read_paper_table(paper_path);
    for (const PaperRow& row : paper.rows)
      ORDO_CHECK(std::find(names.begin(), names.end(), row.config) != names.end(), paper_path, ": row '", row.config,
                 "' names no config of ", o.folder);
  }

  json::Value plan = json::Value::object();
  plan["written_by"] = "ordo experiment";
  json::Value overrides = json::Value::array();
  for (const std::string& s : o.overrides) overrides.push_back(s);
  plan["overrides"] = overrides;
  json::Value probe_plan = json::Value::object();
  probe_plan["words"] = o.probe.words;
  probe_plan["length"] = o.probe.length;
  probe_plan["seed"] = static_cast<int64_t>(o.probe.seed);
  probe_plan["layers"] = o.probe_layers;
  plan["probe"] = probe_plan;
  plan["configs"] = resolved;  // in order: the runs' configs as their files and the overrides resolve them

  const std::string plan_path = o.out + "/experiment.json";
  if (file_exists(plan_path)) {
    const json::Value stored = json::parse_file(plan_path);
    const std::string differs = json::first_difference(stored, plan);
    ORDO_CHECK(differs.empty(), "'", o.out, "' holds another experiment: its plan (", plan_path, ") differs at '",
               differs, "' (other configs, --set or probe settings, or an edited config file). Rerun it as it was "
               "planned, or give another --out");
  } else {
    ORDO_CHECK(!fs::exists(o.out) || (fs::is_directory(o.out) && fs::is_empty(o.out)), "'", o.out,
               "' exists and holds no experiment (no experiment.json): give another --out");
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string stored = o.out + "/runs/" + names[i] + "/config.json";
    if (!file_exists(stored)) continue;
    const std::string differs = json::first_difference(json::parse_file(stored), configs[i].source);
    ORDO_CHECK(differs.empty(), stored, " differs from what ", names[i], ".json resolves to at '", differs,
               "': this run was trained with another config");
  }
  make_directories(o.out + "/runs");
  if (!file_exists(plan_path)) write_file_atomic(plan_path, json::dump(plan, 2) + "\n");

  ExperimentSummary summary;
  std::vector<std::string> run_dirs;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const std::string run_dir = o.out + "/runs/" + name;
    run_dirs.push_back(run_dir);
    const int64_t total = configs[i].train.total_steps();
    const int64_t done = file_exists(run_dir + "/config.json") ? train::latest_checkpoint(run_dir) : -1;
    std::fprintf(stderr, "ordo experiment: [%zu/%zu] %s: ", i + 1, names.size(), name.c_str());
    train::PretrainOptions p;
    p.out = run_dir;
    p.quiet = o.quiet;
    train::RunSummary trained;
    if (done >= total) {
      std::fprintf(stderr, "trained (%lld steps)\n", static_cast<long long>(done));
      ++summary.skipped;
    } else if (done > 0) {
      std::fprintf(stderr, "resuming at step %lld of %lld\n", static_cast<long long>(done),
                   static_cast<long long>(total));
      p.resume = true;
      trained = train::resume_pretrain(p);
      ++summary.resumed;
    } else {
      std::fprintf(stderr, "pretraining (%lld steps)\n", static_cast<long long>(total));
      p.overwrite = true;  // a run stopped before its first checkpoint starts again
      trained = train::pretrain(configs[i], p);
      ++summary.trained;
    }
    if (trained.interrupted) {
      std::fprintf(stderr, "ordo experiment: interrupted; the same command continues where this stopped\n");
      summary.interrupted = true;
      return summary;
    }
    if (done >= total && probed(run_dir, probe_plan)) continue;  // a run trained now is probed again
    probe::ProbeRequest request;
    request.checkpoint = run_dir;
    request.options = o.probe;
    request.layers = o.probe_layers;
    const probe::ProbeFolder folder = probe::probe_folder(request);
    write_folder(run_dir + "/probe", folder.files);
    std::fprintf(stderr, "ordo experiment: [%zu/%zu] %s: probed %s -> %s/probe\n", i + 1, names.size(), name.c_str(),
                 folder.checkpoint.c_str(), run_dir.c_str());
  }

  const std::vector<RunRecord> runs = read_runs(run_dirs);
  std::vector<NamedRun> named;
  for (size_t i = 0; i < runs.size(); ++i) named.push_back({names[i], &runs[i]});
  std::vector<OutputFile> files =
      render_report(runs, paper_path.empty() ? "" : "<h2>Against the paper</h2>\n" + comparison_html(named, paper));
  if (!paper_path.empty()) {
    files.push_back({"paper.md", comparison_markdown(named, paper)});
    files.push_back({"paper.json", json::dump(comparison_json(named, paper), 2) + "\n"});
  }
  summary.report = o.out + "/report";
  write_report(summary.report, files);
  return summary;
}

}  // namespace ordo::report
