// The HTML report's SVG primitives and sections: every drawn mark carries the value it was given
// (data attributes), the document is self-contained (CSP, no external reference).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "chopper/report/compare_report.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/html/html_common.hpp"
#include "chopper/report/html/report_html.hpp"
#include "chopper/report/html/svg.hpp"
#include "chopper/report/rank_tables.hpp"

namespace chopper::html {
namespace {

// Every value of attribute `name` in document order.
std::vector<std::string> attrs(const std::string& s, const std::string& name) {
  std::vector<std::string> out;
  const std::regex re(" " + name + "=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

TEST(ReportSvg, NumRoundTrips) {
  for (double v : {0.0, 1.0, -3.0, 0.1, 1.0 / 3.0, 123456789012.0, 2.5e-7, 6.02e23})
    EXPECT_EQ(std::stod(num(v)), v) << num(v);
  EXPECT_EQ(num(42.0), "42");
  EXPECT_EQ(num(std::nan("")), "");
  EXPECT_EQ(esc("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
}

TEST(ReportSvg, NiceTicksCoverTheRange) {
  const std::vector<double> t = nice_ticks(0, 9.3);
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.front(), 0);
  EXPECT_GE(t.back(), 8);
  for (size_t i = 1; i < t.size(); ++i) EXPECT_NEAR(t[i] - t[i - 1], 2.0, 1e-12);
}

TEST(ReportSvg, StackedBarsCarryTheirValues) {
  StackedBars c;
  c.value_label = "time (ms)";
  c.category_label = "iteration";
  c.scale = 1e6;
  c.categories = {"5", "6"};
  c.cat_attrs = {" data-iteration=\"5\"", " data-iteration=\"6\""};
  c.series = {"compute", "idle", "residual"};
  c.values = {{12345678, 0, -2000}, {7, 1e6, std::nan("")}};
  const std::string s = stacked_bars(c);
  // zero and NaN parts are not drawn; the others carry their raw value
  EXPECT_EQ(attrs(s, "data-value"),
            (std::vector<std::string>{"12345678", "-2000", "7", "1000000"}));
  EXPECT_EQ(attrs(s, "data-series"),
            (std::vector<std::string>{"compute", "residual", "compute", "idle"}));
  EXPECT_EQ(attrs(s, "data-iteration"), (std::vector<std::string>{"5", "6"}));
  EXPECT_NE(s.find(">time (ms)<"), std::string::npos);  // the axis title with its unit
  EXPECT_NE(s.find(">iteration<"), std::string::npos);
}

// A cascade of 3 ms, −1 ms (a step back) and 2 ms parts ends at 4 ms: each part's bar starts where
// the ones above it ended (0, 3, 2 ms), the total is drawn from 0, and every bar keeps its value
// and spread (min..max) in its data attributes.
TEST(ReportSvg, WaterfallBarsStartWhereThePartsAboveEnded) {
  Waterfall c;
  c.scale = 1e6;
  c.value_label = "time (ms)";
  c.steps = {{"a", " data-part=\"a\"", "#111", 3e6, 2e6, 4e6, false},
             {"b", " data-part=\"b\"", "#222", -1e6, -2e6, 0, false},
             {"c", " data-part=\"c\"", "#333", 2e6, 2e6, 2e6, false},
             {"total", " data-part=\"total\"", "#444", 4e6, 3e6, 5e6, true}};
  const std::string s = waterfall(c);
  EXPECT_EQ(attrs(s, "data-part"), (std::vector<std::string>{"a", "b", "c", "total"}));
  EXPECT_EQ(attrs(s, "data-start"), (std::vector<std::string>{"0", "3000000", "2000000", "0"}));
  EXPECT_EQ(attrs(s, "data-value"),
            (std::vector<std::string>{"3000000", "-1000000", "2000000", "4000000"}));
  EXPECT_EQ(attrs(s, "data-min"),
            (std::vector<std::string>{"2000000", "-2000000", "2000000", "3000000"}));
  EXPECT_NE(s.find("class=\"axis-title\""), std::string::npos);
  // a whisker for each part whose spread is not a point (a, b, total; not c)
  size_t whiskers = 0;
  for (size_t at = 0; (at = s.find("class=\"whisker\"", at)) != std::string::npos; ++at) ++whiskers;
  EXPECT_EQ(whiskers, 3U);
}

TEST(ReportSvg, HeatmapHasOneCellPerValue) {
  Heatmap h;
  h.rows = {"0", "1"};
  h.cols = {"5", "6", "7"};
  h.row_attr = "data-rank";
  h.col_attr = "data-iteration";
  h.value_label = "lead (ms)";
  h.values = {{1, 2, 3}, {4, std::nan(""), 6.5}};
  const std::string s = heatmap(h);
  EXPECT_EQ(attrs(s, "data-value"), (std::vector<std::string>{"1", "2", "3", "4", "", "6.5"}));
  EXPECT_EQ(attrs(s, "data-rank"), (std::vector<std::string>{"0", "0", "0", "1", "1", "1"}));
}

TEST(ReportSvg, BoxPlotQuantilesAreNumpys) {
  BoxPlot b;
  b.value_label = "latency (µs)";
  b.groups = {{"all_gather", "", 0, {5, 1, 4, 2, 3}}, {"one", "", 1, {7}}};
  const std::string s = box_plot(b);
  EXPECT_EQ(attrs(s, "data-n"), (std::vector<std::string>{"5", "1"}));
  EXPECT_EQ(attrs(s, "data-min"), (std::vector<std::string>{"1", "7"}));
  EXPECT_EQ(attrs(s, "data-q1"), (std::vector<std::string>{"2", "7"}));
  EXPECT_EQ(attrs(s, "data-median"), (std::vector<std::string>{"3", "7"}));
  EXPECT_EQ(attrs(s, "data-q3"), (std::vector<std::string>{"4", "7"}));
  EXPECT_EQ(attrs(s, "data-max"), (std::vector<std::string>{"5", "7"}));
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(quantile(v, 0.25), 1.75);  // numpy.quantile([1,2,3,4], 0.25)
}

TEST(ReportSvg, LinesKeepEverySample) {
  Lines l;
  l.x_label = "time (s)";
  l.y_label = "power (W)";
  l.x_scale = 1e9;
  Line line;
  line.name = "rank 0";
  line.attrs = " data-rank=\"0\"";
  line.x = {1000, 2000, 3000};
  line.y = {300.5, 310, 305.25};
  line.xi = {1000, 2000, 1767225605123456789};  // exact beyond 2^53
  l.lines = {line};
  Marker m;
  m.x = 1500;
  m.label = "iter 1";
  l.markers = {m};
  const std::string s = lines(l);
  EXPECT_EQ(attrs(s, "data-x"),
            (std::vector<std::string>{"1500", "1000,2000,1767225605123456789"}));
  EXPECT_EQ(attrs(s, "data-y"), (std::vector<std::string>{"300.5,310,305.25"}));
  EXPECT_NE(s.find(">power (W)<"), std::string::npos);
}

std::string base64_decode(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const int v = value(c);
    if (v < 0) continue;  // '=' padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// A trace with host operations only (hta_cpu_only_rank34) has no table to draw the time figures
// from: the section says so, as the waterfall and hardware sections do, instead of a heading over
// nothing.
TEST(ReportHtml, TimeSectionWithoutGpuTimeSaysWhy) {
  TableStore ts(report_tables());
  const std::string s = render_report(ts, ReportInfo{});
  const size_t at = s.find("<section id=\"time\"");
  ASSERT_NE(at, std::string::npos);
  const size_t end = s.find("</section>", at);
  const std::string section = s.substr(at, end - at);
  EXPECT_NE(section.find("No iteration time to split"), std::string::npos) << section;
  EXPECT_EQ(section.find("<figure"), std::string::npos);
}

TEST(ReportHtml, EndToEndFigureAndSelfContained) {
  TableStore ts(report_tables());
  Table e({"end_to_end",
           "",
           {{"iteration", ColType::kInt, ""},
            {"rank", ColType::kInt, ""},
            {"component", ColType::kText, ""},
            {"time_ns", ColType::kInt, ""},
            {"share", ColType::kReal, ""},
            {"per_token_ns", ColType::kReal, ""}}});
  e.add_row({Cell::of(int64_t{3}), Cell::of(int64_t{1}), Cell::of("forward.gemm"),
             Cell::of(int64_t{5000000}), Cell::of(0.5), Cell::null()});
  e.add_row({Cell::of(int64_t{3}), Cell::of(int64_t{1}), Cell::of("exposed_comm"),
             Cell::of(int64_t{4000000}), Cell::of(0.4), Cell::null()});
  e.add_row({Cell::of(int64_t{3}), Cell::of(int64_t{1}), Cell::of("idle"),
             Cell::of(int64_t{1000000}), Cell::of(0.1), Cell::null()});
  e.add_row({Cell::of(int64_t{3}), Cell::of(int64_t{1}), Cell::of(""), Cell::of(int64_t{0}),
             Cell::of(0.0), Cell::of(2.0)});
  write_table(e, ts);
  Table ignored({"gpu_activities", "", {{"x", ColType::kInt, ""}}});
  write_table(ignored, ts);
  EXPECT_EQ(ts.get("gpu_activities"), nullptr);  // not one of the report's tables
  ReportInfo info;
  info.title = "run <1>";
  std::vector<std::string> ids;
  const std::string s = render_report(ts, info, &ids);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "fig-e2e"), ids.end());
  EXPECT_NE(s.find("<figure id=\"fig-e2e\" data-table=\"end_to_end\">"), std::string::npos);
  EXPECT_NE(s.find("run &lt;1&gt;"), std::string::npos);
  const std::string e2e = s.substr(s.find("id=\"fig-e2e\""));
  EXPECT_EQ(attrs(e2e.substr(0, e2e.find("</figure>")), "data-value"),
            (std::vector<std::string>{"5000000", "4000000", "1000000"}));
  EXPECT_NE(s.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(s.find("download=\"fig-e2e.csv\" href=\"data:text/csv;base64,"), std::string::npos);
  // The figure's data as the CSV files write it (docs/schema.md): NULL an empty field, empty text
  // "" (the two stay apart).
  const std::string tag = "download=\"fig-e2e.csv\" href=\"data:text/csv;base64,";
  const size_t from = s.find(tag) + tag.size();
  const std::string csv = base64_decode(s.substr(from, s.find('"', from) - from));
  EXPECT_NE(csv.find("\n3,1,idle,1000000,0.1,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n3,1,\"\",0,0,2\n"), std::string::npos) << csv;
  // nothing to fetch: no src/href to another origin (the SVG namespace is a name, not a request)
  EXPECT_EQ(s.find(" src="), std::string::npos);
  std::string rest = s;
  for (size_t p; (p = rest.find("http://www.w3.org/2000/svg")) != std::string::npos;)
    rest.erase(p, 26);
  EXPECT_EQ(rest.find("http://"), std::string::npos);
  EXPECT_EQ(rest.find("https://"), std::string::npos);
}

}  // namespace
}  // namespace chopper::html

namespace chopper::html {
namespace {

// Above ReportInfo::many_ranks the per-rank figures aggregate: a heatmap of the split, quantile
// bands of the telemetry (over the ranks' means per time bin).
TEST(ReportHtml, ManyRanksAggregate) {
  TableStore ts(report_tables());
  // The tables as analyze writes them: temporal_breakdown by its own row writer, telemetry with
  // its schema (report/rank_tables.hpp).
  const int64_t ranks = 70;
  ts.begin(rank_table_schema(RankStream::kTemporalBreakdown));
  for (int64_t r = 0; r < ranks; ++r) {
    RankAnalysis a;
    a.rank = r;
    for (int64_t i = 0; i < 2; ++i) {
      BreakdownRow b;
      b.rank = r;
      b.iteration = i;
      b.start_ns = i * 1000000;
      b.total_ns = 1000000;
      b.compute_ns = 500000;
      b.idle_ns = 500000;
      a.breakdown.push_back(b);
    }
    rank_rows(RankStream::kTemporalBreakdown, RankView{nullptr, &a}, AnalysisOptions{}, ts);
  }
  ts.end();
  Table t(rank_table_schema(RankStream::kTelemetry));
  for (int64_t r = 0; r < ranks; ++r)
    for (int64_t k = 0; k < 10; ++k)  // rank r draws 100 + r watts
      t.add_row({Cell::of(r), Cell::of(int64_t{0}), Cell::of("power_w"), Cell::of(k * 200000),
                 Cell::of(100.0 + static_cast<double>(r))});
  write_table(t, ts);
  ReportInfo info;
  info.many_ranks = 64;
  const std::string s = render_report(ts, info);
  const std::string split = s.substr(s.find("<figure id=\"fig-split\""));
  const std::string split_fig = split.substr(0, split.find("</figure>"));
  EXPECT_NE(split_fig.find("chart heatmap"), std::string::npos);
  EXPECT_EQ(attrs(split_fig, "data-rank").size(), 140u);  // one cell per rank and iteration
  // every share is 0.5: the colour scale is the share's range 0..1, not fitted to 0.5..0.5
  EXPECT_EQ(attrs(split_fig, "data-lo"), (std::vector<std::string>{"0"}));
  EXPECT_EQ(attrs(split_fig, "data-hi"), (std::vector<std::string>{"1"}));
  const std::string power = s.substr(s.find("<figure id=\"fig-power\""));
  const std::string power_fig = power.substr(0, power.find("</figure>"));
  EXPECT_EQ(attrs(power_fig, "data-ranks"), (std::vector<std::string>{"70"}));
  EXPECT_EQ(attrs(power_fig, "data-rank").size(), 0u);  // no line per rank
  // every bin: min 100 W, max 169 W, median 134.5 W over the 70 ranks
  const std::vector<std::string> med = attrs(power_fig, "data-median");
  ASSERT_EQ(med.size(), 1u);
  EXPECT_EQ(med[0].substr(0, med[0].find(',')), "134.5");
  EXPECT_EQ(attrs(power_fig, "data-min")[0].substr(0, 3), "100");
  EXPECT_EQ(attrs(power_fig, "data-max")[0].substr(0, 3), "169");
}

TEST(ReportSvg, BytesInBinaryUnits) {
  EXPECT_EQ(bytes_text(512), "512 B");
  EXPECT_EQ(bytes_text(1536), "1.5 KiB");   // 1536 / 1024
  EXPECT_EQ(bytes_text(4194304), "4 MiB");  // 4 × 1024²
  EXPECT_EQ(bytes_text(2147483648.0), "2 GiB");
}

// 12 GPUs on two nodes (telemetry_alignment), 10 power samples each 100 µs apart, rank r's k-th
// sample 100 + r + k W; rank 3 power-capped (NVML bit 0x4) at its 6th sample, rank 4 idle (0x1,
// not a throttle) at its 3rd; the device an H100 (TDP 700 W, data sheet).
TEST(ReportHtml, TelemetryHeatmapAnchoredBinnedGrouped) {
  TableStore ts(report_tables());
  const int64_t ranks = 12;
  Table t(rank_table_schema(RankStream::kTelemetry));
  for (int64_t r = 0; r < ranks; ++r)
    for (int64_t k = 0; k < 10; ++k)
      t.add_row({Cell::of(r), Cell::of(r % 6), Cell::of("power_w"), Cell::of(k * 100000),
                 Cell::of(100.0 + static_cast<double>(r + k))});
  t.add_row({Cell::of(int64_t{3}), Cell::of(int64_t{3}), Cell::of("throttle_reasons"),
             Cell::of(int64_t{500000}), Cell::of(4.0)});
  t.add_row({Cell::of(int64_t{4}), Cell::of(int64_t{4}), Cell::of("throttle_reasons"),
             Cell::of(int64_t{200000}), Cell::of(1.0)});
  write_table(t, ts);
  Table al(kTelemetryAlignmentTable.schema());
  for (int64_t n = 0; n < 2; ++n)
    al.add_row({Cell::of(fmt::format("node{}.csv", n)), Cell::of("nvidia-smi"), Cell::of(n),
                Cell::of(n == 0 ? "0,1,2,3,4,5" : "6,7,8,9,10,11"), Cell::of("relative"),
                Cell::of(int64_t{0}), Cell::of(int64_t{0}), Cell::of(int64_t{100000}), Cell(),
                Cell::of("test"), Cell::of(int64_t{10})});
  write_table(al, ts);
  ReportInfo info;
  info.device = "NVIDIA H100 80GB HBM3";
  const std::string s = render_report(ts, info);
  const std::string h = s.substr(s.find("<figure id=\"fig-power-heatmap\""));
  const std::string fig = h.substr(0, h.find("</figure>"));
  // span 900,001 ns over the 100 µs period: 9 bins of ⌈900001 / 9⌉ = 100,001 ns; samples 0 and 1
  // share bin 0 (100,000 < 100,001), sample k ≥ 2 is in bin k − 1
  EXPECT_EQ(attrs(fig, "data-bins"), (std::vector<std::string>{"9"}));
  EXPECT_EQ(attrs(fig, "data-bin-ns"), (std::vector<std::string>{"100001"}));
  const std::vector<std::string> rk = attrs(fig, "data-rank"), node = attrs(fig, "data-node");
  ASSERT_EQ(rk.size(), 12u);
  EXPECT_EQ(node.front(), "0");
  EXPECT_EQ(rk[6], "6");  // the first of node 1
  EXPECT_EQ(node[6], "1");
  // rank 0's cells: bin 0 the mean of 100 and 101 W, bin 8 the last sample (109 W)
  const std::vector<std::string> v = attrs(fig, "data-value");
  ASSERT_EQ(v.size(), 12u * 9u);
  EXPECT_EQ(v[0], "100.5");
  EXPECT_EQ(v[8], "109");
  // one throttle mark (the idle bit is not a throttle): rank 3, bin 4 (500000 / 100001)
  EXPECT_EQ(attrs(fig, "data-mask"), (std::vector<std::string>{"4"}));
  EXPECT_EQ(attrs(fig, "data-reasons"), (std::vector<std::string>{"sw_power_cap"}));
  // the colour scale from 0 W to the H100's TDP, whatever the data's range (100..120 W)
  EXPECT_NE(fig.find("class=\"anchor-hi\">700 W<"), std::string::npos);
  EXPECT_NE(fig.find("class=\"anchor-lo\">0 W<"), std::string::npos);
  // 12 GPUs > 8: the power lines become bands with a legend of three entries
  const std::string p = s.substr(s.find("<figure id=\"fig-power\""));
  const std::string pfig = p.substr(0, p.find("</figure>"));
  EXPECT_EQ(attrs(pfig, "data-ranks"), (std::vector<std::string>{"12"}));
  EXPECT_NE(pfig.find(">median of 12 GPUs<"), std::string::npos);
  EXPECT_NE(pfig.find(">p25–p75<"), std::string::npos);
  // no clock telemetry: that heatmap is a one-line note, not an empty figure
  EXPECT_EQ(s.find("<figure id=\"fig-clock-heatmap\""), std::string::npos);
  EXPECT_NE(s.find("fig-clock-heatmap: no sm_clock_mhz telemetry."), std::string::npos);
}

}  // namespace
}  // namespace chopper::html

namespace chopper::html {
namespace {

// The texts of the <g class="legend"> groups, in order.
std::vector<std::string> legend_texts(const std::string& s) {
  std::vector<std::string> out;
  const std::regex g("<g class=\"legend\">(.*?)</g>"), t(">([^<>]+)</text>");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), g); it != std::sregex_iterator(); ++it) {
    const std::string inner = (*it)[1];
    for (auto jt = std::sregex_iterator(inner.begin(), inner.end(), t);
         jt != std::sregex_iterator(); ++jt)
      out.push_back((*jt)[1]);
  }
  return out;
}

// A number that rounds to zero at the places shown prints as 0, unsigned: −0.0004 ms at 3 places
// is "0.000", not "-0.000"; −0.0006 rounds to −0.001 and keeps its sign; "+" only on positives
// that do not round to zero.
TEST(ReportSvg, FixedPrintsNoNegativeZero) {
  EXPECT_EQ(fixed(-0.0004, 3), "0.000");
  EXPECT_EQ(fixed(-0.0, 3), "0.000");
  EXPECT_EQ(fixed(-0.0006, 3), "-0.001");
  EXPECT_EQ(fixed(0.0004, 3, true), "0.000");
  EXPECT_EQ(fixed(-0.0004, 3, true), "0.000");
  EXPECT_EQ(fixed(1.2345, 3, true), "+1.234");  // 1.2345 is 1.23449999... in binary
  EXPECT_EQ(fixed(-2.5, 1, true), "-2.5");
  EXPECT_EQ(fixed(-0.04, 1, true), "0.0");  // "-0.0 points" before
  EXPECT_EQ(fixed(1234.0, 0), "1234");
  EXPECT_EQ(label_num(-0.0), "0");
  EXPECT_EQ(label_num(-0.25), "-0.25");
}

// Legends name the series in words (series_names) while data-series keeps the key; vertical bars
// list the top of the stack (the last series) first, horizontal ones in drawing order (left to
// right).
TEST(ReportSvg, StackedBarsLegendInWordsInStackOrder) {
  StackedBars c;
  c.value_label = "compute time (ms)";
  c.category_label = "phase";
  c.scale = 1e6;
  c.categories = {"forward"};
  c.series = {"theoretical_ns", "residual_ns"};
  c.series_names = {"theoretical (ms)", "residual (ms)"};
  c.series_colors = {"#111111", "#222222"};
  c.values = {{3e6, 1e6}};
  std::string s = stacked_bars(c);
  EXPECT_EQ(attrs(s, "data-series"), (std::vector<std::string>{"theoretical_ns", "residual_ns"}));
  EXPECT_EQ(legend_texts(s), (std::vector<std::string>{"residual (ms)", "theoretical (ms)"}));
  EXPECT_LT(s.find("fill=\"#222222\"/>"), s.find("fill=\"#111111\"/>"));  // swatches follow
  EXPECT_NE(s.find("forward · residual (ms): 1</title>"), std::string::npos);
  c.horizontal = true;
  s = stacked_bars(c);
  EXPECT_EQ(legend_texts(s), (std::vector<std::string>{"theoretical (ms)", "residual (ms)"}));
}

// The diverging pair's ends and middle: RdBu's blue and red, light grey at 0.
TEST(ReportSvg, DivergingColoursBySign) {
  EXPECT_EQ(diverging(-1), "#2166ac");
  EXPECT_EQ(diverging(0), "#f0f0f0");
  EXPECT_EQ(diverging(1), "#b2182b");
  EXPECT_EQ(diverging(-5), diverging(-1));  // clamped
  EXPECT_EQ(diverging(std::nan("")), "#dddddd");
}

// compare --html: a component 2 ms slower and one 0.5 ms faster than the baseline are drawn in
// the two ends of the diverging pair (red, blue), their legend in words, on a value axis whose
// ticks are symmetric about 0.
TEST(ReportHtml, CompareDifferencesDiverge) {
  TableStore ts;
  const TableSchema sc = kCompareComponentsTable.schema();
  ts.begin(sc);
  struct R {
    const char* comp;
    double a, b;
  };
  for (const R& r : {R{"forward.gemm", 10e6, 12e6}, R{"idle", 1e6, 0.5e6}}) {
    std::vector<Cell> row;
    for (const ColumnSpec& col : sc.columns) {
      const std::string& n = col.name;
      row.push_back(n == "baseline"    ? Cell::of("a")
                    : n == "run"       ? Cell::of("b")
                    : n == "component" ? Cell::of(r.comp)
                    : n == "a_ns"      ? Cell::of(r.a)
                    : n == "b_ns"      ? Cell::of(r.b)
                    : n == "diff_ns"   ? Cell::of(r.b - r.a)
                    : n == "order"     ? Cell::of(int64_t{1})
                    : n == "status"    ? Cell::of("slower")
                                       : Cell::null());
    }
    ts.row(row);
  }
  ts.end();
  const std::string page = render_compare_report(ts, ReportInfo{});
  const size_t at = page.find("id=\"fig-compare-diff\"");
  ASSERT_NE(at, std::string::npos);
  const std::string fig = page.substr(at, page.find("</figure>", at) - at);
  EXPECT_EQ(attrs(fig, "data-value"), (std::vector<std::string>{"2000000", "-500000"}));
  const std::regex fill("fill=\"(#[0-9a-f]+)\" data-series=\"diff_ns\"");
  std::vector<std::string> fills;
  for (auto it = std::sregex_iterator(fig.begin(), fig.end(), fill); it != std::sregex_iterator();
       ++it)
    fills.push_back((*it)[1]);
  EXPECT_EQ(fills, (std::vector<std::string>{diverging(1), diverging(-1)}));
  EXPECT_EQ(legend_texts(fig), (std::vector<std::string>{"run longer (ms)", "run shorter (ms)"}));
  EXPECT_NE(fig.find(">-2</text>"), std::string::npos);  // ticks −2 … 2: 0 in the middle
  EXPECT_NE(fig.find(">2</text>"), std::string::npos);
  EXPECT_EQ(page.find("-0.000"), std::string::npos);
}

}  // namespace
}  // namespace chopper::html

