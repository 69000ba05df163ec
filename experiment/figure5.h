// Wang et al. 2021's Figure 5 across an experiment's runs: Pearson's r of
// each score with OPR over the first k offsets (left panel) and with DB over
// the first l offsets (right panel), k and l = 1 .. the runs' longest range,
// over the runs with a position encoding (the paper's footnote 11), and its
// generated reading with two verdicts (experiment/verdicts.h).
//
// "On Position Embeddings in BERT" (Benyou Wang, Lifeng Shang, Christina
// Lioma, Xin Jiang, Hao Yang, Qun Liu, Jakob Grue Simonsen; ICLR 2021;
// OpenReview onxoVA9FxMw), Appendix C, reads its Figure 5 so:
//   - monotonicity: OPR over "nearly 20-55 offsets" correlates most with span
//     prediction, |r| above 0.9, and negatively ("violating monotonicity ...
//     is harmful"): verdict "figure5.monotonicity", on the SQuAD column;
//   - direction balance: within a small offset range r exceeds 0.5 and falls
//     as the range grows ("more attending to preceding tokens ... leads to
//     better performance"): verdict "figure5.balance", on the GLUE mean (the
//     SQuAD column where there is none), over l = 1..5 ("neighbouring tokens").
// Each claim holds over a range of offsets, so its test is an
// intersection-union test: the claim's sign at every offset of the range,
// each r significant on its own (the largest p of the range is the claim's
// p); one offset of the other sign and the range is not significant. The
// range stops at the longest the runs measured.
#pragma once

#include <string>
#include <vector>

#include "experiment/plan.h"
#include "experiment/results.h"
#include "experiment/tables.h"

namespace ordo::experiment {

// The section's verdicts, for a claims.tsv's "section KEY" (experiment/findings.h).
constexpr const char* kFigure5Monotonicity = "figure5.monotonicity";
constexpr const char* kFigure5Balance = "figure5.balance";

// The ranges the paper names, in offsets.
constexpr int kMonotonicityFirst = 20, kMonotonicityLast = 55;
constexpr int kBalanceFirst = 1, kBalanceLast = 5;

// One score's correlation at each offset range: by_range[k - 1] for the first k.
struct RangeCorrelations {
  std::string column;
  std::vector<Correlation> by_range;
};

// The claim over offsets [first, last] of the correlations, with `sign` the
// paper's (-1 or +1): its verdict (key, judgement, effect, the paper's
// effect) by the rule above.
SectionVerdict range_verdict(const std::string& key, const RangeCorrelations& c, int first, int last, int sign,
                             const std::string& paper, double alpha);

// The reading's lines (one per panel and score, then each claim with its
// verdict) and the two verdicts, from every score's correlations.
struct Figure5Reading {
  std::vector<std::string> lines;
  std::vector<SectionVerdict> verdicts;
};
Figure5Reading read_figure5(const std::vector<RangeCorrelations>& monotonicity,
                            const std::vector<RangeCorrelations>& balance, double alpha);

// figure5.svg and figure5.json (each score's r at every range), the HTML and
// Markdown (for figures.md) that show and read them, and the two verdicts;
// empty when no run has indicators by range.
ReportSection figure5_section(const std::vector<RunResults>& runs, const std::vector<std::string>& columns,
                              const Plan& plan);

}  // namespace ordo::experiment
