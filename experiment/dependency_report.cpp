// The locality/symmetry paper's Table 8 across an experiment's runs (experiment/dependency_report.h).
#include "experiment/dependency_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/file_io.h"
#include "base/json.h"
#include "experiment/tables.h"
#include "experiment/verdicts.h"

namespace ordo::experiment {

namespace {

const char* const kAttentions[3] = {"contextual", "positional", "both"};

// A run's analysis, or null when it has none yet. Its shape is checked here, so
// that an error names the file rather than surfacing in a table below.
json::Value read_analysis(const RunResults& run) {
  const std::string path = run.run_dir + "/analysis/dependency_heads.json";
  if (!file_exists(path)) return json::Value();
  json::Value analysis = json::parse_file(path);
  json::reading_file(path, [&] {
    for (const auto& [name, attention] : analysis["attentions"].items()) {
      for (const json::Value& r : attention["relations"].as_array())
        r["relation"].as_string(), r["accuracy"].as_number(), r["distance"].as_number();
      for (const char* which : {"short", "long", "macro"})
        if (!attention[which].is_null()) attention[which].as_number();
    }
  });
  return analysis;
}

// ordo's figure (percent) for one relation and attention; NaN where absent.
double ordo_accuracy(const json::Value& analysis, const std::string& attention, const std::string& relation) {
  if (!analysis["attentions"].contains(attention)) return NAN;
  const json::Value& list = analysis["attentions"][attention]["relations"];
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i]["relation"].as_string() == relation) return 100 * list[i]["accuracy"].as_number();
  return NAN;
}

double ordo_distance(const json::Value& analysis, const std::string& relation) {
  const json::Value& list = analysis["attentions"]["both"]["relations"];
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i]["relation"].as_string() == relation) return list[i]["distance"].as_number();
  return NAN;
}

// "short", "long" or "macro" of one attention, in percent; NaN where absent.
double ordo_summary(const json::Value& analysis, const std::string& attention, const std::string& which) {
  if (!analysis["attentions"].contains(attention)) return NAN;
  const json::Value& v = analysis["attentions"][attention][which];
  return v.is_null() ? NAN : 100 * v.as_number();
}

// The verdict on one of the paper's findings for the baseline, over its
// pretraining runs' analyses (null where one has none yet): per run, `ahead`'s
// accuracy minus `behind`'s on the `which` relations ("short", "long").
SectionVerdict lead_verdict(const Plan& plan, const std::vector<json::Value>& analyses, const char* key,
                            const std::string& ahead, const std::string& behind, const std::string& which,
                            std::vector<std::string>& lines) {
  std::vector<double> leads;
  for (const json::Value& a : analyses) {
    const double lead = a.is_null() ? NAN : ordo_summary(a, ahead, which) - ordo_summary(a, behind, which);
    if (std::isfinite(lead)) leads.push_back(lead);
  }
  SectionVerdict v;
  v.key = key;
  v.paper = ahead + " attention ahead of " + behind + " on " + which + " relations";
  judge_baseline_runs(plan, leads, "analysed", plan.baseline + "'s " + ahead + " minus " + behind + " accuracy on " +
                      which + " relations", "%+.1f", " points", v);
  lines.push_back(baseline_runs_line(plan, v, leads, "%+.1f", " points"));
  return v;
}

const PaperTable::Row* paper_row(const PaperTable& paper, const std::string& key) {
  for (const PaperTable::Row& r : paper.rows)
    if (r.key == key) return &r;
  return nullptr;
}

// "both 55.4 > positional 46.0 > contextual 27.5", and the names in that order.
std::string ranked(const std::map<std::string, double>& values, std::vector<std::string>& order) {
  order.clear();
  for (const auto& [name, v] : values)
    if (std::isfinite(v)) order.push_back(name);
  std::sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) { return values.at(a) > values.at(b); });
  std::string s;
  for (size_t i = 0; i < order.size(); ++i) s += (i ? " > " : "") + order[i] + " " + cell(values.at(order[i]));
  return s;
}

// One finding: `first` ahead of `second` on `which` in the paper; does ordo agree?
std::string finding(const std::string& what, const std::string& first, const std::string& second, double paper_first,
                    double paper_second, double ordo_first, double ordo_second) {
  std::string s = what + ": the paper's " + first + " attention " + cell(paper_first) + " against " + second + " " +
                  cell(paper_second) + "; ordo's " + cell(ordo_first) + " against " + cell(ordo_second);
  if (!std::isfinite(ordo_first) || !std::isfinite(ordo_second)) return s + " (ordo lacks one of the two).";
  const bool paper_ahead = paper_first > paper_second, ordo_ahead = ordo_first > ordo_second;
  return s + (paper_ahead == ordo_ahead ? " — the same direction." : " — the opposite direction.");
}

}  // namespace

