// The compute ladder's report (experiment/scale_report.h).
#include "experiment/scale_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json.h"
#include "base/json_numbers.h"
#include "base/output.h"
#include "base/strings.h"
#include "experiment/ladder.h"
#include "experiment/paper_table.h"
#include "experiment/statistics.h"
#include "plot/svg.h"
#include "report/report.h"

namespace ordo::experiment {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A figure in a cell: three significant digits by default, "-" where there is none.
std::string number(double v, const char* pattern = "%.3g") { return cell(v, pattern); }

std::string what_of(const Disagreement& d) {
  return heading_of(d.figure) + " of " + d.row + (d.minus.empty() ? "" : " minus " + d.minus);
}

// The plan's index of a run by name.
size_t index_of(const Plan& plan, const std::string& name) {
  const auto it = std::find(plan.names.begin(), plan.names.end(), name);
  ORDO_ASSERT(it != plan.names.end());
  return static_cast<size_t>(it - plan.names.begin());
}

// A run config's run and its replicates' (each a pretraining run).
std::vector<const RunResults*> with_replicates(const RunResults& r) {
  std::vector<const RunResults*> all = {&r};
  for (const RunResults& replicate : r.replicates) all.push_back(&replicate);
  return all;
}

// A row's finished runs at a rung, by pretraining seed: the figure's mean over fine-tuning seeds.
std::map<uint64_t, double> values_by_seed(const Plan& plan, const std::vector<RunResults>& runs,
                                          const std::string& row, const std::string& figure_key) {
  std::map<uint64_t, double> out;
  for (const RunResults& r : runs) {
    if (r.config != row) continue;
    for (const RunResults* run : with_replicates(r)) {
      const std::optional<Figure> f = figure(*run, figure_key, plan);
      if (f && !f->values.empty() && std::isfinite(f->mean()))
        out[plan.configs[index_of(plan, run->config)].train.seed] = f->mean();
    }
  }
  return out;
}

std::vector<RungValues> rungs_of(const Disagreement& d, const Plan& plan, const std::vector<RunResults>& runs) {
  std::vector<RungValues> out;
  for (const Rung& rung : plan.ladder.rungs) {
    if (rung.is_check()) continue;  // no step of the ladder
    RungValues v;
    v.rung = rung.name;
    v.moves = rung.moves;
    const std::string row = ladder_run_name(d.row, rung.name);
    const train::RunConfig& config = plan.configs[index_of(plan, row)];
    v.flops = rung_shape(config).flops;
    // Unset is auto: bf16 products on a GPU, fp32 on the CPU (train/pretrain.h).
    v.precision = config.train.precision ? precision_name(*config.train.precision) : rung.gpu ? "bf16" : "fp32";
    const std::map<uint64_t, double> a = values_by_seed(plan, runs, row, d.figure);
    if (d.minus.empty()) {
      for (const auto& [seed, value] : a) v.values.push_back(value);
    } else {
      const std::map<uint64_t, double> b = values_by_seed(plan, runs, ladder_run_name(d.minus, rung.name), d.figure);
      for (const auto& [seed, value] : a)
        if (b.count(seed)) v.values.push_back(value - b.at(seed));
    }
    out.push_back(v);
  }
  return out;
}

std::string rung_cell(const RungValues& r) {
  if (r.values.empty()) return "-";
  const MeanStd m = mean_std(r.values);
  return number(m.mean) + (r.values.size() > 1 ? " ± " + number(m.std, "%.2g") : "") + " (" +
         std::to_string(r.values.size()) + ")";
}

std::string trend_cell(const ScaleJudgement& j) {
  if (!std::isfinite(j.trend.slope)) return "-";
  return number(j.trend.slope) + " [" + number(j.trend.slope_interval.low) + ", " +
         number(j.trend.slope_interval.high) + "], p = " + number(j.trend.p);
}

// "steps (r1 → r2): -0.05, p = 0.004; Holm over 4 disagreements, 0.016, toward the paper"
// (the direction where significant after the correction).
std::string move_text(const Move& m, double alpha) {
  if (std::isnan(m.change)) return "no runs on one side";
  const bool corrected = m.family > 1;
  const double p = corrected ? m.holm_p : m.p;
  return joined(m.moves) + " (" + m.from + " → " + m.to + "): " + number(m.change) + ", " +
         (std::isnan(m.p) ? "not testable" : "p = " + number(m.p)) +
         (corrected ? "; Holm over " + std::to_string(m.family) + " disagreements, " + number(p) : "") +
         (p < alpha ? (m.toward ? ", toward the paper" : ", away from the paper") : "");
}

// Whether the disagreement stands where the ladder starts.
std::string start_text(const ScaleRow& row, double alpha) {
  if (row.start.empty()) return "";
  const RungValues& r = *std::find_if(row.rungs.begin(), row.rungs.end(),
                                      [&](const RungValues& x) { return x.rung == row.start; });
  const std::string n = std::to_string(r.values.size());
  if (r.values.size() < 2) return " At " + row.start + ": one run, no test against the paper's value.";
  const std::string interval = "[" + number(row.start_mean.low) + ", " + number(row.start_mean.high) + "]";
  const std::string against = "At " + row.start + ": " + number(mean_std(r.values).mean) + ", " +
                              number(100 * (1 - alpha), "%g") + "% interval " + interval + " over " + n +
                              " pretraining runs, against the paper's " + number(row.disagreement.paper);
  if (std::isnan(row.at_start.p)) return " " + against + ": no test (the runs do not vary).";
  const bool corrected = row.start_family > 1;
  const double p = corrected ? row.start_holm_p : row.at_start.p;
  return " " + against + " (one-sample t, p = " + number(row.at_start.p) +
         (corrected ? "; Holm over the " + std::to_string(row.start_family) + " disagreements tested, " + number(p)
                    : "") +
         "): " + (p < alpha ? "the disagreement stands there." : "these runs do not rule out the paper's value.");
}

std::string moves_text(const ScaleRow& row, double alpha) {
  std::vector<std::string> parts;
  for (const Move& m : row.moves)
    if (!std::isnan(m.change)) parts.push_back(move_text(m, alpha));
  return parts.empty() ? "no step up the ladder has runs on both rungs" : joined(parts, "; ");
}

plot::svg::Figure scale_chart(const ScaleRow& row) {
  const Disagreement& d = row.disagreement;
  plot::svg::Line runs{"each pretraining run", {}, {}, 1}, means{"rung mean ± std", {}, {}, 0};
  runs.markers_only = true;
  for (const RungValues& r : row.rungs) {
    if (r.values.empty()) continue;
    const double x = std::log10(r.flops);
    for (double v : r.values) runs.x.push_back(x), runs.y.push_back(v);
    const MeanStd m = mean_std(r.values);
    means.x.push_back(x), means.y.push_back(m.mean), means.error.push_back(r.values.size() > 1 ? m.std : 0);
  }
  std::vector<plot::svg::Line> lines = {means, runs};
  if (!row.english.empty() && !row.rungs.empty()) {
    // Drawn a twentieth of a decade to the right of its rung, so that its markers do not hide the
    // synthetic runs' at the same compute; the legend says so.
    constexpr double kBeside = 0.05;
    plot::svg::Line english{"real English, " + row.rungs.front().rung + " (drawn beside it)", {}, {}, 4};
    english.markers_only = true;
    for (double v : row.english)
      english.x.push_back(std::log10(row.rungs.front().flops) + kBeside), english.y.push_back(v);
    lines.push_back(english);
  }
  if (!means.x.empty()) {
    const double x0 = means.x.front(), x1 = means.x.back();
    // A quarter of a decade past the rungs on either side: a line even where one rung has runs.
    lines.push_back({"the paper's value (" + number(d.paper) + ")", {x0 - 0.25, x1 + 0.25}, {d.paper, d.paper}, 3});
    const LinearFit& t = row.judgement.trend;
    if (std::isfinite(t.slope) && x1 > x0)
      lines.push_back({"least-squares trend", {x0, x1}, {t.intercept + t.slope * x0, t.intercept + t.slope * x1}, 2});
  }
  plot::svg::ChartStyle style;
  style.title = d.id + ": " + what_of(d) + " — " + scale_verdict_name(row.judgement.verdict);
  style.x_label = "training compute, log10 FLOPs";
  style.y_label = heading_of(d.figure) + (d.minus.empty() ? "" : " (difference)");
  style.width = 640;
  style.height = 400;
  style.x_margin = 0.06;
  return plot::svg::line_chart(lines, style);
}

json::Value row_json(const ScaleRow& row) {
  const Disagreement& d = row.disagreement;
  json::Value j = json::Value::object();
  j["id"] = d.id;
  j["figure"] = d.figure;
  j["row"] = d.row;
  j["minus"] = d.minus;
  j["paper"] = json::number(d.paper);
  j["paper_flops"] = json::number(d.paper_flops);
  j["disagreement"] = d.text;
  json::Value rungs = json::Value::array();
  for (const RungValues& r : row.rungs) {
    json::Value o = json::Value::object(), values = json::Value::array();
    o["rung"] = r.rung;
    o["flops"] = json::number(r.flops);
    o["precision"] = r.precision;
    for (double v : r.values) values.push_back(json::number(v));
    o["values"] = values;
    rungs.push_back(o);
  }
  j["rungs"] = rungs;
  const ScaleJudgement& s = row.judgement;
  json::Value trend = json::Value::object();
  trend["slope_per_tenfold"] = json::number(s.trend.slope);
  trend["low"] = json::number(s.trend.slope_interval.low);
  trend["high"] = json::number(s.trend.slope_interval.high);
  trend["p"] = json::number(s.trend.p);
  trend["n"] = s.trend.n;
  j["trend"] = trend;
  j["gap"] = json::number(s.gap);
  j["needed_slope"] = json::number(s.needed_slope);
  j["verdict"] = scale_verdict_name(s.verdict);
  j["reason"] = s.reason;
  json::Value moves = json::Value::array();
  for (const Move& m : row.moves) {
    json::Value o = json::Value::object();
    o["from"] = m.from;
    o["to"] = m.to;
    o["moves"] = joined(m.moves, ", ");
    o["change"] = json::number(m.change);
    o["p"] = json::number(m.p);
    o["holm_p"] = json::number(m.holm_p);
    o["toward_paper"] = m.toward;
    moves.push_back(o);
  }
  j["moves"] = moves;
  if (!row.start.empty()) {
    json::Value start = json::Value::object();
    start["rung"] = row.start;
    start["low"] = json::number(row.start_mean.low);
    start["high"] = json::number(row.start_mean.high);
    start["t"] = json::number(row.at_start.t);
    start["p"] = json::number(row.at_start.p);
    start["holm_p"] = json::number(row.start_holm_p);
    j["against_paper_at_start"] = start;
  }
  if (!row.english.empty()) {
    json::Value en = json::Value::object(), values = json::Value::array();
    for (double v : row.english) values.push_back(json::number(v));
    en["values"] = values;
    en["change"] = json::number(row.english_move.change);
    en["p"] = json::number(row.english_move.p);
    en["holm_p"] = json::number(row.english_move.holm_p);
    en["toward_paper"] = row.english_move.toward;
    j["english"] = en;
  }
  if (!row.pretrained.empty()) {
    json::Value models = json::Value::array();
    for (double v : row.pretrained) models.push_back(json::number(v));
    j["pretrained"] = models;  // in report.pretrained's order
  }
  return j;
}

// report.pretrained's models: each one's probe indicators, or why there are none.
struct PretrainedProbe {
  std::string file, missing;  // missing: "" when read
  json::Value indicators;
};

std::vector<PretrainedProbe> pretrained_probes(const Plan& plan) {
  std::vector<PretrainedProbe> out;
  for (const PretrainedModel& m : plan.pretrained) {
    PretrainedProbe p;
    p.file = plan.out + "/" + m.probe + "/indicators.json";
    if (file_exists(p.file)) p.indicators = json::parse_file(p.file);
    else
      p.missing = m.name + " has not been probed (" + p.file + " is missing: `ordo probe --checkpoint MODEL --out " +
                  plan.out + "/" + m.probe + "`; make scale_study_minilm for all-MiniLM-L6-v2)";
    out.push_back(p);
  }
  return out;
}

// The layer a plan probes (the study's Table 2 is layer 1; "all": the first).
int probed_layer(const Plan& plan) {
  const std::string& layers = plan.probe.layers;
  return !layers.empty() && std::all_of(layers.begin(), layers.end(), ::isdigit) ? std::stoi(layers) : 1;
}

// report.english's experiment: its plan (from the folder its experiment.json
// records) and its runs; an empty plan where it has not been made yet.
struct EnglishRuns {
  std::string out, missing;  // missing: why there is nothing to read ("" when read)
  Plan plan;
  std::vector<RunResults> runs;
};

EnglishRuns english_runs(const Plan& plan) {
  EnglishRuns e;
  e.out = plan.out + "/" + plan.english_out;
  if (!file_exists(e.out + "/experiment.json")) {
    e.missing =
        "The real-English runs have not been made (" + e.out + " holds no experiment; make scale_study_english)";
    return e;
  }
  const std::string recorded_path = e.out + "/experiment.json";
  const json::Value recorded = json::parse_file(recorded_path);
  PlanRequest request;
  json::reading_file(recorded_path, [&] {
    request.folder = recorded["folder"].as_string();
    request.quick = recorded.contains("quick") && recorded["quick"].as_bool();
  });
  request.out = e.out;
  e.plan = make_plan(request);
  e.runs = gather_results(e.plan);
  return e;
}

// A disagreement's values over the real-English runs, by pretraining seed (a gap paired by seed).
std::vector<double> english_values(const Disagreement& d, const EnglishRuns& e) {
  std::vector<double> out;
  if (!e.missing.empty()) return out;
  const std::map<uint64_t, double> a = values_by_seed(e.plan, e.runs, d.row, d.figure);
  const std::map<uint64_t, double> b =
      d.minus.empty() ? std::map<uint64_t, double>{} : values_by_seed(e.plan, e.runs, d.minus, d.figure);
  for (const auto& [seed, value] : a)
    if (d.minus.empty()) out.push_back(value);
    else if (b.count(seed)) out.push_back(value - b.at(seed));
  return out;
}

// Every check rung against the rung it checks: a table of each run config's
// figures and a generated line per check.
void checks_of_rungs(const Plan& plan, const std::vector<RunResults>& runs,
                     const std::vector<Disagreement>& disagreements, std::string& md, std::string& html) {
  std::vector<std::string> figures;
  for (const Disagreement& d : disagreements)
    if (std::find(figures.begin(), figures.end(), d.figure) == figures.end()) figures.push_back(d.figure);
  figures.push_back("eval_accuracy");
  for (const FinetuneTask& t : plan.finetune) {
    const bool named = std::any_of(figures.begin(), figures.end(),
                                   [&](const std::string& f) { return f.rfind(t.name + ".", 0) == 0; });
    if (!t.sweep && !named) figures.push_back(t.name + ".score");
  }
  for (const Rung& check : plan.ladder.rungs) {
    if (!check.is_check()) continue;
    TextTable table;
    table.header = {"run", "figure", check.checks + ": mean ± std (n)",
                    number(100 * (1 - plan.alpha), "%g") + "% prediction interval", check.name, "within"};
    table.text_columns = 2;
    int64_t tested = 0, outside = 0;
    std::vector<std::string> outside_names;
    for (size_t i = 0; i < plan.names.size(); ++i) {
      if (rung_of(plan, i) != &check) continue;
      const std::string base = plan.row_of[i].substr(0, plan.row_of[i].size() - check.name.size() - 1);
      for (const std::string& figure_key : figures) {
        std::vector<double> reference;
        for (const auto& [seed, v] : values_by_seed(plan, runs, ladder_run_name(base, check.checks), figure_key))
          reference.push_back(v);
        const std::map<uint64_t, double> at_check = values_by_seed(plan, runs, plan.row_of[i], figure_key);
        const double value = at_check.empty() ? kNaN : at_check.begin()->second;
        const CheckValue c = check_value(base, figure_key, reference, value, plan.alpha);
        const bool judged = std::isfinite(c.value) && std::isfinite(c.interval.low);
        tested += judged;
        outside += judged && c.outside;
        if (judged && c.outside) outside_names.push_back(base + " " + figure_key);
        RungValues r;
        r.values = reference;
        table.rows.push_back({base, figure_key, rung_cell(r),
                              judged ? "[" + number(c.interval.low) + ", " + number(c.interval.high) + "]" : "-",
                              number(c.value), judged ? (c.outside ? "outside" : "yes") : "-"});
      }
    }
    std::string line = "Check '" + check.name + "' of rung '" + check.checks + "': ";
    if (tested == 0) {
      line += "not testable yet (it needs the check's runs and at least two pretraining runs of the checked rung)";
    } else {
      const double p = binomial_upper_tail(outside, tested, plan.alpha);
      line += std::to_string(outside) + " of " + std::to_string(tested) + " figures outside the " +
              number(100 * (1 - plan.alpha), "%g") + "% prediction interval of the checked rung's pretraining runs " +
              "(chance alone puts at least that many outside with p = " + number(p) + "): " +
              (p < plan.alpha ? "the check differs from the rung it checks beyond its pretraining spread"
                              : "within the spread of the rung's pretraining runs, so the check's setting may stand "
                                "in for the rung's at the larger rungs") +
              (outside_names.empty() ? "" : " (outside: " + joined(outside_names, ", ") + ")");
    }
    line += ".";
    const std::string title = "Check: " + check.name + " against " + check.checks;
    md += "\n### " + title + "\n\n" + table.markdown() + "\n" + line + "\n";
    html += "<h3>" + report::html_escape(title) + "</h3>\n" + table.html() + "<p>" + report::html_escape(line) +
            "</p>\n";
  }
}

// The wall time of each rung's finished runs, as RUN/stages.json records
// each stage: what a reader sizing the ladder for another machine starts from.
void rung_times(const Plan& plan, const std::vector<RunResults>& runs, std::string& md, std::string& html) {
  struct Times {
    std::vector<double> pretrain, finetune;  // seconds, per run
    double all = 0;                          // every stage of every run
  };
  std::map<const Rung*, Times> by_rung;
  for (const RunResults& r : runs)
    for (const RunResults* run : with_replicates(r)) {
      if (!run->pretrained()) continue;
      const size_t i = index_of(plan, run->config);
      Times& t = by_rung[rung_of(plan, i)];
      std::map<std::string, double> seconds;
      for (const auto& [stage, entry] : run->stages.items()) {
        seconds[stage] = recorded_seconds(run->stages, stage, run->run_dir + "/stages.json");
        t.all += seconds[stage];
      }
      t.pretrain.push_back(seconds["pretrain"]);
      // The run's fine-tuning, once every task it fine-tunes on has finished.
      double finetune = 0;
      bool finished = plan.has_stage("finetune");
      for (const FinetuneTask& task : plan.finetune) {
        if (!plan.fine_tunes(i, task)) continue;
        const auto it = seconds.find("finetune:" + task.name);
        finished = finished && it != seconds.end();
        if (it != seconds.end()) finetune += it->second;
      }
      if (finished) t.finetune.push_back(finetune);
    }
  if (by_rung.empty()) return;
  const auto minutes = [](std::vector<double> s) {
    if (s.empty()) return std::string("-");
    std::sort(s.begin(), s.end());
    return number(s.front() / 60, "%.1f") + (s.size() > 1 ? "-" + number(s.back() / 60, "%.1f") : "") + " min";
  };
  TextTable table;
  table.header = {"rung", "runs", "pretraining / run", "fine-tuning / run", "every stage, all runs"};
  table.text_columns = 1;
  for (const Rung& rung : plan.ladder.rungs) {
    const auto it = by_rung.find(&rung);
    if (it == by_rung.end()) continue;
    const Times& t = it->second;
    table.rows.push_back({rung.name, std::to_string(t.pretrain.size()), minutes(t.pretrain), minutes(t.finetune),
                          number(t.all / 3600, "%.2f") + " h"});
  }
  const std::string title = "Time per rung";
  const std::string about =
      "Each stage's wall time as its run's stages.json records it, on whichever machine ran it and with whatever "
      "else ran there (a stage resumed after an interruption counts from its resumption): a guide to sizing the "
      "ladder, not a benchmark (ordo bench train measures a step).";
  md += "\n### " + title + "\n\n" + about + "\n\n" + table.markdown();
  html += "<h3>" + title + "</h3>\n<p>" + report::html_escape(about) + "</p>\n" + table.html();
}

// How many of p are tests (holm_adjust leaves a NaN, an untested p, out of the family).
size_t tests_in(const std::vector<double>& p) {
  return static_cast<size_t>(std::count_if(p.begin(), p.end(), [](double x) { return !std::isnan(x); }));
}

// Holm over the moves given (an untested move stays out: its holm_p NaN, its family 0).
void correct_family(const std::vector<Move*>& moves) {
  std::vector<double> p;
  for (const Move* m : moves) p.push_back(m->p);
  const std::vector<double> adjusted = holm_adjust(p);
  const size_t n = tests_in(p);
  for (size_t k = 0; k < moves.size(); ++k)
    moves[k]->holm_p = adjusted[k], moves[k]->family = std::isnan(p[k]) ? 0 : n;
}

}  // namespace

