// A pretraining run's data and its evaluation: the corpus and vocabulary a
// run makes or finds in its folder, its batches as tensors on the device,
// and the held-out evaluation (also ordo analyze's, through evaluate_batches).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "base/file_io.h"
#include "nn/evaluate_batches.h"
#include "synth/synth.h"
#include "text/corpus.h"
#include "text/vocab_trainer.h"
#include "train/pretrain_parts.h"

namespace ordo::train {

using namespace pretraining;

namespace pretraining {

// ---- data ----------------------------------------------------------------------------

text::PretrainingOptions data_options(const DataConfig& d, int64_t max_seq_length) {
  text::PretrainingOptions o;
  o.objective = text::parse_objective(d.objective);
  o.max_seq_length = max_seq_length;
  o.max_predictions_per_seq = d.max_predictions_per_seq;
  o.masked_lm_prob = d.masked_lm_prob;
  o.short_seq_prob = d.short_seq_prob;
  o.whole_word_mask = d.whole_word_mask;
  o.seed = d.seed;
  return o;
}

}  // namespace pretraining

text::CorpusSplit split_corpus(const DataConfig& d, const std::string& corpus_path, const text::Vocab& vocab) {
  text::TokenizerOptions to;
  to.lower_case = d.lower_case;
  text::Tokenizer tokenizer(vocab, to);
  text::CorpusSplitOptions so;
  so.held_out_fraction = d.held_out_fraction;
  so.seed = d.seed;
  return text::tokenize_corpus(corpus_path, tokenizer, so);
}

namespace pretraining {

// The corpus and the vocabulary of a run, made or found in the run directory.
// Rank 0 writes what the run needs (the synthetic corpus, the vocabulary);
// the other ranks of a data-parallel run read it from rank 0's folder.
Corpus prepare_corpus(const RunConfig& c, const std::string& run, bool quiet, bool writes) {
  std::string corpus_path = c.data.corpus;
  if (corpus_path == "synthetic") {
    corpus_path = run + "/data/corpus.txt";
    // Reuse a corpus already generated for this seed and size (a resumed run); otherwise (re)generate.
    bool current = false;
    if (file_exists(run + "/data/meta.json")) {
      json::Value meta = json::parse_file(run + "/data/meta.json");
      current = meta["seed"].as_int() == static_cast<int64_t>(c.data.synthetic_seed) &&
                meta["sentences_requested"].as_int() == c.data.synthetic_sentences &&
                meta["grammar_version"].as_int() == synth::kGrammarVersion;
    }
    ORDO_CHECK(current || writes, "rank 0 wrote no synthetic corpus into ", run, "/data");
    if (!current) {
      if (!quiet) std::fprintf(stderr, "generating %lld synthetic sentences (seed %llu) into %s/data\n",
                               static_cast<long long>(c.data.synthetic_sentences),
                               static_cast<unsigned long long>(c.data.synthetic_seed), run.c_str());
      synth::write_synthetic(run + "/data", c.data.synthetic_sentences, c.data.synthetic_seed, synth::Config{}, true);
    }
  }
  std::string vocab_path = run + "/vocab.txt";
  if (!writes) {
    ORDO_CHECK(file_exists(vocab_path), "rank 0 wrote no vocabulary at ", vocab_path);
  } else if (!c.data.vocab.empty()) {
    text::Vocab::load(c.data.vocab).save(vocab_path);
  } else if (!file_exists(vocab_path)) {
    text::VocabTrainerOptions vo;
    vo.vocab_size = c.data.vocab_size;
    vo.min_frequency = c.data.vocab_min_frequency;
    vo.lower_case = c.data.lower_case;
    text::Vocab trained = text::train_wordpiece_from_corpus(corpus_path, vo);
    const std::string warning = text::small_vocabulary_warning(trained.size(), c.data.vocab_size, "data.vocab_size",
                                                               c.data.vocab_min_frequency, "data.vocab_min_frequency");
    if (!warning.empty()) std::fprintf(stderr, "warning: %s (corpus %s)\n", warning.c_str(), corpus_path.c_str());
    trained.save(vocab_path);
  }
  Corpus out{text::Vocab::load(vocab_path), {}};
  out.split = split_corpus(c.data, corpus_path, out.vocab);
  if (c.data.held_out_fraction > 0 && out.split.held_out.documents() == 0)
    std::fprintf(stderr, "warning: the held-out split has no document (%lld documents, held_out_fraction %g): the run "
                         "has no held-out evaluation; give a larger corpus or fraction\n",
                 static_cast<long long>(out.split.train.documents()), c.data.held_out_fraction);
  return out;
}

Tensor padding_bias(const text::Batch& b) {
  return nn::attention_bias(Tensor::from_vector(b.attention_mask, {b.batch, b.length}), b.batch, b.length,
                            /*causal=*/false, DType::f32, Device::cpu());
}

DeviceBatch to_device(const text::Batch& b, Device device) {
  const Shape shape{b.batch, b.length};
  DeviceBatch d;
  d.inputs.input_ids = Tensor::from_vector(b.input_ids, shape, device);
  d.inputs.segment_ids = Tensor::from_vector(b.segment_ids, shape, device);
  d.inputs.positions = Tensor::from_vector(b.positions, shape, device);
  d.inputs.attention_mask = Tensor::from_vector(b.attention_mask, shape, device);
  // Known here, on the host: the encodings need not read them back from the device.
  d.inputs.facts = nn::input_facts(b.positions.data(), b.segment_ids.data(), b.batch, b.length);
  d.inputs.padding_bias = padding_bias(b).to(device);
  // On the host: the model reads them there (nn/heads.h), which on a device saves a round trip.
  d.labels = Tensor::from_vector(b.clm_labels.empty() ? b.mlm_labels : b.clm_labels, shape);
  if (!b.nsp_labels.empty()) d.nsp_labels = Tensor::from_vector(b.nsp_labels, {b.batch}, device);
  d.tokens = b.batch * b.length;
  return d;
}

}  // namespace pretraining

namespace {

// ---- evaluation ------------------------------------------------------------------------

// Running sums of an evaluation: one batch at a time, then finish().
struct EvalSums {
  double loss_sum = 0, correct = 0, nsp_correct = 0, nsp_total = 0;
  int64_t predicted = 0;

