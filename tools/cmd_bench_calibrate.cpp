// `ordo bench calibrate`: fits the GPU calibration (tensor/gpu_calibration.h)
// on a lease's logs, and checks its prediction against every step they timed.
//
//   --measured LOG   `ordo bench step --device cuda [--parts] --kernel-times`
//                    output of a real GPU: fitted on its kernel tables;
//   --check LOG      more such logs, checked only (another commit's binaries:
//                    their error includes the code's changes since);
//   --modeled LOG    `ordo bench step --device cpu --classes` output of the
//                    same commit (or the nearest one, said so in --note), the
//                    same configs and shapes: each step's MODELED classes;
//   --changed C=WHY  a class whose kernels were rewritten after the measured
//                    binaries (WHY: how, the commit): this code's steps take
//                    its nearest measured class's ratio, flagged;
//   --out FILE       the fitted calibration, written atomically.
#include <cmath>
#include <cstdio>

#include "base/file_io.h"
#include "tensor/gpu_calibration.h"
#include "tools/bench.h"
#include "tools/cli.h"

namespace {

using namespace ordo;

std::string fixed(double v, int d) { return bench::fixed(v, d); }

// "12.3 / 13.9 (-11.5%)": predicted / measured and the prediction's error.
std::string against(double predicted, double measured) {
  if (measured < 0) return "- (not measured)";
  return fixed(1e3 * predicted, 2) + " / " + fixed(1e3 * measured, 2) + " (" +
         (predicted >= measured ? "+" : "") + fixed(100 * (predicted / measured - 1), 1) + "%)";
}

void check(const std::string& title, const std::vector<MeasuredStep>& steps,
           const std::map<std::string, ClassTimes>& modeled, const Calibration& calibration) {
  std::printf("\n%s: PREDICTED / MEASURED step ms (error)\n", title.c_str());
  bench::Table table({"step", "one graph launch", "launched one by one", "kernels' device time", "flagged"});
  for (const MeasuredStep& s : steps) {
    auto m = modeled.find(s.label);
    if (m == modeled.end()) {
      table.add({s.label, "(no modeled twin)", "", "", ""});
      continue;
    }
    // The logs' own steps: what their binaries ran, each fitted class its own ratio.
    const Prediction p = predict(m->second, calibration, PredictionOf::measured_binaries);
    // The kernels' device time: the event spans less their own cost.
    const double device =
        s.kernels.seconds.empty() ? -1 : s.spans_seconds - s.launches * calibration.event_seconds_per_launch;
    const bool graphed = s.label.size() > 6 && s.label.compare(s.label.size() - 6, 6, " after") == 0;
    table.add({s.label, graphed ? against(p.graph_seconds, s.graph_seconds) : "-",
               against(p.eager_seconds, s.eager_seconds), against(p.kernels_seconds, device),
               p.flagged ? "yes" : "no"});
  }
  table.print();
}

// --predict: each modeled step's PREDICTED ms under a calibration file.
int predict_only(const cli::Args& args) {
  const std::string path =
      args.str("calibration", std::string(ORDO_SOURCE_DIR) + "/docs/gpu_runs/calibration_h200.txt");
  const Calibration c = parse_calibration(read_file(path), path);
  std::printf("PREDICTED, not measured, for %s (%s): step ms\n", c.device.c_str(), path.c_str());
  bench::Table table({"step", "one graph launch", "launched one by one", "flagged classes"});
  for (const std::string& log : args.all("predict"))
    for (const auto& [label, times] : parse_modeled_log(read_file(log), log)) {
      const Prediction p = predict(times, c);
      std::string flagged;
      for (const ClassPrediction& k : p.classes)
        if (k.ratio_from != k.kernel_class) flagged += (flagged.empty() ? "" : ", ") + k.kernel_class + " as " + k.ratio_from;
      const bool graphed = label.size() > 6 && label.compare(label.size() - 6, 6, " after") == 0;
      table.add({label, graphed ? fixed(1e3 * p.graph_seconds, 2) : "-", fixed(1e3 * p.eager_seconds, 2),
                 flagged.empty() ? "none" : flagged});
    }
  table.print();
  return 0;
}

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv,
                 {"measured", "check", "modeled", "out", "device", "note", "fit-on", "changed", "predict",
                  "calibration"},
                 {});
  if (!args.all("predict").empty()) return predict_only(args);
  ORDO_CHECK(!args.all("measured").empty() && !args.all("modeled").empty(),
             "bench calibrate: give --measured LOG (a GPU's `ordo bench step --kernel-times`) and --modeled LOG "
             "(`ordo bench step --device cpu --classes` of the same steps)");
  std::vector<MeasuredStep> measured, checked;
  std::vector<std::string> sources;
  for (const std::string& path : args.all("measured")) {
    for (MeasuredStep& s : parse_measured_log(read_file(path), path)) measured.push_back(s);
    sources.push_back("measured " + path);
  }
  for (const std::string& path : args.all("check"))
    for (MeasuredStep& s : parse_measured_log(read_file(path), path)) checked.push_back(s);
  std::map<std::string, ClassTimes> modeled;
  for (const std::string& path : args.all("modeled")) {
    for (auto& [label, times] : parse_modeled_log(read_file(path), path)) modeled[label] = times;
    sources.push_back("modeled " + path);
  }
  if (args.has("note")) sources.push_back("note " + args.str("note", ""));
  std::map<std::string, std::string> fit_on;
  for (const std::string& rule : args.all("fit-on")) {
    const size_t eq = rule.find('=');
    ORDO_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < rule.size(), "bench calibrate: --fit-on takes "
               "CLASS=WORD (a class fitted only on the steps whose label ends in WORD: before, after), not '", rule, "'");
    fit_on[rule.substr(0, eq)] = rule.substr(eq + 1);
  }
  Calibration c = fit_calibration(measured, modeled, args.str("device", "NVIDIA H200"), sources, fit_on);
  for (const std::string& rule : args.all("changed")) {
    const size_t eq = rule.find('=');
    ORDO_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < rule.size(),
               "bench calibrate: --changed takes CLASS=WHY (a class whose kernels were rewritten after the measured "
               "binaries, and how), not '", rule, "'");
    c.changed[rule.substr(0, eq)] = rule.substr(eq + 1);
  }

  std::printf("ordo bench calibrate: per kernel class, MEASURED device time (event spans less %.2f us a launch, the\n"
              "events' own cost) / MODELED roofline time, summed over the steps fitted; '(the rest)' adds %.2f%%;\n"
              "an eager step %.2f us a launch\n",
              1e6 * c.event_seconds_per_launch, 100 * c.unlisted_fraction, 1e6 * c.eager_gap_seconds_per_launch);
  bench::Table table({"class", "measured ms", "modeled ms", "ratio"});
  for (const auto& [name, r] : c.classes)
    table.add({name, fixed(1e3 * r.measured_seconds, 3), fixed(1e3 * r.modeled_seconds, 3), fixed(r.ratio, 2)});
  table.print();
  check("fitted steps", measured, modeled, c);
  if (!checked.empty()) check("checked steps (not fitted)", checked, modeled, c);
  if (args.has("out")) {
    write_file_atomic(args.str("out", ""), format_calibration(c));
    std::printf("\nwrote %s\n", args.str("out", "").c_str());
  }
  return 0;
}