// The report's sections are drawn on Docs of their own and joined (render_report): the page is
// the one the same calls make on one Doc, whatever a part starts with (a section, a note before
// its section, a figure) and with empty parts between.
namespace chopper::html {

// The report keeps of the launch_overhead table only the columns report_tables names: a row
// written whole is kept as those cells; a View reads a kept column by its declared name, and a
// column not kept is an error that names it (never a silent 0).
TEST(ReportStore, KeepsTheSelectedColumns) {
  const TableSelection sel = report_tables();
  ASSERT_EQ(sel.count(std::string(kLaunchOverheadTable.name)), 1u);
  const std::vector<std::string>& cols = sel.at(std::string(kLaunchOverheadTable.name));
  TableStore store(sel);
  const TableSchema schema = kLaunchOverheadTable.schema();
  std::vector<Cell> row;
  for (size_t c = 0; c < schema.columns.size(); ++c)
    row.push_back(schema.columns[c].type == ColType::kText
                      ? Cell::of("op")
                      : Cell::of(static_cast<int64_t>(c + 1)));  // column k holds k + 1
  store.begin(schema);
  store.row(row);
  store.end();
  const Table* t = store.get(std::string(kLaunchOverheadTable.name));
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->cols(), cols.size());
  ASSERT_LT(cols.size(), schema.columns.size());
  const View<kLaunchOverheadTable> v(store);
  EXPECT_EQ(v.i(0, "rank"), 1);
  EXPECT_EQ(v.s(0, "operation"), "op");
  const size_t overhead = kLaunchOverheadTable.handle("launch_overhead_ns").index;
  EXPECT_EQ(v.d(0, "launch_overhead_ns"), static_cast<double>(overhead + 1));
  try {
    (void)v.d(0, "gap_ns");  // summed by no figure: not kept
    FAIL() << "a column not kept was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("launch_overhead.gap_ns was not kept"), std::string::npos)
        << e.what();
  }
  // The same from a whole Table added (report DIR hands it over as read).
  Table whole(schema);
  whole.add_row(row);
  TableStore from_table(sel);
  from_table.add(std::move(whole));
  ASSERT_EQ(from_table.get(std::string(kLaunchOverheadTable.name))->cols(), cols.size());
  EXPECT_EQ(View<kLaunchOverheadTable>(from_table).d(0, "launch_overhead_ns"),
            static_cast<double>(overhead + 1));
}

