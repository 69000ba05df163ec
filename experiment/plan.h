// An experiment's plan: which runs, which stages each goes through, and
// every stage's settings, resolved and checked before anything runs.
//
// An experiment folder (configs/papers/wang2021/) holds
//   *.json            the run configs, one per row of the paper's tables, run
//                     in file-name order (experiment.json excepted)
//   experiment.json   optional: the stages and their settings (below); without
//                     it the runs are pretrained, probed and reported (Table 2)
//   paper_*.tsv       the paper's tables as data (experiment/paper_table.h)
//   claims.tsv        optional: the paper's central claims and how each is
//                     tested (experiment/findings.h)
//
// experiment.json:
//   {"description": "...",
//    "stages": ["pretrain", "probe", "analyze", "tasks", "layers", "finetune", "report"],
//    "probe": {"words": 300, "length": 64, "layer": "1", "seed": 1},
//    "analyze": {"eval_sequences": 64, "seed": 1},
//    "tasks": {"seed": 1, "dev_fraction": 0.1, "test_fraction": 0.1},
//    "layers": {"runs": ["bert", "tupe"], "tasks": [...], "max_fit": 5000},   (the layers stage)
//    "finetune": {"config": "../../finetune/tiny.json", "set": ["train.seeds=3"],
//                 "tasks": [{"name": "rte", "task": "rte", "stand_in": "roles",
//                            "set": ["train.select_epoch=last"],
//                            "runs": ["method4"],   (optional: those runs only)
//                            "init_positions": "run", "column": "rte"}, ...]},   (optional, below)
//    "report": {"baseline": "02_ape_learned", "alpha": 0.05, "wang_chen": false, "learning_rates": "best",
//               "length_figure": ["subj", "sst2", "cr"], "dependency_heads": "tupe",
//               "english": "../scale_study_english",
//               "pretrained": [{"name": "all-MiniLM-L6-v2", "probe": "../scale_study_minilm/probe",
//                               "row": "02_ape_learned"}]},
//                 (both: experiment/scale_report.h)
//    "replicates": {"runs": ["01_none", "02_ape_learned"], "seeds": [2, 3], "tasks": ["sst2"]},
//    "ladder": {"rungs": [{"name": "tiny_4k"}, {"name": "tiny_16k", "moves": "steps", "set": [...]}]},
//                 (experiment/ladder.h: every run, replicates too, once per rung of a compute ladder)
//    "quick": {"set": [...], "probe": {...}, "finetune_set": [...]}}
// "replicates" pretrains the runs it names again, once per seed, each as a
// run of its own named "<run>.seed<k>" (after the run configs, so that their
// numbers do not move): the run's config with train.seed = data.seed = k —
// other initial weights, dropout, masking and order, the same corpus — and
// every other stage as the run's, fine-tuning on "tasks" only where given
// (the tasks the claims read: a replicate's other fine-tunings would cost
// time and test nothing). The report reads them as the run's pretraining
// replicates (experiment/tables.h); --quick keeps the first seed.
// finetune.sweep (the locality/symmetry paper's Figure 2 middle and right,
// App. B.4): {"run": "bert", "task": "sst2", "stand_in": "subject_number",
// "config": "../../finetune/positional_encoder.json", "locality_w": [...],
// "symmetry_s": [...], "symmetry_w": 0.011} becomes one fresh-model task
// per encoder, "sweep_w<w>_s1" for each locality_w at s = 1 and
// "sweep_w<symmetry_w>_s<s>" for each symmetry_s (numbers as %g, '.' written
// 'p': "sweep_w0p011_s1"), its config the sweep's own
// (the plan's finetune.set not applied; --quick's is) with model.pe_options.w
// and .s set. Each list is a curve: two points at least, or left out (not both).
// A fine-tuning task is a column of the paper's tables: its data is the folder
// given on the command line (--data NAME=DIR: real GLUE or SQuAD), else the
// stand-in among the run's synthetic tasks (`ordo data tasks`), else it is not
// run (said in the report). A stand-in in SST-2's layout may stand for a
// task read as SentEval's (--data gives a SentEval file; the stand-in is read
// in its own layout). "init_positions" makes the task's model a fresh one
// (ordo finetune --from-scratch, shaped by the fine-tuning config's "model"
// keys) whose position table is the run's own ("run": --init-positions-from
// the run) or its random start ("none"): Wang & Chen 2020's Table 3, one row
// per run and a "random" row, its columns the tasks' "column" (default: the
// name), so that "mr" and "mr_random" fill one column (--data mr=DIR gives
// both their data); report.length_figure names the columns its Figure 4
// averages (default: all); report.wang_chen draws both.
// report.dependency_heads names the run whose heads, read as dependency
// parsers by its analyze stage, the folder's table of relations (Table 8)
// is set beside; every run's summary is reported with it.
// report.learning_rates: "best" (a task's figure is
// its seeds at the learning rate with the best mean score) or "average" (every
// finished run of every learning rate, the locality/symmetry paper's "average
// score of five runs using different learning rates": mean and std over them).
// "quick" is what --quick lays over the plan: a
// smoke test of the whole pipeline in minutes.
//
// The stages run in the order of stage_names(); each run records its stages
// in RUN/stages.json with their settings (experiment/runner.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/json.h"
#include "experiment/ladder.h"
#include "probe/probe_folder.h"
#include "synth/tasks.h"
#include "train/finetune.h"
#include "train/pretrain.h"

