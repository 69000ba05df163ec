#include "plot/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "plot/png.h"

namespace ordo::plot::svg {

namespace {

const char* const kInk = "#222";
const char* const kFrame = "#888";
const char* const kGridLine = "#e4e4e4";
constexpr double kPad = 10;

// A coordinate: one decimal, no trailing ".0".
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

// A tick label: whole numbers in full up to millions ("4000", not "4e3"), else plot.h's format.
std::string tick_label(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e7) return num(v);
  return format_number(v);
}

std::string hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

// <text>: anchor "start", "middle" or "end"; `rotate` turns it 90 degrees anticlockwise about (x, y).
std::string text(double x, double y, const std::string& s, double size, const std::string& anchor = "start",
                 bool rotate = false, bool bold = false) {
  std::string out = "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + num(size) + "\"";
  if (anchor != "start") out += " text-anchor=\"" + anchor + "\"";
  if (bold) out += " font-weight=\"bold\"";
  if (rotate) out += " transform=\"rotate(-90 " + num(x) + " " + num(y) + ")\"";
  return out + " fill=\"" + kInk + "\">" + escape(s) + "</text>\n";
}

std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& stroke = "") {
  std::string out = "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) +
                    "\" fill=\"" + fill + "\"";
  if (!stroke.empty()) out += " stroke=\"" + stroke + "\"";
  return out + "/>\n";
}

std::string segment(double x0, double y0, double x1, double y1, const std::string& stroke, double width = 1) {
  return "<line x1=\"" + num(x0) + "\" y1=\"" + num(y0) + "\" x2=\"" + num(x1) + "\" y2=\"" + num(y1) +
         "\" stroke=\"" + stroke + "\" stroke-width=\"" + num(width) + "\"/>\n";
}

// A marker centred on (x, y), about 9 pixels across.
std::string marker(double x, double y, const Look& l) {
  const double r = 4.5;
  auto path = [&](const std::string& d, bool filled) {
    return "<path d=\"" + d + "\" " +
           (filled ? "fill=\"" + l.color + "\" stroke=\"#fff\" stroke-width=\"0.8\""
                   : "fill=\"none\" stroke=\"" + l.color + "\" stroke-width=\"2.2\"") +
           "/>\n";
  };
  auto p = [](double a, double b) { return num(a) + " " + num(b); };
  switch (l.marker) {
    case Marker::circle:
      return "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"" + num(r) + "\" fill=\"" + l.color +
             "\" stroke=\"#fff\" stroke-width=\"0.8\"/>\n";
    case Marker::square:
      return path("M" + p(x - r * 0.9, y - r * 0.9) + "h" + num(1.8 * r) + "v" + num(1.8 * r) + "h" + num(-1.8 * r) + "z",
                  true);
    case Marker::triangle_up:
      return path("M" + p(x, y - r * 1.1) + "L" + p(x + r, y + r * 0.8) + "L" + p(x - r, y + r * 0.8) + "z", true);
    case Marker::diamond:
      return path("M" + p(x, y - r * 1.2) + "L" + p(x + r, y) + "L" + p(x, y + r * 1.2) + "L" + p(x - r, y) + "z",
                  true);
    case Marker::triangle_down:
      return path("M" + p(x, y + r * 1.1) + "L" + p(x + r, y - r * 0.8) + "L" + p(x - r, y - r * 0.8) + "z", true);
    case Marker::plus:
      return path("M" + p(x - r, y) + "H" + num(x + r) + "M" + p(x, y - r) + "V" + num(y + r), false);
    case Marker::cross:
      return path("M" + p(x - r * 0.8, y - r * 0.8) + "L" + p(x + r * 0.8, y + r * 0.8) + "M" +
                      p(x - r * 0.8, y + r * 0.8) + "L" + p(x + r * 0.8, y - r * 0.8),
                  false);
  }
  return "";
}

std::string polyline(const std::vector<std::pair<double, double>>& points, const Look& l) {
  std::string d;
  for (const auto& [x, y] : points) d += (d.empty() ? "" : " ") + num(x) + "," + num(y);
  return "<polyline points=\"" + d + "\" fill=\"none\" stroke=\"" + l.color + "\" stroke-width=\"2\"" +
         (l.dash.empty() ? "" : " stroke-dasharray=\"" + l.dash + "\"") + " stroke-linejoin=\"round\"/>\n";
}

