// A paper's claims and their verdicts (experiment/findings.h).
#include "experiment/findings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json.h"
#include "base/json_numbers.h"
#include "base/strings.h"
#include "experiment/dependency_report.h"
#include "experiment/figure5.h"
#include "experiment/layer_report.h"
#include "experiment/pretraining_report.h"
#include "experiment/statistics.h"
#include "experiment/swap_report.h"
#include "experiment/sweep_report.h"
#include "experiment/tables.h"

namespace ordo::experiment {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Two reports' baselines are one pretraining draw when their held-out losses agree at every evaluation
// within this fraction. The same configuration and seeds pretrained on two CPUs differ by their BLAS
// kernels' rounding alone: at most 2.5e-5 measured (Chen et al.'s `devlin` on an Intel Xeon against
// Huang et al.'s `absolute` on an AMD EPYC, 4,000 steps), where another seed or encoding differs by
// 5e-3 or more at some evaluation (`devlin`'s seeds 2 and 3 against seed 1: 2.5% and 5.7%; the
// committed reports' closest pair of encodings, method 4 clipped at 32 against unclipped: 0.54%).
constexpr double kSameDrawTolerance = 1e-3;

bool same_draw(const json::Value& a, const json::Value& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i][0].as_number() != b[i][0].as_number()) return false;  // the same evaluation steps
    const double x = a[i][1].as_number(), y = b[i][1].as_number();
    if (!(std::abs(x - y) <= kSameDrawTolerance * std::abs(x))) return false;
  }
  return true;
}

