// The SVG charts (plot/svg.h) read back by the test's own XML reader
// (tests/plot/svg_check.h): well-formed, every series named once in a
// legend that stays inside the view box, text no smaller than 13 px on a
// figure no wider than a 1400 px page's column, the colours those Paul Tol
// publishes, the heatmap's cells matplotlib's viridis end points.
#include <cctype>
#include <set>
#include <tuple>

#include "plot/svg.h"
#include "tests/helpers.h"
#include "tests/plot/png_check.h"
#include "tests/plot/svg_check.h"

using namespace ordo;
namespace svg = ordo::plot::svg;

namespace {

// Thirteen runs' names, as a report of Wang et al. 2021's variants labels them.
std::vector<std::string> thirteen_names() {
  std::vector<std::string> names;
  for (int k = 0; k < 13; ++k) names.push_back("ape_learned (run_" + std::to_string(10 + k) + ")");
  return names;
}

std::vector<svg::Line> thirteen_lines() {
  std::vector<svg::Line> lines;
  int k = 0;
  for (const std::string& name : thirteen_names()) {
    svg::Line l;
    l.name = name;
    l.look = k;
    for (int step = 0; step <= 4; ++step) l.x.push_back(step * 1000), l.y.push_back(0.1 * k + 0.01 * step);
    lines.push_back(l);
    ++k;
  }
  return lines;
}

// The base64 alphabet of RFC 4648 §4, decoded by hand.
std::string unbase64(const std::string& s) {
  std::string out;
  uint32_t v = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char* at = std::strchr(alphabet, c);
    REQUIRE(at != nullptr);
    v = v << 6 | static_cast<uint32_t>(at - alphabet);
    bits += 6;
    if (bits >= 8) out += static_cast<char>((v >> (bits - 8)) & 0xFF), bits -= 8;
  }
  return out;
}

void find_all(const svg_check::Element& e, const std::string& name, std::vector<const svg_check::Element*>& out) {
  if (e.name == name) out.push_back(&e);
  for (const svg_check::Element& c : e.children) find_all(c, name, out);
}

}  // namespace

TEST_CASE("svg: 13 series, each named once in a legend inside the figure", "[plot][svg]") {
  svg::ChartStyle style;
  style.title = "translation invariance (AIV)";
  style.x_label = "step (updates)";
  style.y_label = "AIV (unitless)";
  const svg_check::Element doc = svg_check::parse(svg::document(svg::line_chart(thirteen_lines(), style)));
  svg_check::check_texts_inside(doc, 13);
  CHECK(svg_check::view_box(doc).first <= 1280);
  std::set<double> rows;
  double lowest_entry = 0;
  for (const std::string& name : thirteen_names()) {
    INFO(name);
    CHECK(svg_check::count_text(doc, name) == 1);
    for (const svg_check::Text& t : svg_check::texts(doc))
      if (t.content == name) rows.insert(t.y), lowest_entry = std::max(lowest_entry, t.y);
  }
  CHECK(rows.size() >= 2);  // 13 names do not fit one row of a 600 px chart: the legend wraps
  // The plotting frame (the unfilled rect) starts below the legend's last row.
  std::vector<const svg_check::Element*> rects;
  find_all(doc, "rect", rects);
  int frames = 0;
  for (const svg_check::Element* r : rects) {
    if (r->at("fill") != "none") continue;
    ++frames;
    CHECK(std::atof(r->at("y").c_str()) > lowest_entry);
  }
  CHECK(frames == 1);
  CHECK(svg_check::count_text(doc, "step (updates)") == 1);
  CHECK(svg_check::count_text(doc, "AIV (unitless)") == 1);
  // Step ticks in full, not "4e3".
  CHECK(svg_check::count_text(doc, "4000") == 1);
}

TEST_CASE("svg: the looks of 13 series differ, in Paul Tol's muted colours", "[plot][svg]") {
  // Tol's "muted" scheme as published (https://personal.sron.nl/~pault/).
  const std::set<std::string> muted = {"#cc6677", "#332288", "#ddcc77", "#117733", "#88ccee",
                                       "#882255", "#44aa99", "#999933", "#aa4499"};
  std::set<std::tuple<std::string, int, std::string>> seen;
  std::set<std::string> colours;
  for (int i = 0; i < 13; ++i) {
    const svg::Look l = svg::look(i);
    CHECK(muted.count(l.color) == 1);
    colours.insert(l.color);
    seen.insert({l.color, static_cast<int>(l.marker), l.dash});
  }
  CHECK(colours.size() == 9);  // every colour before one repeats
  CHECK(seen.size() == 13);
  // A repeated colour never repeats its marker and dash: 63 looks differ.
  for (int i = 13; i < 63; ++i) {
    const svg::Look l = svg::look(i);
    seen.insert({l.color, static_cast<int>(l.marker), l.dash});
  }
  CHECK(seen.size() == 63);
}

