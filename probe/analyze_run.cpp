// `ordo analyze` (probe/analyze_run.h): the registry of its analyses, the
// driver that loads the run's checkpoint (or a checkpoint outside a run)
// and runs every analysis into one folder, and what other commands and the
// reports compute with it (positional_scores, segment_attention, Wang &
// Chen's tables over several models). The analyses live in analyze_*.cpp,
// their shared pieces in analyze_parts.h.
#include "probe/analyze_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fnmatch.h>
#include <memory>
#include <optional>
#include <set>

#include "base/file_io.h"
#include "base/json.h"
#include "base/output.h"
#include "downstream/tsv.h"
#include "model/model.h"
#include "nn/bert.h"
#include "probe/analyze_parts.h"
#include "probe/wang_chen.h"
#include "train/checkpoint_paths.h"
#include "train/pretrain.h"

namespace ordo::probe {

using namespace analyses;

const std::vector<Analysis>& analyses::registered_analyses() {
  static const std::vector<Analysis> all = {
      {"similarity_of_absolute", {"absolute_dot.csv", "absolute_cosine.csv", "absolute_similarity.svg"},
       similarity_of_absolute},
      {"similarity_of_relative",
       {"relative_dot.csv", "relative_cosine.csv", "relative_threshold.json", "relative_similarity.svg"},
       similarity_of_relative},
      {"offset_parameters", {"offset_parameters.csv", "offset_parameters.svg"}, offset_parameters},
      {"learned_frequencies", {"frequencies.csv", "frequencies.svg"}, learned_frequencies},
      {"position_position_term", {"position_position_layer1.csv", "position_position_layer1.svg"},
       position_position_term},
      {"positional_score_maps",
       {"positional_scores_layer1.csv", "positional_scores_rank.csv", "positional_scores_layer1.svg"},
       positional_score_maps},
      {"positional_score_layers", {"positional_scores_layers.csv", "positional_scores_layers.svg"},
       positional_score_layers},
      {"segment_attention_maps", {"segment_attention_layer1.csv", "segment_attention_layer1.svg"},
       segment_attention_maps},
      {"attention_rank", {"attention_rank.csv", "attention_rank.svg"}, attention_rank},
      {"probes_of_table",
       {"position_regression.json", "position_regression.svg", "relative_order.json", "relative_order.svg",
        "informativeness.csv", "informativeness.json", "informativeness.svg"},
       probes_of_table},
      {"snapshots", {"snapshot_step_*.csv", "snapshots.json", "snapshots.svg"}, snapshots},
      {"indicator_trajectory", {"indicator_trajectory.json", "indicator_trajectory.svg"}, indicator_trajectory},
      {"evaluations",
       {"skip_position_attack.json", "skip_position_attack.svg", "beyond_length.json", "beyond_length.svg"},
       evaluations},
      {"attention_on_text", {"attention_text_layer1.csv", "attention_text_layer1.json", "attention_text_layer1.svg"},
       attention_on_text},
      {"dependency_parsing_heads", {"dependency_heads.json", "dependency_heads.csv", "dependency_heads.svg"},
       dependency_parsing_heads},
  };
  return all;
}

namespace {

// The run's checkpoint the options name (the newest complete one by default).
int64_t chosen_step(const AnalyzeOptions& o) {
  std::vector<int64_t> steps = checkpoint_steps(o.run);
  ORDO_CHECK(!steps.empty(), "--run: '", o.run, "' has no complete checkpoint under checkpoints/ (pretrain writes them)");
  if (o.checkpoint.empty()) return steps.back();
  const int64_t step = parse_checkpoint_flag(o.checkpoint);
  if (std::find(steps.begin(), steps.end(), step) == steps.end()) {
    std::string have;
    for (int64_t s : steps) have += (have.empty() ? "" : ", ") + step_name(s);
    throw Error(detail::cat("--checkpoint: '", o.checkpoint, "' is not a complete checkpoint of ", o.run,
                            " (it has ", have, ")"));
  }
  return step;
}

// Runs `a`, and holds it to its row: every file it wrote is one the registry lists.
void run_analysis(const Analysis& a, RunState& c, Output& out) {
  const size_t before = out.files.size();
  a.run(c, out);
  for (size_t f = before; f < out.files.size(); ++f) {
    const std::string& name = out.files[f].first;
    const bool listed = std::any_of(a.writes.begin(), a.writes.end(), [&](const std::string& pattern) {
      return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
    });
    ORDO_CHECK(listed, "analyze: the analysis ", a.name, " wrote ", name,
               ", a file its row of the registry (probe/analyze_run.cpp) does not list");
  }
}

}  // namespace

std::string model_label(const nn::BertConfig& c) {
  return c.model_type == "bert" ? c.pe : c.model_type + " (" + c.pe + ")";
}

AnalyzeSummary analyze_run(const AnalyzeOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool single = o.run.empty();  // a checkpoint outside a run (--model)
  ORDO_CHECK(!single || !o.model_dir.empty(), "analyze: no run directory (--run) or checkpoint (--model) given");
  ORDO_CHECK(single || o.model_dir.empty(), "analyze: give --run or --model, not both");
  ORDO_CHECK(!o.out.empty(), "analyze: no output directory given (--out)");
  ORDO_CHECK(o.eval_sequences >= 1, "analyze: --eval-sequences must be at least 1, got ", o.eval_sequences);
  ORDO_CHECK(o.positions >= 2, "analyze: --positions must be at least 2, got ", o.positions);
  if (!single) {
    ORDO_CHECK(directory_exists(o.run), "--run: '", o.run, "' is not a directory");
    ORDO_CHECK(file_exists(o.run + "/config.json"), "--run: '", o.run, "' holds no run (no config.json)");
    // A checkpoint folder (an HF model, a run's step_N) has a config.json too,
    // the model's: say what it is rather than read it as a run's config.
    ORDO_CHECK(!file_exists(o.run + "/model.safetensors") || directory_exists(o.run + "/checkpoints"), "--run: '",
               o.run, "' is a checkpoint (config.json + model.safetensors), not a run of ordo pretrain: analyze "
               "it with --model ", o.run);
  }
  check_output(o.out, OutputKind::folder, o.overwrite,
               {{single ? o.model_dir : o.run, single ? "--model" : "--run"}});

  RunState c;
  c.options = o;
  std::string dir;
  if (single) {
    dir = train::resolve_checkpoint(o.model_dir);
    c.label = dir.substr(dir.find_last_of('/') + 1);
  } else {
    c.run_dir = o.run;
    c.run = train::read_run_config(o.run + "/config.json", {});
    c.step = chosen_step(o);
    c.label = step_name(c.step);
    dir = train::checkpoint_dir(o.run, c.step);
  }
  // A bare encoder loads too, and a fine-tuned model without its task head:
  // the analyses read positions and attention weights, not the heads.
  nn::LoadReport loaded;
  c.model = model::load_model(dir, Device::cpu(), &loaded);
  if (!loaded.unused.empty() && !o.quiet)
    std::fprintf(stderr, "ordo analyze: %s: the task head (%s) left out; the analyses read the encoder\n", dir.c_str(),
                 downstream::join_fields(loaded.unused, ", ").c_str());
  const nn::BertConfig& m = c.model->bert.config();
  c.variant = model_label(m);
  const int64_t max_position = c.model->bert.position_encoding().max_position();
  const int64_t rows = max_position >= 0 ? max_position + 1 : m.max_position_embeddings;
  // A run: the positions it trained; a checkpoint: the first --positions (Wang & Chen 2020 take 512).
  c.trained = single ? std::min(rows, o.positions) : trained_length(c.run);
  c.length = std::min(rows, c.trained);
  c.table = absolute_table(*c.model, c.length);

  Output out;
  out.quiet = o.quiet;
  c.why_not = "a checkpoint outside an ordo run has no held-out corpus (use --run)";
  if (!single) {
    try {
      c.held = std::make_unique<HeldOut>(load_held_out(c.run, o.run));
    } catch (const Error& e) {
      c.why_not = e.what();
    }
  }
  if (c.held) {  // L distinct held-out tokens for the token-token term
    // Not a window of running text: its repeated tokens are equal rows of X,
    // which would cap the term's rank at the window's distinct tokens (about
    // 50 of 64 in the synthetic language) whatever the model learned.
    std::set<int32_t> seen;
    for (size_t i = 0; i < c.held->stream.size() && static_cast<int64_t>(c.sample.size()) < c.length; ++i)
      if (seen.insert(c.held->stream[i]).second) c.sample.push_back(c.held->stream[i]);
  }
  for (const Analysis& a : registered_analyses()) run_analysis(a, c, out);

  json::Value index = json::Value::object();
  index["variant"] = m.pe;
  index["model_type"] = m.model_type;
  index[single ? "model" : "run"] = single ? dir : o.run;
  index["checkpoint"] = c.label;
  index["analyses"] = out.analyses;
  index["skipped"] = out.skipped;
  // Everything computed: now the files, the index last, in a folder swapped in whole for o.out.
  out.file("index.json", json::dump(index, 2) + "\n");
  write_folder(o.out, out.files);

  AnalyzeSummary s;
  s.variant = c.variant;
  s.checkpoint = c.label;
  s.analyses = static_cast<int64_t>(out.analyses.size());
  s.skipped = static_cast<int64_t>(out.skipped.size());
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

Matrix position_table(nn::PretrainingModel& model, int64_t rows) { return absolute_table(model, rows); }

std::vector<Matrix> positional_scores(nn::PretrainingModel& model, int layer, int64_t length) {
  NoGradGuard no_grad;
  nn::PositionEncoding& pe = model.bert.position_encoding();
  const nn::BertConfig& m = model.bert.config();
  const int64_t H = m.num_attention_heads, d = m.head_dim();
  const Device device = model.bert.device();
  const Tensor positions = nn::default_positions(1, length, device);
  nn::Context ctx = nn::Context::eval();
  const DType dtype = model.bert.embeddings.word_embeddings.weight.var.dtype();
  const nn::AttentionState s{layer, H, d, &positions, nullptr, &ctx, dtype};
  const Var zero(Tensor::zeros({1, H, length, d}, dtype, device));
  Var bias = pe.score_bias(s, zero, zero);
  if (!bias.defined()) return {};
  if (pe.adds_segment_scores()) bias = sub(bias, pe.segment_scores(s));
  const Tensor b = bias.value().to(Device::cpu()).contiguous();
  ORDO_CHECK(b.numel() == H * length * length || b.numel() == length * length, "positional_scores: variant ", m.pe,
             "'s score terms have ", b.numel(), " values, expected [1, ", H, " or 1, ", length, ", ", length, "]");
  const std::vector<double> v = b.to_doubles();
  const bool per_head = b.numel() == H * length * length;
  std::vector<Matrix> heads;
  bool nonzero = false;
  for (int64_t h = 0; h < H; ++h) {
    Matrix t(length, length);
    for (int64_t k = 0; k < length * length; ++k) {
      t.data[static_cast<size_t>(k)] = v[static_cast<size_t>((per_head ? h * length * length : 0) + k)];
      nonzero |= t.data[static_cast<size_t>(k)] != 0;
    }
    heads.push_back(std::move(t));
  }
  if (!nonzero) return {};
  return heads;
}

std::vector<Matrix> segment_attention(nn::PretrainingModel& model, int layer, int64_t length, int64_t second_segment) {
  NoGradGuard no_grad;
  nn::PositionEncoding& pe = model.bert.position_encoding();
  if (!pe.adds_segment_scores()) return {};
  const nn::BertConfig& m = model.bert.config();
  const int64_t H = m.num_attention_heads, d = m.head_dim();
  const Device device = model.bert.device();
  const Tensor positions = nn::default_positions(1, length, device);
  std::vector<int64_t> split(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) split[static_cast<size_t>(i)] = i >= second_segment ? 1 : 0;
  const Tensor segments = Tensor::from_vector(split, {1, length}).to(device);
  nn::Context ctx = nn::Context::eval();
  const DType dtype = model.bert.embeddings.word_embeddings.weight.var.dtype();
  const nn::AttentionState s{layer, H, d, &positions, &segments, &ctx, dtype};
  const Var zero(Tensor::zeros({1, H, length, d}, dtype, device));
  const Tensor b = softmax(pe.score_bias(s, zero, zero).value().expand({1, H, length, length}).contiguous())
                       .to(Device::cpu());
  const std::vector<double> v = b.to_doubles();
  std::vector<Matrix> heads;
  for (int64_t h = 0; h < H; ++h) {
    Matrix a(length, length);
    for (int64_t k = 0; k < length * length; ++k)
      a.data[static_cast<size_t>(k)] = v[static_cast<size_t>(h * length * length + k)];
    heads.push_back(std::move(a));
  }
  return heads;
}

WangChenReport wang_chen_of(const std::vector<std::pair<std::string, std::string>>& models, int64_t positions,
                            uint64_t seed, bool quiet) {
  // Every entry loaded and checked before anything is computed.
  std::vector<NamedTable> tables;
  json::Value skipped = json::Value::array();
  for (const auto& [name, given] : models) {
    const std::string dir = train::resolve_checkpoint(given);
    auto model = model::load_model(dir, Device::cpu());
    const nn::BertConfig& c = model->bert.config();
    const int64_t max_position = model->bert.position_encoding().max_position();
    int64_t rows = std::min(max_position >= 0 ? max_position + 1 : c.max_position_embeddings, positions);
    // An ordo run's rows past its pretraining length were never trained.
    if (const std::optional<int64_t> trained = train::checkpoint_trained_length(dir)) rows = std::min(rows, *trained);
    NamedTable t{name, std::string(c.decoder ? "decoder (causal LM), " : "encoder, ") + model_label(c),
                 absolute_table(*model, rows)};
    if (t.table.empty()) {
      json::Value e = json::Value::object();
      e["model"] = name;
      e["reason"] = "variant " + c.pe + " adds no position vector at the input";
      skipped.push_back(e);
      continue;
    }
    if (!quiet) std::fprintf(stderr, "analyze: %s: %s, %lld positions\n", name.c_str(), t.kind.c_str(),
                             static_cast<long long>(t.table.rows));
    tables.push_back(std::move(t));
  }
  ORDO_CHECK(!tables.empty(), "Wang & Chen's tables: no checkpoint or run with a position table among the ",
             models.size(), " given (", skipped.size(), " without one)");
  WangChenOptions wo;
  wo.positions = positions;
  wo.seed = seed;
  WangChenReport report = wang_chen_tables(tables, wo);
  report.summary["skipped"] = skipped;
  report.files.front().second = json::dump(report.summary, 2) + "\n";  // wang_chen.json, with the skipped
  return report;
}

AnalyzeSummary analyze_models(const AnalyzeOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  ORDO_CHECK(!o.out.empty(), "analyze: no output directory given (--out)");
  ORDO_CHECK(directory_exists(o.models), "--models: '", o.models, "' is not a directory");
  ORDO_CHECK(o.positions >= 2, "analyze: --positions must be at least 2, got ", o.positions);
  check_output(o.out, OutputKind::folder, o.overwrite, {{o.models, "--models"}});
  // Every entry that is a checkpoint or a run, in name order.
  std::vector<std::pair<std::string, std::string>> models;
  for (const std::string& name : list_directory(o.models)) {
    if (name == "." || name == ".." || !directory_exists(o.models + "/" + name)) continue;
    const std::string given = o.models + "/" + name;
    const bool checkpoint = file_exists(given + "/config.json") && file_exists(given + "/model.safetensors");
    if (checkpoint || directory_exists(given + "/checkpoints")) models.emplace_back(name, given);  // else neither
  }
  ORDO_CHECK(!models.empty(), "--models: '", o.models, "' holds no checkpoint or run");
  WangChenReport report = wang_chen_of(models, o.positions, o.seed, o.quiet);
  report.summary["models"] = o.models;
  report.files.front().second = json::dump(report.summary, 2) + "\n";
  write_folder(o.out, report.files);
  AnalyzeSummary s;
  s.skipped = static_cast<int64_t>(report.summary["skipped"].size());
  s.analyses = static_cast<int64_t>(models.size()) - s.skipped;
  s.variant = std::to_string(s.analyses) + " models";
  s.checkpoint = std::to_string(report.positions) + " positions";
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

}  // namespace ordo::probe
