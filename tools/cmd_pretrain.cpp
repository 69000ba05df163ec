// `ordo pretrain`: pretrains a model from a run config (tasks/pretrain.h).
#include <cstdio>

#include "tasks/pretrain.h"
#include "tools/cli.h"

namespace {

int run(const std::vector<std::string>& argv) {
  ordo::cli::Args args(argv, {"config", "set", "out", "resume", "stop-after"}, {"overwrite", "quiet"});
  ordo::tasks::PretrainOptions options;
  options.quiet = args.has("quiet");
  options.stop_after = args.integer("stop-after", -1, 1, INT64_MAX);
  if (args.has("resume")) {
    ORDO_CHECK(!args.has("config") && !args.has("set") && !args.has("out") && !args.has("overwrite"),
               "--resume DIR continues the run with the config stored in DIR; it takes no --config, --set, --out or --overwrite");
    options.out = args.required("resume");
    options.resume = true;
    ordo::tasks::resume_pretrain(options);
    return 0;
  }
  options.out = args.required("out");
  options.overwrite = args.has("overwrite");
  ordo::tasks::RunConfig config = ordo::tasks::read_run_config(args.required("config"), args.all("set"));
  ordo::tasks::pretrain(config, options);
  return 0;
}

ordo::cli::Register command({"pretrain", "pretrain a BERT (or a causal decoder) from a run config",
                             "--config FILE.json [--set key=value ...] --out RUN_DIR [--overwrite] | --resume RUN_DIR"
                             " [--stop-after N] [--quiet]",
                             run});

}  // namespace
