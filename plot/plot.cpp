#include "plot/plot.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/error.h"

namespace ordo::plot {

// ---- colours --------------------------------------------------------------------------------

namespace {
const uint8_t kViridis[256][3] = {
#include "plot/viridis.inc"
};
}  // namespace

Rgb viridis(double t) {
  if (!(t > 0)) t = 0;  // NaN too
  if (t > 1) t = 1;
  const int i = static_cast<int>(std::lround(t * 255));
  return {kViridis[i][0], kViridis[i][1], kViridis[i][2]};
}

Rgb series_color(int i) {
  static const Rgb tab10[10] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},   {148, 103, 189},
                                {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
  return tab10[((i % 10) + 10) % 10];
}

// ---- the font ---------------------------------------------------------------------------------
//
// 5 x 8 cells: rows 0-6 hold capitals and digits, lower case sits on row 6
// with descenders on row 7. '#' is ink.

namespace {

struct Glyph {
  char c;
  const char* rows;  // 8 rows of 5
};

const Glyph kFont[] = {
    {' ', "....." "....." "....." "....." "....." "....." "....." "....."},
    {'A', ".###." "#...#" "#...#" "#####" "#...#" "#...#" "#...#" "....."},
    {'B', "####." "#...#" "#...#" "####." "#...#" "#...#" "####." "....."},
    {'C', ".###." "#...#" "#...." "#...." "#...." "#...#" ".###." "....."},
    {'D', "####." "#...#" "#...#" "#...#" "#...#" "#...#" "####." "....."},
    {'E', "#####" "#...." "#...." "####." "#...." "#...." "#####" "....."},
    {'F', "#####" "#...." "#...." "####." "#...." "#...." "#...." "....."},
    {'G', ".###." "#...#" "#...." "#.###" "#...#" "#...#" ".####" "....."},
    {'H', "#...#" "#...#" "#...#" "#####" "#...#" "#...#" "#...#" "....."},
    {'I', ".###." "..#.." "..#.." "..#.." "..#.." "..#.." ".###." "....."},
    {'J', "..###" "...#." "...#." "...#." "...#." "#..#." ".##.." "....."},
    {'K', "#...#" "#..#." "#.#.." "##..." "#.#.." "#..#." "#...#" "....."},
    {'L', "#...." "#...." "#...." "#...." "#...." "#...." "#####" "....."},
    {'M', "#...#" "##.##" "#.#.#" "#.#.#" "#...#" "#...#" "#...#" "....."},
    {'N', "#...#" "#...#" "##..#" "#.#.#" "#..##" "#...#" "#...#" "....."},
    {'O', ".###." "#...#" "#...#" "#...#" "#...#" "#...#" ".###." "....."},
    {'P', "####." "#...#" "#...#" "####." "#...." "#...." "#...." "....."},
    {'Q', ".###." "#...#" "#...#" "#...#" "#.#.#" "#..#." ".##.#" "....."},
    {'R', "####." "#...#" "#...#" "####." "#.#.." "#..#." "#...#" "....."},
    {'S', ".####" "#...." "#...." ".###." "....#" "....#" "####." "....."},
    {'T', "#####" "..#.." "..#.." "..#.." "..#.." "..#.." "..#.." "....."},
    {'U', "#...#" "#...#" "#...#" "#...#" "#...#" "#...#" ".###." "....."},
    {'V', "#...#" "#...#" "#...#" "#...#" "#...#" ".#.#." "..#.." "....."},
    {'W', "#...#" "#...#" "#...#" "#.#.#" "#.#.#" "#.#.#" ".#.#." "....."},
    {'X', "#...#" "#...#" ".#.#." "..#.." ".#.#." "#...#" "#...#" "....."},
    {'Y', "#...#" "#...#" ".#.#." "..#.." "..#.." "..#.." "..#.." "....."},
    {'Z', "#####" "....#" "...#." "..#.." ".#..." "#...." "#####" "....."},
    {'a', "....." "....." ".###." "....#" ".####" "#...#" ".####" "....."},
    {'b', "#...." "#...." "#.##." "##..#" "#...#" "#...#" "####." "....."},
    {'c', "....." "....." ".###." "#...." "#...." "#...#" ".###." "....."},
    {'d', "....#" "....#" ".##.#" "#..##" "#...#" "#...#" ".####" "....."},
    {'e', "....." "....." ".###." "#...#" "#####" "#...." ".###." "....."},
    {'f', "..##." ".#..#" ".#..." "###.." ".#..." ".#..." ".#..." "....."},
    {'g', "....." "....." ".####" "#...#" "#...#" ".####" "....#" ".###."},
    {'h', "#...." "#...." "#.##." "##..#" "#...#" "#...#" "#...#" "....."},
    {'i', "..#.." "....." ".##.." "..#.." "..#.." "..#.." ".###." "....."},
    {'j', "...#." "....." "..##." "...#." "...#." "...#." "#..#." ".##.."},
    {'k', "#...." "#...." "#..#." "#.#.." "##..." "#.#.." "#..#." "....."},
    {'l', ".##.." "..#.." "..#.." "..#.." "..#.." "..#.." ".###." "....."},
    {'m', "....." "....." "##.#." "#.#.#" "#.#.#" "#.#.#" "#.#.#" "....."},
    {'n', "....." "....." "#.##." "##..#" "#...#" "#...#" "#...#" "....."},
    {'o', "....." "....." ".###." "#...#" "#...#" "#...#" ".###." "....."},
    {'p', "....." "....." "####." "#...#" "#...#" "####." "#...." "#...."},
    {'q', "....." "....." ".####" "#...#" "#...#" ".####" "....#" "....#"},
    {'r', "....." "....." "#.##." "##..#" "#...." "#...." "#...." "....."},
    {'s', "....." "....." ".###." "#...." ".###." "....#" "####." "....."},
    {'t', ".#..." ".#..." "###.." ".#..." ".#..." ".#..#" "..##." "....."},
    {'u', "....." "....." "#...#" "#...#" "#...#" "#..##" ".##.#" "....."},
    {'v', "....." "....." "#...#" "#...#" "#...#" ".#.#." "..#.." "....."},
    {'w', "....." "....." "#...#" "#...#" "#.#.#" "#.#.#" ".#.#." "....."},
    {'x', "....." "....." "#...#" ".#.#." "..#.." ".#.#." "#...#" "....."},
    {'y', "....." "....." "#...#" "#...#" "#...#" ".####" "....#" ".###."},
    {'z', "....." "....." "#####" "...#." "..#.." ".#..." "#####" "....."},
    {'0', ".###." "#...#" "#..##" "#.#.#" "##..#" "#...#" ".###." "....."},
    {'1', "..#.." ".##.." "..#.." "..#.." "..#.." "..#.." ".###." "....."},
    {'2', ".###." "#...#" "....#" "...#." "..#.." ".#..." "#####" "....."},
    {'3', "#####" "...#." "..#.." "...#." "....#" "#...#" ".###." "....."},
    {'4', "...#." "..##." ".#.#." "#..#." "#####" "...#." "...#." "....."},
    {'5', "#####" "#...." "####." "....#" "....#" "#...#" ".###." "....."},
    {'6', "..##." ".#..." "#...." "####." "#...#" "#...#" ".###." "....."},
    {'7', "#####" "....#" "...#." "..#.." ".#..." ".#..." ".#..." "....."},
    {'8', ".###." "#...#" "#...#" ".###." "#...#" "#...#" ".###." "....."},
    {'9', ".###." "#...#" "#...#" ".####" "....#" "...#." ".##.." "....."},
    {'.', "....." "....." "....." "....." "....." ".##.." ".##.." "....."},
    {',', "....." "....." "....." "....." "....." ".##.." "..#.." ".#..."},
    {'-', "....." "....." "....." ".###." "....." "....." "....." "....."},
    {'+', "....." "..#.." "..#.." "#####" "..#.." "..#.." "....." "....."},
    {':', "....." ".##.." ".##.." "....." ".##.." ".##.." "....." "....."},
    {';', "....." ".##.." ".##.." "....." ".##.." "..#.." ".#..." "....."},
    {'(', "...#." "..#.." ".#..." ".#..." ".#..." "..#.." "...#." "....."},
    {')', ".#..." "..#.." "...#." "...#." "...#." "..#.." ".#..." "....."},
    {'[', ".###." ".#..." ".#..." ".#..." ".#..." ".#..." ".###." "....."},
    {']', ".###." "...#." "...#." "...#." "...#." "...#." ".###." "....."},
    {'/', "....#" "....#" "...#." "..#.." ".#..." "#...." "#...." "....."},
    {'=', "....." "....." "#####" "....." "#####" "....." "....." "....."},
    {'_', "....." "....." "....." "....." "....." "....." "....." "#####"},
    {'%', "##..." "##..#" "...#." "..#.." ".#..." "#..##" "...##" "....."},
    {'#', ".#.#." ".#.#." "#####" ".#.#." "#####" ".#.#." ".#.#." "....."},
    {'\'', "..#.." "..#.." ".#..." "....." "....." "....." "....." "....."},
    {'"', ".#.#." ".#.#." "....." "....." "....." "....." "....." "....."},
    {'*', "....." "..#.." "#.#.#" ".###." "#.#.#" "..#.." "....." "....."},
    {'<', "...#." "..#.." ".#..." "#...." ".#..." "..#.." "...#." "....."},
    {'>', ".#..." "..#.." "...#." "....#" "...#." "..#.." ".#..." "....."},
    {'?', ".###." "#...#" "....#" "...#." "..#.." "....." "..#.." "....."},
    {'!', "..#.." "..#.." "..#.." "..#.." "..#.." "....." "..#.." "....."},
    {'&', ".##.." "#..#." "#.#.." ".#..." "#.#.#" "#..#." ".##.#" "....."},
    {'|', "..#.." "..#.." "..#.." "..#.." "..#.." "..#.." "..#.." "..#.."},
    {'^', "..#.." ".#.#." "#...#" "....." "....." "....." "....." "....."},
    {'~', "....." "....." ".#..." "#.#.#" "...#." "....." "....." "....."},
};

const Glyph& glyph(char c) {
  static const std::array<const Glyph*, 128> table = [] {
    std::array<const Glyph*, 128> t{};
    for (const Glyph& g : kFont) t[static_cast<unsigned char>(g.c)] = &g;
    return t;
  }();
  const unsigned char u = static_cast<unsigned char>(c);
  if (u < 128 && table[u]) return *table[u];
  return *table['?'];
}

constexpr int kGlyphW = 5, kGlyphH = 8, kAdvance = 6;

}  // namespace

int text_width(const std::string& s, int scale) {
  return s.empty() ? 0 : static_cast<int>(s.size()) * kAdvance * scale - scale;
}
int text_height(int scale) { return kGlyphH * scale; }

std::string format_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  std::string s = buf;
  // "1e-05" -> "1e-5"
  size_t e = s.find("e");
  if (e != std::string::npos) {
    std::string mant = s.substr(0, e), ex = s.substr(e + 1);
    std::string sign = (ex[0] == '-' || ex[0] == '+') ? (ex[0] == '-' ? "-" : "") : "";
    size_t digits = ex.find_first_not_of("+-0");
    s = mant + "e" + sign + (digits == std::string::npos ? "0" : ex.substr(digits));
  }
  if (s == "-0") s = "0";
  return s;
}

