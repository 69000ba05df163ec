// `ordo score`: the official metrics of any system's predictions.
//
//   ordo score --task NAME --data FILE --predictions FILE [--na-probs FILE] [--na-prob-thresh X]
//
// Prints one JSON object with the official metric names (downstream/score.h).
#include <cstdio>

#include "downstream/score.h"
#include "tools/cli.h"

namespace {

using namespace ordo;

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"task", "data", "predictions", "na-probs", "na-prob-thresh"});
  downstream::ScoreRequest request;
  request.task = args.required("task");
  request.data = args.required("data");
  request.predictions = args.required("predictions");
  request.na_probs = args.str("na-probs", "");
  ORDO_CHECK(!args.has("na-prob-thresh") || request.task == "squad2",
             "--na-prob-thresh belongs to SQuAD v2.0 (--task squad2)");
  request.na_prob_thresh = args.number("na-prob-thresh", 1.0, -1e300, 1e300);
  std::printf("%s\n", json::dump(downstream::score(request), 2).c_str());
  return 0;
}

cli::Register command(
    {"score", "the official GLUE / SQuAD metrics of a predictions file against a data file",
     "--task NAME --data FILE --predictions FILE [--na-probs FILE] [--na-prob-thresh X]\n"
     "  NAME: cola sst2 mrpc stsb qqp mnli qnli rte wnli (GLUE) | squad (v1.1) | squad2 (v2.0)\n"
     "  GLUE:  --data the task's dev TSV as GLUE ships it (MNLI: dev_matched.tsv or dev_mismatched.tsv),\n"
     "         --predictions a GLUE submission file (header index<TAB>prediction, one row per example in\n"
     "         the data file's order, the label as GLUE writes it, a number for STS-B);\n"
     "         keys as fractions: cola mcc; sst2 mnli qnli rte wnli accuracy; mrpc qqp accuracy, f1;\n"
     "         stsb pearson, spearman (null when undefined: a constant input)\n"
     "  SQuAD: --data the dev JSON, --predictions the official {id: answer text} JSON;\n"
     "         squad: exact_match, f1; squad2: exact, f1, total, HasAns_*, NoAns_* and, with\n"
     "         --na-probs FILE ({id: number}, e.g. null_odds.json), best_exact, best_exact_thresh,\n"
     "         best_f1, best_f1_thresh; in percent, as evaluate-v1.1.py / evaluate-v2.0.py print them.\n"
     "         --na-prob-thresh X (squad2, default 1.0): a question whose probability exceeds X counts\n"
     "         as answered \"no answer\"\n"
     "  Every example needs exactly one prediction; any mismatch is an error naming the file and line.",
     run});

}  // namespace
