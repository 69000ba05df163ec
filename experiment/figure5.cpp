// Wang et al. 2021's Figure 5 across the runs (experiment/figure5.h).
#include "experiment/figure5.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/json_numbers.h"
#include "plot/svg.h"

namespace ordo::experiment {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string r_text(double r) { return cell(r, "%+.2f"); }

// The offsets [first, last] the correlations have, capped at the longest measured.
int last_offset(const RangeCorrelations& c, int last) { return std::min<int>(last, static_cast<int>(c.by_range.size())); }

// The correlations over [first, last] that have a value (three runs or more).
std::vector<std::pair<int, Correlation>> in_range(const RangeCorrelations& c, int first, int last) {
  std::vector<std::pair<int, Correlation>> out;
  for (int k = first; k <= last_offset(c, last); ++k)
    if (std::isfinite(c.by_range[k - 1].r)) out.emplace_back(k, c.by_range[k - 1]);
  return out;
}

// "r from -0.95 (k = 20) to -0.41 (k = 55), negative at 36 of 36 offsets": a score's curve over a range
// that has values.
std::string curve_text(const RangeCorrelations& c, int first, int last, const char* letter) {
  const auto points = in_range(c, first, last);
  const auto [low, high] = std::minmax_element(points.begin(), points.end(),
                                               [](const auto& a, const auto& b) { return a.second.r < b.second.r; });
  const long negative = std::count_if(points.begin(), points.end(), [](const auto& p) { return p.second.r < 0; });
  return c.column + ": r from " + r_text(low->second.r) + " (" + letter + " = " + std::to_string(low->first) + ") to " +
         r_text(high->second.r) + " (" + letter + " = " + std::to_string(high->first) + "), negative at " +
         std::to_string(negative) + " of " + std::to_string(points.size()) + " offsets";
}

// The column a claim reads: the first of `preferred` the correlations have a value for, else the first whose
// name starts with `prefix` and has one; nullptr when none.
const RangeCorrelations* column_of(const std::vector<RangeCorrelations>& all, const std::vector<std::string>& preferred,
                                   const std::string& prefix) {
  auto has_values = [](const RangeCorrelations& c) {
    return std::any_of(c.by_range.begin(), c.by_range.end(), [](const Correlation& x) { return std::isfinite(x.r); });
  };
  for (const std::string& name : preferred)
    for (const RangeCorrelations& c : all)
      if (c.column == name && has_values(c)) return &c;
  for (const RangeCorrelations& c : all)
    if (c.column.rfind(prefix, 0) == 0 && has_values(c)) return &c;
  return nullptr;
}

}  // namespace

SectionVerdict range_verdict(const std::string& key, const RangeCorrelations& c, int first, int last, int sign,
                             const std::string& paper, double alpha) {
  SectionVerdict v;
  v.key = key;
  v.paper = paper;
  const int upto = last_offset(c, last);
  const std::string range = std::to_string(first) + ".." + std::to_string(upto);
  if (upto < first) {
    v.judgement.reason = "the runs measure offsets up to " + std::to_string(c.by_range.size()) + ", the range starts at " +
                         std::to_string(first);
    return v;
  }
  const auto points = in_range(c, first, last);
  if (points.size() < static_cast<size_t>(upto - first + 1)) {
    v.judgement.reason = "fewer than three runs with both values at some offset of " + range;
    return v;
  }
  std::vector<double> sorted;
  for (const auto& point : points) sorted.push_back(point.second.r);
  std::sort(sorted.begin(), sorted.end());
  const size_t m = sorted.size();
  const double median = m % 2 ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);
  // One sign everywhere, or the range is not significant; then the largest p of the range.
  const bool one_sign = std::all_of(points.begin(), points.end(), [&](const auto& point) {
    return point.second.r != 0 && (point.second.r > 0) == (median > 0);
  });
  double p = one_sign ? 0 : 1;
  if (one_sign)
    for (const auto& point : points) p = std::max(p, point.second.p);
  v.judgement = judge({median, static_cast<double>(sign), p, ""}, alpha);
  v.effect = "r " + c.column + " over the first " + range + " offsets from " + r_text(sorted.front()) + " to " +
             r_text(sorted.back()) + ", median " + r_text(median) + " (n = " + std::to_string(points.front().second.n) +
             " runs; largest p of one sign " + (one_sign ? cell(p, "%.3g") : std::string("none: both signs occur")) + ")";
  return v;
}

