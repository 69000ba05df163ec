// The generated sentences that read a report's figures (SPEC §4: every
// figure a report produces is read): each run's probed layer, the heatmaps
// of all runs, the indicators during pretraining and the loss curves.
//
// Wang et al. 2021 ("On Position Embeddings in BERT", ICLR 2021, OpenReview
// onxoVA9FxMw, Table 2) found the layer-1 attention of BERT-base local and
// near translation invariant with every position encoding, and uniform
// without one; each reading sets the runs beside that.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "report/report.h"

namespace ordo::report {

// A probed layer's shape: local (OPR over the first 20 offsets, without the
// special tokens, <= kLocalOpr) and translation invariant (AIV without them
// <= kInvariantAiv) is a diagonal band; uniform attention (every word
// position the same weight, without the special tokens) has no positional
// structure, and its AIV and OPR are tie artifacts.
constexpr double kLocalOpr = 0.2, kInvariantAiv = 0.1;
enum class Shape { band, local_only, invariant_only, neither, uniform };
Shape shape_of(const RunRecord& r);
Shape shape_of(double aiv, double opr);  // a layer that is not uniform

// The reading of a run's probed layer in one sentence, as its report section
// opens with it: its shape with AIV and OPR, and what the paper found.
std::string reading_of(const RunRecord& r);

// The reading of the heatmaps, one panel per run: the runs grouped by shape,
// by name, beside the paper's.
std::string heatmaps_reading(const std::vector<RunRecord>& runs);

// A run's layer-1 indicator `key` (probe::trajectory_indicators()) without
// the special tokens at each checkpoint of its analysis, as (step, value);
// errors name the trajectory file and the step at fault.
std::vector<std::pair<double, double>> trajectory_of(const RunRecord& r, const std::string& key);

// The reading of the indicators during pretraining: for each run with a
// trajectory, the checkpoint from which its layer 1 is a band to the end (or
// that it never becomes one), and the runs whose OPR over the first 20
// offsets still moves over the last quarter of the steps, by more than
// kStillMoving of its final value and kStillMovingAbsolute; "" when no run
// has a trajectory.
constexpr double kStillMoving = 0.10, kStillMovingAbsolute = 0.01;
std::string trajectory_reading(const std::vector<RunRecord>& runs);

// The reading of the loss figure: the runs whose held-out loss at the last
// evaluation lies more than kPastBestLoss (relative) above their lowest, so
// that they overfit the corpus before the end ("" when no run has two
// evaluations).
constexpr double kPastBestLoss = 0.01;
std::string loss_reading(const std::vector<RunRecord>& runs);

}  // namespace ordo::report