// ---- the canvas ---------------------------------------------------------------------------------

Canvas::Canvas(int width, int height, Rgb bg) : image_(width, height, bg.r, bg.g, bg.b) {}

void Canvas::pixel(int x, int y, Rgb c) {
  if (x < 0 || y < 0 || x >= image_.width || y >= image_.height) return;
  uint8_t* p = image_.rgb.data() + (static_cast<size_t>(y) * static_cast<size_t>(image_.width) + static_cast<size_t>(x)) * 3;
  p[0] = c.r, p[1] = c.g, p[2] = c.b;
}

void Canvas::fill(int x, int y, int w, int h, Rgb c) {
  const int x0 = std::max(0, x), y0 = std::max(0, y);
  const int x1 = std::min(image_.width, x + w), y1 = std::min(image_.height, y + h);
  for (int yy = y0; yy < y1; ++yy)
    for (int xx = x0; xx < x1; ++xx) pixel(xx, yy, c);
}

void Canvas::frame(int x, int y, int w, int h, Rgb c) {
  fill(x, y, w, 1, c);
  fill(x, y + h - 1, w, 1, c);
  fill(x, y, 1, h, c);
  fill(x + w - 1, y, 1, h, c);
}

void Canvas::line(int x0, int y0, int x1, int y1, Rgb c, int thickness) {
  // Bresenham, each point a thickness x thickness square.
  const int dx = std::abs(x1 - x0), sx = x0 < x1 ? 1 : -1, dy = -std::abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
  int err = dx + dy;
  const int half = thickness / 2;
  for (;;) {
    fill(x0 - half, y0 - half, thickness, thickness, c);
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) err += dy, x0 += sx;
    if (e2 <= dx) err += dx, y0 += sy;
  }
}

