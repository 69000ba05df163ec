// `ordo analyze`: every analysis of learned positions that applies to a
// pretraining run's variant, written as CSV/JSON tables and PNG figures with
// an index that `ordo report` reads.
//
//   ordo analyze --run RUN --out DIR [--checkpoint step_N] [--seed S] [--eval-sequences N]
//   ordo analyze --model CHECKPOINT --out DIR [--positions N]   (a checkpoint outside a run)
//
// What runs (EQUATIONS.md, "Analyses of learned position parameters"):
//   absolute table P (any variant with an input-level encoding; rows
//   0..L-1, L the longest pretraining length the table covers):
//     - dot products P P^T and cosine similarities, 0.95 threshold
//       (Wang et al. 2021, Fig. 1, App. D; Wang & Chen 2020, §4.2.1)
//     - the position-position term P W^Q (W^K)^T P^T of layer 1, per head and
//       its head mean (Wang et al. 2021, Eq. 7 and App. H: raw P, no
//       LayerNorm, no biases, no 1/sqrt(d_h))
//     - numerical rank per head of the token-token term X W^Q_h (W^K_h)^T X^T
//       (X the word embeddings of one held-out sequence of length L) and of the
//       positional term P W^Q_h (W^K_h)^T P^T (Chen et al. 2021, Fig. 2),
//       singular values above s_max * L * 2^-23
//   positional score terms (any variant whose scores have a term without the
//   tokens: abs_scalar, rel_scalar, t5_bias, alibi, tupe; positional_scores):
//     - per head of layer 1, maps and numerical ranks (Chen et al. 2021, Fig. 4);
//       for a variant with no input table they are the positional term of the
//       rank comparison above (Fig. 2 for ABS-SCALAR)
//     - where the layers' terms differ, every layer and head, with the
//       locality and symmetry of the attention each gives alone (the
//       locality/symmetry paper, Figs. 9-10: A*'s delta)
//     - with per-head segments: the attention of the position and segment
//       terms alone on a two-segment input (Chen et al. 2021, Fig. 6)
//     - absolute position regression (linear, 5-fold CV, MAE) and relative
//       order classification (logistic regression, error rate) (Wang & Chen
//       2020, §4.1, Tables 1-2), with the fixed sinusoid of the same width
//       and a Gaussian table as controls
//     - cumulative share of the top-k singular values (Wang & Chen 2020, §4.2.2)
//     - dot products P P^T at the run's checkpoints side by side (Wang et al.
//       2021, App. G)
//   relative vectors (each variant's own per-offset table of layer 1, first
//   table: rpe_shaw's a^K, rpe_sin(_learnable)'s P(r), huang_m3/m4's a_r,
//   huang_m1/m2's scalar gates w_r; PositionEncoding::offset_vectors):
//     - the parameters themselves, offsets -50..50 at most (Huang et al. 2020,
//       Fig. 4: method 4, layer 1, head 1)
//     - dot products and cosines with the 0.95 threshold (vectors only; Wang
//       et al. 2021, App. D); for relative-only variants also the snapshots
//   every variant: the identical-word indicators of layer 1 (AIV, OPR over
//     the first 20 offsets, SD, DB) at up to 12 of the run's checkpoints
//     (Wang et al. 2021, Table 2's indicators during pretraining)
//   learnable sinusoids (ape_sin_learnable, rpe_sin_learnable): the learned
//   frequencies against the fixed ones and psi(m) = sum_i cos(w_i m) (Wang et
//   al. 2021, section 3.1, App. A.3)
//   held-out evaluation (the run's held-out split, packed into full windows):
//     - the skip-position attack: positions 0, c, 2c, ... at a length that
//       keeps them inside the trained range, against positions 0, 1, 2, ...
//       on the same windows and masks (Wang & Chen 2020, §5.2)
//     - lengths beyond the pretraining length, 1.5x and 2x (Huang et al.
//       2020, §4.3; Wang et al. 2021, App. F)
//     - layer-1 attention on the windows unmasked, averaged over heads (one
//       window, the mean, the mean attention per offset; Huang et al. 2020, Fig. 5)
// What does not apply is listed in the index with its reason.
//
// DIR/index.json: {"variant": NAME, "checkpoint": "step_N", "analyses":
// [{"title", "png", "csv" | "json", "caption"}...], "skipped": [{"title",
// "reason"}...]}, file names relative to DIR. Everything is computed in
// memory first and written at the end, each file atomically, index.json
// last, in a folder built beside DIR and swapped in whole (base/output.h:
// an existing DIR is refused unless overwrite, and no file of a previous
// analysis stays); an error leaves DIR as it was.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/matrix.h"
#include "nn/heads.h"
#include "probe/wang_chen.h"

