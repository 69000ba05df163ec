#include "text/pretraining_data.h"

#include <algorithm>
#include <cmath>

#include "base/counter_rng.h"
#include "base/error.h"

namespace ordo::text {

Objective parse_objective(const std::string& name) {
  if (name == "mlm") return Objective::mlm;
  if (name == "mlm+nsp") return Objective::mlm_nsp;
  if (name == "causal") return Objective::causal;
  throw Error("unknown pretraining objective '" + name + "' (choose mlm, mlm+nsp or causal)");
}

const char* objective_name(Objective objective) {
  switch (objective) {
    case Objective::mlm: return "mlm";
    case Objective::mlm_nsp: return "mlm+nsp";
    case Objective::causal: return "causal";
  }
  return "?";
}

PretrainingData::PretrainingData(const TokenizedCorpus& corpus, const Vocab& vocab, PretrainingOptions options)
    : corpus_(corpus), options_(options), special_(vocab.special()) {
  const int64_t needed = options_.objective == Objective::mlm_nsp ? 5 : options_.objective == Objective::mlm ? 3 : 2;
  ORDO_CHECK(options_.max_seq_length >= needed, "max_seq_length ", options_.max_seq_length, " is too small for ",
             objective_name(options_.objective), ": ",
             options_.objective == Objective::mlm_nsp ? "[CLS] A [SEP] B [SEP]"
             : options_.objective == Objective::mlm   ? "[CLS] A [SEP]"
                                                      : "a causal window",
             " needs at least ", needed);
  ORDO_CHECK(options_.masked_lm_prob > 0 && options_.masked_lm_prob <= 1, "masked_lm_prob must be in (0, 1], got ",
             options_.masked_lm_prob);
  ORDO_CHECK(options_.short_seq_prob >= 0 && options_.short_seq_prob <= 1, "short_seq_prob must be in [0, 1], got ",
             options_.short_seq_prob);
  ORDO_CHECK(options_.max_predictions_per_seq >= 1, "max_predictions_per_seq must be at least 1, got ",
             options_.max_predictions_per_seq);
  ORDO_CHECK(corpus_.documents() > 0, "the pretraining corpus has no documents");
  for (int32_t id = 0; id < vocab.size(); ++id) {
    continuation_.push_back(vocab.is_continuation(id));
    if (!vocab.is_special(id)) random_pool_.push_back(id);
  }
  ORDO_CHECK(!random_pool_.empty(), "the vocabulary holds only special tokens");
  for (int32_t id : corpus_.tokens) {
    ORDO_CHECK(id >= 0 && id < vocab.size(), "token id ", id, " in the corpus is outside the vocabulary of ",
               vocab.size());
  }
  if (options_.objective == Objective::causal) {
    for (int64_t d = 0; d < corpus_.documents(); ++d) {
      int64_t begin = corpus_.sentence_begin[corpus_.document_begin[d]];
      int64_t end = corpus_.sentence_begin[corpus_.document_begin[d + 1]];
      stream_.insert(stream_.end(), corpus_.tokens.begin() + begin, corpus_.tokens.begin() + end);
      stream_.push_back(special_.sep);
    }
    ORDO_CHECK(static_cast<int64_t>(stream_.size()) > options_.max_seq_length, "the corpus has ", stream_.size(),
               " tokens (with document separators): fewer than one causal window of ", options_.max_seq_length,
               " plus its next token");
  }
}

// ---- MLM / NSP instances (create_instances_from_document) -------------------------

// truncate_seq_pair: drop a token from a random end of the longer side until
// the pair fits.
void PretrainingData::truncate(Instance& inst, int64_t max_tokens, CounterRng& rng) const {
  for (;;) {
    int64_t a = inst.a_end - inst.a_begin, b = inst.b_end - inst.b_begin;
    if (a + b <= max_tokens) return;
    bool trim_a = a > b;
    bool front = rng.uniform() < 0.5;
    int64_t& begin = trim_a ? inst.a_begin : inst.b_begin;
    int64_t& end = trim_a ? inst.a_end : inst.b_end;
    (front ? begin : end) += front ? 1 : -1;
  }
}

void PretrainingData::plan_document(int64_t epoch, int64_t doc, std::vector<Instance>& out) const {
  const bool nsp = options_.objective == Objective::mlm_nsp;
  CounterRng rng(options_.seed, rng_stream(RngPurpose::plan, epoch), static_cast<uint64_t>(doc));
  const int64_t max_tokens = options_.max_seq_length - (nsp ? 3 : 2);
  int64_t target = max_tokens;
  if (rng.uniform() < options_.short_seq_prob) target = rng.randint(std::min<int64_t>(2, max_tokens), max_tokens);

  const int64_t first = corpus_.document_begin[doc], last = corpus_.document_begin[doc + 1];
  const auto& sb = corpus_.sentence_begin;
  int64_t chunk_first = first, chunk_length = 0;  // the current chunk: sentences [chunk_first, i]
  for (int64_t i = first; i < last; ++i) {
    chunk_length += corpus_.sentence_length(i);
    if (i != last - 1 && chunk_length < target) continue;
    const int64_t chunk_sentences = i - chunk_first + 1;
    Instance inst{sb[chunk_first], sb[i + 1], 0, 0, -1};
    if (nsp) {
      int64_t a_end = chunk_sentences >= 2 ? rng.randint(1, chunk_sentences - 1) : 1;  // sentences in A
      inst.a_end = sb[chunk_first + a_end];
      if (chunk_sentences == 1 || rng.uniform() < 0.5) {
        inst.nsp_label = 1;
        int64_t b_target = target - (inst.a_end - inst.a_begin);
        int64_t other = doc;
        for (int tries = 0; tries < 10 && other == doc; ++tries) other = rng.randint(0, corpus_.documents() - 1);
        const int64_t o_first = corpus_.document_begin[other], o_last = corpus_.document_begin[other + 1];
        int64_t start = rng.randint(o_first, o_last - 1);
        int64_t j = start;
        while (j < o_last && sb[j + 1] - sb[start] < b_target) ++j;
        inst.b_begin = sb[start];
        inst.b_end = sb[std::min(j, o_last - 1) + 1];
        i -= chunk_sentences - a_end;  // the unused sentences go back for the next chunk
      } else {
        inst.nsp_label = 0;
        inst.b_begin = inst.a_end;
        inst.b_end = sb[i + 1];
      }
    }
    truncate(inst, max_tokens, rng);
    out.push_back(inst);
    chunk_first = i + 1;
    chunk_length = 0;
  }
}

const PretrainingData::EpochPlan& PretrainingData::plan(int64_t epoch) {
  ORDO_CHECK(epoch >= 0, "epoch must be non-negative, got ", epoch);
  if (plan_.epoch == epoch) return plan_;
  std::vector<Instance> in_document_order;
  for (int64_t d = 0; d < corpus_.documents(); ++d) plan_document(epoch, d, in_document_order);
  auto order = shuffled_order(static_cast<int64_t>(in_document_order.size()),
                              CounterRng(options_.seed, rng_stream(RngPurpose::shuffle, epoch)));
  plan_.instances.clear();
  plan_.instances.reserve(order.size());
  for (int64_t k : order) plan_.instances.push_back(in_document_order[k]);
  plan_.epoch = epoch;
  return plan_;
}

Example PretrainingData::materialize(const Instance& inst, int64_t epoch, int64_t index) const {
  Example ex;
  auto append = [&](int64_t begin, int64_t end, int32_t segment) {
    ex.input_ids.insert(ex.input_ids.end(), corpus_.tokens.begin() + begin, corpus_.tokens.begin() + end);
    ex.input_ids.push_back(special_.sep);
    ex.segment_ids.insert(ex.segment_ids.end(), end - begin + 1, segment);
  };
  ex.input_ids.push_back(special_.cls);
  ex.segment_ids.push_back(0);
  append(inst.a_begin, inst.a_end, 0);
  if (inst.b_end > inst.b_begin) append(inst.b_begin, inst.b_end, 1);
  ex.nsp_label = inst.nsp_label < 0 ? kIgnoreLabel : inst.nsp_label;
  mask(ex, epoch, index);
  return ex;
}

// create_masked_lm_predictions, with draws keyed by (seed, epoch, example index).
void PretrainingData::mask(Example& ex, int64_t epoch, int64_t index) const {
  CounterRng rng(options_.seed, rng_stream(RngPurpose::mask, epoch), static_cast<uint64_t>(index));
  const auto& tokens = ex.input_ids;
  ex.labels.assign(tokens.size(), static_cast<int32_t>(kIgnoreLabel));

  // Candidate groups: single positions, or whole words when a "##" piece joins
  // the word before it (never across a [SEP], unlike Google's script, which
  // would join a B that starts with "##" after truncation to A's last word).
  std::vector<std::vector<int32_t>> groups;
  for (size_t i = 0; i < tokens.size(); ++i) {
    int32_t t = tokens[i];
    if (t == special_.cls || t == special_.sep || t == special_.pad) continue;
    if (options_.whole_word_mask && !groups.empty() && continuation_[t] && groups.back().back() == int32_t(i) - 1) {
      groups.back().push_back(static_cast<int32_t>(i));
    } else {
      groups.push_back({static_cast<int32_t>(i)});
    }
  }
  shuffle(groups, rng);

  // Python's round() rounds halves to even, as nearbyint does by default.
  const int64_t wanted = std::min<int64_t>(
      options_.max_predictions_per_seq,
      std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(tokens.size() * options_.masked_lm_prob))));
  int64_t predicted = 0;
  for (const auto& group : groups) {
    if (predicted >= wanted) break;
    if (predicted + static_cast<int64_t>(group.size()) > wanted) continue;  // a whole word or nothing
    for (int32_t pos : group) {
      int32_t original = tokens[pos];
      ex.labels[pos] = original;
      if (rng.uniform() < 0.8) {
        ex.input_ids[pos] = special_.mask;
      } else if (rng.uniform() >= 0.5) {
        ex.input_ids[pos] = random_pool_[rng.below(static_cast<int64_t>(random_pool_.size()))];
      }  // else: the original token stays
      ++predicted;
    }
  }
}