// A findings file's "baseline": {"config": NAME, "held_out_loss": [[step, loss], ...]}, its
// losses returned once their shape is checked (what same_draw compares).
const json::Value& held_out_losses(const json::Value& baseline) {
  ORDO_CHECK(baseline.is_object(), "\"baseline\" is ", json::with_article(baseline.type()), ", not an object");
  ORDO_CHECK(baseline.contains("config") && baseline["config"].is_string(), "\"baseline\" names no \"config\"");
  const json::Value& losses = baseline["held_out_loss"];
  ORDO_CHECK(losses.is_array(), "\"baseline\".\"held_out_loss\" is ", json::with_article(losses.type()),
             ", not an array of [step, loss] pairs");
  for (size_t k = 0; k < losses.size(); ++k) {
    const json::Value& e = losses[k];
    ORDO_CHECK(e.is_array() && e.size() == 2 && e[0].is_number() && e[1].is_number() &&
                   std::isfinite(e[1].as_number()) && e[1].as_number() > 0,
               "\"baseline\".\"held_out_loss\"[", k, "] is not a [step, loss] pair (a loss is a positive number)");
  }
  return losses;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      if (sep != ' ' || i > start) out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

std::string format(double v, const char* pattern) {
  if (!std::isfinite(v)) return "n/a";
  char buf[48];
  std::snprintf(buf, sizeof buf, pattern, v);
  return buf;
}

// An effect and its interval, "+4.19 [-3.19, +11.57]", all three with the
// decimals that give the largest of them three significant figures (at
// least 2, at most 6), so that an indicator's -0.0215 and an accuracy's
// +4.19 read alike.
std::string interval_text(double effect, double low, double high) {
  double scale = 0;
  for (double v : {effect, low, high})
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  const int decimals = scale > 0 ? std::clamp(2 - static_cast<int>(std::floor(std::log10(scale))), 2, 6) : 2;
  const std::string pattern = "%+." + std::to_string(decimals) + "f";
  return format(effect, pattern.c_str()) + " [" + format(low, pattern.c_str()) + ", " + format(high, pattern.c_str()) +
         "]";
}

std::string p_text(double p) { return std::isnan(p) ? "no test" : p > 0 && p < 1e-4 ? "p < 1e-4" : "p = " + format(p, "%.3g"); }

// How many words each test takes (untested: a reason of any length).
size_t words_of(const std::string& kind) {
  if (kind == "rank") return 3;
  if (kind == "row" || kind == "correlation" || kind == "higher") return 4;
  if (kind == "families" || kind == "pair" || kind == "columns") return 5;
  if (kind == "section") return 2;
  return 0;
}

const PaperTable* table_named(const std::vector<PaperTable>& tables, const std::string& name) {
  for (const PaperTable& t : tables)
    if (t.name == name) return &t;
  return nullptr;
}

const Comparison* comparison_of(const std::vector<Comparison>& comparisons, const std::string& table) {
  for (const Comparison& c : comparisons)
    if (c.table && c.table->name == table) return &c;
  return nullptr;
}

const ColumnReading* reading_of(const Comparison& c, const std::string& column, const std::string& grouping) {
  for (const ColumnReading& r : c.readings)
    if (r.column == column && r.grouping == grouping) return &r;
  return nullptr;
}

const json::Value* row_json(const Comparison& c, const std::string& config) {
  for (const json::Value& row : c.json["rows"].as_array())
    if (row["config"].is_string() && row["config"].as_string() == config) return &row;
  return nullptr;
}

// A row's value in a column: the mean over its pretraining runs where it has
// several and `pretraining` asks for that (as the orderings use it), else its
// first run's mean over fine-tuning seeds; NaN where it has none or is left
// out of the column's comparisons (uniform, another task set, at chance).
double row_estimate(const json::Value& row, const std::string& key, bool pretraining = true) {
  const json::Value* v = row["ordo"].find(key);
  if (!v || v->is_null() || v->contains("left_out") || v->contains("at_chance")) return kNaN;
  if (const json::Value* pt = v->find("pretraining"); pt && pretraining) return json::to_number((*pt)["mean"]);
  return json::to_number((*v)["mean"]);
}

// A test word naming a family: '_' stands for a space ("not_shared").
std::string spaced(std::string word) {
  std::replace(word.begin(), word.end(), '_', ' ');
  return word;
}

Judgement untestable(const std::string& why) { return {Verdict::not_testable, why}; }

// "rank TABLE COLUMN"
Finding rank_finding(const Claim& claim, const Comparison& c, double alpha) {
  Finding f{claim, {}, "", ""};
  const ColumnReading* r = reading_of(c, claim.test[2], "rank");
  if (!r) {
    f.judgement = untestable("fewer than two rows with both figures");
    return f;
  }
  f.judgement = r->verdicts.empty() ? judge_rank_agreement({r->kendall, r->kendall_p, r->n, ""}, alpha)
                                    : Judgement{r->verdicts[0], r->reasons.empty() ? "" : r->reasons[0]};
  f.effect = "τ_b " + format(r->kendall, "%.2f") + " (" + p_text(r->kendall_p) + ", n = " + std::to_string(r->n) + ")";
  f.paper = "the paper's order of the rows";
  return f;
}

// "row TABLE COLUMN ROW"
Finding row_finding(const Claim& claim, const Comparison& c, const Plan& plan) {
  Finding f{claim, {}, "", ""};
  const std::string& key = claim.test[2];
  const std::string& config = claim.test[3];
  const ColumnReading* r = reading_of(c, key, "verdicts");
  const json::Value* row = row_json(c, config);
  const json::Value* base = row_json(c, plan.baseline);
  if (row && base) {
    // The difference the test is over, so that the interval is around it: the pretraining runs' means
    // where both rows were pretrained several times, else the first runs' means over fine-tuning seeds.
    const json::Value* v = (*row)["ordo"].find(key);
    const bool tested = v && v->is_object() && v->contains("tested_over");
    const bool over_pretraining = !tested || (*v)["tested_over"].as_string() == "pretraining runs";
    const double d = row_estimate(*row, key, over_pretraining) - row_estimate(*base, key, over_pretraining);
    f.effect = config + " − " + plan.baseline + " ";
    if (tested && v->contains("difference_interval")) {
      const json::Value& ci = (*v)["difference_interval"];
      f.effect += interval_text(d, json::to_number(ci[0]), json::to_number(ci[1])) + " (" +
                  (*v)["tested_over"].as_string() + ", Holm " + p_text(json::to_number((*v)["holm_p"])) + ")";
    } else {
      f.effect += format(d, "%+.2f");
    }
    const json::Value* p = (*row)["paper"].find(key);
    const json::Value* pb = (*base)["paper"].find(key);
    if (p && pb) f.paper = format((*p)["value"].as_number() - (*pb)["value"].as_number(), "%+.2f");
  }
  const auto at = r ? std::find(r->names.begin(), r->names.end(), config) : std::vector<std::string>::const_iterator();
  if (r && at != r->names.end()) {
    const size_t k = static_cast<size_t>(at - r->names.begin());
    f.judgement = {r->verdicts[k], k < r->reasons.size() ? r->reasons[k] : ""};
  }
  else
    f.judgement = untestable(row ? "the row has no test against " + plan.baseline : "the row has not run");
  if (f.judgement.verdict == Verdict::not_testable && row) {
    const json::Value* v = (*row)["ordo"].find(key);
    if (v && v->is_object() && v->contains("at_chance")) f.judgement.reason = "accuracy at chance";
  }
  return f;
}

// An effect measured in goodness (-badness, so that positive means A is
// better) as the column's own units read it: the difference of the values
// themselves ("A − B"), except direction balance, whose goodness is its
// closeness to 1.
std::string effect_text(const std::string& key, const std::string& a, const std::string& b, double goodness,
                        Interval ci) {
  const bool closeness = key == "direction_balance";
  if (!closeness && badness(key, 1) > badness(key, 0)) {  // smaller is better: the values' difference is -goodness
    goodness = -goodness;
    ci = {-ci.high, -ci.low};
  }
  return a + " − " + b + (closeness ? " (closeness to 1) " : " ") + interval_text(goodness, ci.low, ci.high);
}

std::string paper_effect_text(const std::string& key, double goodness) {
  const bool closeness = key == "direction_balance";
  return format(!closeness && badness(key, 1) > badness(key, 0) ? -goodness : goodness, "%+.4g");
}

// "families TABLE COLUMN A B": A's rows against B's, each row one value.
// Where a family has fewer than two rows with the figure but each family has
// exactly one, and both of those have pretraining replicates, the two
// representatives are compared over their pretraining runs instead (said
// in the effect): the family claim tested on one member of each.
Finding families_finding(const Claim& claim, const Comparison& c, double alpha) {
  Finding f{claim, {}, "", ""};
  const std::string& key = claim.test[2];
  std::vector<double> ours_a, ours_b, paper_a, paper_b;
  std::vector<const json::Value*> rows_a, rows_b;  // the rows with the figure
  for (const PaperTable::Row& p : c.table->rows) {
    const bool a = p.family == spaced(claim.test[3]), b = p.family == spaced(claim.test[4]);
    if (!a && !b) continue;
    const double paper = p.value(key);
    if (std::isfinite(paper)) (a ? paper_a : paper_b).push_back(-badness(key, paper));
    const json::Value* row = row_json(c, p.key);
    const double ours = row ? row_estimate(*row, key) : kNaN;
    if (std::isfinite(ours)) {
      (a ? ours_a : ours_b).push_back(-badness(key, ours));
      (a ? rows_a : rows_b).push_back(row);
    }
  }
  double paper_effect = paper_a.empty() || paper_b.empty() ? kNaN : mean_std(paper_a).mean - mean_std(paper_b).mean;
  std::string over = "rows " + std::to_string(ours_a.size()) + " and " + std::to_string(ours_b.size());
  if ((ours_a.size() < 2 || ours_b.size() < 2) && rows_a.size() == 1 && rows_b.size() == 1) {
    const json::Value* fa = (*rows_a[0])["ordo"].find(key);
    const json::Value* fb = (*rows_b[0])["ordo"].find(key);
    if (fa && fb && fa->contains("pretraining") && fb->contains("pretraining")) {
      ours_a.clear(), ours_b.clear();
      for (const json::Value& x : (*fa)["pretraining"]["means"].as_array())
        ours_a.push_back(-badness(key, json::to_number(x)));
      for (const json::Value& x : (*fb)["pretraining"]["means"].as_array())
        ours_b.push_back(-badness(key, json::to_number(x)));
      // The paper's effect over the same two rows, so that both sides compare the same encodings.
      const json::Value* pa = (*rows_a[0])["paper"].find(key);
      const json::Value* pb = (*rows_b[0])["paper"].find(key);
      paper_effect = pa && pb ? badness(key, (*pb)["value"].as_number()) - badness(key, (*pa)["value"].as_number())
                              : kNaN;
      over = "one row of each, " + (*rows_a[0])["config"].as_string() + " and " + (*rows_b[0])["config"].as_string() +
             ", over their pretraining runs, " + std::to_string(ours_a.size()) + " and " +
             std::to_string(ours_b.size());
    }
  }
  if (ours_a.size() < 2 || ours_b.size() < 2) {
    f.judgement = untestable("fewer than two rows of a family have the figure");
    return f;
  }
  const double effect = mean_std(ours_a).mean - mean_std(ours_b).mean;
  const TTest t = welch_t_test(ours_a, ours_b);
  const Interval ci = welch_interval(ours_a, ours_b, 1 - alpha);
  f.compared = {effect, paper_effect, t.p, ""};
  f.judgement = judge(f.compared, alpha);
  f.effect = effect_text(key, claim.test[3], claim.test[4], effect, ci) + " (" + over + ", Welch " + p_text(t.p) + ")";
  f.paper = paper_effect_text(key, paper_effect);
  return f;
}

// One figure against another, each as (its row's JSON, its column): over the
// replicate that varies between them (their pretraining runs where both have
// several, else their fine-tuning seeds), each value as its goodness
// (-badness: direction balance by its closeness to 1), shown in the column's
// units. `pair` compares two rows in one column, `columns` one row in two.
struct Side {
  const json::Value* row;
  std::string key, name;
};

Finding compare_figures(const Claim& claim, const Side& a, const Side& b, double alpha) {
  Finding f{claim, {}, "", ""};
  const json::Value* fa = a.row ? (*a.row)["ordo"].find(a.key) : nullptr;
  const json::Value* fb = b.row ? (*b.row)["ordo"].find(b.key) : nullptr;
  if (!fa || !fb || fa->is_null() || fb->is_null()) {
    f.judgement = untestable(a.row && b.row ? "a figure has not been computed (its fine-tuning has not run)"
                                            : "a row has not run");
    return f;
  }
  for (const json::Value* v : {fa, fb})
    if (v->contains("left_out") || v->contains("at_chance")) {
      f.judgement = untestable(v->contains("at_chance") ? "accuracy at chance" : (*v)["left_out"].as_string());
      return f;
    }
  const bool pretraining = fa->contains("pretraining") && fb->contains("pretraining");
  auto goodness = [&](const json::Value& v, const std::string& key) {
    std::vector<double> out;
    for (const json::Value& x : (pretraining ? v["pretraining"]["means"] : v["values"]).as_array())
      out.push_back(-badness(key, json::to_number(x)));
    return out;
  };
  const std::vector<double> ga = goodness(*fa, a.key), gb = goodness(*fb, b.key);
  const double effect = mean_std(ga).mean - mean_std(gb).mean;
  const TTest t = welch_t_test(ga, gb);
  const Interval ci = welch_interval(ga, gb, 1 - alpha);
  const json::Value* pa = (*a.row)["paper"].find(a.key);
  const json::Value* pb = (*b.row)["paper"].find(b.key);
  const double paper_effect =
      pa && pb ? badness(b.key, (*pb)["value"].as_number()) - badness(a.key, (*pa)["value"].as_number()) : kNaN;
  f.compared = {effect, paper_effect, t.p, ""};
  f.judgement = judge(f.compared, alpha);
  f.effect = effect_text(a.key, a.name, b.name, effect, ci) + " (" +
             (pretraining ? "pretraining runs" : "fine-tuning seeds") + ", Welch " + p_text(t.p) + ")";
  f.paper = paper_effect_text(a.key, paper_effect);
  return f;
}

// "pair TABLE COLUMN A B": row A against row B in one column.
Finding pair_finding(const Claim& claim, const Comparison& c, double alpha) {
  const std::string& key = claim.test[2];
  return compare_figures(claim, {row_json(c, claim.test[3]), key, claim.test[3]},
                         {row_json(c, claim.test[4]), key, claim.test[4]}, alpha);
}

// "columns TABLE ROW A B": one row's column A against its column B (Huang et
// al.'s Table 4: a model fine-tuned longer than it was pretrained against the
// same model fine-tuned at its pretraining length).
Finding columns_finding(const Claim& claim, const Comparison& c, double alpha) {
  const json::Value* row = row_json(c, claim.test[2]);
  return compare_figures(claim, {row, claim.test[3], claim.test[3]}, {row, claim.test[4], claim.test[4]}, alpha);
}

// "higher KEY A B": A's figure above B's, the paper's direction stated in
// words; each pretraining run one value, so both rows need replicates.
Finding higher_finding(const Claim& claim, const std::vector<RunResults>& runs, const Plan& plan, double alpha) {
  Finding f{claim, {}, "", "higher (stated, no values)"};
  const std::string& key = claim.test[1];
  std::vector<std::string> averaged;  // per pretraining run, the tasks a mean (glue.mean, senteval.mean) averages
  auto values = [&](const std::string& config) {  // each pretraining run's mean, as pretraining_means
    std::vector<double> out;
    for (const RunResults& r : runs) {
      if (r.config != config) continue;
      std::vector<const RunResults*> pretrainings = {&r};
      for (const RunResults& again : r.replicates) pretrainings.push_back(&again);
      for (const RunResults* run : pretrainings)
        if (const std::optional<Figure> of_run = figure(*run, key, plan)) {
          out.push_back(of_run->mean());
          averaged.push_back(of_run->tasks);
        }
    }
    return out;
  };
  const std::vector<double> a = values(claim.test[2]), b = values(claim.test[3]);
  if (a.size() < 2 || b.size() < 2) {
    f.judgement = untestable(a.empty() || b.empty() ? "a row has not run, or has no " + key
                                                    : "one value per pretraining run, and a row has one run");
    return f;
  }
  for (const std::string& tasks : averaged)
    if (tasks != averaged.front()) {  // a mean compares only over the same tasks
      f.judgement = untestable("the pretraining runs' " + key + " average different tasks (" + averaged.front() +
                               "; " + tasks + ")");
      return f;
    }
  const double effect = mean_std(a).mean - mean_std(b).mean;
  const TTest t = welch_t_test(a, b);
  const Interval ci = welch_interval(a, b, 1 - alpha);
  f.compared = {effect, 1.0, t.p, ""};
  f.judgement = judge(f.compared, alpha);
  f.effect = claim.test[2] + " − " + claim.test[3] + " " + interval_text(effect, ci.low, ci.high) +
             " (pretraining runs, " + std::to_string(a.size()) + " and " + std::to_string(b.size()) + ", Welch " +
             p_text(t.p) + ")";
  return f;
}

// "correlation TABLE INDICATOR COLUMN"
Finding correlation_finding(const Claim& claim, const Comparison& c, double alpha) {
  Finding f{claim, {}, "", ""};
  const std::string& indicator = claim.test[2];
  const std::string& key = claim.test[3];
  const ColumnReading* r = reading_of(c, key, "signs");
  for (const json::Value& row : c.json["rows"].as_array()) {
    if (row["indicator"].as_string() != indicator) continue;
    const json::Value& v = row["ordo"][key];
    const double value = json::to_number(v["r"]);
    const int64_t n = v["n"].as_int();
    const Interval ci = pearson_interval(value, n, 1 - alpha);
    f.effect = "r " + format(value, "%.2f") + " [" + format(ci.low, "%.2f") + ", " + format(ci.high, "%.2f") +
               "] (n = " + std::to_string(n) + ", Holm " + p_text(json::to_number(v["holm_p"])) + ")";
    if (const json::Value* p = row["paper"].find(key)) f.paper = "r " + format(p->as_number(), "%.2f");
  }
  f.judgement = untestable("fewer than three runs with both values");
  if (r)
    for (size_t i = 0; i < r->names.size(); ++i)
      if (r->names[i] == indicator) f.judgement = {r->verdicts[i], ""};
  return f;
}

// A Markdown table cell: its '|' escaped.
std::string cell_text(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

const std::vector<Verdict>& verdict_order() {
  static const std::vector<Verdict> order = {Verdict::holds, Verdict::consistent, Verdict::contradicted,
                                             Verdict::inconclusive, Verdict::not_testable};
  return order;
}

// The family a pair, families or higher claim's Welch test belongs to: the
// claims comparing the same figure (a table's column; KEY in one table or
// figure of the paper); a columns claim is a family of its own.
std::string family_of(const Claim& claim) {
  const std::vector<std::string>& t = claim.test;
  if (t[0] == "higher") return claim.item + '\t' + t[1];
  if (t[0] == "pair" || t[0] == "families") return t[1] + '\t' + t[2];
  return claim.id;
}

// Holm's correction over each family of two or more Welch tests: each
// verdict re-read at its adjusted p, which its effect then states.
void correct_over_families(std::vector<Finding>& findings, double alpha) {
  std::map<std::string, std::vector<size_t>> families;
  for (size_t i = 0; i < findings.size(); ++i)
    if (std::isfinite(findings[i].compared.p)) families[family_of(findings[i].claim)].push_back(i);
  for (const auto& [family, members] : families) {
    if (members.size() < 2) continue;
    std::vector<double> p;
    for (size_t i : members) p.push_back(findings[i].compared.p);
    const std::vector<double> adjusted = holm_adjust(p);
    for (size_t k = 0; k < members.size(); ++k) {
      Finding& f = findings[members[k]];
      Evidence corrected = f.compared;
      corrected.p = adjusted[k];
      f.judgement = judge(corrected, alpha);
      f.effect.pop_back();  // its closing ')'
      f.effect += "; Holm over " + std::to_string(members.size()) + " claims " + p_text(adjusted[k]) + ")";
    }
  }
}

}  // namespace

Claims read_claims(const std::string& path) {
  Claims out;
  std::vector<Claim>& claims = out.claims;
  std::set<std::string> ids;
  const std::string text = read_data_text(path);
  const std::vector<std::string> lines = split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line = lines[i];
    if (!line.empty() && line.back() == '\r') line.pop_back();  // written on Windows
    const std::string at = path + ":" + std::to_string(i + 1);
    if (!line.empty() && line[0] == '#' && out.title.empty() && line.find_first_not_of("# ") != std::string::npos)
      out.title = line.substr(line.find_first_not_of("# "));
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> fields = split(line, '\t');
    if (fields[0] == "id") continue;  // the header
    ORDO_CHECK(fields.size() == 5, at, ": a claim has 5 tab-separated fields (id, item, claim, test, caveat), "
               "this line ", fields.size());
    Claim c;
    c.id = fields[0], c.item = fields[1], c.text = fields[2], c.caveat = fields[4] == "-" ? "" : fields[4];
    c.test = split(fields[3], ' ');
    c.line = static_cast<int>(i + 1);
    ORDO_CHECK(!c.id.empty() && !c.item.empty() && !c.text.empty() && !c.test.empty(), at,
               ": id, item, claim and test must not be empty");
    ORDO_CHECK(ids.insert(c.id).second, at, ": the id '", c.id, "' is used twice");
    const std::string& kind = c.test[0];
    ORDO_CHECK(kind == "untested" || words_of(kind) > 0, at, ": unknown test '", kind,
               "' (rank, row, pair, columns, families, higher, correlation, section, untested)");
    ORDO_CHECK(kind == "untested" ? c.test.size() >= 2 : c.test.size() == words_of(kind), at, ": the test '", kind,
               "' takes ", kind == "untested" ? "a reason" : std::to_string(words_of(kind) - 1) + " word(s)",
               ", got '", fields[3], "'");
    claims.push_back(c);
  }
  ORDO_CHECK(!claims.empty(), path, ": no claims");
  ORDO_CHECK(!out.title.empty(), path, ": the first comment line names the paper (\"# Wang et al. 2021, On Position "
             "Embeddings in BERT, ...\")");
  return out;
}