cli::Register command({"bench calibrate",
                       "fit the GPU calibration (measured/modeled per kernel class) on a lease's logs, and check its "
                       "PREDICTED steps against the MEASURED ones",
                       "--measured LOG ... --modeled LOG ... [--check LOG ...] [--fit-on CLASS=WORD ...]"
                       " [--changed CLASS=WHY ...] [--device NAME] [--note TEXT] [--out FILE]\n"
                       "  |  --predict LOG ... [--calibration FILE]\n"
                       "  --predict: each step of LOG (`ordo bench step --classes` output) PREDICTED by the\n"
                       "  calibration (default docs/gpu_runs/calibration_h200.txt), nothing fitted;\n"
                       "  --fit-on: that class fitted only on the steps whose label ends in WORD (before, after):\n"
                       "  where the modeled log is of later code, the steps whose calls have not changed since;\n"
                       "  --changed: that class's kernels were rewritten after the measured binaries (WHY: how):\n"
                       "  this code's steps take its nearest measured class's ratio (flagged), the logs' own its own;\n"
                       "  --measured: `ordo bench step --device cuda --parts --kernel-times` output of a GPU (fitted);\n"
                       "  --check: more such logs, compared with the prediction only;\n"
                       "  --modeled: `ordo bench step --device cpu --classes` output, the same configs and shapes",
                       run});

}  // namespace
