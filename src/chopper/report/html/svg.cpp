// The report's charts (svg.hpp). Over 800 lines: the chart primitives share one set of scale,
// axis, tick, legend and text helpers (the anonymous namespace below), which a split would expose.
#include "chopper/report/html/svg.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

namespace chopper::html {
namespace {

constexpr double kMarginLeft = 90, kMarginTop = 14, kMarginBottom = 46, kLegend = 170;

std::string px(double v) {
  return fmt::format(FMT_COMPILE("{:.1f}"), v);
}

// A linear (or log10) map from values to pixels.
struct Scale {
  double d0 = 0, d1 = 1, p0 = 0, p1 = 1;
  bool log = false;
  double operator()(double v) const {
    if (log) {
      v = std::log10(std::max(v, 1e-300));
    }
    const double a = log ? std::log10(d0) : d0, b = log ? std::log10(d1) : d1;
    if (b == a) return (p0 + p1) / 2;
    return p0 + (v - a) / (b - a) * (p1 - p0);
  }
};

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> t;
  for (double e = std::floor(std::log10(lo)); e <= std::ceil(std::log10(hi)); e += 1)
    t.push_back(std::pow(10.0, e));
  return t;
}

// Ticks of a log x axis covering [lo, hi] (lo > 0): powers of ten, or powers of two (bytes),
// at most about max_ticks, from the one at or below lo to the one at or above hi.
std::vector<double> log_x_ticks(double lo, double hi, bool bytes, int max_ticks) {
  const double base = bytes ? 2 : 10;
  const double e0 = std::floor(std::log(lo) / std::log(base) + 1e-9);
  const double e1 = std::ceil(std::log(hi) / std::log(base) - 1e-9);
  const double step = std::max(1.0, std::ceil((e1 - e0) / std::max(max_ticks, 1)));
  std::vector<double> t;
  for (double e = std::floor(e0 / step) * step; e < e1 + step; e += step)
    t.push_back(std::pow(base, e));
  return t;
}

std::string text(double x, double y, std::string_view s, std::string_view anchor = "middle",
                 std::string_view extra = "") {
  return fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\"{}>{}</text>", px(x), px(y), anchor,
                     extra, esc(s));
}

// The advance widths of DejaVu Sans, Debian's default and the widest of the common sans-serif
// fonts, for the printable ASCII characters (0x20–0x7E), in 1/2048 em (the font's hmtx table).
constexpr std::array<uint16_t, 95> kAdvance = {
    651,  821,  942,  1716, 1303, 1946, 1597, 563,  799,  799,  1024, 1716, 651,  739,  651,  690,
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 690,  690,  1716, 1716, 1716, 1087,
    2048, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604,  604,  1343, 1141, 1767, 1532, 1612,
    1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, 799,  690,  799,  1716, 1024,
    1024, 1255, 1300, 1126, 1300, 1260, 721,  1300, 1298, 569,  569,  1186, 569,  1995, 1298, 1253,
    1300, 1300, 842,  1067, 803,  1298, 1212, 1675, 1212, 1212, 1075, 1303, 690,  1303, 1716};

// The width in an 11 px text of the character a UTF-8 byte starts (outside ASCII: 1 em), 0 for a
// continuation byte.
double char_px(unsigned char ch) {
  if ((ch & 0xC0) == 0x80) return 0;
  if (ch >= 0x20 && ch < 0x7F) return kAdvance[ch - 0x20] * (11.0 / 2048);
  return 11;
}

// At most n average characters wide (n × 6.4 px of an 11 px text, measured character by
// character: "iiii" fits where "MMMM" does not), with an ellipsis when cut.
std::string shorten(const std::string& s, size_t n) {
  const double budget = 6.4 * static_cast<double>(n);
  double w = 0;
  for (char ch : s) w += char_px(static_cast<unsigned char>(ch));
  if (w <= budget) return s;
  w = 11;  // the ellipsis
  size_t i = 0;
  for (; i < s.size(); ++i) {
    const double cw = char_px(static_cast<unsigned char>(s[i]));
    if (cw > 0 && w + cw > budget) break;
    w += cw;
  }
  return s.substr(0, i) + "…";
}

// A text of at most n characters; when cut (ellipsis), the full text is its <title> (tooltip).
std::string label(double x, double y, const std::string& s, size_t n,
                  std::string_view anchor = "middle", std::string_view extra = "") {
  const std::string cut = shorten(s, n);
  if (cut == s) return text(x, y, s, anchor, extra);
  return fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\"{}>{}<title>{}</title></text>",
                     px(x), px(y), anchor, extra, esc(cut), esc(s));
}

// The average characters of an 11 px sans-serif text that fit in `width` px (6.4 px a character;
// shorten() measures each character), at least 4.
size_t chars_in(double width) {
  return static_cast<size_t>(std::max(4.0, width / 6.4));
}
// The width an 11 px sans-serif text of s takes at most (DejaVu Sans' advances).
double text_width(std::string_view s) {
  double w = 0;
  for (char ch : s) w += char_px(static_cast<unsigned char>(ch));
  return w;
}

// A value-axis tick label left of the vertical axis at x0, centred on its grid line at y; one at
// the bottom of the axis (y1) is raised to sit on its line, clear of the first label below the
// axis (an 11 px text's box reaches ~7 px under its baseline and ~10 px above it).
std::string y_tick(double x0, double y, double y1, const std::string& s) {
  return text(x0 - 4, std::min(y + 4, y1 - 1), s, "end");
}
// A tick label under a horizontal axis ending at x1, centred on its tick at x; one that would
// reach more than 6 px past the axis' end (where the legend's column starts) ends there instead.
std::string x_tick(double x, double y, double x1, const std::string& s) {
  const double half = text_width(s) / 2;
  return x + half > x1 + 6 ? text(x1 + 6, y, s, "end") : text(x, y, s);
}

// The average characters of a bold 11 px text that fit in `len` px, at least 8: DejaVu Sans Bold
// is up to 1.2 × as wide as the regular face shorten() measures (1.14 × on English words).
size_t bold_chars_in(double len) {
  return static_cast<size_t>(std::max(8.0, len / (6.4 * 1.2)));
}

// Axis titles (value axis vertical or horizontal), cut to the axis' length (the full title in
// the tooltip).
std::string axis_title_x(double x0, double x1, double y, const std::string& s) {
  return label((x0 + x1) / 2, y, s, bold_chars_in(x1 - x0 + 20), "middle", " class=\"axis-title\"");
}
// The vertical title is centred on y0..y1 and may extend beyond it, within the chart's height h:
// cut to h, moved down or up as far as it must to stay inside.
std::string axis_title_y(double y0, double y1, const std::string& s, double h) {
  const double len = std::min(1.2 * text_width(s), h - 4) + 8;  // bold, at most, and its ellipsis
  const double y =
      std::clamp((y0 + y1) / 2, std::min(len / 2 + 2, h / 2), std::max(h - len / 2 - 2, h / 2));
  return label(14, y, s, bold_chars_in(h - 4), "middle",
               fmt::format(" class=\"axis-title\" transform=\"rotate(-90 14 {})\"", px(y)));
}