void check_claims(const std::vector<Claim>& claims, const std::string& path, const std::vector<PaperTable>& tables,
                  const Plan& plan) {
  for (const Claim& c : claims) {
    const std::string at = path + ":" + std::to_string(c.line) + " (" + c.id + ")";
    const std::string& kind = c.test[0];
    if (kind == "untested") continue;
    if (kind == "section") {
      // A key no section computes would read "not finished yet" forever: refused by name.
      const std::vector<std::string> known = {kFigure5Monotonicity, kFigure5Balance, kSweepLocality, kSweepSymmetry,
                                              kPretrainingLocality, kPretrainingSymmetry, kLayersSyntactic,
                                              kLayersSemantic, kDependencyShort, kDependencyLong};
      const std::string& key = c.test[1];
      const std::string swap_task =
          key.rfind(kSwapVerdictPrefix, 0) == 0 ? key.substr(std::strlen(kSwapVerdictPrefix)) : "";
      ORDO_CHECK(std::count(known.begin(), known.end(), key) || (!swap_task.empty() && plan.task(swap_task)), at,
                 ": no section verdict '", key, "' (a report computes ", joined(known, ", "),
                 " and swap.TASK for a fine-tuning task of the plan with a role swap)");
      continue;
    }
    if (kind == "higher") {
      const std::string& key = c.test[1];
      // A task's figure is checked against the plan's tasks where it fine-tunes (--stages may leave that out).
      ORDO_CHECK(is_figure_key(key) && (figure_task(key).empty() || !plan.has_stage("finetune") ||
                                        plan.task(figure_task(key)) != nullptr),
                 at, ": no figure '", key, "' (an analysis figure such as positional_rank or position_mae, "
                 "eval_accuracy, glue.mean, senteval.mean, a probe indicator or TASK.METRIC of the plan's tasks)");
      for (size_t k = 2; k < 4; ++k)
        ORDO_CHECK(plan.is_row(c.test[k]), at, ": no run config '", c.test[k], "' in ", plan.folder);
      continue;
    }
    const PaperTable* t = table_named(tables, c.test[1]);
    ORDO_CHECK(t != nullptr, at, ": no paper table '", c.test[1], "' (paper_", c.test[1], ".tsv) in ", plan.folder);
    ORDO_CHECK(t->correlations == (kind == "correlation"), at, ": the test '", kind, "' ",
               t->correlations ? "does not read" : "needs", " a table of correlations");
    auto check_column = [&](const std::string& column) {
      ORDO_CHECK(std::find(t->columns.begin(), t->columns.end(), column) != t->columns.end(), at, ": ", t->path,
                 " has no column '", column, "'");
    };
    if (kind == "columns") {
      ORDO_CHECK(t->find(c.test[2]) != nullptr, at, ": ", t->path, " has no row '", c.test[2], "'");
      check_column(c.test[3]), check_column(c.test[4]);
      ORDO_CHECK(badness(c.test[3], 1) - badness(c.test[3], 0) == badness(c.test[4], 1) - badness(c.test[4], 0) &&
                     (c.test[3] == "direction_balance") == (c.test[4] == "direction_balance"),
                 at, ": columns '", c.test[3], "' and '", c.test[4], "' are not read the same way (one larger is "
                 "better, the other smaller): they cannot be compared");
      continue;
    }
    check_column(kind == "correlation" ? c.test[3] : c.test[2]);
    if (kind == "row") {
      ORDO_CHECK(t->find(c.test[3]) != nullptr, at, ": ", t->path, " has no row '", c.test[3], "'");
      ORDO_CHECK(!plan.baseline.empty() && c.test[3] != plan.baseline, at, ": a row is tested against the plan's "
                 "baseline (report.baseline), which ", plan.baseline.empty() ? "is not set" : "is this row");
    }
    if (kind == "correlation") ORDO_CHECK(t->find(c.test[2]) != nullptr, at, ": ", t->path, " has no indicator row '", c.test[2], "'");
    if (kind == "families")
      for (size_t k = 3; k < 5; ++k)
        ORDO_CHECK(std::any_of(t->rows.begin(), t->rows.end(),
                               [&](const PaperTable::Row& r) { return r.family == spaced(c.test[k]); }),
                   at, ": ", t->path, " has no family '", spaced(c.test[k]), "'");
    if (kind == "pair")
      for (size_t k = 3; k < 5; ++k) ORDO_CHECK(t->find(c.test[k]) != nullptr, at, ": ", t->path, " has no row '", c.test[k], "'");
  }
}