int Canvas::text(int x, int y, const std::string& s, Rgb c, int scale) {
  int cx = x;
  for (char ch : s) {
    const Glyph& g = glyph(ch);
    for (int row = 0; row < kGlyphH; ++row)
      for (int col = 0; col < kGlyphW; ++col)
        if (g.rows[row * kGlyphW + col] == '#') fill(cx + col * scale, y + row * scale, scale, scale, c);
    cx += kAdvance * scale;
  }
  return text_width(s, scale);
}

void Canvas::text_vertical(int x, int y, const std::string& s, Rgb c, int scale) {
  // Anticlockwise: glyph column `col` becomes the row counted from the bottom,
  // glyph row `row` the column; the string runs upwards.
  const int total = text_width(s, scale);
  int cy = y + total;  // the baseline end at the bottom
  for (char ch : s) {
    const Glyph& g = glyph(ch);
    for (int row = 0; row < kGlyphH; ++row)
      for (int col = 0; col < kGlyphW; ++col)
        if (g.rows[row * kGlyphW + col] == '#') fill(x + row * scale, cy - (col + 1) * scale, scale, scale, c);
    cy -= kAdvance * scale;
  }
}

void Canvas::blit(const png::Image& src, int x, int y) {
  for (int yy = 0; yy < src.height; ++yy)
    for (int xx = 0; xx < src.width; ++xx) {
      const uint8_t* p = src.rgb.data() + (static_cast<size_t>(yy) * static_cast<size_t>(src.width) + static_cast<size_t>(xx)) * 3;
      pixel(x + xx, y + yy, {p[0], p[1], p[2]});
    }
}

