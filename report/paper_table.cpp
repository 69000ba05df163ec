// A paper's table beside ordo's runs (report/paper_table.h).
#include "report/paper_table.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "base/error.h"
#include "base/file_io.h"
#include "probe/indicators.h"

namespace ordo::report {

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}

// The heading of an indicator column of the report's table.
std::string heading_of(const std::string& key) {
  for (const auto& [k, heading] : table_columns())
    if (k == key) return heading;
  return key;
}

bool is_indicator_key(const std::string& key) {
  if (key == "variant" || key == "objective" || key == "layer" || key.rfind("eval_", 0) == 0) return false;
  for (const auto& [k, heading] : table_columns())
    if (k == key) return true;
  return false;
}

// How far from its ideal a value is: the value itself, or |DB - 1| for
// direction balance (1 is balanced).
double badness(const std::string& key, double v) { return key == "direction_balance" ? std::fabs(v - 1) : v; }

std::string number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

double ordo_value(const RunRecord& r, const std::string& key) {
  const json::Value* v = r.with_special.find(key);
  return v ? probe::number_from_json(*v) : std::nan("");
}

// Groups (families, or the kinds of one family) ordered best first by their
// mean, "name (mean)" each.
struct Ranked {
  std::vector<std::string> names;
  std::vector<double> means;
};
Ranked rank(const std::map<std::string, std::vector<double>>& groups, const std::vector<std::string>& order,
            const std::string& key) {
  std::vector<std::pair<double, std::string>> scored;
  for (const std::string& g : order) {
    const std::vector<double>& v = groups.at(g);
    double sum = 0;
    for (double x : v) sum += x;
    scored.emplace_back(sum / static_cast<double>(v.size()), g);
  }
  std::stable_sort(scored.begin(), scored.end(), [&](const auto& a, const auto& b) {
    return badness(key, a.first) < badness(key, b.first);
  });
  Ranked r;
  for (const auto& [mean, name] : scored) r.names.push_back(name), r.means.push_back(mean);
  return r;
}

std::string ranked_text(const Ranked& r) {
  std::string out;
  for (size_t i = 0; i < r.names.size(); ++i) out += (i ? " < " : "") + r.names[i] + " (" + number(r.means[i]) + ")";
  return out;
}

}  // namespace

const PaperRow* PaperTable::find(const std::string& config) const {
  for (const PaperRow& r : rows)
    if (r.config == config) return &r;
  return nullptr;
}

PaperTable read_paper_table(const std::string& path) {
  PaperTable t;
  t.path = path;
  const std::string text = read_file(path);
  std::vector<std::string> header;
  std::set<std::string> seen;
  size_t start = 0;
  for (int line_no = 1; start < text.size(); ++line_no) {
    const size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = path + ":" + std::to_string(line_no);
    if (line.empty()) continue;
    if (line[0] == '#') {
      t.source.push_back(line.substr(line.rfind("# ", 0) == 0 ? 2 : 1));
      continue;
    }
    const std::vector<std::string> cells = split_tabs(line);
    if (header.empty()) {
      header = cells;
      ORDO_CHECK(header.size() > 4 && header[0] == "config" && header[1] == "paper_row" && header[2] == "family" &&
                     header[3] == "kind",
                 where, ": the header must begin config, paper_row, family, kind (tab-separated), then indicator keys");
      for (size_t i = 4; i < header.size(); ++i) {
        ORDO_CHECK(is_indicator_key(header[i]), where, ": '", header[i],
                   "' is not an indicator of the report's table (probe/indicators.h's keys)");
        t.indicators.push_back(header[i]);
      }
      continue;
    }
    ORDO_CHECK(cells.size() == header.size(), where, ": ", cells.size(), " columns, the header has ", header.size());
    PaperRow row;
    row.config = cells[0];
    row.name = cells[1];
    row.family = cells[2];
    row.kind = cells[3];
    ORDO_CHECK(!row.config.empty() && seen.insert(row.config).second, where, ": config '", row.config,
               row.config.empty() ? "' is empty" : "' is named twice");
    for (size_t i = 4; i < cells.size(); ++i) {
      char* after = nullptr;
      errno = 0;
      const double v = std::strtod(cells[i].c_str(), &after);
      ORDO_CHECK(!cells[i].empty() && *after == '\0' && errno == 0 && std::isfinite(v), where, ": ", header[i], " '",
                 cells[i], "' is not a number");
      row.values[header[i]] = v;
    }
    t.rows.push_back(row);
  }
  ORDO_CHECK(!t.rows.empty(), path, ": no rows (a header line, then one line per config)");
  return t;
}

