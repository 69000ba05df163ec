// Pictures for probing and reports, drawn into png::Image: heatmaps with a
// colour bar and labelled axes, line and bar charts, panels side by side.
//
// Colours: viridis (scripts/gen_viridis.py writes its table from matplotlib's
// published data), perceptually uniform, low = dark purple, high = yellow.
// Text: a 5 x 7 bitmap font of ordo's own (ASCII letters, digits and the
// punctuation labels need; anything else draws as '?'), drawn at an integer
// scale (2 by default: 10 x 14 pixels a character).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "base/matrix.h"
#include "plot/png.h"

namespace ordo::plot {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};
// viridis at t in [0, 1] (clamped).
Rgb viridis(double t);

// Drawing on an image; everything is clipped to it.
class Canvas {
 public:
  Canvas(int width, int height, Rgb background = {255, 255, 255});
  explicit Canvas(png::Image image) : image_(std::move(image)) {}
  void pixel(int x, int y, Rgb c);
  void fill(int x, int y, int w, int h, Rgb c);
  void frame(int x, int y, int w, int h, Rgb c);  // a 1-pixel rectangle outline
  void line(int x0, int y0, int x1, int y1, Rgb c, int thickness = 1);
  // Text with its top-left corner at (x, y); returns the width drawn.
  int text(int x, int y, const std::string& s, Rgb c = {0, 0, 0}, int scale = 2);
  // Text turned 90 degrees anticlockwise (reading bottom to top), its
  // bounding box's top-left at (x, y).
  void text_vertical(int x, int y, const std::string& s, Rgb c = {0, 0, 0}, int scale = 2);
  void blit(const png::Image& src, int x, int y);
  const png::Image& image() const { return image_; }
  png::Image& image() { return image_; }
  int width() const { return image_.width; }
  int height() const { return image_.height; }

 private:
  png::Image image_;
};

int text_width(const std::string& s, int scale = 2);
int text_height(int scale = 2);
// A tick label: up to 3 significant digits, no trailing zeros ("0.25", "1e-05", "128").
std::string format_number(double x);

// Axis ticks, shared by the PNG and SVG charts (plot/svg.h).
// About `target` ticks at a "nice" step (1, 2 or 5 times a power of ten) within [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target);
// The powers of ten within [lo, hi] (lo > 0), thinned to at most 7.
std::vector<double> log_ticks(double lo, double hi);
// Integer ticks for an axis of n cells labelled first .. first+n-1.
std::vector<int64_t> index_ticks(int64_t first, int64_t n, int target);
// The axes of a line chart: the points' x range, their y range padded by 5%
// (y_min, y_max when not NaN), leaving out non-finite y and, on a log axis,
// y <= 0; 0..1 (1..10 on a log axis) without a point.
struct AxisRange {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  void add(const std::vector<double>& x, const std::vector<double>& y, bool log_y);
  void finish(bool log_y, double y_min, double y_max);
};

struct HeatmapStyle {
  std::string title;                  // the variant's name and what the map shows
  std::string x_label = "key position j";
  std::string y_label = "query position i";
  std::string colorbar_label;         // e.g. "attention"
  int cell = 0;                       // pixels per cell; 0: chosen so the map is about 360 pixels
  double vmin = NAN, vmax = NAN;      // colour range; NaN: the data's min / max
  int64_t x_first = 0, y_first = 0;   // the axis value of column 0 / row 0 (e.g. -64 for relative offsets)
  double highlight_above = NAN;       // cells above this drawn in `highlight` (e.g. cosine > 0.95)
  Rgb highlight{230, 30, 30};
  std::string highlight_label;        // the legend line for the highlighted cells
};
png::Image heatmap(const Matrix& m, const HeatmapStyle& style);

struct Series {
  std::string name;
  std::vector<double> x, y;
  Rgb color{31, 119, 180};
  bool points = false;  // markers at the data points as well as the line
};
struct ChartStyle {
  std::string title, x_label, y_label;
  bool log_y = false;
  double y_min = NAN, y_max = NAN;  // NaN: from the data
  int width = 560, height = 400;
};
png::Image line_chart(const std::vector<Series>& series, const ChartStyle& style);

// Grouped bars: one group per category (e.g. a head), one bar per series.
struct BarSeries {
  std::string name;
  std::vector<double> values;  // one per category
  Rgb color{31, 119, 180};
};
png::Image bar_chart(const std::vector<std::string>& categories, const std::vector<BarSeries>& series,
                     const ChartStyle& style);

// Panels laid out in rows of `columns`, with a title above all of them.
png::Image grid(const std::vector<png::Image>& panels, int columns, const std::string& title = "");

// Distinct line colours (matplotlib's tab10).
Rgb series_color(int i);

}  // namespace ordo::plot
