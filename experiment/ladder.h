// A compute ladder: the same run configs pretrained at rungs of growing
// compute, each rung moving one of steps, width and depth from the one before
// it, so that a trend along the ladder can be put down to one of them
// (configs/scale_study/; the trend and its verdict: experiment/statistics.h's
// log_compute_trend, experiment/scale_verdicts.h).
//
// experiment.json's "ladder":
//   {"rungs": [{"name": "tiny_4k", "set": []},
//              {"name": "tiny_16k", "moves": "steps", "set": ["train.steps=16000"]},
//              {"name": "wide_16k", "moves": "width", "set": ["train.steps=16000", "model.hidden_size=256", ...]},
//              ...,
//              {"name": "small_16k", "moves": "width", "device": "gpu", "set": [...]}]}
// A rung's "set" is laid over every run config of the folder on its own (not
// over the previous rung's), under the command line's --set (and --quick's).
// "moves" says what changes from the previous rung: "steps" (the optimizer
// steps of every phase together), "width" (model.hidden_size; the
// intermediate size and the number of heads may follow it) or "depth"
// (model.num_hidden_layers), or a list of them for a rung that moves more
// than one on purpose; the first rung has none. Every run config is resolved
// at every rung and checked against "moves": a rung that changes a dimension
// it does not name (two at once where it names one), names one that does not
// change, or does not add compute, is refused, naming the file, the rung and
// the values.
//
// A rung may name the run configs it pretrains, "runs": ["02_ape_learned",
// ...] (each a run config of the folder; left out: every one), with their
// replicates: an upper rung may leave out the configurations no disagreement
// rests on, so that its compute goes to those that do. Likewise "tasks":
// ["sst2", "squad"] names the fine-tuning tasks its runs fine-tune on (each a
// task of the plan's "finetune"; left out: every one), so that an upper rung
// fine-tunes only on what a disagreement reads (the disagreements are checked
// against it: experiment/disagreements.h).
//
// A rung may instead be a check of an earlier rung: {"name": "tiny_4k_bf16",
// "checks": "tiny_4k", "set": ["train.precision=bf16"]} repeats that rung's
// steps, width and depth with a setting of its own (refused where it changes
// one), is no step of the ladder (no "moves", no point of a trend), and
// pretrains each run config once, its replicates left out: the report sets
// each of its figures against the spread of the checked rung's pretraining
// runs (experiment/scale_report.h) — whether bf16 on the CPU's matrix tiles
// may carry the larger rungs, say.
//
// In the plan (experiment/plan.h) the ladder replaces each run, and each of
// its replicates, by one run per rung, rung by rung, the cheapest first:
// "<run>=<rung>" ("02_ape_learned=mini_16k"; a replicate
// "02_ape_learned=mini_16k.seed2"), its config the run config with the rung's
// set, then the plan's overrides (and the replicate's seeds). So `ordo
// experiment --list` shows every rung's runs, and the ladder is resumed and
// sharded as any plan.
//
// Compute is counted in training FLOPs by Kaplan et al. 2020 ("Scaling Laws
// for Neural Language Models", arXiv:2001.08361, Table 1): per token, the
// forward pass costs 2 N + 2 n_layer n_ctx d_model, N the non-embedding
// parameters n_layer (4 d_model^2 + 2 d_model d_ff), and training three
// times that; times the tokens, steps x batch x length (x accumulation)
// summed over the phases. The embeddings and the output layer over the
// vocabulary are left out, as Kaplan et al. leave them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/json.h"
#include "train/pretrain.h"

namespace ordo::experiment {

struct Plan;

struct Rung {
  std::string name;
  std::vector<std::string> moves;  // "steps", "width", "depth": what changes from the previous rung (empty: the first)
  std::vector<std::string> set;    // laid over every run config
  bool gpu = false;                // "device": "gpu": too big for the CPU; its runs are left out there unless
                                   // asked for (--rungs, --only) and run on a GPU (tools/scale_gpu_rungs.sh)
  std::string checks;              // "checks": the rung it repeats with its own set; "" for a step of the ladder
  std::vector<std::string> runs;   // "runs": the run configs it pretrains (empty: every one)
  std::vector<std::string> tasks;  // "tasks": the fine-tuning tasks its runs fine-tune on (empty: every one)
  bool fine_tunes_on(const std::string& task) const;
  bool is_check() const { return !checks.empty(); }
};

struct Ladder {
  std::vector<Rung> rungs;
};

// Reads the "ladder" object; `where` names it ("FOLDER/experiment.json: ladder").
// Refuses a rung without a name or with one that is no path name
// (check_path_name) or is given twice, an unknown dimension in "moves",
// "moves" on the first rung or missing on a later step, and a check that
// names no earlier step of the ladder or says what it moves.
Ladder read_ladder(const json::Value& spec, const std::string& where);

// What a rung is made of, for one resolved run config.
struct RungShape {
  int64_t steps = 0;               // optimizer steps, every phase
  int64_t width = 0;               // model.hidden_size
  int64_t depth = 0;               // model.num_hidden_layers
  int64_t tokens = 0;              // tokens trained on: steps x batch x length x accumulation, over the phases
  double parameters = 0;           // non-embedding parameters, n_layer (4 d^2 + 2 d d_ff)
  double flops = 0;                // training FLOPs (the header's count)
};
RungShape rung_shape(const train::RunConfig& config);

// Each rung of the run config `config_file` resolved (the file with the rung's
// set, then `overrides`) and checked against the ladder's "moves" (the
// header's rules; errors name `where`, the file and the rung).
std::vector<RungShape> resolve_rungs(const Ladder& ladder, const std::string& config_file,
                                     const std::vector<std::string>& overrides, const std::string& where);

// "<run>=<rung>".
std::string ladder_run_name(const std::string& run, const std::string& rung);

// The rung run `i` of a ladder plan belongs to; nullptr without a ladder.
const Rung* rung_of(const Plan& plan, size_t i);

// make_plan's hook: reads the ladder, checks every run config of the plan
// against it (without the command line's overrides: the ladder as the folder
// designs it) and replaces the plan's runs by one per rung (the header).
void expand_ladder(const json::Value& spec, const std::string& where, Plan& plan);

}  // namespace ordo::experiment
