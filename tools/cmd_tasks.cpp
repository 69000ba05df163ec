// `ordo data tasks`: the synthetic language's fine-tuning tasks in the GLUE
// and SQuAD formats (synth/tasks.h).
#include <cstdio>

#include "base/error.h"
#include "base/file_io.h"
#include "synth/tasks.h"
#include "tools/cli.h"

namespace {

using namespace ordo;

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"from", "out", "seed", "dev-fraction", "test-fraction"}, {"overwrite"});
  std::string from = args.required("from");
  // A run's data folder, the run itself, or a folder written by `ordo data synth`.
  if (!file_exists(from + "/annotations.jsonl") && file_exists(from + "/data/annotations.jsonl")) from += "/data";
  ORDO_CHECK(file_exists(from + "/annotations.jsonl"), "--from ", from,
             ": no annotations.jsonl here (give the folder `ordo data synth` wrote, or a pretraining run on the "
             "synthetic corpus, RUN or RUN/data)");
  synth::TaskOptions o;
  o.seed = static_cast<uint64_t>(args.integer("seed", 1, 0, int64_t{1} << 40));
  o.dev_fraction = args.number("dev-fraction", o.dev_fraction, 1e-6, 0.9);
  o.test_fraction = args.number("test-fraction", o.test_fraction, 0, 0.9);
  const std::string out = args.required("out");
  const std::string annotations = from + "/annotations.jsonl";
  const auto documents = synth::read_annotations(annotations);
  synth::write_tasks(documents, o, out, args.has("overwrite"), {{annotations, "--from"}});
  std::printf("wrote the synthetic tasks of %zu documents to %s (see %s/README.md)\n", documents.size(), out.c_str(),
              out.c_str());
  return 0;
}

cli::Register command(
    {"data tasks", "the synthetic language's tasks in GLUE and SQuAD formats, from a corpus's annotations",
     "--from DIR|RUN --out DIR [--seed S (1)] [--dev-fraction F (0.1)] [--test-fraction F (0.1)] [--overwrite]\n"
     "  roles/ (RTE layout, with the word-swap probes dev_shuffle_3..6.tsv and dev_shuffle_sr.tsv),\n"
     "  squad/ and squad2/ (SQuAD v1.1 / v2.0 JSON), bigram_shift/ tense/ subject_number/ object_number/\n"
     "  (SST-2 layout: word-order probes; subject_number/ with a role swap, dev_roles_original.tsv and\n"
     "  dev_roles_swapped.tsv), sentiment/ (SST-2 layout) and overlap/ (MRPC layout), which a\n"
     "  bag of words solves, sentence_length/ word_content/ tree_depth/ top_constituents/ (SentEval's\n"
     "  probing files); DIR/README.md says what each asks. Fine-tune with\n"
     "  ordo finetune --task rte|squad|squad2|sst2|mrpc|senteval --data DIR/<folder>",
     run});

}  // namespace