TEST_CASE("svg: a legend entry wider than the chart widens the figure", "[plot][svg]") {
  svg::Line l;
  l.name = std::string(90, 'w') + " <&> \"quoted\"";
  l.x = {0, 1}, l.y = {1, 2};
  svg::ChartStyle style;
  style.width = 300;
  const std::string text = svg::document(svg::line_chart({l}, style));
  CHECK(text.find("&lt;&amp;&gt; &quot;quoted&quot;") != std::string::npos);
  const svg_check::Element doc = svg_check::parse(text);
  CHECK(svg_check::count_text(doc, l.name) == 1);  // read back unescaped
  CHECK(svg_check::view_box(doc).first > 300);
  svg_check::check_texts_inside(doc, 13);
}

TEST_CASE("svg: a heatmap's cells are one pixel each, in viridis, its labels inside", "[plot][svg]") {
  Matrix m(3, 4);
  for (int64_t i = 0; i < 12; ++i) m.data[static_cast<size_t>(i)] = static_cast<double>(i);
  plot::HeatmapStyle style;
  style.title = "a very long title for so small a map of attention";
  style.colorbar_label = "attention";
  style.x_first = -2;
  const svg_check::Element doc = svg_check::parse(svg::document(svg::heatmap(m, style, 120)));
  svg_check::check_texts_inside(doc, 13);
  CHECK(svg_check::count_text(doc, "attention") == 1);
  CHECK(svg_check::count_text(doc, "key position j") == 1);
  CHECK(svg_check::count_text(doc, "-2") == 1);  // the first column's label

  std::vector<const svg_check::Element*> images;
  find_all(doc, "image", images);
  REQUIRE(images.size() == 2);  // the cells and the colour bar
  const std::string prefix = "data:image/png;base64,";
  const std::string href = images[0]->at("href");
  REQUIRE(href.rfind(prefix, 0) == 0);
  CHECK(images[0]->at("style") == "image-rendering:pixelated");
  const png_check::Picture cells = png_check::read(unbase64(href.substr(prefix.size())), "the heatmap's cells");
  CHECK(cells.width == 4);
  CHECK(cells.height == 3);
  // 120 px across 4 columns: 30 px a cell.
  CHECK(std::atof(images[0]->at("width").c_str()) == 120);
  CHECK(std::atof(images[0]->at("height").c_str()) == 90);
  if (!cells.rgb.empty()) {
    // matplotlib's viridis runs from #440154 (the smallest cell) to #fde725 (the largest).
    CHECK(std::vector<int>(cells.rgb.begin(), cells.rgb.begin() + 3) == std::vector<int>{0x44, 0x01, 0x54});
    CHECK(std::vector<int>(cells.rgb.end() - 3, cells.rgb.end()) == std::vector<int>{0xfd, 0xe7, 0x25});
  }
}

TEST_CASE("svg: a grid of panels with one legend fits a 1400 px page", "[plot][svg]") {
  std::vector<svg::Figure> panels;
  for (int k = 0; k < 4; ++k) {
    svg::ChartStyle style;
    style.title = "panel " + std::to_string(k);
    style.x_label = "step (updates)";
    style.y_label = "value (unitless)";
    style.legend = false;
    panels.push_back(svg::line_chart(thirteen_lines(), style));
  }
  std::vector<std::pair<std::string, int>> entries;
  for (const std::string& name : thirteen_names()) entries.emplace_back(name, static_cast<int>(entries.size()));
  const svg_check::Element doc = svg_check::parse(svg::document(svg::grid(panels, 0, "four panels", entries)));
  svg_check::check_texts_inside(doc, 13);
  CHECK(svg_check::view_box(doc).first <= 1280);
  for (const std::string& name : thirteen_names()) CHECK(svg_check::count_text(doc, name) == 1);
  for (int k = 0; k < 4; ++k) CHECK(svg_check::count_text(doc, "panel " + std::to_string(k)) == 1);
  // Two panels of 600 px a row: the grid is two columns wide and two rows high.
  std::vector<const svg_check::Element*> groups;
  find_all(doc, "g", groups);
  std::set<std::string> offsets;
  for (const svg_check::Element* g : groups) offsets.insert(g->at("transform"));
  CHECK(offsets.size() == 5);  // the legend and four panels
}

