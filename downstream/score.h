// `ordo score`'s library half: the official metrics of a predictions file
// against a data file, for every task ordo knows by name.
//   GLUE (cola sst2 mrpc stsb qqp mnli qnli rte wnli): `data` a labelled GLUE
//     TSV (a dev file; MNLI's dev_matched.tsv or dev_mismatched.tsv),
//     `predictions` a GLUE submission file for it (glue.h); the task's metric
//     keys as fractions, as scikit-learn and SciPy return them (metrics.h).
//   squad (v1.1): {"exact_match", "f1"}; squad2 (v2.0): evaluate-v2.0.py's keys,
//     with `na_probs` its best-threshold keys; both in percent (squad_eval.h).
#pragma once

#include <string>
#include <vector>

#include "base/json.h"

namespace ordo::downstream {

struct ScoreRequest {
  std::string task, data, predictions;
  std::string na_probs;         // squad2 only; "" for none
  double na_prob_thresh = 1.0;  // squad2: evaluate-v2.0.py's --na-prob-thresh
};

// The task names `ordo score` takes, in order.
const std::vector<std::string>& score_task_names();
// The metrics as one JSON object; ordo::Error for any mismatch between the files.
json::Value score(const ScoreRequest& request);

}  // namespace ordo::downstream