TEST(ReportDoc, PartsJoinedAsIfDrawnOnOneDoc) {
  const Figure fig{"fig-a", "t", "A", "<svg></svg>", "caption", "End to end", "x\n1\n", ""};
  const std::vector<std::function<void(Doc&)>> calls = {
      [](Doc&) {},  // a section with nothing to draw
      [&](Doc& d) {
        d.section("one", "One");
        d.figure(fig);
      },
      [&](Doc& d) {
        d.empty_note("before two");
        d.section("two", "Two", "intro");
        d.empty_note("no data");
      },
      [](Doc&) {},
      [&](Doc& d) {
        d.figure(fig);  // a figure before its section
        d.section("three", "Three");
      },
      [&](Doc& d) { d.section("four", "Four"); }};
  Doc one;
  for (const auto& call : calls) call(one);
  for (size_t first = 0; first < calls.size(); ++first) {  // each prefix left out: other starts
    Doc whole, joined;
    for (size_t k = first; k < calls.size(); ++k) {
      calls[k](whole);
      Doc part;
      calls[k](part);
      joined.append(std::move(part));
    }
    EXPECT_EQ(joined.body, whole.body) << "from part " << first;
    EXPECT_EQ(joined.ids, whole.ids);
    EXPECT_EQ(joined.toc, whole.toc);
    EXPECT_EQ(joined.first_open, whole.first_open);
  }
  // Hand-checked: the note before "two" stays inside "one", then "one" closes.
  EXPECT_NE(one.body.find("before two</p>\n</section>\n<section id=\"two\">"), std::string::npos)
      << one.body;
  EXPECT_EQ(one.toc.size(), 4u);
  EXPECT_EQ(one.ids, (std::vector<std::string>{"fig-a", "fig-a"}));
}

