// The locality/symmetry paper's Table 2, its semantic-role swap (Shuffle-SR)
// read across an experiment's runs: for each role swap a paper table asks for
// (a column "TASK.SWAPPED.answers_changed"; the pairs in
// downstream::kRoleSwaps), each row's accuracy on the originals, its change
// under the swap and the answers the swap changes, per pretraining run.
//
// The paper: models are "extremely fragile against global swaps": accuracy
// falls when agent and patient are exchanged (BERT: -63.9 points on SNLI's
// Shuffle-SR). A model blind to word order answers each pair alike, so its
// answers change 0% and its accuracy falls by 100 - 2 x Original; one that
// reads the roles keeps its accuracy. The claim is tested on the plan's
// baseline: Student's one-sample t of (swapped - Original) over its
// pretraining runs, the paper's direction a fall; verdict "swap.TASK" for a
// claims.tsv's "section KEY". A baseline at chance on TASK tests nothing.
#pragma once

#include <string>
#include <vector>

#include "experiment/paper_table.h"
#include "experiment/plan.h"
#include "experiment/results.h"
#include "experiment/tables.h"

namespace ordo::experiment {

// "swap.": the verdicts' keys are "swap.TASK" ("swap.subject_number").
constexpr const char* kSwapVerdictPrefix = "swap.";

// Whether a paper table asks for a role swap's answers_changed.
bool has_role_swaps(const std::vector<PaperTable>& tables);

ReportSection role_swaps_across_runs(const Plan& plan, const std::vector<RunResults>& runs,
                                     const std::vector<PaperTable>& tables);

}  // namespace ordo::experiment