namespace ordo::experiment {

// "pretrain", "probe", "analyze", "tasks", "layers", "finetune", "report": the order
// the stages run in (report once for the experiment, the others per run).
const std::vector<std::string>& stage_names();
// Its position in stage_names(); an error naming the known ones otherwise.
size_t stage_index(const std::string& stage);

struct FinetuneTask {
  std::string name;      // the column ("rte", "sst2", "squad"), unique in the plan
  std::string task;      // ordo finetune's --task
  std::string stand_in;  // the run's synthetic task folder used without --data ("roles"), or ""
  std::string data;      // the folder given with --data NAME=DIR, or ""
  std::vector<std::string> set;  // this task's overrides of the fine-tuning config
  std::vector<std::string> runs; // the run configs it is for ("runs": [...]); empty: every run
  std::string init_positions;    // "": the run fine-tuned; "run" / "none": a fresh model with the run's / a random table
  std::string column;            // the Table 3 column it fills (init_positions tasks; default: the name)
  json::Value config;            // the fine-tuning config resolved for this task (overrides applied)
  // One encoder of finetune.sweep (below): a fresh positional-only encoder
  // with the attenuated weights of w and s; read by experiment/sweep_report.h,
  // left out of the score tables.
  bool sweep = false;
  double sweep_w = 0, sweep_s = 0;
  // ordo finetune's --task for this run's data: `task`, or the stand-in's own layout without --data.
  std::string finetune_task() const;
  // Where its data comes from, as the report says: "stand-in: roles (RTE layout)" or "given: DIR".
  std::string source() const;
  bool runnable() const { return !data.empty() || !stand_in.empty(); }
  bool for_run(const std::string& config) const;
};

// The layers stage: frozen per-layer probing (probe/layer_probing.h) of the
// runs it names, on their synthetic probing tasks (the tasks stage's).
struct LayerSettings {
  std::vector<std::string> runs;   // empty: every run
  std::vector<std::string> tasks;  // empty: probe::layer_probe_tasks()
  int64_t max_fit = 5000;          // training sentences per task
  bool for_run(const std::string& config) const;
};

// ordo analyze's settings for every run.
struct AnalyzeSettings {
  uint64_t seed = 1;
  int64_t eval_sequences = 64;
};

// report.pretrained: a model pretrained elsewhere (a real checkpoint that
// `ordo probe` probed), set beside a ladder's disagreements as the run config
// it stands for (experiment/scale_report.h).
struct PretrainedModel {
  std::string name;   // as the report names it
  std::string probe;  // its ordo probe output folder, from the plan's output folder
  std::string row;    // the run config whose figures it is set beside
};

struct Plan {
  std::string folder, out;
  std::vector<std::string> stages;              // in stage_names() order
  std::vector<std::string> names;               // the runs: the run configs' names in order, then the replicates'
  std::vector<train::RunConfig> configs;        // resolved, with the --set overrides (and a replicate's seeds)
  std::vector<std::string> row_of;              // per run: the run config it pretrains (its own name, or a
                                                // replicate's run config)
  std::vector<uint64_t> replicate_seeds;        // "replicates": the seeds each named run is pretrained with again
  std::vector<std::string> replicate_tasks;     // "replicates.tasks": the tasks a replicate fine-tunes on (the
                                                // ones the claims read); empty: every task of its row
  std::vector<std::string> overrides;           // --set, for every run config
  Ladder ladder;                                // "ladder": its rungs (experiment/ladder.h); none without one
  probe::ProbeRequest probe;                    // checkpoint empty: each run's own
  AnalyzeSettings analyze;
  LayerSettings layers;
  synth::TaskOptions tasks;
  std::vector<FinetuneTask> finetune;
  std::string baseline;                         // the config the significance marks compare with ("" none)
  double alpha = 0.05;                          // their two-sided level
  bool wang_chen = false;                       // report.wang_chen: Wang & Chen 2020's tables across the runs
                                                // (experiment/wang_chen_report.h)
  bool average_learning_rates = false;          // report.learning_rates = "average"
  std::vector<std::string> length_figure;       // report.length_figure: the Table 3 columns Figure 4 averages
  bool bench_pe = false;                        // report.bench_pe: OUT/bench_pe.json (ordo bench pe --json) is
                                                // read beside a table of step times (experiment/bench_report.h)
  std::string dependency_run;                   // report.dependency_heads: the run whose heads a table of
                                                // relations reads (experiment/dependency_report.h; "" none)
  bool quick = false;
  std::vector<std::string> paper_tables;        // the folder's paper_*.tsv, by name
  std::string claims;                           // the folder's claims.tsv (experiment/findings.h); "" none
  std::string disagreements;                    // the folder's disagreements.tsv, followed up its ladder
                                                // (experiment/disagreements.h); "" none
  std::string english_out;                      // report.english: another experiment's output folder (from
                                                // this one's) whose runs are the ladder's first rung on real
                                                // English, set beside it in the scale report; "" none
  std::vector<PretrainedModel> pretrained;      // report.pretrained: models beside the ladder

