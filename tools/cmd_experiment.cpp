// `ordo experiment`: a folder of run configs carried through the stages its
// plan names — pretrained, probed, analysed, fine-tuned — and reported beside
// the paper's tables; resumable and shardable (experiment/runner.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/file_io.h"
#include "base/output.h"
#include "base/subprocess.h"
#include "experiment/findings.h"
#include "experiment/runner.h"
#include "train/loop.h"
#include "tools/cli.h"

namespace {

using namespace ordo;

// A comma-separated list ("a,b,c"), each item non-empty.
std::vector<std::string> comma_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    ORDO_USAGE_CHECK(!out.back().empty(), "flag --", flag, " expects a comma-separated list, got '", text, "'");
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// What the report stage wrote, as the summary line ends: the page to open,
// or the files there are without one (runner.cpp says when it wrote none).
std::string report_written(const experiment::ExperimentSummary& s) {
  const std::vector<std::string>& files = s.report_files;
  if (files.empty()) return "";
  if (std::find(files.begin(), files.end(), "index.html") != files.end()) return " -> " + s.report + "/index.html";
  std::string names;
  for (const std::string& f : files) names += (names.empty() ? "" : ", ") + f;
  return " -> " + s.report + ": " + names + " (no index.html: no run is probed yet, and the page shows the probes)";
}

// --findings REPORT... --out FILE: every report's findings.json in one table (docs/FINDINGS.md).
int gather_findings(const cli::Args& args) {
  ORDO_USAGE_CHECK(!args.positional().empty(), "--findings: name the report folders to gather (each holds "
                   "findings.json)");
  for (const char* flag : {"set", "data", "stages", "only", "rungs", "shard", "redo", "probe-length", "probe-words",
                           "probe-layer", "probe-seed", "parallel-runs"})
    ORDO_USAGE_CHECK(!args.has(flag), "--", flag, " is for running an experiment, not for --findings");
  for (const char* flag : {"quick", "list", "report", "quiet"})
    ORDO_USAGE_CHECK(!args.has(flag), "--", flag, " is for running an experiment, not for --findings");
  const std::string out = args.required("out");
  std::vector<InputPath> inputs;
  for (const std::string& dir : args.positional()) inputs.push_back({dir + "/findings.json", "--findings"});
  check_output(out, OutputKind::file, args.has("overwrite"), inputs);
  const std::string text = experiment::gather_findings(args.positional());
  write_file_atomic(out, text);
  std::printf("ordo experiment: the findings of %zu report(s) -> %s\n", args.positional().size(), out.c_str());
  return 0;
}

// --runs-at-once N|auto: how many processes take the plan's runs (each the
// next run no other holds, as processes sharing --out always do). auto: one
// on the CPU, where a run's threads already fill the cores and two runs on
// them run several times slower; on a GPU as many as the runs to do, the
// cores (each process drives its GPU work from one) and 8 allow — a tiny run
// keeps a fraction of a percent of an H200 busy, and every process holds its
// own CUDA context (its own streams), which the GPU time-slices.
int64_t runs_at_once(const cli::Args& args, const experiment::RunnerOptions& o) {
  const std::string given = args.str("runs-at-once", "1");
  if (given != "auto") return args.integer("runs-at-once", 1, 1, 64);
  bool gpu = false;
  for (const train::RunConfig& c : experiment::make_plan(o.plan).configs)
    gpu |= train::resolve_device(c.train.device).is_cuda();
  return gpu ? std::min<int64_t>({available_cores(), 8}) : 1;
}

// This command again, once per extra process, without --runs-at-once and
// quiet (each run's lines still name it); their exits, worst first.
std::vector<pid_t> start_siblings(const std::vector<std::string>& argv, int64_t extra) {
  std::vector<std::string> args = {"experiment"};  // argv holds the command's flags, after its name
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--runs-at-once") {
      ++i;  // and its value
      continue;
    }
    if (argv[i].rfind("--runs-at-once=", 0) == 0) continue;
    args.push_back(argv[i]);
  }
  if (std::find(args.begin(), args.end(), "--quiet") == args.end()) args.push_back("--quiet");
  std::vector<pid_t> pids;
  for (int64_t k = 0; k < extra; ++k) pids.push_back(spawn_self(args));
  return pids;
}

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv,
                 {"out", "set", "data", "stages", "only", "rungs", "shard", "redo", "probe-length", "probe-words", "probe-layer",
                  "probe-seed", "parallel-runs", "runs-at-once"},
                 {"quick", "list", "report", "quiet", "findings", "overwrite"}, cli::Args::Positional::taken);
  if (args.has("findings")) return gather_findings(args);
  ORDO_USAGE_CHECK(!args.has("overwrite"), "--overwrite is for --findings (an experiment's folder is continued, never "
                   "replaced)");
  ORDO_USAGE_CHECK(args.positional().size() == 1, "give one folder of run configs (got ", args.positional().size(), ")");
  experiment::RunnerOptions o;
  o.plan.folder = args.positional()[0];
  o.plan.out = args.required("out");
  o.plan.overrides = args.all("set");
  for (const std::string& d : args.all("data")) {
    const size_t eq = d.find('=');
    ORDO_USAGE_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < d.size(), "flag --data expects TASK=DIR, got '", d,
                     "'");
    ORDO_USAGE_CHECK(o.plan.data.emplace(d.substr(0, eq), d.substr(eq + 1)).second, "flag --data names task ",
                     d.substr(0, eq), " twice");
  }
  if (args.has("stages")) o.plan.stages = comma_list("stages", args.str("stages", ""));
  o.plan.probe_words = args.integer("probe-words", -1, 1, 1 << 20);
  o.plan.probe_length = args.integer("probe-length", -1, 3, 1 << 16);
  o.plan.probe_seed = args.integer("probe-seed", -1, 0, INT64_MAX);
  o.plan.probe_layer = args.str("probe-layer", "");
  o.plan.quick = args.has("quick");
  o.list = args.has("list");
  o.report_only = args.has("report");
  o.quiet = args.has("quiet");
  o.parallel_runs = args.integer("parallel-runs", -1, 0, 4096);
  o.redo = args.str("redo", "");
  if (args.has("only")) o.only = comma_list("only", args.str("only", ""));
  if (args.has("rungs")) o.rungs = comma_list("rungs", args.str("rungs", ""));
  if (args.has("shard")) {
    const std::string s = args.str("shard", "");
    char* end = nullptr;
    const long i = std::strtol(s.c_str(), &end, 10);
    const long n = *end == '/' ? std::strtol(end + 1, &end, 10) : 0;
    ORDO_USAGE_CHECK(*end == '\0' && n >= 1 && i >= 1 && i <= n, "flag --shard expects I/N with 1 <= I <= N, got '", s,
                     "'");
    o.shard_index = static_cast<int>(i);
    o.shard_count = static_cast<int>(n);
  }
  ORDO_USAGE_CHECK(!(o.list && o.report_only), "give --list or --report, not both");
  const int64_t processes = runs_at_once(args, o);
  ORDO_USAGE_CHECK(processes == 1 || (!o.list && !o.report_only && o.redo.empty()), "--runs-at-once runs the plan's "
                   "runs; it does not go with --list, --report or --redo");
  // The siblings start after this process has checked the plan (so a bad one is said once) and take runs beside it.
  std::vector<pid_t> siblings;
  o.before_runs = [&] { siblings = start_siblings(argv, processes - 1); };
  int worst = 0;
  auto wait_for_siblings = [&] {
    for (size_t left = siblings.size(); left > 0;)
      if (const std::optional<ChildExit> e = wait_for_child(3600)) {
        if (std::find(siblings.begin(), siblings.end(), e->pid) == siblings.end()) continue;
        worst = std::max(worst, e->code);
        --left;
      }
  };
  experiment::ExperimentSummary s;
  try {
    s = experiment::run_experiment(o);
  } catch (...) {
    wait_for_siblings();  // never leave them running behind an error
    throw;
  }
  wait_for_siblings();
  if (o.list) return 0;
  if (s.interrupted || worst == 130) return 130;
  ORDO_CHECK(worst == 0, "ordo experiment: a process of --runs-at-once ended with status ", worst, " (its lines above "
             "say why); the same command continues what it left");
  if (!siblings.empty()) {  // the siblings' runs are finished now: count them, and write the report if it is due
    o.before_runs = nullptr;
    const experiment::ExperimentSummary all = experiment::run_experiment(o);
    std::printf("ordo experiment: %lld process(es) side by side; %lld run(s) complete%s\n",
                static_cast<long long>(siblings.size() + 1), static_cast<long long>(all.complete),
                report_written(all).c_str());
    return all.interrupted ? 130 : 0;
  }
  std::printf("ordo experiment: %lld run(s) worked on, %lld complete, %lld busy in another process%s\n",
              static_cast<long long>(s.ran), static_cast<long long>(s.complete), static_cast<long long>(s.busy),
              report_written(s).c_str());
  return 0;
}