Figure5Reading read_figure5(const std::vector<RangeCorrelations>& monotonicity,
                            const std::vector<RangeCorrelations>& balance, double alpha) {
  Figure5Reading out;
  for (const RangeCorrelations& c : monotonicity)
    if (!in_range(c, kMonotonicityFirst, kMonotonicityLast).empty())
      out.lines.push_back("OPR over the first k offsets, k = " + std::to_string(kMonotonicityFirst) + ".." +
                        std::to_string(kMonotonicityLast) + ", against " +
                        curve_text(c, kMonotonicityFirst, kMonotonicityLast, "k") + ".");
  for (const RangeCorrelations& c : balance) {
    if (in_range(c, kBalanceFirst, kBalanceLast).empty()) continue;
    std::string line = "DB over the first l offsets, l = " + std::to_string(kBalanceFirst) + ".." +
                       std::to_string(kBalanceLast) + ", against " + curve_text(c, kBalanceFirst, kBalanceLast, "l");
    if (!c.by_range.empty() && std::isfinite(c.by_range.back().r))
      line += "; at l = " + std::to_string(c.by_range.size()) + ", r " + r_text(c.by_range.back().r);
    out.lines.push_back(line + ".");
  }
  auto claim = [&](const std::string& key, const RangeCorrelations* c, int first, int last, int sign,
                   const std::string& paper, const std::string& what) {
    SectionVerdict v;
    v.key = key;
    v.paper = paper;
    v.judgement.reason = "no score of " + what + " has a value";
    if (c) v = range_verdict(key, *c, first, last, sign, paper, alpha);
    out.lines.push_back("The paper (Appendix C): " + paper + "." + (v.effect.empty() ? "" : " Here: " + v.effect + ".") +
                        " Verdict: " + verdict_name(v.judgement.verdict) +
                        (v.judgement.reason.empty() ? "" : " (" + v.judgement.reason + ")") + ".");
    out.verdicts.push_back(v);
  };
  const std::vector<std::string> span = {"squad.f1", "squad.score"};
  claim(kFigure5Monotonicity, column_of(monotonicity, span, "squad"), kMonotonicityFirst, kMonotonicityLast, -1,
        "r of OPR over the first 20-55 offsets with SQuAD below -0.9", "span prediction");
  const RangeCorrelations* glue = column_of(balance, {"glue.mean"}, "glue.mean");
  claim(kFigure5Balance, glue ? glue : column_of(balance, span, "squad"), kBalanceFirst, kBalanceLast, +1,
        "r of DB over the first few offsets with the scores above 0.5, falling as the range grows",
        "the GLUE mean or span prediction");
  return out;
}