  bool has_stage(const std::string& stage) const;
  bool is_replicate(size_t i) const { return i < row_of.size() && row_of[i] != names[i]; }
  // Whether run i fine-tunes on task t: a task for its row and its ladder
  // rung's (a rung's "tasks"), and for a replicate one of replicate_tasks (a
  // sweep's fresh encoders never: they do not depend on the run's pretraining).
  bool fine_tunes(size_t i, const FinetuneTask& t) const;
  // Whether `name` is a run config of the folder (a row of the tables), not a replicate.
  bool is_row(const std::string& name) const;
  // The settings of stage `stage` (a stage name, or "finetune:NAME" for one
  // task) of run `i`, as RUN/stages.json records them.
  json::Value settings(const std::string& stage, size_t i) const;
  // The whole plan, as OUT/experiment.json records it.
  json::Value to_json() const;
  const FinetuneTask* task(const std::string& name) const;
};

// What the command line gives (tools/cmd_experiment.cpp).
struct PlanRequest {
  std::string folder, out;
  std::vector<std::string> overrides;          // --set key=value, every run config
  std::map<std::string, std::string> data;     // --data NAME=DIR
  std::vector<std::string> stages;             // --stages a,b (empty: the folder's)
  // --probe-*: override experiment.json's probe settings where given (< 0 / "": not given)
  int64_t probe_words = -1, probe_length = -1, probe_seed = -1;
  std::string probe_layer;
  bool quick = false;                          // --quick
};

// Reads the folder and resolves the plan; every setting of every stage is
// checked against every run config here (a probe layer beyond a model's, an
// unknown fine-tuning task or stand-in, a --data folder without the task's
// files, a paper table naming no config), so a mistake is refused before the
// first run trains. Errors name the file and key at fault.
Plan make_plan(const PlanRequest& request);

}  // namespace ordo::experiment
