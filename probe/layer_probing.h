// Frozen per-layer probing: the locality/symmetry paper's Table 9 and Figure 4
// (§4.1, App. C.3), Conneau et al. 2018's probing tasks as SentEval runs them.
//
// The encoder stays frozen. A sentence's representation at layer l is the
// mean of layer l's output over its real tokens ([CLS] and [SEP] included:
// Reimers & Gurevych's mean pooling over the attention mask; layer 0 is the
// embeddings); a multinomial logistic regression on it is fitted on the
// task's training split, its L2 weight and the layer chosen by accuracy on a
// selection split, and the chosen layer's accuracy on the report split is the
// task's figure (the paper: "a grid search for selecting the layer with the
// best score on the dev set"). Every layer's accuracy is kept (Figure 4).
//
// The three attentions of the paper's rows (BERT / BERT-c / BERT-p): the
// model as trained ("both"), the positional term removed ("contextual":
// nn's positional ablation), the token term removed ("positional": nn's
// contextual ablation), each at inference (nn/position.h).
//
// The tasks are the synthetic language's (synth/tasks.h, the run's tasks
// stage): the four multi-class ones in SentEval's format (tr fits, va
// selects, te reports) and the four binary ones in SST-2's layout, whose test
// files are unlabelled as GLUE's are: the last tenth of train selects, dev
// reports. At most `max_fit` training sentences are used (the first ones).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/matrix.h"
#include "nn/heads.h"
#include "text/tokenizer.h"

namespace ordo::probe {

// Multinomial logistic regression with an L2 penalty on the weights (not the
// biases), on features standardised with the training rows' mean and
// population standard deviation: minimises
//   mean_i -log softmax(W^T z_i + b)_{y_i} + l2/2 |W|^2
// by Nesterov's accelerated gradient with step 1/L, L = (lambda_max(Z^T Z / n)
// + 1) / 2 + l2 (Böhning's bound on the Hessian).
struct SoftmaxModel {
  std::vector<double> mean, scale;
  Matrix w;               // [features, classes], standardised coordinates
  std::vector<double> b;  // [classes]
  int predict(const double* x) const;  // the class of a raw feature row
  double accuracy(const Matrix& x, const std::vector<int>& y) const;
};
SoftmaxModel fit_softmax(const Matrix& x, const std::vector<int>& y, int classes, double l2, int iterations = 200);

struct ProbeSplit {
  std::vector<std::string> sentences;
  std::vector<int> labels;
};
struct ProbeTask {
  std::string name;
  int classes = 0;
  ProbeSplit fit, select, report;
};
// The synthetic probing tasks this reads, in the paper's column order:
// sentence_length, word_content, tree_depth, top_constituents, bigram_shift,
// tense, subject_number, object_number.
const std::vector<std::string>& layer_probe_tasks();
// One task from a tasks folder (`ordo data tasks`, a run's tasks/). Errors
// name the task and the file.
ProbeTask read_probe_task(const std::string& tasks_dir, const std::string& name, int64_t max_fit);

// Mean-pooled outputs of every layer (0: the embeddings), a row per sentence:
// [CLS] words [SEP] for an encoder, the words for a decoder, cut to
// `max_length` tokens.
std::vector<Matrix> layer_features(nn::PretrainingModel& model, const text::Tokenizer& tokenizer,
                                   const std::vector<std::string>& sentences, nn::Ablation ablation,
                                   int64_t max_length);

struct LayerProbeOptions {
  std::string run;        // a pretraining run (its newest checkpoint, vocabulary, trained length)
  std::string tasks_dir;  // default: RUN/tasks
  std::vector<std::string> tasks;  // default: layer_probe_tasks()
  int64_t max_fit = 5000;
  std::vector<double> l2 = {1e-4, 1e-2};
  bool quiet = false;
};
// Every task under the three attentions. JSON:
//   {"run", "checkpoint", "layers", "l2", "tasks": {NAME: {"classes", "fit", "select", "report",
//    "attentions": {"both"|"contextual"|"positional": {"best_layer", "accuracy", "by_layer":
//    [{"layer", "l2", "select_accuracy", "report_accuracy"}...]}}}},
//    "not_defined": {ATTENTION: "why"}}   accuracies as fractions
json::Value probe_layers(const LayerProbeOptions& options);

// Figure 4: a panel per task, accuracy (percent) against the layer, a line per attention.
// An SVG document (plot/svg.h).
std::string layer_probing_svg(const json::Value& result, const std::string& title);

}  // namespace ordo::probe