// A legend at (x, y), a row of 16 px per name; a name longer than its column (`width` px from x,
// the swatch included) is cut, the full name in its tooltip.
std::string legend(double x, double y, const std::vector<std::string>& names,
                   const std::vector<std::string>& colors, double width = kLegend - 20) {
  std::string s = "<g class=\"legend\">";
  for (size_t i = 0; i < names.size(); ++i) {
    const double yy = y + static_cast<double>(i) * 16;
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>", px(x),
                     px(yy), colors[i]);
    s += label(x + 14, yy + 9, names[i], chars_in(width - 14), "start");
  }
  return s + "</g>";
}

std::string svg_open(double w, double h, std::string_view cls) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"{}\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" font-size=\"11\">",
      cls, px(w), px(h), px(w), px(h));
}

std::pair<double, double> range_of(double lo, double hi) {
  if (!(lo < hi)) {
    if (lo == hi && lo != 0) return {std::min(0.0, lo), std::max(0.0, hi)};
    return {0, 1};
  }
  return {lo, hi};
}

}  // namespace

std::string esc(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  return o;
}

std::string num(double v) {
  if (std::isnan(v)) return "";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 9e15) {
    const fmt::format_int f(static_cast<int64_t>(v));
    return std::string(f.data(), f.size());
  }
  return fmt::format(FMT_COMPILE("{}"), v);
}

std::string label_num(double v) {
  if (std::isnan(v)) return "–";
  if (v == 0) return "0";  // −0 too
  const double a = std::fabs(v);
  if (a != 0 && (a < 1e-3 || a >= 1e9)) return fmt::format(FMT_COMPILE("{:.3g}"), v);
  std::string s = fmt::format(FMT_COMPILE("{:.4g}"), v);
  if (s.find('e') != std::string::npos) s = fmt::format(FMT_COMPILE("{:.0f}"), v);
  return s;
}

std::string fixed(double v, int decimals, bool plus) {
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (std::isfinite(v) && s.find_first_of("123456789") == std::string::npos)
    return fmt::format("{:.{}f}", 0.0, decimals);  // rounds to zero: no sign
  if (plus && v > 0) s.insert(0, "+");
  return s;
}

std::vector<double> nice_ticks(double lo, double hi, int n) {
  std::vector<double> t;
  if (!(hi > lo) || n < 1) return {lo};
  const double raw = (hi - lo) / n, mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

namespace {

// The ticks of a value axis over [lo, hi]: nice ticks, one more step at an end the data reach
// beyond the last tick, so that the axis ends at a labelled value rather than at the data's
// extreme; an end fixed by an anchor (0, a device's limit) is not extended.
std::vector<double> axis_ticks(double lo, double hi, bool fixed_lo = false, bool fixed_hi = false) {
  std::vector<double> t = nice_ticks(lo, hi);
  if (t.size() < 2) return t;
  const double step = t[1] - t[0];
  if (!fixed_hi && t.back() < hi - step * 1e-9) t.push_back(t.back() + step);
  if (!fixed_lo && t.front() > lo + step * 1e-9)
    t.insert(t.begin(), std::fabs(t.front() - step) < step * 1e-9 ? 0.0 : t.front() - step);
  return t;
}

}  // namespace

std::string_view palette(size_t i) {
  static constexpr std::array<std::string_view, 10> k = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                         "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                         "#9c755f", "#bab0ac"};
  return k[i % k.size()];
}

namespace {
// "#rrggbb" of three channels in 0..255 (a heatmap formats one per cell: no format string).
std::string hex_color(int r, int g, int b) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(7, '#');
  int k = 1;
  for (int v : {r, g, b}) {
    s[static_cast<size_t>(k++)] = kHex[(v >> 4) & 15];
    s[static_cast<size_t>(k++)] = kHex[v & 15];
  }
  return s;
}
}  // namespace

std::string sequential(double t) {
  // viridis at 5 stops, linear between them
  static constexpr std::array<std::array<double, 3>, 5> k = {
      {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}};
  if (std::isnan(t)) return "#dddddd";
  t = std::clamp(t, 0.0, 1.0) * 4;
  const size_t i = std::min<size_t>(3, static_cast<size_t>(t));
  const double f = t - static_cast<double>(i);
  auto c = [&](size_t j) {
    return static_cast<int>(std::lround(k[i][j] + (k[i + 1][j] - k[i][j]) * f));
  };
  return hex_color(c(0), c(1), c(2));
}

std::string diverging(double t) {
  // ColorBrewer RdBu's ends (#2166ac, #b2182b) through a light grey, linear between them
  static constexpr std::array<std::array<double, 3>, 3> k = {
      {{33, 102, 172}, {240, 240, 240}, {178, 24, 43}}};
  if (std::isnan(t)) return "#dddddd";
  t = std::clamp(t, -1.0, 1.0);
  const size_t i = t < 0 ? 0 : 1;
  const double f = t < 0 ? t + 1 : t;
  auto c = [&](size_t j) {
    return static_cast<int>(std::lround(k[i][j] + (k[i + 1][j] - k[i][j]) * f));
  };
  return hex_color(c(0), c(1), c(2));
}