std::vector<Finding> judge_claims(const std::vector<Claim>& claims, const std::vector<Comparison>& comparisons,
                                  const std::vector<SectionVerdict>& sections, const Plan& plan,
                                  const std::vector<RunResults>& runs) {
  std::vector<Finding> out;
  for (const Claim& claim : claims) {
    const std::string& kind = claim.test[0];
    if (kind == "untested") {
      std::string why;
      for (size_t k = 1; k < claim.test.size(); ++k) why += (k > 1 ? " " : "") + claim.test[k];
      out.push_back({claim, untestable(why), "", ""});
      continue;
    }
    if (kind == "higher") {
      out.push_back(higher_finding(claim, runs, plan, plan.alpha));
      continue;
    }
    if (kind == "section") {
      Finding f{claim, untestable("the report has no such section yet (its runs have not finished)"), "", ""};
      for (const SectionVerdict& s : sections)
        if (s.key == claim.test[1]) f.judgement = s.judgement, f.effect = s.effect, f.paper = s.paper;
      out.push_back(f);
      continue;
    }
    const Comparison* c = comparison_of(comparisons, claim.test[1]);
    if (!c) {
      out.push_back({claim, untestable("no runs with this table's figures yet"), "", ""});
      continue;
    }
    if (kind == "rank") out.push_back(rank_finding(claim, *c, plan.alpha));
    else if (kind == "row") out.push_back(row_finding(claim, *c, plan));
    else if (kind == "families") out.push_back(families_finding(claim, *c, plan.alpha));
    else if (kind == "pair") out.push_back(pair_finding(claim, *c, plan.alpha));
    else if (kind == "columns") out.push_back(columns_finding(claim, *c, plan.alpha));
    else out.push_back(correlation_finding(claim, *c, plan.alpha));
  }
  correct_over_families(out, plan.alpha);
  return out;
}

