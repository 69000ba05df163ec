// Identical word probing (Wang et al. 2021, §4.2, Eq. 8): see probe/probe.h.
#include "probe/probe.h"

#include <algorithm>

#include "autograd/var.h"
#include "base/counter_rng.h"
#include "base/file_io.h"
#include "base/json_numbers.h"
#include "nn/bert.h"

namespace ordo::probe {

int64_t default_probe_length(const nn::PretrainingModel& model) {
  const int64_t max_position = model.bert.position_encoding().max_position();
  // An absolute table looks up positions 0..max_position: L <= max_position + 1.
  return max_position >= 0 ? std::min<int64_t>(128, max_position + 1) : 128;
}

namespace {

std::vector<int32_t> probe_word_pool(const text::SubwordTokenizer& tokenizer) {
  std::vector<int32_t> pool;
  for (int32_t id = 0; id < tokenizer.id_bound(); ++id)
    if (!tokenizer.is_special(id) && tokenizer.is_word(id)) pool.push_back(id);
  return pool;
}

}  // namespace

int64_t probe_words_available(const text::SubwordTokenizer& tokenizer) {
  return static_cast<int64_t>(probe_word_pool(tokenizer).size());
}

std::vector<int32_t> draw_probe_words(const text::SubwordTokenizer& tokenizer, int64_t n, uint64_t seed) {
  std::vector<int32_t> pool = probe_word_pool(tokenizer);
  ORDO_CHECK(n >= 1, "identical word probing: the number of words must be >= 1, got ", n);
  ORDO_CHECK(n <= static_cast<int64_t>(pool.size()), "identical word probing: ", n,
             " words asked for, the vocabulary has only ", pool.size(),
             " that are neither special tokens nor word pieces");
  // The first n of the whole pool shuffled: fewer words are a prefix of more.
  CounterRng rng(seed, rng_stream(RngPurpose::probe_words));
  shuffle(pool, rng);
  pool.resize(static_cast<size_t>(n));
  return pool;
}

namespace {

// Words per forward pass: the trace keeps, for every layer, attention and
// scores of [batch, heads, L, L] floats; about 256 MiB of them at most.
int64_t default_batch(const nn::BertConfig& c, int64_t L) {
  const int64_t per_word = c.num_hidden_layers * c.num_attention_heads * L * L * 4 * 2;
  return std::clamp<int64_t>((int64_t{256} << 20) / std::max<int64_t>(per_word, 1), 1, 64);
}

// sum += the [batch, heads, L, L] tensor summed over heads, word by word in
// order (so the sum's order of additions is that of the word list).
// per_head (when given, one matrix per head): each head's own sum too.
void accumulate(Matrix& sum, const Tensor& t, int64_t batch, int64_t heads, int64_t L,
                std::vector<Matrix>* per_head = nullptr) {
  const std::vector<double> v = t.to(Device::cpu()).contiguous().to_doubles();
  ORDO_CHECK(static_cast<int64_t>(v.size()) == batch * heads * L * L, "identical word probing: a traced matrix has ",
             v.size(), " values, expected ", batch, " x ", heads, " x ", L, " x ", L);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const double* m = v.data() + (b * heads + h) * L * L;
      for (int64_t k = 0; k < L * L; ++k) sum.data[static_cast<size_t>(k)] += m[k];
      if (per_head)
        for (int64_t k = 0; k < L * L; ++k) (*per_head)[static_cast<size_t>(h)].data[static_cast<size_t>(k)] += m[k];
    }
}

}  // namespace

