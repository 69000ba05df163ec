// The folder of `ordo probe` (probe/probe_folder.h).
#include "probe/probe_folder.h"

#include <algorithm>
#include <cstdlib>

#include "base/error.h"
#include "model/model.h"
#include "nn/checkpoint.h"
#include "pe/registry.h"
#include "plot/plot.h"
#include "plot/svg.h"
#include "train/checkpoint_paths.h"

namespace ordo::probe {

namespace {

// `specials`: the first and last rows are the model's specials, whose colours
// would swamp the words' (GPT-2's probe has none: the whole map sets the range).
std::string layer_heatmap(const Matrix& m, const std::string& variant, int layer, bool scores, bool specials) {
  plot::HeatmapStyle style;
  style.title = variant + ": layer " + std::to_string(layer) + (scores ? " scores (unnormalised)" : " attention");
  style.x_label = "key position j (tokens)";
  style.y_label = "query position i (tokens)";
  style.colorbar_label = scores ? "score" : "attention weight";
  if (specials) range_of_word_positions(style, m);
  return plot::svg::document(plot::svg::heatmap(m, style));
}

// Each head's map of one layer, in rows of at most six (at most 12 heads).
std::string head_grid(const LayerProbe& p, const std::string& variant, bool specials) {
  std::vector<plot::svg::Figure> panels;
  for (size_t h = 0; h < p.head_attention.size() && h < 12; ++h) {
    plot::HeatmapStyle style;
    style.title = "head " + std::to_string(h + 1);
    style.x_label = "key position j (tokens)";
    style.y_label = "query position i (tokens)";
    style.colorbar_label = "attention weight";
    if (specials) range_of_word_positions(style, p.head_attention[h]);
    panels.push_back(plot::svg::heatmap(p.head_attention[h], style, 160));
  }
  return plot::svg::document(plot::svg::grid(panels, static_cast<int>(std::min<size_t>(panels.size(), 6)),
                                             variant + ": layer " + std::to_string(p.layer) + " attention per head"));
}

}  // namespace

int layer_number(const std::string& text, const std::string& what) {
  if (text == "all") return 0;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  ORDO_CHECK(!text.empty() && *end == '\0' && v >= 1 && v <= (1 << 20), what,
             " expects a layer number (from 1) or 'all', got '", text, "'");
  return static_cast<int>(v);
}

std::vector<int> parse_layers(const std::string& text, int64_t layers) {
  const int layer = layer_number(text, "flag --layer");
  std::vector<int> out;
  if (layer == 0) {
    for (int l = 1; l <= layers; ++l) out.push_back(l);
    return out;
  }
  ORDO_CHECK(layer <= layers, "flag --layer ", layer, " is outside 1..", layers, " (the checkpoint has ", layers,
             " layers; they count from 1)");
  out.push_back(layer);
  return out;
}

void check_probe_settings(const ProbeRequest& request, const nn::BertConfig& config, const std::string& where) {
  try {
    parse_layers(request.layers, config.num_hidden_layers);
    const int64_t length = request.options.length;
    if (length == 0) return;  // the run's trained length, which its PE reaches
    ORDO_CHECK(length >= 3, "the probe length must be >= 3 ([CLS] w [SEP]), got ", length);
    const int64_t reach = pe::make_position_encoding(config, Device::cpu())->max_position();
    ORDO_CHECK(reach < 0 || length <= reach + 1, "probe length ", length, " needs positions 0..", length - 1,
               ", beyond the ", reach + 1, " rows of pe '", config.pe, "' (max_position_embeddings)");
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
}

ProbeFolder probe_folder(const ProbeRequest& request) {
  ProbeFolder f;
  f.checkpoint = train::resolve_checkpoint(request.checkpoint);
  const nn::BertConfig config = nn::load_config(f.checkpoint);
  f.variant = config.pe;
  ProbeOptions options = request.options;
  options.layers = parse_layers(request.layers, config.num_hidden_layers);
  // The model's own tokenizer (WordPiece or byte-level BPE); no LM head is needed.
  const train::CheckpointTokenizer tok =
      train::load_tokenizer(f.checkpoint, request.vocab, {}, config.vocab_size, f.checkpoint + "/config.json");
  f.vocab = tok.path;
  auto model = model::load_model(f.checkpoint, request.device);
  // By default the positions the model was trained on: rows of a table past the
  // pretraining length, or distances past it, were never trained.
  if (options.length == 0)
    if (const std::optional<int64_t> trained = train::checkpoint_trained_length(f.checkpoint))
      options.length = std::min(*trained, default_probe_length(*model));
  f.result = identical_word_probe(*model, *tok.tokenizer, options);

  const std::string label = config.model_type == "bert" ? config.pe : config.model_type + " (" + config.pe + ")";
  json::Value indicators = json::Value::object();
  json::Value file_list = json::Value::object();
  for (const LayerProbe& p : f.result.layers) {
    const std::string k = std::to_string(p.layer), key = "layer_" + k;
    indicators[key] = layer_indicators_json(p.attention, f.result.specials);
    json::Value heads = json::Value::array();  // each head's indicators, in head order
    for (const Matrix& m : p.head_attention) heads.push_back(layer_indicators_json(m, f.result.specials));
    indicators[key]["heads"] = heads;
    json::Value names = json::Value::object();
    names["attention_csv"] = "attention_layer" + k + ".csv";
    names["scores_csv"] = "scores_layer" + k + ".csv";
    names["attention_figure"] = "attention_layer" + k + ".svg";
    names["scores_figure"] = "scores_layer" + k + ".svg";
    names["heads_figure"] = "attention_heads_layer" + k + ".svg";
    f.files.emplace_back(names["attention_csv"].as_string(), to_csv(p.attention));
    f.files.emplace_back(names["scores_csv"].as_string(), to_csv(p.scores));
    f.files.emplace_back(names["attention_figure"].as_string(),
                         layer_heatmap(p.attention, label, p.layer, false, f.result.specials));
    f.files.emplace_back(names["scores_figure"].as_string(),
                         layer_heatmap(p.scores, label, p.layer, true, f.result.specials));
    f.files.emplace_back(names["heads_figure"].as_string(), head_grid(p, label, f.result.specials));
    file_list[key] = names;
  }
  f.files.emplace_back("indicators.json", json::dump(indicators, 2) + "\n");

  json::Value meta = json::Value::object();
  meta["written_by"] = "ordo probe";
  meta["checkpoint"] = f.checkpoint;
  meta["checkpoint_given"] = request.checkpoint;
  meta["vocab"] = f.vocab;
  meta["variant"] = config.pe;
  meta["model_type"] = config.model_type;
  meta["tokenizer"] = tok.tokenizer->kind();
  meta["num_hidden_layers"] = config.num_hidden_layers;
  meta["num_attention_heads"] = config.num_attention_heads;
  meta["words"] = options.words;
  meta["length"] = f.result.length;
  meta["length_note"] = f.result.specials
                            ? "tokens per sequence, the specials included: [CLS] + (length - 2) x word + [SEP]"
                            : "tokens per sequence: length x word (the model's tokenizer adds no special tokens)";
  json::Value layers = json::Value::array();
  for (const auto& p : f.result.layers) layers.push_back(p.layer);
  meta["layers"] = layers;
  meta["seed"] = static_cast<int64_t>(options.seed);
  json::Value words = json::Value::array();
  for (int32_t id : f.result.word_ids) words.push_back(tok.tokenizer->token(id));
  meta["word_tokens"] = words;
  meta["indicators"] = "indicators.json";
  meta["files"] = file_list;
  f.files.emplace_back("probe.json", json::dump(meta, 2) + "\n");
  return f;
}

}  // namespace ordo::probe
