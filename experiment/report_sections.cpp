// The registry of report sections (experiment/report_sections.h).
#include "experiment/report_sections.h"

#include <algorithm>

#include "experiment/bench_report.h"
#include "experiment/dependency_report.h"
#include "experiment/layer_report.h"
#include "experiment/pretraining_report.h"
#include "experiment/scale_report.h"
#include "experiment/swap_report.h"
#include "experiment/sweep_report.h"
#include "experiment/wang_chen_report.h"

namespace ordo::experiment {

const PaperTable* SectionInput::keyed(const std::string& first_column) const {
  for (const PaperTable& t : tables)
    if (t.keyed == first_column) return &t;
  return nullptr;
}

namespace {

ReportSection wang_chen(const SectionInput& in) {
  const WangChenFiles across = wang_chen_across_runs(in.plan, in.runs);
  ReportSection s;
  s.files = across.files;
  s.html = across.html;
  s.markdown = across.markdown;
  return s;
}

}  // namespace

const std::vector<ReportSectionEntry>& report_sections() {
  static const std::vector<ReportSectionEntry> sections = {
      {"Wang & Chen 2020's tables across the runs (report.wang_chen)",
       [](const SectionInput& in) { return in.plan.wang_chen; }, wang_chen},
      {"heads as dependency parsers (report.dependency_heads, paper_*.tsv keyed by relation)",
       [](const SectionInput& in) { return !in.plan.dependency_run.empty(); },
       [](const SectionInput& in) { return dependency_heads_across_runs(in.plan, in.runs, in.keyed("relation")); }},
      {"frozen per-layer probing (the layers stage, paper_*.tsv keyed by run_attention)",
       [](const SectionInput& in) { return in.plan.has_stage("layers") || in.keyed("run_attention") != nullptr; },
       [](const SectionInput& in) { return layer_probing_across_runs(in.plan, in.runs, in.keyed("run_attention")); }},
      {"step times against the paper's (report.bench_pe, paper_*.tsv keyed by mode)",
       [](const SectionInput& in) { return in.plan.bench_pe; },
       [](const SectionInput& in) { return bench_pe_table3(in.plan, in.keyed("mode")); }},
      {"the disagreements against compute (disagreements.tsv, followed up the ladder)",
       [](const SectionInput& in) { return !in.plan.disagreements.empty(); },
       [](const SectionInput& in) { return scale_across_rungs(in.plan, in.runs); }},
      {"what a semantic-role swap changes (a paper_*.tsv column TASK.SWAPPED.answers_changed)",
       [](const SectionInput& in) { return has_role_swaps(in.tables); },
       [](const SectionInput& in) { return role_swaps_across_runs(in.plan, in.runs, in.tables); }},
      {"locality and symmetry before and after pretraining (train.checkpoint_initial's step-0 analysis)",
       [](const SectionInput& in) { return has_initial_indicators(in.runs); },
       [](const SectionInput& in) { return pretraining_across_runs(in.plan, in.runs); }},
      {"accuracy against locality and symmetry (finetune.sweep)",
       [](const SectionInput& in) {
         return std::any_of(in.plan.finetune.begin(), in.plan.finetune.end(), [](const FinetuneTask& t) { return t.sweep; });
       },
       [](const SectionInput& in) { return sweep_across_encoders(in.plan, in.runs); }},
  };
  return sections;
}

}  // namespace ordo::experiment
