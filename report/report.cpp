// The report of several runs: see report/report.h.
#include "report/report.h"
#include "report/readings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>

#include "base/file_io.h"
#include "base/json_numbers.h"
#include "base/output.h"
#include "plot/plot.h"
#include "plot/svg.h"
#include "probe/analyze_run.h"
#include "probe/probe.h"

namespace ordo::report {

namespace {

// The table's columns (table_columns()) by kind.
bool text_column(const std::string& key) { return key == "variant" || key == "objective" || key == "layer"; }
bool indicator_column(const std::string& key) { return !text_column(key) && key.rfind("eval_", 0) != 0; }

const double kMissing = std::numeric_limits<double>::quiet_NaN();

json::Value read_json_file(const std::string& path) { return json::parse_file(path); }

// obj[key] as a string, or an error naming the file and the key.
std::string string_at(const json::Value& obj, const std::string& key, const std::string& file) {
  const json::Value* v = obj.is_object() ? obj.find(key) : nullptr;
  ORDO_CHECK(v && v->is_string(), file, ": \"", key, "\" must be a string");
  return v->as_string();
}

// A name that is safe as one path component and in HTML: letters, digits, '-', '_', '.'.
std::string safe_name(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  if (out.empty() || out[0] == '.') out = "_" + out;
  return out;
}

// A path an index names, relative to its folder: no absolute path, no "..".
bool is_inside(const std::string& rel) {
  if (rel.empty() || rel[0] == '/') return false;
  for (const auto& part : std::filesystem::path(rel))
    if (part == "..") return false;
  return true;
}

// The layer a row shows: 1 when probed, else the first probed.
int choose_layer(const json::Value& probe, const std::string& file) {
  const json::Value* layers = probe.find("layers");
  ORDO_CHECK(layers && layers->is_array() && layers->size() > 0, file,
             ": \"layers\" must be a non-empty array of layer numbers");
  int first = 0;
  for (size_t k = 0; k < layers->size(); ++k) {
    const json::Value& l = (*layers)[k];
    ORDO_CHECK(l.is_number(), file, ": \"layers\"[", k, "] must be a layer number");
    const int v = static_cast<int>(l.as_int());
    if (v == 1) return 1;
    if (k == 0) first = v;
  }
  return first;
}

// The name of a probe file of the chosen layer: probe.json's "files", else
// the name `ordo probe` gives it.
std::string probe_file(const json::Value& probe, int layer, const std::string& key, const std::string& fallback) {
  const json::Value* files = probe.find("files");
  const json::Value* f = files && files->is_object() ? files->find("layer_" + std::to_string(layer)) : nullptr;
  const json::Value* name = f && f->is_object() ? f->find(key) : nullptr;
  return name && name->is_string() ? name->as_string() : fallback;
}

void read_probe(RunRecord& r) {
  const std::string dir = r.run_dir + "/probe";
  const std::string meta = dir + "/probe.json";
  ORDO_CHECK(file_exists(meta), meta, ": missing: probe the run first (ordo probe --checkpoint ", r.run_dir,
             " --out ", dir, ")");
  r.probe = read_json_file(meta);
  ORDO_CHECK(r.probe.is_object(), meta, ": expected a JSON object");
  r.layer = choose_layer(r.probe, meta);
  const std::string k = std::to_string(r.layer);

  const std::string ind_file = dir + "/indicators.json";
  ORDO_CHECK(file_exists(ind_file), ind_file, ": missing (ordo probe writes it beside probe.json)");
  const json::Value ind = read_json_file(ind_file);
  const json::Value* layer = ind.is_object() ? ind.find("layer_" + k) : nullptr;
  ORDO_CHECK(layer && layer->is_object(), ind_file, ": no \"layer_", k, "\" object (probe.json lists layer ", k, ")");
  for (const char* part : {"with_special", "without_special"}) {
    const json::Value* v = layer->find(part);
    ORDO_CHECK(v && v->is_object(), ind_file, ": \"layer_", k, "\" has no \"", part, "\" object");
    for (const auto& [key, heading] : table_columns()) {
      (void)heading;
      if (!indicator_column(key)) continue;
      const json::Value* x = v->find(key);
      ORDO_CHECK(x != nullptr, ind_file, ": \"layer_", k, "\".\"", part, "\" has no \"", key, "\"");
      try {
        json::to_number(*x);
      } catch (const Error& e) {
        throw Error(detail::cat(ind_file, ": \"layer_", k, "\".\"", part, "\".\"", key, "\": ", e.what()));
      }
    }
    (std::string(part) == "with_special" ? r.with_special : r.without_special) = *v;
  }

  const std::string csv = dir + "/" + probe_file(r.probe, r.layer, "attention_csv", "attention_layer" + k + ".csv");
  r.attention = probe::read_matrix_file(csv);
  probe::check_attention_matrix(r.attention, csv);
  const std::string scores_csv = dir + "/" + probe_file(r.probe, r.layer, "scores_csv", "scores_layer" + k + ".csv");
  const std::string scores = dir + "/" + probe_file(r.probe, r.layer, "scores_png", "scores_layer" + k + ".png");
  if (file_exists(scores_csv)) r.scores = probe::read_matrix_file(scores_csv);
  else if (file_exists(scores)) r.scores_png = scores;
}

// The objective's name in the table: the loss its eval_loss is.
std::string objective_label(const std::string& objective, const std::string& where) {
  if (objective == "mlm") return "MLM";
  if (objective == "mlm+nsp") return "MLM+NSP";
  if (objective == "causal") return "causal";
  throw Error(where + ": data.objective '" + objective + "' is not mlm, mlm+nsp or causal");
}

void read_variant(RunRecord& r) {
  const std::string config = r.run_dir + "/config.json";
  if (file_exists(config)) {
    const json::Value c = read_json_file(config);
    const json::Value* model = c.is_object() ? c.find("model") : nullptr;
    ORDO_CHECK(model && model->is_object(), config, ": no \"model\" object (a run config: ordo pretrain writes it)");
    const json::Value* pe = model->find("pe");
    // A run config may leave pe at its default (learned absolute), as BertConfig does.
    if (!pe) r.variant = "ape_learned";
    else r.variant = string_at(*model, "pe", config + " (model)");
    // Likewise data.objective (default mlm, as train::DataConfig).
    const json::Value* data = c.find("data");
    const bool given = data && data->is_object() && data->contains("objective");
    r.objective = objective_label(given ? string_at(*data, "objective", config + " (data)") : "mlm", config);
    return;
  }
  const json::Value* v = r.probe.find("variant");
  ORDO_CHECK(v && v->is_string(), r.run_dir, ": no config.json, and probe/probe.json has no \"variant\"");
  r.variant = v->as_string();
}

// The last evaluation in metrics.jsonl: the final held-out LM loss and accuracy.
void read_metrics(RunRecord& r) {
  const std::string file = r.run_dir + "/metrics.jsonl";
  if (!file_exists(file)) return;
  const std::string text = read_file(file);
  size_t start = 0;
  for (int64_t line = 1; start < text.size(); ++line) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string s = text.substr(start, end - start);
    start = end + 1;
    if (s.find_first_not_of(" \t\r") == std::string::npos) continue;
    json::Value v;
    try {
      v = json::parse(s);
    } catch (const Error& e) {
      throw Error(detail::cat(file, ": line ", line, ": ", e.what()));
    }
    ORDO_CHECK(v.is_object(), file, ": line ", line, ": expected a JSON object");
    const json::Value* step = v.find("step");
    const json::Value* loss = v.find("eval_loss");
    if (!loss) {
      // A training line: its language-model loss (without NSP's share where the objective has one).
      const json::Value* train = v.find("lm_loss") ? v.find("lm_loss") : v.find("loss");
      if (train && train->is_number() && step && step->is_number())
        r.training_loss.emplace_back(step->as_number(), train->as_number());
      continue;
    }
    ORDO_CHECK(loss->is_number(), file, ": line ", line, ": \"eval_loss\" must be a number");
    const json::Value* acc = v.find("eval_accuracy");
    ORDO_CHECK(!acc || acc->is_number(), file, ": line ", line, ": \"eval_accuracy\" must be a number");
    if (step && step->is_number()) r.held_out_loss.emplace_back(step->as_number(), loss->as_number());
    r.has_eval = true;
    r.eval_loss = loss->as_number();
    r.eval_accuracy = acc ? acc->as_number() : kMissing;
    r.eval_step = step && step->is_number() ? step->as_int() : -1;
  }
}

void read_analysis(RunRecord& r) {
  const std::string dir = r.run_dir + "/analysis";
  const std::string file = dir + "/index.json";
  if (!file_exists(file)) return;  // `ordo analyze` not run: nothing to show
  const json::Value index = read_json_file(file);
  const json::Value* list = index.is_array() ? &index : index.is_object() ? index.find("analyses") : nullptr;
  ORDO_CHECK(list && list->is_array(), file, ": expected {\"analyses\": [...]}");
  r.has_analysis = true;
  for (size_t k = 0; k < list->size(); ++k) {
    const json::Value& e = (*list)[k];
    const std::string where = detail::cat(file, " (analyses[", k, "])");
    ORDO_CHECK(e.is_object(), where, ": expected an object with \"title\"");
    AnalysisEntry a;
    a.title = string_at(e, "title", where);
    if (e.find("caption")) a.caption = string_at(e, "caption", where);
    auto path_of = [&](const char* key) -> std::string {
      if (!e.find(key)) return "";
      const std::string rel = string_at(e, key, where);
      ORDO_CHECK(is_inside(rel), where, ": \"", key, "\" '", rel, "' is not a path inside ", dir);
      return dir + "/" + rel;
    };
    a.figure = path_of("figure");
    if (a.figure.empty()) a.figure = path_of("png");  // an index written before the figures were SVG
    a.data = path_of("csv");
    if (a.data.empty()) a.data = path_of("json");
    r.analyses.push_back(a);
    // The layer-1 indicators at the run's checkpoints, drawn beside the other runs'.
    if (std::filesystem::path(a.data).filename() == "indicator_trajectory.json" && file_exists(a.data)) {
      const json::Value t = read_json_file(a.data);
      const json::Value* steps = t.is_object() ? t.find("steps") : nullptr;
      ORDO_CHECK(steps && steps->is_array(), a.data, ": expected {\"steps\": [...]}");
      r.trajectory = *steps;
    }
  }
  const json::Value* skipped = index.is_object() ? index.find("skipped") : nullptr;
  if (skipped && skipped->is_array())
    for (size_t k = 0; k < skipped->size(); ++k) {
      const json::Value& e = (*skipped)[k];
      const std::string where = detail::cat(file, " (skipped[", k, "])");
      ORDO_CHECK(e.is_object(), where, ": expected an object with \"title\"");
      r.skipped.emplace_back(string_at(e, "title", where), e.find("reason") ? string_at(e, "reason", where) : "");
    }
}

}  // namespace

