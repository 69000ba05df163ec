// The locality/symmetry paper's Table 8 and Figure 5 across an experiment's
// runs (report.dependency_heads in experiment.json;
// configs/papers/locality_symmetry): every head read as a dependency parser
// by each run's analyze stage (RUN/analysis/dependency_heads.json,
// probe/dependency_heads.h), the named run's relations beside the paper's
// table of relations, cell by cell, with a generated reading of the paper's
// three findings (positional attention ahead on short relations, contextual
// on long ones, the two together best), and every run's summary. The first
// two are tested on the baseline's pretraining runs (report.baseline; every
// run is analysed, replicates too): per run, one attention's accuracy minus
// the other's on those relations, Student's t against no lead
// (judge_baseline_runs, experiment/tables.h).
//
//   dependency/table8.md, .json   the comparison and the summary of every run
//   dependency/figure5.svg        the named run's accuracy against relation length (its analysis's picture)
#pragma once

#include <string>
#include <vector>

#include "experiment/paper_table.h"
#include "experiment/plan.h"
#include "experiment/tables.h"
#include "experiment/results.h"
#include "report/report.h"

namespace ordo::experiment {

// The section verdicts: positional attention ahead of contextual on short
// relations (a mean length of at most 4 words), contextual ahead on long ones.
constexpr const char* kDependencyShort = "dependency.short";
constexpr const char* kDependencyLong = "dependency.long";

// `paper`: the folder's table of relations (null: ordo's side alone).
ReportSection dependency_heads_across_runs(const Plan& plan, const std::vector<RunResults>& runs,
                                            const PaperTable* paper);

}  // namespace ordo::experiment
