// A PREDICTED step time on a real GPU: the roofline's figure (roofline.h) of
// each kernel class times that class's measured efficiency, measured/modeled,
// fitted on the logs of a lease of that GPU (docs/gpu_runs/).
//
//   measured  a step timed on the GPU: `ordo bench step --kernel-times` gives
//             one eager step's device time kernel by kernel (CUDA events
//             around each launch, named by the CUDA kernel), and the step's
//             wall time with and without a graph;
//   modeled   the same step's recorded kernel calls on the roofline (named by
//             ordo's backend kernel), summed by the same classes;
//   fitted    per class, ratio = (its kernels' measured time, less each
//             launch's share of the events' own cost) / its modeled time,
//             summed over every step the logs hold; and three step-wide
//             figures: the events' cost a launch (the event spans' sum less
//             the graphed step, over its launches), the gap a launch leaves
//             in an eager step, and the kernels the logs lump together under
//             "(the rest)" as a fraction of those they list;
//   predicted a step's recorded calls: Σ class ratio × class modeled time,
//             times 1 + that fraction; with a graph, nothing more (its
//             kernels back to back, as they ran); eager, plus a gap a launch.
//
// A class the logs never measured (the tensor-core tiles, the relative
// products) is predicted with its nearest measured class's ratio and flagged;
// so is a class whose kernels were rewritten after the binaries the logs
// timed (the calibration's "changed" lines): its fitted ratio is the old
// kernels', kept only to check the prediction against the logs themselves.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tensor/kernel_calls.h"
#include "tensor/roofline.h"

namespace ordo {

// The class of a recorded backend call ("products_bf16", "copies", "rows", ...).
std::string kernel_class(const KernelCall& call);

// The class of a CUDA kernel as `--kernel-times` names it ("cublas gemm
// (bf16)", "copy_rows_kernel<true>", ...): the class of the backend calls
// that launch it. Throws ordo::Error for a name it does not know.
std::string measured_kernel_class(const std::string& cuda_kernel);

// The class a class's ratio is taken from when the logs never measured it,
// or measured kernels it no longer runs (itself where no nearer class is
// named): the tiles' products are the bf16 products'.
std::string nearest_measured_class(const std::string& kernel_class);

// One step's recorded calls on the roofline, summed by class (no launch
// overhead), and the launches they make (at least one a call).
struct ClassTimes {
  std::map<std::string, double> seconds;
  std::map<std::string, double> calls;
  double launches = 0;
};
ClassTimes modeled_by_class(const std::vector<KernelCall>& calls, const RooflineMachine& machine);

// One step as a lease log gives it. label: "base 32 x 128 after". A step
// the log times whole, without a kernel table, has no kernels (checked
// against a prediction, not fitted).
struct MeasuredStep {
  std::string label;
  std::string source;                   // file:line of its kernel table
  ClassTimes kernels;                   // the listed kernels' event spans, by class
  double unlisted_seconds = 0;          // "(the rest)"
  double unlisted_calls = 0;
  double launches = 0;                  // the eager step's, as the table's header counts them
  double spans_seconds = 0;             // their spans' sum
  double graph_seconds = -1;            // the step with one graph launch (after); -1: not measured
  double eager_seconds = -1;            // the step launched kernel by kernel; -1: not measured
};

// The steps of a `ordo bench step` log of a GPU, `--kernel-times` for their
// kernels (several runs may follow one another in the file). Refuses,
// naming file and line, a log measured on the emulated GPU, a table row
// that does not parse, a kernel it cannot class, or a log without a step.
std::vector<MeasuredStep> parse_measured_log(const std::string& text, const std::string& source);

// The "<label>: MODELED by kernel class" tables `ordo bench step` prints,
// by label. Refuses, naming file and line, a malformed row or none at all.
std::map<std::string, ClassTimes> parse_modeled_log(const std::string& text, const std::string& source);

struct ClassRatio {
  double ratio = 0;                // measured device seconds / modeled seconds
  double measured_seconds = 0;     // summed over the steps fitted
  double modeled_seconds = 0;
};

struct Calibration {
  std::string device;                            // the GPU the logs measured
  std::vector<std::string> sources;              // the logs fitted
  std::map<std::string, ClassRatio> classes;
  std::map<std::string, std::string> fit_on;    // a class fitted on its steps ending in this word only
  // A class whose kernels changed after the measured binaries, and how (the
  // commit): today's code takes its nearest measured class's ratio.
  std::map<std::string, std::string> changed;
  double event_seconds_per_launch = 0;
  double eager_gap_seconds_per_launch = 0;
  double unlisted_fraction = 0;
};

// Fits the measured steps with a kernel table on their modeled twins (by
// label; each needs one). fit_on: a class fitted only on the steps whose
// label ends with the word given ("before", "after") — for logs whose
// modeled twins are of later code, the steps whose calls have not changed
// since; a class not named is fitted on every step. ordo::Error when no step
// has a kernel table, or a class has measured time but no modeled time to
// divide it by.
Calibration fit_calibration(const std::vector<MeasuredStep>& measured,
                            const std::map<std::string, ClassTimes>& modeled, const std::string& device,
                            const std::vector<std::string>& sources,
                            const std::map<std::string, std::string>& fit_on = {});

// The calibration file: "key value" lines, a "fit_on CLASS WORD" line a
// rule, a "changed CLASS WHY..." line a class rewritten since the lease, and
// one "class NAME RATIO MEASURED_MS MODELED_MS" line a class; '#'
// starts a comment.
std::string format_calibration(const Calibration& c);
Calibration parse_calibration(const std::string& text, const std::string& source);

struct ClassPrediction {
  std::string kernel_class;
  std::string ratio_from;   // the class whose ratio it takes (itself when measured)
  double modeled_seconds = 0, ratio = 0, predicted_seconds = 0;
};

struct Prediction {
  std::vector<ClassPrediction> classes;  // by class name
  double kernels_seconds = 0;            // Σ ratio × modeled, with the unlisted kernels' share
  double graph_seconds = 0;              // one graph launch a step
  double eager_seconds = 0;              // launched one by one
  bool flagged = false;                  // some class's ratio is a nearest class's
};
// of: which code the calls are of. current: this commit's, so a changed
// class takes its nearest measured class's ratio (flagged); measured_binaries:
// the code the logs timed (`ordo bench calibrate`'s check of them), every
// fitted class its own ratio.
enum class PredictionOf { current, measured_binaries };
Prediction predict(const ClassTimes& modeled, const Calibration& calibration,
                   PredictionOf of = PredictionOf::current);

}  // namespace ordo
