// Pretraining examples and batches, with the semantics of Google BERT's
// create_pretraining_data.py, made dynamic and resumable:
//
//   - MLM (+NSP): each document is cut into instances as Google's
//     create_instances_from_document does (a target length, 10% of documents
//     a shorter random one; chunks of whole sentences; for NSP the A/B split
//     point, 50% actual next / 50% a random document's sentences with the
//     unused ones put back; truncation of the longer side from a random end).
//     Without NSP an instance is the whole chunk as one segment.
//   - Masking as create_masked_lm_predictions: 15% of the tokens (rounded,
//     at least 1, at most max_predictions_per_seq), chosen as whole words (a
//     "##" piece joins its word), [CLS]/[SEP]/[PAD] never; each chosen token
//     becomes [MASK] 80%, itself 10%, a random non-special token 10%.
//   - Causal LM: contiguous windows of max_seq_length tokens over the
//     training documents joined with [SEP], labelled with the next token.
//
// Everything random is drawn from Philox keyed by (seed, purpose, epoch) and
// a document or example index (base/counter_rng.h): epoch e's instances, their
// order and every example's mask are functions of (seed, e, index) alone.
// A Cursor {epoch, example} is therefore the whole state a training loop must
// save to resume bit-identically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "text/corpus.h"
#include "text/tokenizer.h"

namespace ordo {
class CounterRng;
}

namespace ordo::text {

enum class Objective { mlm, mlm_nsp, causal };
// "mlm", "mlm+nsp", "causal"; anything else is an error naming the choices.
Objective parse_objective(const std::string& name);
const char* objective_name(Objective objective);

struct PretrainingOptions {
  Objective objective = Objective::mlm;
  int64_t max_seq_length = 128;
  int64_t max_predictions_per_seq = 20;
  double masked_lm_prob = 0.15;
  double short_seq_prob = 0.1;
  bool whole_word_mask = true;
  uint64_t seed = 12345;
};

constexpr int64_t kIgnoreLabel = -100;

// One example before padding: tokens with their segment ids and labels.
struct Example {
  std::vector<int32_t> input_ids;
  std::vector<int32_t> segment_ids;
  std::vector<int32_t> labels;  // per token: MLM target or next token; kIgnoreLabel elsewhere
  int64_t nsp_label = kIgnoreLabel;  // 0: B follows A in the document; 1: B is random
};

// A batch as plain row-major integer arrays, ready to become tensors. Rows are
// padded with [PAD] to `length` = max_seq_length.
struct Batch {
  int64_t batch = 0, length = 0;
  std::vector<int64_t> input_ids;       // [batch, length]
  std::vector<int64_t> segment_ids;     // [batch, length] 0 for A (and padding), 1 for B
  std::vector<int64_t> positions;       // [batch, length] 0..length-1: explicit, so experiments can alter them
  std::vector<int64_t> attention_mask;  // [batch, length] 1 real token, 0 padding
  std::vector<int64_t> mlm_labels;      // [batch, length] original id where predicted, else -100 (MLM objectives)
  std::vector<int64_t> nsp_labels;      // [batch] (mlm+nsp only; empty otherwise)
  std::vector<int64_t> clm_labels;      // [batch, length] next token id, -100 at padding (causal only)
};

// Where a pass over the data stands: the next example is `example` of `epoch`.
struct Cursor {
  int64_t epoch = 0;
  int64_t example = 0;
  bool operator==(const Cursor& o) const { return epoch == o.epoch && example == o.example; }
};

// Keeps a reference to `corpus`, which must outlive it. Caches the current
// epoch's plan, so one object serves one thread.
class PretrainingData {
 public:
  // Errors: an empty corpus, a max_seq_length too small for the objective's
  // layout ([CLS] A [SEP] B [SEP] needs 5, [CLS] A [SEP] 3, a causal window 2),
  // probabilities outside [0, 1], max_predictions_per_seq < 1.
  PretrainingData(const TokenizedCorpus& corpus, const Vocab& vocab, PretrainingOptions options);

  const PretrainingOptions& options() const { return options_; }
  // How many examples epoch `epoch` has (MLM instance counts vary by epoch).
  int64_t examples_in_epoch(int64_t epoch);
  // Example `index` of `epoch`, regenerated from the seed alone.
  Example example(int64_t epoch, int64_t index);
  // The next `batch_size` examples from `cursor`, moving it on (into the next
  // epoch when one ends).
  Batch next_batch(Cursor& cursor, int64_t batch_size);
  // Moves the cursor past `examples` examples, as next_batch would (a data-
  // parallel rank passing over the other ranks' share of a step).
  void skip(Cursor& cursor, int64_t examples);

 private:
  // A pretraining instance before masking: token ranges into corpus_.tokens.
  struct Instance {
    int64_t a_begin, a_end, b_begin, b_end;  // b_begin == b_end: no segment B
    int8_t nsp_label;                        // 0 / 1, or -1 without NSP
  };
  struct EpochPlan {
    int64_t epoch = -1;
    std::vector<Instance> instances;  // in training order
  };

  const EpochPlan& plan(int64_t epoch);
  void plan_document(int64_t epoch, int64_t doc, std::vector<Instance>& out) const;
  void truncate(Instance& inst, int64_t max_tokens, CounterRng& rng) const;
  Example materialize(const Instance& inst, int64_t epoch, int64_t index) const;
  void mask(Example& ex, int64_t epoch, int64_t index) const;
  Example causal_example(int64_t epoch, int64_t index);

  const TokenizedCorpus& corpus_;
  PretrainingOptions options_;
  SpecialIds special_;
  std::vector<bool> continuation_;       // by token id: a "##" piece
  std::vector<int32_t> random_pool_;     // ids a random replacement draws from
  std::vector<int32_t> stream_;          // causal: documents joined by [SEP]
  EpochPlan plan_;
  std::vector<int64_t> causal_order_;    // causal: window order of the cached epoch
  int64_t causal_epoch_ = -1;
};

}  // namespace ordo::text
