// `ordo experiment`: a folder of run configs carried through the stages its
// plan names — pretrained, probed, analysed, fine-tuned — and reported beside
// the paper's tables; resumable and shardable (experiment/runner.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/file_io.h"
#include "base/output.h"
#include "experiment/findings.h"
#include "experiment/runner.h"
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
  for (const char* flag : {"set", "data", "stages", "only", "shard", "redo", "probe-length", "probe-words",
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

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv,
                 {"out", "set", "data", "stages", "only", "shard", "redo", "probe-length", "probe-words", "probe-layer",
                  "probe-seed", "parallel-runs"},
                 {"quick", "list", "report", "quiet", "findings", "overwrite"});
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
  const experiment::ExperimentSummary s = experiment::run_experiment(o);
  if (o.list) return 0;
  if (s.interrupted) return 130;
  std::printf("ordo experiment: %lld run(s) worked on, %lld complete, %lld busy in another process%s\n",
              static_cast<long long>(s.ran), static_cast<long long>(s.complete), static_cast<long long>(s.busy),
              report_written(s).c_str());
  return 0;
}

cli::Register command(
    {"experiment", "a paper's experiment: every run config of a folder through its stages, beside the paper's tables",
     "FOLDER --out DIR [--set key=value ...] [--data TASK=DIR ...] [--quick] [--stages a,b] [--list]\n"
     "                [--only K,...] [--shard I/N] [--report] [--redo STAGE] [--probe-length L] [--probe-words N]\n"
     "                [--probe-layer K|all] [--probe-seed S] [--parallel-runs N] [--quiet]\n"
     "       ordo experiment --findings REPORT... --out FILE [--overwrite]\n"
     "  FOLDER: run configs (*.json, in file-name order), the plan's stages (experiment.json: pretrain, probe,\n"
     "    analyze, tasks, layers, finetune, report; without it pretrain, probe, report) and the paper's tables\n"
     "    (paper_*.tsv). configs/papers/wang2021: Wang et al. 2021's Tables 2-5 and Figure 5.\n"
     "  --set        applied to every run config (e.g. --set train.steps=3000)\n"
     "  --data       a fine-tuning task's real data (GLUE or SQuAD as shipped, a SentEval file) instead of its\n"
     "               synthetic stand-in; TASK may be a Table 3 column (Wang & Chen 2020: mr, cr, subj, ...)\n"
     "  --quick      the plan's smoke test: every stage in minutes (give it its own --out)\n"
     "  --stages     only these stages (make table2: pretrain,probe,report)\n"
     "  --list       the runs, numbered, and the stages each has finished\n"
     "  --only       these runs (numbers or names); --shard I/N every N-th from the I-th (a Slurm array)\n"
     "  --report     write the report of what is finished now\n"
     "  --redo       run STAGE (or finetune:TASK) and the stages after it again, on purpose\n"
     "  --probe-*    ordo probe's --length, --words, --layer, --seed for every run (the plan's otherwise)\n"
     "  --parallel-runs N  the fine-tuning grids' runs at once on the CPU (train.parallel_runs; 0: as many as\n"
     "               the cores hold at one thread each): the same results, sooner. Not a stage setting.\n"
     "  --findings   every REPORT folder's findings.json (written where the plan's folder has a claims.tsv:\n"
     "               each central claim of the paper with its verdict) gathered into one Markdown FILE\n"
     "               (make findings: docs/FINDINGS.md)\n"
     "  The same command again continues where it stopped; a stage finished with other settings is refused,\n"
     "  naming the key. Several processes may share DIR: a run another one is running is skipped.",
     run});

}  // namespace
