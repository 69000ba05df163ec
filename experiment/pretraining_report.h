// The locality/symmetry paper's Figure 2 (left) across an experiment's runs:
// layer 1's locality and symmetry (Eqs. 7-8, identical word probing,
// probe/indicators.h) at the weights as initialised (the step-0 checkpoint
// train.checkpoint_initial writes) and at the end of pretraining, from each
// run's analysis (analysis/indicator_trajectory.json, [CLS] and [SEP]
// included as the probe's Table 2 figures have them). The paper: "the three
// language models all become much more local and symmetrical after
// pre-training".
//
// Each row's change is taken pretraining run by pretraining run; the paper's
// claim is tested on the plan's baseline (BERT's learned table) by Student's
// one-sample t of those changes against 0, over its pretraining runs:
// verdicts "pretraining.locality" and "pretraining.symmetry" (a rise is the
// paper's direction), for a claims.tsv's "section KEY".
#pragma once

#include <vector>

#include "experiment/plan.h"
#include "experiment/results.h"
#include "experiment/tables.h"

namespace ordo::experiment {

constexpr const char* kPretrainingLocality = "pretraining.locality";
constexpr const char* kPretrainingSymmetry = "pretraining.symmetry";

// Whether any run's analysis has a step-0 point (the plan's configs set
// train.checkpoint_initial).
bool has_initial_indicators(const std::vector<RunResults>& runs);

ReportSection pretraining_across_runs(const Plan& plan, const std::vector<RunResults>& runs);

}  // namespace ordo::experiment
