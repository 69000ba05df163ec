// The GLUE tasks in the files the GLUE distribution ships (download_glue_data.py's
// layout, the one BERT's run_classifier.py and HuggingFace's glue processors read),
// and the submission files the GLUE server takes.
//
// Layouts, column by column (0-based; * = the fields ordo reads):
//   CoLA   train/dev: no header; source, label*, original mark, sentence*
//          test:      header index* sentence*
//   SST-2  train/dev: header sentence* label*          test: index* sentence*
//   MRPC   train/dev: header Quality* #1 ID, #2 ID, #1 String*, #2 String*
//          test:      header index* #1 ID, #2 ID, #1 String*, #2 String*
//   STS-B  header index* genre filename year old_index source1 source2 sentence1*
//          sentence2* score* (test: without score)
//   QQP    header id* qid1 qid2 question1* question2* is_duplicate*
//          test: id* question1* question2*
//   MNLI   header index* promptID pairID genre sentence1_binary_parse
//          sentence2_binary_parse sentence1_parse sentence2_parse sentence1* sentence2*
//          then train: label1 gold_label*, dev: label1 .. label5 gold_label*
//          (the gold label is the last column); test: the first ten only.
//          dev_matched.tsv / dev_mismatched.tsv (test_matched / test_mismatched)
//   QNLI   header index* question* sentence* label* (test: without label)
//   RTE, WNLI  header index* sentence1* sentence2* label* (test: without label)
//   AX     (diagnostic.tsv, scored with MNLI's labels) index* sentence1* sentence2*
// A file is recognised by its header (CoLA: by the lack of one); every row
// must have the header's number of columns.
//
// Labels as GLUE writes them, in the processors' order (a label's index is its
// class id): CoLA, SST-2, MRPC, QQP, WNLI "0" "1"; MNLI and AX "contradiction"
// "entailment" "neutral"; QNLI and RTE "entailment" "not_entailment"; STS-B a
// similarity score (a number, regression).
#pragma once

#include <string>
#include <vector>

namespace ordo::downstream {

enum class GlueMetric { accuracy, f1, mcc, pearson, spearman };
const char* metric_key(GlueMetric m);  // "accuracy", "f1", "mcc", "pearson", "spearman"

struct GlueTask {
  std::string name;                  // ordo's name: "cola", "sst2", ... "ax"
  std::string display;               // GLUE's: "CoLA", "SST-2", ... "AX"
  std::vector<std::string> labels;   // class labels in class-id order; empty: regression (STS-B)
  bool pair = false;                 // two sentences per example
  std::vector<GlueMetric> metrics;   // what the task reports, in order
  bool regression() const { return labels.empty(); }
  int label_index(const std::string& label) const;  // -1 when not a label of the task
  std::string label_list() const;                   // "entailment, not_entailment"
};

// The tasks, in GLUE's order: cola sst2 mrpc stsb qqp mnli qnli rte wnli ax.
const std::vector<GlueTask>& glue_tasks();
// A task by ordo's name; ordo::Error listing the valid names otherwise.
const GlueTask& glue_task(const std::string& name);

enum class MnliSet { none, matched, mismatched };

struct GlueExample {
  std::string id;      // the file's index/id column, or the 0-based position when it has none
  std::string text_a, text_b;  // text_b empty for single-sentence tasks
  int label = -1;      // class id (classification, labelled files)
  double score = 0;    // the gold similarity (STS-B, labelled files)
  int line = 0;        // where it is, for messages
};

struct GlueSet {
  const GlueTask* task = nullptr;
  std::string path;
  bool labelled = false;         // train/dev files; GLUE's test files have no labels
  MnliSet mnli = MnliSet::none;  // MNLI/ from the file name: *_matched.tsv or *_mismatched.tsv
  std::vector<GlueExample> examples;
  std::vector<int> skipped_lines;  // rows left out under skip_malformed_rows
};

struct GlueReadOptions {
  // Leave out rows with the wrong number of columns (listed in skipped_lines for
  // the caller to report) instead of refusing the file: some old downloads of
  // QQP's train.tsv hold broken rows, which HuggingFace's processor skips.
  bool skip_malformed_rows = false;
};

// Reads one GLUE file of `task`. Errors (ordo::Error) name path:line: a header
// that is none of the task's layouts (with the expected ones), a row with the
// wrong number of columns, a label outside the task's set (with the valid
// ones), a score that is not a finite number, an empty file.
GlueSet read_glue(const GlueTask& task, const std::string& path, const GlueReadOptions& options = {});

// The submission's file name as the GLUE server expects it: CoLA.tsv, SST-2.tsv,
// MRPC.tsv, STS-B.tsv, QQP.tsv, MNLI-m.tsv, MNLI-mm.tsv, QNLI.tsv, RTE.tsv,
// WNLI.tsv, AX.tsv. MNLI needs `mnli` (matched or mismatched).
std::string glue_submission_name(const GlueTask& task, MnliSet mnli = MnliSet::none);

// Predictions for the examples of a set, one per example in file order:
// class ids for classification, scores for STS-B.
struct GluePredictions {
  std::vector<int> labels;
  std::vector<double> scores;
};

// Writes a GLUE submission file (atomically): header "index\tprediction", then
// one row per example, its id and the label string (or the score, written so
// that it reads back to the same double). The predictions must match the set.
void write_glue_submission(const std::string& path, const GlueSet& set, const GluePredictions& predictions);

// Reads a submission file for `set` (the file its predictions are of): the
// header "index\tprediction", one row per example in the set's order, whose
// index is the example's id or its 0-based position, and a label of the task
// (a finite number for STS-B). Errors name path:line.
GluePredictions read_glue_submission(const std::string& path, const GlueSet& set);

}  // namespace ordo::downstream