cli::Register command(
    {"experiment", "a paper's experiment: every run config of a folder through its stages, beside the paper's tables",
     "FOLDER --out DIR [--set key=value ...] [--data TASK=DIR ...] [--quick] [--stages a,b] [--list]\n"
     "                [--only K,...] [--rungs R,...] [--shard I/N] [--report] [--redo STAGE] [--probe-length L]\n"
     "                [--probe-words N] [--probe-layer K|all] [--probe-seed S] [--parallel-runs N]\n"
     "                [--runs-at-once N|auto] [--quiet]\n"
     "       ordo experiment --findings REPORT... --out FILE [--overwrite]\n"
     "  FOLDER: run configs (*.json, in file-name order), the plan's stages (experiment.json: pretrain, probe,\n"
     "    analyze, tasks, layers, finetune, report; without it pretrain, probe, report) and the paper's tables\n"
     "    (paper_*.tsv). configs/papers/wang2021: Wang et al. 2021's Tables 2-5 and Figure 5.\n"
     "  --set        applied to every run config (e.g. --set train.steps=3000)\n"
     "  --data       a fine-tuning task's real data (GLUE or SQuAD as shipped, a SentEval file) instead of its\n"
     "               synthetic stand-in; TASK may be a Table 3 column (Wang & Chen 2020: mr, cr, subj, ...)\n"
     "  --quick      the plan's smoke test: every stage in minutes (give it its own --out)\n"
     "  --stages     only these stages (make table2: pretrain,probe,report)\n"
     "  --list       the runs, numbered, and the stages each has finished (with --only, --rungs or\n"
     "               --shard: the runs they select)\n"
     "  --only       these runs (numbers or names); --shard I/N every N-th from the I-th (a Slurm array)\n"
     "  --rungs      a compute ladder's runs of these rungs only (gpu: the rungs marked for a GPU, which are\n"
     "               otherwise left out on the CPU; tools/scale_gpu_rungs.sh runs them on a lent GPU)\n"
     "  --report     write the report of what is finished now\n"
     "  --redo       run STAGE (or finetune:TASK) and the stages after it again, on purpose\n"
     "  --probe-*    ordo probe's --length, --words, --layer, --seed for every run (the plan's otherwise)\n"
     "  --parallel-runs N  the fine-tuning grids' runs at once on the CPU (train.parallel_runs; 0: as many as\n"
     "               the cores hold at one thread each): the same results, sooner. Not a stage setting.\n"
     "  --runs-at-once N|auto  N processes take the runs side by side, each the next run no other holds\n"
     "               (auto: 1 on the CPU; on a GPU min(cores, 8), each its own CUDA context)\n"
     "  --findings   every REPORT folder's findings.json (written where the plan's folder has a claims.tsv:\n"
     "               each central claim of the paper with its verdict) gathered into one Markdown FILE\n"
     "               (make findings: docs/FINDINGS.md)\n"
     "  The same command again continues where it stopped; a stage finished with other settings is refused,\n"
     "  naming the key. Several processes may share DIR: a run another one is running is skipped.",
     run});

}  // namespace