TEST_CASE("svg: grouped bars as tall as their values, each series named once", "[plot][svg]") {
  const std::vector<svg::Bars> bars = {{"head 1 (layer 1)", {1, 2}, 0}, {"head 2 (layer 1)", {4, 0.5}, 1}};
  svg::ChartStyle style;
  style.title = "rank per head";
  style.x_label = "term";
  style.y_label = "rank (singular values)";
  const svg_check::Element doc = svg_check::parse(svg::document(svg::bar_chart({"token", "position"}, bars, style)));
  svg_check::check_texts_inside(doc, 13);
  for (const char* name : {"head 1 (layer 1)", "head 2 (layer 1)", "token", "position"})
    CHECK(svg_check::count_text(doc, name) == 1);
  // The bars: filled rects standing on one base line, heights proportional to 1, 4, 2, 0.5 (category
  // by category); the legend's two swatches are the 14 px squares.
  std::vector<const svg_check::Element*> rects;
  find_all(doc, "rect", rects);
  std::vector<double> heights, bases;
  for (const svg_check::Element* r : rects) {
    const double h = std::atof(r->at("height").c_str());
    if (r->at("fill") == "none" || r->at("fill") == "#fff" || h == 14) continue;
    heights.push_back(h);
    bases.push_back(std::atof(r->at("y").c_str()) + h);
  }
  REQUIRE(heights.size() == 4);
  CHECK(heights[1] / heights[0] == Approx(4).epsilon(0.01));
  CHECK(heights[2] / heights[0] == Approx(2).epsilon(0.01));
  CHECK(heights[3] / heights[0] == Approx(0.5).epsilon(0.02));
  for (double b : bases) CHECK(b == Approx(bases[0]).margin(0.11));
}

// Every point at one step (a run's only checkpoint): the x axis spans a few
// percent around it, so its ticks name distinct steps, not "120" five times
// over a width of 1.
TEST_CASE("svg: points that share one x get distinct x tick labels", "[plot][svg]") {
  svg::ChartStyle style;
  style.title = "one checkpoint";
  style.x_label = "step (optimizer updates)";
  style.y_label = "loss";
  const svg_check::Element chart =
      svg_check::parse(svg::document(svg::line_chart({{"run a", {120}, {1}, 0}, {"run b", {120}, {2}, 1}}, style)));
  svg_check::check_texts_inside(chart, 13);
  CHECK(svg_check::count_text(chart, "120") == 1);
  std::multiset<std::string> numbers;
  for (const svg_check::Text& t : svg_check::texts(chart))
    if (!t.content.empty() && std::isdigit(static_cast<unsigned char>(t.content[0]))) numbers.insert(t.content);
  for (const std::string& n : numbers) CHECK(numbers.count(n) == 1);
}

TEST_CASE("svg: an axis of whole numbers (layers) ticks only at whole numbers", "[plot][svg]") {
  svg::ChartStyle style;
  style.title = "per layer";
  style.x_label = "layer";
  style.y_label = "accuracy (fraction)";
  // x from 1 to 3: the nice step over that range is 0.5, so without the rule "1.5" and "2.5" are ticks.
  const svg_check::Element chart =
      svg_check::parse(svg::document(svg::line_chart({{"run a", {1, 2, 3}, {0.25, 0.5, 0.75}, 0}}, style)));
  svg_check::check_texts_inside(chart, 13);
  for (const char* whole : {"1", "2", "3"}) CHECK(svg_check::count_text(chart, whole) == 1);
  for (const char* half : {"1.5", "2.5"}) CHECK(svg_check::count_text(chart, half) == 0);
  // A fractional x keeps the half ticks.
  const svg_check::Element halves =
      svg_check::parse(svg::document(svg::line_chart({{"run a", {1, 1.5, 3}, {0.25, 0.5, 0.75}, 0}}, style)));
  CHECK(svg_check::count_text(halves, "1.5") == 1);
}
