// `ordo experiment`: an experiment's plan carried out, run by run and stage
// by stage, resumable and shardable (experiment/plan.h says what a plan is).
//
//   OUT/experiment.json      the plan, as last carried out
//   OUT/runs/<config>/       a run: what `ordo pretrain` makes, and beside it
//       probe/               what `ordo probe` makes        (stage probe)
//       analysis/            what `ordo analyze` makes      (stage analyze)
//       tasks/               what `ordo data tasks` makes   (stage tasks)
//       finetune/<task>/     what `ordo finetune` makes     (stage finetune, one grid per task)
//       stages.json          each finished stage: its settings, its wall time, when it ended
//   OUT/runs/.<config>.ordo-lock   while a process runs that run (base/output.h's OutputLock)
//   OUT/report/              ordo report over the runs, and each paper table beside ordo's
//                            (paper.md, paper.json, figures.md, figure5.svg; experiment/tables.h)
//
// Resumable: the same command again skips every stage a run has finished
// with the plan's settings, resumes a stopped pretraining from its
// checkpoint and a stopped fine-tuning grid from its finished seeds, and
// runs the rest. A stage finished with other settings (an edited config, a
// changed --set or probe flag) is refused, naming the run, the stage and the
// first differing key, before anything runs; --redo STAGE runs that stage
// and every stage after it again on purpose. Ctrl-C (or SIGTERM) stops the
// current stage as it stops alone (a checkpoint, the finished seeds kept).
//
// Beyond one machine: the runs are independent. --list prints them; --only
// K,... or --shard I/N runs a subset, so a Slurm job array or N machines on a
// shared file system run the experiment side by side; a run another process
// is running (its lock held) is skipped and said, a lock left by a process
// that ended is taken over. The report is written when every run has
// finished its stages, by whichever process finishes last, or on demand
// with --report (what is finished, the rest marked missing).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "experiment/plan.h"

namespace ordo::experiment {

struct RunnerOptions {
  PlanRequest plan;
  bool list = false;                // print the runs and their stages, run nothing
  std::vector<std::string> only;    // run these (1-based numbers or config names) only
  std::vector<std::string> rungs;   // a ladder's runs of these rungs only (a GPU rung's runs included on the CPU)
  int shard_index = 0, shard_count = 0;  // --shard I/N: the runs K with (K - 1) % N == I - 1
  bool report_only = false;         // gather the report of what is finished, run nothing
  std::string redo;                 // a stage to run again (with the ones after it), or "finetune:TASK"
  bool quiet = false;               // no progress lines from the stages
  // The fine-tuning stage's train.parallel_runs (its grid's runs at once on
  // the CPU); -1: the plan's. Not a setting of the stage: it changes no result.
  int64_t parallel_runs = -1;
  // Called once the plan is checked and OUT prepared, before the first run
  // (the command starts its --runs-at-once siblings there).
  std::function<void()> before_runs;
};

struct ExperimentSummary {
  int64_t ran = 0;              // runs this call worked on
  int64_t complete = 0;         // runs with every stage finished
  int64_t busy = 0;             // runs skipped: another process holds them
  bool interrupted = false;     // Ctrl-C / SIGTERM: stopped inside a stage
  std::string report;           // OUT/report, when written
  std::vector<std::string> report_files;  // the files written in it (index.html once a run is probed)
};

ExperimentSummary run_experiment(const RunnerOptions& options);

}  // namespace ordo::experiment