double quantile(const std::vector<double>& v, double q) {
  if (v.empty()) return std::nan("");
  const double h = (static_cast<double>(v.size()) - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

std::string stacked_bars(const StackedBars& c) {
  const size_t n = c.categories.size();
  double lo = 0, hi = 0;
  for (const auto& row : c.values) {
    double p = 0, m = 0;
    for (double v : row)
      if (!std::isnan(v)) (v >= 0 ? p : m) += v / c.scale;
    hi = std::max(hi, p);
    lo = std::min(lo, m);
  }
  if (c.symmetric) lo = -std::max(hi, -lo), hi = -lo;
  std::tie(lo, hi) = range_of(lo, hi);
  const std::vector<double> ticks = axis_ticks(lo, hi);
  lo = std::min(lo, ticks.front());
  hi = std::max(hi, ticks.back());
  if (c.symmetric) lo = -std::max(hi, -lo), hi = -lo;
  std::vector<std::string> names = c.series;
  for (size_t i = 0; i < names.size() && i < c.series_names.size(); ++i)
    if (!c.series_names[i].empty()) names[i] = c.series_names[i];
  std::vector<std::string> colors = c.series_colors;
  for (size_t i = colors.size(); i < c.series.size(); ++i) colors.emplace_back(palette(i));
  const double band =
      c.horizontal ? std::clamp(360.0 / static_cast<double>(std::max<size_t>(n, 1)), 3.0, 22.0)
                   : std::clamp(600.0 / static_cast<double>(std::max<size_t>(n, 1)), 2.0, 60.0);
  const double plot_len = band * static_cast<double>(n);
  const size_t label_every = c.horizontal ? std::max<size_t>(1, static_cast<size_t>(12 / band))
                                          : std::max<size_t>(1, static_cast<size_t>(40 / band));
  // room for the labels: the legend's column as wide as its longest name (up to 300 px); below
  // vertical bars, the category labels at 45° (cut at 24 characters) and left of the first one
  double legend_w = 0, cat_w = 0;
  for (const std::string& k : names) legend_w = std::max(legend_w, text_width(k));
  for (size_t i = 0; i < n; i += label_every)
    cat_w = std::max(cat_w, text_width(shorten(c.categories[i], 24)));
  const double leg = std::clamp(legend_w + 14 + 24, kLegend, 300.0);
  const double diag = cat_w * std::sqrt(0.5) + 8;  // a 45° label's height and width
  const double ml = c.horizontal ? 270 : std::max(kMarginLeft, diag + 4 - band * 0.4);
  const double mb = c.horizontal ? kMarginBottom : std::max(kMarginBottom, diag + 30);
  // as tall as the legend and as the vertical axis' title (bold, up to 320 px)
  const double legend_h = std::max(
      static_cast<double>(c.series.size()) * 16 + 24,
      std::min(320.0, 1.2 * text_width(c.horizontal ? c.category_label : c.value_label) + 12));
  const double w =
      c.horizontal
          ? c.width
          : ml + std::max({plot_len, 240.0, 1.2 * text_width(c.category_label) - 16}) + leg + 20;
  const double h = c.horizontal ? std::max(kMarginTop + plot_len + kMarginBottom, legend_h)
                                : std::max(260.0 - kMarginBottom + mb, legend_h);
  const double x0 = ml, x1 = w - leg, y0 = kMarginTop, y1 = c.horizontal ? y0 + plot_len : h - mb;
  Scale val = c.horizontal ? Scale{lo, hi, x0, x1} : Scale{lo, hi, y1, y0};
  std::string s = svg_open(w, h, "chart bars");
  // value grid and ticks
  for (double t : ticks) {
    const double p = val(t);
    if (c.horizontal)
      s += fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" class=\"grid\"/>", px(p),
                       px(y0), px(y1)) +
           x_tick(p, y1 + 14, x1, label_num(t));
    else
      s += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" class=\"grid\"/>", px(x0),
                       px(x1), px(p)) +
           y_tick(x0, p, y1, label_num(t));
  }
  // escaped once, not once a bar (esc of a tooltip is the concatenation of its parts' escapes)
  std::vector<std::string> series_esc, names_esc;
  for (const std::string& k : c.series) series_esc.push_back(esc(k));
  for (const std::string& k : names) names_esc.push_back(esc(k));
  for (size_t i = 0; i < n; ++i) {
    const double b0 = (c.horizontal ? y0 : x0) + band * static_cast<double>(i);
    const double bw = std::max(1.0, band * 0.8);
    const std::string& attrs = i < c.cat_attrs.size() ? c.cat_attrs[i] : std::string();
    const std::string cat = esc(c.categories[i]), b0s = px(b0), bws = px(bw);
    s += fmt::format("<g class=\"bar\" data-category=\"{}\"{}>", cat, attrs);
    double pos = 0, neg = 0;
    for (size_t k = 0; k < c.series.size() && i < c.values.size() && k < c.values[i].size(); ++k) {
      const double v = c.values[i][k];
      if (std::isnan(v) || v == 0) continue;
      const double d = v / c.scale;
      double& base = d >= 0 ? pos : neg;
      const double a = val(base), b = val(base + d);
      base += d;
      // Thousands of bars at many ranks: a compiled format, in place. The bar's position across
      // and its thickness are its category's (formatted once, above); its tooltip is "category ·
      // series: value" (label_num writes nothing to escape).
      const std::string at = px(std::min(a, b)), len = px(std::fabs(b - a));
      fmt::format_to(std::back_inserter(s),
                     FMT_COMPILE("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                                 "fill=\"{}\" data-series=\"{}\" data-value=\"{}\"><title>{} · {}: "
                                 "{}</title></rect>"),
                     c.horizontal ? at : b0s, c.horizontal ? b0s : at, c.horizontal ? len : bws,
                     c.horizontal ? bws : len, colors[k], series_esc[k], num(v), cat, names_esc[k],
                     label_num(d));
    }
    s += "</g>";
    if (i % label_every == 0) {
      if (c.horizontal)
        s += label(x0 - 4, b0 + bw / 2 + 4, c.categories[i], chars_in(ml - 30), "end");
      else
        s += label(b0 + bw / 2, y1 + 10, c.categories[i], 24, "end",
                   fmt::format(" transform=\"rotate(-45 {} {})\"", px(b0 + bw / 2), px(y1 + 10)));
    }
  }
  s += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" class=\"axis\"/>", px(x0),
                   px(c.horizontal ? x1 : x0), px(c.horizontal ? y1 : y0), px(y1));
  if (c.horizontal) {
    s += axis_title_x(x0, x1, y1 + kMarginBottom - 10, c.value_label);
    s += axis_title_y(y0, y1, c.category_label, h);
  } else {
    s += axis_title_y(y0, y1, c.value_label, h);
    s += axis_title_x(x0, x1, h - 4, c.category_label);
  }
  if (!c.horizontal) {  // the legend as the stack reads: its top (the last series) first
    colors.resize(names.size());
    std::reverse(names.begin(), names.end());
    std::reverse(colors.begin(), colors.end());
  }
  if (c.series.size() > 1 || !c.series.empty())
    s += legend(x1 + 16, y0 + 4, names, colors, leg - 20);
  s += "</svg>";
  return s;
}

std::string waterfall(const Waterfall& c) {
  const size_t n = c.steps.size();
  // where each step's bar starts and ends (displayed unit)
  std::vector<double> start(n), end(n);
  double cum = 0, lo = 0, hi = 0;
  for (size_t i = 0; i < n; ++i) {
    const WaterfallStep& st = c.steps[i];
    const double v = st.value / c.scale;
    start[i] = st.total ? 0 : cum;
    end[i] = start[i] + v;
    if (!st.total) cum += v;
    const double base = st.total ? 0 : start[i];
    for (double x : {start[i], end[i], base + st.lo / c.scale, base + st.hi / c.scale})
      if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
  }
  std::tie(lo, hi) = range_of(lo, hi);
  const std::vector<double> ticks = axis_ticks(lo, hi);
  lo = std::min(lo, ticks.front());
  hi = std::max(hi, ticks.back());
  const double band = 26, ml = 230, w = c.width;
  const double h = kMarginTop + band * static_cast<double>(n) + 58;
  const double x0 = ml, x1 = w - 110, y0 = kMarginTop, y1 = y0 + band * static_cast<double>(n);
  const Scale val{lo, hi, x0, x1};
  std::string s = svg_open(w, h, "chart waterfall");
  for (double t : ticks)
    s += fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" class=\"grid\"/>",
                     px(val(t)), px(y0), px(y1)) +
         text(val(t), y1 + 14, label_num(t));
  for (size_t i = 0; i < n; ++i) {
    const WaterfallStep& st = c.steps[i];
    const double b0 = y0 + band * static_cast<double>(i), bw = band * 0.7;
    const double a = val(start[i]), b = val(end[i]);
    const double base = st.total ? 0 : start[i];
    s += fmt::format(
        "<g class=\"step\" data-step=\"{}\" data-value=\"{}\" data-min=\"{}\" data-max=\"{}\" "
        "data-start=\"{}\"{}>",
        esc(st.name), num(st.value), num(st.lo), num(st.hi),
        num(st.total ? 0.0 : start[i] * c.scale), st.attrs);
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {} "
        "(spread {} – {})</title></rect>",
        px(std::min(a, b)), px(b0 + (band - bw) / 2), px(std::max(0.5, std::fabs(b - a))), px(bw),
        st.color, esc(st.name), label_num(st.value / c.scale), label_num(st.lo / c.scale),
        label_num(st.hi / c.scale));
    // the spread: a whisker at the bar's end, from base + lo to base + hi
    const double wl = val(base + st.lo / c.scale), wh = val(base + st.hi / c.scale),
                 ym = b0 + band / 2;
    if (std::isfinite(wl) && std::isfinite(wh) && wh - wl > 0.5)
      s += fmt::format(
          "<line class=\"whisker\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#333\"/>"
          "<line x1=\"{0}\" x2=\"{0}\" y1=\"{3}\" y2=\"{4}\" stroke=\"#333\"/>"
          "<line x1=\"{1}\" x2=\"{1}\" y1=\"{3}\" y2=\"{4}\" stroke=\"#333\"/>",
          px(wl), px(wh), px(ym), px(ym - 4), px(ym + 4));
    s += "</g>";
    // a connector to the next bar's start
    if (i + 1 < n && !c.steps[i + 1].total)
      s += fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" class=\"marker\"/>",
                       px(b), px(b0 + (band + bw) / 2), px(b0 + band + (band - bw) / 2));
    // a bold name (a total) is about 15% wider
    s += label(x0 - 4, ym + 4, st.name, chars_in((x0 - 10) / (st.total ? 1.15 : 1)), "end",
               st.total ? " font-weight=\"bold\"" : "");
    // the value right of the bar and its whisker
    double right = std::max(a, b);
    if (std::isfinite(wh)) right = std::max(right, wh);
    s += text(right + 4, ym + 4, label_num(st.value / c.scale), "start");
  }
  s += fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" class=\"axis\"/>", px(val(0)),
                   px(y0), px(y1));
  s += axis_title_x(x0, x1, y1 + 32, c.value_label);
  if (!c.spread_label.empty())
    s += fmt::format(
        "<g class=\"legend\"><line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#333\"/>"
        "{3}</g>",
        px(x0), px(x0 + 20), px(h - 9), text(x0 + 24, h - 5, c.spread_label, "start"));
  s += "</svg>";
  return s;
}

