// The synthetic language's fine-tuning tasks, made from its annotations (who
// did what to whom, the trees) and written in the real formats, so that the
// embedded default goes through the same readers (downstream/) and the same
// `ordo finetune` as GLUE and SQuAD:
//
//   roles/      RTE layout (entailment / not_entailment). The premise is a
//               sentence, the hypothesis the stretch of its main clause from
//               the first of agent, verb and patient to the last, taken word
//               for word: entailed as it stands, not entailed with agent and
//               patient exchanged. Both hypotheses hold the same words, so a
//               model blind to word order is at chance by construction.
//               Its dev split comes with the word-swap probes of the
//               locality/symmetry paper (003 §3.4, appendix B.2), labels
//               as the paper assigns them:
//                 dev_shuffle_X.tsv  (X = 3..6) the premise with the words
//                   of one NP/VP/PP/ADJP/ADVP of exactly X words shuffled;
//                   meaning kept, label kept;
//                 dev_shuffle_sr.tsv the entailed pairs with the premise's
//                   agent and patient exchanged (Algorithm 1's swap): label
//                   not_entailment;
//                 dev_shuffle_random.tsv every word of the premise in a
//                   random order (Table 2's Random: the random swaps of prior
//                   work, label kept as they assume), on the premises of
//                 dev_swap_original.tsv the pairs whose premise has a phrase
//                   of 2..6 words (App. B.2's subset), unchanged: the
//                   Original that Shuffle-x and Random are read against;
//                 dev_sr_original.tsv the entailed pairs Shuffle-SR swaps,
//                   unchanged: its Original.
//   squad/      SQuAD v1.1 JSON (train-v1.1.json, dev-v1.1.json): contexts of
//               up to three sentences; for each active clause with both roles,
//               "who <verb> <patient> ?" (answer: the agent) and "<agent>
//               <verb> whom ?" (answer: the patient), answers located by
//               character offset in the context.
//   squad2/     SQuAD v2.0 JSON: the same, plus unanswerable questions (about a
//               patient that occurs nowhere in the context).
//   bigram_shift/, tense/, subject_number/, object_number/
//               SentEval-style probes (Conneau et al. 2018) in SST-2's layout
//               (sentence, label 0/1): two adjacent words inverted or not; the
//               main verb past (0) or present (1); the main clause's subject,
//               and object, singular (0) or plural (1). subject_number's dev
//               split comes with a role swap, row for row:
//                 dev_roles_original.tsv dev sentences whose main clause is an
//                   active past (a verb form that says nothing of number)
//                   with a subject and an object of different numbers;
//                 dev_roles_swapped.tsv the same with the two noun phrases
//                   exchanged, labelled by the new subject: the same words,
//                   so only a model that reads the subject by its place
//                   changes its answer (finetune's "answers_changed").
//   sentiment/  SST-2's layout: the sign of the sum of the sentence's polar
//               words' fixed polarities (the 100 most frequent adjectives and
//               adverbs, each +1 or -1 by a hash of the word; sentences
//               summing to 0 left out).
//   overlap/    MRPC's layout: a sentence and a second one holding its nouns
//               (1) or one noun replaced by another of the same number that
//               it does not hold (0), each polar word dropped at random
//               either way.
//               These two are solvable from the bag of words alone, as much of
//               GLUE's classification is; every other task needs word order,
//               so a claim about order-insensitive classification is tested
//               on these two only.
//   sentence_length/, word_content/, tree_depth/, top_constituents/
//               SentEval's multi-class probes in SentEval's own probing
//               format (<name>.txt: partition tr/va/te, label, sentence;
//               downstream/senteval.h reads it): the length in 6 bins, which
//               of 100 mid-frequency words, the tree's depth, the sequence of
//               constituents under the root (definitions in tasks.cpp).
//               SentEval's coordination inversion is not made: the two
//               coordinated clauses are drawn independently from one
//               distribution, so inverting them leaves nothing to detect.
// Every task has train/dev/test splits (split by document, so no sentence of
// a dev document is trained on); test files are unlabelled as GLUE's are
// (SQuAD: no test file, as SQuAD ships none; SentEval's te is labelled). README.md says what a model
// must know to solve each. Deterministic per seed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/output.h"
#include "synth/synth.h"

namespace ordo::synth {

struct TaskOptions {
  uint64_t seed = 1;
  double dev_fraction = 0.1;   // of the documents
  double test_fraction = 0.1;
};

// The task folders make_tasks writes, each with the `ordo finetune --task`
// that reads it: roles -> rte, squad -> squad, squad2 -> squad2, the four
// SentEval-style probes and sentiment -> sst2, overlap -> mrpc, the four
// multi-class probes -> senteval.
struct TaskFolder {
  std::string folder, finetune_task;
};
const std::vector<TaskFolder>& task_folders();

// The files of every task, as (path relative to the output folder, contents).
std::vector<std::pair<std::string, std::string>> make_tasks(const std::vector<Document>& documents,
                                                            const TaskOptions& options);

// make_tasks written into `out` (base/output.h's policy: refused when it
// exists unless overwrite, or when it is or holds one of `inputs`, the files
// the documents were read from; built beside it and swapped in whole).
void write_tasks(const std::vector<Document>& documents, const TaskOptions& options, const std::string& out,
                 bool overwrite, const std::vector<InputPath>& inputs);

}  // namespace ordo::synth
