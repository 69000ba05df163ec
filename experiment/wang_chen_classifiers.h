// Wang & Chen 2020, Table 3 and Figure 4 across an experiment's runs: the
// 1-layer classifiers whose position table started as each run's (the plan's
// tasks with init_positions "run") or at random ("none"), set side by side.
//
//   Table 3   one row per initial table (the runs, and "random"), one column
//             per dataset (the tasks' "column"): accuracy in percent, mean ±
//             sample std over seeds, on SentEval's test partition where the
//             data has one (the paper reports test accuracy), else on the
//             main dev set, at the epoch the fine-tuning selects; an Average
//             column (per seed, the mean over the datasets shown, for rows
//             that have them all) and the datasets' mean length in words
//             (the paper's bottom row).
//   Figure 4  accuracy against the length bins of downstream/length_bins.h,
//             one line per initial table: per seed the mean over the
//             datasets of report.length_figure (the paper averages SUBJ, SST
//             and CR) of each bin's accuracy, then the mean over seeds.
//
// Files: wang_chen/table3.md, wang_chen/figure4.svg, wang_chen/figure4.json.
#pragma once

#include <string>
#include <vector>

#include "experiment/plan.h"
#include "experiment/results.h"
#include "experiment/wang_chen_report.h"

namespace ordo::experiment {

// Empty files and text when the plan has no task with init_positions.
WangChenFiles wang_chen_classifiers(const Plan& plan, const std::vector<RunResults>& runs);

}  // namespace ordo::experiment