std::string heatmap(const Heatmap& c) {
  const size_t nr = c.rows.size(), nc = c.cols.size();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& r : c.values)
    for (double v : r)
      if (!std::isnan(v)) lo = std::min(lo, v / c.scale), hi = std::max(hi, v / c.scale);
  if (!(lo <= hi)) lo = 0, hi = 1;
  if (!std::isnan(c.lo)) lo = c.lo / c.scale;
  if (!std::isnan(c.hi)) hi = c.hi / c.scale;
  const double cell_h = std::clamp(400.0 / static_cast<double>(std::max<size_t>(nr, 1)), 0.4, 22.0);
  const double h = std::max(kMarginTop + cell_h * static_cast<double>(nr) + kMarginBottom + 10,
                            kMarginTop + 170);  // the colour legend's height
  const double w = c.width, x0 = kMarginLeft, x1 = w - kLegend, y0 = kMarginTop;
  const double cell_w = (x1 - x0) / static_cast<double>(std::max<size_t>(nc, 1));
  std::string s = svg_open(w, h, "chart heatmap");
  const size_t row_every = std::max<size_t>(1, static_cast<size_t>(std::ceil(14 / cell_h)));
  const size_t col_every = std::max<size_t>(1, static_cast<size_t>(std::ceil(40 / cell_w)));
  for (size_t i = 0; i < nr; ++i) {
    const double y = y0 + cell_h * static_cast<double>(i);
    const std::string& rk = i < c.row_keys.size() ? c.row_keys[i] : c.rows[i];
    for (size_t j = 0; j < nc; ++j) {
      const double v =
          i < c.values.size() && j < c.values[i].size() ? c.values[i][j] : std::nan("");
      const double t = hi > lo ? (v / c.scale - lo) / (hi - lo) : 0.5;
      const std::string& ck = j < c.col_keys.size() ? c.col_keys[j] : c.cols[j];
      s += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" {}=\"{}\" {}=\"{}\" "
          "data-value=\"{}\"><title>{} {} · {} {}: {}</title></rect>",
          px(x0 + cell_w * static_cast<double>(j)), px(y), px(cell_w + 0.5), px(cell_h + 0.3),
          sequential(std::isnan(v) ? v : t), c.row_attr, esc(rk), c.col_attr, esc(ck), num(v),
          esc(c.row_label), esc(c.rows[i]), esc(c.col_label), esc(c.cols[j]),
          std::isnan(v) ? std::string("none") : label_num(v / c.scale));
    }
    if (i % row_every == 0) s += text(x0 - 4, y + std::min(cell_h, 12.0) / 2 + 4, c.rows[i], "end");
  }
  const double yb = y0 + cell_h * static_cast<double>(nr);
  for (size_t j = 0; j < nc; j += col_every)
    s += text(x0 + cell_w * (static_cast<double>(j) + 0.5), yb + 14, c.cols[j]);
  s += axis_title_x(x0, x1, h - 8, c.col_label);
  s += axis_title_y(y0, yb, c.row_label, h);
  // colour legend: a gradient of 10 steps, min and max
  const double lx = x1 + 16;
  for (int k = 0; k < 10; ++k)
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"{}\"/>", px(lx),
                     px(y0 + 20 + (9 - k) * 12), sequential(k / 9.0));
  s += label(lx, y0 + 10, c.value_label, chars_in(w - lx - 4), "start");
  const bool same = label_num(hi) == label_num(lo);  // close values: more digits
  s += text(lx + 18, y0 + 30,
            !c.hi_name.empty() ? c.hi_name
            : same             ? fmt::format("{:.7g}", hi)
                               : label_num(hi),
            "start");
  s += text(lx + 18, y0 + 20 + 9 * 12 + 10,
            !c.lo_name.empty() ? c.lo_name
            : same             ? fmt::format("{:.7g}", lo)
                               : label_num(lo),
            "start");
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"#dddddd\"/>", px(lx),
                   px(y0 + 150));
  s += text(lx + 18, y0 + 160, "none", "start");
  // the colour scale's ends, in the table's unit (a test checks they are anchored, not fitted)
  s += fmt::format("<g class=\"colour-scale\" data-lo=\"{}\" data-hi=\"{}\"></g>",
                   num(lo * c.scale), num(hi * c.scale));
  s += "</svg>";
  return s;
}

