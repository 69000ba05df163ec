// The report's sections beyond the paper tables of configurations and
// correlations (experiment/tables.h), as one registry: each entry says when
// a plan has the section and renders it from the runs and the folder's
// tables. Adding a paper table that needs its own reading is its data file
// (paper_*.tsv), one section file and one row here.
#pragma once

#include <string>
#include <vector>

#include "experiment/paper_table.h"
#include "experiment/plan.h"
#include "experiment/results.h"
#include "experiment/tables.h"

namespace ordo::experiment {

struct SectionInput {
  const Plan& plan;
  const std::vector<RunResults>& runs;
  const std::vector<PaperTable>& tables;
  // The folder's table whose first column is `first_column` ("relation", "run_attention", "mode"), if any.
  const PaperTable* keyed(const std::string& first_column) const;
};

struct ReportSectionEntry {
  const char* name;                                  // what it reads, for messages and docs
  bool (*wanted)(const SectionInput&);               // whether the plan has it
  ReportSection (*render)(const SectionInput&);
};

// In the order the report shows them.
const std::vector<ReportSectionEntry>& report_sections();

}  // namespace ordo::experiment