  void add(nn::PretrainingModel& model, const DeviceBatch& b, nn::Context& ctx) {
    nn::PretrainingOutput out = model.forward(b.inputs, b.labels, b.nsp_labels, ctx);
    const int64_t n = out.lm_targets.numel();
    if (n == 0) return;
    loss_sum += out.lm_loss.value().item() * n;
    Tensor hits = eq(argmax(out.lm_logits.value(), 1).to(DType::f32), out.lm_targets.to(DType::f32));
    correct += sum(hits).item();
    predicted += n;
    if (out.nsp_logits.defined() && b.nsp_labels.defined()) {
      nsp_correct += sum(eq(argmax(out.nsp_logits, 1).to(DType::f32), b.nsp_labels.to(DType::f32))).item();
      nsp_total += static_cast<double>(b.nsp_labels.numel());
    }
  }
  void merge(const EvalSums& other) {
    loss_sum += other.loss_sum;
    correct += other.correct;
    nsp_correct += other.nsp_correct;
    nsp_total += other.nsp_total;
    predicted += other.predicted;
  }
  EvalResult finish() const {
    EvalResult r;
    r.predicted = predicted;
    if (predicted > 0) {
      r.loss = loss_sum / predicted;
      r.accuracy = correct / predicted;
    }
    if (nsp_total > 0) r.nsp_accuracy = nsp_correct / nsp_total;
    return r;
  }
};

}  // namespace

namespace pretraining {

EvalResult evaluate(nn::PretrainingModel& model, text::PretrainingData& data, int64_t batch_size, int64_t batches,
                    Device device, MatmulPrecision precision) {
  text::Cursor cursor;
  std::vector<text::Batch> held_out;
  for (int64_t i = 0; i < batches; ++i) {
    held_out.push_back(data.next_batch(cursor, batch_size));
    if (cursor.epoch > 0) break;  // the held-out split is smaller than asked: once through
  }
  return evaluate_batches(model, held_out, device, precision);
}

double unigram_baseline(text::PretrainingData& data, int64_t batch_size, int64_t batches) {
  std::map<int64_t, int64_t> counts;
  int64_t total = 0;
  text::Cursor cursor;
  for (int64_t i = 0; i < batches && cursor.epoch == 0; ++i) {
    text::Batch b = data.next_batch(cursor, batch_size);
    const auto& labels = b.clm_labels.empty() ? b.mlm_labels : b.clm_labels;
    for (int64_t l : labels)
      if (l != text::kIgnoreLabel) ++counts[l], ++total;
  }
  int64_t best = 0;
  for (const auto& [id, n] : counts) best = std::max(best, n);
  return total ? static_cast<double>(best) / total : 0.0;
}

}  // namespace pretraining

double perplexity(double mean_loss) { return std::exp(mean_loss); }

// The batches go a thread each on the CPU (nn/evaluate_batches.h); their sums
// are added in order, as one after another.
EvalResult evaluate_batches(nn::PretrainingModel& model, const std::vector<text::Batch>& batches, Device device,
                            MatmulPrecision precision) {
  std::vector<EvalSums> each(batches.size());
  nn::evaluate_batches(static_cast<int64_t>(batches.size()), device, [&](int64_t i) {
    nn::Context ctx = nn::Context::eval(precision);
    each[static_cast<size_t>(i)].add(model, to_device(batches[static_cast<size_t>(i)], device), ctx);
  });
  EvalSums sums;
  for (const EvalSums& e : each) sums.merge(e);
  return sums.finish();
}

}  // namespace ordo::train