// ---- ticks ------------------------------------------------------------------------------------------

namespace {
const Rgb kBlack{0, 0, 0}, kGrey{120, 120, 120}, kLight{225, 225, 225};

// A "nice" step (1, 2 or 5 times a power of ten) giving about `target` ticks over span.
double nice_step(double span, int target) {
  if (!(span > 0)) return 1;
  const double raw = span / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}
}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> t;
  if (!(hi > lo)) return {lo};
  const double step = nice_step(hi - lo, target);
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> t;
  for (double e = std::floor(std::log10(lo)); e <= std::ceil(std::log10(hi)); e += 1) {
    const double v = std::pow(10.0, e);
    if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
  }
  if (t.size() > 7) {
    std::vector<double> thin;
    const size_t every = (t.size() + 5) / 6;
    for (size_t i = 0; i < t.size(); i += every) thin.push_back(t[i]);
    t = thin;
  }
  return t;
}

std::vector<int64_t> index_ticks(int64_t first, int64_t n, int target) {
  std::vector<int64_t> t;
  const int64_t step = std::max<int64_t>(1, static_cast<int64_t>(nice_step(static_cast<double>(n), target)));
  int64_t v = first >= 0 ? ((first + step - 1) / step) * step : -((-first) / step) * step;
  for (; v <= first + n - 1; v += step) t.push_back(v);
  return t;
}