std::vector<Reading> read_against_paper(const std::vector<NamedRun>& runs, const PaperTable& paper) {
  std::vector<Reading> out;
  for (const std::string& key : paper.indicators) {
    // The rows both tables have, with a finite value in ordo's run.
    std::vector<std::pair<const PaperRow*, double>> rows;
    for (const NamedRun& n : runs) {
      const PaperRow* p = paper.find(n.config);
      const double v = ordo_value(*n.run, key);
      if (p && std::isfinite(v)) rows.emplace_back(p, v);
    }
    // One grouping: rows whose `member` passes, grouped by `group_of`.
    auto compare = [&](const std::string& grouping, auto member, auto group_of) {
      std::map<std::string, std::vector<double>> paper_groups, ordo_groups;
      std::vector<std::string> order;
      for (const auto& [p, v] : rows) {
        if (!member(*p)) continue;
        const std::string g = group_of(*p);
        if (!paper_groups.count(g)) order.push_back(g);
        paper_groups[g].push_back(p->values.at(key));
        ordo_groups[g].push_back(v);
      }
      if (order.size() < 2) return;
      const Ranked in_paper = rank(paper_groups, order, key), in_ordo = rank(ordo_groups, order, key);
      Reading r;
      r.indicator = key;
      r.grouping = grouping;
      r.paper_order = in_paper.names;
      r.ordo_order = in_ordo.names;
      r.same_order = in_paper.names == in_ordo.names;
      r.same_best = in_paper.names[0] == in_ordo.names[0];
      r.text = heading_of(key) + (key == "direction_balance" ? " (by |DB - 1|)" : "") + ", " + grouping +
               ", best first: paper " + ranked_text(in_paper) + "; ordo " + ranked_text(in_ordo) + ". " +
               (r.same_order ? "Same order."
                             : r.same_best ? "Same best (" + r.paper_order[0] + "), another order."
                                           : "Differs: best in the paper " + r.paper_order[0] + ", in ordo " +
                                                 r.ordo_order[0] + ".");
      out.push_back(r);
    };
    compare("families", [](const PaperRow&) { return true; }, [](const PaperRow& p) { return p.family; });
    std::vector<std::string> families;
    for (const auto& [p, v] : rows)
      if (std::find(families.begin(), families.end(), p->family) == families.end()) families.push_back(p->family);
    for (const std::string& f : families)
      compare("kinds of " + f, [&](const PaperRow& p) { return p.family == f; },
              [](const PaperRow& p) { return p.kind; });
  }
  return out;
}

namespace {

std::string cell(const NamedRun& n, const PaperRow* p, const std::string& key) {
  return number(ordo_value(*n.run, key)) + " / " + (p ? number(p->values.at(key)) : std::string("n/a"));
}

std::string agreement_line(const std::vector<Reading>& readings) {
  size_t same = 0, best = 0;
  for (const Reading& r : readings) same += r.same_order, best += r.same_best;
  return std::to_string(same) + " of " + std::to_string(readings.size()) + " orderings are the paper's; in " +
         std::to_string(best) + " the best group is the paper's.";
}

}  // namespace