std::string findings_markdown(const std::vector<Finding>& findings, const std::string& title) {
  std::string md = "# " + title + "\n\nEach claim's verdict by the rules of experiment/verdicts.h: *holds* "
                   "(the paper's direction, significant), *consistent, not significant*, *contradicted* (the "
                   "opposite direction, significant), *inconclusive*, *not testable here*. Intervals are "
                   "95%; a difference between rows is tested over the replicate that varies between them, and the "
                   "claims comparing the same figure are one family: Holm's correction over their tests.\n\n"
                   "| claim | item | ordo's effect | the paper's | verdict | caveat |\n| --- | --- | --- | --- | --- | --- |\n";
  std::map<Verdict, int> counts;
  for (const Finding& f : findings) {
    ++counts[f.judgement.verdict];
    std::string verdict = verdict_name(f.judgement.verdict);
    if (!f.judgement.reason.empty()) verdict += ": " + f.judgement.reason;
    md += "| " + cell_text(f.claim.text) + " | " + cell_text(f.claim.item) + " | " +
          cell_text(f.effect.empty() ? "—" : f.effect) + " | " + cell_text(f.paper.empty() ? "—" : f.paper) + " | **" +
          cell_text(verdict) + "** | " + cell_text(f.claim.caveat.empty() ? "—" : f.claim.caveat) + " |\n";
  }
  md += "\n";
  for (Verdict v : verdict_order()) md += std::string(verdict_name(v)) + ": " + std::to_string(counts[v]) + "; ";
  md.resize(md.size() - 2);
  return md + " (of " + std::to_string(findings.size()) + " claims).\n";
}

