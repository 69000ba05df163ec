// `ordo analyze`: the analyses of learned positions of one pretraining run
// (probe/analyze_run.h says which, and what each file holds).
//
//   ordo analyze --run RUN_DIR --out DIR [--checkpoint step_N] [--seed S]
//                [--eval-sequences N] [--quiet]
//   ordo analyze --model CHECKPOINT --out DIR [--positions N]    a checkpoint outside a run (HF's)
//   ordo analyze --models FOLDER --out DIR [--positions N]       Wang & Chen 2020's tables across models
//
// Writes CSV/JSON tables, SVG figures and DIR/index.json (what `ordo report`
// reads). Every mistake (a missing run, config or checkpoint, a bad flag)
// ends in one line naming it and exit 1, with nothing in DIR changed. An
// existing DIR is refused unless --overwrite, which replaces it whole.
#include <cstdio>

#include "base/error.h"
#include "probe/analyze_run.h"
#include "tools/cli.h"

namespace {

int run(const std::vector<std::string>& argv) {
  ordo::cli::Args args(argv, {"run", "model", "models", "out", "checkpoint", "seed", "eval-sequences", "positions"},
                      {"quiet", "overwrite"});
  const int given = args.has("run") + args.has("model") + args.has("models");
  ORDO_USAGE_CHECK(given == 1, "analyze: give one of --run RUN_DIR, --model CHECKPOINT, --models FOLDER");
  ORDO_USAGE_CHECK(!args.has("checkpoint") || args.has("run"),
                   "analyze: --checkpoint step_N picks a checkpoint of --run; a checkpoint folder is --model DIR");
  ORDO_USAGE_CHECK(!args.has("positions") || !args.has("run"),
                   "analyze: --positions applies to --model and --models; a run's analyses take the positions it "
                   "pretrained on");
  ordo::probe::AnalyzeOptions o;
  o.run = args.str("run", "");
  o.model_dir = args.str("model", "");
  o.models = args.str("models", "");
  o.positions = args.integer("positions", 512, 2, 1 << 20);
  o.out = args.required("out");
  o.checkpoint = args.str("checkpoint", "");
  o.seed = static_cast<uint64_t>(args.integer("seed", 1, 0, INT64_MAX));
  o.eval_sequences = args.integer("eval-sequences", 64, 1, 100000);
  o.quiet = args.has("quiet");
  o.overwrite = args.has("overwrite");
  if (!o.models.empty()) {
    ordo::probe::AnalyzeSummary s = ordo::probe::analyze_models(o);
    std::printf("analyze: Wang & Chen's tables over %s at %s (%lld without a position table), %.1f s -> %s/wang_chen.md\n",
                s.variant.c_str(), s.checkpoint.c_str(), static_cast<long long>(s.skipped), s.seconds, o.out.c_str());
    return 0;
  }
  ordo::probe::AnalyzeSummary s = ordo::probe::analyze_run(o);
  std::printf("analyze: %s at %s: %lld analyses, %lld skipped, %.1f s -> %s/index.json\n", s.variant.c_str(),
              s.checkpoint.c_str(), static_cast<long long>(s.analyses), static_cast<long long>(s.skipped), s.seconds,
              o.out.c_str());
  return 0;
}

ordo::cli::Register command({"analyze", "analyses of a run's or a checkpoint's learned positions; Wang & Chen's tables across models",
                             "--run RUN_DIR --out DIR [--checkpoint step_N] [--seed S] [--eval-sequences N] [--quiet] [--overwrite]\n"
                             "  or  --model CHECKPOINT --out DIR [--positions N]   a checkpoint outside a run (an HF\n"
                             "       BERT, RoBERTa or GPT-2 folder, a bare encoder, a fine-tuned model: its task head left\n"
                             "       out): what needs a run is listed as skipped\n"
                             "  or  --models FOLDER --out DIR [--positions N]      Wang & Chen 2020's Tables 1-2 and\n"
                             "       Figures 1-3 across every checkpoint or run in FOLDER (wang_chen.md, .csv, .json, SVGs)\n"
                             "  --positions N  rows of each position table analysed (default 512, as Wang & Chen)\n"
                             "  --overwrite  replace DIR if it exists (whole: no file of the previous analysis stays)",
                             run});

}  // namespace