std::string box_plot(const BoxPlot& c) {
  struct Q {
    double mn, q1, md, q3, mx;
    size_t n;
  };
  std::vector<Q> qs;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const BoxGroup& g : c.groups) {
    std::vector<double> v;
    for (double x : g.values)
      if (!std::isnan(x)) v.push_back(x);
    std::sort(v.begin(), v.end());
    Q q{quantile(v, 0),    quantile(v, 0.25), quantile(v, 0.5),
        quantile(v, 0.75), quantile(v, 1),    v.size()};
    qs.push_back(q);
    for (double x : v) {
      const double d = x / c.scale;
      if (c.log && d <= 0) continue;
      lo = std::min(lo, d), hi = std::max(hi, d);
    }
  }
  if (!(lo <= hi)) lo = c.log ? 1 : 0, hi = c.log ? 10 : 1;
  std::vector<double> ticks;
  if (c.log) {
    lo = std::pow(10.0, std::floor(std::log10(lo)));
    hi = std::pow(10.0, std::ceil(std::log10(hi)));
    if (hi <= lo) hi = lo * 10;
    ticks = log_ticks(lo, hi);
  } else {
    std::tie(lo, hi) = range_of(std::min(lo, 0.0), hi);
    ticks = axis_ticks(lo, hi);
    lo = std::min(lo, ticks.front()), hi = std::max(hi, ticks.back());
  }
  const double row = 20, ml = 230;
  const double h = std::max(kMarginTop + row * static_cast<double>(c.groups.size()) + kMarginBottom,
                            static_cast<double>(c.legend.size()) * 16 + 24);
  const double w = c.width, x0 = ml, x1 = w - kLegend, y0 = kMarginTop;
  const Scale xs{lo, hi, x0, x1, c.log};
  std::string s = svg_open(w, h, "chart box");
  const double yb = y0 + row * static_cast<double>(c.groups.size());
  for (double t : ticks)
    s += fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" class=\"grid\"/>",
                     px(xs(t)), px(y0), px(yb)) +
         text(xs(t), yb + 14, label_num(t));
  for (size_t i = 0; i < c.groups.size(); ++i) {
    const BoxGroup& g = c.groups[i];
    const Q& q = qs[i];
    const double y = y0 + row * static_cast<double>(i), ym = y + row / 2;
    s += fmt::format(
        "<g class=\"boxplot\" data-group=\"{}\"{} data-n=\"{}\" data-min=\"{}\" data-q1=\"{}\" "
        "data-median=\"{}\" data-q3=\"{}\" data-max=\"{}\"><title>{}: n {}, min {}, q1 {}, "
        "median {}, q3 {}, max {}</title>",
        esc(g.label), g.attrs, q.n, num(q.mn), num(q.q1), num(q.md), num(q.q3), num(q.mx),
        esc(g.label), q.n, label_num(q.mn / c.scale), label_num(q.q1 / c.scale),
        label_num(q.md / c.scale), label_num(q.q3 / c.scale), label_num(q.mx / c.scale));
    if (q.n > 0) {
      // on a log axis, values at or below the axis start are drawn at the start
      const auto X = [&](double v) { return xs(c.log ? std::max(v / c.scale, lo) : v / c.scale); };
      const std::string col(palette(g.color));
      s += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"{3}\"/>",
                       px(X(q.mn)), px(X(q.mx)), px(ym), col);
      s += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" fill-opacity=\"0.5\" "
          "stroke=\"{}\"/>",
          px(X(q.q1)), px(y + 3), px(std::max(1.0, X(q.q3) - X(q.q1))), px(row - 6), col, col);
      s += fmt::format(
          "<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#222\" stroke-width=\"2\"/>",
          px(X(q.md)), px(y + 2), px(y + row - 2));
    }
    s += "</g>" + label(x0 - 4, ym + 4, g.label, chars_in(x0 - 10), "end");
  }
  s += axis_title_x(x0, x1, yb + kMarginBottom - 10, c.value_label + (c.log ? " (log scale)" : ""));
  if (!c.legend.empty()) {
    std::vector<std::string> cols;
    for (size_t i = 0; i < c.legend.size(); ++i) cols.emplace_back(palette(i));
    s += legend(x1 + 16, y0 + 4, c.legend, cols);
  }
  s += "</svg>";
  return s;
}

namespace {

// The range of a line chart's data in chart units (x: (x − x_origin) / x_scale; y: y / y_scale):
// lines, markers and bands; NaN y values left out; an empty side is [inf, −inf].
struct Extent {
  double xl, xh, yl, yh;
};
Extent data_extent(const Lines& c) {
  double xl = std::numeric_limits<double>::infinity(), xh = -xl, yl = xl, yh = -xl;
  auto see_x = [&](double x) {
    const double d = (x - c.x_origin) / c.x_scale;
    if (c.x_log && !(d > 0)) return;
    xl = std::min(xl, d), xh = std::max(xh, d);
  };
  auto see_y = [&](double y) {
    if (std::isnan(y)) return;
    yl = std::min(yl, y / c.y_scale), yh = std::max(yh, y / c.y_scale);
  };
  for (const Line& l : c.lines) {
    for (double x : l.x) see_x(x);
    for (double y : l.y) see_y(y);
  }
  for (const Marker& m : c.markers) see_x(m.x);
  for (const Band& b : c.bands) {
    for (double x : b.x) see_x(x);
    for (double y : b.lo) see_y(y);
    for (double y : b.hi) see_y(y);
  }
  return {xl, xh, yl, yh};
}

// The x ticks of a line chart over [xl, xh] (chart units): powers of 10 or 2 on a log axis; over
// iterations (whole x, no bands, no offset) whole numbers only, as many as there are up to 8 with
// a step of at least 1, so that each is exact (5 and 6, not 5 and 5.999...); else nice ticks.
std::vector<double> line_x_ticks(const Lines& c, double xl, double xh) {
  // as many as their labels fit side by side ("128 MiB" is 48 px, "1e+06" 35 px), up to 8
  const int fit = static_cast<int>((c.width - kLegend - kMarginLeft) / (c.x_bytes ? 60 : 44));
  if (c.x_log) return log_x_ticks(xl, xh, c.x_bytes, std::clamp(fit, 2, 8));
  bool integral_x = c.bands.empty() && c.x_origin == 0 && c.x_scale == 1;
  for (const Line& l : c.lines)
    for (double x : l.x) integral_x = integral_x && x == std::floor(x);
  if (!integral_x) return nice_ticks(xl, xh, 8);
  std::vector<double> xt = nice_ticks(xl, xh, static_cast<int>(std::clamp(xh - xl, 1.0, 8.0)));
  xt.erase(std::remove_if(xt.begin(), xt.end(),
                          [](double t) { return std::fabs(t - std::round(t)) > 1e-9; }),
           xt.end());
  return xt;
}

}  // namespace

