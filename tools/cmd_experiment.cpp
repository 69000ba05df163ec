// `ordo experiment`: a folder of run configs pretrained, probed and reported
// beside the paper's values, resumable (report/experiment.h).
//
//   ordo experiment FOLDER --out DIR [--set key=value ...] [--probe-length L]
//                   [--probe-words N] [--probe-layer K|all] [--quiet]
#include <cstdio>

#include "report/experiment.h"
#include "tools/cli.h"

namespace {

using namespace ordo;

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"out", "set", "probe-length", "probe-words", "probe-layer", "probe-seed"}, {"quiet"});
  ORDO_USAGE_CHECK(args.positional().size() == 1, "give one folder of run configs (got ", args.positional().size(), ")");
  report::ExperimentOptions o;
  o.folder = args.positional()[0];
  o.out = args.required("out");
  o.overrides = args.all("set");
  o.probe.words = args.integer("probe-words", 300, 1, 1 << 20);
  o.probe.length = args.integer("probe-length", 0, 3, 1 << 16);
  o.probe.seed = static_cast<uint64_t>(args.integer("probe-seed", 1, 0, INT64_MAX));
  o.probe_layers = args.str("probe-layer", "1");
  o.quiet = args.has("quiet");
  const report::ExperimentSummary s = report::run_experiment(o);
  if (s.interrupted) return 130;
  std::printf("ordo experiment: %lld run(s) pretrained, %lld resumed, %lld already trained -> %s/index.html\n",
              static_cast<long long>(s.trained), static_cast<long long>(s.resumed), static_cast<long long>(s.skipped),
              s.report.c_str());
  return 0;
}

cli::Register command(
    {"experiment", "pretrain, probe and report every run config of a folder, beside the paper's values (resumable)",
     "FOLDER --out DIR [--set key=value ...] [--probe-length L] [--probe-words N] [--probe-layer K|all]\n"
     "                [--probe-seed S] [--quiet]\n"
     "  FOLDER: run configs (*.json), run in file-name order (configs/papers/wang2021_table2: Table 2's 13),\n"
     "          and optionally the paper's values (paper_*.tsv) to set beside ordo's\n"
     "  --set      applied to every config (e.g. --set train.steps=3000)\n"
     "  --probe-*  ordo probe's --length, --words, --layer, --seed for every run (layer 1, 300 words)\n"
     "  writes DIR/experiment.json (the plan), DIR/runs/<config>/ (each run, probe/ inside),\n"
     "  DIR/report/ (ordo report over the runs; paper.md and paper.json: ordo beside the paper, with a reading)\n"
     "  The same command again continues where it stopped: finished runs are skipped, unfinished ones resumed\n"
     "  from their latest checkpoint. A DIR of another plan (configs, --set, probe) is refused.",
     run});

}  // namespace