CheckValue check_value(const std::string& run, const std::string& figure, std::vector<double> reference,
                       double value, double alpha) {
  CheckValue c;
  c.run = run, c.figure = figure, c.value = value;
  c.reference = std::move(reference);
  c.interval = {kNaN, kNaN};
  const size_t n = c.reference.size();
  if (n < 2) return c;
  const MeanStd m = mean_std(c.reference);
  const double half = student_t_isf(alpha / 2, static_cast<double>(n - 1)) * m.std *
                      std::sqrt(1 + 1 / static_cast<double>(n));
  c.interval = {m.mean - half, m.mean + half};
  c.outside = std::isfinite(value) && (value < c.interval.low || value > c.interval.high);
  return c;
}

double binomial_upper_tail(int64_t k, int64_t n, double p) {
  double tail = 0;
  for (int64_t j = std::max<int64_t>(k, 0); j <= n; ++j)
    tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(j + 1.0) - std::lgamma(n - j + 1.0) + j * std::log(p) +
                     (n - j) * std::log1p(-p));
  return std::min(1.0, tail);
}

ScaleRow judge_disagreement(const Disagreement& d, std::vector<RungValues> rungs, double alpha) {
  ScaleRow row;
  row.disagreement = d;
  row.rungs = std::move(rungs);
  ScaleEvidence e;
  for (const RungValues& r : row.rungs)
    for (double v : r.values) e.compute.push_back(r.flops), e.value.push_back(v);
  e.paper_value = d.paper;
  e.target_compute = d.paper_flops;
  row.judgement = judge_scale(e, alpha);
  const RungValues* first = nullptr;  // the smallest rung with runs: where the gap is measured
  for (const RungValues& r : row.rungs)
    if (!r.values.empty() && (!first || r.flops < first->flops)) first = &r;
  const double gap = first ? d.paper - mean_std(first->values).mean : kNaN;
  row.at_start = {kNaN, kNaN, kNaN};
  row.start_mean = {kNaN, kNaN};
  if (first) {
    row.start = first->rung;
    row.at_start = one_sample_t_test(first->values, d.paper);
    row.start_mean = mean_interval(first->values, 1 - alpha);
  }
  for (size_t k = 1; k < row.rungs.size(); ++k) {
    const RungValues &was = row.rungs[k - 1], &now = row.rungs[k];
    Move m;
    m.from = was.rung, m.to = now.rung, m.moves = now.moves;
    m.change = was.values.empty() || now.values.empty() ? kNaN
                                                        : mean_std(now.values).mean - mean_std(was.values).mean;
    m.p = welch_t_test(now.values, was.values).p;
    m.toward = std::isfinite(gap) && gap != 0 && std::isfinite(m.change) && m.change != 0 &&
               (m.change > 0) == (gap > 0);
    row.moves.push_back(m);
  }
  return row;
}

