// `ordo analyze`: the analyses of learned positions of one pretraining run
// (probe/analyze_run.h says which, and what each file holds).
//
//   ordo analyze --run RUN_DIR --out DIR [--checkpoint step_N] [--seed S]
//                [--eval-sequences N] [--quiet]
//
// Writes CSV/JSON tables, PNG figures and DIR/index.json (what `ordo report`
// reads). Every mistake (a missing run, config or checkpoint, a bad flag)
// ends in one line naming it and exit 1, with nothing in DIR changed. An
// existing DIR is refused unless --overwrite, which replaces it whole.
#include <cstdio>

#include "base/error.h"
#include "probe/analyze_run.h"
#include "tools/cli.h"

namespace {

int run(const std::vector<std::string>& argv) {
  ordo::cli::Args args(argv, {"run", "out", "checkpoint", "seed", "eval-sequences"}, {"quiet", "overwrite"});
  args.expect_no_positional(" (flags are --run, --out, --checkpoint, --seed, --eval-sequences, --quiet, --overwrite)");
  ordo::probe::AnalyzeOptions o;
  o.run = args.required("run");
  o.out = args.required("out");
  o.checkpoint = args.str("checkpoint", "");
  o.seed = static_cast<uint64_t>(args.integer("seed", 1, 0, INT64_MAX));
  o.eval_sequences = args.integer("eval-sequences", 64, 1, 100000);
  o.quiet = args.has("quiet");
  o.overwrite = args.has("overwrite");
  ordo::probe::AnalyzeSummary s = ordo::probe::analyze_run(o);
  std::printf("analyze: %s at %s: %lld analyses, %lld skipped, %.1f s -> %s/index.json\n", s.variant.c_str(),
              s.checkpoint.c_str(), static_cast<long long>(s.analyses), static_cast<long long>(s.skipped), s.seconds,
              o.out.c_str());
  return 0;
}

ordo::cli::Register command({"analyze", "analyses of a run's learned positions: CSV/JSON, PNG and an index",
                             "--run RUN_DIR --out DIR [--checkpoint step_N] [--seed S] [--eval-sequences N] [--quiet] [--overwrite]\n"
                             "  --overwrite  replace DIR if it exists (whole: no file of the previous analysis stays)",
                             run});

}  // namespace
