// `ordo analyze`: the position vectors themselves. The absolute table's and
// the per-offset vectors' dot products and cosines with the 0.95 threshold
// (Wang et al. 2021, Fig. 1, App. D), and the per-offset parameters as they
// are (Huang et al. 2020, Fig. 4).
#include <algorithm>

#include "probe/analysis_position.h"
#include "probe/analyze_parts.h"

namespace ordo::probe {

using namespace analyses;

void analyses::similarity_of_absolute(RunState& c, Output& out) {
  const std::string title = "Absolute position vectors: dot products and cosine similarity";
  if (c.table.empty()) return out.skip(title, "variant " + c.variant + " adds no position vector at the input");
  Matrix dot = probe::dot_products(c.table), cos = probe::cosine_similarities(c.table);
  probe::ThresholdSummary t = probe::threshold_summary(cos, 0);
  out.csv("absolute_dot.csv", dot);
  out.csv("absolute_cosine.csv", cos);
  out.svg("absolute_similarity.svg",
          plot::svg::grid({map(dot, "dot products P_i . P_j", "dot product"),
                           map(cos, "cosine similarity", "cosine", 0, "position j", "position i", 0.95, "cosine > 0.95",
                               false)},
                          2, c.variant + ": absolute position vectors (" + c.label + ")"));
  out.analysis(title, "absolute_similarity.svg", "csv", "absolute_cosine.csv",
               "Dot products (left, absolute_dot.csv) and cosine similarities (right) between the position vectors "
               "P_0..P_" + std::to_string(c.length - 1) + " added at the input (Wang et al. 2021, Fig. 1; Wang & Chen "
               "2020, Fig. 1). Red: cosine above 0.95, 'not significantly different' (Wang et al. 2021, App. D); " +
                   fmt("%.3f", t.share_above) + " of the pairs i != j. The dot products' colours span their 1st-99th percentiles "
                   "(the diagonal, |P_i|^2, saturates).");
}

void analyses::similarity_of_relative(RunState& c, Output& out) {
  const std::string title = "Relative position vectors: dot products and cosine similarity (0.95 threshold)";
  RelativeVectors r = relative_vectors(*c.model, c.trained);
  if (r.vectors.empty())
    return out.skip(title, "variant " + c.variant + " has no per-offset vectors (rpe_shaw, rpe_sin(_learnable), "
                           "huang_m1..m4 have them)");
  if (r.vectors.cols == 1)
    return out.skip(title, "variant " + c.variant + " has one scalar per offset, not vectors (drawn in '" +
                               std::string(kOffsetParametersTitle) + "')");
  Matrix dot = probe::dot_products(r.vectors), cos = probe::cosine_similarities(r.vectors);
  probe::ThresholdSummary t = probe::threshold_summary(cos, r.first);
  out.csv("relative_dot.csv", dot);
  out.csv("relative_cosine.csv", cos);
  json::Value s = json::Value::object();
  s["source"] = r.source;
  s["first_offset"] = r.first;
  s["threshold"] = t.threshold;
  s["share_above"] = t.share_above;
  s["indistinct_beyond_ahead"] = t.indistinct_beyond_ahead;
  s["indistinct_beyond_behind"] = t.indistinct_beyond_behind;
  out.json_file("relative_threshold.json", s);
  out.svg("relative_similarity.svg",
          plot::svg::grid({map(dot, "dot products a_r . a_s", "dot product", r.first, "offset s", "offset r"),
                           map(cos, "cosine similarity", "cosine", r.first, "offset s", "offset r", 0.95,
                               "cosine > 0.95", false)},
                          2, c.variant + ": relative vectors (" + c.label + ")"));
  auto beyond = [](int64_t d) { return d < 0 ? std::string("none") : std::to_string(d); };
  out.analysis(title, "relative_similarity.svg", "csv", "relative_cosine.csv",
               "Vectors of " + r.source + " (offset r = j - i). Red: cosine above 0.95 (Wang et al. 2021, App. D); " +
                   fmt("%.3f", t.share_above) + " of the pairs. All vectors beyond offset " +
                   beyond(t.indistinct_beyond_ahead) + " ahead and " + beyond(t.indistinct_beyond_behind) +
                   " behind are pairwise above the threshold (relative_threshold.json; dot products in relative_dot.csv).");
}

// Huang et al. 2020, Fig. 4: the per-offset parameters themselves, offsets
// -50..50 (the figure's range) within the trained ones, as a map of offset by
// dimension, or as a curve where the variant keeps one scalar per offset
// (methods 1-2's w_r). Beyond a clip k, offset r uses row c(r) = +-k, as the
// attention does, so every run shows the same range.
void analyses::offset_parameters(RunState& c, Output& out) {
  const std::string title = kOffsetParametersTitle;
  RelativeVectors r = relative_vectors(*c.model, c.trained);
  if (r.vectors.empty()) return out.skip(title, "variant " + c.variant + " has no per-offset parameters");
  const int64_t k = std::min<int64_t>(50, c.trained - 1), reach = -r.first, width = r.vectors.cols;
  Matrix v(2 * k + 1, width);
  std::vector<std::vector<double>> rows;
  std::vector<double> offsets, scalars;
  for (int64_t o = -k; o <= k; ++o) {
    const int64_t row = std::clamp(o, -reach, reach) - r.first;
    std::vector<double> line = {static_cast<double>(o)};
    for (int64_t m = 0; m < width; ++m) {
      v(o + k, m) = r.vectors(row, m);
      line.push_back(v(o + k, m));
    }
    rows.push_back(line);
    offsets.push_back(static_cast<double>(o));
    scalars.push_back(v(o + k, 0));
  }
  std::vector<std::string> header = {"offset"};
  for (int64_t m = 0; m < width; ++m) header.push_back("d" + std::to_string(m));
  out.file("offset_parameters.csv", table_csv(header, rows));
  const std::string heading = c.variant + ", layer 1, first head (" + c.label + ")";
  if (width == 1) {
    plot::svg::ChartStyle s = chart(heading, "offset r = j - i (positions)", "w_r");
    s.legend = false;  // one line: the axis names it
    out.svg("offset_parameters.svg", plot::svg::line_chart({{"w_r", offsets, scalars, 0}}, s));
  } else {
    plot::HeatmapStyle s;
    s.title = heading;
    s.x_label = "dimension";
    s.y_label = "offset r = j - i";
    s.colorbar_label = "value";
    s.y_first = -k;
    out.svg("offset_parameters.svg", plot::svg::heatmap(v, s, 360));  // one map, often a narrow one: room for its title
  }
  out.analysis(title, "offset_parameters.svg", "csv", "offset_parameters.csv",
               "The parameters of " + r.source + " for offsets -" + std::to_string(k) + ".." + std::to_string(k) +
                   (reach < k ? " (beyond the clip " + std::to_string(reach) + " each offset uses the row of +-" +
                                    std::to_string(reach) + ", as the attention does)"
                              : std::string()) +
                   (width == 1 ? std::string(": one scalar per offset, a gate on q_i . k_j")
                               : ", one row per offset, one column per dimension") +
                   " (Huang et al. 2020, Fig. 4: method 4, layer 1, head 1, offsets -50..50; large values at offset 0 "
                   "make a token attend near itself).");
}

}  // namespace ordo::probe
