// `ordo report`: several runs side by side (report/report.h).
//
//   ordo report RUN_DIR... --out REPORT_DIR
//
// Each RUN_DIR must hold probe/ (ordo probe --checkpoint RUN_DIR --out
// RUN_DIR/probe); config.json, metrics.jsonl and analysis/ (ordo analyze)
// are used when present. Writes REPORT_DIR/index.html (static: it links only
// files beside it), table.{md,csv,json}, heatmaps.svg and runs/<n>_<variant>/.
// Every run is read and every file rendered before the first is written: a
// bad RUN_DIR ends in one line naming it, exit 1, and REPORT_DIR untouched.
// An existing REPORT_DIR is refused unless --overwrite, which replaces it whole.
#include <cstdio>

#include "base/output.h"
#include "report/report.h"
#include "tools/cli.h"

namespace {

using namespace ordo;

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"out"}, {"overwrite"}, cli::Args::Positional::taken);
  const std::string out = args.required("out");
  std::vector<InputPath> inputs;
  for (const std::string& p : args.positional()) {
    ORDO_USAGE_CHECK(p.rfind("--", 0) != 0, "unexpected flag '", p, "'");
    inputs.push_back({p, "RUN_DIR"});
  }
  check_output(out, OutputKind::folder, args.has("overwrite"), inputs);
  std::vector<report::RunRecord> runs = report::read_runs(args.positional());
  std::vector<report::OutputFile> files = report::render_report(runs);
  report::write_report(out, files);
  std::printf("ordo report: %zu run%s -> %s/index.html\n", runs.size(), runs.size() == 1 ? "" : "s", out.c_str());
  return 0;
}

cli::Register command({"report", "one report of several runs: the indicator table, heatmaps and analyses as HTML",
                       "RUN_DIR... --out REPORT_DIR [--overwrite]\n"
                       "  RUN_DIR: a run (ordo pretrain --out RUN_DIR) probed with ordo probe --checkpoint RUN_DIR\n"
                       "           --out RUN_DIR/probe; RUN_DIR/analysis (ordo analyze) is included when present\n"
                       "  --overwrite  replace REPORT_DIR if it exists (whole: no file of the previous report stays)\n"
                       "  writes REPORT_DIR/index.html, table.md, table.csv, table.json, heatmaps.svg, runs/",
                       run});

}  // namespace