std::string base64(const std::string& bytes) {
  static const char* const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k) v = v << 8 | (k < n ? static_cast<uint8_t>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? digits[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

// A picture stretched over (x, y, w, h); `pixelated`: each pixel a sharp block.
std::string image(const png::Image& picture, double x, double y, double w, double h, bool pixelated) {
  return "<image x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) +
         "\" preserveAspectRatio=\"none\"" + (pixelated ? " style=\"image-rendering:pixelated\"" : "") +
         " href=\"data:image/png;base64," + base64(png::encode(picture)) + "\"/>\n";
}

// `s` in lines no wider than max_width where it can break: after a space or a '+'
// (a combined encoding's name), never inside a word; a longer word keeps its line.
std::vector<std::string> wrap(const std::string& s, double size, bool bold, double max_width) {
  std::vector<std::string> words;
  std::string word;
  for (char c : s) {
    word += c;
    if (c == ' ' || c == '+') words.push_back(word), word.clear();
  }
  if (!word.empty()) words.push_back(word);
  std::vector<std::string> lines;
  for (const std::string& w : words) {
    if (!lines.empty() && text_width(lines.back() + w, size, bold) <= max_width) lines.back() += w;
    else lines.push_back(w);
  }
  for (std::string& line : lines)
    while (!line.empty() && line.back() == ' ') line.pop_back();
  return lines;
}

std::string translate(const Figure& f, double x, double y) {
  return "<g transform=\"translate(" + num(x) + " " + num(y) + ")\">\n" + f.body + "</g>\n";
}

}  // namespace

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

double text_width(const std::string& s, double size, bool bold) {
  // DejaVu Sans advance widths in em, ASCII 32..126.
  static const double kAscii[95] = {
      0.318, 0.401, 0.460, 0.838, 0.636, 0.950, 0.780, 0.275, 0.390, 0.390, 0.500, 0.838, 0.318, 0.361, 0.318, 0.337,
      0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.337, 0.337, 0.838, 0.838, 0.838, 0.531,
      1.000, 0.684, 0.686, 0.698, 0.770, 0.632, 0.575, 0.775, 0.752, 0.295, 0.295, 0.656, 0.557, 0.863, 0.748, 0.787,
      0.603, 0.787, 0.695, 0.635, 0.611, 0.732, 0.684, 0.989, 0.685, 0.611, 0.685, 0.390, 0.337, 0.390, 0.838, 0.500,
      0.500, 0.613, 0.635, 0.550, 0.635, 0.615, 0.352, 0.635, 0.634, 0.278, 0.278, 0.579, 0.278, 0.974, 0.634, 0.612,
      0.635, 0.635, 0.411, 0.521, 0.392, 0.634, 0.592, 0.818, 0.592, 0.592, 0.525, 0.636, 0.337, 0.636, 0.838};
  double em = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 32 && c < 127) em += kAscii[c - 32];
    else if ((c & 0xC0) != 0x80) em += 0.7;  // the first byte of any other character
  }
  return em * size * (bold ? 1.15 : 1.0);
}

Look look(int index) {
  // Paul Tol's "muted" scheme, the darker colours first.
  static const char* const kMuted[9] = {"#332288", "#cc6677", "#117733", "#882255", "#44aa99",
                                        "#999933", "#aa4499", "#88ccee", "#ddcc77"};
  static const Marker kMarkers[7] = {Marker::circle,        Marker::square, Marker::triangle_up, Marker::diamond,
                                     Marker::triangle_down, Marker::plus,   Marker::cross};
  static const char* const kDashes[3] = {"", "7 4", "2 3"};
  const int i = index < 0 ? 0 : index;
  return {kMuted[i % 9], kMarkers[i % 7], kDashes[(i / 9) % 3]};
}

std::string document(const Figure& f) {
  const std::string w = num(std::ceil(f.width)), h = num(std::ceil(f.height));
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w +
         "\" height=\"" + h + "\" viewBox=\"0 0 " + w + " " + h + "\" font-family=\"sans-serif\">\n" +
         "<rect width=\"" + w + "\" height=\"" + h + "\" fill=\"#fff\"/>\n" + f.body + "</svg>\n";
}

// ---- legend ---------------------------------------------------------------------------------------