namespace {
// Widens [lo, hi] by pad_fraction of its span each side (not on a log axis);
// an empty range becomes one unit (or a factor of 2 on a log axis) around it.
void pad_range(double& lo, double& hi, bool log, double pad_fraction) {
  if (!(hi > lo)) {
    const double m = lo;
    lo = log ? m / 2 : m - 0.5;
    hi = log ? m * 2 : m + 0.5;
    return;
  }
  if (log) return;
  const double span = hi - lo;
  lo -= span * pad_fraction;
  hi += span * pad_fraction;
}
}  // namespace

// ---- heatmap ------------------------------------------------------------------------------------------

png::Image heatmap(const Matrix& m, const HeatmapStyle& s) {
  ORDO_CHECK(!m.empty(), "heatmap: the matrix is empty");
  const int scale = 2;
  const int cell = s.cell > 0 ? s.cell : std::max<int>(1, static_cast<int>(360 / std::max(m.rows, m.cols)));
  const int map_w = static_cast<int>(m.cols) * cell, map_h = static_cast<int>(m.rows) * cell;

  double lo = s.vmin, hi = s.vmax;
  if (std::isnan(lo) || std::isnan(hi)) {
    double dlo = m.data[0], dhi = m.data[0];
    for (double v : m.data)
      if (std::isfinite(v)) dlo = std::min(dlo, v), dhi = std::max(dhi, v);
    if (std::isnan(lo)) lo = dlo;
    if (std::isnan(hi)) hi = dhi;
  }
  const bool flat = !(hi > lo);

  // Layout: title on top, y label and tick labels on the left, x ticks and
  // label below, the colour bar on the right.
  const int th = text_height(scale), pad = 8;
  const int title_h = s.title.empty() ? pad : th + 2 * pad;
  const std::vector<int64_t> xt = index_ticks(s.x_first, m.cols, 6), yt = index_ticks(s.y_first, m.rows, 6);
  int ytick_w = 0;
  for (int64_t v : yt) ytick_w = std::max(ytick_w, text_width(std::to_string(v), scale));
  const int left = pad + th + pad + ytick_w + 6;
  const int top = title_h;
  const int bar_x = left + map_w + 16, bar_w = 18;
  const std::vector<double> bt = flat ? std::vector<double>{lo} : nice_ticks(lo, hi, 5);
  int btick_w = 0;
  for (double v : bt) btick_w = std::max(btick_w, text_width(format_number(v), scale));
  const int bar_label_x = bar_x + bar_w + 6 + btick_w + 8;
  const int right = bar_label_x + (s.colorbar_label.empty() ? 0 : th) + pad;
  const int legend_h = std::isnan(s.highlight_above) ? 0 : th + pad;
  const int bottom = top + map_h + 6 + th + pad + th + pad + legend_h;
  // The title is centred over the map (moved right as far as it must be to
  // start inside the image); the image is as wide as the title then needs.
  const int title_w = text_width(s.title, scale), title_x = std::max(pad, left + map_w / 2 - title_w / 2);
  const int width = std::max(right, title_x + title_w + pad);
  Canvas c(width, bottom);

  if (!s.title.empty()) c.text(title_x, pad, s.title, kBlack, scale);

  // The cells.
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) {
      const double v = m(i, j);
      Rgb col = flat ? viridis(0.5) : viridis((v - lo) / (hi - lo));
      if (!std::isnan(s.highlight_above) && v > s.highlight_above) col = s.highlight;
      c.fill(left + static_cast<int>(j) * cell, top + static_cast<int>(i) * cell, cell, cell, col);
    }
  c.frame(left - 1, top - 1, map_w + 2, map_h + 2, kGrey);

  // x ticks below, y ticks to the left, at cell centres.
  for (int64_t v : xt) {
    const int x = left + static_cast<int>(v - s.x_first) * cell + cell / 2;
    c.fill(x, top + map_h + 1, 1, 4, kBlack);
    const std::string label = std::to_string(v);
    c.text(x - text_width(label, scale) / 2, top + map_h + 6, label, kBlack, scale);
  }
  for (int64_t v : yt) {
    const int y = top + static_cast<int>(v - s.y_first) * cell + cell / 2;
    c.fill(left - 5, y, 4, 1, kBlack);
    const std::string label = std::to_string(v);
    c.text(left - 6 - text_width(label, scale), y - th / 2, label, kBlack, scale);
  }
  c.text(left + map_w / 2 - text_width(s.x_label, scale) / 2, top + map_h + 6 + th + pad, s.x_label, kBlack, scale);
  c.text_vertical(pad, top + map_h / 2 - text_width(s.y_label, scale) / 2, s.y_label, kBlack, scale);
  if (legend_h) {
    const int y = top + map_h + 6 + 2 * (th + pad);
    c.fill(left, y, th, th, s.highlight);
    c.text(left + th + 6, y, s.highlight_label, kBlack, scale);
  }

  // The colour bar: high at the top.
  for (int y = 0; y < map_h; ++y) {
    const double t = map_h > 1 ? 1.0 - static_cast<double>(y) / (map_h - 1) : 0.5;
    c.fill(bar_x, top + y, bar_w, 1, flat ? viridis(0.5) : viridis(t));
  }
  c.frame(bar_x - 1, top - 1, bar_w + 2, map_h + 2, kGrey);
  for (double v : bt) {
    const double t = flat ? 0.5 : (v - lo) / (hi - lo);
    const int y = top + static_cast<int>(std::lround((1 - t) * (map_h - 1)));
    c.fill(bar_x + bar_w, y, 4, 1, kBlack);
    c.text(bar_x + bar_w + 6, y - th / 2, format_number(v), kBlack, scale);
  }
  if (!s.colorbar_label.empty())
    c.text_vertical(bar_label_x, top + map_h / 2 - text_width(s.colorbar_label, scale) / 2, s.colorbar_label, kBlack,
                    scale);
  return c.image();
}

