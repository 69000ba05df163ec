// A paper's central claims, each tested by one generated verdict
// (experiment/verdicts.h, SPEC §4): the report's findings.md and
// findings.json, and docs/FINDINGS.md gathered from every report.
//
// An experiment folder's claims.tsv lists them, one per line (tab-separated,
// '#' lines are comments and may cite the paper):
//   id      a short name, unique in the file ("ti_order")
//   item    the paper's table or figure ("Table 2")
//   claim   the claim in words, as the paper makes it
//   test    how ordo's runs test it, words separated by spaces:
//             rank TABLE COLUMN            the column's rank agreement with the paper's rows
//                                          (Kendall's tau_b, agrees only if > 0 with p < alpha)
//             row TABLE COLUMN ROW         ROW against the table's baseline, in the paper's
//                                          direction (the column's Holm-corrected test)
//             pair TABLE COLUMN A B        row A against row B, in the paper's direction: Welch's
//                                          test over the replicate that varies between them
//             columns TABLE ROW A B        row ROW's column A against its column B, in the
//                                          paper's direction: Welch's test as pair's (the
//                                          row's fine-tuning seeds in each column; its own
//                                          family)
//             families TABLE COLUMN A B    family A's rows against family B's, in the paper's
//                                          direction of their means: Welch's test over the
//                                          rows' values (each row one value)
//             higher KEY A B               row A's figure KEY above row B's, as the paper
//                                          states in words (a figure without values, Chen et
//                                          al.'s Figure 2: KEY positional_rank): Welch's test
//                                          over the two rows' pretraining runs, one value each
//                                          (a mean over tasks, glue.mean or senteval.mean, only
//                                          where every run of both rows averages the same tasks)
//             correlation TABLE IND COLUMN Pearson's r of indicator IND with COLUMN (Table 5's
//                                          shape), Holm over the column's indicators
//             section KEY                  a verdict a report section computes: figure5.monotonicity,
//                                          figure5.balance (experiment/figure5.h), sweep.locality,
//                                          sweep.symmetry (experiment/sweep_report.h),
//                                          pretraining.locality, pretraining.symmetry
//                                          (experiment/pretraining_report.h), swap.TASK
//                                          (experiment/swap_report.h)
//             untested WHY...              not testable here, and why (a dataset ordo cannot
//                                          have, a recipe not run)
//           TABLE is a paper table's name ("table2" for paper_table2.tsv); in a
//           family's name '_' stands for a space ("not_shared").
//   caveat  what applies beyond the verdict ("stand-in: word-order tasks"; "scale:
//           tiny, 4,000 steps"); "-" for none
// The Welch tests of pair, families and higher claims that compare the same
// figure (one table's column, or KEY in one item) are one family: each
// verdict reads its p after Holm's correction over the family's tests.
// A claim's verdict is "not testable here" wherever the data cannot test it
// (a row at chance, a uniform row, a figure not yet produced).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "base/json.h"
#include "experiment/paper_table.h"
#include "experiment/plan.h"
#include "experiment/results.h"
#include "experiment/verdicts.h"

namespace ordo::experiment {

struct Comparison;

struct Claim {
  std::string id, item, text, caveat;
  std::vector<std::string> test;  // the test's words
  int line = 0;                   // in claims.tsv, for messages
};

// A claims.tsv: its title (the first comment line: the paper, cited) and claims.
struct Claims {
  std::string title;
  std::vector<Claim> claims;
};

// Reads a claims.tsv: errors name the file and line (a missing field, an
// unknown test, an id used twice).
Claims read_claims(const std::string& path);
// Checks the claims against the plan and its paper tables before any run:
// every table, column, row, family and indicator they name exists.
void check_claims(const std::vector<Claim>& claims, const std::string& path, const std::vector<PaperTable>& tables,
                  const Plan& plan);

struct Finding {
  Claim claim;
  Judgement judgement;
  std::string effect;   // ordo's effect with its interval, or its statistic and p
  std::string paper;    // the paper's effect, where the test has one
  // A Welch test's evidence before its family's correction (p NaN: the claim
  // is not such a test, or was not tested).
  Evidence compared{0, 0, std::numeric_limits<double>::quiet_NaN(), ""};
};

// Each claim's verdict from the report's comparisons and sections (and,
// for "higher", the runs' own figures).
std::vector<Finding> judge_claims(const std::vector<Claim>& claims, const std::vector<Comparison>& comparisons,
                                  const std::vector<SectionVerdict>& sections, const Plan& plan,
                                  const std::vector<RunResults>& runs = {});

// The report's findings as Markdown (a table: claim, item, ordo's effect,
// verdict, caveat; then the verdict counts) and as JSON. `baseline` names the
// plan's baseline and its first pretraining run's held-out loss at every
// evaluation ({"config", "held_out_loss": [[step, loss], ...]}; null: none),
// so that reports whose baselines are the same pretraining can be told apart
// from reports with independent ones.
std::string findings_markdown(const std::vector<Finding>& findings, const std::string& title);
std::string findings_json(const std::vector<Finding>& findings, const std::string& paper,
                          const json::Value& baseline = json::Value());

// docs/FINDINGS.md: every report folder's findings.json, one section per
// paper and a table of verdict counts; errors name a folder without one.
// Reports whose baselines trained identically (the same held-out loss at
// every evaluation) are named together: their verdicts against the baseline
// rest on the same pretraining draws.
std::string gather_findings(const std::vector<std::string>& report_dirs);

}  // namespace ordo::experiment