Figure legend(const std::vector<std::pair<std::string, int>>& entries, double max_width, bool bars) {
  const double sample = 30, gap = 6, between = 20, row_h = kSmallFont * 1.6;
  Figure f;
  double x = 0, y = 0;
  for (const auto& [name, index] : entries) {
    const double w = sample + gap + text_width(name, kSmallFont);
    if (x > 0 && x + w > max_width) x = 0, y += row_h;  // wrap: this entry starts the next row
    const Look l = look(index);
    const double mid = y + row_h / 2;
    if (bars) {
      f.body += rect(x + 8, mid - 7, 14, 14, l.color);
    } else {
      f.body += polyline({{x, mid}, {x + sample, mid}}, l);
      f.body += marker(x + sample / 2, mid, l);
    }
    f.body += text(x + sample + gap, mid + kSmallFont * 0.35, name, kSmallFont);
    f.width = std::max(f.width, x + w);
    x += w + between;
  }
  f.height = entries.empty() ? 0 : y + row_h;
  return f;
}

// ---- charts ---------------------------------------------------------------------------------------------

namespace {

// The plotting area of a chart and its data range.
struct Frame {
  double left = 0, top = 0, width = 0, height = 0;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  bool log_y = false;
  double px(double x) const { return left + (x - x0) / (x1 - x0) * width; }
  double py(double y) const {
    const double t = log_y ? (std::log10(y) - std::log10(y0)) / (std::log10(y1) - std::log10(y0)) : (y - y0) / (y1 - y0);
    return top + (1 - t) * height;
  }
};

// Title, legend, axes, ticks, grid lines and labels; the figure's body gets
// them and `frame` the plotting area. Categories (bar charts) label the x
// axis in place of numbers; `whole_x` (every point at a whole number: layers,
// length bins) keeps the x ticks on whole numbers.
Figure chart_axes(const ChartStyle& s, Frame& frame, const std::vector<std::string>& categories,
                  const std::vector<std::pair<std::string, int>>& entries, bool bars, bool whole_x = false) {
  const std::vector<double> yt = s.log_y ? log_ticks(frame.y0, frame.y1) : nice_ticks(frame.y0, frame.y1, 5);
  double ytick_w = 0;
  for (double v : yt) ytick_w = std::max(ytick_w, text_width(tick_label(v), kSmallFont));
  const double left = kPad + kFont * 1.3 + 8 + ytick_w + 6, right = kPad + 16;
  Figure lg = s.legend ? legend(entries, s.width - left - right, bars) : Figure{};

  Figure f;
  f.width = std::max({s.width, left + lg.width + right, text_width(s.title, kTitleFont, true) + 2 * kPad});
  double y = kPad;
  if (!s.title.empty()) {
    f.body += text(f.width / 2, y + kTitleFont, s.title, kTitleFont, "middle", false, true);
    y += kTitleFont * 1.6;
  }
  if (lg.height > 0) {
    f.body += translate(lg, left, y);
    y += lg.height + 6;
  }
  const double bottom = 6 + kSmallFont * 1.3 + 6 + kFont * 1.3 + kPad;
  frame.left = left, frame.top = y + 6;
  frame.width = f.width - left - right;
  frame.height = std::max(120.0, s.height - (kPad + kTitleFont * 1.6) - bottom);
  f.height = frame.top + frame.height + bottom;
  frame.log_y = s.log_y;

  for (double v : yt) {
    const double py = frame.py(v);
    f.body += segment(frame.left, py, frame.left + frame.width, py, kGridLine);
    f.body += segment(frame.left - 5, py, frame.left, py, kInk);
    f.body += text(frame.left - 8, py + kSmallFont * 0.35, tick_label(v), kSmallFont, "end");
  }
  const double below = frame.top + frame.height + 6 + kSmallFont;
  if (!categories.empty()) {
    const double slot = frame.width / static_cast<double>(categories.size());
    for (size_t k = 0; k < categories.size(); ++k)
      f.body += text(frame.left + (k + 0.5) * slot, below, categories[k], kSmallFont, "middle");
  } else {
    for (double v : nice_ticks(frame.x0, frame.x1, 6)) {
      if (whole_x && v != std::round(v)) continue;
      const double px = frame.px(v);
      f.body += segment(px, frame.top, px, frame.top + frame.height, kGridLine);
      f.body += segment(px, frame.top + frame.height, px, frame.top + frame.height + 5, kInk);
      f.body += text(px, below, tick_label(v), kSmallFont, "middle");
    }
  }
  f.body += "<rect x=\"" + num(frame.left) + "\" y=\"" + num(frame.top) + "\" width=\"" + num(frame.width) +
            "\" height=\"" + num(frame.height) + "\" fill=\"none\" stroke=\"" + kFrame + "\"/>\n";
  f.body += text(frame.left + frame.width / 2, below + 6 + kFont * 1.3, s.x_label, kFont, "middle");
  f.body += text(kPad + kFont, frame.top + frame.height / 2, s.y_label, kFont, "middle", true);
  return f;
}

// y -/+ error at each point with a whisker (NaN elsewhere), so that the axes hold the whiskers too.
std::vector<double> whisker_ends(const Line& l, double sign) {
  std::vector<double> ends(l.y.size(), NAN);
  for (size_t k = 0; k < l.error.size() && k < l.y.size(); ++k) ends[k] = l.y[k] + sign * l.error[k];
  return ends;
}

}  // namespace