// ---- charts --------------------------------------------------------------------------------------------

namespace {

struct Frame {
  int left, top, width, height;
  double x0, x1, y0, y1;
  bool log_y;
  int px(double x) const { return left + static_cast<int>(std::lround((x - x0) / (x1 - x0) * (width - 1))); }
  int py(double y) const {
    const double t = log_y ? (std::log10(y) - std::log10(y0)) / (std::log10(y1) - std::log10(y0)) : (y - y0) / (y1 - y0);
    return top + static_cast<int>(std::lround((1 - t) * (height - 1)));
  }
};

// Axes, grid, ticks, labels and a legend; returns the plotting frame.
Frame draw_axes(Canvas& c, const ChartStyle& s, double x0, double x1, double y0, double y1, bool index_x,
                const std::vector<std::string>& categories, const std::vector<std::pair<std::string, Rgb>>& legend) {
  const int scale = 2, th = text_height(scale), pad = 8;
  std::vector<double> yt;
  if (s.log_y) {
    yt = log_ticks(y0, y1);
  } else {
    yt = nice_ticks(y0, y1, 5);
  }
  int ytick_w = 0;
  for (double v : yt) ytick_w = std::max(ytick_w, text_width(format_number(v), scale));
  Frame f;
  f.left = pad + th + pad + ytick_w + 6;
  f.top = (s.title.empty() ? pad : th + 2 * pad) + (legend.empty() ? 0 : th + pad);
  f.width = s.width - f.left - 2 * pad;
  f.height = s.height - f.top - (6 + th + pad + th + pad);
  f.x0 = x0, f.x1 = x1, f.y0 = y0, f.y1 = y1, f.log_y = s.log_y;
  if (!s.title.empty()) c.text(s.width / 2 - text_width(s.title, scale) / 2, pad, s.title, kBlack, scale);
  // Legend: one line under the title.
  int lx = f.left;
  for (const auto& [name, color] : legend) {
    const int ly = f.top - th - pad / 2;
    c.fill(lx, ly + th / 2 - 2, 16, 4, color);
    lx += 20 + c.text(lx + 20, ly, name, kBlack, scale) + 16;
  }
  for (double v : yt) {
    const int y = f.py(v);
    c.fill(f.left, y, f.width, 1, kLight);
    c.fill(f.left - 5, y, 4, 1, kBlack);
    const std::string label = format_number(v);
    c.text(f.left - 6 - text_width(label, scale), y - th / 2, label, kBlack, scale);
  }
  if (!categories.empty()) {
    const double slot = static_cast<double>(f.width) / categories.size();
    for (size_t k = 0; k < categories.size(); ++k) {
      const int x = f.left + static_cast<int>((k + 0.5) * slot);
      c.text(x - text_width(categories[k], scale) / 2, f.top + f.height + 6, categories[k], kBlack, scale);
    }
  } else {
    std::vector<double> xt = nice_ticks(x0, x1, 6);
    for (double v : xt) {
      if (index_x && v != std::floor(v)) continue;
      const int x = f.px(v);
      c.fill(x, f.top, 1, f.height, kLight);
      c.fill(x, f.top + f.height, 1, 4, kBlack);
      const std::string label = format_number(v);
      c.text(x - text_width(label, scale) / 2, f.top + f.height + 6, label, kBlack, scale);
    }
  }
  c.frame(f.left - 1, f.top - 1, f.width + 2, f.height + 2, kGrey);
  c.text(f.left + f.width / 2 - text_width(s.x_label, scale) / 2, f.top + f.height + 6 + th + pad, s.x_label, kBlack,
         scale);
  c.text_vertical(pad, f.top + f.height / 2 - text_width(s.y_label, scale) / 2, s.y_label, kBlack, scale);
  return f;
}

}  // namespace

