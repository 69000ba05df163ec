// The locality/symmetry paper's Table 9 across an experiment's runs (experiment/layer_report.h).
#include "experiment/layer_report.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "base/file_io.h"
#include "base/json.h"
#include "base/strings.h"
#include "experiment/tables.h"
#include "experiment/verdicts.h"
#include "probe/layer_probing.h"

namespace ordo::experiment {

namespace {

const char* const kAttentions[3] = {"both", "contextual", "positional"};

// A run's per-layer probing, or null when it has none yet; its shape checked here,
// so that an error names the file.
json::Value read_probing(const RunResults& run) {
  const std::string path = run.run_dir + "/layers/probing.json";
  if (!file_exists(path)) return json::Value();
  json::Value probing = json::parse_file(path);
  json::reading_file(path, [&] {
    for (const auto& [task, t] : probing["tasks"].items())
      for (const auto& [attention, a] : t["attentions"].items()) a["accuracy"].as_number();
  });
  return probing;
}

// One probing's accuracy (percent) of an attention on a task; NaN where absent.
double accuracy(const json::Value& probing, const std::string& attention, const std::string& task) {
  const json::Value* t = probing.is_null() ? nullptr : probing["tasks"].find(task);
  if (!t || !(*t)["attentions"].contains(attention)) return NAN;
  return 100 * (*t)["attentions"][attention]["accuracy"].as_number();
}

// ordo's accuracy (percent) of run.attention on a task; NaN where absent.
double ordo_value(const std::vector<RunResults>& runs, const std::vector<json::Value>& probing, const std::string& run,
                  const std::string& attention, const std::string& task) {
  for (size_t i = 0; i < runs.size(); ++i)
    if (runs[i].config == run) return accuracy(probing[i], attention, task);
  return NAN;
}

// How often `ahead` beats `behind` on `tasks` where both have a value: (count, of).
std::pair<int, int> count_ahead(const std::function<double(const std::string&, const std::string&)>& value,
                                const std::string& ahead, const std::vector<std::string>& behind,
                                const std::vector<std::string>& tasks) {
  int wins = 0, of = 0;
  for (const std::string& task : tasks) {
    const double a = value(ahead, task);
    double best_other = -INFINITY;
    bool all = std::isfinite(a);
    for (const std::string& b : behind) {
      const double v = value(b, task);
      all = all && std::isfinite(v);
      best_other = std::max(best_other, v);
    }
    if (!all) continue;
    ++of;
    wins += a > best_other;
  }
  return {wins, of};
}

std::string fraction(std::pair<int, int> c) { return std::to_string(c.first) + " of " + std::to_string(c.second); }

const std::vector<std::string> kSyntactic = {"tree_depth", "top_constituents", "bigram_shift"};
const std::vector<std::string> kSemantic = {"tense", "object_number"};

// The verdict on one of section 4.1's findings for the baseline: `ahead`
// above `behind` on `tasks`, over its pretraining runs (`probings`), each
// run's lead the mean over the tasks of `ahead`'s accuracy minus `behind`'s.
SectionVerdict lead_verdict(const Plan& plan, const std::vector<json::Value>& probings, const char* key,
                            const std::string& ahead, const std::string& behind,
                            const std::vector<std::string>& tasks, std::vector<std::string>& lines) {
  std::vector<double> leads;
  for (const json::Value& probing : probings) {
    double sum = 0;
    for (const std::string& task : tasks) sum += accuracy(probing, ahead, task) - accuracy(probing, behind, task);
    if (std::isfinite(sum)) leads.push_back(sum / static_cast<double>(tasks.size()));
  }
  SectionVerdict v;
  v.key = key;
  v.paper = ahead + " above " + behind + " on " + joined(tasks, ", ");
  judge_baseline_runs(plan, leads, "probed layer by layer", plan.baseline + "'s " + ahead + " minus " + behind +
                      " accuracy, mean of " + joined(tasks, ", ") + ",", "%+.1f", " points", v);
  lines.push_back(baseline_runs_line(plan, v, leads, "%+.1f", " points"));
  return v;
}

}  // namespace

ReportSection layer_probing_across_runs(const Plan& plan, const std::vector<RunResults>& runs, const PaperTable* paper) {
  ReportSection out;
  std::vector<json::Value> probing;
  for (const RunResults& r : runs) probing.push_back(read_probing(r));
  std::string md = "\n## Table 9 and Figure 4: frozen per-layer probing\n\n";
  std::string html = "<h2>Table 9 and Figure 4: frozen per-layer probing</h2>\n";
  const std::string about =
      "Each probed run frozen; a sentence is the mean of a layer's outputs over its tokens, a multinomial logistic "
      "regression is fitted on the task's training sentences (at most " + std::to_string(plan.layers.max_fit) +
      "), the layer and L2 weight chosen on the selection split and the chosen layer's accuracy reported "
      "(probe/layer_probing.h; the synthetic language's probing tasks). both: the model as trained; contextual: "
      "the positional term removed; positional: the token term removed (for an input-level encoding such as "
      "BERT's, ordo removes the token embeddings at the input, so its positional rows see no words: EQUATIONS.md, "
      "ablations). Accuracy in percent, ordo / paper.";
  append_paragraph(about, md, html);

  std::vector<std::string> tasks = paper ? paper->columns : std::vector<std::string>();
  for (const json::Value& p : probing)
    if (!p.is_null())
      for (const auto& [name, t] : p["tasks"].items())
        if (std::find(tasks.begin(), tasks.end(), name) == tasks.end()) tasks.push_back(name);
  TextTable t;
  t.header = {"row (paper)", "run.attention"};
  for (const std::string& task : tasks) t.header.push_back(task);
  json::Value rows = json::Value::array();
  std::vector<std::string> shown;
  auto add_row = [&](const std::string& paper_name, const std::string& key, const PaperTable::Row* paper_row) {
    const size_t dot = key.rfind('.');
    const std::string run = key.substr(0, dot), attention = key.substr(dot + 1);
    std::vector<std::string> cells = {paper_name, key};
    json::Value row = json::Value::object();
    row["key"] = key;
    row["paper_row"] = paper_name;
    for (const std::string& task : tasks) {
      const double o = ordo_value(runs, probing, run, attention, task);
      const double p = paper_row ? paper_row->value(task) : NAN;
      cells.push_back(cell(o) + " / " + cell(p));
      row["ordo_" + task] = std::isfinite(o) ? json::Value(o) : json::Value();
      row["paper_" + task] = std::isfinite(p) ? json::Value(p) : json::Value();
    }
    t.rows.push_back(cells);
    rows.push_back(row);
    shown.push_back(key);
  };
  if (paper)
    for (const PaperTable::Row& r : paper->rows)
      if (r.key != "-") add_row(r.name, r.key, &r);
  for (size_t i = 0; i < runs.size(); ++i) {
    if (probing[i].is_null()) continue;
    for (const char* a : kAttentions) {
      const std::string key = runs[i].config + "." + a;
      if (std::find(shown.begin(), shown.end(), key) == shown.end()) add_row("-", key, nullptr);
    }
  }
  json::Value record = json::Value::object();
  record["rows"] = rows;
  if (t.rows.empty()) {
    md += "No run has been probed layer by layer yet (the layers stage).\n";
    html += "<p>No run has been probed layer by layer yet (the layers stage).</p>\n";
  } else {
    md += t.markdown();
    html += t.html();
  }

  // The reading: the paper's findings of section 4.1, model by model.
  if (paper) {
    std::vector<std::string> models;
    for (const PaperTable::Row& r : paper->rows) {
      const std::string model = r.key.substr(0, r.key.rfind('.'));
      if (r.key != "-" && std::find(models.begin(), models.end(), model) == models.end()) models.push_back(model);
    }
    std::vector<std::string> lines;
    for (const std::string& model : models) {
      auto paper_of = [&](const std::string& attention, const std::string& task) -> double {
        const PaperTable::Row* r = paper->find(model + "." + attention);
        return r ? r->value(task) : NAN;
      };
      auto ordo_of = [&](const std::string& attention, const std::string& task) {
        return ordo_value(runs, probing, model, attention, task);
      };
      // Compared on the tasks both sides have.
      std::vector<std::string> common;
      for (const std::string& task : tasks)
        if (std::isfinite(paper_of("both", task)) && std::isfinite(ordo_of("both", task))) common.push_back(task);
      if (common.empty()) {
        lines.push_back(model + ": no task with both ordo's and the paper's figure yet.");
        continue;
      }
      lines.push_back(model + ", the combination above both single attentions: the paper on " +
                      fraction(count_ahead(paper_of, "both", {"contextual", "positional"}, common)) +
                      " tasks, ordo on " + fraction(count_ahead(ordo_of, "both", {"contextual", "positional"}, common)) + ".");
      lines.push_back(model + ", positional above contextual on the syntactic tasks (tree_depth, top_constituents, "
                      "bigram_shift): the paper on " +
                      fraction(count_ahead(paper_of, "positional", {"contextual"}, kSyntactic)) + ", ordo on " +
                      fraction(count_ahead(ordo_of, "positional", {"contextual"}, kSyntactic)) + ".");
      lines.push_back(model + ", contextual above positional on tense and object_number: the paper on " +
                      fraction(count_ahead(paper_of, "contextual", {"positional"}, kSemantic)) + ", ordo on " +
                      fraction(count_ahead(ordo_of, "contextual", {"positional"}, kSemantic)) + ".");
    }
    const std::string baseline = plan.baseline.empty() ? std::string("the baseline") : plan.baseline;
    lines.push_back("The counts above are one probing fit per run, attention and task: they describe and do not "
                    "test. The findings are tested on " + baseline + "'s pretraining runs, each a mean over the "
                    "tasks of the one attention's lead over the other (Student's t against no lead):");
    std::vector<json::Value> probings;  // the baseline's, one per pretraining run (null where not probed yet)
    for (size_t i = 0; i < runs.size(); ++i)
      if (runs[i].config == plan.baseline) {
        probings.push_back(probing[i]);
        for (const RunResults& again : runs[i].replicates) probings.push_back(read_probing(again));
      }
    out.verdicts.push_back(
        lead_verdict(plan, probings, kLayersSyntactic, "positional", "contextual", kSyntactic, lines));
    out.verdicts.push_back(lead_verdict(plan, probings, kLayersSemantic, "contextual", "positional", kSemantic, lines));
    record["reading"] = append_reading(lines, "Reading (generated from the two tables)", md, html);
    md += paper_values_markdown(*paper);
  }
  // Figure 4: every probed run's accuracy against the layer, drawn from its probing.json.
  for (size_t i = 0; i < runs.size(); ++i) {
    if (probing[i].is_null()) continue;
    const std::string name = "layers/" + runs[i].config + ".svg";
    out.files.push_back({name, probe::layer_probing_svg(probing[i], runs[i].config + ": probing accuracy per layer")});
    md += "\n![Figure 4, " + runs[i].config + "](" + name + ")\n";
    html += "<p><img src=\"" + name + "\" alt=\"probing accuracy per layer, " + report::html_escape(runs[i].config) + "\"></p>\n";
  }
  out.files.push_back({"layers/table9.md", "# The locality/symmetry paper, Table 9\n" + md});
  out.files.push_back({"layers/table9.json", json::dump(record, 2) + "\n"});
  out.markdown = md;
  out.html = html;
  return out;
}

}  // namespace ordo::experiment