Figure line_chart(const std::vector<Line>& lines, const ChartStyle& s) {
  AxisRange range;
  for (const Line& l : lines) {
    range.add(l.x, l.y, s.log_y);
    for (const double sign : {-1.0, 1.0}) range.add(l.x, whisker_ends(l, sign), s.log_y);
  }
  range.finish(s.log_y, s.y_min, s.y_max);
  const double x_room = s.x_margin * (range.x1 - range.x0);
  range.x0 -= x_room, range.x1 += x_room;
  const double y0 = range.y0, y1 = range.y1;
  Frame frame;
  frame.x0 = range.x0, frame.x1 = range.x1, frame.y0 = y0, frame.y1 = y1;

  std::vector<std::pair<std::string, int>> entries;
  for (const Line& l : lines)
    if (!l.name.empty()) entries.emplace_back(l.name, l.look);
  bool whole_x = true;
  for (const Line& l : lines)
    for (double x : l.x) whole_x &= x == std::round(x);
  Figure f = chart_axes(s, frame, {}, entries, false, whole_x);

  for (const Line& l : lines) {
    const Look lk = look(l.look);
    std::vector<std::pair<double, double>> run, all;
    auto flush = [&] {
      if (run.size() > 1 && !l.markers_only) f.body += polyline(run, lk);
      run.clear();
    };
    for (size_t k = 0; k < l.x.size() && k < l.y.size(); ++k) {
      const double y = l.y[k];
      if (!std::isfinite(y) || (s.log_y && y <= 0)) {
        flush();
        continue;
      }
      run.emplace_back(frame.px(l.x[k]), frame.py(std::min(std::max(y, y0), y1)));
      all.push_back(run.back());
    }
    flush();
    for (size_t k = 0; k < l.error.size() && k < l.x.size() && k < l.y.size(); ++k) {
      const double lo = l.y[k] - l.error[k], hi = l.y[k] + l.error[k], x = frame.px(l.x[k]);
      if (!std::isfinite(lo) || !std::isfinite(hi) || (s.log_y && lo <= 0)) continue;
      const double top = frame.py(std::min(hi, y1)), bottom = frame.py(std::max(lo, y0));
      f.body += segment(x, top, x, bottom, lk.color, 1.5) + segment(x - 5, top, x + 5, top, lk.color, 1.5) +
                segment(x - 5, bottom, x + 5, bottom, lk.color, 1.5);
    }
    // Markers at every point of a short line, at about 10 spread along a long one.
    const size_t every = all.size() <= 12 || l.markers_only || !l.error.empty() ? 1 : (all.size() + 9) / 10;
    for (size_t k = 0; k < all.size(); ++k)
      if (k % every == 0 || k + 1 == all.size()) f.body += marker(all[k].first, all[k].second, lk);
  }
  return f;
}

Figure bar_chart(const std::vector<std::string>& categories, const std::vector<Bars>& bars, const ChartStyle& s) {
  Frame frame;
  double y1 = 0;
  for (const Bars& b : bars)
    for (double v : b.values)
      if (std::isfinite(v)) y1 = std::max(y1, v);
  if (!std::isnan(s.y_max)) y1 = s.y_max;
  if (!(y1 > 0)) y1 = 1;
  frame.y1 = y1 * 1.05;
  std::vector<std::pair<std::string, int>> entries;
  for (const Bars& b : bars) entries.emplace_back(b.name, b.look);
  Figure f = chart_axes(s, frame, categories, entries, true);
  const double slot = frame.width / static_cast<double>(std::max<size_t>(1, categories.size()));
  const double bar_w = slot * 0.8 / static_cast<double>(std::max<size_t>(1, bars.size()));
  for (size_t k = 0; k < categories.size(); ++k)
    for (size_t b = 0; b < bars.size(); ++b) {
      if (k >= bars[b].values.size() || !std::isfinite(bars[b].values[k])) continue;
      const double top = frame.py(std::min(bars[b].values[k], frame.y1)), base = frame.top + frame.height;
      f.body += rect(frame.left + k * slot + slot * 0.1 + b * bar_w, top, bar_w * 0.92, base - top,
                     look(bars[b].look).color);
    }
  return f;
}