std::string lines(const Lines& c) {
  auto [xl, xh, yl, yh] = data_extent(c);
  if (!(xl <= xh)) xl = 0, xh = 1;
  if (!(yl <= yh)) yl = 0, yh = 1;
  if (!std::isnan(c.y_min)) yl = c.y_min;
  if (!std::isnan(c.y_max)) yh = c.y_max;
  if (c.x_log) {
    if (!(xl > 0)) xl = 1, xh = 10;
    if (xl == xh) xl /= 2, xh *= 2;
  } else {
    std::tie(xl, xh) = range_of(xl, xh);
  }
  if (yl == yh) yl -= 1, yh += 1;
  const std::vector<double> yt = axis_ticks(yl, yh, !std::isnan(c.y_min), !std::isnan(c.y_max));
  const std::vector<double> xt = line_x_ticks(c, xl, xh);
  if (c.x_log) xl = std::min(xl, xt.front()), xh = std::max(xh, xt.back());
  yl = std::min(yl, yt.front()), yh = std::max(yh, yt.back());
  const double w = c.width, h = c.height, x0 = kMarginLeft, x1 = w - kLegend, y0 = kMarginTop,
               y1 = h - kMarginBottom;
  const Scale X{xl, xh, x0, x1, c.x_log}, Y{yl, yh, y1, y0};
  auto xp = [&](double x) { return X((x - c.x_origin) / c.x_scale); };
  auto yp = [&](double y) { return Y(y / c.y_scale); };
  std::string s = svg_open(w, h, "chart lines");
  for (double t : yt)
    s += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" class=\"grid\"/>", px(x0),
                     px(x1), px(Y(t))) +
         y_tick(x0, Y(t), y1, label_num(t));
  for (double t : xt) s += x_tick(X(t), y1 + 14, x1, c.x_bytes ? bytes_text(t) : label_num(t));
  for (const Marker& m : c.markers) {
    const double p = xp(m.x);
    if (p < x0 - 0.5 || p > x1 + 0.5) continue;
    s += fmt::format(
        "<line class=\"marker\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" data-x=\"{3}\"{4}/>",
        px(p), px(y0), px(y1), m.x_attr.empty() ? num(m.x) : m.x_attr, m.attrs);
    if (!m.label.empty())  // near the right edge: left of the line, clear of the legend
      s += p > x1 - 30 ? text(p - 2, y0 + 9, m.label, "end", " class=\"marker-label\"")
                       : text(p + 2, y0 + 9, m.label, "start", " class=\"marker-label\"");
  }
  std::vector<std::string> names, colors;
  for (const Band& b : c.bands) {
    const std::string col(palette(b.color));
    auto poly = [&](const std::vector<double>& up, const std::vector<double>& dn) {
      std::string pts;
      for (size_t i = 0; i < b.x.size(); ++i) pts += px(xp(b.x[i])) + "," + px(yp(up[i])) + " ";
      for (size_t i = b.x.size(); i-- > 0;) pts += px(xp(b.x[i])) + "," + px(yp(dn[i])) + " ";
      return pts;
    };
    auto list = [](const std::vector<double>& v) {
      std::string o;
      for (size_t i = 0; i < v.size(); ++i) o += (i ? "," : "") + num(v[i]);
      return o;
    };
    s += fmt::format(
        "<g class=\"band\" data-name=\"{}\"{} data-x=\"{}\" data-min=\"{}\" data-q1=\"{}\" "
        "data-median=\"{}\" data-q3=\"{}\" data-max=\"{}\">",
        esc(b.name), b.attrs, list(b.x), list(b.lo), list(b.q1), list(b.med), list(b.q3),
        list(b.hi));
    s += fmt::format("<polygon points=\"{}\" fill=\"{}\" fill-opacity=\"0.15\"/>", poly(b.hi, b.lo),
                     col);
    s += fmt::format("<polygon points=\"{}\" fill=\"{}\" fill-opacity=\"0.35\"/>", poly(b.q3, b.q1),
                     col);
    std::string pts;
    for (size_t i = 0; i < b.x.size(); ++i) pts += px(xp(b.x[i])) + "," + px(yp(b.med[i])) + " ";
    s += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>",
                     pts, col);
    s += "</g>";
    names.push_back(b.name.empty() ? "median" : b.name);
    colors.push_back(col);
    names.emplace_back("p25–p75");
    colors.push_back(col + "59");  // the band's opacity (0.35) as the colour's alpha
    names.emplace_back("min–max");
    colors.push_back(col + "26");  // 0.15
  }
  for (const Line& l : c.lines) {
    std::string pts, xs, ys;
    double last_y = std::nan("");
    for (size_t i = 0; i < l.x.size() && i < l.y.size(); ++i) {
      xs += (i ? "," : "") + (i < l.xi.size() ? std::to_string(l.xi[i]) : num(l.x[i]));
      ys += (i ? "," : "") + num(l.y[i]);
      if (std::isnan(l.y[i]) || (c.x_log && !((l.x[i] - c.x_origin) / c.x_scale > 0))) continue;
      if (l.step && !std::isnan(last_y)) pts += px(xp(l.x[i])) + "," + px(yp(last_y)) + " ";
      pts += px(xp(l.x[i])) + "," + px(yp(l.y[i])) + " ";
      last_y = l.y[i];
    }
    const std::string col(palette(l.color));
    if (!l.step && l.x.size() <= 12)  // few points: mark each
      for (size_t i = 0; i < l.x.size() && i < l.y.size(); ++i)
        if (!std::isnan(l.y[i]) && (!c.x_log || (l.x[i] - c.x_origin) / c.x_scale > 0))
          s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{}\"/>", px(xp(l.x[i])),
                           px(yp(l.y[i])), col);
    s += fmt::format(
        "<polyline class=\"series\" points=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"1.3\" data-name=\"{}\"{} data-x=\"{}\" data-y=\"{}\"><title>{}</title>"
        "</polyline>",
        pts, col, esc(l.name), l.attrs, xs, ys, esc(l.name));
    if (std::find(names.begin(), names.end(), l.name) == names.end() && names.size() < 16) {
      names.push_back(l.name);
      colors.push_back(col);
    }
  }
  s += fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" class=\"axis\"/>", px(x0),
                   px(y0), px(y1));
  s += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" class=\"axis\"/>", px(x0),
                   px(x1), px(y1));
  s += axis_title_x(x0, x1, h - 10, c.x_label);
  s += axis_title_y(y0, y1, c.y_label, h);
  s += legend(x1 + 16, y0 + 4, names, colors);
  s += "</svg>";
  return s;
}

namespace {

// Powers of ten covering [lo, hi] (both > 0), at least a decade apart.
std::pair<double, double> decades(double lo, double hi) {
  lo = std::pow(10.0, std::floor(std::log10(lo)));
  hi = std::pow(10.0, std::ceil(std::log10(hi)));
  if (hi <= lo) hi = lo * 10;
  return {lo, hi};
}

}  // namespace

std::string roofline(const Roofline& c) {
  double xl = std::numeric_limits<double>::infinity(), xh = -xl, yl = xl, yh = -xl, wmax = 0;
  for (const RoofPoint& p : c.points) {
    if (!(p.x > 0) || !(p.y > 0)) continue;
    xl = std::min(xl, p.x), xh = std::max(xh, p.x), yl = std::min(yl, p.y), yh = std::max(yh, p.y);
    wmax = std::max(wmax, p.weight);
  }
  const bool roofs = !c.ceilings.empty() && c.bandwidth > 0;
  if (roofs)
    for (const Ceiling& k : c.ceilings) {
      yh = std::max(yh, k.peak);
      xh = std::max(xh, k.peak / c.bandwidth * 4);  // the ridge point and beyond
      xl = std::min(xl, k.peak / c.bandwidth / 100);
    }
  if (!(xl <= xh)) xl = 0.1, xh = 100;
  if (!(yl <= yh)) yl = 0.01, yh = 100;
  std::tie(xl, xh) = decades(xl, xh);
  std::tie(yl, yh) = decades(yl, yh);
  const double w = c.width, h = c.height, x0 = kMarginLeft, x1 = w - kLegend, y0 = kMarginTop,
               y1 = h - kMarginBottom;
  const Scale X{xl, xh, x0, x1, true}, Y{yl, yh, y1, y0, true};
  std::string s = svg_open(w, h, "chart roofline");
  for (double t : log_ticks(yl, yh))
    s += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" class=\"grid\"/>", px(x0),
                     px(x1), px(Y(t))) +
         y_tick(x0, Y(t), y1, label_num(t));
  for (double t : log_ticks(xl, xh))
    s += fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" class=\"grid\"/>", px(X(t)),
                     px(y0), px(y1)) +
         text(X(t), y1 + 14, label_num(t));
  s += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" class=\"axis\"/>", px(x0),
      px(y0), px(x1 - x0), px(y1 - y0));
  if (roofs)
    for (const Ceiling& k : c.ceilings) {
      // y = x × bandwidth up to the ridge, then the peak; clipped to the axes.
      const double ridge = k.peak / c.bandwidth;
      const double xa = std::max(xl, yl / c.bandwidth);
      std::string pts = fmt::format("{},{} ", px(X(xa)), px(Y(std::min(k.peak, xa * c.bandwidth))));
      if (ridge > xa && ridge < xh) pts += fmt::format("{},{} ", px(X(ridge)), px(Y(k.peak)));
      pts += fmt::format("{},{}", px(X(xh)), px(Y(k.peak)));
      s += fmt::format(
          "<g class=\"ceiling\" data-peak-tflops=\"{}\" data-bandwidth-tbs=\"{}\"><polyline "
          "points=\"{}\" fill=\"none\" stroke=\"#444\" stroke-width=\"1.5\"/>{}</g>",
          num(k.peak), num(c.bandwidth), pts,
          text(x1 - 4, Y(k.peak) - 4, fmt::format("{} {} TFLOP/s", k.name, label_num(k.peak)),
               "end"));
    }
  // largest marks first, so that small ones stay visible on top
  std::vector<size_t> order(c.points.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&c](size_t a, size_t b) { return c.points[a].weight > c.points[b].weight; });
  for (size_t i : order) {
    const RoofPoint& p = c.points[i];
    if (!(p.x > 0) || !(p.y > 0)) continue;
    const double r = 3 + 14 * std::sqrt(wmax > 0 ? p.weight / wmax : 0);
    s += fmt::format(
        "<circle class=\"point\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" fill-opacity=\"0.55\" "
        "stroke=\"{}\"{}><title>{}</title></circle>",
        px(X(p.x)), px(Y(p.y)), px(r), palette(p.color), palette(p.color), p.attrs, esc(p.label));
  }
  s += axis_title_x(x0, x1, h - 10, c.x_label + " (log scale)");
  s += axis_title_y(y0, y1, c.y_label + " (log)", h);
  if (!c.legend.empty()) {
    std::vector<std::string> cols;
    for (size_t i = 0; i < c.legend.size(); ++i) cols.emplace_back(palette(i));
    s += legend(x1 + 16, y0 + 4, c.legend, cols);
  }
  s += "</svg>";
  return s;
}

