// An experiment carried out, run by run and stage by stage (experiment/runner.h).
#include "experiment/runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <numeric>

#include "base/error.h"
#include "base/file_io.h"
#include "base/output.h"
#include "experiment/findings.h"
#include "experiment/paper_table.h"
#include "experiment/report_sections.h"
#include "experiment/results.h"
#include "experiment/tables.h"
#include "probe/analyze_run.h"
#include "probe/layer_probing.h"
#include "report/report.h"
#include "synth/synth.h"
#include "train/checkpoint_paths.h"
#include "train/finetune.h"
#include "train/loop.h"
#include "train/pretrain.h"

namespace ordo::experiment {

namespace fs = std::filesystem;

namespace {

std::string run_dir(const Plan& plan, size_t i) { return plan.out + "/runs/" + plan.names[i]; }

// Run i's units of work, in order: the per-run stages, fine-tuning one unit per task it has.
std::vector<std::string> units(const Plan& plan, size_t i) {
  std::vector<std::string> out;
  for (const std::string& stage : plan.stages) {
    if (stage == "report") continue;
    if (stage == "layers" && !plan.layers.for_run(plan.row_of[i])) continue;
    if (stage != "finetune") {
      out.push_back(stage);
      continue;
    }
    for (const FinetuneTask& t : plan.finetune)
      if (t.runnable() && plan.fine_tunes(i, t)) out.push_back("finetune:" + t.name);
  }
  return out;
}

std::string stage_of(const std::string& unit) { return unit.substr(0, unit.find(':')); }

// Whether --redo asks for `unit` to run again: the stage named and every stage
// after it, or a single fine-tuning task ("finetune:rte").
bool redone(const std::string& redo, const std::string& unit) {
  if (redo.empty()) return false;
  if (redo.find(':') != std::string::npos) return unit == redo;
  return stage_index(stage_of(unit)) >= stage_index(redo);
}

json::Value read_stages(const std::string& dir) {
  const std::string path = dir + "/stages.json";
  if (!file_exists(path)) return json::Value::object();
  json::Value v = json::parse_file(path);
  ORDO_CHECK(v.is_object(), path, ": a run's stage record is a JSON object");
  return v;
}

// Whether run i finished `unit` with the plan's settings.
// Settings without their "description" keys, at any depth: a description is
// words about a config (a run config's, a fine-tuning config's), never a
// setting, so rewording one does not make a finished stage another's.
json::Value without_descriptions(json::Value v) {
  if (v.is_object()) {
    json::Value out = json::Value::object();
    for (const auto& [key, value] : v.items())
      if (key != "description") out[key] = without_descriptions(value);
    return out;
  }
  if (v.is_array())
    for (size_t k = 0; k < v.size(); ++k) v[k] = without_descriptions(v[k]);
  return v;
}

// The first key where a stage's recorded settings differ from the plan's ("" when they agree).
std::string settings_difference(const json::Value& stored, const Plan& plan, const std::string& unit, size_t i) {
  return json::first_difference(without_descriptions(stored), without_descriptions(plan.settings(unit, i)));
}

bool finished(const json::Value& stages, const std::string& unit, const Plan& plan, size_t i) {
  const json::Value* record = stages.find(unit);
  return record && record->is_object() && record->contains("settings") &&
         settings_difference((*record)["settings"], plan, unit, i).empty();
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void record(const std::string& dir, const std::string& unit, const json::Value& settings, double seconds) {
  json::Value stages = read_stages(dir);
  json::Value entry = json::Value::object();
  entry["settings"] = settings;
  entry["seconds"] = seconds;
  entry["finished_at"] = now_utc();
  stages[unit] = entry;
  write_file_atomic(dir + "/stages.json", json::dump(stages, 2) + "\n");
}

// What a unit leaves in a run's folder, removed for --redo (pretrain: the run itself).
std::string output_of(const std::string& dir, const std::string& unit) {
  if (unit == "pretrain") return dir;
  if (unit == "probe") return dir + "/probe";
  if (unit == "analyze") return dir + "/analysis";
  if (unit == "tasks") return dir + "/tasks";
  if (unit == "layers") return dir + "/layers";
  return dir + "/finetune/" + unit.substr(unit.find(':') + 1);
}

// The selected runs' recorded stages against the plan, before anything runs:
// a stage finished with other settings is refused unless --redo covers it; a
// run folder the plan does not have belongs to another experiment. (The
// others are checked by the call that runs them; until then they count as
// unfinished, so the report never mixes settings.)
void check_records(const Plan& plan, const std::vector<size_t>& selected, const std::string& redo) {
  const std::string runs = plan.out + "/runs";
  if (directory_exists(runs))
    for (const auto& e : fs::directory_iterator(runs)) {
      if (!e.is_directory()) continue;
      const std::string name = e.path().filename().string();
      if (name[0] == '.') continue;  // ordo's bookkeeping (base/output.h): no run's name begins with a dot
      ORDO_CHECK(std::find(plan.names.begin(), plan.names.end(), name) != plan.names.end(), "'", plan.out,
                 "' holds the run ", name, ", which ", plan.folder, " does not plan: another experiment's output, "
                 "or a run the plan has dropped since (move it out of ", runs, " to keep it). Give another --out");
    }
  for (size_t i : selected) {
    const std::string dir = run_dir(plan, i);
    const json::Value stages = read_stages(dir);
    for (const std::string& unit : units(plan, i)) {
      const json::Value* rec = stages.find(unit);
      json::Value stored;
      std::string what;
      if (rec && rec->is_object() && rec->contains("settings")) {
        stored = (*rec)["settings"];
        what = dir + "/stages.json";
      } else if (unit == "pretrain" && file_exists(dir + "/config.json")) {
        stored = json::parse_file(dir + "/config.json");  // a run begun (or made before stage records)
        what = dir + "/config.json";
      } else {
        continue;
      }
      const std::string differs = settings_difference(stored, plan, unit, i);
      if (differs.empty() || redone(redo, unit)) continue;
      throw Error(detail::cat(plan.names[i], ": its ", unit, " stage was run with other settings (", what,
                              " differs from the plan at '", differs, "'). Give --redo ", stage_of(unit),
                              " to run it and the stages after it again, or another --out; nothing was changed"));
    }
  }
}

// --redo: the units it names forgotten, their outputs removed, so that they run from their start.
void forget_redone(const Plan& plan, size_t i, const std::string& redo) {
  const std::string dir = run_dir(plan, i);
  for (const std::string& unit : units(plan, i)) {
    if (!redone(redo, unit) || !directory_exists(dir)) continue;
    fs::remove_all(output_of(dir, unit));
    if (unit == "pretrain") return;  // the whole run, its record with it
    const json::Value stages = read_stages(dir);  // held: items() refers into it
    json::Value kept = json::Value::object();
    for (const auto& [name, entry] : stages.items())
      if (name != unit) kept[name] = entry;
    write_file_atomic(dir + "/stages.json", json::dump(kept, 2) + "\n");
  }
}

// Runs one unit of run i; false when a signal stopped it.
bool run_unit(const Plan& plan, size_t i, const std::string& unit, const RunnerOptions& options, double* seconds) {
  const bool quiet = options.quiet;
  const std::string dir = run_dir(plan, i);
  const auto start = std::chrono::steady_clock::now();
  if (unit == "pretrain") {
    const int64_t total = plan.configs[i].train.total_steps();
    const int64_t done = file_exists(dir + "/config.json") ? train::latest_checkpoint(dir) : -1;
    train::PretrainOptions p;
    p.out = dir;
    p.quiet = quiet;
    p.lock = false;  // the experiment holds the run
    if (done > 0 && done < total) {
      p.resume = true;
      if (train::resume_pretrain(p).interrupted) return false;
    } else if (done < total) {
      p.overwrite = true;  // a run stopped before its first checkpoint starts again
      if (train::pretrain(plan.configs[i], p).interrupted) return false;
    }
    // The pretraining's own wall time, over every call that trained it.
    *seconds = train::load_trainer_state(train::checkpoint_dir(dir, total)).elapsed_seconds;
    return true;
  }
  if (unit == "probe") {
    probe::ProbeRequest request = plan.probe;
    request.checkpoint = dir;
    write_folder(dir + "/probe", probe::probe_folder(request).files);
  } else if (unit == "analyze") {
    probe::AnalyzeOptions a;
    a.run = dir;
    a.out = dir + "/analysis";
    a.seed = plan.analyze.seed;
    a.eval_sequences = plan.analyze.eval_sequences;
    a.quiet = quiet;
    a.overwrite = true;
    probe::analyze_run(a);
  } else if (unit == "tasks") {
    const std::string annotations = dir + "/data/annotations.jsonl";
    synth::write_tasks(synth::read_annotations(annotations), plan.tasks, dir + "/tasks", /*overwrite=*/true,
                       {{annotations, "the run's corpus"}});
  } else if (unit == "layers") {
    probe::LayerProbeOptions l;
    l.run = dir;
    l.tasks = plan.layers.tasks;
    l.max_fit = plan.layers.max_fit;
    l.quiet = quiet;
    const json::Value result = probe::probe_layers(l);
    write_folder(dir + "/layers", {{"probing.json", json::dump(result, 2) + "\n"},
                                   {"probing.svg", probe::layer_probing_svg(result, plan.names[i] + ": probing accuracy per layer")}});
  } else {
    const FinetuneTask& t = *plan.task(unit.substr(unit.find(':') + 1));
    train::FinetuneOptions o;
    o.checkpoint = dir;
    o.task = t.finetune_task();
    o.from_scratch = !t.init_positions.empty();
    if (t.init_positions == "run") o.init_positions_from = dir;
    o.data = t.data.empty() ? dir + "/tasks/" + t.stand_in : t.data;
    o.out = dir + "/finetune/" + t.name;
    o.quiet = quiet;
    train::FinetuneConfig c = train::parse_finetune_config(t.config, {}, plan.folder + " finetune " + t.name);
    if (options.parallel_runs >= 0) c.parallel_runs = options.parallel_runs;
    if (train::finetune(c, o).interrupted) return false;
  }
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return true;
}

// The runs this call works on: --only's, --shard's, or all (indices into plan.names).
// Whether run i is a GPU rung's (experiment/ladder.h) that would train on the
// CPU without --only or --rungs asking for it: left out, and the report does
// not wait for it.
bool left_out_here(const Plan& plan, const RunnerOptions& o, size_t i) {
  const Rung* rung = rung_of(plan, i);
  return rung && rung->gpu && o.only.empty() && o.rungs.empty() &&
         !train::resolve_device(plan.configs[i].train.device).is_cuda();
}

// The runs --only, --rungs and --shard select, less those left out here.
std::vector<size_t> selected_runs(const Plan& plan, const RunnerOptions& o) {
  for (const std::string& k : o.only) {
    bool known = false;
    for (size_t i = 0; i < plan.names.size(); ++i) known |= k == plan.names[i] || k == std::to_string(i + 1);
    ORDO_CHECK(known, "--only ", k, ": no run of that number or name (--list shows them)");
  }
  // --rungs gpu: every rung marked for a GPU.
  auto asked = [&](const Rung& g) {
    return std::count(o.rungs.begin(), o.rungs.end(), g.name) > 0 ||
           (g.gpu && std::count(o.rungs.begin(), o.rungs.end(), "gpu") > 0);
  };
  for (const std::string& r : o.rungs)
    ORDO_CHECK(std::any_of(plan.ladder.rungs.begin(), plan.ladder.rungs.end(),
                           [&](const Rung& g) { return g.name == r || (r == "gpu" && g.gpu); }),
               "--rungs ", r, ": ", plan.folder,
               plan.ladder.rungs.empty() ? " has no ladder"
               : r == "gpu"              ? "'s ladder has no rung marked for a GPU"
                                         : " has no rung of that name");
  std::vector<size_t> out;
  std::vector<std::string> left_out;
  for (size_t i = 0; i < plan.names.size(); ++i) {
    bool named = false;
    for (const std::string& k : o.only) named |= k == plan.names[i] || k == std::to_string(i + 1);
    const Rung* rung = rung_of(plan, i);
    const bool in_rungs = o.rungs.empty() || (rung && asked(*rung));
    bool take = (o.only.empty() || named) && in_rungs;
    if (o.shard_count > 0) take &= static_cast<int>(i % static_cast<size_t>(o.shard_count)) == o.shard_index - 1;
    if (take && left_out_here(plan, o, i)) {
      if (std::find(left_out.begin(), left_out.end(), rung->name) == left_out.end()) left_out.push_back(rung->name);
      continue;
    }
    if (take) out.push_back(i);
  }
  if (!left_out.empty() && !o.list) {
    std::string names;
    for (const std::string& r : left_out) names += (names.empty() ? "" : ",") + r;
    std::fprintf(stderr, "ordo experiment: the GPU rung(s) %s left out on the CPU: tools/scale_gpu_rungs.sh runs them "
                 "on a GPU; --rungs %s runs them here\n", names.c_str(), names.c_str());
  }
  return out;
}

std::string seconds_text(double s) { return train::format_duration(s); }

// The plan's runs, or with --only, --rungs or --shard the ones they select (checked as a run checks them).
void list_runs(const Plan& plan, const RunnerOptions& o) {
  std::vector<size_t> listed(plan.names.size());
  std::iota(listed.begin(), listed.end(), size_t{0});
  const bool narrowed = !o.only.empty() || !o.rungs.empty() || o.shard_count > 0;
  if (narrowed) listed = selected_runs(plan, o);
  std::printf("%s: %zu run(s)%s, stages %s\n", plan.folder.c_str(), plan.names.size(),
              narrowed ? detail::cat(", ", listed.size(), " selected").c_str() : "",
              json::dump(plan.to_json()["stages"]).c_str());
  for (size_t i : listed) {
    const std::string dir = run_dir(plan, i);
    const json::Value stages = read_stages(dir);
    std::string line;
    for (const std::string& unit : units(plan, i)) {
      const bool done = finished(stages, unit, plan, i);
      line += " | " + unit +
              (done ? " done " + seconds_text(recorded_seconds(stages, unit, dir + "/stages.json")) : " -");
    }
    std::string owner;
    if (auto lock = OutputLock::try_take(dir, "ordo experiment --list", &owner); !lock && !owner.empty())
      line += " | running: " + owner;
    const Rung* rung = rung_of(plan, i);
    std::printf("%3zu  %s%s%s\n", i + 1, plan.names[i].c_str(), rung && rung->gpu ? " (GPU rung)" : "", line.c_str());
  }
}

bool complete(const Plan& plan, size_t i) {
  const json::Value stages = read_stages(run_dir(plan, i));
  for (const std::string& unit : units(plan, i))
    if (!finished(stages, unit, plan, i)) return false;
  return true;
}

// Writes the report of what is finished; returns the names of the files written
// (none, and nothing written, when nothing is finished that it reports).
// The plan's baseline and its first pretraining run's held-out loss at every
// evaluation (findings.h: how docs/FINDINGS.md tells shared baselines apart).
json::Value baseline_identity(const Plan& plan, const std::vector<RunResults>& runs) {
  for (const RunResults& r : runs) {
    if (r.config != plan.baseline) continue;
    json::Value losses = json::Value::array();
    for (const auto& [step, loss] : r.record.held_out_loss) {
      json::Value point = json::Value::array();
      point.push_back(step);
      point.push_back(loss);
      losses.push_back(point);
    }
    json::Value b = json::Value::object();
    b["config"] = r.config;
    b["held_out_loss"] = losses;
    return b;
  }
  return json::Value();
}

// Nothing for a report of every run; else a line saying that it is partial
// and how, in Markdown and in HTML.
struct PartialNote {
  std::string md, html;
};
PartialNote partial_note(const Plan& plan) {
  size_t done = 0;
  for (size_t i = 0; i < plan.names.size(); ++i) done += complete(plan, i);
  if (done == plan.names.size()) return {};
  const std::string count = std::to_string(done) + " of " + std::to_string(plan.names.size()) + " runs are complete. A "
                            "run not yet complete enters with the stages it has finished and the fine-tuning runs "
                            "finished so far; ";
  const std::string list = "ordo experiment " + plan.folder + " --out " + plan.out + " --list";
  return {"**Partial:** " + count + "`" + list + "` shows each run's stages.",
          "<p><strong>Partial:</strong> " + report::html_escape(count) + "<code>" + report::html_escape(list) +
              "</code> shows each run's stages.</p>\n"};
}

std::vector<std::string> write_experiment_report(const Plan& plan, const std::string& out) {
  const std::vector<RunResults> runs = gather_results(plan);
  std::vector<PaperTable> tables;
  for (const std::string& path : plan.paper_tables) tables.push_back(read_paper_table(path));
  ComparisonFiles comparisons = render_comparisons(plan, runs, tables);
  // Under each file's title (paper.md's, findings.md's).
  const PartialNote partial = partial_note(plan);
  auto with_partial = [&](const std::string& md) {
    const size_t end = md.find("\n\n");
    return partial.md.empty() || end == std::string::npos ? md
                                                          : md.substr(0, end + 2) + partial.md + "\n\n" + md.substr(end + 2);
  };
  for (report::OutputFile& f : comparisons.files)
    if (f.name == "paper.md") f.bytes = with_partial(f.bytes);
  comparisons.html = partial.html + comparisons.html;
  auto append = [&](const std::vector<report::OutputFile>& files, const std::string& html, const std::string& md) {
    comparisons.html += html;
    comparisons.files.insert(comparisons.files.end(), files.begin(), files.end());
    for (report::OutputFile& f : comparisons.files)
      if (f.name == "paper.md") f.bytes += md;
  };
  std::vector<SectionVerdict> section_verdicts = comparisons.verdicts;
  const SectionInput input{plan, runs, tables};
  for (const ReportSectionEntry& entry : report_sections()) {
    if (!entry.wanted(input)) continue;
    const ReportSection section = entry.render(input);
    append(section.files, section.html, section.markdown);
    section_verdicts.insert(section_verdicts.end(), section.verdicts.begin(), section.verdicts.end());
  }
  if (!plan.claims.empty()) {  // the paper's claims, each with its verdict (experiment/findings.h)
    const Claims claims = read_claims(plan.claims);
    const std::vector<Finding> findings = judge_claims(claims.claims, comparisons.comparisons, section_verdicts, plan, runs);
    const std::string md = findings_markdown(findings, "Findings: " + claims.title);
    comparisons.files.push_back({"findings.md", with_partial(md)});
    const std::string findings_file = findings_json(findings, claims.title, baseline_identity(plan, runs));
    comparisons.files.push_back({"findings.json", findings_file});
    append({}, "<h2>Findings</h2>\n<p>Each central claim of the paper with its verdict: <a href=\"findings.md\">"
               "findings.md</a>.</p>\n", "\n## Findings\n" + md.substr(md.find('\n') + 1));
  }
  std::vector<report::RunRecord> records;
  for (const RunResults& r : runs)
    if (r.probed) records.push_back(r.record);
  if (std::any_of(runs.begin(), runs.end(), [](const RunResults& r) { return !r.replicates.empty(); }))
    comparisons.html += "<p>The run table above, the heatmaps and the figures below draw each row's first "
                        "pretraining run; its replicates enter the paper tables (‡) and the findings.</p>\n";
  std::vector<report::OutputFile> files;
  if (!records.empty()) {
    // Labels and slugs made unique as ordo report makes them.
    std::vector<std::string> dirs;
    for (const report::RunRecord& r : records) dirs.push_back(r.run_dir);
    files = report::render_report(report::read_runs(dirs), comparisons.html);
  }
  files.insert(files.end(), comparisons.files.begin(), comparisons.files.end());
  std::vector<std::string> names;
  for (const report::OutputFile& f : files) names.push_back(f.name);
  if (!names.empty()) report::write_report(out, files);
  return names;
}

// The output folder as the plan's place: never the plan itself (the record
// written there would replace experiment.json), never through '..' past a
// missing folder (base/output.h).
void check_out(const Plan& plan, const PlanRequest& request) {
  resolve_output_path(plan.out, "--out");
  std::vector<InputPath> inputs = {{plan.folder, "the experiment folder"}};
  for (const auto& [name, dir] : request.data) inputs.push_back({dir, "--data " + name});
  check_output_spares(plan.out, inputs);
}

// OUT with its runs/ and the plan's record, made whole in one rename, so that
// processes started together on a fresh --out (--shard I/N) all find an
// experiment there: the first rename wins, the others find its folder.
void create_experiment_folder(const Plan& plan) {
  if (!file_exists(plan.out + "/experiment.json")) {
    StagedFolder staged(plan.out);
    make_directories(staged.path() + "/runs");
    write_file_atomic(staged.path() + "/experiment.json", json::dump(plan.to_json(), 2) + "\n");
    staged.commit_if_absent();
  }
  ORDO_CHECK(file_exists(plan.out + "/experiment.json"), "'", plan.out,
             "' exists and holds no experiment (no experiment.json): give another --out");
  make_directories(plan.out + "/runs");
}

}  // namespace

ExperimentSummary run_experiment(const RunnerOptions& o) {
  // Everything is read and checked before anything is trained or written.
  const Plan plan = make_plan(o.plan);
  ORDO_CHECK(o.redo.empty() || o.redo.rfind("finetune:", 0) == 0 || stage_index(o.redo) < stage_index("report"),
             "--redo ", o.redo, ": the report is written again whenever the runs change; redo a run's stage");
  if (o.redo.rfind("finetune:", 0) == 0)
    ORDO_CHECK(plan.task(o.redo.substr(9)) != nullptr, "--redo ", o.redo, ": the plan has no fine-tuning task '",
               o.redo.substr(9), "'");
  check_out(plan, o.plan);
  const std::string plan_path = plan.out + "/experiment.json";
  // Another process (a shard started together) may create the experiment between these looks. It appears
  // whole (a staged folder moved into place) and stays, so experiment.json is looked for last: a folder
  // that was neither absent nor empty a moment before and holds it now is that experiment.
  const bool fresh = !fs::exists(plan.out) || (fs::is_directory(plan.out) && fs::is_empty(plan.out));
  ORDO_CHECK(fresh || file_exists(plan_path),
             "'", plan.out, "' exists and holds no experiment (no experiment.json): give another --out");
  if (file_exists(plan_path)) json::parse_file(plan_path);  // a damaged plan is named, not overwritten silently
  if (o.list) {
    list_runs(plan, o);
    return {};
  }
  const std::vector<size_t> selected = selected_runs(plan, o);
  check_records(plan, selected, o.redo);
  create_experiment_folder(plan);
  write_file_atomic(plan_path, json::dump(plan.to_json(), 2) + "\n");
  if (o.before_runs) o.before_runs();

  ExperimentSummary summary;
  for (size_t k = 0; k < selected.size() && !o.report_only; ++k) {
    const size_t i = selected[k];
    const std::string dir = run_dir(plan, i), tag = "[" + std::to_string(i + 1) + "/" +
                                                    std::to_string(plan.names.size()) + "] " + plan.names[i];
    std::string owner;
    const std::unique_ptr<OutputLock> lock = OutputLock::try_take(dir, "ordo experiment", &owner);
    if (!lock) {
      std::fprintf(stderr, "ordo experiment: %s: being run by %s; skipped\n", tag.c_str(), owner.c_str());
      ++summary.busy;
      continue;
    }
    if (!lock->stale_owner().empty())
      std::fprintf(stderr, "ordo experiment: %s: took over the lock left by %s, which has ended\n", tag.c_str(),
                   lock->stale_owner().c_str());
    if (!o.redo.empty()) forget_redone(plan, i, o.redo);
    bool worked = false;
    for (const std::string& unit : units(plan, i)) {
      if (finished(read_stages(dir), unit, plan, i)) continue;
      std::fprintf(stderr, "ordo experiment: %s: %s\n", tag.c_str(), unit.c_str());
      double seconds = 0;
      worked = true;
      if (!run_unit(plan, i, unit, o, &seconds) || train::InterruptScope::interrupted()) {
        std::fprintf(stderr, "ordo experiment: %s: %s stopped; the same command continues where this stopped\n",
                     tag.c_str(), unit.c_str());
        summary.interrupted = true;
        return summary;
      }
      record(dir, unit, plan.settings(unit, i), seconds);
      std::fprintf(stderr, "ordo experiment: %s: %s done (%s)\n", tag.c_str(), unit.c_str(),
                   seconds_text(seconds).c_str());
    }
    summary.ran += worked;
  }
  int64_t awaited = 0;  // the runs the report waits for: all but those left out here
  for (size_t i = 0; i < plan.names.size(); ++i) {
    const bool done = complete(plan, i);
    summary.complete += done;
    awaited += done || !left_out_here(plan, o, i);
  }

  if (!plan.has_stage("report")) return summary;
  const bool all = summary.complete == awaited;
  if (!all && !o.report_only) {
    std::fprintf(stderr, "ordo experiment: %lld of %zu run(s) complete; the report waits for the rest (or give "
                 "--report to gather what is finished)\n", static_cast<long long>(summary.complete), plan.names.size());
    return summary;
  }
  std::string owner;
  const std::unique_ptr<OutputLock> lock = OutputLock::try_take(plan.out + "/report", "ordo experiment", &owner);
  if (!lock) {
    std::fprintf(stderr, "ordo experiment: the report is being written by %s; left to it\n", owner.c_str());
    return summary;
  }
  summary.report_files = write_experiment_report(plan, plan.out + "/report");
  if (!summary.report_files.empty())
    summary.report = plan.out + "/report";
  else
    std::fprintf(stderr, "ordo experiment: no report written: no run has finished a stage the report shows\n");
  return summary;
}

}  // namespace ordo::experiment
