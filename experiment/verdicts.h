// The rules that turn ordo's numbers into a verdict on a paper's claim, in
// one place (SPEC §4, "Reading a reproduction"); every report's generated
// verdict comes from here.
//
// A claim is a direction: one row better than another, an indicator
// correlated with a score, ordo's rows ordered as the paper's. ordo's effect
// is signed the same way as the paper's; its p-value is the one after the
// correction of its family (Holm's, experiment/statistics.h). Then:
//   holds                        same direction, p < alpha
//   consistent, not significant  same direction, p >= alpha
//   contradicted                 opposite direction, p < alpha
//   inconclusive                 opposite direction (or no effect), p >= alpha
//   not testable here            the data cannot test the claim: a stand-in
//                                built to need what the claim says is
//                                irrelevant, accuracy at chance, a degenerate
//                                indicator (uniform rows), no replicate to test
//                                over, or a paper effect without a direction.
// A rank agreement across rows is a verdict on the whole column: the paper's
// order is the claim and Kendall's tau_b of ordo's rows against it ordo's
// effect, so it "agrees" only if tau_b > 0 with p < alpha.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "experiment/statistics.h"

namespace ordo::experiment {

enum class Verdict { holds, consistent, contradicted, inconclusive, not_testable };

// "holds", "consistent, not significant", "contradicted", "inconclusive", "not testable here".
const char* verdict_name(Verdict v);

// What a claim's verdict is read from.
struct Evidence {
  double ordo_effect = 0;   // ordo's effect, signed as the paper's (NaN: none measured)
  double paper_effect = 0;  // the paper's effect: its sign is the claim's direction
  double p = 0;             // ordo's p-value after its family's correction (NaN: no test)
  std::string not_testable; // why the data cannot test the claim; "" when they can
};

struct Judgement {
  Verdict verdict = Verdict::not_testable;
  std::string reason;  // why, for "not testable here"; "" otherwise
};

// A verdict a report section computed (experiment/tables.h's ReportSection),
// for a claim of the form "section KEY" (experiment/findings.h).
struct SectionVerdict {
  std::string key;      // "sweep.locality"
  Judgement judgement;
  std::string effect;   // ordo's effect in words ("rho 0.40 (p = 0.30, n = 6)")
  std::string paper;    // the paper's effect in words, where the section states it ("" otherwise)
};

// The verdict of the rules above at significance level alpha.
Judgement judge(const Evidence& e, double alpha);

// The verdict on a column's rank agreement (tau: Kendall's tau_b of ordo's
// rows against the paper's, each side ordered best first the same way).
Judgement judge_rank_agreement(const CorrelationTest& tau, double alpha);
// tau_b > 0 with p < alpha.
bool agrees(const CorrelationTest& tau, double alpha);

// "holds: a, b; contradicted: c": each verdict that occurs, in the order of
// the enum, with the names that got it; "" for none.
std::string verdicts_by_name(const std::vector<std::pair<std::string, Verdict>>& named);

// Whether an indicator's value is a tie artifact where the attention without
// [CLS]/[SEP] is uniform (probe/indicators.h's uniform_rows): the
// monotonicities (OPR, any range) count a tied pair as no violation, so they
// read near 0; translation invariance without the special tokens is 0 when
// every diagonal is constant; Eq. 8's symmetry scores 1 when every pair ties.
// Such a row is left out of that indicator's rank statistics and shown apart
// (SPEC §4, degenerate rows). Translation invariance with [CLS]/[SEP],
// SD, direction balance and locality measure real differences (the special
// tokens' columns, exact symmetry, exact balance) and stay in.
bool tie_artifact_on_uniform(const std::string& indicator);

// Accuracy at chance: a row whose seeds' mean accuracy (percent) lies less
// than kChanceMargin points above `chance` (the accuracy of always answering
// the dev set's most frequent label), or is not above it by a one-sided
// one-sample t test over the seeds at alpha (one seed: the margin alone),
// cannot test a claim about that task (SPEC §4). The margin is a judgement:
// a few points over the majority answer is what a model learns from the
// labels' frequencies and surface cues, not from the task.
constexpr double kChanceMargin = 5.0;
bool at_chance(const std::vector<double>& accuracies, double chance, double alpha);

}  // namespace ordo::experiment
