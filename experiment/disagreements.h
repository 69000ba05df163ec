// The disagreements a compute ladder follows (configs/scale_study/): read
// from a folder's disagreements.tsv with the paper's value of each, and
// checked against the plan that climbs the ladder. The report that draws them
// against compute: experiment/scale_report.h.
//
// A ladder folder names its disagreements in disagreements.tsv:
//   # the study's title
//   id  figure  row  minus  paper  paper_flops  disagreement
//   mono_ape  monotonicity_first_k  02_ape_learned  -  ../papers/wang2021/paper_table2.tsv  2.2e19  The learned ...
// figure   a figure key (experiment/results.h): a probe indicator, a task's
//          metric, eval_accuracy, glue.mean
// row      a run config of the folder, climbed up the ladder
// minus    another run config, or "-": the value is then row's minus minus's,
//          pretraining seed by pretraining seed (a gap between two encodings)
// paper    the paper table (a path from the folder) whose rows `row` and
//          `minus` and column `figure` give the paper's value
// paper_flops  the paper model's training compute, counted as
//          experiment/ladder.h counts it; "-": none (then "does not close"
//          needs a significant trend away from the paper)
// disagreement  what ordo found against the paper, in words
#pragma once

#include <string>
#include <vector>

#include "experiment/plan.h"

namespace ordo::experiment {

struct Disagreement {
  std::string id, figure, row, minus;  // minus: "" for none
  std::string paper_table;             // the path as written, from the folder
  double paper = 0;                    // the paper's value (row's minus minus's)
  double paper_flops = 0;              // 0: none given
  std::string text;
  int line = 0;                        // in the file, for messages
};

// Reads a folder's disagreements.tsv and each paper value from its table;
// errors name the file and line (a wrong number of fields, an unknown figure
// key, an id given twice or that is no file name, a paper table without the
// row or the column, a compute that is no positive number).
std::vector<Disagreement> read_disagreements(const std::string& path, const std::string& folder);

// Checks them against a plan: the plan climbs a ladder, row and minus are its
// run configs, and a task's figure (TASK.METRIC) reads a task of the plan
// that every step of the ladder fine-tunes on (a rung's "tasks"; a mean over
// tasks, glue.mean, one that leaves none out).
void check_disagreements(const std::vector<Disagreement>& disagreements, const std::string& path, const Plan& plan);

}  // namespace ordo::experiment