void AxisRange::add(const std::vector<double>& x, const std::vector<double>& y, bool log_y) {
  for (size_t k = 0; k < x.size() && k < y.size(); ++k) {
    if (!std::isfinite(y[k]) || (log_y && y[k] <= 0)) continue;
    x0 = std::min(x0, x[k]), x1 = std::max(x1, x[k]);
    y0 = std::min(y0, y[k]), y1 = std::max(y1, y[k]);
  }
}

void AxisRange::finish(bool log_y, double y_min, double y_max) {
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = log_y ? 1 : 0, y1 = log_y ? 10 : 1;
  // Points at one x (a run's only checkpoint): a span of 5% of it each way (at least 0.5), so that the
  // ticks name distinct values at 3 significant digits.
  if (!(x1 > x0)) {
    const double half = std::max(0.5, 0.05 * std::fabs(x0));
    x0 -= half, x1 += half;
  }
  pad_range(y0, y1, log_y, 0.05);
  if (!std::isnan(y_min)) y0 = y_min;
  if (!std::isnan(y_max)) y1 = y_max;
}

png::Image line_chart(const std::vector<Series>& series, const ChartStyle& s) {
  AxisRange range;
  for (const Series& sr : series) range.add(sr.x, sr.y, s.log_y);
  range.finish(s.log_y, s.y_min, s.y_max);
  const double x0 = range.x0, x1 = range.x1, y0 = range.y0, y1 = range.y1;
  Canvas c(s.width, s.height);
  std::vector<std::pair<std::string, Rgb>> legend;
  for (const Series& sr : series)
    if (!sr.name.empty()) legend.emplace_back(sr.name, sr.color);
  Frame f = draw_axes(c, s, x0, x1, y0, y1, false, {}, legend);
  for (const Series& sr : series) {
    int px = 0, py = 0;
    bool have = false;
    for (size_t k = 0; k < sr.x.size(); ++k) {
      const double y = sr.y[k];
      if (!std::isfinite(y) || (s.log_y && y <= 0)) {
        have = false;
        continue;
      }
      const int x = f.px(sr.x[k]), yy = f.py(std::min(std::max(y, y0), y1));
      if (have) c.line(px, py, x, yy, sr.color, 2);
      if (sr.points) c.fill(x - 2, yy - 2, 5, 5, sr.color);
      px = x, py = yy, have = true;
    }
  }
  return c.image();
}

