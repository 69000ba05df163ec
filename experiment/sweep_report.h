// The locality/symmetry paper's Figure 2 (middle and right; Figure 7 for its
// second data set) across an experiment's sweep (finetune.sweep in
// experiment.json, experiment/plan.h): positional-only encoders (App. B.4,
// Listing 2: one layer, one head, attention = the fixed attenuated weights
// delta(w, s) of Eq. 9 applied to the input, no contextual term) trained
// from scratch on a classification stand-in; each encoder's locality and
// symmetry (Eqs. 7-8 of delta at the task's length) against its accuracy.
//
//   sweep/figure2.md, .json, .svg   the table, the two panels and the reading
#pragma once

#include <string>
#include <vector>

#include "experiment/plan.h"
#include "experiment/tables.h"
#include "experiment/results.h"
#include "report/report.h"

namespace ordo::experiment {

// Locality and symmetry (probe/indicators.h, Eqs. 7-8) of the attenuated
// weights delta(w, s) over positions 0..length-1.
std::pair<double, double> attenuated_locality_symmetry(double w, double s, int64_t length);

// The section's verdicts, for a claims.tsv's "section KEY" (experiment/findings.h): accuracy rises
// with locality (the middle panel) and with symmetry (the right one).
constexpr const char* kSweepLocality = "sweep.locality";
constexpr const char* kSweepSymmetry = "sweep.symmetry";

ReportSection sweep_across_encoders(const Plan& plan, const std::vector<RunResults>& runs);

}  // namespace ordo::experiment
