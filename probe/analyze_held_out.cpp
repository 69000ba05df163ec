// `ordo analyze` on the run's held-out text: its windows as the objective
// sees them, the skip-position attack (Wang & Chen 2020, §5.2), lengths
// beyond the pretraining one (Huang et al. 2020, §4.3; Wang et al. 2021,
// App. F), and layer-1 attention on the text (Huang et al. 2020, Fig. 5).
#include <algorithm>
#include <cmath>

#include "base/counter_rng.h"
#include "base/file_io.h"
#include "probe/analysis_position.h"
#include "probe/analyze_parts.h"
#include "text/corpus.h"

namespace ordo::probe {

using namespace analyses;

HeldOut analyses::load_held_out(const train::RunConfig& c, const std::string& run) {
  std::string corpus = c.data.corpus;
  if (corpus == "synthetic") corpus = run + "/data/corpus.txt";
  ORDO_CHECK(file_exists(corpus), "the run's corpus '", corpus, "' is missing (", run, "/config.json data.corpus)");
  const std::string vocab_path = run + "/vocab.txt";
  ORDO_CHECK(file_exists(vocab_path), "the run's vocabulary '", vocab_path, "' is missing");
  ORDO_CHECK(c.data.held_out_fraction > 0, run, "/config.json: data.held_out_fraction is 0, so the run has no held-out split");
  HeldOut h{text::Vocab::load(vocab_path), {}};
  h.stream = train::split_corpus(c.data, corpus, h.vocab).held_out.tokens;  // the split pretraining made
  ORDO_CHECK(h.stream.size() >= 16, "the held-out split of '", corpus, "' has only ", h.stream.size(), " tokens");
  return h;
}

namespace {

// `count` windows of `length` tokens from the held-out stream (taken one
// after another, wrapping round when the stream ends), as the objective
// sees them: MLM [CLS] w_1..w_{L-2} [SEP] with 15 % of the words predicted
// (80 % [MASK], 10 % a random word, 10 % kept, as in training; drawn from
// `seed` and the window's index only, so every length and every position
// scheme sees the same masks for the same window); causal LM: L tokens
// labelled with the next one. Positions 0..L-1 (the attack rewrites them).
std::vector<text::Batch> windows(const HeldOut& h, bool causal, int64_t length, int64_t count, uint64_t seed) {
  const text::SpecialIds& sp = h.vocab.special();
  std::vector<int32_t> pool;  // random replacements: every non-special id
  for (int32_t id = 0; id < h.vocab.size(); ++id)
    if (!h.vocab.is_special(id)) pool.push_back(id);
  const int64_t per_batch = 16;
  std::vector<text::Batch> out;
  size_t cursor = 0;
  auto next_token = [&]() {
    int32_t t = h.stream[cursor];
    cursor = (cursor + 1) % h.stream.size();
    return t;
  };
  for (int64_t start = 0; start < count; start += per_batch) {
    text::Batch b;
    b.batch = std::min(per_batch, count - start);
    b.length = length;
    for (int64_t s = start; s < start + b.batch; ++s) {
      std::vector<int64_t> ids, labels(static_cast<size_t>(length), text::kIgnoreLabel);
      if (causal) {
        std::vector<int32_t> w;
        for (int64_t i = 0; i <= length; ++i) w.push_back(next_token());
        cursor = (cursor + h.stream.size() - 1) % h.stream.size();  // the last label starts the next window
        for (int64_t i = 0; i < length; ++i) ids.push_back(w[i]), labels[i] = w[i + 1];
      } else {
        ids.push_back(sp.cls);
        for (int64_t i = 0; i < length - 2; ++i) ids.push_back(next_token());
        ids.push_back(sp.sep);
        const int64_t content = length - 2;
        const int64_t k = std::max<int64_t>(1, std::llround(0.15 * static_cast<double>(content)));
        const uint64_t window = static_cast<uint64_t>(s);
        std::vector<int64_t> pick =
            shuffled_order(content, CounterRng(seed, rng_stream(RngPurpose::held_out_positions), window));
        CounterRng replacements(seed, rng_stream(RngPurpose::held_out_masks), window);
        for (int64_t t = 0; t < k; ++t) {
          const size_t i = static_cast<size_t>(pick[t] + 1);
          labels[i] = ids[i];
          const double u = replacements.uniform();
          if (u < 0.8) ids[i] = sp.mask;
          else if (u < 0.9) ids[i] = pool[replacements.below(static_cast<int64_t>(pool.size()))];
        }
      }
      b.input_ids.insert(b.input_ids.end(), ids.begin(), ids.end());
      b.mlm_labels.insert(b.mlm_labels.end(), labels.begin(), labels.end());
      for (int64_t i = 0; i < length; ++i) {
        b.segment_ids.push_back(0);
        b.positions.push_back(i);
        b.attention_mask.push_back(1);
      }
    }
    if (causal) b.clm_labels = b.mlm_labels, b.mlm_labels.clear();
    out.push_back(std::move(b));
  }
  return out;
}

json::Value eval_json(const train::EvalResult& e) {
  json::Value v = json::Value::object();
  v["loss"] = e.loss;
  v["accuracy"] = e.accuracy;
  v["predicted_tokens"] = e.predicted;
  return v;
}

}  // namespace

void analyses::evaluations(RunState& c, Output& out) {
  const HeldOut* held = c.held.get();
  const std::string& why_not = c.why_not;
  const std::string t1 = "Skip-position attack: positions multiplied by c at evaluation";
  const std::string t2 = "Evaluation beyond the pretraining length";
  if (!held) {
    out.skip(t1, why_not);
    out.skip(t2, why_not);
    return;
  }
  const bool causal = c.model->bert.config().decoder;
  const int64_t trained = c.trained;
  const int64_t max_position = c.model->bert.position_encoding().max_position();
  const int64_t n = c.options.eval_sequences;
  const std::string metric = causal ? "next-token" : "masked-token";

  // The attack: length L' with c (L' - 1) inside the trained range, so the
  // positions are ones the model saw; the same windows and masks unattacked.
  const int64_t limit = max_position >= 0 ? std::min(max_position, trained - 1) : trained - 1;
  json::Value attack = json::Value::array();
  std::vector<std::string> cats;
  std::vector<double> clean_loss, hit_loss, clean_acc, hit_acc;
  for (int64_t factor : {2, 4}) {
    const int64_t length = limit / factor + 1;
    if (length < 4) continue;
    std::vector<text::Batch> batches = windows(*held, causal, length, n, c.options.seed);
    train::EvalResult clean = train::evaluate_batches(*c.model, batches, Device::cpu(), MatmulPrecision::fp32);
    for (text::Batch& b : batches)
      for (int64_t& p : b.positions) p *= factor;
    train::EvalResult hit = train::evaluate_batches(*c.model, batches, Device::cpu(), MatmulPrecision::fp32);
    json::Value e = json::Value::object();
    e["factor"] = factor;
    e["length"] = length;
    e["sequences"] = n;
    e["unattacked"] = eval_json(clean);
    e["attacked"] = eval_json(hit);
    attack.push_back(e);
    cats.push_back("c=" + std::to_string(factor) + ", L=" + std::to_string(length));
    clean_loss.push_back(clean.loss);
    hit_loss.push_back(hit.loss);
    clean_acc.push_back(clean.accuracy);
    hit_acc.push_back(hit.accuracy);
  }
  if (attack.size() == 0) {
    out.skip(t1, "the trained range of positions (0.." + std::to_string(limit) + ") is too short for c = 2");
  } else {
    json::Value j = json::Value::object();
    j["objective"] = causal ? "causal" : "mlm";
    j["conditions"] = attack;
    out.json_file("skip_position_attack.json", j);
    plot::svg::ChartStyle sl = chart("held-out " + metric + " loss", "stride c, length L", "loss (nats)", cats);
    sl.y_min = 0;
    plot::svg::ChartStyle sa = chart("held-out " + metric + " accuracy", "stride c, length L", "accuracy", cats);
    sa.y_min = 0;
    sa.y_max = 1;
    out.svg("skip_position_attack.svg",
            plot::svg::grid({plot::svg::bar_chart(cats, {{"positions 0,1,2,...", clean_loss, 0},
                                                         {"positions 0,c,2c,...", hit_loss, 3}},
                                                  sl),
                             plot::svg::bar_chart(cats, {{"positions 0,1,2,...", clean_acc, 0},
                                                         {"positions 0,c,2c,...", hit_acc, 3}},
                                                  sa)},
                            2, c.variant + ": skip-position attack (" + c.label + ")"));
    out.analysis(t1, "skip_position_attack.svg", "json", "skip_position_attack.json",
                 "Held-out " + metric + " loss and accuracy with positions 0, c, 2c, ... against 0, 1, 2, ... on the "
                 "same " + std::to_string(n) + " windows and masks of length L, chosen so that c (L - 1) stays inside "
                 "the trained positions (Wang & Chen 2020, §5.2).");
  }

  // Longer than trained: L, 1.5 L, 2 L.
  json::Value rows = json::Value::array();
  std::vector<double> lengths, losses, accs;
  std::string refused;
  for (double f : {1.0, 1.5, 2.0}) {
    const int64_t length = static_cast<int64_t>(std::llround(f * static_cast<double>(trained)));
    if (max_position >= 0 && length - 1 > max_position) {
      refused += (refused.empty() ? "" : "; ") + std::string("length ") + std::to_string(length) +
                 ": the absolute table holds positions 0.." + std::to_string(max_position);
      continue;
    }
    train::EvalResult e;
    try {
      e = train::evaluate_batches(*c.model, windows(*held, causal, length, n, c.options.seed), Device::cpu(),
                                  MatmulPrecision::fp32);
    } catch (const Error& err) {
      refused += (refused.empty() ? "" : "; ") + std::string("length ") + std::to_string(length) + ": " + err.what();
      continue;
    }
    json::Value r = eval_json(e);
    r["length"] = length;
    rows.push_back(r);
    lengths.push_back(static_cast<double>(length));
    losses.push_back(e.loss);
    accs.push_back(e.accuracy);
  }
  if (lengths.size() < 2) {
    out.skip(t2, refused.empty() ? "no length beyond the pretraining one could be evaluated" : refused);
    return;
  }
  json::Value j = json::Value::object();
  j["trained_length"] = trained;
  j["sequences"] = n;
  j["lengths"] = rows;
  if (!refused.empty()) j["not_evaluated"] = refused;
  out.json_file("beyond_length.json", j);
  plot::svg::ChartStyle sl = chart("held-out " + metric + " loss", "sequence length (tokens)", "loss (nats)");
  plot::svg::ChartStyle sa = chart("held-out " + metric + " accuracy", "sequence length (tokens)", "accuracy");
  sl.legend = sa.legend = false;  // one line each: the title names it
  out.svg("beyond_length.svg",
          plot::svg::grid({plot::svg::line_chart({{"loss", lengths, losses, 0}}, sl),
                           plot::svg::line_chart({{"accuracy", lengths, accs, 1}}, sa)},
                          2, c.variant + ": beyond the pretraining length " + std::to_string(trained) + " (" +
                                 c.label + ")"));
  out.analysis(t2, "beyond_length.svg", "json", "beyond_length.json",
               "Held-out " + metric + " loss and accuracy on " + std::to_string(n) + " full windows at the pretraining "
               "length " + std::to_string(trained) + " and beyond (Huang et al. 2020, §4.3, Table 4; Wang et al. 2021, "
               "App. F)." + (refused.empty() ? std::string() : " Not evaluated: " + refused + "."));
}

// Huang et al. 2020, Fig. 5: layer-1 attention on real text (the held-out
// windows, unmasked), averaged over the heads; one window as the paper shows
// it and the mean over the windows, the first 50 tokens; and the mean
// attention at each offset (probe::mean_by_offset).
void analyses::attention_on_text(RunState& c, Output& out) {
  const HeldOut* held = c.held.get();
  const std::string& why_not = c.why_not;
  const std::string title = "Layer-1 attention on held-out text, mean over heads";
  if (!held) return out.skip(title, why_not);
  const bool causal = c.model->bert.config().decoder;
  const int64_t L = c.length, H = c.model->bert.config().num_attention_heads;
  std::vector<text::Batch> batches = windows(*held, causal, L, c.options.eval_sequences, c.options.seed);
  Matrix mean(L, L), first(L, L);
  const double total = static_cast<double>(c.options.eval_sequences * H);
  NoGradGuard no_grad;
  for (size_t n = 0; n < batches.size(); ++n) {
    text::Batch& b = batches[n];
    for (size_t t = 0; t < b.mlm_labels.size(); ++t)  // the text itself: the masked words put back
      if (b.mlm_labels[t] != text::kIgnoreLabel) b.input_ids[t] = b.mlm_labels[t];
    nn::BertInputs in;
    in.input_ids = Tensor::from_vector(b.input_ids, Shape{b.batch, L});
    nn::Context ctx = nn::Context::eval();
    nn::ForwardTrace trace;
    trace.keep_attentions = true;
    c.model->bert.forward(in, ctx, &trace);
    const std::vector<double> a = trace.attentions[0].to(Device::cpu()).contiguous().to_doubles();  // [B, H, L, L]
    for (int64_t w = 0; w < b.batch; ++w)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t k = 0; k < L * L; ++k) {
          const double x = a[static_cast<size_t>((w * H + h) * L * L + k)];
          mean.data[static_cast<size_t>(k)] += x / total;
          if (n == 0 && w == 0) first.data[static_cast<size_t>(k)] += x / static_cast<double>(H);
        }
  }
  const std::vector<double> by_offset = probe::mean_by_offset(mean);
  auto at = [&](int64_t r) { return by_offset[static_cast<size_t>(r + L - 1)]; };
  const int64_t shown = std::min<int64_t>(50, L);
  auto head = [&](const Matrix& m) {
    Matrix t(shown, shown);
    for (int64_t i = 0; i < shown; ++i)
      for (int64_t j = 0; j < shown; ++j) t(i, j) = m(i, j);
    return t;
  };
  out.csv("attention_text_layer1.csv", mean);
  json::Value j = json::Value::object();
  j["what"] = "layer-1 attention averaged over heads and held-out windows (rows: queries, columns: keys)";
  j["windows"] = c.options.eval_sequences;
  j["length"] = L;
  j["seed"] = static_cast<int64_t>(c.options.seed);
  j["self"] = at(0);
  j["previous"] = at(-1);
  j["next"] = at(1);
  json::Value offsets = json::Value::array();
  for (int64_t r = -(L - 1); r <= L - 1; ++r) {
    json::Value e = json::Value::object();
    e["offset"] = r;
    e["mean_attention"] = at(r);
    offsets.push_back(e);
  }
  j["by_offset"] = offsets;
  out.json_file("attention_text_layer1.json", j);
  std::vector<double> xs, ys;
  for (int64_t r = -std::min<int64_t>(20, L - 1); r <= std::min<int64_t>(20, L - 1); ++r)
    xs.push_back(static_cast<double>(r)), ys.push_back(at(r));
  plot::svg::ChartStyle s = chart("mean attention at offset r", "offset r = j - i (positions)", "attention weight");
  s.y_min = 0;
  s.legend = false;
  out.svg("attention_text_layer1.svg",
          plot::svg::grid({map(head(first), "one window", "attention", 0, "key position j", "query position i", NAN, "",
                               false),
                           map(head(mean), "mean of " + std::to_string(c.options.eval_sequences) + " windows", "attention",
                               0, "key position j", "query position i", NAN, "", false),
                           plot::svg::line_chart({{"mean", xs, ys, 0}}, s)},
                          0, c.variant + ": layer-1 attention on held-out text, mean over heads (" + c.label + ")"));
  out.analysis(title, "attention_text_layer1.svg", "json", "attention_text_layer1.json",
               "Layer-1 attention averaged over the " + std::to_string(H) + " heads on held-out " +
                   std::string(causal ? "text" : "[CLS] text [SEP]") + " windows of length " + std::to_string(L) + " (unmasked): the first window and the mean of " +
                   std::to_string(c.options.eval_sequences) + ", first " + std::to_string(shown) +
                   " tokens (Huang et al. 2020, Fig. 5: method 4 attends to its neighbours and hardly to itself). "
                   "Mean attention on the token itself " + fmt("%.3f", at(0)) + ", on the previous " +
                   fmt("%.3f", at(-1)) + ", on the next " + (L > 1 ? fmt("%.3f", at(1)) : std::string("-")) +
                   " (uniform: " + fmt("%.3f", 1.0 / static_cast<double>(L)) + "; attention_text_layer1.csv, the mean).");
}

}  // namespace ordo::probe