// ---- heatmap ---------------------------------------------------------------------------------------

Figure heatmap(const Matrix& m, const HeatmapStyle& s, double map_size) {
  ORDO_CHECK(!m.empty(), "heatmap: the matrix is empty");
  const double cell = s.cell > 0 ? s.cell : map_size / static_cast<double>(std::max(m.rows, m.cols));
  const double map_w = cell * static_cast<double>(m.cols), map_h = cell * static_cast<double>(m.rows);
  double lo = s.vmin, hi = s.vmax;
  if (std::isnan(lo) || std::isnan(hi)) {
    double dlo = INFINITY, dhi = -INFINITY;
    for (double v : m.data)
      if (std::isfinite(v)) dlo = std::min(dlo, v), dhi = std::max(dhi, v);
    if (!std::isfinite(dlo)) dlo = dhi = 0;
    if (std::isnan(lo)) lo = dlo;
    if (std::isnan(hi)) hi = dhi;
  }
  const bool flat = !(hi > lo);

  const std::vector<int64_t> xt = index_ticks(s.x_first, m.cols, 6), yt = index_ticks(s.y_first, m.rows, 6);
  double ytick_w = 0;
  for (int64_t v : yt) ytick_w = std::max(ytick_w, text_width(std::to_string(v), kSmallFont));
  const std::vector<double> bt = flat ? std::vector<double>{lo} : nice_ticks(lo, hi, 5);
  double btick_w = 0;
  for (double v : bt) btick_w = std::max(btick_w, text_width(format_number(v), kSmallFont));

  const double left = kPad + kFont * 1.3 + 6 + ytick_w + 6;
  const double bar_x = left + map_w + 14, bar_w = 14;
  const double bar_label_x = bar_x + bar_w + 6 + btick_w + 6 + kFont;
  const double content_w = bar_label_x + (s.colorbar_label.empty() ? 0 : 4) + kPad;
  // A long title (a combined encoding's name) in lines over the map, so that
  // the panel stays as narrow as its map and a grid gets more columns.
  const std::vector<std::string> title = s.title.empty() ? std::vector<std::string>{}
                                                         : wrap(s.title, kTitleFont, true, content_w - 2 * kPad);
  double title_w = 0;
  for (const std::string& line : title) title_w = std::max(title_w, text_width(line, kTitleFont, true));
  const double line_h = kTitleFont * 1.25;
  const double top = kPad + (title.empty() ? 0 : line_h * static_cast<double>(title.size()) + kTitleFont * 0.4);
  Figure f;
  f.width = std::max(content_w, title_w + 2 * kPad);
  const double title_x = std::min(std::max(kPad + title_w / 2, left + map_w / 2), f.width - kPad - title_w / 2);
  for (size_t k = 0; k < title.size(); ++k)
    f.body += text(title_x, kPad + kTitleFont + line_h * static_cast<double>(k), title[k], kTitleFont, "middle", false,
                   true);

  png::Image cells(static_cast<int>(m.cols), static_cast<int>(m.rows));
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) {
      const double v = m(i, j);
      Rgb c = flat ? viridis(0.5) : viridis((v - lo) / (hi - lo));
      if (!std::isnan(s.highlight_above) && v > s.highlight_above) c = s.highlight;
      uint8_t* p = cells.rgb.data() + (static_cast<size_t>(i) * static_cast<size_t>(m.cols) + static_cast<size_t>(j)) * 3;
      p[0] = c.r, p[1] = c.g, p[2] = c.b;
    }
  f.body += image(cells, left, top, map_w, map_h, true);
  f.body += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(map_w) + "\" height=\"" +
            num(map_h) + "\" fill=\"none\" stroke=\"" + kFrame + "\"/>\n";

  const double below = top + map_h + 6 + kSmallFont;
  for (int64_t v : xt) {
    const double x = left + (static_cast<double>(v - s.x_first) + 0.5) * cell;
    f.body += segment(x, top + map_h, x, top + map_h + 4, kInk);
    f.body += text(x, below, std::to_string(v), kSmallFont, "middle");
  }
  for (int64_t v : yt) {
    const double y = top + (static_cast<double>(v - s.y_first) + 0.5) * cell;
    f.body += segment(left - 4, y, left, y, kInk);
    f.body += text(left - 6, y + kSmallFont * 0.35, std::to_string(v), kSmallFont, "end");
  }
  double y = below + 6 + kFont * 1.3;
  f.body += text(left + map_w / 2, y, s.x_label, kFont, "middle");
  f.body += text(kPad + kFont, top + map_h / 2, s.y_label, kFont, "middle", true);
  if (!std::isnan(s.highlight_above)) {
    f.body += rect(left, y + 8, kSmallFont, kSmallFont, hex(s.highlight));
    f.body += text(left + kSmallFont + 6, y + 8 + kSmallFont * 0.85, s.highlight_label, kSmallFont);
    f.width = std::max(f.width, left + kSmallFont + 6 + text_width(s.highlight_label, kSmallFont) + kPad);
    y += 8 + kSmallFont * 1.3;
  }
  f.height = y + kPad;

  // The colour bar, high at the top: a column of viridis, smoothed.
  if (flat) {
    f.body += rect(bar_x, top, bar_w, map_h, hex(viridis(0.5)));
  } else {
    png::Image bar(1, 256);
    for (int k = 0; k < 256; ++k) {
      const Rgb c = viridis(1.0 - k / 255.0);
      bar.rgb[static_cast<size_t>(k) * 3] = c.r, bar.rgb[static_cast<size_t>(k) * 3 + 1] = c.g,
                                     bar.rgb[static_cast<size_t>(k) * 3 + 2] = c.b;
    }
    f.body += image(bar, bar_x, top, bar_w, map_h, false);
  }
  f.body += "<rect x=\"" + num(bar_x) + "\" y=\"" + num(top) + "\" width=\"" + num(bar_w) + "\" height=\"" +
            num(map_h) + "\" fill=\"none\" stroke=\"" + kFrame + "\"/>\n";
  for (double v : bt) {
    const double t = flat ? 0.5 : (v - lo) / (hi - lo);
    const double by = top + (1 - t) * map_h;
    f.body += segment(bar_x + bar_w, by, bar_x + bar_w + 4, by, kInk);
    f.body += text(bar_x + bar_w + 6, by + kSmallFont * 0.35, format_number(v), kSmallFont);
  }
  if (!s.colorbar_label.empty())
    f.body += text(bar_label_x, top + map_h / 2, s.colorbar_label, kFont, "middle", true);
  return f;
}