// ---- causal windows ---------------------------------------------------------------

Example PretrainingData::causal_example(int64_t epoch, int64_t index) {
  const int64_t length = options_.max_seq_length;
  const int64_t windows = (static_cast<int64_t>(stream_.size()) - 1) / length;
  if (causal_epoch_ != epoch) {
    causal_order_ = shuffled_order(windows, CounterRng(options_.seed, rng_stream(RngPurpose::shuffle, epoch)));
    causal_epoch_ = epoch;
  }
  const int64_t start = causal_order_[index] * length;
  Example ex;
  ex.input_ids.assign(stream_.begin() + start, stream_.begin() + start + length);
  ex.labels.assign(stream_.begin() + start + 1, stream_.begin() + start + length + 1);
  ex.segment_ids.assign(length, 0);
  return ex;
}

// ---- the public face ----------------------------------------------------------------

int64_t PretrainingData::examples_in_epoch(int64_t epoch) {
  if (options_.objective == Objective::causal) {
    ORDO_CHECK(epoch >= 0, "epoch must be non-negative, got ", epoch);
    return (static_cast<int64_t>(stream_.size()) - 1) / options_.max_seq_length;
  }
  return static_cast<int64_t>(plan(epoch).instances.size());
}

Example PretrainingData::example(int64_t epoch, int64_t index) {
  const int64_t n = examples_in_epoch(epoch);
  ORDO_CHECK(index >= 0 && index < n, "example ", index, " is outside epoch ", epoch, "'s ", n, " examples");
  if (options_.objective == Objective::causal) return causal_example(epoch, index);
  return materialize(plan(epoch).instances[index], epoch, index);
}