double pretrained_value(const Disagreement& d, const PretrainedModel& model, const json::Value& indicators,
                        int layer, const std::string& file) {
  if (!d.minus.empty() || d.row != model.row || !is_indicator_key(d.figure)) return kNaN;
  const std::string name = "layer_" + std::to_string(layer);
  const json::Value* at = indicators.is_object() ? indicators.find(name) : nullptr;
  const json::Value* part = at && at->is_object() ? at->find("with_special") : nullptr;
  ORDO_CHECK(part && part->is_object(), file, ": no \"", name, "\".\"with_special\" object (", model.name,
             " probed at another layer? the plan reads layer ", layer, ")");
  const json::Value* v = part->find(d.figure);
  ORDO_CHECK(v != nullptr, file, ": \"", name, "\".\"with_special\" has no \"", d.figure, "\"");
  return json::reading_file(file, [&] { return json::to_number(*v); });
}

Move english_change(const ScaleRow& row, const std::vector<double>& english) {
  Move m;
  m.to = "real English";
  m.moves = {"corpus"};
  if (row.rungs.empty()) return m;
  const RungValues& first = row.rungs.front();
  m.from = first.rung;
  if (first.values.empty() || english.empty()) return m;
  const double synthetic = mean_std(first.values).mean, gap = row.disagreement.paper - synthetic;
  m.change = mean_std(english).mean - synthetic;
  m.p = welch_t_test(english, first.values).p;
  m.toward = std::isfinite(gap) && gap != 0 && m.change != 0 && (m.change > 0) == (gap > 0);
  return m;
}

