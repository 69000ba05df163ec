// Wang & Chen 2020's comparisons across an experiment's runs (report.wang_chen
// in experiment.json; configs/papers/wang_chen2020): one table and one figure
// grid for all the runs, as the paper lays them out, where each run's own
// `ordo analyze` has only itself.
//
//   wang_chen/wang_chen.md, .csv, .json   Tables 1-2: absolute position regression (MAE) and relative
//                                         order (error rate) per run's input table, with the fixed
//                                         sinusoid and a Gaussian table as controls (probe::wang_chen_of)
//   wang_chen/wang_chen_cosine.svg        Figures 1 and 3: each table's position-wise cosine similarity
//   wang_chen/wang_chen_informativeness.svg  Figure 2: the cumulative share of the top-k singular values
//   wang_chen/skip_position_attack.md     Table 4: each run's held-out loss and perplexity with positions
//                                         0, 1, 2, ... and 0, c, 2c, ... on the same windows (its analyze
//                                         stage's skip_position_attack.json), side by side
//   wang_chen/table3.md, figure4.svg/.json  Table 3 and Figure 4: the classifiers started from each run's
//                                         table (experiment/wang_chen_classifiers.h)
#pragma once

#include <string>
#include <vector>

#include "experiment/plan.h"
#include "experiment/results.h"
#include "experiment/tables.h"
#include "probe/wang_chen.h"
#include "report/report.h"

namespace ordo::experiment {

struct WangChenFiles {
  std::vector<report::OutputFile> files;
  std::string html;      // the section for index.html
  std::string markdown;  // the same for paper.md
};

// The rows pretrained more than once (the plan's replicates): each of Wang &
// Chen's figures (results.h: position_mae, order_error, components_90,
// skip_perplexity_ratio) and the accuracy of each classifier the replicates
// fine-tune as mean ± std over the pretraining runs, the classifier's beside
// the first run's spread over its fine-tuning seeds.
TextTable wang_chen_replicates(const Plan& plan, const std::vector<RunResults>& runs);

// The generated readings of Figures 1 and 3 (each table's mean cosine of two
// positions d apart: its value at d = 1, its lowest over d <= half the
// positions, how far it rises again after; the paper calls the encoders'
// tables local and GPT-2's and the sinusoid's periodic, by eye, so no
// verdict) and of Figure 2 (each table's components for 90 %, beside the
// paper's order, which the Findings judge over the pretraining runs).
std::vector<std::string> wang_chen_figure_readings(const std::vector<probe::WangChenRow>& rows);

// The runs that have finished pretraining, compared; runs without an input
// table (relative-only variants) are listed as skipped, runs without an
// analyze stage have no row in Table 4.
WangChenFiles wang_chen_across_runs(const Plan& plan, const std::vector<RunResults>& runs);

}  // namespace ordo::experiment