ProbeResult identical_word_probe(const nn::PretrainingModel& model, const text::SubwordTokenizer& tokenizer,
                                 const ProbeOptions& options) {
  const nn::BertConfig& config = model.bert.config();
  ORDO_CHECK(tokenizer.id_bound() <= config.vocab_size, "identical word probing: the vocabulary has ",
             tokenizer.id_bound(), " tokens, the model's word embeddings ", config.vocab_size,
             " (a vocabulary of another model?)");
  const text::SequenceLayout layout = tokenizer.layout();
  const bool specials = layout.cls >= 0 && layout.sep >= 0;
  const int64_t L = options.length > 0 ? options.length : default_probe_length(model);
  ORDO_CHECK(L >= (specials ? 3 : 2), "identical word probing: the length must be >= ", specials ? 3 : 2,
             specials ? " ([CLS] w [SEP])" : " (w w)", ", got ", L);
  const int64_t max_position = model.bert.position_encoding().max_position();
  ORDO_CHECK(max_position < 0 || L <= max_position + 1, "identical word probing: length ", L,
             " needs positions 0..", L - 1, ", beyond the learned position table of ", max_position + 1,
             " rows (max_position_embeddings) of pe ", config.pe);
  std::vector<int> layers = options.layers.empty() ? std::vector<int>{1} : options.layers;
  for (int l : layers)
    ORDO_CHECK(l >= 1 && l <= config.num_hidden_layers, "identical word probing: layer ", l,
               " is outside 1..", config.num_hidden_layers, " (layers count from 1)");

  ProbeResult result;
  result.word_ids = draw_probe_words(tokenizer, options.words, options.seed);
  result.length = L;
  result.specials = specials;
  const int64_t N = options.words, H = config.num_attention_heads;
  const int64_t batch = options.batch > 0 ? options.batch : default_batch(config, L);
  const Device device = model.bert.device();
  const int32_t cls = layout.cls, sep = layout.sep;

  std::vector<Matrix> attention_sum(layers.size(), Matrix(L, L)), score_sum(layers.size(), Matrix(L, L));
  std::vector<std::vector<Matrix>> head_sum(layers.size(), std::vector<Matrix>(static_cast<size_t>(H), Matrix(L, L)));
  NoGradGuard no_grad;
  for (int64_t first = 0; first < N; first += batch) {
    const int64_t B = std::min(batch, N - first);
    // [CLS] w ... w [SEP] for each word of this batch (Eq. 8's sentence of
    // one repeated word); w ... w where the model's tokenizer adds no specials.
    std::vector<int64_t> ids(static_cast<size_t>(B * L));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < L; ++t)
        ids[static_cast<size_t>(b * L + t)] = specials && t == 0       ? cls
                                              : specials && t == L - 1 ? sep
                                                                       : result.word_ids[static_cast<size_t>(first + b)];
    nn::BertInputs in;
    in.input_ids = Tensor::from_vector(ids, Shape{B, L}).to(device);
    nn::Context ctx = nn::Context::eval(options.precision);  // no dropout: the probe is deterministic
    nn::ForwardTrace trace;
    trace.keep_attentions = trace.keep_scores = true;
    model.bert.forward(in, ctx, &trace);
    ORDO_CHECK(trace.attentions.size() == static_cast<size_t>(config.num_hidden_layers) &&
                   trace.scores.size() == trace.attentions.size(),
               "identical word probing: the forward pass traced ", trace.attentions.size(), " attentions and ",
               trace.scores.size(), " score matrices for ", config.num_hidden_layers, " layers");
    for (size_t k = 0; k < layers.size(); ++k) {
      const size_t l = static_cast<size_t>(layers[k] - 1);
      accumulate(attention_sum[k], trace.attentions[l], B, H, L, &head_sum[k]);
      accumulate(score_sum[k], trace.scores[l], B, H, L);
    }
  }
  // Eq. 8's average: over the heads and the N words.
  const double inv = 1.0 / static_cast<double>(N * H);
  for (size_t k = 0; k < layers.size(); ++k) {
    LayerProbe p;
    p.layer = layers[k];
    p.attention = std::move(attention_sum[k]);
    p.scores = std::move(score_sum[k]);
    for (double& x : p.attention.data) x *= inv;
    for (double& x : p.scores.data) x *= inv;
    p.head_attention = std::move(head_sum[k]);
    for (Matrix& m : p.head_attention)
      for (double& x : m.data) x /= static_cast<double>(N);
    result.layers.push_back(std::move(p));
  }
  return result;
}

json::Value layer_indicators_json(const Matrix& attention, bool specials) {
  json::Value o = json::Value::object();
  if (!specials) {  // nothing to leave out: the whole matrix both ways
    Indicators all = compute_indicators(attention);
    all.translation_invariance_no_special = all.translation_invariance;
    const json::Value both = indicators_json(all);
    o["with_special"] = both;
    o["without_special"] = both;
    return o;
  }
  o["with_special"] = indicators_json(compute_indicators(attention));
  Indicators words = compute_indicators(without_special(attention));
  // That matrix has no specials left: its AIV "without them" is its AIV, not a
  // second trim (which would drop the first and last word positions too).
  words.translation_invariance_no_special = words.translation_invariance;
  o["without_special"] = indicators_json(words);
  // OPR over the first r offsets and DB_r for every range r = 1 .. L - 1 (Wang et al. 2021, Fig. 5).
  auto ranges = [](const Matrix& m) {
    json::Value v = json::Value::object(), opr = json::Value::array(), db = json::Value::array();
    for (double x : monotonicity_by_range(m)) opr.push_back(json::number(x));
    for (double x : direction_balance_by_range(m)) db.push_back(json::number(x));
    v["monotonicity_first_k"] = opr;
    v["direction_balance"] = db;
    return v;
  };
  json::Value by_range = json::Value::object();
  by_range["with_special"] = ranges(attention);
  by_range["without_special"] = ranges(without_special(attention));
  o["by_range"] = by_range;
  return o;
}

void range_of_word_positions(plot::HeatmapStyle& style, const Matrix& m) {
  Matrix words = without_special(m);
  if (words.empty()) return;
  auto [low, high] = std::minmax_element(words.data.begin(), words.data.end());
  // Equal to rounding (as the indicators read it): a flat map, not a range
  // to stretch f32 rounding over.
  if (*high - *low > rounding_floor(m)) style.vmin = *low, style.vmax = *high;
}

}  // namespace ordo::probe