void correct_start_tests(std::vector<ScaleRow>& rows) {
  std::vector<double> p;
  for (const ScaleRow& row : rows) p.push_back(row.at_start.p);
  const std::vector<double> adjusted = holm_adjust(p);
  const size_t n = tests_in(p);
  for (size_t k = 0; k < rows.size(); ++k)
    rows[k].start_holm_p = adjusted[k], rows[k].start_family = std::isnan(p[k]) ? 0 : n;
}

void correct_moves(std::vector<ScaleRow>& rows) {
  size_t steps = 0;
  for (const ScaleRow& row : rows) steps = std::max(steps, row.moves.size());
  for (size_t k = 0; k < steps; ++k) {
    std::vector<Move*> step;
    for (ScaleRow& row : rows)
      if (k < row.moves.size()) step.push_back(&row.moves[k]);
    correct_family(step);
  }
  std::vector<Move*> english;
  for (ScaleRow& row : rows) english.push_back(&row.english_move);
  correct_family(english);
}

ReportSection scale_across_rungs(const Plan& plan, const std::vector<RunResults>& runs) {
  const std::vector<Disagreement> disagreements = read_disagreements(plan.disagreements, plan.folder);
  ReportSection out;
  std::string& md = out.markdown;
  std::string& html = out.html;
  const std::string title = "Is it scale? The disagreements against compute";
  const std::string about =
      "Where the ladder starts (its smallest rung with runs), each disagreement is first tested against the paper's "
      "value by Student's one-sample t over the pretraining runs, Holm-corrected over the disagreements tested: it "
      "stands there, or these runs do not rule out the paper's value. Then each followed up the compute ladder: "
      "every (rung, pretraining seed) run is a point, its value the figure's mean over fine-tuning seeds; the trend "
      "is the least-squares slope against log10 training compute (Kaplan et al. 2020's count) with its " +
      number(100 * (1 - plan.alpha), "%g") +
      "% interval over every point, read as: closes with scale (a significant trend toward the paper's value), does "
      "not close (even the interval's end most toward the paper is short of reaching it by the paper model's compute), "
      "cannot tell at these rungs (otherwise). Each step up the ladder moves steps, width or depth; its change is "
      "tested by Welch's t over the two rungs' pretraining runs, Holm-corrected over the disagreements (as is the "
      "change to real English).";
  md += "\n## " + title + "\n\n" + about + "\n\n";
  html += "<h2>" + report::html_escape(title) + "</h2>\n<p>" + report::html_escape(about) + "</p>\n";

  std::vector<ScaleRow> judged;
  EnglishRuns english;
  if (!plan.english_out.empty()) english = english_runs(plan);
  const std::vector<PretrainedProbe> probes = pretrained_probes(plan);
  for (const Disagreement& d : disagreements) {
    judged.push_back(judge_disagreement(d, rungs_of(d, plan, runs), plan.alpha));
    judged.back().english = english_values(d, english);
    judged.back().english_move = english_change(judged.back(), judged.back().english);
    for (size_t k = 0; k < probes.size(); ++k)
      judged.back().pretrained.push_back(
          probes[k].missing.empty()
              ? pretrained_value(d, plan.pretrained[k], probes[k].indicators, probed_layer(plan), probes[k].file)
              : kNaN);
  }
  correct_start_tests(judged);
  correct_moves(judged);
  // A column per rung with runs (the first always): the others are named under the table.
  std::vector<bool> shown(judged.front().rungs.size(), false);
  std::vector<std::string> missing;  // the rungs with no run's value yet
  for (size_t k = 0; k < shown.size(); ++k) {
    const bool ran = std::any_of(judged.begin(), judged.end(),
                                 [&](const ScaleRow& row) { return !row.rungs[k].values.empty(); });
    shown[k] = k == 0 || ran;
    if (!ran) missing.push_back(judged.front().rungs[k].rung);
  }
  TextTable table;
  table.header = {"id", "figure", "paper"};
  for (size_t k = 0; k < shown.size(); ++k)
    if (shown[k]) {
      const RungValues& r = judged.front().rungs[k];
      table.header.push_back(r.rung + " (" + number(std::log10(r.flops), "10^%.1f") + ", " + r.precision + ")");
    }
  if (!plan.english_out.empty()) table.header.push_back("real English (" + judged.front().rungs.front().rung + ")");
  for (const PretrainedModel& m : plan.pretrained)
    table.header.push_back(m.name + " (layer " + std::to_string(probed_layer(plan)) + ")");
  table.header.insert(table.header.end(), {"trend per tenfold [interval], p", "verdict"});
  json::Value rows = json::Value::array();
  std::vector<std::string> reading;
  std::string figures_md, figures_html;
  for (const ScaleRow& row : judged) {
    const Disagreement& d = row.disagreement;
    std::string line_extra;  // the pretrained models' values, after the ladder's reading
    std::vector<std::string> cells = {d.id, what_of(d), number(d.paper)};
    for (size_t k = 0; k < row.rungs.size(); ++k)
      if (shown[k]) cells.push_back(rung_cell(row.rungs[k]));
    if (!plan.english_out.empty()) {
      RungValues en;
      en.values = row.english;
      cells.push_back(rung_cell(en));
    }
    for (size_t k = 0; k < row.pretrained.size(); ++k) {
      const double v = row.pretrained[k];
      cells.push_back(!probes[k].missing.empty() ? "not probed" : number(v));
      if (std::isnan(v)) continue;
      const auto start = std::find_if(row.rungs.begin(), row.rungs.end(),
                                      [&](const RungValues& r) { return r.rung == row.start; });
      const std::string at_start =
          start == row.rungs.end() ? "" : ", " + row.start + " " + number(mean_std(start->values).mean);
      line_extra += " " + plan.pretrained[k].name + " (pretrained elsewhere; layer " +
                    std::to_string(probed_layer(plan)) + ", beside " + d.row + "): " + number(v) + " (the paper " +
                    number(d.paper) + at_start + ").";
    }
    cells.push_back(trend_cell(row.judgement));
    cells.push_back(scale_verdict_name(row.judgement.verdict));
    table.rows.push_back(cells);
    std::string line = d.id + " (" + d.text + "): " + scale_verdict_name(row.judgement.verdict) + " — " +
                       row.judgement.reason + "." + start_text(row, plan.alpha) +
                       " Steps up the ladder: " + moves_text(row, plan.alpha) + ".";
    if (!plan.english_out.empty() && english.missing.empty())
      line += " Real English instead of the synthetic language, at " + row.english_move.from + ": " +
              move_text(row.english_move, plan.alpha) + ".";
    reading.push_back(line + line_extra);
    rows.push_back(row_json(row));
    const std::string file = "scale/" + d.id + ".svg";
    out.files.push_back({file, plot::svg::document(scale_chart(row))});
    figures_md += "![" + d.id + "](" + file + ")\n";
    figures_html += "<figure><img src=\"" + file + "\" alt=\"" + report::html_escape(what_of(d)) +
                    " against compute\"></figure>\n";
  }
  table.text_columns = 2;
  md += table.markdown() + "\n";
  html += table.html();
  std::vector<std::string> absent = {english.missing};
  for (const PretrainedProbe& p : probes) absent.push_back(p.missing);
  for (const std::string& why : absent) {
    if (why.empty()) continue;
    md += why + ".\n\n";
    html += "<p>" + report::html_escape(why) + ".</p>\n";
  }
  if (!missing.empty()) {
    // The CPU's rungs with the command that runs them; the GPU's with the script (experiment/ladder.h).
    std::vector<std::string> here, gpu;
    for (const Rung& r : plan.ladder.rungs)
      if (std::count(missing.begin(), missing.end(), r.name)) (r.gpu ? gpu : here).push_back(r.name);
    const auto command = [&](const std::vector<std::string>& rungs) {
      return "`ordo experiment " + plan.folder + " --out " + plan.out + " --rungs " + joined(rungs, ",") + "`";
    };
    std::vector<std::string> parts;
    if (!here.empty()) parts.push_back(joined(here, ", ") + " (" + command(here) + " runs them)");
    if (!gpu.empty())
      parts.push_back("marked for a GPU, " + joined(gpu, ", ") + " (tools/scale_gpu_rungs.sh on a lent GPU, its --merge "
                      "bringing them here; " + command(gpu) + " runs them on this machine instead)");
    const std::string line = "Rungs with no finished run yet: " + joined(parts, "; ") + ".";
    md += line + "\n\n";
    html += "<p>" + report::html_escape(line) + "</p>\n";
  }
  append_reading(reading, "Reading (generated)", md, html);
  md += "\n" + figures_md;
  html += figures_html;
  checks_of_rungs(plan, runs, disagreements, md, html);
  rung_times(plan, runs, md, html);
  json::Value all = json::Value::object();
  all["alpha"] = plan.alpha;
  all["disagreements"] = rows;
  out.files.push_back({"scale/scale.json", json::dump(all, 2) + "\n"});
  return out;
}

}  // namespace ordo::experiment