// ---- grid ------------------------------------------------------------------------------------------

Figure grid(const std::vector<Figure>& panels, int columns, const std::string& title,
            const std::vector<std::pair<std::string, int>>& entries) {
  ORDO_CHECK(!panels.empty(), "svg::grid: no panels");
  const double gap = 16;
  if (columns <= 0) {
    double widest = 0;
    for (const Figure& p : panels) widest = std::max(widest, p.width);
    columns = std::max(1, static_cast<int>((kMaxWidth - gap) / (widest + gap)));
  }
  columns = std::min(columns, static_cast<int>(panels.size()));
  const size_t cols = static_cast<size_t>(columns), rows = (panels.size() + cols - 1) / cols;
  std::vector<double> col_w(cols, 0), row_h(rows, 0);
  for (size_t k = 0; k < panels.size(); ++k) {
    col_w[k % cols] = std::max(col_w[k % cols], panels[k].width);
    row_h[k / cols] = std::max(row_h[k / cols], panels[k].height);
  }
  Figure f;
  f.width = gap;
  for (double w : col_w) f.width += w + gap;
  f.width = std::max(f.width, text_width(title, kBigFont, true) + 2 * gap);
  const Figure lg = legend(entries, std::min(f.width, kMaxWidth) - 2 * gap);
  f.width = std::max(f.width, lg.width + 2 * gap);

  double y = gap;
  if (!title.empty()) {
    f.body += text(f.width / 2, y + kBigFont, title, kBigFont, "middle", false, true);
    y += kBigFont * 1.7;
  }
  if (lg.height > 0) {
    f.body += translate(lg, gap, y);
    y += lg.height + gap / 2;
  }
  for (size_t r = 0; r < rows; ++r) {
    double x = gap;
    for (size_t c = 0; c < cols && r * cols + c < panels.size(); ++c) {
      f.body += translate(panels[r * cols + c], x, y);
      x += col_w[c] + gap;
    }
    y += row_h[r] + gap;
  }
  f.height = y;
  return f;
}

}  // namespace ordo::plot::svg