ReportSection dependency_heads_across_runs(const Plan& plan, const std::vector<RunResults>& runs,
                                            const PaperTable* paper) {
  ReportSection out;
  std::string md = "\n## Table 8 and Figure 5: attention heads as dependency parsers\n\n";
  std::string html = "<h2>Table 8 and Figure 5: attention heads as dependency parsers</h2>\n";
  const RunResults* named = nullptr;
  for (const RunResults& r : runs)
    if (r.config == plan.dependency_run) named = &r;
  const json::Value analysis = named ? read_analysis(*named) : json::Value();
  json::Value record = json::Value::object();
  record["run"] = plan.dependency_run;

  std::string about = "Each head's most-attended word taken as a dependency (Clark et al. 2019), the best layer, "
                      "head and direction per relation, on held-out sentences of the synthetic language (each run's "
                      "analysis/dependency_heads.json); contextual: the positional term removed, positional: the "
                      "token term removed, both: the model as trained. Accuracy in percent; distance: the mean arc "
                      "length in words.";
  if (analysis.is_null()) {
    about += " Run " + plan.dependency_run + " has no dependency_heads.json yet (its analyze stage has not run).";
  } else {
    about += " Run " + plan.dependency_run + ": " + std::to_string(analysis["sentences"].as_int()) + " sentences, " +
             std::to_string(analysis["arcs"].as_int()) + " arcs, its top " + std::to_string(analysis["top"].as_int()) +
             " relations.";
    for (const auto& [a, why] : analysis["not_defined"].items())
      about += " The " + a + " attention is not defined for it: " + why.as_string() + ".";
  }
  append_paragraph(about, md, html);

  if (!analysis.is_null()) {
    TextTable t;
    t.header = {"relation (paper)", "ordo's label", "distance: ordo / paper"};
    for (const char* a : kAttentions) t.header.push_back(std::string(a) + ": ordo / paper");
    json::Value rows = json::Value::array();
    std::vector<std::string> seen;
    auto add_row = [&](const std::string& paper_name, const std::string& label, double o_dist, double p_dist,
                       const std::vector<double>& o, const std::vector<double>& p) {
      std::vector<std::string> cells = {paper_name, label, cell(o_dist) + " / " + cell(p_dist)};
      json::Value row = json::Value::object();
      row["paper_row"] = paper_name;
      row["relation"] = label;
      for (size_t k = 0; k < 3; ++k) {
        cells.push_back(cell(o[k]) + " / " + cell(p[k]));
        row[std::string("ordo_") + kAttentions[k]] = std::isfinite(o[k]) ? json::Value(o[k]) : json::Value();
        row[std::string("paper_") + kAttentions[k]] = std::isfinite(p[k]) ? json::Value(p[k]) : json::Value();
      }
      t.rows.push_back(cells);
      rows.push_back(row);
    };
    if (paper) {
      for (const PaperTable::Row& r : paper->rows) {
        if (r.key == "short" || r.key == "long" || r.key == "macro") continue;
        std::vector<double> o(3, NAN), p(3);
        for (size_t k = 0; k < 3; ++k) {
          p[k] = r.value(kAttentions[k]);
          if (r.key != "-") o[k] = ordo_accuracy(analysis, kAttentions[k], r.key);
        }
        if (r.key != "-") seen.push_back(r.key);
        add_row(r.name, r.key == "-" ? "(none)" : r.key, r.key == "-" ? NAN : ordo_distance(analysis, r.key),
                r.value("distance"), o, p);
      }
    }
    // ordo's relations the paper's table does not have.
    const json::Value& both = analysis["attentions"]["both"]["relations"];
    for (size_t i = 0; i < both.size(); ++i) {
      const std::string label = both[i]["relation"].as_string();
      if (std::find(seen.begin(), seen.end(), label) != seen.end()) continue;
      std::vector<double> o(3);
      for (size_t k = 0; k < 3; ++k) o[k] = ordo_accuracy(analysis, kAttentions[k], label);
      add_row("-", label, both[i]["distance"].as_number(), NAN, o, {NAN, NAN, NAN});
    }
    for (const char* which : {"short", "long", "macro"}) {
      const PaperTable::Row* r = paper ? paper_row(*paper, which) : nullptr;
      std::vector<double> o(3), p(3, NAN);
      for (size_t k = 0; k < 3; ++k) {
        o[k] = ordo_summary(analysis, kAttentions[k], which);
        if (r) p[k] = r->value(kAttentions[k]);
      }
      add_row(which, "(summary)", NAN, NAN, o, p);
    }
    record["relations"] = rows;
    md += t.markdown();
    html += t.html();
    // The named run's analysis picture: an SVG, or the PNG of an analysis made before its figures were SVG.
    for (const std::string ext : {".svg", ".png"}) {
      const std::string picture = named->run_dir + "/analysis/dependency_heads" + ext;
      if (!file_exists(picture)) continue;
      const std::string name = "dependency/figure5" + ext;
      out.files.push_back({name, read_file(picture)});
      md += "\n![Figure 5](" + name + ")\n";
      html += "<p><img src=\"" + name + "\" alt=\"accuracy against relation length\"></p>\n";
      break;
    }

    // The reading: the paper's three findings, then relation by relation.
    if (paper) {
      std::vector<std::string> lines;
      auto p_summary = [&](const char* which, const char* a) {
        const PaperTable::Row* r = paper_row(*paper, which);
        return r ? r->value(a) : NAN;
      };
      lines.push_back(finding("Short relations (mean length <= 4 words)", "positional", "contextual",
                              p_summary("short", "positional"), p_summary("short", "contextual"),
                              ordo_summary(analysis, "positional", "short"), ordo_summary(analysis, "contextual", "short")));
      lines.push_back(finding("Long relations (> 4 words)", "contextual", "positional", p_summary("long", "contextual"),
                              p_summary("long", "positional"), ordo_summary(analysis, "contextual", "long"),
                              ordo_summary(analysis, "positional", "long")));
      std::map<std::string, double> pm, om;
      for (const char* a : kAttentions) pm[a] = p_summary("macro", a), om[a] = ordo_summary(analysis, a, "macro");
      std::vector<std::string> p_order, o_order;
      const std::string p_text = ranked(pm, p_order), o_text = ranked(om, o_order);
      lines.push_back("Macro average, best first: the paper's " + p_text + "; ordo's " + o_text +
                      (p_order == o_order ? " — the same order."
                       : !o_order.empty() && !p_order.empty() && o_order[0] == p_order[0] ? " — the same best, another order."
                                                                                          : " — another best."));
      int64_t matched = 0, agree = 0;
      std::string against;
      for (const PaperTable::Row& r : paper->rows) {
        if (r.key == "-" || r.key == "short" || r.key == "long" || r.key == "macro") continue;
        const double o = ordo_accuracy(analysis, "positional", r.key) - ordo_accuracy(analysis, "contextual", r.key);
        const double p = r.value("positional") - r.value("contextual");
        if (!std::isfinite(o) || !std::isfinite(p)) continue;
        ++matched;
        if ((o > 0) == (p > 0)) ++agree;
        else against += (against.empty() ? "" : ", ") + r.name;
      }
      if (matched > 0)
        lines.push_back("Relation by relation (the " + std::to_string(matched) + " both tables have): positional " +
                        "minus contextual has the paper's sign in " + std::to_string(agree) + " of " +
                        std::to_string(matched) + (against.empty() ? "." : "; not in " + against + "."));
      lines.push_back("The comparisons above are one run's heads, one analysis: they describe and do not test. The "
                      "first two findings are tested on the heads of " +
                      (plan.baseline.empty() ? std::string("the baseline") : plan.baseline) +
                      "'s pretraining runs, each analysed on its own (Student's t against no lead):");
      std::vector<json::Value> analyses;  // the baseline's, one per pretraining run
      if (const RunResults* baseline = run_named(runs, plan.baseline)) {
        analyses.push_back(read_analysis(*baseline));
        for (const RunResults& again : baseline->replicates) analyses.push_back(read_analysis(again));
      }
      out.verdicts.push_back(
          lead_verdict(plan, analyses, kDependencyShort, "positional", "contextual", "short", lines));
      out.verdicts.push_back(lead_verdict(plan, analyses, kDependencyLong, "contextual", "positional", "long", lines));
      record["reading"] = append_reading(lines, "Reading (generated from the two tables)", md, html);
      md += paper_values_markdown(*paper);
    }
  }

  // Every run's summary.
  TextTable every;
  every.header = {"run", "pe", "sentences"};
  for (const char* a : kAttentions) every.header.push_back(std::string(a) + ": macro (short / long)");
  json::Value runs_json = json::Value::array();
  for (const RunResults& run : runs) {
    const json::Value a = read_analysis(run);
    if (a.is_null()) continue;
    std::vector<std::string> cells = {run.config, run.pe, std::to_string(a["sentences"].as_int())};
    json::Value r = json::Value::object();
    r["run"] = run.config;
    for (const char* name : kAttentions) {
      const double m = ordo_summary(a, name, "macro"), s = ordo_summary(a, name, "short"), l = ordo_summary(a, name, "long");
      cells.push_back(std::isfinite(m) ? cell(m) + " (" + cell(s) + " / " + cell(l) + ")" : "not defined");
      json::Value v = json::Value::object();
      v["macro"] = std::isfinite(m) ? json::Value(m) : json::Value();
      v["short"] = std::isfinite(s) ? json::Value(s) : json::Value();
      v["long"] = std::isfinite(l) ? json::Value(l) : json::Value();
      r[name] = v;
    }
    every.rows.push_back(cells);
    runs_json.push_back(r);
  }
  record["every_run"] = runs_json;
  if (!every.rows.empty()) {
    const std::string every_about = "Every run's heads the same way: the mean accuracy over its top relations "
                                    "(short / long), in percent.";
    md += "\n" + every_about + "\n\n" + every.markdown();
    html += "<p>" + report::html_escape(every_about) + "</p>\n" + every.html();
  }
  out.files.push_back({"dependency/table8.md", "# The locality/symmetry paper, Table 8\n" + md});
  out.files.push_back({"dependency/table8.json", json::dump(record, 2) + "\n"});
  out.markdown = md;
  out.html = html;
  return out;
}

}  // namespace ordo::experiment
