// The locality/symmetry paper's Table 9 and Figure 4 across an experiment's
// runs: each run's layers stage (RUN/layers/probing.json,
// probe/layer_probing.h) set beside the folder's keyed table of
// run_attention rows (paper_table9.tsv: bert.both = BERT, bert.contextual =
// BERT-c, ...), cell by cell, with a generated reading of the paper's
// findings (§4.1: the combination best; positional ahead on the syntactic
// tasks; contextual ahead on Tense and ObjNum). The last two are tested on the
// baseline's pretraining runs (report.baseline; each run probed by the layers
// stage, replicates too): per run, the mean over the tasks of one attention's
// accuracy minus the other's, by Student's t against no lead
// (judge_change_over_runs, experiment/tables.h).
//
//   layers/table9.md, .json   the comparison
//   layers/RUN.svg            Figure 4 for each probed run (accuracy against the layer)
#pragma once

#include <string>
#include <vector>

#include "experiment/paper_table.h"
#include "experiment/plan.h"
#include "experiment/tables.h"
#include "experiment/results.h"
#include "report/report.h"

namespace ordo::experiment {

// The section verdicts: positional above contextual on the syntactic tasks
// (tree_depth, top_constituents, bigram_shift), contextual above positional
// on the semantic ones (tense, object_number).
constexpr const char* kLayersSyntactic = "layers.syntactic";
constexpr const char* kLayersSemantic = "layers.semantic";

// `paper`: the folder's run_attention table (null: ordo's side alone).
ReportSection layer_probing_across_runs(const Plan& plan, const std::vector<RunResults>& runs, const PaperTable* paper);

}  // namespace ordo::experiment
