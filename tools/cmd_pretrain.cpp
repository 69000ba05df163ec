// `ordo pretrain`: pretrains a model from a run config (train/pretrain.h).
#include <cstdio>

#include "tools/cli.h"
#include "train/pretrain.h"

namespace {

int run(const std::vector<std::string>& argv) {
  ordo::cli::Args args(argv, {"config", "set", "out", "resume", "stop-after"}, {"overwrite", "quiet"});
  ordo::train::PretrainOptions options;
  options.quiet = args.has("quiet");
  options.stop_after = args.integer("stop-after", -1, 1, INT64_MAX);
  if (args.has("resume")) {
    ORDO_CHECK(!args.has("config") && !args.has("set") && !args.has("out") && !args.has("overwrite"),
               "--resume DIR continues the run with the config stored in DIR; it takes no --config, --set, --out or --overwrite");
    options.out = args.required("resume");
    options.resume = true;
    ordo::train::resume_pretrain(options);
    return 0;
  }
  options.out = args.required("out");
  options.overwrite = args.has("overwrite");
  ordo::train::RunConfig config = ordo::train::read_run_config(args.required("config"), args.all("set"));
  ordo::train::pretrain(config, options);
  return 0;
}

ordo::cli::Register command({"pretrain", "pretrain a BERT (or a causal decoder) from a run config",
                             "--config FILE.json [--set key=value ...] --out RUN_DIR [--overwrite] | --resume RUN_DIR"
                             " [--stop-after N] [--quiet]",
                             run});

}  // namespace
