#pragma once
// Inline SVG charts for the HTML report (report/html/report_html.hpp), drawn by chopper: no
// script library, no font, no network. Each chart takes values in the unit of the table they come
// from (ns, J, W, ...) and a scale for display (ns → ms: 1e6); every drawn mark carries its raw
// value in a data attribute (data-value, data-x/data-y lists, box quantiles), so a test can compare
// what is drawn with the tables. Presentation only: the numbers are the analyses'.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace chopper::html {

// HTML/XML text escaping (&, <, >, ", ').
std::string esc(std::string_view s);
// The shortest text that reads back as the same double (Python's repr, fmt's {}); integers
// without a fraction. NaN = "".
std::string num(double v);
// A tick or tooltip label: up to 4 significant digits, no exponent for 1e-3..1e9; zero "0".
std::string label_num(double v);
// `v` with `decimals` places ("{:.3f}"), with a leading "+" on positives when `plus` (a signed
// difference); a value that rounds to zero prints unsigned, "0.000" (never "-0.000", "+0.000").
// Every fixed-point number of the report (ms_text, the differences) goes through it.
std::string fixed(double v, int decimals, bool plus = false);
// "Nice" ticks (1, 2, 5 × 10^k) covering [lo, hi], about `n` of them.
std::vector<double> nice_ticks(double lo, double hi, int n = 5);
// Categorical palette colour i (Tableau 10, cycled).
std::string_view palette(size_t i);
// A sequential colour (viridis-like) for t in [0, 1].
std::string sequential(double t);
// A diverging colour for a signed difference, t in [-1, 1]: blue (negative: less, faster) through
// light grey at 0 to red (positive: more, slower).
std::string diverging(double t);

// Stacked bars (one bar per category; series stack on it; negatives stack below zero).
struct StackedBars {
  std::string value_label;     // axis title with unit, e.g. "time (ms)"
  std::string category_label;  // e.g. "rank / iteration"
  double scale = 1;            // displayed = value / scale
  std::vector<std::string> categories;
  std::vector<std::string> cat_attrs;      // extra attributes per category (` data-rank="3"`)
  std::vector<std::string> series;         // keys (data-series)
  std::vector<std::string> series_names;   // optional, parallel: legend and tooltip names (human,
                                           // with unit where the series differ in it); default keys
  std::vector<std::string> series_colors;  // optional, parallel to series
  std::vector<std::vector<double>> values;  // [category][series], in the table's unit; NaN = none
  bool horizontal = false;                  // bars along x, categories down the y axis
  bool symmetric = false;  // value axis −m..m (a signed difference: 0 in the middle)
  double width = 900;
};
// The legend lists the series as they are drawn: for vertical bars the top of the stack first.
std::string stacked_bars(const StackedBars& c);

// A waterfall (cascade): additive parts as floating horizontal bars, each starting where the parts
// above it ended (a negative part steps back), then the total as a bar from zero; each part's
// spread (lo..hi of that part, e.g. over iterations) as a whisker at the bar's end.
struct WaterfallStep {
  std::string name;
  std::string attrs;  // extra attributes (` data-part="theoretical"`)
  std::string color;
  double value = 0, lo = 0, hi = 0;  // in the table's unit
  bool total = false;                // drawn from zero (the sum of the parts above)
};
struct Waterfall {
  std::string value_label;   // with unit
  double scale = 1;          // displayed = value / scale
  std::string spread_label;  // legend text of the whiskers ("min–max over iterations")
  std::vector<WaterfallStep> steps;
  double width = 900;
};
std::string waterfall(const Waterfall& c);

// A heatmap: rows × columns of values; NaN = missing (grey).
struct Heatmap {
  std::string row_label, col_label, value_label;  // value_label with unit
  double scale = 1;
  std::vector<std::string> rows, cols;                       // labels
  std::string row_attr = "data-row", col_attr = "data-col";  // attribute names for the keys
  std::vector<std::string> row_keys, col_keys;  // attribute values (default: the labels)
  std::vector<std::vector<double>> values;      // [row][col]
  double width = 900;
  // Fixed ends of the colour scale, in the table's unit (NaN = the data's least or largest), and
  // what they are ("" = the value), for a scale anchored at meaningful values (0, a limit).
  double lo = std::numeric_limits<double>::quiet_NaN();
  double hi = std::numeric_limits<double>::quiet_NaN();
  std::string lo_name, hi_name;
};
std::string heatmap(const Heatmap& c);

// Horizontal box plots (whiskers min..max, box q1..q3, median), one row per group.
struct BoxGroup {
  std::string label;
  std::string attrs;  // extra attributes (` data-phase="forward"`)
  size_t color = 0;   // palette index
  std::vector<double> values;
};
struct BoxPlot {
  std::string value_label;
  double scale = 1;
  bool log = false;  // log10 value axis (values ≤ 0 are left out of the drawing, not the counts)
  std::vector<BoxGroup> groups;
  std::vector<std::string> legend;  // palette-indexed legend names
  double width = 900;
};
std::string box_plot(const BoxPlot& c);
// Quantile q of sorted values, linear between order statistics (numpy's default, R type 7).
double quantile(const std::vector<double>& sorted, double q);

