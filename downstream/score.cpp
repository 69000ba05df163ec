#include "downstream/score.h"

#include <algorithm>

#include "base/error.h"
#include "downstream/glue.h"
#include "downstream/metrics.h"
#include "downstream/squad.h"
#include "downstream/squad_eval.h"

namespace ordo::downstream {

const std::vector<std::string>& score_task_names() {
  static const std::vector<std::string> names{"cola", "sst2", "mrpc", "stsb", "qqp",  "mnli",
                                              "qnli", "rte",  "wnli", "squad", "squad2"};
  return names;
}

json::Value score(const ScoreRequest& request) {
  const auto& names = score_task_names();
  if (std::find(names.begin(), names.end(), request.task) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : " ") + n;
    throw Error("unknown task '" + request.task + "' (the tasks: " + list + ")");
  }
  ORDO_CHECK(request.na_probs.empty() || request.task == "squad2", "no-answer probabilities (--na-probs) belong "
             "to SQuAD v2.0 (--task squad2), not to ", request.task);
  if (request.task == "squad" || request.task == "squad2") {
    const SquadDataset data = read_squad(request.data);
    const SquadPredictionMap predictions = read_squad_predictions(request.predictions);
    if (request.task == "squad") return evaluate_squad_v1(data, predictions);
    if (request.na_probs.empty()) return evaluate_squad_v2(data, predictions, nullptr, request.na_prob_thresh);
    const SquadNaProbs na_probs = read_squad_na_probs(request.na_probs);
    return evaluate_squad_v2(data, predictions, &na_probs, request.na_prob_thresh);
  }
  const GlueSet data = read_glue(glue_task(request.task), request.data);
  ORDO_CHECK(data.labelled, request.data, " has no labels (the layout of a GLUE test file): score a train or dev "
             "file, whose gold labels are in it");
  return glue_metrics(data, read_glue_submission(request.predictions, data));
}

}  // namespace ordo::downstream
