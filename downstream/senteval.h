// SentEval's probing-task files (Conneau et al. 2018, "What you can cram into
// a single vector"; facebookresearch/SentEval data/probing/*.txt), read as
// SentEval's PROBINGEval reads them, so that ordo fine-tunes on them as on a
// GLUE task with a label set of its own:
//
//   one example per line, tab-separated: partition ("tr", "va" or "te"),
//   label, [further fields,] sentence — the label is the second field and the
//   sentence the last; the classes are the training partition's labels sorted
//   (as strings: np.unique), a class's index its place in that order; the
//   metric is accuracy. The model is chosen on "va"; "te" is reported at that
//   choice.
//
// The sets come back as GlueSets of a GlueTask made for the file (name
// "senteval", display the file's stem, the labels, accuracy), so the GLUE
// metrics and submission files apply unchanged.
#pragma once

#include <memory>
#include <string>

#include "downstream/glue.h"

namespace ordo::downstream {

struct SentEvalData {
  std::shared_ptr<const GlueTask> task;  // the sets point at it
  GlueSet train, dev, test;              // tr, va, te; each example's id its 0-based place in its partition
};

// Errors (ordo::Error) name path:line: fewer than 3 fields, a partition other
// than tr/va/te, an empty label or sentence, a va/te label the training
// partition lacks (with the known ones), no tr or no va example, fewer than
// 2 classes. "te" may be absent (test.examples empty).
SentEvalData read_senteval(const std::string& path);

}  // namespace ordo::downstream
