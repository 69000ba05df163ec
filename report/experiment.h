// An experiment: every run config of a folder pretrained, probed and reported
// side by side, beside the paper's own values — Wang et al. 2021's Table 2 by
// one command (`ordo experiment configs/papers/wang2021_table2 --out OUT`).
//
//   OUT/experiment.json   the plan: the folder, its configs in order, the --set
//                         overrides given to all of them, the probe's settings
//   OUT/runs/<config>/    each config's run (what `ordo pretrain` makes), with
//                         probe/ (what `ordo probe` makes) inside it
//   OUT/report/           `ordo report` over the runs, in the configs' order,
//                         and when FOLDER holds a paper table (paper_*.tsv,
//                         report/paper_table.h) paper.md / paper.json: ordo's
//                         indicators beside the paper's with a generated
//                         reading, also at the top of index.html
//
// One run after another, and resumable: the same command run again continues
// where it stopped. A run that is trained to its last step and probed is
// skipped; a run with a checkpoint short of its last step is resumed from it
// (`ordo pretrain --resume`); a run without a checkpoint starts again. Ctrl-C
// stops the current run after a checkpoint, as `ordo pretrain` does.
//
// A mixed set is refused: an OUT made by another plan (other configs, other
// --set, another probe) or holding a run whose stored config is no longer
// what its file and the overrides resolve to (an edited config) is an error
// naming what differs, before anything is trained or written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "probe/probe.h"

namespace ordo::report {

struct ExperimentOptions {
  std::string folder;                  // the run configs (*.json), run in file-name order
  std::string out;
  std::vector<std::string> overrides;  // --set key=value, for every config
  probe::ProbeOptions probe;           // words, length (0: the default), seed
  std::string probe_layers = "1";      // a layer (1-based) or "all"
  bool quiet = false;                  // no progress lines from the runs
};

struct ExperimentSummary {
  int64_t trained = 0, resumed = 0, skipped = 0;  // runs by what this call did to them
  bool interrupted = false;                       // Ctrl-C: stopped after a checkpoint
  std::string report;                             // OUT/report, when written
};

// The run configs of a folder, in order (file names without ".json"); an
// error when it has none.
std::vector<std::string> experiment_configs(const std::string& folder);

ExperimentSummary run_experiment(const ExperimentOptions& options);

}  // namespace ordo::report
