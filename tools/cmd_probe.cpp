// `ordo probe`: identical word probing of a checkpoint (Wang et al. 2021,
// §4.2, Eq. 8; the pipeline is probe/probe.h).
//
//   ordo probe --checkpoint DIR --out DIR2 [--words N] [--length L] [--layer K|all]
//              [--seed S] [--vocab FILE] [--device cpu|cuda[:N]]
//
// DIR: a checkpoint (config.json + model.safetensors), or a run directory,
// meaning its latest checkpoint (the highest RUN/checkpoints/step_N).
// Writes into DIR2, for each probed layer K:
//   attention_layerK.csv    the softmax attention averaged over heads and words (L x L)
//   scores_layerK.csv       the pre-softmax scores averaged likewise (Wang et al. App. J)
//   attention_layerK.png, scores_layerK.png   their heatmaps
// and
//   indicators.json         {"layer_K": {"with_special": {...}, "without_special": {...}}, ...}
//   probe.json              what was probed: checkpoint, variant, words, length, layers, seed, files
// Every flag and the checkpoint are checked and the probe computed before the
// first file is written. DIR2 follows the output policy (base/output.h): an
// existing one is refused unless --overwrite, and the new one is built beside
// it and swapped in whole, so an error leaves an existing DIR2 as it was.
#include <cstdio>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "base/json.h"
#include "base/output.h"
#include "nn/checkpoint.h"
#include "pe/registry.h"
#include "plot/plot.h"
#include "probe/probe.h"
#include "tools/cli.h"
#include "train/checkpoint_paths.h"