// Lines over a shared x axis, with optional vertical markers and quantile bands.
struct Line {
  std::string name;
  std::string attrs;
  size_t color = 0;
  std::vector<double> x, y;  // in the table's units
  bool step = false;         // a step function (CDF)
  std::vector<int64_t> xi;   // exact x for data-x (timestamps beyond 2^53), else x is written
};
struct Band {  // min..max and q1..q3 shaded, median drawn, over x
  std::string name;
  std::string attrs;
  size_t color = 0;
  std::vector<double> x, lo, q1, med, q3, hi;
};
struct Marker {
  double x = 0;
  std::string label;
  std::string attrs;
  std::string x_attr;  // data-x (default: x)
};
struct Lines {
  std::string x_label, y_label;
  double x_scale = 1, y_scale = 1, x_origin = 0;  // displayed x = (x − x_origin) / x_scale
  std::vector<Line> lines;
  std::vector<Band> bands;
  std::vector<Marker> markers;
  double y_min = std::numeric_limits<double>::quiet_NaN();  // fixed axis range (NaN = data)
  double y_max = std::numeric_limits<double>::quiet_NaN();
  double width = 900, height = 280;
  bool x_log = false;    // log10 x axis (x ≤ 0 left out of the drawing)
  bool x_bytes = false;  // x tick labels as bytes (B, KiB, MiB, GiB), at powers of two
};
std::string lines(const Lines& c);

// A roofline (log-log): points at (arithmetic intensity, achieved rate) sized by time; ceilings
// min(peak, intensity × bandwidth) for each peak (none when the device is unknown).
struct RoofPoint {
  double x = 0, y = 0;  // FLOP/B, TFLOP/s
  double weight = 0;    // the mark's area follows it (time)
  std::string label;    // tooltip
  std::string attrs;    // data attributes
  size_t color = 0;
};
struct Ceiling {
  std::string name;
  double peak = 0;  // TFLOP/s
};
struct Roofline {
  std::string x_label, y_label;
  std::vector<RoofPoint> points;
  std::vector<Ceiling> ceilings;
  double bandwidth = std::numeric_limits<double>::quiet_NaN();  // TB/s (NaN = no ceilings)
  std::vector<std::string> legend;                              // palette-indexed
  double width = 900, height = 420;
};
std::string roofline(const Roofline& c);

// Violins: small multiples, one panel per class, a violin per category (rank or rank group) in
// it, on a log value axis. Each violin is a Gaussian kernel density estimate over log10 of the
// values, from weighted points (bin centres and their counts), drawn mirrored.
struct Violin {
  std::string category;  // x label
  std::string attrs;
  std::vector<double> at, weight;  // values (table unit) and their weights
  double median = std::numeric_limits<double>::quiet_NaN();  // marked (table unit)
};
struct ViolinPanel {
  std::string name;
  std::string attrs;
  size_t color = 0;
  std::vector<Violin> violins;
};
struct Violins {
  std::string value_label;  // with unit
  double scale = 1;         // displayed = value / scale
  double bandwidth = 0.05;  // the smallest kernel bandwidth, in decades
  std::vector<ViolinPanel> panels;
  double width = 900, panel_height = 150;
};
std::string violins(const Violins& c);

}  // namespace chopper::html

namespace chopper::html {

// Bytes in binary units, up to 4 significant digits: "512 B", "4 KiB", "1.5 MiB", "2 GiB".
std::string bytes_text(double bytes);

// A heatmap of rows (GPUs) over time bins: each cell the mean of a row's samples in the bin
// (NaN = no sample, grey); the colour scale is fixed at [lo, hi] (anchors such as 0 and the
// device's limit, never fitted to the data), values beyond it drawn at its ends. Rows of one
// group (a node) are drawn together, a gap between groups; a flagged cell (non-empty text: why)
// gets a thin dark bar along its bottom; markers (iteration boundaries) are vertical lines.
struct TimeRow {
  std::string label;
  std::string attrs;                    // ` data-rank="3"`
  int64_t group = 0;                    // node
  std::vector<double> values;           // [bin], in the table's unit
  std::vector<std::string> flags;       // [bin] ("" = none), e.g. "sw_power_cap"
  std::vector<std::string> flag_attrs;  // [bin] extra attributes of the flag mark
  std::vector<int64_t> at_rank;  // [bin] a row of several GPUs: the GPU its value is from (−1)
};
struct TimeHeatmap {
  std::string row_label, value_label;  // value_label with unit
  std::string x_label;
  double scale = 1;               // displayed = value / scale
  double lo = 0, hi = 1;          // colour anchors, in the table's unit
  std::string lo_name, hi_name;   // what each anchor is ("0 W", "TDP 700 W")
  int64_t t0_ns = 0, bin_ns = 1;  // bin k covers [t0 + k·bin, t0 + (k+1)·bin)
  size_t bins = 0;
  int64_t origin_ns = 0;  // time labels: (t − origin) in seconds
  std::vector<TimeRow> rows;
  std::vector<Marker> markers;  // x: ns since origin_ns
  std::string flag_label;       // legend text of the flag mark ("" = no flags)
  std::string attrs;            // of an empty <g class="time-grid"> (the grid's keys)
  double width = 900;
};
std::string time_heatmap(const TimeHeatmap& c);

}  // namespace chopper::html
