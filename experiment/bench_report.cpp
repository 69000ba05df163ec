// Chen et al. 2021's Table 3 from `ordo bench pe --json` (experiment/bench_report.h).
#include "experiment/bench_report.h"

#include <cmath>

#include "base/file_io.h"
#include "base/json.h"
#include "experiment/tables.h"

namespace ordo::experiment {

namespace {

const char* const kColumns[2] = {"rpe_shaw", "tupe"};

// "+13%" from 13 (a percentage), "-" where there is none.
std::string signed_percent(double percent) { return cell(percent, "%+.0f%%"); }

double paper_percent(const PaperTable* paper, const std::string& key, const std::string& column) {
  const PaperTable::Row* row = paper ? paper->find(key) : nullptr;
  return row ? row->value(column) : NAN;
}

}  // namespace

ReportSection bench_pe_table3(const Plan& plan, const PaperTable* paper) {
  ReportSection out;
  const std::string path = plan.out + "/bench_pe.json";
  std::string md = "\n## Table 3: step time relative to REL-SCALAR\n\n";
  std::string html = "<h2>Table 3: step time relative to REL-SCALAR</h2>\n";
  if (!file_exists(path)) {
    const std::string none = "No " + path + " yet: `ordo bench pe --variants rel_scalar,rpe_shaw,tupe --json " + path +
                             "` writes it (make chen2021 does after the experiment).";
    out.markdown = md + none + "\n";
    out.html = html + "<p>" + report::html_escape(none) + "</p>\n";
    return out;
  }
  const json::Value bench = json::parse_file(path);
  const json::Value* table3 = bench.find("chen2021_table3");
  const std::string about =
      "Measured by `ordo bench pe` (" + path + "): config " + bench["config"].as_string() + ", batch " +
      std::to_string(bench["batch"].as_int()) + " x length " + std::to_string(bench["length"].as_int()) + ", " +
      bench["device"].as_string() + " (" + bench["machine"].as_string() + ", " +
      std::to_string(bench["threads"].as_int()) + " threads), the median of " + std::to_string(bench["steps"].as_int()) +
      " steps over " + std::to_string(bench["rounds"].as_int()) + " rounds; time relative to REL-SCALAR's, ordo / "
      "the paper's BERT_BASE / its BERT_SMALL. A step time is the machine's at that moment: read it beside the "
      "paper's for its order, not its size.";
  append_paragraph(about, md, html);
  if (!table3) {
    out.markdown = md + "The bench did not measure all of rel_scalar, rpe_shaw and tupe.\n";
    out.html = html + "<p>The bench did not measure all of rel_scalar, rpe_shaw and tupe.</p>\n";
    return out;
  }
  TextTable t;
  t.header = {"mode", "Shaw et al. (rpe_shaw, keys and values)", "Ke et al. (tupe)", "REL-SCALAR"};
  t.text_columns = 1;
  json::Value record = json::Value::object();
  std::vector<std::string> lines;
  for (const char* mode : {"training", "inference"}) {
    std::vector<std::string> row = {mode};
    json::Value r = json::Value::object();
    double ordo[2];
    for (int k = 0; k < 2; ++k) {
      ordo[k] = 100 * ((*table3)[mode][kColumns[k]].as_number() - 1);
      const double base = paper_percent(paper, std::string(mode) + ".base", kColumns[k]);
      const double small = paper_percent(paper, std::string(mode) + ".small", kColumns[k]);
      row.push_back(signed_percent(ordo[k]) + " / " + signed_percent(base) + " / " + signed_percent(small));
      r[kColumns[k]] = ordo[k];
    }
    row.push_back("+0%");
    t.rows.push_back(row);
    record[mode] = r;
    const bool ordered = ordo[0] > ordo[1] && ordo[1] > 0;
    lines.push_back(std::string(mode) + ": the paper's order, Shaw above TUPE above REL-SCALAR (at both sizes), " +
                    (ordered ? "holds" : "does not hold") + " here (Shaw " + signed_percent(ordo[0]) + ", TUPE " +
                    signed_percent(ordo[1]) + ").");
  }
  md += t.markdown();
  html += t.html();
  record["reading"] = append_reading(lines, "Reading (generated)", md, html);
  record["bench"] = path;
  if (paper) md += paper_values_markdown(*paper);
  out.files.push_back({"bench/table3.md", "# Chen et al. 2021, Table 3\n" + md});
  out.files.push_back({"bench/table3.json", json::dump(record, 2) + "\n"});
  out.markdown = md;
  out.html = html;
  return out;
}

}  // namespace ordo::experiment
