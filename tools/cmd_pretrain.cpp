// `ordo pretrain`: pretrains a model from a run config (train/pretrain.h).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "parallel/communicator.h"
#include "tools/cli.h"
#include "tools/ranks.h"
#include "train/pretrain.h"

namespace {

// --resume RUN --set train.steps=N: the N, or -1 without --set; any other
// --set is refused (a run keeps its config).
int64_t extension(const ordo::cli::Args& args) {
  std::vector<std::string> sets = args.all("set");
  if (sets.empty()) return -1;
  const std::string key = "train.steps=";
  ORDO_USAGE_CHECK(sets.size() == 1 && sets[0].rfind(key, 0) == 0,
             "with --resume, --set takes only train.steps=N (to train the run further); the rest of the config "
             "is the run's own (RUN/config.json)");
  const std::string n = sets[0].substr(key.size());
  char* end = nullptr;
  errno = 0;
  const long long steps = std::strtoll(n.c_str(), &end, 10);
  ORDO_USAGE_CHECK(!n.empty() && *end == '\0' && errno == 0 && steps > 0, "--set train.steps=", n,
             ": expected a positive whole number of steps");
  return steps;
}

int train(const std::vector<std::string>& argv, ordo::parallel::Communicator* comm) {
  ordo::cli::Args args(argv, {"config", "set", "out", "resume", "stop-after"}, {"overwrite", "quiet"});
  ordo::train::PretrainOptions options;
  options.comm = comm;
  options.quiet = args.has("quiet");
  options.stop_after = args.integer("stop-after", -1, 1, INT64_MAX);
  ordo::train::RunSummary summary;
  if (args.has("resume")) {
    ORDO_USAGE_CHECK(!args.has("config") && !args.has("out") && !args.has("overwrite"),
               "--resume DIR continues the run with the config stored in DIR; it takes no --config, --out or "
               "--overwrite (only --set train.steps=N, to train it further)");
    options.out = args.required("resume");
    options.resume = true;
    options.extend_to = extension(args);
    summary = ordo::train::resume_pretrain(options);
  } else {
    options.out = args.required("out");
    options.overwrite = args.has("overwrite");
    ordo::train::RunConfig config = ordo::train::read_run_config(args.required("config"), args.all("set"));
    summary = ordo::train::pretrain(config, options);
  }
  return summary.interrupted ? 130 : 0;  // 128 + SIGINT, as a shell reports a Ctrl-C'd command
}

int run(const std::vector<std::string>& argv) {
  return ordo::tools::run_on_every_rank("ordo pretrain",
                                        [&](ordo::parallel::Communicator* comm) { return train(argv, comm); });
}

ordo::cli::Register command({"pretrain", "pretrain a BERT (or a causal decoder) from a run config",
                             "--config FILE.json [--set key=value ...] --out RUN_DIR [--overwrite] | --resume RUN_DIR"
                             " [--set train.steps=N] [--stop-after N] [--quiet]\n"
                             "  --resume RUN --set train.steps=N trains a run (finished or not) on to N steps: the\n"
                             "  warm-up keeps its steps, the linear decay is re-aimed at step N (the next step's\n"
                             "  learning rate is lr x (N - s) / (N - warm-up)); RUN/config.json is updated.\n"
                             "  Ctrl-C stops after the current step with a checkpoint and exits with status 130.\n"
                             "  Data parallel: mpirun -np N ordo pretrain ... (one process per GPU or CPU socket;\n"
                             "  each takes a share of every global batch of N x grad_accum x batch_size; rank 0 writes).",
                             run});

}  // namespace