namespace ordo::probe {

// The indicators the layer-1 trajectory follows (indicator_trajectory.json,
// without the special tokens), as (key, title); ordo report draws the same.
const std::vector<std::pair<std::string, std::string>>& trajectory_indicators();
// A title's indicator as its axis label: "translation invariance (AIV)" ->
// "AIV (unitless)", "locality (Eq. 7)" -> "locality (unitless)".
std::string indicator_axis(const std::string& title);

struct AnalyzeOptions {
  std::string run;         // the run directory (RUN/config.json, RUN/checkpoints/...)
  // Or a checkpoint outside a run (an HF folder: BERT, RoBERTa, GPT-2, a bare
  // encoder): the analyses of its tables and layer-1 weights; what needs a
  // run (held-out text, other checkpoints) is listed as skipped.
  std::string model_dir;
  int64_t positions = 512;  // rows of a checkpoint's table analysed (Wang & Chen 2020: 512)
  // Or a folder of checkpoints and runs (each entry one model): Wang & Chen
  // 2020's Tables 1-2 and Figures 1-3 across them (analyze_models).
  std::string models;
  std::string out;         // the output directory (created when missing)
  std::string checkpoint;  // "step_N" (or "N"); empty: the newest complete one
  uint64_t seed = 1;       // folds, the random control table, the evaluation masks
  int64_t eval_sequences = 64;  // held-out windows per evaluated condition
  bool quiet = false;
  bool overwrite = false;  // replace an existing `out`
};

struct AnalyzeSummary {
  std::string variant, checkpoint;
  int64_t analyses = 0, skipped = 0;
  double seconds = 0;
};

AnalyzeSummary analyze_run(const AnalyzeOptions& options);

// `options.models`: every checkpoint or run in that folder (in name order), its
// position table's first `positions` rows (the shortest table's at most; an
// ordo run's no more than it pretrained on)
// through probe/wang_chen.h, written to `options.out` (wang_chen.md, .csv,
// .json, wang_chen_cosine.svg, wang_chen_informativeness.svg). A model
// without an input table (a relative-only variant) is listed as skipped.
AnalyzeSummary analyze_models(const AnalyzeOptions& options);

// The same tables over the given (name, checkpoint or run folder) pairs, in
// memory (nothing written): what analyze_models and the wang_chen2020
// experiment's report write. summary["skipped"] lists the models without an
// input table; an error when none has one.
WangChenReport wang_chen_of(const std::vector<std::pair<std::string, std::string>>& models, int64_t positions,
                            uint64_t seed, bool quiet);

// The score terms of layer `layer` (0-based) that do not depend on the tokens,
// per head, for positions 0..length-1 with one segment: the variant's
// score_bias with q = k = 0, its per-head segment scores taken out (Chen et
// al. 2021's positional attention: ABS-SCALAR's P_h P_h^T, REL-SCALAR's
// R_h[j - i]; T5's and ALiBi's biases; TUPE's (p_i U^Q)(p_j U^K)). Empty when
// the variant has no such term or it is zero (Shaw's and method 4's terms
// need q or k; input-level tables act through the tokens' q and k).
std::vector<Matrix> positional_scores(nn::PretrainingModel& model, int layer, int64_t length);
// Chen et al. 2021, Fig. 6: per head of layer `layer` (0-based), the attention
// of the position and per-head segment terms alone (q = k = 0),
// softmax_j(b_ij + Seg_h[seg(i), seg(j)]), positions 0..length-1, the second
// segment from `second_segment` on. Empty when the variant has no per-head
// segment scores (model option segment = per_head).
std::vector<Matrix> segment_attention(nn::PretrainingModel& model, int layer, int64_t length, int64_t second_segment);

// "ape_learned", or "gpt2 (ape_learned)" for another family: what titles call a model.
std::string model_label(const nn::BertConfig& config);
// P for positions 0..rows-1 as the model adds it at the input (RoBERTa's rows
// from 2 on), or an empty matrix when its variant adds nothing there.
Matrix position_table(nn::PretrainingModel& model, int64_t rows);

}  // namespace ordo::probe
