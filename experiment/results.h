// What an experiment's runs produced, gathered from their folders as figures
// the paper tables name (experiment/paper_table.h):
//   a probe indicator   RUN/probe/indicators.json, the probed layer with the
//                       special tokens (as Wang et al.'s Table 2), one value;
//                       "<key>_by_range" the same at every offset range
//   eval_accuracy       the last held-out MLM accuracy (RUN/metrics.jsonl), in percent
//   TASK.METRIC         RUN/finetune/TASK/results.json: each seed's value of
//   TASK.SET.METRIC     METRIC on the task's main dev set (or on SET:
//   TASK.score          "dev_mismatched", "dev_shuffle_sr") at the epoch the
//                       fine-tuning selects (train.select_epoch), at the best
//                       learning rate; in percent (GLUE's fractions x 100, as
//                       the papers print them; SQuAD's are percent already);
//                       under report.learning_rates = "average", each seed's
//                       mean over the learning rates (a learning rate is
//                       never a replicate: SPEC §4), the seeds finished at
//                       every learning rate
//   TASK.SET.METRIC.delta[.BASE]
//                       per run, METRIC on SET minus METRIC on BASE (a dev set
//                       of the same task; the main dev set when not given):
//                       the word-swap probes' Δ against the original
//                       (the locality/symmetry paper, Table 2)
//   glue.mean           per seed, the mean of the classification tasks'
//                       scores, WNLI left out (Wang et al. 2021 Table 3, App. E),
//                       over the tasks the run has (Figure::tasks names
//                       them: two rows' means compare only over the same set)
//   senteval.mean       per seed, the mean of the scores of the classifiers
//                       started from the run's own position table
//                       ("init_positions": "run"; Wang & Chen 2020 Table 3's
//                       Average), over the tasks the run has, named likewise
// A figure holds every seed's value, so that its mean, spread and a test
// against another row can be taken.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "experiment/plan.h"
#include "report/report.h"

namespace ordo::experiment {

struct Figure {
  std::vector<double> values;  // one per seed (one for a probe's indicator)
  std::string tasks;           // the tasks a mean averages ("rte, sst2" for glue.mean); "" otherwise
  double mean() const;
  double std() const;          // sample standard deviation; NaN for one value
};

struct TaskResults {
  bool present = false;        // its results.json exists with a finished run
  std::string source;          // where its data came from (FinetuneTask::source)
  std::string path;            // its results.json, named by errors about it
  std::string select_epoch;    // "best" or "last"
  double lr = 0;               // the learning rate reported (the best by mean score; 0: all of them)
  json::Value runs;            // the finished runs' lines of that learning rate (of every one: all,
                               // each line given its "lr")
  bool over_rates = false;     // report.learning_rates = "average": each seed's mean over the learning rates
  int64_t rates = 0;           // the learning rates with a finished run (over_rates: a seed needs all of them)
  // A classification task scored by accuracy: the accuracy, in percent, of
  // always answering its main dev set's most frequent label (the chance a
  // verdict needs a row to beat: experiment/verdicts.h); NaN otherwise.
  double chance = std::numeric_limits<double>::quiet_NaN();
};

struct RunResults {
  std::string config;          // the run config's name
  std::string run_dir;
  std::string pe;              // model.pe
  // The run config's other pretraining runs (the plan's "replicates") that
  // have finished pretraining, each with its own figures; empty for a run
  // config pretrained once.
  std::vector<RunResults> replicates;
  bool probed = false;
  report::RunRecord record;    // the probe and analyses, as ordo report reads them (when probed)
  json::Value by_range;        // indicators.json's by_range of the probed layer (null when absent)
  std::map<std::string, TaskResults> tasks;  // by the plan's task name
  json::Value stages;          // RUN/stages.json (null when absent)

  // Whether the run finished pretraining (stages.json records it): a run
  // still training has checkpoints too, which a report must not read.
  bool pretrained() const { return stages.is_object() && stages.contains("pretrain"); }
};

// A finished stage's wall time, from the record `unit` of a run's
// stages.json (`stages`, read from `file`); an error naming the file and the
// stage where the record has no time or one that is no number.
double recorded_seconds(const json::Value& stages, const std::string& unit, const std::string& file);

// Reads every run of the plan that exists under OUT/runs (a missing piece
// leaves its figures absent, never a zero): one entry per run config, in the
// plan's order, its replicates inside it.
std::vector<RunResults> gather_results(const Plan& plan);

// A run's figure for a key, or nothing when the run lacks it: a probe
// indicator, eval_accuracy, glue.mean, TASK.METRIC, or one of the analysis's: positional_rank (the rank of layer 1's
// positional attention term, mean over heads, Chen et al.'s Figure 2),
// position_mae, order_error, components_90 (Wang & Chen's Tables 1-2 and
// Figure 2 for the run's own table) and skip_perplexity_ratio (Table 4: the
// held-out perplexity's factor under the attack at stride 2).
std::optional<Figure> figure(const RunResults& run, const std::string& key, const Plan& plan);

// A row's figure once per pretraining run, the run's own first and then its
// replicates', each the mean over its fine-tuning seeds; a run without the
// figure is left out.
std::vector<double> pretraining_means(const RunResults& run, const std::string& key, const Plan& plan);

// The figures of one run as JSON, every key the plan's tables and tasks name:
// {key: {"mean", "std", "values"}} (what OUT/report/results.json holds).
json::Value figures_json(const RunResults& run, const Plan& plan, const std::vector<std::string>& keys);

}  // namespace ordo::experiment