std::string comparison_markdown(const std::vector<NamedRun>& runs, const PaperTable& paper) {
  std::string out = "| config | paper's row |";
  for (const std::string& key : paper.indicators) out += " " + heading_of(key) + ": ordo / paper |";
  out += "\n| --- | --- |";
  for (size_t i = 0; i < paper.indicators.size(); ++i) out += " ---: |";
  out += "\n";
  for (const NamedRun& n : runs) {
    const PaperRow* p = paper.find(n.config);
    out += "| " + n.config + " | " + (p ? p->name : "(not in the paper's table)") + " |";
    for (const std::string& key : paper.indicators) out += " " + cell(n, p, key) + " |";
    out += "\n";
  }
  out += "\nThe paper's values: `" + paper.path + "`";
  for (const std::string& s : paper.source) out += "\n> " + s;
  const std::vector<Reading> readings = read_against_paper(runs, paper);
  out += "\n\n**Reading** (generated from the two tables: the groups ordered by their mean, best first). " +
         agreement_line(readings) + "\n\n";
  for (const Reading& r : readings) out += "- " + r.text + "\n";
  return out;
}

std::string comparison_html(const std::vector<NamedRun>& runs, const PaperTable& paper) {
  std::string out = "<table>\n<tr><th>config</th><th>paper's row</th>";
  for (const std::string& key : paper.indicators) out += "<th>" + html_escape(heading_of(key)) + ": ordo / paper</th>";
  out += "</tr>\n";
  for (const NamedRun& n : runs) {
    const PaperRow* p = paper.find(n.config);
    out += "<tr><td>" + html_escape(n.config) + "</td><td>" + html_escape(p ? p->name : "(not in the paper's table)") +
           "</td>";
    for (const std::string& key : paper.indicators) out += "<td>" + cell(n, p, key) + "</td>";
    out += "</tr>\n";
  }
  out += "</table>\n<p>The paper's values: <code>" + html_escape(paper.path) + "</code> (";
  for (size_t i = 0; i < paper.source.size(); ++i) out += (i ? " " : "") + html_escape(paper.source[i]);
  const std::vector<Reading> readings = read_against_paper(runs, paper);
  out += ")</p>\n<p>Reading, generated from the two tables (the groups ordered by their mean, best first). " +
         html_escape(agreement_line(readings)) + "</p>\n<ul>\n";
  for (const Reading& r : readings) out += "<li>" + html_escape(r.text) + "</li>\n";
  return out + "</ul>\n";
}

json::Value comparison_json(const std::vector<NamedRun>& runs, const PaperTable& paper) {
  json::Value out = json::Value::object();
  out["paper_table"] = paper.path;
  json::Value source = json::Value::array();
  for (const std::string& s : paper.source) source.push_back(s);
  out["source"] = source;
  json::Value rows = json::Value::array();
  for (const NamedRun& n : runs) {
    const PaperRow* p = paper.find(n.config);
    json::Value row = json::Value::object();
    row["config"] = n.config;
    row["run"] = n.run->run_dir;
    row["paper_row"] = p ? json::Value(p->name) : json::Value();
    json::Value ordo = json::Value::object(), theirs = json::Value::object();
    for (const std::string& key : paper.indicators) {
      ordo[key] = probe::json_number(ordo_value(*n.run, key));
      if (p) theirs[key] = p->values.at(key);
    }
    row["ordo"] = ordo;
    row["paper"] = p ? theirs : json::Value();
    rows.push_back(row);
  }
  out["rows"] = rows;
  json::Value reading = json::Value::array();
  for (const Reading& r : read_against_paper(runs, paper)) {
    json::Value line = json::Value::object();
    line["indicator"] = r.indicator;
    line["grouping"] = r.grouping;
    json::Value a = json::Value::array(), b = json::Value::array();
    for (const std::string& s : r.paper_order) a.push_back(s);
    for (const std::string& s : r.ordo_order) b.push_back(s);
    line["paper_order"] = a;
    line["ordo_order"] = b;
    line["same_order"] = r.same_order;
    line["same_best"] = r.same_best;
    line["text"] = r.text;
    reading.push_back(line);
  }
  out["reading"] = reading;
  return out;
}

}  // namespace ordo::report