namespace {

using namespace ordo;

// --layer K (1-based) or all.
std::vector<int> parse_layers(const std::string& text, int64_t layers) {
  std::vector<int> out;
  if (text == "all") {
    for (int l = 1; l <= layers; ++l) out.push_back(l);
    return out;
  }
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  ORDO_CHECK(!text.empty() && *end == '\0', "flag --layer expects a layer number (1-based) or 'all', got '", text, "'");
  ORDO_CHECK(v >= 1 && v <= layers, "flag --layer ", v, " is outside 1..", layers, " (the checkpoint has ", layers,
             " layers; they count from 1)");
  out.push_back(static_cast<int>(v));
  return out;
}

png::Image layer_heatmap(const Matrix& m, const std::string& variant, int layer, bool scores) {
  plot::HeatmapStyle style;
  style.title = variant + ": layer " + std::to_string(layer) + (scores ? " scores (unnormalised)" : " attention");
  style.colorbar_label = scores ? "score" : "attention";
  probe::range_of_word_positions(style, m);
  return plot::heatmap(m, style);
}

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"checkpoint", "out", "words", "length", "layer", "seed", "vocab", "device"}, {"overwrite"});
  ORDO_CHECK(args.positional().empty(), "unexpected argument '", args.positional().empty() ? "" : args.positional()[0],
             "' (give the checkpoint with --checkpoint DIR)");
  const std::string given = args.required("checkpoint");
  const std::string out = args.required("out");
  probe::ProbeOptions options;
  options.words = args.integer("words", 300, 1, 1 << 20);
  options.length = args.integer("length", 0, 3, 1 << 16);  // 0 (absent): the default length
  options.seed = static_cast<uint64_t>(args.integer("seed", 1, 0, INT64_MAX));
  const Device device = args.device("device", "cpu");
  check_output(out, OutputKind::folder, args.has("overwrite"));

  const std::string dir = train::resolve_checkpoint(given);
  check_output_spares(out, dir, "--checkpoint");
  const nn::BertConfig config = nn::load_config(dir);
  options.layers = parse_layers(args.str("layer", "1"), config.num_hidden_layers);
  const std::string vocab_path = args.has("vocab") ? args.required("vocab") : train::find_vocab(dir);
  check_output_spares(out, vocab_path, "--vocab");
  const text::Vocab vocab = text::Vocab::load(vocab_path);
  auto model = pe::load_model(dir, device);

  probe::ProbeResult r = probe::identical_word_probe(*model, vocab, options);

  // Everything to write, rendered before the first file is touched.
  std::vector<std::pair<std::string, std::string>> files;
  json::Value indicators = json::Value::object();
  json::Value file_list = json::Value::object();
  for (const probe::LayerProbe& p : r.layers) {
    const std::string k = std::to_string(p.layer), key = "layer_" + k;
    indicators[key] = probe::layer_indicators_json(p.attention);
    json::Value f = json::Value::object();
    f["attention_csv"] = "attention_layer" + k + ".csv";
    f["scores_csv"] = "scores_layer" + k + ".csv";
    f["attention_png"] = "attention_layer" + k + ".png";
    f["scores_png"] = "scores_layer" + k + ".png";
    files.emplace_back(f["attention_csv"].as_string(), probe::to_csv(p.attention));
    files.emplace_back(f["scores_csv"].as_string(), probe::to_csv(p.scores));
    files.emplace_back(f["attention_png"].as_string(), png::encode(layer_heatmap(p.attention, config.pe, p.layer, false)));
    files.emplace_back(f["scores_png"].as_string(), png::encode(layer_heatmap(p.scores, config.pe, p.layer, true)));
    file_list[key] = f;
  }
  files.emplace_back("indicators.json", json::dump(indicators, 2) + "\n");

  json::Value meta = json::Value::object();
  meta["written_by"] = "ordo probe";
  meta["checkpoint"] = dir;
  meta["checkpoint_given"] = given;
  meta["vocab"] = vocab_path;
  meta["variant"] = config.pe;
  meta["num_hidden_layers"] = config.num_hidden_layers;
  meta["num_attention_heads"] = config.num_attention_heads;
  meta["words"] = options.words;
  meta["length"] = r.length;
  meta["length_note"] = "tokens per sequence, [CLS] and [SEP] included: [CLS] + (length - 2) x word + [SEP]";
  json::Value layers = json::Value::array();
  for (const auto& p : r.layers) layers.push_back(p.layer);
  meta["layers"] = layers;
  meta["seed"] = static_cast<int64_t>(options.seed);
  json::Value words = json::Value::array();
  for (int32_t id : r.word_ids) words.push_back(vocab.token(id));
  meta["word_tokens"] = words;
  meta["indicators"] = "indicators.json";
  meta["files"] = file_list;
  files.emplace_back("probe.json", json::dump(meta, 2) + "\n");

  write_folder(out, files);

  std::printf("ordo probe: %lld words x length %lld through %s (pe %s), layer%s", static_cast<long long>(options.words),
              static_cast<long long>(r.length), dir.c_str(), config.pe.c_str(), r.layers.size() > 1 ? "s" : "");
  for (const auto& p : r.layers) std::printf(" %d", p.layer);
  std::printf(" -> %s\n", out.c_str());
  return 0;
}

cli::Register command({"probe", "identical word probing of a checkpoint: attention maps, heatmaps and indicators",
                       "--checkpoint DIR --out DIR2 [--words N] [--length L] [--layer K|all] [--seed S]"
                       " [--vocab FILE] [--device cpu|cuda[:N]] [--overwrite]\n"
                       "  DIR: a checkpoint (config.json + model.safetensors) or a run directory (its latest\n"
                       "       checkpoint: the highest RUN/checkpoints/step_N)\n"
                       "  --words N     random words, neither special nor ##-pieces (default 300)\n"
                       "  --length L    tokens per sequence, [CLS] and [SEP] included (default 128, or the\n"
                       "                position table's size when smaller)\n"
                       "  --layer K     the layer probed, 1-based (default 1); 'all': every layer\n"
                       "  --seed S      the word draw (default 1)\n"
                       "  --vocab FILE  default: DIR's vocab.txt, else its run's\n"
                       "  --overwrite   replace DIR2 if it exists (whole: no file of the previous probe stays)\n"
                       "  writes DIR2/attention_layerK.{csv,png}, scores_layerK.{csv,png}, indicators.json, probe.json",
                       run});

}  // namespace