ReportSection figure5_section(const std::vector<RunResults>& runs, const std::vector<std::string>& columns,
                              const Plan& plan) {
  ReportSection out;
  size_t ranges = 0;
  for (const RunResults& run : runs)
    if (!run.by_range.is_null()) ranges = std::max(ranges, run.by_range["monotonicity_first_k"].size());
  if (ranges == 0) return out;

  // Each score's r at every range, over the runs with both values.
  std::vector<RangeCorrelations> monotonicity, balance;
  for (const std::string& key : columns) {
    RangeCorrelations m{key, {}}, b{key, {}};
    for (size_t r = 1; r <= ranges; ++r) {
      std::vector<double> opr, db;
      for (const RunResults& run : runs) {
        const bool has = !run.by_range.is_null() && run.by_range["monotonicity_first_k"].size() >= r;
        opr.push_back(has ? json::to_number(run.by_range["monotonicity_first_k"][r - 1]) : kNaN);
        db.push_back(has ? json::to_number(run.by_range["direction_balance"][r - 1]) : kNaN);
      }
      m.by_range.push_back(correlate(runs, opr, key, plan));
      b.by_range.push_back(correlate(runs, db, key, plan));
    }
    monotonicity.push_back(m);
    balance.push_back(b);
  }
  // Score k drawn as look k in both panels; a score without any r has no line.
  auto lines_of = [](const std::vector<RangeCorrelations>& all) {
    std::vector<plot::svg::Line> lines;
    for (size_t k = 0; k < all.size(); ++k) {
      plot::svg::Line line{all[k].column, {}, {}, static_cast<int>(k)};
      for (size_t r = 0; r < all[k].by_range.size(); ++r)
        if (!std::isnan(all[k].by_range[r].r))
          line.x.push_back(static_cast<double>(r + 1)), line.y.push_back(all[k].by_range[r].r);
      if (!line.x.empty()) lines.push_back(line);
    }
    return lines;
  };
  const std::vector<plot::svg::Line> opr_lines = lines_of(monotonicity), db_lines = lines_of(balance);
  json::Value curves = json::Value::object();
  for (size_t k = 0; k < columns.size(); ++k) {
    json::Value entry = json::Value::object();
    for (const auto& [name, c] : {std::pair{"monotonicity_first_k", &monotonicity[k]},
                                  std::pair{"direction_balance", &balance[k]}}) {
      json::Value rs = json::Value::array();
      for (const Correlation& x : c->by_range) rs.push_back(json::number(x.r));
      entry[name] = rs;
    }
    curves[columns[k]] = entry;
  }
  if (opr_lines.empty() && db_lines.empty()) return out;

  plot::svg::ChartStyle style;
  style.y_min = -1, style.y_max = 1;
  style.legend = false;
  style.title = "OPR over the first k offsets vs scores";
  style.x_label = "k (offsets, tokens)";
  style.y_label = "Pearson r (unitless)";
  std::vector<plot::svg::Figure> panels = {plot::svg::line_chart(opr_lines, style)};
  style.title = "DB over the first l offsets vs scores";
  style.x_label = "l (offsets, tokens)";
  panels.push_back(plot::svg::line_chart(db_lines, style));
  // One legend for both panels: every score a curve has in either.
  std::vector<std::pair<std::string, int>> legend;
  for (const std::vector<plot::svg::Line>* lines : {&opr_lines, &db_lines})
    for (const plot::svg::Line& line : *lines)
      if (std::none_of(legend.begin(), legend.end(), [&](const auto& e) { return e.first == line.name; }))
        legend.emplace_back(line.name, line.look);
  std::sort(legend.begin(), legend.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
  out.files.push_back({"figure5.svg", plot::svg::document(plot::svg::grid(
                                          panels, 2, "Wang et al. 2021, Figure 5: correlation against the offset range",
                                          legend))});
  out.files.push_back({"figure5.json", json::dump(curves, 2) + "\n"});

  const Figure5Reading reading = read_figure5(monotonicity, balance, plan.alpha);
  // Named with its paper: every report draws it, beside papers whose own Figure 5 is another.
  out.markdown = "\n### Wang et al. 2021, Figure 5\n\n![Wang et al. 2021, Figure 5](figure5.svg)\n";
  out.html = "<h3>Wang et al. 2021, Figure 5</h3>\n<p><img src=\"figure5.svg\" alt=\"correlation against the offset "
             "range\"></p>\n";
  append_reading(reading.lines, "Reading (generated)", out.markdown, out.html);
  out.verdicts = reading.verdicts;
  return out;
}

}  // namespace ordo::experiment