RunRecord read_run(const std::string& run_dir) {
  RunRecord r;
  r.run_dir = run_dir;
  while (r.run_dir.size() > 1 && r.run_dir.back() == '/') r.run_dir.pop_back();
  ORDO_CHECK(directory_exists(r.run_dir), run_dir, ": not a directory (give run directories: ordo pretrain --out RUN)");
  read_probe(r);
  read_variant(r);
  read_metrics(r);
  read_analysis(r);
  return r;
}

std::vector<RunRecord> read_runs(const std::vector<std::string>& run_dirs) {
  ORDO_CHECK(!run_dirs.empty(), "no run directory given (ordo report RUN_DIR... --out REPORT_DIR)");
  std::vector<RunRecord> runs;
  std::map<std::string, int> count;
  for (const std::string& d : run_dirs) {
    runs.push_back(read_run(d));
    ++count[runs.back().variant];
  }
  // Labels: the variant; two runs of one variant are told apart by folder, then by number.
  std::map<std::string, int> seen;
  for (size_t k = 0; k < runs.size(); ++k) {
    RunRecord& r = runs[k];
    r.label = r.variant;
    if (count[r.variant] > 1) r.label += " (" + std::filesystem::path(r.run_dir).filename().string() + ")";
    if (seen[r.label]++ > 0) r.label += " #" + std::to_string(seen[r.label]);
    r.slug = std::to_string(k + 1) + "_" + safe_name(r.variant);
  }
  return runs;
}

