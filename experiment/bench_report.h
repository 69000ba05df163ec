// Chen et al. 2021's Table 3 in an experiment's report (report.bench_pe in
// experiment.json; configs/papers/chen2021): the training and inference
// time of Shaw et al. (keys and values) and TUPE relative to REL-SCALAR, as
// `ordo bench pe --json OUT/bench_pe.json` measured them (make chen2021 runs
// it after the experiment), beside the folder's keyed table of modes
// (paper_table3.tsv: training.base, inference.small, ...), with a generated
// reading of the paper's finding (REL-SCALAR cheapest, Shaw dearest, more so
// at inference).
//
//   bench/table3.md, .json   the comparison
#pragma once

#include <string>
#include <vector>

#include "experiment/paper_table.h"
#include "experiment/plan.h"
#include "experiment/tables.h"
#include "report/report.h"

namespace ordo::experiment {

// `paper`: the folder's table of modes (null: ordo's side alone).
ReportSection bench_pe_table3(const Plan& plan, const PaperTable* paper);

}  // namespace ordo::experiment
