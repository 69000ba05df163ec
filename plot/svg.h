// Charts as SVG for the HTML reports: text a browser sets in its own
// sans-serif font and scales with the page, in place of plot/plot.h's
// pixel font.
//
// Sizes are CSS pixels: a figure is at most kMaxWidth wide, so on a page
// 1400 px wide it shows at its own size and its smallest text (kSmallFont)
// stays 13 px.
//
// Series: Paul Tol's "muted" palette (https://personal.sron.nl/~pault/,
// designed to stay distinct for colour-blind readers; 9 colours), each
// series also with its own marker (7 shapes) and, from the tenth on, a
// dashed line: the (colour, marker, dash) triples of the first 63 series
// differ, so 13 runs stay apart in print and in grey as well.
// Heatmaps: viridis (plot.h), the cells an embedded PNG of one pixel a cell
// drawn without smoothing (image-rendering: pixelated).
// Legends: rows of entries wrapped to the figure's width, with text widths
// measured from DejaVu Sans' advance widths (wider than Arial and Helvetica,
// so a legend laid out for it fits either).
#pragma once

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "base/matrix.h"
#include "plot/plot.h"

namespace ordo::plot::svg {

constexpr double kMaxWidth = 1280;
constexpr double kSmallFont = 13;  // tick labels, legend entries
constexpr double kFont = 14;       // axis labels
constexpr double kTitleFont = 16;  // a panel's title
constexpr double kBigFont = 18;    // a grid's title

// A drawing in its own coordinates, (0, 0) to (width, height): SVG elements
// without the <svg> around them, so that grid() can place it in a bigger one.
struct Figure {
  double width = 0, height = 0;
  std::string body;
};
// The standalone file: <svg> with width, height and viewBox, a white
// background, font-family sans-serif.
std::string document(const Figure& figure);

// The width of `text` set in a sans-serif font of `font_size` pixels
// (DejaVu Sans' advance widths per character; others as a wide 0.7 em;
// bold, as DejaVu Sans Bold, 15% wider).
double text_width(const std::string& text, double font_size, bool bold = false);
// Text for XML: & < > " as entities.
std::string escape(const std::string& text);

// How series number `look` is drawn.
enum class Marker { circle, square, triangle_up, diamond, triangle_down, plus, cross };
struct Look {
  std::string color;  // "#rrggbb"
  Marker marker;
  std::string dash;  // stroke-dasharray, empty for a solid line
};
Look look(int index);

// Legend entries in rows wrapped at max_width: a sample of each look (line
// and marker; a swatch for bars) and its name.
Figure legend(const std::vector<std::pair<std::string, int>>& entries, double max_width, bool bars = false);

struct Line {
  Line() = default;
  Line(std::string name_, std::vector<double> x_, std::vector<double> y_, int look_ = 0)
      : name(std::move(name_)), x(std::move(x_)), y(std::move(y_)), look(look_) {}
  std::string name;  // its legend entry
  std::vector<double> x, y;  // non-finite y: a gap
  int look = 0;
  std::vector<double> error;  // optional: per point, a whisker from y - error to y + error
  bool markers_only = false;  // points without the line through them (a scatter)
};
struct ChartStyle {
  std::string title, x_label, y_label;  // the labels name the unit: "step (updates)"
  bool log_y = false;
  double y_min = NAN, y_max = NAN;  // NaN: from the data
  double x_margin = 0;              // room left and right of the data, as a fraction of its x range
  double width = 600, height = 380;
  bool legend = true;  // false when a grid shows one legend for all its panels
};
// Lines with markers at the points (at most about 10 per line, evenly
// spread, when a line has more; every point of a markers-only line or one
// with whiskers), the legend above the plot.
Figure line_chart(const std::vector<Line>& lines, const ChartStyle& style);

// Grouped bars: one group per category, one bar per series.
struct Bars {
  std::string name;
  std::vector<double> values;  // one per category
  int look = 0;
};
Figure bar_chart(const std::vector<std::string>& categories, const std::vector<Bars>& bars, const ChartStyle& style);

// A heatmap with tick labels, axis labels and a colour bar (plot.h's style;
// its `cell` is the size of a cell in pixels, 0: the map about map_size wide).
Figure heatmap(const Matrix& m, const HeatmapStyle& style, double map_size = 360);

// Panels in rows of `columns` (0: as many as fit in kMaxWidth), a title
// above, and one legend for all of them under it when `legend` is not empty.
Figure grid(const std::vector<Figure>& panels, int columns, const std::string& title,
            const std::vector<std::pair<std::string, int>>& legend = {});

}  // namespace ordo::plot::svg