std::string violins(const Violins& c) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const ViolinPanel& p : c.panels)
    for (const Violin& v : p.violins)
      for (size_t k = 0; k < v.at.size(); ++k)
        if (v.weight[k] > 0 && v.at[k] > 0)
          lo = std::min(lo, v.at[k] / c.scale), hi = std::max(hi, v.at[k] / c.scale);
  if (!(lo <= hi)) lo = 1, hi = 10;
  std::tie(lo, hi) = decades(lo, hi);
  const double lgl = std::log10(lo), lgh = std::log10(hi);
  size_t cols = 1;
  for (const ViolinPanel& p : c.panels) cols = std::max(cols, p.violins.size());
  const double w = c.width, x0 = kMarginLeft, x1 = w - 40, ph = c.panel_height, gap = 26;
  const double h = kMarginTop + static_cast<double>(c.panels.size()) * (ph + gap) + kMarginBottom;
  const double slot = (x1 - x0) / static_cast<double>(cols);
  std::string s = svg_open(w, h, "chart violins");
  constexpr int kGrid = 96;
  for (size_t pi = 0; pi < c.panels.size(); ++pi) {
    const ViolinPanel& p = c.panels[pi];
    const double py0 = kMarginTop + static_cast<double>(pi) * (ph + gap) + 14, py1 = py0 + ph - 14;
    const Scale Y{lo, hi, py1, py0, true};
    s += fmt::format("<g class=\"violin-panel\" data-class=\"{}\"{}>", esc(p.name), p.attrs);
    s += text(x0, py0 - 4, p.name, "start", " class=\"axis-title\"");
    for (double t : log_ticks(lo, hi))
      s += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" class=\"grid\"/>", px(x0),
                       px(x1), px(Y(t))) +
           y_tick(x0, Y(t), py1, label_num(t));
    const std::string col(palette(p.color));
    for (size_t vi = 0; vi < p.violins.size(); ++vi) {
      const Violin& v = p.violins[vi];
      const double cx = x0 + slot * (static_cast<double>(vi) + 0.5), half = slot * 0.42;
      // log10 points, their weights; Silverman's bandwidth (at least c.bandwidth decades)
      double n = 0, mean = 0;
      for (size_t k = 0; k < v.at.size(); ++k)
        if (v.at[k] > 0) n += v.weight[k], mean += v.weight[k] * std::log10(v.at[k] / c.scale);
      std::string path;
      if (n > 0) {
        mean /= n;
        double var = 0;
        for (size_t k = 0; k < v.at.size(); ++k)
          if (v.at[k] > 0) var += v.weight[k] * std::pow(std::log10(v.at[k] / c.scale) - mean, 2);
        const double sd = std::sqrt(var / n);
        const double bw = std::max(c.bandwidth, 1.06 * sd * std::pow(n, -0.2));
        std::array<double, kGrid + 1> dens{};
        double dmax = 0;
        for (int g = 0; g <= kGrid; ++g) {
          const double y = lgl + (lgh - lgl) * g / kGrid;
          double d = 0;
          for (size_t k = 0; k < v.at.size(); ++k)
            if (v.at[k] > 0) {
              const double z = (y - std::log10(v.at[k] / c.scale)) / bw;
              d += v.weight[k] * std::exp(-0.5 * z * z);
            }
          dens[static_cast<size_t>(g)] = d;
          dmax = std::max(dmax, d);
        }
        // the tails drawn down to 0.1% of the peak density, not as a hairline over the axis
        int g0 = 0, g1 = kGrid;
        while (g0 < kGrid && dens[static_cast<size_t>(g0)] < dmax * 1e-3) ++g0;
        while (g1 > g0 && dens[static_cast<size_t>(g1)] < dmax * 1e-3) --g1;
        std::string right, left;
        for (int g = g0; g <= g1; ++g) {
          const double y = Y(std::pow(10.0, lgl + (lgh - lgl) * g / kGrid));
          const double dx = dmax > 0 ? half * dens[static_cast<size_t>(g)] / dmax : 0;
          right += fmt::format("{}{},{}", g > g0 ? " L" : "M", px(cx + dx), px(y));
          left = fmt::format(" L{},{}", px(cx - dx), px(y)) + left;
        }
        path = right + left + " Z";
      }
      s += fmt::format(
          "<g class=\"violin\" data-category=\"{}\"{}><title>{} · {}: {} values</title>",
          esc(v.category), v.attrs, esc(p.name), esc(v.category), num(n));
      if (!path.empty())
        s += fmt::format(
            "<path d=\"{}\" fill=\"{}\" fill-opacity=\"0.55\" stroke=\"{}\" stroke-width=\"1\"/>",
            path, col, col);
      if (!std::isnan(v.median) && v.median > 0)
        s += fmt::format(
            "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#222\" "
            "stroke-width=\"2\"/>",
            px(cx - half * 0.35), px(cx + half * 0.35),
            px(Y(std::clamp(v.median / c.scale, lo, hi))));
      s += "</g>";
      if (pi + 1 == c.panels.size() || p.violins.size() <= 16)
        s += label(cx, py1 + 12, v.category, 12);
    }
    s += "</g>";
  }
  s += axis_title_y(kMarginTop, h - kMarginBottom, c.value_label + " (log scale)", h);
  s += "</svg>";
  return s;
}

}  // namespace chopper::html