void PretrainingData::skip(Cursor& cursor, int64_t examples) {
  ORDO_CHECK(examples >= 0, "cannot skip ", examples, " examples");
  while (examples > 0) {  // as next_batch: an epoch is left only when an example is wanted beyond it
    if (cursor.example >= examples_in_epoch(cursor.epoch)) {
      ++cursor.epoch;
      cursor.example = 0;
    }
    const int64_t take = std::min(examples, examples_in_epoch(cursor.epoch) - cursor.example);
    cursor.example += take;
    examples -= take;
  }
}

Batch PretrainingData::next_batch(Cursor& cursor, int64_t batch_size) {
  ORDO_CHECK(batch_size >= 1, "batch size must be at least 1, got ", batch_size);
  const int64_t length = options_.max_seq_length;
  const bool causal = options_.objective == Objective::causal;
  Batch b;
  b.batch = batch_size;
  b.length = length;
  const size_t cells = static_cast<size_t>(batch_size * length);
  b.input_ids.assign(cells, special_.pad);
  b.segment_ids.assign(cells, 0);
  b.attention_mask.assign(cells, 0);
  b.positions.resize(cells);
  (causal ? b.clm_labels : b.mlm_labels).assign(cells, kIgnoreLabel);
  if (options_.objective == Objective::mlm_nsp) b.nsp_labels.assign(static_cast<size_t>(batch_size), kIgnoreLabel);

  for (int64_t row = 0; row < batch_size; ++row) {
    while (cursor.example >= examples_in_epoch(cursor.epoch)) {
      ++cursor.epoch;
      cursor.example = 0;
    }
    Example ex = example(cursor.epoch, cursor.example++);
    const size_t base = static_cast<size_t>(row * length);
    for (size_t i = 0; i < ex.input_ids.size(); ++i) {
      b.input_ids[base + i] = ex.input_ids[i];
      b.segment_ids[base + i] = ex.segment_ids[i];
      b.attention_mask[base + i] = 1;
      (causal ? b.clm_labels : b.mlm_labels)[base + i] = ex.labels[i];
    }
    for (int64_t i = 0; i < length; ++i) b.positions[base + i] = i;
    if (!b.nsp_labels.empty()) b.nsp_labels[row] = ex.nsp_label;
  }
  return b;
}

}  // namespace ordo::text