// 200 GPUs, more than the 128 rows a GPU × time heatmap draws: 25 nodes of 8 (telemetry_alignment),
// three power and three clock samples each 100 µs apart; rank r draws 100 + r W and 2000 − r MHz.
// Folded per node, a power cell is the node's highest GPU (its last rank, 100 + 8n + 7 W) and a
// clock cell its lowest (the same GPU, 2000 − (8n + 7) MHz); rank 13 power-capped in bin 1 marks
// node 1's row. Without nodes, blocks of ⌈200 / 128⌉ = 2 GPUs.
TEST(ReportHtml, TelemetryHeatmapFoldsManyGpus) {
  auto run = [](bool with_nodes) {
    TableStore ts(report_tables());
    Table t(rank_table_schema(RankStream::kTelemetry));
    for (int64_t r = 0; r < 200; ++r)
      for (int64_t k = 0; k < 3; ++k) {
        t.add_row({Cell::of(r), Cell::of(r), Cell::of("power_w"), Cell::of(k * 100000),
                   Cell::of(100.0 + static_cast<double>(r))});
        t.add_row({Cell::of(r), Cell::of(r), Cell::of("sm_clock_mhz"), Cell::of(k * 100000),
                   Cell::of(2000.0 - static_cast<double>(r))});
      }
    t.add_row({Cell::of(int64_t{13}), Cell::of(int64_t{13}), Cell::of("throttle_reasons"),
               Cell::of(int64_t{200000}), Cell::of(4.0)});
    write_table(t, ts);
    Table al(kTelemetryAlignmentTable.schema());
    for (int64_t n = 0; with_nodes && n < 25; ++n) {
      std::string ranks;
      for (int64_t g = 0; g < 8; ++g) ranks += (g ? "," : "") + std::to_string(8 * n + g);
      al.add_row({Cell::of(fmt::format("node{}.csv", n)), Cell::of("nvidia-smi"), Cell::of(n),
                  Cell::of(ranks), Cell::of("relative"), Cell::of(int64_t{0}), Cell::of(int64_t{0}),
                  Cell::of(int64_t{100000}), Cell(), Cell::of("test"), Cell::of(int64_t{2})});
    }
    write_table(al, ts);
    ReportInfo info;
    info.device = "NVIDIA H100 80GB HBM3";
    return render_report(ts, info);
  };
  auto figure = [](const std::string& s, const std::string& id) {
    const std::string h = s.substr(s.find("<figure id=\"" + id + "\""));
    return h.substr(0, h.find("</figure>"));
  };
  const std::string s = run(true);
  const std::string power = figure(s, "fig-power-heatmap"), clock = figure(s, "fig-clock-heatmap");
  EXPECT_EQ(attrs(power, "data-fold"), (std::vector<std::string>{"max"}));
  EXPECT_EQ(attrs(clock, "data-fold"), (std::vector<std::string>{"min"}));
  const std::vector<std::string> ranks = attrs(power, "data-ranks"),
                                 gpus = attrs(power, "data-gpus");
  ASSERT_EQ(ranks.size(), 25u);
  EXPECT_EQ(ranks[3], "24-31");
  EXPECT_EQ(gpus[3], "8");
  // 2 bins (span 200,001 ns over the 100 µs period); node 3's cells: rank 31's 131 W, 1969 MHz
  const std::vector<std::string> pv = attrs(power, "data-value"), cv = attrs(clock, "data-value");
  ASSERT_EQ(pv.size(), 50u);
  EXPECT_EQ(pv[6], "131");
  EXPECT_EQ(cv[6], "1969");
  EXPECT_EQ(attrs(power, "data-at-rank")[6], "31");
  EXPECT_EQ(attrs(clock, "data-at-rank")[6], "31");
  EXPECT_NE(power.find(">n3: 131 (rank 31)<"), std::string::npos);
  // rank 13's power cap: one mark, on node 1's row, bin 1
  EXPECT_EQ(attrs(power, "data-mask"), (std::vector<std::string>{"4"}));
  EXPECT_NE(power.find("<title>n1: sw_power_cap</title>"), std::string::npos);
  EXPECT_NE(power.find("200 GPUs, more than 128: each row a node's GPUs"), std::string::npos);
  // without nodes: 100 blocks of 2 GPUs, the first "r0–r1" at 101 W from rank 1
  const std::string b = figure(run(false), "fig-power-heatmap");
  const std::vector<std::string> br = attrs(b, "data-ranks");
  ASSERT_EQ(br.size(), 100u);
  EXPECT_EQ(br[0], "0-1");
  EXPECT_EQ(attrs(b, "data-value")[0], "101");
  EXPECT_NE(b.find("each row a block of 2 GPUs"), std::string::npos);
}

}  // namespace chopper::html