namespace chopper::html {

std::string bytes_text(double b) {
  static constexpr std::array<const char*, 5> k = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t u = 0;
  double v = b;
  while (std::fabs(v) >= 1024 && u + 1 < k.size()) v /= 1024, ++u;
  return label_num(v) + " " + k[u];
}

std::string time_heatmap(const TimeHeatmap& c) {
  const size_t nr = c.rows.size(), nb = std::max<size_t>(c.bins, 1);
  size_t groups = 0;
  for (size_t i = 0; i < nr; ++i) groups += i == 0 || c.rows[i].group != c.rows[i - 1].group;
  const double gap = nr > 1 && groups > 1 ? 3 : 0;
  const double cell_h = std::clamp(420.0 / static_cast<double>(std::max<size_t>(nr, 1)), 3.0, 22.0);
  const double y0 = kMarginTop + 12;  // room for the marker labels
  const double plot_h =
      cell_h * static_cast<double>(nr) + gap * static_cast<double>(groups > 0 ? groups - 1 : 0);
  const double h = std::max(y0 + plot_h + kMarginBottom + 10, y0 + 200.0);
  const double w = c.width, x0 = kMarginLeft, x1 = w - kLegend;
  const double cell_w = (x1 - x0) / static_cast<double>(nb);
  const double span_ns = static_cast<double>(c.bin_ns) * static_cast<double>(nb);
  // x of a time given in ns since origin_ns
  const double t0_rel = static_cast<double>(c.t0_ns - c.origin_ns);
  auto xpos = [&](double rel_ns) { return x0 + (rel_ns - t0_rel) / span_ns * (x1 - x0); };
  const double range = c.hi > c.lo ? c.hi - c.lo : 1;
  std::string s = svg_open(w, h, "chart heatmap time-heatmap");
  s += "<g class=\"time-grid\"" + c.attrs + "></g>";
  // grey where a row has no sample in a bin (those cells are not drawn)
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#dddddd\"/>", px(x0),
                   px(y0), px(x1 - x0), px(plot_h));
  const size_t row_every = std::max<size_t>(1, static_cast<size_t>(std::ceil(14 / cell_h)));
  // every row's cells share their columns' x: formatted once a column, not once a cell
  std::vector<std::string> xs(nb);
  for (size_t k = 0; k < nb; ++k) xs[k] = px(x0 + cell_w * static_cast<double>(k));
  const double flag_h = std::clamp(cell_h * 0.2, 1.0, 3.0);  // a thin underline: the colour shows
  double y = y0;
  for (size_t i = 0; i < nr; ++i) {
    const TimeRow& r = c.rows[i];
    if (i > 0 && r.group != c.rows[i - 1].group) y += gap;
    const std::string row_title = esc(r.label);
    s += fmt::format("<g class=\"hrow\"{}><title>{}</title>", r.attrs, row_title);
    // A cell per bin with a sample (thousands a figure at many GPUs): formatted in place, what
    // the row's cells share formatted once.
    const std::string cell_yhw = fmt::format("y=\"{}\" width=\"{}\" height=\"{}\"", px(y),
                                             px(cell_w + 0.5), px(cell_h + 0.3));
    for (size_t k = 0; k < nb && k < r.values.size(); ++k) {
      const double v = r.values[k];
      if (std::isnan(v)) continue;                    // the grey background shows through
      if (k < r.at_rank.size() && r.at_rank[k] >= 0)  // a row of several GPUs: whose value
        fmt::format_to(
            std::back_inserter(s),
            FMT_COMPILE("<rect x=\"{}\" {} fill=\"{}\" data-bin=\"{}\" data-value=\"{}\" "
                        "data-at-rank=\"{}\"><title>{}: {} (rank {})</title></rect>"),
            xs[k], cell_yhw, sequential((v - c.lo) / range), k, num(v), r.at_rank[k], row_title,
            label_num(v / c.scale), r.at_rank[k]);
      else
        fmt::format_to(
            std::back_inserter(s),
            FMT_COMPILE("<rect x=\"{}\" {} fill=\"{}\" data-bin=\"{}\" data-value=\"{}\">"
                        "<title>{}: {}</title></rect>"),
            xs[k], cell_yhw, sequential((v - c.lo) / range), k, num(v), row_title,
            label_num(v / c.scale));
    }
    const std::string flag_yhw =
        fmt::format("y=\"{}\" width=\"{}\" height=\"{}\"", px(y + cell_h - flag_h),
                    px(std::max(cell_w, 0.8)), px(flag_h));
    for (size_t k = 0; k < nb && k < r.flags.size(); ++k)
      if (!r.flags[k].empty()) {
        const std::string reasons = esc(r.flags[k]);
        fmt::format_to(
            std::back_inserter(s),
            FMT_COMPILE("<rect class=\"flag\" x=\"{}\" {} fill=\"#111\" data-bin=\"{}\" "
                        "data-reasons=\"{}\"{}><title>{}: {}</title></rect>"),
            xs[k], flag_yhw, k, reasons,
            k < r.flag_attrs.size() ? std::string_view(r.flag_attrs[k]) : std::string_view(),
            row_title, reasons);
      }
    s += "</g>";
    if (i % row_every == 0) s += text(x0 - 4, y + std::min(cell_h, 11.0) / 2 + 4, r.label, "end");
    y += cell_h;
  }
  const double yb = y;
  for (const Marker& m : c.markers) {
    const double p = xpos(m.x);
    if (p < x0 - 0.5 || p > x1 + 0.5) continue;
    s += fmt::format(
        "<line class=\"marker\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" "
        "data-x=\"{3}\"{4}/>",
        px(p), px(y0), px(yb), m.x_attr.empty() ? num(m.x) : m.x_attr, m.attrs);
    if (!m.label.empty())  // near the right edge: left of the line, clear of the legend
      s += p > x1 - 30 ? text(p - 2, y0 - 3, m.label, "end", " class=\"marker-label\"")
                       : text(p + 2, y0 - 3, m.label, "start", " class=\"marker-label\"");
  }
  // time ticks, seconds since the origin
  const double tl = t0_rel / 1e9, th = (t0_rel + span_ns) / 1e9;
  for (double t : nice_ticks(tl, th, 8))
    if (t >= tl && t <= th) s += text(xpos(t * 1e9), yb + 14, label_num(t));
  s += axis_title_x(x0, x1, h - 8, c.x_label);
  s += axis_title_y(y0, yb, c.row_label, h);
  // colour legend: the anchors at the ends, 10 steps
  const double lx = x1 + 16;
  s += "<g class=\"legend\">" + label(lx, y0 + 2, c.value_label, chars_in(w - lx - 4), "start");
  for (int k = 0; k < 10; ++k)
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"{}\"/>", px(lx),
                     px(y0 + 12 + (9 - k) * 12), sequential(k / 9.0));
  s += text(lx + 18, y0 + 22, c.hi_name, "start", " class=\"anchor-hi\"");
  s += text(lx + 18, y0 + 12 + 9 * 12 + 10, c.lo_name, "start", " class=\"anchor-lo\"");
  double ly = y0 + 12 + 10 * 12 + 8;
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"#dddddd\"/>", px(lx),
                   px(ly));
  s += text(lx + 18, ly + 10, "no sample", "start");
  if (!c.flag_label.empty()) {
    ly += 16;
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"5\" fill=\"#111\"/>", px(lx),
                     px(ly + 7));
    s += label(lx + 18, ly + 10, c.flag_label, chars_in(w - lx - 22), "start");
  }
  s += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" class=\"marker\"/>", px(lx),
                   px(lx + 14), px(ly + 22), px(ly + 22));
  s += text(lx + 18, ly + 26, "iteration start", "start");
  s += "</g>";
  s += "</svg>";
  return s;
}

}  // namespace chopper::html