std::string findings_json(const std::vector<Finding>& findings, const std::string& paper,
                          const json::Value& baseline) {
  json::Value all = json::Value::object(), list = json::Value::array();
  all["paper"] = paper;
  if (!baseline.is_null()) all["baseline"] = baseline;
  for (const Finding& f : findings) {
    json::Value j = json::Value::object();
    j["id"] = f.claim.id;
    j["item"] = f.claim.item;
    j["claim"] = f.claim.text;
    std::string test;
    for (const std::string& w : f.claim.test) test += (test.empty() ? "" : " ") + w;
    j["test"] = test;
    j["caveat"] = f.claim.caveat;
    j["effect"] = f.effect;
    j["paper_effect"] = f.paper;
    j["verdict"] = verdict_name(f.judgement.verdict);
    j["reason"] = f.judgement.reason;
    list.push_back(j);
  }
  all["findings"] = list;
  return json::dump(all, 2) + "\n";
}

std::string gather_findings(const std::vector<std::string>& report_dirs) {
  ORDO_CHECK(!report_dirs.empty(), "--findings: name the report folders to gather (each holds findings.json)");
  std::string sections, table = "| paper | holds | consistent, not significant | contradicted | inconclusive | "
                                "not testable here | claims |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  std::map<Verdict, int> total;
  int claims = 0;
  // The baselines by pretraining draw (same_draw): the first one's held-out losses, and each paper with
  // the name its baseline has there.
  std::vector<std::pair<json::Value, std::vector<std::string>>> baselines;
  std::set<std::string> papers;
  for (const std::string& dir : report_dirs) {
    const std::string path = dir + "/findings.json";
    if (!file_exists(path) && file_exists(dir + "/paper.json")) {  // a report written before its claims were
      table += "| `" + dir + "`: written before its paper's claims.tsv; its next report judges them |" +
               " — | — | — | — | — | — |\n";
      continue;
    }
    ORDO_CHECK(file_exists(path), "--findings: '", dir, "' holds no findings.json (the report of an experiment "
               "whose folder has a claims.tsv writes one)");
    const json::Value j = json::parse_file(path);
    ORDO_CHECK(j.is_object() && j.contains("paper") && j.contains("findings"), path,
               ": not a findings file (its \"paper\" and \"findings\" are missing)");
    ORDO_CHECK(j["paper"].is_string() && j["findings"].is_array(), path, ": \"paper\" is ",
               json::with_article(j["paper"].type()), " and \"findings\" ", json::with_article(j["findings"].type()),
               " (a paper's name and an array of findings were expected)");
    std::map<Verdict, int> counts;
    json::reading_file(path, [&] {
      const std::string& paper = j["paper"].as_string();
      // Twice the same paper would count its claims twice in the totals.
      ORDO_CHECK(papers.insert(paper).second, "--findings: the paper '", paper, "' is given twice (",
                 dir, " is a second report of it); give one report per paper");
      if (const json::Value* b = j.find("baseline")) {
        const json::Value& losses = held_out_losses(*b);
        if (!losses.as_array().empty()) {
          const std::string name = paper + "'s `" + (*b)["config"].as_string() + "`";
          auto draw = std::find_if(baselines.begin(), baselines.end(),
                                   [&](const auto& d) { return same_draw(d.first, losses); });
          if (draw == baselines.end()) baselines.push_back({losses, {name}});
          else draw->second.push_back(name);
        }
      }
      std::string md = "\n## " + paper + "\n\nFrom `" + dir + "`.\n\n| claim | item | ordo's effect | "
                       "the paper's | verdict | caveat |\n| --- | --- | --- | --- | --- | --- |\n";
      const std::vector<json::Value>& findings = j["findings"].as_array();
      for (size_t k = 0; k < findings.size(); ++k) {
        const json::Value& f = findings[k];
        // Named by its place: a message about it then says which finding it is.
        const std::string at = "\"findings\"[" + std::to_string(k) + "]";
        md += json::reading_file(at, [&] {
          ORDO_CHECK(f.is_object(), json::with_article(f.type()), ", not an object");
          const std::string& verdict = f["verdict"].as_string();
          bool known = false;
          for (Verdict v : verdict_order())
            if (verdict == verdict_name(v)) ++counts[v], ++total[v], known = true;
          ORDO_CHECK(known, "unknown verdict '", verdict, "'");
          const std::string& reason = f["reason"].as_string();
          auto or_dash = [](const std::string& s) { return s.empty() ? std::string("—") : cell_text(s); };
          return "| " + cell_text(f["claim"].as_string()) + " | " + cell_text(f["item"].as_string()) + " | " +
                 or_dash(f["effect"].as_string()) + " | " + or_dash(f["paper_effect"].as_string()) + " | **" +
                 cell_text(verdict + (reason.empty() ? "" : ": " + reason)) + "** | " +
                 or_dash(f["caveat"].as_string()) + " |\n";
        });
        ++claims;
      }
      sections += md;
      table += "| " + paper;
    });
    int n = 0;
    for (Verdict v : verdict_order()) table += " | " + std::to_string(counts[v]), n += counts[v];
    table += " | " + std::to_string(n) + " |\n";
  }
  table += "| **total**";
  for (Verdict v : verdict_order()) table += " | **" + std::to_string(total[v]) + "**";
  table += " | **" + std::to_string(claims) + "** |\n";
  for (const auto& [losses, names] : baselines) {
    if (names.size() < 2) continue;
    table += "\n**One baseline, not " + std::to_string(names.size()) + ".** ";
    for (size_t k = 0; k < names.size(); ++k)
      table += (k == 0 ? "" : k + 1 == names.size() ? " and " : ", ") + names[k];
    table += " are one pretraining draw (their held-out losses agree at every evaluation within 0.1%; the same "
             "configuration and seeds on another CPU differ by at most 0.0025%, another seed or encoding by 0.5% or "
             "more): the verdicts against them rest on the same pretraining draws, not on independent ones.\n";
  }
  return "# Findings: the papers' central claims at ordo's scale\n\nGenerated by `ordo experiment --findings` from the "
         "reports' findings.json; each report generates its own from its folder's claims.tsv. The verdicts follow "
         "the rules of experiment/verdicts.h: *holds* (the paper's direction, significant after correction), "
         "*consistent, not significant*, *contradicted* (the opposite direction, significant), *inconclusive*, "
         "*not testable here* (with why). Every result is ordo's scale — a 2-layer, 128-wide BERT pretrained 4,000 "
         "steps on a synthetic language — and most task figures are on synthetic stand-ins: the caveat column "
         "says which.\n\n" + table + sections;
}

}  // namespace ordo::experiment
