// The pieces of `ordo pretrain` its files share (train/pretrain.h is the
// interface; this is not): pretrain.cpp sets a run up and loops,
// pretrain_data.cpp makes its corpus, batches and evaluations, and
// pretrain_resume.cpp continues a run (--resume); pretrain_config.cpp reads
// the config on its own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/output.h"
#include "parallel/communicator.h"
#include "text/pretraining_data.h"
#include "train/pretrain.h"

namespace ordo::train::pretraining {

// ---- data and evaluation (pretrain_data.cpp) ------------------------------------------------

// The data stream's options for a phase of `max_seq_length`.
text::PretrainingOptions data_options(const DataConfig& d, int64_t max_seq_length);

struct Corpus {
  text::Vocab vocab;
  text::CorpusSplit split;
};

// The corpus and the vocabulary of a run, made or found in the run directory.
Corpus prepare_corpus(const RunConfig& c, const std::string& run, bool quiet, bool writes);

struct DeviceBatch {
  nn::BertInputs inputs;
  Tensor labels, nsp_labels;
  int64_t tokens = 0;  // positions processed (batch x length)
};

// The encoder's padding bias of a batch, made on the host (nn::BertInputs::padding_bias).
Tensor padding_bias(const text::Batch& b);
DeviceBatch to_device(const text::Batch& b, Device device);

// Mean LM loss and accuracy over the first `batches` batches of the held-out
// split (always the same batches: a fresh cursor each time), the products at
// the run's precision.
EvalResult evaluate(nn::PretrainingModel& model, text::PretrainingData& data, int64_t batch_size, int64_t batches,
                    Device device, MatmulPrecision precision);
// The accuracy of always predicting the most frequent target: the baseline a
// model that ignores its context reaches (about what a unigram model gets).
double unigram_baseline(text::PretrainingData& data, int64_t batch_size, int64_t batches);

// ---- the run and its loop (pretrain.cpp) ----------------------------------------------------

// The phase whose steps hold `step` (a checkpoint at step S is saved in the
// phase of step S; step 0 is phase 0's).
int64_t phase_of_step(int64_t step, const std::vector<Phase>& phases);

// The folder a run writes into. A resumed run writes in place. A new run is
// built in base/output.h's StagedFolder beside its output (.OUT.ordo-new-XXXXXX in
// the same parent) and replaces the output — a previous run there, whole —
// only once it has done its first step; until then a failure or Ctrl-C
// removes the new folder and leaves the output (and the folders above it)
// exactly as they were.
class RunDirectory {
 public:
  static RunDirectory in_place(const std::string& out) { return RunDirectory(out, std::nullopt); }
  static RunDirectory beside(const std::string& out) { return RunDirectory(out, StagedFolder(out)); }

  const std::string& path() const { return building() ? staged_->path() : out_; }
  bool building() const { return staged_ && !staged_->committed(); }
  // Swaps the new run in for whatever the output held, which is then removed.
  void take_place() { staged_->commit(); }

 private:
  RunDirectory(std::string out, std::optional<StagedFolder> staged) : out_(std::move(out)), staged_(std::move(staged)) {}
  std::string out_;
  std::optional<StagedFolder> staged_;
};

// Rank 0 claims the run directory for this process (base/output.h's
// OutputLock): a second ordo process given the same run is refused. A lock
// left by a process that ended is taken over and said.
std::unique_ptr<OutputLock> lock_output(const PretrainOptions& o, parallel::Communicator& comm);

// Sets the run up in `run` (restored from its latest checkpoint when
// `resuming`) and trains it to its end, a stop or Ctrl-C.
RunSummary run_loop(const RunConfig& c, const PretrainOptions& o, const MetricsObserver& observer, RunDirectory run,
                    bool resuming, parallel::Communicator& comm);

}  // namespace ordo::train::pretraining
