// `ordo analyze`: the terms of layer-1 attention that positions make
// without the tokens. The position-position term P W^Q (W^K)^T P^T (Wang et
// al. 2021, Eq. 7), the token-independent score terms per head and per layer
// (Chen et al. 2021, Fig. 4; the locality/symmetry paper, Figs. 9-10), the
// position and segment attention (Chen et al. 2021, Fig. 6), and the
// numerical ranks of the token-token and positional terms (Fig. 2).
#include <algorithm>

#include "probe/analysis_linalg.h"
#include "probe/analysis_position.h"
#include "probe/analyze_parts.h"
#include "probe/indicators.h"

namespace ordo::probe {

using namespace analyses;

void analyses::position_position_term(RunState& c, Output& out) {
  const std::string title = "Position-position term P W^Q (W^K)^T P^T of layer 1";
  if (c.table.empty()) return out.skip(title, "variant " + c.variant + " adds no position vector at the input");
  const int64_t heads = c.model->bert.config().num_attention_heads;
  Matrix mean(c.length, c.length);
  std::vector<plot::svg::Figure> panels;
  std::vector<Matrix> per_head;
  for (int64_t h = 0; h < heads; ++h) {
    Matrix t = layer1_term(*c.model, c.table, c.table, h);
    for (size_t k = 0; k < t.data.size(); ++k) mean.data[k] += t.data[k] / static_cast<double>(heads);
    per_head.push_back(std::move(t));
  }
  panels.push_back(map(mean, "mean over heads", "p_i Wq Wk^T p_j", 0, "key position j", "query position i"));
  for (int64_t h = 0; h < heads && h < 11; ++h)
    panels.push_back(map(per_head[h], "head " + std::to_string(h + 1), "p_i Wq Wk^T p_j", 0, "key position j",
                         "query position i"));
  out.csv("position_position_layer1.csv", mean);
  out.svg("position_position_layer1.svg",
          plot::svg::grid(panels, 0, c.variant + ": position-position term, layer 1 (" + c.label + ")"));
  out.analysis(title, "position_position_layer1.svg", "csv", "position_position_layer1.csv",
               "p_i W^{Q,1}_h (W^{K,1}_h)^T p_j^T for the raw position vectors (no LayerNorm, biases or 1/sqrt(d_h)), "
               "the mean over heads first (the CSV) and then each head (Wang et al. 2021, Eq. 7, App. H, Fig. 9). "
               "Colours span each map's 1st-99th percentiles.");
}

// Chen et al. 2021, Fig. 4 (ABS-SCALAR's positional attention per head) for
// every variant with a token-independent score term (positional_scores).
void analyses::positional_score_maps(RunState& c, Output& out) {
  const std::vector<Matrix>& scores = c.layer1_scores();
  const std::string title = "Positional score terms of layer 1 per head (the terms without the tokens)";
  if (scores.empty())
    return out.skip(title, "variant " + c.variant + " has no score term that is independent of the tokens");
  Matrix mean(c.length, c.length);
  std::vector<plot::svg::Figure> panels;
  std::vector<std::vector<double>> ranks;
  for (size_t h = 0; h < scores.size(); ++h) {
    for (size_t k = 0; k < mean.data.size(); ++k) mean.data[k] += scores[h].data[k] / static_cast<double>(scores.size());
    if (h < 12)
      panels.push_back(map(scores[h], "head " + std::to_string(h + 1), "b_ij", 0, "key position j", "query position i"));
    const std::vector<double> sv = probe::singular_values(scores[h]);
    ranks.push_back({static_cast<double>(h + 1),
                     static_cast<double>(probe::numerical_rank(sv, c.length, c.length, probe::kFloat32Epsilon))});
  }
  out.csv("positional_scores_layer1.csv", mean);
  out.file("positional_scores_rank.csv", table_csv({"head", "rank"}, ranks));
  out.svg("positional_scores_layer1.svg",
          plot::svg::grid(panels, 0, c.variant + ": positional score terms, layer 1 (" + c.label + ")"));
  out.analysis(title, "positional_scores_layer1.svg", "csv", "positional_scores_layer1.csv",
               "The score terms that do not depend on the tokens, b_ij = s_ij with q = k = 0 (per-head segment scores "
               "taken out), per head of layer 1 for positions 0.." + std::to_string(c.length - 1) +
                   " (Chen et al. 2021, Fig. 4: ABS-SCALAR's P_h P_h^T learns shifting patterns a relative term "
                   "models). The CSV is their mean over heads; positional_scores_rank.csv their numerical rank per "
                   "head (Fig. 2). Colours span each map's 1st-99th percentiles.");
}

// The locality/symmetry paper's Figures 9-10 (A*'s and A*-Seq's learned
// delta, every layer and head) for every variant whose token-independent
// score terms differ between layers; with each map, the locality and
// symmetry (Eqs. 7-8) of the attention that term alone gives: softmax_j b_ij
// where it is added to the scores, b itself where it is the positional
// attention of the sequence combination (Eq. 10: A*-Seq's delta).
void analyses::positional_score_layers(RunState& c, Output& out) {
  const std::vector<Matrix>& first_layer = c.layer1_scores();
  const std::string title = "Positional score terms of every layer and head";
  const int layers = c.model->bert.config().num_hidden_layers;
  std::vector<std::vector<Matrix>> all{first_layer};
  for (int l = 1; l < layers; ++l) all.push_back(positional_scores(*c.model, l, c.length));
  if (all[0].empty())
    return out.skip(title, "variant " + c.variant + " has no score term that is independent of the tokens");
  if (layers == 1) return out.skip(title, "the model has one layer: layer 1's maps show its terms");
  for (std::vector<Matrix>& layer : all)  // a layer whose terms are all 0 (positional_scores: empty)
    if (layer.empty()) layer.assign(all[0].size(), Matrix(c.length, c.length));
  bool differ = false;
  for (int l = 1; l < layers; ++l)
    for (size_t h = 0; h < all[l].size() && h < all[0].size(); ++h) differ |= all[l][h].data != all[0][h].data;
  if (!differ) return out.skip(title, "the layers share the terms: layer 1's maps show them");
  std::vector<plot::svg::Figure> panels;
  std::vector<std::vector<double>> rows;
  const int64_t heads = static_cast<int64_t>(std::min<size_t>(all[0].size(), 12));
  for (int l = 0; l < layers && l < 12; ++l)
    for (int64_t h = 0; h < heads; ++h) {
      const Matrix& b = all[l][static_cast<size_t>(h)];
      panels.push_back(map(b, "layer " + std::to_string(l + 1) + " head " + std::to_string(h + 1), "b_ij", 0,
                           "key position j", "query position i", NAN, "", true, kSmallMapSize));
      Matrix a = b;
      if (c.model->bert.position_encoding().combine != nn::Combine::sequence)
        a.data = softmax(Tensor::from_vector(b.data, {b.rows, b.cols})).to_doubles();
      rows.push_back({static_cast<double>(l + 1), static_cast<double>(h + 1), probe::locality(a), probe::symmetry(a)});
    }
  out.file("positional_scores_layers.csv", table_csv({"layer", "head", "locality", "symmetry"}, rows));
  // A layer a row where its heads fit the page's width, else as many a row as fit.
  out.svg("positional_scores_layers.svg",
          plot::svg::grid(panels, heads <= 4 ? static_cast<int>(heads) : 0,
                          c.variant + ": positional score terms (" + c.label + ")"));
  out.analysis(title, "positional_scores_layers.svg", "csv", "positional_scores_layers.csv",
               "The score terms without the tokens (as the layer-1 maps) of every layer (rows) and head (columns, at "
               "most 12 of each), positions 0.." + std::to_string(c.length - 1) +
                   ": the locality/symmetry paper's Figures 9-10 (A*'s and A*-Seq's learned delta). The CSV gives "
                   "the locality and symmetry (Eqs. 7-8) of the attention the term alone gives: softmax_j b_ij, or b "
                   "itself under the sequence combination (Eq. 10). "
                   "Colours span each map's 1st-99th percentiles.");
}

// Chen et al. 2021, Fig. 6: REL-SCALAR's (any variant's) position and
// per-head segment attention without the token term, on an input of length 32
// (the trained length if shorter) whose second segment starts half way.
void analyses::segment_attention_maps(RunState& c, Output& out) {
  const std::string title = "Position and segment attention without the token term, layer 1 per head";
  const int64_t length = std::min<int64_t>(32, c.length), second = length / 2;
  const std::vector<Matrix> heads = segment_attention(*c.model, 0, length, second);
  if (heads.empty()) return out.skip(title, "variant " + c.variant + " has no per-head segment scores (segment = per_head)");
  Matrix mean(length, length);
  std::vector<plot::svg::Figure> panels;
  for (size_t h = 0; h < heads.size(); ++h) {
    for (size_t k = 0; k < mean.data.size(); ++k) mean.data[k] += heads[h].data[k] / static_cast<double>(heads.size());
    if (h < 12)
      panels.push_back(map(heads[h], "head " + std::to_string(h + 1), "attention", 0, "key position j", "query position i"));
  }
  out.csv("segment_attention_layer1.csv", mean);
  out.svg("segment_attention_layer1.svg",
          plot::svg::grid(panels, 0, c.variant + ": position and segment attention, layer 1 (" + c.label + ")"));
  out.analysis(title, "segment_attention_layer1.svg", "csv", "segment_attention_layer1.csv",
               "softmax_j(b_ij + Seg_h[seg(i), seg(j)]) with q = k = 0: the attention of the position and per-head "
               "segment terms alone, per head of layer 1, positions 0.." + std::to_string(length - 1) +
                   " with the second segment from position " + std::to_string(second) +
                   " (Chen et al. 2021, Fig. 6: length 32, the second segment from 16). The CSV is the mean over "
                   "heads. Colours span each map's 1st-99th percentiles.");
}

void analyses::attention_rank(RunState& c, Output& out) {
  const std::vector<int32_t>* sample = c.held ? &c.sample : nullptr;
  const std::vector<Matrix>& scores = c.layer1_scores();
  const std::string title = "Numerical rank of the token-token and positional attention terms per head";
  // The positional term: P W^Q (W^K)^T P^T for a table at the input, else the token-independent score terms.
  if (c.table.empty() && scores.empty())
    return out.skip(title, "variant " + c.variant + " adds no position vector at the input and has no score term "
                           "independent of the tokens");
  if (!sample) return out.skip(title, "no held-out sequence for the token-token term (see the evaluation entries)");
  const nn::BertConfig& m = c.model->bert.config();
  const std::string positional = c.table.empty() ? "positional b_ij (terms without tokens)" : "positional P Wq Wk^T P^T";
  Matrix words = to_matrix(c.model->bert.embeddings.word_embeddings.weight.var.value());
  const int64_t tokens = static_cast<int64_t>(sample->size());
  Matrix x(tokens, m.hidden_size);
  for (int64_t i = 0; i < tokens; ++i)
    for (int64_t k = 0; k < m.hidden_size; ++k) x(i, k) = words((*sample)[static_cast<size_t>(i)], k);
  std::vector<std::vector<double>> rows;
  std::vector<std::string> heads;
  std::vector<double> token_ranks, position_ranks;
  for (int64_t h = 0; h < m.num_attention_heads; ++h) {
    std::vector<double> st = probe::singular_values(layer1_term(*c.model, x, x, h));
    std::vector<double> sp = probe::singular_values(c.table.empty() ? scores[static_cast<size_t>(h)]
                                                                    : layer1_term(*c.model, c.table, c.table, h));
    const int64_t rt = probe::numerical_rank(st, tokens, tokens, probe::kFloat32Epsilon);
    const int64_t rp = probe::numerical_rank(sp, c.length, c.length, probe::kFloat32Epsilon);
    rows.push_back({static_cast<double>(h + 1), static_cast<double>(rt), static_cast<double>(rp),
                    static_cast<double>(m.head_dim()), static_cast<double>(tokens),
                    probe::rank_tolerance(st, tokens, tokens, probe::kFloat32Epsilon),
                    probe::rank_tolerance(sp, c.length, c.length, probe::kFloat32Epsilon)});
    heads.push_back(std::to_string(h + 1));
    token_ranks.push_back(static_cast<double>(rt));
    position_ranks.push_back(static_cast<double>(rp));
  }
  out.file("attention_rank.csv",
           table_csv({"head", "token_token_rank", "positional_rank", "head_dim", "distinct_tokens", "token_tolerance",
                      "positional_tolerance"},
                     rows));
  plot::svg::ChartStyle s =
      chart(m.pe + ": rank of layer-1 attention terms (" + c.label + ")", "head", "numerical rank", heads);
  s.y_min = 0;
  s.y_max = static_cast<double>(c.table.empty() ? c.length : std::min(m.head_dim(), c.length));
  out.svg("attention_rank.svg",
          plot::svg::bar_chart(heads, {{"token-token X Wq Wk^T X^T", token_ranks, 0}, {positional, position_ranks, 1}}, s));
  out.analysis(title, "attention_rank.svg", "csv", "attention_rank.csv",
               "Per head of layer 1, the number of singular values above s_max * L * 2^-23 (L = " +
                   std::to_string(c.length) + ") of the token-token term (X = the word embeddings of " +
                   std::to_string(tokens) + " distinct held-out tokens, the first different ones of the text: a "
                   "window of running text repeats tokens, and its equal rows would cap the rank at its distinct "
                   "tokens) and of the positional term, " + positional + " (Chen et al. 2021, Fig. 2); the bound on "
                   "the token-token term's rank is min(d_h, tokens) = " +
                   std::to_string(std::min(m.head_dim(), tokens)) + ".");
}

}  // namespace ordo::probe