png::Image bar_chart(const std::vector<std::string>& categories, const std::vector<BarSeries>& series,
                     const ChartStyle& s) {
  double y1 = 0;
  for (const BarSeries& b : series)
    for (double v : b.values)
      if (std::isfinite(v)) y1 = std::max(y1, v);
  if (!std::isnan(s.y_max)) y1 = s.y_max;
  if (!(y1 > 0)) y1 = 1;
  Canvas c(s.width, s.height);
  std::vector<std::pair<std::string, Rgb>> legend;
  for (const BarSeries& b : series) legend.emplace_back(b.name, b.color);
  Frame f = draw_axes(c, s, 0, 1, 0, y1 * 1.05, false, categories, legend);
  const double slot = static_cast<double>(f.width) / std::max<size_t>(1, categories.size());
  const int bars = static_cast<int>(series.size());
  const int bar_w = std::max(2, static_cast<int>(slot * 0.8 / std::max(1, bars)));
  for (size_t k = 0; k < categories.size(); ++k) {
    const int start = f.left + static_cast<int>(k * slot + slot * 0.1);
    for (int b = 0; b < bars; ++b) {
      if (k >= series[b].values.size() || !std::isfinite(series[b].values[k])) continue;
      const int top = f.py(series[b].values[k]);
      c.fill(start + b * bar_w, top, bar_w - 1, f.top + f.height - top, series[b].color);
    }
  }
  return c.image();
}

png::Image grid(const std::vector<png::Image>& panels, int columns, const std::string& title) {
  ORDO_CHECK(!panels.empty() && columns > 0, "plot::grid: no panels");
  const int rows = (static_cast<int>(panels.size()) + columns - 1) / columns, gap = 12, scale = 2;
  std::vector<int> col_w(static_cast<size_t>(columns), 0), row_h(static_cast<size_t>(rows), 0);
  for (size_t k = 0; k < panels.size(); ++k) {
    col_w[k % columns] = std::max(col_w[k % columns], panels[k].width);
    row_h[k / columns] = std::max(row_h[k / columns], panels[k].height);
  }
  int width = gap, height = title.empty() ? gap : text_height(3) + 2 * gap;
  for (int w : col_w) width += w + gap;
  const int top = height;
  for (int h : row_h) height += h + gap;
  width = std::max(width, text_width(title, 3) + 2 * gap);
  Canvas c(width, height);
  if (!title.empty()) c.text(width / 2 - text_width(title, 3) / 2, gap, title, kBlack, 3);
  (void)scale;
  int y = top;
  for (int r = 0; r < rows; ++r) {
    int x = gap;
    for (int k = 0; k < columns; ++k) {
      const size_t idx = static_cast<size_t>(r * columns + k);
      if (idx < panels.size()) c.blit(panels[idx], x, y);
      x += col_w[static_cast<size_t>(k)] + gap;
    }
    y += row_h[static_cast<size_t>(r)] + gap;
  }
  return c.image();
}

}  // namespace ordo::plot