// ---- the table ------------------------------------------------------------------------------

const std::vector<std::pair<std::string, std::string>>& table_columns() {
  static const std::vector<std::pair<std::string, std::string>> columns = {
      {"variant", "PE"},
      {"objective", "objective"},
      {"layer", "layer"},
      {"monotonicity", "monotonicity, all offsets"},
      {"monotonicity_first_k", "monotonicity, first 20 offsets"},
      {"translation_invariance", "translation invariance, w/ [CLS]"},
      {"translation_invariance_no_special", "translation invariance, w/o [CLS]"},
      {"symmetry_sd", "symmetry (SD)"},
      {"direction_balance", "direction balance"},
      {"locality", "locality"},
      {"symmetry", "symmetry (locality/symmetry paper)"},
      {"eval_loss", "held-out LM loss (masked tokens; causal: next token)"},
      {"eval_accuracy", "held-out LM accuracy (likewise)"},
  };
  return columns;
}

// The entities of XML text, which HTML reads the same.
std::string html_escape(const std::string& s) { return plot::svg::escape(s); }

namespace {

// A text cell.
std::string text_cell(const RunRecord& r, const std::string& key) {
  if (key == "variant") return r.label;
  if (key == "objective") return r.objective.empty() ? "n/a" : r.objective;
  return std::to_string(r.layer);
}

// A numeric cell: an indicator (with the special tokens, as Table 2) or the evaluation.
double cell_value(const RunRecord& r, const std::string& key) {
  if (key == "eval_loss") return r.has_eval ? r.eval_loss : kMissing;
  if (key == "eval_accuracy") return r.has_eval ? r.eval_accuracy : kMissing;
  return json::to_number(r.with_special[key]);
}

std::string format(double x, const char* fmt) {
  if (std::isnan(x)) return "";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// The text of a cell as the Markdown and HTML tables show it.
std::string display_cell(const RunRecord& r, const std::string& key) {
  if (text_column(key)) return text_cell(r, key);
  const std::string s = format(cell_value(r, key), "%.4f");
  return s.empty() ? "n/a" : s;
}

}  // namespace

std::string table_markdown(const std::vector<RunRecord>& runs) {
  std::string out = "|";
  for (const auto& [key, heading] : table_columns()) out += " " + heading + " |";
  out += "\n|";
  for (const auto& [key, heading] : table_columns()) out += text_column(key) ? " --- |" : " ---: |";
  out += "\n";
  for (const RunRecord& r : runs) {
    out += "|";
    for (const auto& [key, heading] : table_columns()) out += " " + md_cell(display_cell(r, key)) + " |";
    out += "\n";
  }
  return out;
}

std::string table_csv(const std::vector<RunRecord>& runs) {
  std::string out;
  for (const auto& [key, heading] : table_columns()) out += key + ",";
  out += "eval_step,run\n";
  for (const RunRecord& r : runs) {
    for (const auto& [key, heading] : table_columns()) {
      if (text_column(key)) out += csv_field(text_cell(r, key));
      else out += format(cell_value(r, key), "%.9g");
      out += ",";
    }
    out += (r.has_eval && r.eval_step >= 0 ? std::to_string(r.eval_step) : "") + "," + csv_field(r.run_dir) + "\n";
  }
  return out;
}

json::Value table_json(const std::vector<RunRecord>& runs) {
  json::Value columns = json::Value::array();
  for (const auto& [key, heading] : table_columns()) {
    json::Value c = json::Value::object();
    c["key"] = key;
    c["heading"] = heading;
    columns.push_back(c);
  }
  json::Value rows = json::Value::array();
  for (const RunRecord& r : runs) {
    json::Value row = json::Value::object();
    for (const auto& [key, heading] : table_columns()) {
      if (key == "layer") row[key] = r.layer;
      else if (text_column(key)) row[key] = text_cell(r, key);
      else if (std::isnan(cell_value(r, key))) row[key] = nullptr;
      else row[key] = json::number(cell_value(r, key));
    }
    row["pe"] = r.variant;
    row["eval_step"] = r.has_eval && r.eval_step >= 0 ? json::Value(r.eval_step) : json::Value();
    row["run"] = r.run_dir;
    row["without_special"] = r.without_special;
    rows.push_back(row);
  }
  json::Value out = json::Value::object();
  out["columns"] = columns;
  out["rows"] = rows;
  out["note"] = "indicators of the probed layer's softmax attention with the special tokens (Wang et al. 2021, "
                "Table 2); without_special: the same with [CLS] and [SEP] rows and columns dropped; "
                "\"inf\": a zero denominator";
  return out;
}

// ---- the pictures and the page -------------------------------------------------------------

namespace {

// A map of the run's probed layer titled `title`, map_size pixels across,
// its colours spread over the words' range (the specials' would swamp it).
plot::svg::Figure layer_panel(const std::string& title, const Matrix& m, const std::string& colorbar_label,
                              double map_size) {
  plot::HeatmapStyle style;
  style.title = title;
  style.x_label = "key position j (tokens)";
  style.y_label = "query position i (tokens)";
  style.colorbar_label = colorbar_label;
  probe::range_of_word_positions(style, m);
  return plot::svg::heatmap(m, style, map_size);
}

// The page's table heads its indicator and loss columns with short names,
// each spelt out in a key under the table (table_columns()' headings), so
// that its 13 columns fit a page 1400 px wide.
const std::map<std::string, std::string>& short_headings() {
  static const std::map<std::string, std::string> names = {
      {"monotonicity", "OPR"},         {"monotonicity_first_k", "OPR 20"},
      {"translation_invariance", "AIV"}, {"translation_invariance_no_special", "AIV w/o"},
      {"symmetry_sd", "SD"},           {"direction_balance", "DB"},
      {"symmetry", "symmetry"},       {"eval_loss", "LM loss"},
      {"eval_accuracy", "LM acc."},
  };
  return names;
}

// A variant's name that may wrap after each '+' of a combination.
std::string breakable_name(const std::string& name) {
  std::string out;
  for (char c : name) out += c == '+' ? std::string("+<wbr>") : html_escape(std::string(1, c));
  return out;
}

std::string html_table(const std::vector<RunRecord>& runs) {
  std::string out = "<table>\n<tr>", key;
  for (const auto& [column, heading] : table_columns()) {
    const auto name = short_headings().find(column);
    if (name == short_headings().end()) {
      out += "<th>" + html_escape(heading) + "</th>";
      continue;
    }
    out += "<th title=\"" + html_escape(heading) + "\">" + html_escape(name->second) + "</th>";
    key += std::string(key.empty() ? "" : "; ") + "<b>" + html_escape(name->second) + "</b>: " + html_escape(heading);
  }
  out += "</tr>\n";
  for (const RunRecord& r : runs) {
    out += "<tr>";
    for (const auto& [column, heading] : table_columns())
      out += (column == "variant" ? "<td><a href=\"#" + r.slug + "\">" + breakable_name(display_cell(r, column)) +
                                        "</a></td>"
                                  : "<td>" + html_escape(display_cell(r, column)) + "</td>");
    out += "</tr>\n";
  }
  return out + "</table>\n<p class=\"key\">" + key + ".</p>\n";
}

std::string figure_html(const std::string& src, const std::string& caption) {
  return "<figure><img src=\"" + html_escape(src) + "\" alt=\"" + html_escape(caption) + "\"><figcaption>" +
         html_escape(caption) + "</figcaption></figure>\n";
}

}  // namespace

namespace {

// One run's section; adds the files it links to `files`.
std::string run_section(const RunRecord& r, std::vector<OutputFile>& files) {
  const std::string base = "runs/" + r.slug + "/";
  std::string out = "<section id=\"" + r.slug + "\">\n<h2>" + html_escape(r.label) + "</h2>\n";
  auto num = [&](const char* key) {
    const json::Value* v = r.probe.find(key);
    return v ? json::dump(*v) : std::string("?");
  };
  out += "<p>Run <code>" + html_escape(r.run_dir) + "</code>, checkpoint <code>" +
         html_escape(r.probe.find("checkpoint") && r.probe["checkpoint"].is_string() ? r.probe["checkpoint"].as_string() : "?") +
         "</code>; identical word probing of layer " + std::to_string(r.layer) + " with " + num("words") +
         " words, length " + num("length") + " ([CLS] and [SEP] included), seed " + num("seed") + ".";
  if (r.has_eval)
    out += " Final held-out " + std::string(r.objective == "causal" ? "next-token" : "masked-LM") + " loss " +
           format(r.eval_loss, "%.4f") +
           (std::isnan(r.eval_accuracy) ? "" : ", accuracy " + format(r.eval_accuracy, "%.4f")) +
           (r.eval_step >= 0 ? " (step " + std::to_string(r.eval_step) + ")" : "") + ".";
  out += "</p>\n<div class=\"row\">\n";
  files.push_back({base + "attention.svg",
                   plot::svg::document(layer_panel(r.label + ": attention", r.attention, "attention weight", 360))});
  out += figure_html(base + "attention.svg", "softmax attention, averaged over heads and words (Wang et al. 2021, Eq. 8)");
  if (!r.scores.empty()) {
    files.push_back({base + "scores.svg", plot::svg::document(layer_panel(r.label + ": scores", r.scores,
                                                                          "score (unnormalised)", 360))});
    out += figure_html(base + "scores.svg", "pre-softmax scores, averaged likewise (unnormalised; Wang et al. 2021, App. J)");
  } else if (!r.scores_png.empty()) {  // a probe folder from before the scores' CSV
    files.push_back({base + "scores.png", read_file(r.scores_png)});
    out += figure_html(base + "scores.png", "pre-softmax scores, averaged likewise (unnormalised; Wang et al. 2021, App. J)");
  }
  out += "</div>\n<p><b>What it shows.</b> " + html_escape(reading_of(r)) + "</p>\n";

  // Indicators with and without the specials.
  out += "<table>\n<tr><th>indicator</th><th>with [CLS], [SEP]</th><th>without their rows and columns</th></tr>\n";
  for (const auto& [key, heading] : table_columns()) {
    if (!indicator_column(key)) continue;
    out += "<tr><td>" + html_escape(heading) + "</td><td>" +
           format(json::to_number(r.with_special[key]), "%.4f") + "</td><td>" +
           format(json::to_number(r.without_special[key]), "%.4f") + "</td></tr>\n";
  }
  out += "</table>\n";

  if (!r.has_analysis) {
    out += "<p>No analyses (<code>ordo analyze --run " + html_escape(r.run_dir) + " --out " +
           html_escape(r.run_dir) + "/analysis</code> makes them).</p>\n";
  } else {
    out += "<h3>Analyses</h3>\n";
    int n = 0;
    for (const AnalysisEntry& a : r.analyses) {
      ++n;
      out += "<h4>" + html_escape(a.title) + "</h4>\n";
      // Copies keep their names under a numbered prefix: two analyses may share one.
      if (!a.figure.empty() && file_exists(a.figure)) {
        const std::string name = base + "analysis/" + std::to_string(n) + "_" +
                                 safe_name(std::filesystem::path(a.figure).filename().string());
        files.push_back({name, read_file(a.figure)});
        out += figure_html(name, a.caption.empty() ? a.title : a.caption);
      } else {
        if (!a.caption.empty()) out += "<p>" + html_escape(a.caption) + "</p>\n";
        if (!a.figure.empty()) out += "<p>(figure missing: <code>" + html_escape(a.figure) + "</code>)</p>\n";
      }
      if (!a.data.empty() && file_exists(a.data)) {
        const std::string name = base + "analysis/" + std::to_string(n) + "_" +
                                 safe_name(std::filesystem::path(a.data).filename().string());
        files.push_back({name, read_file(a.data)});
        out += "<p>Data: <a href=\"" + html_escape(name) + "\">" +
               html_escape(std::filesystem::path(a.data).filename().string()) + "</a></p>\n";
      } else if (!a.data.empty()) {
        out += "<p>(data missing: <code>" + html_escape(a.data) + "</code>)</p>\n";
      }
    }
    if (!r.skipped.empty()) {
      out += "<p>Not applicable to this variant:</p>\n<ul>\n";
      for (const auto& [title, reason] : r.skipped)
        out += "<li>" + html_escape(title) + (reason.empty() ? "" : ": " + html_escape(reason)) + "</li>\n";
      out += "</ul>\n";
    }
  }
  return out + "</section>\n";
}

}  // namespace

namespace {

// Panels against step share one legend: run k of those drawn is look k in
// every panel (plot/svg.h: colour, marker and dash).
plot::svg::ChartStyle step_chart(const std::string& title, const std::string& y_label) {
  plot::svg::ChartStyle style;
  style.title = title;
  style.x_label = "step (optimizer updates)";
  style.y_label = y_label;
  style.legend = false;
  return style;
}

std::vector<std::pair<std::string, int>> legend_of(const std::vector<plot::svg::Line>& lines) {
  std::vector<std::pair<std::string, int>> entries;
  for (const plot::svg::Line& line : lines) entries.emplace_back(line.name, line.look);
  return entries;
}

// The layer-1 indicators against step, one panel per indicator and one line
// per run that has them (ordo analyze's indicator_trajectory.json).
plot::svg::Figure trajectory_grid(const std::vector<RunRecord>& runs) {
  std::vector<plot::svg::Figure> panels;
  std::vector<plot::svg::Line> lines;
  for (const auto& [key, title] : probe::trajectory_indicators()) {
    lines.clear();
    for (const RunRecord& r : runs) {
      if (!r.trajectory.is_array()) continue;
      plot::svg::Line line;
      line.name = r.label;
      line.look = static_cast<int>(lines.size());
      for (const auto& [step, value] : trajectory_of(r, key)) {
        line.x.push_back(step);
        line.y.push_back(value);
      }
      lines.push_back(line);
    }
    panels.push_back(plot::svg::line_chart(lines, step_chart(title, probe::indicator_axis(title))));
  }
  return plot::svg::grid(panels, 2, "layer-1 indicators during pretraining (without [CLS], [SEP])", legend_of(lines));
}

// The runs' training and held-out loss against step, one panel each (the
// locality/symmetry paper's Figure 6), and the same curves as JSON.
bool has_curves(const RunRecord& r) { return r.training_loss.size() + r.held_out_loss.size() >= 2; }

plot::svg::Figure loss_grid(const std::vector<RunRecord>& runs) {
  std::vector<plot::svg::Figure> panels;
  std::vector<plot::svg::Line> lines;
  for (const bool held_out : {false, true}) {
    lines.clear();
    for (const RunRecord& r : runs) {
      if (!has_curves(r)) continue;
      plot::svg::Line line;
      line.name = r.label;
      line.look = static_cast<int>(lines.size());
      for (const auto& [step, loss] : held_out ? r.held_out_loss : r.training_loss) {
        if (!std::isfinite(loss)) continue;
        line.x.push_back(step);
        line.y.push_back(loss);
      }
      lines.push_back(line);
    }
    panels.push_back(plot::svg::line_chart(
        lines, step_chart(held_out ? "held-out loss" : "training loss", "cross-entropy (nats per token)")));
  }
  return plot::svg::grid(panels, 2, "language-model loss during pretraining", legend_of(lines));
}

json::Value loss_json(const std::vector<RunRecord>& runs) {
  auto points = [](const std::vector<std::pair<double, double>>& curve) {
    json::Value a = json::Value::array();
    for (const auto& [step, loss] : curve) {
      json::Value p = json::Value::array();
      p.push_back(step);
      p.push_back(loss);
      a.push_back(p);
    }
    return a;
  };
  json::Value out = json::Value::array();
  for (const RunRecord& r : runs) {
    if (!has_curves(r)) continue;
    json::Value o = json::Value::object();
    o["run"] = r.label;
    o["training"] = points(r.training_loss);
    o["held_out"] = points(r.held_out_loss);
    out.push_back(o);
  }
  json::Value doc = json::Value::object();
  doc["runs"] = out;
  return doc;
}

}  // namespace

std::vector<OutputFile> render_report(const std::vector<RunRecord>& runs, const std::string& lead_html) {
  ORDO_CHECK(!runs.empty(), "report: no runs");
  std::vector<OutputFile> files;
  files.push_back({"table.md", table_markdown(runs)});
  files.push_back({"table.csv", table_csv(runs)});
  files.push_back({"table.json", json::dump(table_json(runs), 2) + "\n"});

  std::vector<plot::svg::Figure> panels;
  for (const RunRecord& r : runs) panels.push_back(layer_panel(r.label, r.attention, "attention weight", 200));
  files.push_back({"heatmaps.svg", plot::svg::document(plot::svg::grid(panels, 0, "identical word probing: attention"))});

  std::string sections;
  if (std::any_of(runs.begin(), runs.end(), [](const RunRecord& r) { return r.trajectory.is_array(); })) {
    files.push_back({"trajectories.svg", plot::svg::document(trajectory_grid(runs))});
    sections += "<h2>Indicators during pretraining</h2>\n" +
                figure_html("trajectories.svg", "identical word probing of layer 1 at the runs' checkpoints (ordo "
                                                "analyze), without the special tokens' rows and columns: 0 is the "
                                                "property met, DB 1 is balanced");
    const std::string reading = trajectory_reading(runs);
    if (!reading.empty()) sections += "<p><b>What it shows.</b> " + html_escape(reading) + "</p>\n";
  }
  if (std::any_of(runs.begin(), runs.end(), has_curves)) {
    files.push_back({"losses.svg", plot::svg::document(loss_grid(runs))});
    files.push_back({"losses.json", json::dump(loss_json(runs), 2) + "\n"});
    sections += "<h2>Loss during pretraining</h2>\n<p>The curves as <a href=\"losses.json\">JSON</a>.</p>\n" +
                figure_html("losses.svg", "each run's metrics.jsonl: the training language-model loss of every logged "
                                          "step (without NSP's share) and the held-out loss of every evaluation, as "
                                          "the locality/symmetry paper's Figure 6");
    const std::string reading = loss_reading(runs);
    if (!reading.empty()) sections += "<p><b>What it shows.</b> " + html_escape(reading) + "</p>\n";
  }
  for (const RunRecord& r : runs) sections += run_section(r, files);

  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>ordo report: position encodings</title>\n<style>\n"
      "body { font-family: sans-serif; margin: 2em; max-width: 1400px; }\n"
      "table { border-collapse: collapse; margin: 1em 0; }\n"
      "th, td { border: 1px solid #bbb; padding: 3px 8px; text-align: right; }\n"
      "th { overflow-wrap: anywhere; }\n"  // a long column name may break: the table fits the page
      "th:first-child, td:first-child { text-align: left; }\n"
      "figure { display: inline-block; margin: 0.5em; vertical-align: top; }\n"
      "figcaption { font-size: 90%; max-width: 480px; }\n"
      "img { max-width: 100%; }\n"
      ".key { font-size: 90%; }\n"
      "</style>\n</head>\n<body>\n"
      "<h1>Position encodings: identical word probing and analyses</h1>\n"
      "<p>Each row: a run's checkpoint probed with identical words (Wang et al. 2021, §4.2, Eq. 8): "
      "<code>[CLS] w &hellip; w [SEP]</code> for random words w, the softmax attention of one layer averaged over "
      "heads and words. Indicators as Wang et al.'s Table 2 (monotonicity OPR: 0 = attention decreases with "
      "distance, 0.5 = random; translation invariance AIV: 0 = invariant; symmetry SD: 0 = symmetric; direction "
      "balance DB: attention to preceding over succeeding tokens within 20 offsets, 1 = balanced, inf = nothing "
      "ahead), then the locality/symmetry paper's locality (Eq. 7; 1 = all on the diagonal) and symmetry (Eq. 8; "
      "1 = symmetric), then the final held-out language-model loss and accuracy of the run (masked tokens for MLM "
      "and MLM+NSP, the next token for causal: the objective column says which). Also as "
      "<a href=\"table.md\">Markdown</a>, <a href=\"table.csv\">CSV</a> and <a href=\"table.json\">JSON</a>.</p>\n" +
      html_table(runs) + lead_html + "<h2>Heatmaps</h2>\n" +
      figure_html("heatmaps.svg", "softmax attention of the probed layer, one panel per run (rows: query position i, "
                                  "columns: key position j; viridis, each panel its own scale)") +
      "<p><b>What it shows.</b> " + html_escape(heatmaps_reading(runs)) + "</p>\n" + sections + "</body>\n</html>\n";
  files.push_back({"index.html", html});
  return files;
}

void write_report(const std::string& dir, const std::vector<OutputFile>& files) {
  std::vector<std::pair<std::string, std::string>> named;
  for (const OutputFile& f : files) named.emplace_back(f.name, f.bytes);
  write_folder(dir, named);
}

}  // namespace ordo::report
