#include "chopper/report/html/report_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string_view>
#include <utility>

#include "chopper/analysis/analysis.hpp"
#include "chopper/model/table_def.hpp"
#include "chopper/report/analysis_report.hpp"
#include "chopper/report/compare_report.hpp"
#include "chopper/report/diagnostics_report.hpp"
#include "chopper/report/findings_report.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/hierarchy_report.hpp"
#include "chopper/report/html/svg.hpp"
#include "chopper/report/rank_tables.hpp"

namespace chopper::html {

void TableStore::begin(const TableSchema& schema) {
  cur_ = nullptr;
  if (!keep_.empty() && keep_.count(schema.name) == 0) return;
  tables_.erase(schema.name);
  cur_ = &tables_.emplace(schema.name, Table(schema)).first->second;
}
void TableStore::row(std::span<const Cell> cells) {
  if (cur_ != nullptr) cur_->add_row(cells);
}
void TableStore::end() {
  cur_ = nullptr;
}
const Table* TableStore::get(const std::string& name) const {
  auto it = tables_.find(name);
  return it == tables_.end() ? nullptr : &it->second;
}

std::set<std::string> report_tables() {
  std::set<std::string> out;
  for (std::string_view t :
       {kTemporalBreakdownTable.name, kRankComponentsTable.name, kIdleBreakdownTable.name,
        kOperationInstancesTable.name, kLaunchOverheadTable.name, kCollectivesTable.name,
        kStragglersTable.name, kIterationsTable.name, kEndToEndTable.name, kTelemetryTable.name,
        kPowerEnergyTable.name, kWaterfallTable.name, kFindingsTable.name, kLabelCoverageTable.name,
        kDiagnosticsTable.name, kClockOffsetsTable.name})
    out.emplace(t);
  return out;
}

namespace {

constexpr double kMs = 1e6;
// Above this many source rows a figure embeds the data it draws (quantiles, CDF points, bands)
// as its CSV instead of the rows themselves (chopper.sqlite has them): the file stays small.
constexpr size_t kMaxCsvRows = 20000;
const std::string kSummaryNote = "the values drawn; the rows are in chopper.sqlite";
constexpr int64_t kNull = std::numeric_limits<int64_t>::min();

// A table read through its declaration (model/table_def.hpp): columns by typed handle, so a name
// that is not a column of the table does not compile (View<kXxxTable>::Col is made at compile
// time). A missing table has no rows; a table whose columns are not the declaration's is an error.
template <const auto& Def>
class View;

// The names of columns (a figure's series, a CSV header).
template <class C, size_t N>
std::vector<std::string> col_names(const std::array<C, N>& cols) {
  std::vector<std::string> out;
  for (const C& c : cols) out.emplace_back(c.h.name);
  return out;
}

template <const auto& Def>
class View {
 public:
  // A column of Def, found when compiled.
  struct Col {
    consteval Col(const char* name) : h(Def.handle(name)) {}  // NOLINT: implicit by design
    ColumnHandle h;
  };

  explicit View(const TableStore& ts) : View(ts.get(std::string(Def.name))) {}
  explicit View(const Table* t) : t_(t) {
    if (t_ == nullptr) return;
    const auto& cols = t_->schema().columns;
    bool same = t_->name() == Def.name && cols.size() == Def.columns.size();
    for (size_t k = 0; same && k < cols.size(); ++k) same = cols[k].name == Def.columns[k].name;
    if (!same)
      throw Error(fmt::format("report: table {} is not as declared ({} columns)", t_->name(),
                              Def.columns.size()));
  }
  size_t rows() const { return t_ ? t_->rows() : 0; }
  bool null(size_t r, Col c) const { return t_->is_null(r, c.h.index); }
  double d(size_t r, Col c) const {
    const Cell x = t_->cell(r, c.h.index);
    return x.kind == Cell::kInt    ? static_cast<double>(x.i)
           : x.kind == Cell::kReal ? x.r
                                   : std::nan("");
  }
  int64_t i(size_t r, Col c) const {
    return t_->is_null(r, c.h.index) ? kNull : t_->get_int(r, c.h.index);
  }
  std::string s(size_t r, Col c) const { return std::string(t_->get_text(r, c.h.index)); }
  const Table* table() const { return t_; }

 private:
  const Table* t_;
};

std::string base64(std::string_view in) {
  static constexpr char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string o;
  o.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(in[i]) << 16) |
                       (static_cast<uint8_t>(in[i + 1]) << 8) | static_cast<uint8_t>(in[i + 2]);
    o += k[v >> 18], o += k[(v >> 12) & 63], o += k[(v >> 6) & 63], o += k[v & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    o += k[v >> 18], o += k[(v >> 12) & 63], o += "==";
  } else if (i + 2 == in.size()) {
    const uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8);
    o += k[v >> 18], o += k[(v >> 12) & 63], o += k[(v >> 6) & 63], o += '=';
  }
  return o;
}

}  // namespace

std::string sha256(std::string_view in) {
  static constexpr uint32_t k[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
      0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
      0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
      0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
      0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
      0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
      0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
      0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
      0xc67178f2};
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::string m(in);
  const uint64_t bits = static_cast<uint64_t>(in.size()) * 8;
  m += static_cast<char>(0x80);
  while (m.size() % 64 != 56) m += '\0';
  for (int b = 7; b >= 0; --b) m += static_cast<char>((bits >> (b * 8)) & 0xff);
  const auto rotr = [](uint32_t x, int n) { return (x >> n) | (x << (32 - n)); };
  for (size_t at = 0; at < m.size(); at += 64) {
    uint32_t w[64];
    for (int t = 0; t < 16; ++t)
      w[t] = (static_cast<uint32_t>(static_cast<uint8_t>(m[at + 4 * t])) << 24) |
             (static_cast<uint32_t>(static_cast<uint8_t>(m[at + 4 * t + 1])) << 16) |
             (static_cast<uint32_t>(static_cast<uint8_t>(m[at + 4 * t + 2])) << 8) |
             static_cast<uint32_t>(static_cast<uint8_t>(m[at + 4 * t + 3]));
    for (int t = 16; t < 64; ++t) {
      const uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
      const uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; ++t) {
      const uint32_t t1 =
          hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[t] + w[t];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
  }
  std::string out;
  for (uint32_t x : h)
    for (int b = 3; b >= 0; --b) out += static_cast<char>((x >> (b * 8)) & 0xff);
  return out;
}

namespace {

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

// The rows of a table as CSV, as the CSV files write them (docs/schema.md): every column, NULL an
// empty field, empty text "".
std::string csv_of(const Table* t, const std::vector<size_t>& rows) {
  if (t == nullptr) return {};
  std::string o;
  for (size_t c = 0; c < t->cols(); ++c) o += (c ? "," : "") + t->schema().columns[c].name;
  o += "\n";
  for (size_t r : rows) {
    for (size_t c = 0; c < t->cols(); ++c) {
      if (c) o += ",";
      const Cell x = t->cell(r, c);
      if (x.kind == Cell::kInt) o += std::to_string(x.i);
      if (x.kind == Cell::kReal) o += num(x.r);
      if (x.kind == Cell::kText) o += x.s.empty() ? std::string("\"\"") : csv_field(x.s);
    }
    o += "\n";
  }
  return o;
}
template <class V>
std::vector<size_t> all_rows(const V& v) {
  std::vector<size_t> r(v.rows());
  for (size_t i = 0; i < r.size(); ++i) r[i] = i;
  return r;
}

// A small CSV of derived (aggregated for display) values.
struct Csv {
  std::string text;
  explicit Csv(const std::vector<std::string>& header) {
    for (size_t i = 0; i < header.size(); ++i) text += (i ? "," : "") + csv_field(header[i]);
    text += "\n";
  }
  void add(const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) text += (i ? "," : "") + csv_field(cells[i]);
    text += "\n";
  }
};

// GitHub's heading anchor: lower case, punctuation dropped, spaces as '-'.
std::string anchor(std::string_view heading) {
  std::string o;
  for (unsigned char c : heading) {
    if (std::isalnum(c) || c == '-' || c == '_')
      o += static_cast<char>(std::tolower(c));
    else if (c == ' ')
      o += '-';
    else if (c >= 0x80)
      o += static_cast<char>(c);
  }
  return o;
}

struct Figure {
  std::string id, table, title, svg, caption;
  std::string section;  // docs/metrics.md heading the metric is defined under
  std::string csv, csv_note;
};

std::string metric_link(std::string_view section) {
  return fmt::format("<a class=\"def\" href=\"docs/metrics.md#{}\">docs/metrics.md § {}</a>",
                     esc(anchor(section)), esc(section));
}

struct Doc {
  std::string body;
  std::vector<std::string> ids;
  std::vector<std::pair<std::string, std::string>> toc;  // section id, title

  void section(const std::string& id, const std::string& title, const std::string& intro = "") {
    if (!ids.empty() || !toc.empty()) body += "</section>\n";
    body += fmt::format("<section id=\"{}\"><h2>{}</h2>\n", id, esc(title));
    if (!intro.empty()) body += "<p>" + intro + "</p>\n";
    toc.emplace_back(id, title);
  }
  void figure(const Figure& f) {
    ids.push_back(f.id);
    const size_t lines = static_cast<size_t>(std::count(f.csv.begin(), f.csv.end(), '\n'));
    body += fmt::format(
        "<figure id=\"{}\" data-table=\"{}\"><h3>{}</h3>\n<div class=\"plot\">{}</div>\n"
        "<figcaption>{} Definition: {}. <a class=\"csv\" download=\"{}.csv\" "
        "href=\"data:text/csv;base64,{}\">Download the data (CSV, {} rows{})</a></figcaption>"
        "</figure>\n",
        f.id, esc(f.table), esc(f.title), f.svg, f.caption, metric_link(f.section), f.id,
        base64(f.csv), lines > 0 ? lines - 1 : 0,
        f.csv_note.empty() ? fmt::format(" of table {}", esc(f.table)) : ", " + f.csv_note);
  }
  void empty_note(const std::string& what) { body += "<p class=\"none\">" + what + "</p>\n"; }
};

std::string ms_text(double ns) {
  return fmt::format("{:.3f} ms", ns / kMs);
}

// Which rank the iteration figures show and why (iterations.slowest_rank is NULL where the
// ranks are equal within noise; shown_rank is the rank shown).
std::string shown_rank_label(const View<kIterationsTable>& it) {
  size_t sig = 0;
  std::set<int64_t> ranks;
  for (size_t r = 0; r < it.rows(); ++r) {
    sig += it.null(r, "slowest_rank") ? 0 : 1;
    ranks.insert(it.i(r, "shown_rank"));
  }
  std::string shown;
  for (int64_t k : ranks) shown += (shown.empty() ? "" : ", ") + std::to_string(k);
  if (it.rows() > 0 && it.i(0, "ranks") == 1 && ranks.size() == 1)
    return "rank " + shown + ", the only rank";
  if (sig == it.rows()) return "slowest rank " + shown;
  if (sig == 0) return "rank " + shown + ": ranks equal within noise, showing the lowest rank";
  return fmt::format("rank {}: the significantly slowest in {} of {} iterations, else the lowest",
                     shown, sig, it.rows());
}

std::vector<std::string> sorted_unique_s(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<int64_t> sorted_unique(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// The figures' colours for the named parts of an iteration.
std::string component_color(const std::string& k) {
  static const std::map<std::string, std::string> m = {{"exposed_comm", "#e15759"},
                                                       {"straggler_wait", "#ff9da7"},
                                                       {"exposed_memcpy", "#b07aa1"},
                                                       {"host_stall", "#9c755f"},
                                                       {"data_loading", "#8c564b"},
                                                       {"host_sync", "#d62728"},
                                                       {"host_optimizer", "#bcbd22"},
                                                       {"host_late", "#edc948"},
                                                       {"launch_overhead", "#f28e2b"},
                                                       {"graph_gap", "#76b7b2"},
                                                       {"idle", "#bab0ac"},
                                                       {"compute", "#4e79a7"},
                                                       {"other non-compute", "#d4a6c8"}};
  if (auto it = m.find(k); it != m.end()) return it->second;
  // compute by phase.class: blues/greens by phase
  const std::string ph = k.substr(0, k.find('.'));
  static const std::map<std::string, std::vector<std::string>> shades = {
      {"forward", {"#1f4e79", "#2e75b6", "#5b9bd5", "#9dc3e6", "#bdd7ee"}},
      {"backward", {"#385723", "#548235", "#70ad47", "#a9d18e", "#c5e0b4"}},
      {"optimizer", {"#7f6000", "#bf9000", "#ffd966"}},
  };
  const size_t h = std::hash<std::string>{}(k);
  if (auto it = shades.find(ph); it != shades.end()) return it->second[h % it->second.size()];
  return std::string(palette(h % 10));
}

// ---------------------------------------------------------------------------------------------
// Sections

void summary_section(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  const View<kIterationsTable> it(ts);
  doc.section("summary", "Run summary");
  std::string s = "<table class=\"kv\">";
  auto kv = [&s](const std::string& k, const std::string& v) {
    s += "<tr><th>" + esc(k) + "</th><td>" + v + "</td></tr>";
  };
  kv("run", esc(info.title));
  if (!info.device.empty()) kv("device", esc(info.device));
  if (it.rows() > 0) {
    double t = 0, tps = 0, tpt = 0, mfu = 0, tfl = 0, cov = 0;
    size_t mfu_n = 0, tok_n = 0, tfl_n = 0;
    int64_t ranks = 0;
    for (size_t r = 0; r < it.rows(); ++r) {
      t += it.d(r, "time_ns");
      ranks = std::max(ranks, it.i(r, "ranks"));
      if (!it.null(r, "tokens_per_s"))
        tps += it.d(r, "tokens_per_s"), tpt += it.d(r, "time_per_token_ns"), ++tok_n;
      if (!it.null(r, "mfu")) mfu += it.d(r, "mfu"), ++mfu_n;
      if (!it.null(r, "tflops_per_gpu")) tfl += it.d(r, "tflops_per_gpu"), ++tfl_n;
      cov += it.d(r, "flops_coverage_share");
    }
    const double n = static_cast<double>(it.rows());
    kv("ranks", std::to_string(ranks));
    kv("iterations", fmt::format("{} ({}..{})", it.rows(), it.i(0, "iteration"),
                                 it.i(it.rows() - 1, "iteration")));
    kv("iteration time (" + shown_rank_label(it) + ", mean)", ms_text(t / n));
    if (tok_n > 0) {
      kv("tokens per second (mean)", fmt::format("{:.0f}", tps / static_cast<double>(tok_n)));
      kv("time per token (mean)", fmt::format("{:.3f} µs", tpt / static_cast<double>(tok_n) / 1e3));
    } else {
      kv("tokens per second", "unknown (give --tokens-per-step)");
    }
    if (tfl_n > 0)
      kv("TFLOP/s per GPU (mean)", fmt::format("{:.1f}", tfl / static_cast<double>(tfl_n)));
    if (mfu_n > 0)
      kv("MFU (mean)", fmt::format("{:.1f}% (FLOPs known for {:.0f}% of compute time)",
                                   100 * mfu / static_cast<double>(mfu_n), 100 * cov / n));
    else if (tfl_n > 0)
      kv("MFU",
         fmt::format("not given: FLOPs known for only {:.0f}% of compute time (below {:.0f}%)",
                     100 * cov / n, 100 * kMfuMinCoverage));
  } else {
    kv("iterations", "none found (no ProfilerStep#N ranges): the per-iteration figures are empty");
  }
  kv("made by", "<code>" + esc(info.command) + "</code>");
  doc.body += s + "</table>\n";
}

// Where each finding's evidence is drawn.
std::string evidence_figure(const std::string& kind) {
  static const std::map<std::string, std::string> m = {{"exposed_comm", "fig-e2e"},
                                                       {"straggler", "fig-straggler-lead"},
                                                       {"host_stall", "fig-launch"},
                                                       {"data_loading", "fig-launch"},
                                                       {"host_sync", "fig-launch"},
                                                       {"host_optimizer", "fig-launch"},
                                                       {"host_late", "fig-launch"},
                                                       {"launch_overhead", "fig-launch"},
                                                       {"graph_gap", "fig-launch"},
                                                       {"idle", "fig-idle"},
                                                       {"exposed_memcpy", "fig-split"},
                                                       {"dvfs", "fig-clock"},
                                                       {"utilization", "fig-waterfall-phase"},
                                                       {"comm_slowdown", "fig-waterfall-phase"}};
  auto it = m.find(kind);
  return it == m.end() ? "fig-e2e" : it->second;
}

void findings_section(Doc& doc, const TableStore& ts) {
  const View<kFindingsTable> f(ts);
  doc.section("findings", "Findings",
              "Each loss, largest first, with what it costs the shown rank's iteration (mean over "
              "iterations) and the figure its evidence is in. A finding is significant when a "
              "one-sided Student t test puts its mean above 1% of the iteration at 97.5% "
              "(from one iteration, with no variance: when above 1% alone).");
  if (f.rows() == 0) {
    doc.empty_note("No findings: the run has no iterations, or no loss was measured.");
    return;
  }
  std::vector<size_t> order = all_rows(f);
  std::stable_sort(order.begin(), order.end(), [&f](size_t a, size_t b) {
    const bool sa = f.i(a, "significant") == 1, sb = f.i(b, "significant") == 1;
    if (sa != sb) return sa;
    return f.d(a, "cost_ns") > f.d(b, "cost_ns");
  });
  StackedBars c;
  c.horizontal = true;
  c.scale = kMs;
  c.value_label = "cost per iteration (ms)";
  c.category_label = "finding";
  c.series = {"significant", "not significant"};
  c.series_colors = {"#e15759", "#bab0ac"};
  for (size_t r : order) {
    const std::string key = f.s(r, "finding");
    const int64_t rank = f.i(r, "rank");
    c.categories.push_back(f.s(r, "title") +
                           (rank != kNull ? fmt::format(" (rank {})", rank) : ""));
    c.cat_attrs.push_back(fmt::format(" data-finding=\"{}\" data-rank=\"{}\"", esc(key),
                                      rank == kNull ? std::string() : std::to_string(rank)));
    const bool sig = f.i(r, "significant") == 1;
    const double cost = f.d(r, "cost_ns");
    c.values.push_back({sig ? cost : std::nan(""), sig ? std::nan("") : cost});
  }
  doc.figure({"fig-findings", "findings", "Findings by cost", stacked_bars(c),
              "Mean time each loss takes from the shown rank's iteration (cost_ns), red when "
              "significant. Decided by the findings analysis (analysis/findings); the report only "
              "draws the findings table.",
              "Findings (`findings`, `analyze --json`)", csv_of(f.table(), order), ""});
  std::string t =
      "<table class=\"findings\"><tr><th>finding</th><th>rank</th><th>cost / iteration</th>"
      "<th>share</th><th>confidence</th><th>energy / iteration</th><th>evidence</th>"
      "<th>what to try</th></tr>";
  for (size_t r : order) {
    const std::string key = f.s(r, "finding");
    const bool sig = f.i(r, "significant") == 1;
    const int64_t rank = f.i(r, "rank");
    t += fmt::format(
        "<tr class=\"{}\" data-finding=\"{}\" data-cost-ns=\"{}\"><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{:.1f}%</td><td>{}</td><td>{}</td><td>{} <a "
        "href=\"#{}\">(figure)</a></td><td>{}</td></tr>",
        sig ? "sig" : "insig", esc(key), num(f.d(r, "cost_ns")), esc(f.s(r, "title")),
        rank == kNull ? "shown" : std::to_string(rank), ms_text(f.d(r, "cost_ns")),
        100 * f.d(r, "cost_share"),
        f.null(r, "confidence") ? std::string("none: one iteration, no variance")
                                : fmt::format("{:.0f}%", 100 * f.d(r, "confidence")),
        f.null(r, "energy_j") ? std::string("–") : fmt::format("{:.1f} J", f.d(r, "energy_j")),
        esc(f.s(r, "evidence")), evidence_figure(key), esc(f.s(r, "suggestion")));
  }
  doc.body += t + "</table>\n";
}

// The components of an end_to_end-like table (a `component` column) in drawing order: compute
// parts (phase.class) first, then the losses in the order the summary uses, then any other.
template <class V>
std::vector<std::string> component_order(const V& v) {
  std::vector<std::string> names;
  for (size_t r = 0; r < v.rows(); ++r) names.push_back(v.s(r, "component"));
  names = sorted_unique_s(std::move(names));
  std::vector<std::string> order;
  for (const std::string& n : names)
    if (n.find('.') != std::string::npos) order.push_back(n);
  for (const char* k :
       {"exposed_comm", "straggler_wait", "exposed_memcpy", "data_loading", "host_sync",
        "host_optimizer", "host_stall", "host_late", "launch_overhead", "graph_gap", "idle"})
    if (std::binary_search(names.begin(), names.end(), std::string(k))) order.emplace_back(k);
  for (const std::string& n : names)
    if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
  return order;
}

// end_to_end: one bar per iteration of the rank shown.
void end_to_end_figure(Doc& doc, const TableStore& ts) {
  const View<kEndToEndTable> e(ts);
  if (e.rows() > 0) {
    StackedBars c;
    c.scale = kMs;
    c.value_label = "time of the rank shown (ms)";
    c.category_label =
        "iteration (rank shown: " + shown_rank_label(View<kIterationsTable>(ts)) + ")";
    std::map<int64_t, size_t> cat;
    std::map<std::string, size_t> ser;
    const std::vector<std::string> order = component_order(e);
    for (size_t k = 0; k < order.size(); ++k) {
      ser[order[k]] = k;
      c.series.push_back(order[k]);
      c.series_colors.push_back(component_color(order[k]));
    }
    for (size_t r = 0; r < e.rows(); ++r) {
      const int64_t i = e.i(r, "iteration");
      if (!cat.count(i)) {
        cat[i] = c.categories.size();
        c.categories.push_back(fmt::format("{} (rank {})", i, e.i(r, "rank")));
        c.cat_attrs.push_back(
            fmt::format(" data-iteration=\"{}\" data-rank=\"{}\"", i, e.i(r, "rank")));
        c.values.emplace_back(order.size(), std::nan(""));
      }
      c.values[cat[i]][ser[e.s(r, "component")]] = e.d(r, "time_ns");
    }
    doc.figure({"fig-e2e", "end_to_end", "Iteration time split (rank shown)", stacked_bars(c),
                "Each iteration's time on the rank shown (the significantly slowest rank, else "
                "the lowest: iterations.shown_rank), split into parts that add up to it: "
                "compute by phase.class (the union of compute kernels, no double counting), "
                "exposed communication, waiting for a straggler, exposed copies, host stall, host "
                "late, launch overhead, graph gaps and other idle (end_to_end.time_ns).",
                "End to end (`iterations`, `end_to_end`)", csv_of(e.table(), all_rows(e)), ""});
  }
}

// rank_components: every rank's split into the end-to-end components.
void rank_components_figure(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  const View<kRankComponentsTable> rc(ts);
  std::vector<int64_t> rc_ranks;
  for (size_t r = 0; r < rc.rows(); ++r) rc_ranks.push_back(rc.i(r, "rank"));
  rc_ranks = sorted_unique(rc_ranks);
  if (rc.rows() > 0 && rc_ranks.size() <= info.many_ranks) {
    StackedBars c;
    c.scale = kMs;
    c.value_label = "time (ms)";
    c.category_label = "rank / iteration";
    const std::vector<std::string> order = component_order(rc);
    std::map<std::string, size_t> ser;
    for (size_t k = 0; k < order.size(); ++k) {
      ser[order[k]] = k;
      c.series.push_back(order[k]);
      c.series_colors.push_back(component_color(order[k]));
    }
    std::map<std::pair<int64_t, int64_t>, size_t> cat;
    for (size_t r = 0; r < rc.rows(); ++r) {
      const std::pair<int64_t, int64_t> key{rc.i(r, "rank"), rc.i(r, "iteration")};
      if (!cat.count(key)) {
        cat[key] = c.categories.size();
        c.categories.push_back(fmt::format("r{} i{}", key.first, key.second));
        c.cat_attrs.push_back(
            fmt::format(" data-rank=\"{}\" data-iteration=\"{}\"", key.first, key.second));
        c.values.emplace_back(order.size(), std::nan(""));
      }
      c.values[cat[key]][ser[rc.s(r, "component")]] = rc.d(r, "time_ns");
    }
    doc.figure({"fig-rank-e2e", "rank_components",
                "Iteration time split per rank and iteration, by cause", stacked_bars(c),
                "Every rank's iteration window split into the same parts as the shown rank's "
                "above (compute by phase.class, exposed communication, waiting for a straggler, "
                "exposed copies, host stall, host late, launch latency, graph gaps, idle), adding "
                "up to the window (rank_components.time_ns).",
                "End to end (`iterations`, `end_to_end`)", csv_of(rc.table(), all_rows(rc)), ""});
  }
}

// The ranks and iterations of temporal_breakdown's iteration rows (sorted, unique), which the idle
// figure shares.
struct RankIterations {
  std::vector<int64_t> ranks, iters;
};

// temporal_breakdown per rank and iteration: bars, or a heatmap with many ranks.
RankIterations split_figure(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  const View<kTemporalBreakdownTable> b(ts);
  std::vector<size_t> rows;
  std::vector<int64_t> ranks, iters;
  for (size_t r = 0; r < b.rows(); ++r)
    if (!b.null(r, "iteration")) {
      rows.push_back(r);
      ranks.push_back(b.i(r, "rank"));
      iters.push_back(b.i(r, "iteration"));
    }
  ranks = sorted_unique(ranks);
  iters = sorted_unique(iters);
  if (!rows.empty() && ranks.size() <= info.many_ranks) {
    StackedBars c;
    c.scale = kMs;
    c.value_label = "time (ms)";
    c.category_label = "rank / iteration";
    c.series = {"compute", "exposed_comm", "exposed_memcpy", "other non-compute", "idle"};
    for (const std::string& s : c.series) c.series_colors.push_back(component_color(s));
    std::vector<size_t> order = rows;
    std::sort(order.begin(), order.end(), [&b](size_t x, size_t y) {
      return std::pair(b.i(x, "rank"), b.i(x, "iteration")) <
             std::pair(b.i(y, "rank"), b.i(y, "iteration"));
    });
    for (size_t r : order) {
      const int64_t rk = b.i(r, "rank"), it = b.i(r, "iteration");
      c.categories.push_back(fmt::format("r{} i{}", rk, it));
      c.cat_attrs.push_back(fmt::format(" data-rank=\"{}\" data-iteration=\"{}\"", rk, it));
      const double comp = b.d(r, "compute_ns"), ec = b.d(r, "exposed_comm_ns"),
                   em = b.d(r, "exposed_memcpy_ns"), nc = b.d(r, "non_compute_ns"),
                   idle = b.d(r, "idle_ns");
      c.values.push_back({comp, ec, em, nc - ec - em, idle});
    }
    doc.figure(
        {"fig-split", "temporal_breakdown", "Time split per rank and iteration", stacked_bars(c),
         "Each rank's iteration window split into compute (the union of compute kernels), "
         "exposed communication (communication with no compute under it), exposed copies, "
         "other non-compute (non_compute_ns − the two exposed parts) and idle "
         "(temporal_breakdown, iteration rows).",
         "Temporal breakdown (`temporal_breakdown`, `overlap`)", csv_of(b.table(), order), ""});
  } else if (!rows.empty()) {
    Heatmap h;
    h.row_label = "rank";
    h.col_label = "iteration";
    h.value_label = "compute share";
    h.row_attr = "data-rank";
    h.col_attr = "data-iteration";
    for (int64_t r : ranks) h.rows.push_back(std::to_string(r));
    for (int64_t i : iters) h.cols.push_back(std::to_string(i));
    h.values.assign(ranks.size(), std::vector<double>(iters.size(), std::nan("")));
    for (size_t r : rows) {
      const size_t ri = static_cast<size_t>(
          std::lower_bound(ranks.begin(), ranks.end(), b.i(r, "rank")) - ranks.begin());
      const size_t ci = static_cast<size_t>(
          std::lower_bound(iters.begin(), iters.end(), b.i(r, "iteration")) - iters.begin());
      h.values[ri][ci] = b.null(r, "compute_share") ? std::nan("") : b.d(r, "compute_share");
    }
    doc.figure(
        {"fig-split", "temporal_breakdown", "Compute share per rank and iteration", heatmap(h),
         "compute_ns / total_ns of each rank's iteration window (temporal_breakdown). With "
         "this many ranks a heatmap replaces the per-rank bars; the CSV has every part.",
         "Temporal breakdown (`temporal_breakdown`, `overlap`)", csv_of(b.table(), rows), ""});
  }
  return {ranks, iters};
}

// idle_breakdown by cause, summed over streams.
void idle_figure(Doc& doc, const TableStore& ts, const ReportInfo& info,
                 const RankIterations& grid) {
  const std::vector<int64_t>& ranks = grid.ranks;
  const std::vector<int64_t>& iters = grid.iters;
  const View<kIdleBreakdownTable> id(ts);
  std::map<std::pair<int64_t, int64_t>, std::array<double, 3>> idle;
  for (size_t r = 0; r < id.rows(); ++r) {
    if (id.null(r, "iteration")) continue;
    auto& a = idle[{id.i(r, "rank"), id.i(r, "iteration")}];
    a[0] += id.d(r, "host_wait_ns"), a[1] += id.d(r, "kernel_wait_ns"), a[2] += id.d(r, "other_ns");
  }
  if (!idle.empty()) {
    Csv csv({"rank", "iteration", "host_wait_ns", "kernel_wait_ns", "other_ns"});
    const bool many = ranks.size() > info.many_ranks;
    if (!many) {
      StackedBars c;
      c.scale = kMs;
      c.value_label = "idle time, all streams (ms)";
      c.category_label = "rank / iteration";
      c.series = {"host_wait", "kernel_wait", "other"};
      c.series_colors = {"#edc948", "#76b7b2", "#bab0ac"};
      for (const auto& kv : idle) {
        c.categories.push_back(fmt::format("r{} i{}", kv.first.first, kv.first.second));
        c.cat_attrs.push_back(fmt::format(" data-rank=\"{}\" data-iteration=\"{}\"", kv.first.first,
                                          kv.first.second));
        c.values.push_back({kv.second[0], kv.second[1], kv.second[2]});
        csv.add({std::to_string(kv.first.first), std::to_string(kv.first.second), num(kv.second[0]),
                 num(kv.second[1]), num(kv.second[2])});
      }
      doc.figure(
          {"fig-idle", "idle_breakdown", "Idle by cause per rank and iteration", stacked_bars(c),
           "Idle gaps of every stream of the rank, summed over its streams, by cause: "
           "host_wait (the activity was launched after the stream went idle), kernel_wait "
           "(shorter than the 30 µs threshold), other (idle_breakdown).",
           "Idle by cause (`idle_breakdown`)", csv.text, "idle_breakdown summed over streams"});
    } else {
      Heatmap h;
      h.row_label = "rank";
      h.col_label = "iteration";
      h.value_label = "host wait (ms)";
      h.scale = kMs;
      h.row_attr = "data-rank";
      h.col_attr = "data-iteration";
      for (int64_t r : ranks) h.rows.push_back(std::to_string(r));
      for (int64_t i : iters) h.cols.push_back(std::to_string(i));
      h.values.assign(ranks.size(), std::vector<double>(iters.size(), std::nan("")));
      for (const auto& kv : idle) {
        const auto ri = std::lower_bound(ranks.begin(), ranks.end(), kv.first.first);
        const auto ci = std::lower_bound(iters.begin(), iters.end(), kv.first.second);
        if (ri == ranks.end() || ci == iters.end()) continue;
        h.values[static_cast<size_t>(ri - ranks.begin())][static_cast<size_t>(ci - iters.begin())] =
            kv.second[0];
        csv.add({std::to_string(kv.first.first), std::to_string(kv.first.second), num(kv.second[0]),
                 num(kv.second[1]), num(kv.second[2])});
      }
      doc.figure({"fig-idle", "idle_breakdown", "Host wait per rank and iteration", heatmap(h),
                  "Idle time whose activity was launched after the stream went idle (host_wait), "
                  "summed over the rank's streams (idle_breakdown); the CSV has every cause.",
                  "Idle by cause (`idle_breakdown`)", csv.text,
                  "idle_breakdown summed over streams"});
    }
  }
}

void time_section(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  doc.section("time", "Where the iteration time goes");
  end_to_end_figure(doc, ts);
  rank_components_figure(doc, ts, info);
  const RankIterations ri = split_figure(doc, ts, info);
  idle_figure(doc, ts, info, ri);
}

void throughput_section(Doc& doc, const TableStore& ts) {
  const View<kIterationsTable> it(ts);
  if (it.rows() == 0) return;
  doc.section("throughput", "Throughput: tokens per second and time per token");
  bool tokens = false;
  for (size_t r = 0; r < it.rows(); ++r) tokens = tokens || !it.null(r, "tokens_per_s");
  StackedBars c;
  c.category_label = "iteration";
  using Col = View<kIterationsTable>::Col;
  const Col shown = tokens ? Col("tokens_per_s") : Col("time_ns");
  c.series = {std::string(shown.h.name)};
  if (tokens) {
    c.value_label = "tokens per second (tokens/s)";
  } else {
    c.value_label = "iteration time (ms)";
    c.scale = kMs;
  }
  std::string t =
      "<table><tr><th>iteration</th><th>time</th><th>tokens/s</th><th>time per "
      "token</th><th>TFLOP/s per GPU</th><th>MFU</th></tr>";
  for (size_t r = 0; r < it.rows(); ++r) {
    const int64_t i = it.i(r, "iteration");
    c.categories.push_back(std::to_string(i));
    c.cat_attrs.push_back(fmt::format(" data-iteration=\"{}\"", i));
    c.values.push_back({it.d(r, shown)});
    auto cell = [&](Col col, double mul, const char* f) {
      return it.null(r, col) ? std::string("–") : fmt::format(fmt::runtime(f), it.d(r, col) * mul);
    };
    t += fmt::format(
        "<tr data-iteration=\"{}\" data-time-per-token-ns=\"{}\"><td>{}</td><td>{}</td><td>{}"
        "</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        i, num(it.d(r, "time_per_token_ns")), i, ms_text(it.d(r, "time_ns")),
        cell("tokens_per_s", 1, "{:.0f}"), cell("time_per_token_ns", 1e-3, "{:.3f} µs"),
        cell("tflops_per_gpu", 1, "{:.1f}"), cell("mfu", 100, "{:.1f}%"));
  }
  doc.figure({"fig-throughput", "iterations",
              tokens ? "Tokens per second per iteration" : "Iteration time (tokens unknown)",
              stacked_bars(c),
              tokens ? "Tokens per step (--tokens-per-step) divided by the shown rank's "
                       "iteration time (iterations.tokens_per_s); the table below gives the "
                       "time per token (time / tokens)."
                     : "The shown rank's iteration time (iterations.time_ns); give "
                       "--tokens-per-step for tokens per second and time per token.",
              "End to end (`iterations`, `end_to_end`)", csv_of(it.table(), all_rows(it)), ""});
  doc.body += t + "</table>\n";
}

// The rank shown in each iteration (iterations table): the significantly slowest, else the lowest.
std::map<int64_t, int64_t> slowest_ranks(const TableStore& ts) {
  const View<kIterationsTable> it(ts);
  std::map<int64_t, int64_t> m;
  for (size_t r = 0; r < it.rows(); ++r) m[it.i(r, "iteration")] = it.i(r, "shown_rank");
  return m;
}

const std::array<View<kWaterfallTable>::Col, 6> kPartCols = {"theoretical_ns", "instruction_ns",
                                                             "utilization_ns", "overlap_ns",
                                                             "frequency_ns",   "residual_ns"};
const std::vector<std::string> kParts = col_names(kPartCols);
const std::vector<std::string> kPartColors = {"#59a14f", "#b07aa1", "#f28e2b",
                                              "#e15759", "#4e79a7", "#bab0ac"};

void waterfall_section(Doc& doc, const TableStore& ts) {
  const View<kWaterfallTable> w(ts);
  doc.section("waterfall", "Waterfall: from theoretical to observed compute time");
  if (w.rows() == 0) {
    doc.empty_note("No waterfall: the run has no compute kernels with labels.");
    return;
  }
  const std::map<int64_t, int64_t> slow = slowest_ranks(ts);
  StackedBars c;
  c.horizontal = true;
  c.scale = kMs;
  c.value_label = "compute time (ms)";
  c.category_label = "iteration · phase";
  c.series = kParts;
  c.series_colors = kPartColors;
  std::vector<size_t> rows;
  for (size_t r = 0; r < w.rows(); ++r) {
    if (w.null(r, "iteration") || w.null(r, "phase") || !w.null(r, "operation")) continue;
    auto s = slow.find(w.i(r, "iteration"));
    if (s == slow.end() || s->second != w.i(r, "rank")) continue;
    rows.push_back(r);
    c.categories.push_back(
        fmt::format("i{} {} (rank {})", w.i(r, "iteration"), w.s(r, "phase"), w.i(r, "rank")));
    c.cat_attrs.push_back(fmt::format(
        " data-rank=\"{}\" data-iteration=\"{}\" data-phase=\"{}\" data-observed=\"{}\"",
        w.i(r, "rank"), w.i(r, "iteration"), esc(w.s(r, "phase")), w.i(r, "observed_ns")));
    std::vector<double> v;
    for (const auto& p : kPartCols) v.push_back(w.d(r, p));
    c.values.push_back(v);
  }
  if (!rows.empty())
    doc.figure({"fig-waterfall-phase", "waterfall", "Waterfall per phase (rank shown)",
                stacked_bars(c),
                "Σ kernel time of each phase of the shown rank's iteration split additively "
                "into the theoretical time (FLOPs or bytes at peak and maximum clock), "
                "instruction overhead, matrix-unit/memory under-use, slowdown beside "
                "communication, clock below maximum (DVFS) and the residual; the parts add up to "
                "observed_ns (waterfall, phase rows). Without telemetry or counters the parts "
                "that need them are 0 and their kernels counted in unknown_*.",
                "Waterfall (`waterfall`)", csv_of(w.table(), rows), ""});
  // per operation: the slowest rank of the last iteration, summed over layers
  if (slow.empty()) return;
  const int64_t it = slow.rbegin()->first, rank = slow.rbegin()->second;
  std::map<std::pair<std::string, std::string>, std::vector<double>> ops;
  for (size_t r = 0; r < w.rows(); ++r) {
    if (w.null(r, "operation") || w.i(r, "iteration") != it || w.i(r, "rank") != rank) continue;
    auto& v = ops[{w.s(r, "phase"), w.s(r, "operation")}];
    v.resize(kParts.size() + 1);
    for (size_t k = 0; k < kPartCols.size(); ++k) v[k] += w.d(r, kPartCols[k]);
    v[kParts.size()] += w.d(r, "observed_ns");
  }
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<double>>> top(ops.begin(),
                                                                                       ops.end());
  std::stable_sort(top.begin(), top.end(),
                   [](const auto& a, const auto& b) { return a.second.back() > b.second.back(); });
  if (top.size() > 20) top.resize(20);
  StackedBars o = c;
  o.categories.clear(), o.cat_attrs.clear(), o.values.clear();
  o.category_label = "operation · phase";
  std::vector<std::string> hdr = {"rank", "iteration", "phase", "operation"};
  for (const std::string& p : kParts) hdr.push_back(p);
  hdr.push_back("observed_ns");
  Csv csv(hdr);
  for (const auto& kv : top) {
    o.categories.push_back(kv.first.second + " · " + kv.first.first);
    o.cat_attrs.push_back(
        fmt::format(" data-phase=\"{}\" data-operation=\"{}\" data-observed=\"{}\"",
                    esc(kv.first.first), esc(kv.first.second), num(kv.second.back())));
    o.values.emplace_back(kv.second.begin(), kv.second.end() - 1);
    std::vector<std::string> row = {std::to_string(rank), std::to_string(it), kv.first.first,
                                    kv.first.second};
    for (double v : kv.second) row.push_back(num(v));
    csv.add(row);
  }
  doc.figure({"fig-waterfall-op", "waterfall",
              "Waterfall per operation (rank shown, last iteration)", stacked_bars(o),
              "The same parts per operation of the last iteration's slowest rank, summed over "
              "its layers (waterfall, operation rows), the 20 operations with the most "
              "observed time.",
              "Waterfall (`waterfall`)", csv.text, "waterfall operation rows summed over layers"});
}

void launch_section(Doc& doc, const TableStore& ts) {
  const View<kLaunchOverheadTable> l(ts);
  if (l.rows() == 0) return;
  doc.section("launch", "Launch overhead per operation");
  const std::array<View<kLaunchOverheadTable>::Col, 6> part_cols = {
      "prep_ns", "call_ns", "wait_ns", "graph_gap_ns", "gpu_wait_ns", "no_launch_ns"};
  const std::vector<std::string> parts = col_names(part_cols);
  std::map<std::string, std::vector<double>> ops;
  std::vector<int64_t> ranks, iters;
  for (size_t r = 0; r < l.rows(); ++r) {
    ranks.push_back(l.i(r, "rank"));
    if (!l.null(r, "iteration")) iters.push_back(l.i(r, "iteration"));
    auto& v = ops[l.null(r, "operation") ? std::string("(none)") : l.s(r, "operation")];
    v.resize(parts.size() + 2);
    for (size_t k = 0; k < parts.size(); ++k) v[k] += l.d(r, part_cols[k]);
    v[parts.size()] += l.d(r, "launch_overhead_ns");
    v[parts.size() + 1] += l.d(r, "kernels");
  }
  const double n = static_cast<double>(sorted_unique(ranks).size() *
                                       std::max<size_t>(1, sorted_unique(iters).size()));
  // the operations with the largest gaps (all causes), those with none left out
  std::vector<std::pair<std::string, std::vector<double>>> top;
  for (const auto& kv : ops) {
    double gap = 0;
    for (size_t k = 0; k < parts.size(); ++k) gap += kv.second[k];
    if (gap > 0) top.push_back(kv);
  }
  std::stable_sort(top.begin(), top.end(), [&parts](const auto& a, const auto& b) {
    double ga = 0, gb = 0;
    for (size_t k = 0; k < parts.size(); ++k) ga += a.second[k], gb += b.second[k];
    return ga > gb;
  });
  if (top.size() > 20) top.resize(20);
  StackedBars c;
  c.horizontal = true;
  c.scale = 1e3;
  c.value_label = "gap before the operation's kernels, mean per rank and iteration (µs)";
  c.category_label = "operation";
  c.series = {"prep (host late)", "call (launch latency)", "wait", "graph gap", "gpu wait",
              "no launch"};
  c.series_colors = {"#edc948", "#f28e2b", "#9c755f", "#76b7b2", "#e15759", "#bab0ac"};
  std::vector<std::string> hdr = {"operation"};
  for (const std::string& p : parts) hdr.push_back(p);
  hdr.insert(hdr.end(), {"launch_overhead_ns", "kernels", "rank_iterations"});
  Csv csv(hdr);
  for (const auto& kv : top) {
    c.categories.push_back(kv.first);
    c.cat_attrs.push_back(fmt::format(" data-operation=\"{}\" data-sum-launch-overhead-ns=\"{}\"",
                                      esc(kv.first), num(kv.second[parts.size()])));
    std::vector<double> v;
    for (size_t k = 0; k < parts.size(); ++k) v.push_back(kv.second[k] / n);
    c.values.push_back(v);
    std::vector<std::string> row = {kv.first};
    for (double x : kv.second) row.push_back(num(x));
    row.push_back(num(n));
    csv.add(row);
  }
  doc.figure({"fig-launch", "launch_overhead", "Launch overhead per operation", stacked_bars(c),
              fmt::format("GPU idle before the compute kernels of each operation, split by cause "
                          "(launch_overhead summed over ranks, iterations, phases and layers, "
                          "divided by the {} rank-iterations): prep = the host had not issued the "
                          "launch yet, call = launch latency, wait = launched but waiting on the "
                          "GPU, graph gap = between a graph's kernels, gpu wait = communication or "
                          "copies ran. The 20 operations with the largest gaps.",
                          num(n)),
              "Launch overhead (`launch_overhead`)", csv.text,
              "launch_overhead summed per operation"});
}

void distributions_section(Doc& doc, const TableStore& ts) {
  const View<kOperationInstancesTable> o(ts);
  if (o.rows() == 0) return;
  doc.section("distributions", "Operation time distributions, forward vs backward");
  struct Spec {
    const char* id;
    const char* title;
    std::vector<std::string> classes;
  };
  for (const Spec& sp : {Spec{"fig-dist-gemm", "GEMM operations", {"gemm"}},
                         Spec{"fig-dist-vector",
                              "Vector operations (norm, elementwise, "
                              "attention, embedding, loss)",
                              {"norm", "elementwise", "attention", "embedding", "loss"}}}) {
    std::map<std::string, double> total;
    std::map<std::pair<std::string, std::string>, std::vector<double>> groups;
    std::vector<size_t> rows;
    for (size_t r = 0; r < o.rows(); ++r) {
      if (o.null(r, "op_class") || o.null(r, "operation") || o.null(r, "phase")) continue;
      const std::string cls = o.s(r, "op_class"), ph = o.s(r, "phase");
      if (std::find(sp.classes.begin(), sp.classes.end(), cls) == sp.classes.end()) continue;
      if (ph != "forward" && ph != "backward") continue;
      const std::string op = o.s(r, "operation");
      total[op] += o.d(r, "kernel_ns");
      groups[{op, ph}].push_back(o.d(r, "kernel_ns"));
      rows.push_back(r);
    }
    if (groups.empty()) continue;
    std::vector<std::pair<double, std::string>> top;
    for (const auto& kv : total) top.emplace_back(-kv.second, kv.first);
    std::sort(top.begin(), top.end());
    if (top.size() > 12) top.resize(12);
    BoxPlot b;
    b.value_label = "kernel time per operation instance (µs)";
    b.scale = 1e3;
    b.log = true;
    b.legend = {"forward", "backward"};
    for (const auto& t : top)
      for (const char* ph : {"forward", "backward"}) {
        auto g = groups.find({t.second, ph});
        if (g == groups.end()) continue;
        b.groups.push_back(
            {t.second + " · " + ph,
             fmt::format(" data-operation=\"{}\" data-phase=\"{}\"", esc(t.second), ph),
             std::string_view(ph) == "forward" ? 0u : 1u, g->second});
      }
    std::string csv;
    std::string note;
    if (rows.size() <= kMaxCsvRows) {
      csv = csv_of(o.table(), rows);
    } else {
      Csv q({"operation", "phase", "n", "min_ns", "q1_ns", "median_ns", "q3_ns", "max_ns"});
      for (const BoxGroup& g : b.groups) {
        std::vector<double> v = g.values;
        std::sort(v.begin(), v.end());
        q.add({g.label.substr(0, g.label.rfind(" · ")), g.color == 0 ? "forward" : "backward",
               std::to_string(v.size()), num(v.front()), num(quantile(v, 0.25)),
               num(quantile(v, 0.5)), num(quantile(v, 0.75)), num(v.back())});
      }
      csv = q.text;
      note = kSummaryNote;
    }
    doc.figure({sp.id, "operation_instances", sp.title, box_plot(b),
                "Distribution over ranks, iterations and layers of the kernel time of each "
                "operation instance (operation_instances.kernel_ns), forward and backward: box = "
                "quartiles (linear interpolation), line = median, whiskers = min and max; the 12 "
                "operations with the most time.",
                "Communication per label (`exposed_comm`) and per operation instance "
                "(`operation_instances`)",
                csv, note});
  }
}

template <const auto& Def>
Heatmap rank_iter_heatmap(const View<Def>& v, typename View<Def>::Col value, const char* label,
                          double scale) {
  std::vector<int64_t> ranks, iters;
  for (size_t r = 0; r < v.rows(); ++r)
    if (!v.null(r, "iteration"))
      ranks.push_back(v.i(r, "rank")), iters.push_back(v.i(r, "iteration"));
  ranks = sorted_unique(ranks);
  iters = sorted_unique(iters);
  Heatmap h;
  h.row_label = "rank";
  h.col_label = "iteration";
  h.value_label = label;
  h.scale = scale;
  h.row_attr = "data-rank";
  h.col_attr = "data-iteration";
  for (int64_t r : ranks) h.rows.push_back(std::to_string(r));
  for (int64_t i : iters) h.cols.push_back(std::to_string(i));
  h.values.assign(ranks.size(), std::vector<double>(iters.size(), std::nan("")));
  for (size_t r = 0; r < v.rows(); ++r) {
    if (v.null(r, "iteration")) continue;
    const size_t ri = static_cast<size_t>(
        std::lower_bound(ranks.begin(), ranks.end(), v.i(r, "rank")) - ranks.begin());
    const size_t ci = static_cast<size_t>(
        std::lower_bound(iters.begin(), iters.end(), v.i(r, "iteration")) - iters.begin());
    h.values[ri][ci] = v.d(r, value);
  }
  return h;
}

void collectives_section(Doc& doc, const TableStore& ts) {
  const View<kCollectivesTable> c(ts);
  const View<kStragglersTable> st(ts);
  if (c.rows() == 0 && st.rows() == 0) return;
  doc.section("collectives", "Collectives");
  struct Spec {
    const char* id;
    View<kCollectivesTable>::Col col;
    const char* title;
    const char* label;
    double scale;
    bool matched_only;
    const char* how;
  };
  for (const Spec& sp :
       {Spec{"fig-coll-latency", "latency_ns", "Latency per collective type", "latency (µs)", 1e3,
             false,
             "the shortest duration over the ranks of each collective (collectives.latency_ns)"},
        Spec{"fig-coll-busbw", "busbw_gbs", "Bus bandwidth per collective type",
             "bus bandwidth (GB/s)", 1, false,
             "size × NCCL's bus factor / latency (collectives.busbw_gbs; collectives of unknown "
             "size are left out)"},
        Spec{"fig-coll-skew", "arrival_skew_ns", "Arrival skew per collective type",
             "arrival skew (µs)", 1e3, true,
             "latest start − earliest start over the ranks of each matched collective "
             "(collectives.arrival_skew_ns)"}}) {
    std::map<std::string, std::vector<double>> by;
    std::vector<size_t> rows;
    for (size_t r = 0; r < c.rows(); ++r) {
      if (c.null(r, sp.col)) continue;
      const std::string ty = c.null(r, "called") ? c.s(r, "type") : c.s(r, "called");
      by[ty].push_back(c.d(r, sp.col));
      rows.push_back(r);
    }
    if (by.empty()) continue;
    BoxPlot b;
    b.value_label = sp.label;
    b.scale = sp.scale;
    b.log = sp.col.h.name == "latency_ns";
    size_t k = 0;
    for (const auto& kv : by)
      b.groups.push_back(
          {kv.first, fmt::format(" data-type=\"{}\"", esc(kv.first)), k++, kv.second});
    (void)sp.matched_only;
    doc.figure({sp.id, "collectives", sp.title, box_plot(b),
                fmt::format("Distribution over the run's collectives of {}, per type called; box "
                            "= quartiles, line = median, whiskers = min and max.",
                            sp.how),
                "Collectives across ranks (`collectives`, `collective_summary`)",
                csv_of(c.table(), rows), ""});
  }
  if (st.rows() > 0) {
    doc.figure({"fig-coll-wait", "stragglers", "Waiting at collectives per rank and iteration",
                heatmap(rank_iter_heatmap(st, "coll_wait_ns", "wait (ms)", kMs)),
                "Σ over a rank's matched collectives of (latest arrival − own arrival) in each "
                "iteration (stragglers.coll_wait_ns): the rank the others wait for has the least.",
                "Stragglers (`stragglers`)", csv_of(st.table(), all_rows(st)), ""});
  }
}

void stragglers_section(Doc& doc, const TableStore& ts) {
  const View<kStragglersTable> st(ts);
  const View<kIterationsTable> it(ts);
  if (st.rows() == 0) return;
  doc.section("stragglers", "Stragglers");
  doc.figure({"fig-straggler-lead", "stragglers", "Lead per rank and iteration",
              heatmap(rank_iter_heatmap(st, "total_lead_ns", "total lead (ms)", kMs)),
              "Chopper's lead: for each operation instance found on several ranks, the latest "
              "first start over the ranks − this rank's (aligned clocks), summed over the "
              "iteration (stragglers.total_lead_ns). The straggler leads least.",
              "Stragglers (`stragglers`)", csv_of(st.table(), all_rows(st)), ""});
  if (it.rows() == 0) return;
  Lines l;
  l.x_label = "iteration";
  l.y_label = "time (ms)";
  l.y_scale = kMs;
  Line cost, lead;
  cost.name = "straggler cost";
  cost.color = 2;
  lead.name = "mean lead";
  cost.attrs = " data-col=\"straggler_cost_ns\"";
  lead.attrs = " data-col=\"straggler_lead_ns\"";
  for (size_t r = 0; r < it.rows(); ++r) {
    const double i = static_cast<double>(it.i(r, "iteration"));
    cost.x.push_back(i), cost.y.push_back(it.d(r, "straggler_cost_ns"));
    lead.x.push_back(i), lead.y.push_back(it.d(r, "straggler_lead_ns"));
  }
  l.lines = {cost, lead};
  l.y_min = 0;
  doc.figure({"fig-straggler-run", "iterations", "Straggler over the run", lines(l),
              "Per iteration: what the rank the others wait for costs (iterations."
              "straggler_cost_ns: the median rank's exposed communication − the least one's) and "
              "the mean lead of the other ranks over the least-lead rank "
              "(iterations.straggler_lead_ns).",
              "Stragglers (`stragglers`)", csv_of(it.table(), all_rows(it)), ""});
}

// The points of lines as CSV (name, x, y).
std::string cdf_csv(const Lines& l) {
  Csv c({"phase", "overlap_ratio", "cumulative_share"});
  for (const Line& line : l.lines)
    for (size_t i = 0; i < line.x.size(); ++i) c.add({line.name, num(line.x[i]), num(line.y[i])});
  return c.text;
}

void overlap_section(Doc& doc, const TableStore& ts) {
  const View<kOperationInstancesTable> o(ts);
  std::map<std::string, std::vector<double>> by;
  std::vector<size_t> rows;
  for (size_t r = 0; r < o.rows(); ++r) {
    if (o.null(r, "overlap_ratio") || o.null(r, "phase")) continue;
    by[o.s(r, "phase")].push_back(o.d(r, "overlap_ratio"));
    rows.push_back(r);
  }
  if (by.empty()) return;
  doc.section("overlap", "Overlap of compute with communication");
  Lines l;
  l.x_label = "overlap ratio (fraction of the operation's span with communication running)";
  l.y_label = "fraction of operation instances";
  l.y_min = 0, l.y_max = 1;
  size_t k = 0;
  for (auto& kv : by) {
    std::vector<double>& v = kv.second;
    std::sort(v.begin(), v.end());
    Line line;
    line.name = kv.first;
    line.attrs = fmt::format(" data-phase=\"{}\" data-n=\"{}\"", esc(kv.first), v.size());
    line.color = k++;
    line.step = true;
    const size_t n = v.size(), step = std::max<size_t>(1, n / 500);
    for (size_t i = 0; i < n; i += step) {
      const size_t j = std::min(n - 1, i + step - 1);
      line.x.push_back(v[j]);
      line.y.push_back(static_cast<double>(j + 1) / static_cast<double>(n));
    }
    if (line.y.empty() || line.y.back() != 1.0) line.x.push_back(v.back()), line.y.push_back(1.0);
    l.lines.push_back(line);
  }
  doc.figure({"fig-overlap-cdf", "operation_instances", "Overlap-ratio CDF per phase", lines(l),
              "Cumulative distribution over operation instances of Chopper's overlap ratio "
              "(operation_instances.overlap_ratio = |span ∩ union(communication)| / span), one "
              "curve per phase; y = share of instances with at most that ratio.",
              "Communication per label (`exposed_comm`) and per operation instance "
              "(`operation_instances`)",
              rows.size() <= kMaxCsvRows ? csv_of(o.table(), rows) : cdf_csv(l),
              rows.size() <= kMaxCsvRows ? std::string() : kSummaryNote});
}

// Where the hardware figures put time zero and the iteration boundaries: the lowest rank's
// iteration windows (its trace clock); times are drawn relative to the first iteration's start
// (exact int64 differences; the data-x attributes keep the table's nanoseconds).
struct TimeAxis {
  int64_t low_rank = 0;
  int64_t origin = 0;
  std::vector<Marker> marks;
};

TimeAxis iteration_axis(const TableStore& ts, const View<kTelemetryTable>& t) {
  TimeAxis ax;
  const View<kTemporalBreakdownTable> b(ts);
  int64_t low = std::numeric_limits<int64_t>::max();
  for (size_t r = 0; r < b.rows(); ++r)
    if (!b.null(r, "iteration")) low = std::min(low, b.i(r, "rank"));
  std::vector<std::pair<int64_t, int64_t>> starts;  // (start_ns, iteration)
  int64_t end = kNull;
  for (size_t r = 0; r < b.rows(); ++r)
    if (!b.null(r, "iteration") && b.i(r, "rank") == low) {
      starts.emplace_back(b.i(r, "start_ns"), b.i(r, "iteration"));
      end = std::max(end, b.i(r, "start_ns") + b.i(r, "total_ns"));
    }
  std::sort(starts.begin(), starts.end());
  int64_t origin = starts.empty() ? kNull : starts.front().first;
  if (origin == kNull)
    for (size_t r = 0; r < t.rows(); ++r)
      origin = std::min(t.i(r, "t_ns"), origin == kNull ? t.i(r, "t_ns") : origin);
  if (origin == kNull) origin = 0;
  std::vector<Marker> marks;
  for (const auto& st : starts)
    marks.push_back({static_cast<double>(st.first - origin), fmt::format("iter {}", st.second),
                     fmt::format(" data-iteration=\"{}\"", st.second), std::to_string(st.first)});
  if (end != kNull)
    marks.push_back(
        {static_cast<double>(end - origin), "end", " data-iteration=\"end\"", std::to_string(end)});
  ax.low_rank = low;
  ax.origin = origin;
  ax.marks = std::move(marks);
  return ax;
}

// One telemetry metric's figure: the first of `metrics` present, a line per rank, or quantile
// bands over the ranks when there are many.
struct TelemetryFigure {
  const char* id;
  std::vector<std::string> metrics;  // the first present is drawn
  const char* title;
  const char* label;
};

void telemetry_figure(Doc& doc, const View<kTelemetryTable>& t, const TelemetryFigure& sp,
                      std::map<std::string, std::vector<size_t>>& by_metric, const TimeAxis& ax,
                      size_t rank_count, bool many) {
  const int64_t origin = ax.origin;
  const int64_t low = ax.low_rank;
  const std::vector<Marker>& marks = ax.marks;
  std::string metric;
  for (const std::string& m : sp.metrics)
    if (by_metric.count(m)) {
      metric = m;
      break;
    }
  if (metric.empty()) return;
  const std::vector<size_t>& rows = by_metric[metric];
  Lines l;
  l.x_label = "time since the first iteration's start (s)";
  l.y_label = std::string(sp.label);
  l.x_scale = 1e9;
  l.markers = marks;
  std::string note, band_csv;
  if (!many) {
    std::map<int64_t, Line> per;
    for (size_t r : rows) {
      const int64_t rk = t.i(r, "rank");
      Line& line = per[rk];
      if (line.name.empty()) {
        line.name = fmt::format("rank {}", rk);
        line.attrs = fmt::format(" data-rank=\"{}\" data-metric=\"{}\"", rk, esc(metric));
        line.color = static_cast<size_t>(rk);
      }
      line.x.push_back(static_cast<double>(t.i(r, "t_ns") - origin));
      line.xi.push_back(t.i(r, "t_ns"));
      line.y.push_back(t.d(r, "value"));
    }
    for (auto& kv : per) l.lines.push_back(std::move(kv.second));
  } else {
    // quantile bands over ranks: each rank's mean in 200 time bins
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    auto rel = [&t, origin](size_t r) { return static_cast<double>(t.i(r, "t_ns") - origin); };
    for (size_t r : rows) lo = std::min(lo, rel(r)), hi = std::max(hi, rel(r));
    const size_t bins = 200;
    const double width = std::max(1.0, (hi - lo) / static_cast<double>(bins));
    std::map<int64_t, std::vector<std::pair<double, double>>> acc;  // rank -> (sum, n) per bin
    for (size_t r : rows) {
      auto& v = acc[t.i(r, "rank")];
      v.resize(bins);
      const size_t k = std::min(bins - 1, static_cast<size_t>((rel(r) - lo) / width));
      v[k].first += t.d(r, "value"), v[k].second += 1;
    }
    Band band;
    band.name = "ranks";
    band.attrs = fmt::format(" data-metric=\"{}\" data-ranks=\"{}\"", esc(metric), acc.size());
    for (size_t k = 0; k < bins; ++k) {
      std::vector<double> v;
      for (const auto& kv : acc)
        if (kv.second[k].second > 0) v.push_back(kv.second[k].first / kv.second[k].second);
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      band.x.push_back(lo + width * (static_cast<double>(k) + 0.5));
      band.lo.push_back(v.front()), band.q1.push_back(quantile(v, 0.25));
      band.med.push_back(quantile(v, 0.5)), band.q3.push_back(quantile(v, 0.75));
      band.hi.push_back(v.back());
    }
    Csv bc({"metric", "t_ns", "min", "q1", "median", "q3", "max"});
    for (size_t k = 0; k < band.x.size(); ++k)
      bc.add({metric, std::to_string(static_cast<int64_t>(band.x[k]) + origin), num(band.lo[k]),
              num(band.q1[k]), num(band.med[k]), num(band.q3[k]), num(band.hi[k])});
    band_csv = bc.text;
    l.bands.push_back(std::move(band));
    note = fmt::format(
        " With {} ranks each rank's samples are averaged in 200 time bins and the bands show "
        "the min–max and quartiles over the ranks, the line their median.",
        rank_count);
  }
  doc.figure(
      {sp.id, "telemetry", sp.title, lines(l),
       fmt::format("The {} samples of each GPU (telemetry, metric {}) on the rank's "
                   "trace clock; vertical lines mark the iteration boundaries of rank "
                   "{} (temporal_breakdown).{}",
                   metric, metric, low, note),
       "Alignment", band_csv.empty() ? csv_of(t.table(), rows) : band_csv,
       band_csv.empty() ? std::string() : "the bands drawn; the samples are in chopper.sqlite"});
}

// power_energy: phase rows stacked per rank and iteration, or a heatmap with many ranks.
void energy_figure(Doc& doc, const View<kPowerEnergyTable>& pe, bool many) {
  std::vector<size_t> whole, phases;
  std::vector<std::string> names;
  for (size_t r = 0; r < pe.rows(); ++r) {
    if (pe.null(r, "iteration")) continue;
    if (pe.null(r, "phase")) {
      whole.push_back(r);
    } else {
      phases.push_back(r);
      names.push_back(pe.s(r, "phase"));
    }
  }
  if (whole.empty()) return;
  if (!many) {
    StackedBars c;
    c.value_label = "energy (J)";
    c.category_label = "rank / iteration";
    c.series = sorted_unique_s(names);
    std::map<std::pair<int64_t, int64_t>, size_t> cat;
    std::sort(whole.begin(), whole.end(), [&pe](size_t x, size_t y) {
      return std::pair(pe.i(x, "rank"), pe.i(x, "iteration")) <
             std::pair(pe.i(y, "rank"), pe.i(y, "iteration"));
    });
    for (size_t r : whole) {
      cat[{pe.i(r, "rank"), pe.i(r, "iteration")}] = c.categories.size();
      c.categories.push_back(fmt::format("r{} i{}", pe.i(r, "rank"), pe.i(r, "iteration")));
      c.cat_attrs.push_back(
          fmt::format(" data-rank=\"{}\" data-iteration=\"{}\" data-energy-j=\"{}\"",
                      pe.i(r, "rank"), pe.i(r, "iteration"), num(pe.d(r, "energy_j"))));
      c.values.emplace_back(c.series.size(), std::nan(""));
    }
    for (size_t r : phases) {
      auto k = cat.find({pe.i(r, "rank"), pe.i(r, "iteration")});
      if (k == cat.end()) continue;
      const size_t s = static_cast<size_t>(
          std::lower_bound(c.series.begin(), c.series.end(), pe.s(r, "phase")) - c.series.begin());
      c.values[k->second][s] = pe.d(r, "energy_j");
    }
    std::vector<size_t> rows = whole;
    rows.insert(rows.end(), phases.begin(), phases.end());
    doc.figure({"fig-energy", "power_energy", "Energy per iteration per GPU", stacked_bars(c),
                "∫ power dt of each rank's GPU over each iteration window, split by the phase "
                "whose activity held the GPU (idle = none) (power_energy, phase rows; the whole "
                "window's energy_j is the bar's data-energy-j).",
                "Energy model (`power_energy`, `kernel_hw.energy_j`)", csv_of(pe.table(), rows),
                ""});
  } else {
    doc.figure({"fig-energy", "power_energy", "Energy per iteration per GPU",
                heatmap(rank_iter_heatmap(pe, "energy_j", "energy (J)", 1)),
                "∫ power dt of each rank's GPU over each iteration window (power_energy, "
                "whole-window rows).",
                "Energy model (`power_energy`, `kernel_hw.energy_j`)", csv_of(pe.table(), whole),
                ""});
  }
}

void hardware_section(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  const View<kTelemetryTable> t(ts);
  const View<kPowerEnergyTable> pe(ts);
  if (t.rows() == 0 && pe.rows() == 0) {
    doc.section("hardware", "Power, clocks and temperature");
    doc.empty_note("No telemetry: give --telemetry files or put them in the run's directory.");
    return;
  }
  doc.section("hardware", "Power, clocks and temperature");
  const TimeAxis ax = iteration_axis(ts, t);
  std::map<std::string, std::vector<size_t>> by_metric;
  std::vector<int64_t> ranks;
  for (size_t r = 0; r < t.rows(); ++r) {
    by_metric[t.s(r, "metric")].push_back(r);
    ranks.push_back(t.i(r, "rank"));
  }
  ranks = sorted_unique(ranks);
  const bool many = ranks.size() > info.many_ranks;
  for (const TelemetryFigure& sp :
       {TelemetryFigure{
            "fig-power", {"power_w", "power_avg_w"}, "Board power per GPU", "power (W)"},
        TelemetryFigure{"fig-clock", {"sm_clock_mhz"}, "SM/GFX clock per GPU", "clock (MHz)"},
        TelemetryFigure{"fig-temp",
                        {"temp_hotspot_c", "temp_gpu_c"},
                        "Temperature per GPU",
                        "temperature (°C)"}})
    telemetry_figure(doc, t, sp, by_metric, ax, ranks.size(), many);
  energy_figure(doc, pe, many);
}

void coverage_section(Doc& doc, const TableStore& ts) {
  const View<kLabelCoverageTable> c(ts);
  const View<kDiagnosticsTable> d(ts);
  doc.section("coverage", "Label coverage and diagnostics");
  if (c.rows() > 0) {
    std::map<std::string, std::array<double, 2>> lv;
    std::vector<size_t> rows;
    for (size_t r = 0; r < c.rows(); ++r) {
      if (c.s(r, "scope") != "in_iterations") continue;
      lv[c.s(r, "level")][c.null(r, "rule") ? 1 : 0] += c.d(r, "kernel_ns");
      rows.push_back(r);
    }
    StackedBars b;
    b.horizontal = true;
    b.scale = kMs;
    b.value_label = "GPU time of activities launched in an iteration, all ranks (ms)";
    b.category_label = "level";
    b.series = {"labelled", "not labelled"};
    b.series_colors = {"#59a14f", "#e15759"};
    Csv csv({"level", "labelled_kernel_ns", "unlabelled_kernel_ns"});
    for (const char* level : {"iteration", "phase", "layer", "operation", "op_class"}) {
      auto it = lv.find(level);
      if (it == lv.end()) continue;
      b.categories.emplace_back(level);
      b.cat_attrs.push_back(fmt::format(" data-level=\"{}\"", level));
      b.values.push_back({it->second[0], it->second[1]});
      csv.add({level, num(it->second[0]), num(it->second[1])});
    }
    if (!b.categories.empty())
      doc.figure({"fig-coverage", "label_coverage", "Label coverage per level", stacked_bars(b),
                  "GPU time of the activities launched inside an iteration that a rule labelled "
                  "at each level, and the time left unlabelled (label_coverage, scope "
                  "in_iterations, summed over ranks and rules; the table has each rule).",
                  "Hierarchy aggregation (`chopper tree`, `chopper analyze`)", csv.text,
                  "label_coverage summed per level"});
  }
  std::string t =
      "<div class=\"scroll\"><table><tr><th>severity</th><th>kind</th><th>rank</th>"
      "<th>file</th><th>count</th><th>example</th></tr>";
  const size_t shown = std::min<size_t>(d.rows(), 200);
  for (size_t r = 0; r < shown; ++r)
    t += fmt::format(
        "<tr data-kind=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}"
        "</td><td>{}</td></tr>",
        esc(d.s(r, "kind")), esc(d.s(r, "severity")), esc(d.s(r, "kind")),
        d.null(r, "rank") ? std::string() : std::to_string(d.i(r, "rank")), esc(d.s(r, "file")),
        d.null(r, "count")
            ? std::string()
            : std::to_string(d.i(r, "count")) + (d.null(r, "of_count")
                                                     ? std::string()
                                                     : " of " + std::to_string(d.i(r, "of_count"))),
        esc(d.s(r, "example")));
  t += "</table></div>";
  if (d.rows() == 0)
    t = "<p>No diagnostics: every file read cleanly and the run is consistent.</p>";
  doc.figure({"tbl-diagnostics", "diagnostics", "Diagnostics", t,
              fmt::format("What the readers and the validation found ({} rows{}): unreadable "
                          "files, anomalies by kind with an example, link rates.",
                          d.rows(), d.rows() > shown ? ", the first 200 shown" : ""),
              "`chopper info`", csv_of(d.table(), all_rows(d)), ""});
}

constexpr std::string_view kStyle = R"(
body{font-family:sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#1f2d3d;color:#fff;padding:12px 24px}header h1{margin:0;font-size:20px}
nav{padding:6px 24px;background:#e8ecf0;font-size:13px}nav a{margin-right:12px}
main{padding:8px 24px;max-width:1300px}
section{margin-bottom:28px}h2{border-bottom:1px solid #ccc;padding-bottom:4px}
figure{margin:12px 0 20px;background:#fff;border:1px solid #ddd;padding:8px 12px}
figure h3{margin:4px 0 6px;font-size:15px}.plot{overflow-x:auto}
figcaption{font-size:12px;color:#444;max-width:1000px}
svg .grid{stroke:#e4e4e4}svg .axis{stroke:#555}svg .marker{stroke:#888;stroke-dasharray:4 3}
svg .axis-title{font-weight:bold}
table{border-collapse:collapse;font-size:12px;margin:6px 0}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
table.kv th{background:#f0f0f0}tr.insig{color:#888}.scroll{max-height:360px;overflow:auto}
.none{color:#777;font-style:italic}
)";

// Records script errors and blocked requests (Content-Security-Policy violations) where a test
// can read them (#chopper-errors), and the time to the load event (#chopper-load-ms).
constexpr std::string_view kScript = R"(
(function(){var e=[];function put(){var p=document.getElementById('chopper-errors');if(p)p.textContent=e.join('\n');}
function rec(m){e.push(m);put();}
window.addEventListener('error',function(ev){rec('error: '+(ev.message||ev.type));});
document.addEventListener('securitypolicyviolation',function(ev){rec('blocked: '+ev.violatedDirective+' '+ev.blockedURI);});
window.addEventListener('load',function(){put();var t=document.getElementById('chopper-load-ms');if(t)t.textContent=String(Math.round(performance.now()));
document.body.setAttribute('data-figures',String(document.querySelectorAll('figure').length));});})();
)";

}  // namespace

namespace {

// The one inline script's hash, as the Content-Security-Policy names it (base64 of its SHA-256):
// only that script runs; an inline script or event handler anywhere else is blocked.
const std::string& script_hash() {
  static const std::string h = base64(sha256(kScript));
  return h;
}

// The page around the sections: the strict Content-Security-Policy, the style, the script that
// records errors, the table of contents.
std::string page(Doc& doc, const char* heading, const ReportInfo& info,
                 std::vector<std::string>* figure_ids) {
  doc.body += "</section>\n";
  std::string nav;
  for (const auto& s : doc.toc)
    nav += fmt::format("<a href=\"#{}\">{}</a>", s.first, esc(s.second));
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'; script-src 'sha256-{}'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width\">\n"
      "<title>{}: {}</title>\n<style>{}</style>\n<script>{}</script>\n</head>\n"
      "<body data-report=\"chopper\">\n<header><h1>{}</h1><div>{}</div></header>\n"
      "<nav>{}</nav>\n<main>\n{}</main>\n"
      "<footer><pre id=\"chopper-errors\" hidden></pre><pre id=\"chopper-load-ms\" hidden></pre>"
      "</footer>\n</body></html>\n",
      script_hash(), heading, esc(info.title), kStyle, kScript, heading, esc(info.title), nav,
      doc.body);
  if (figure_ids != nullptr) *figure_ids = doc.ids;
  return html;
}

// ---------------------------------------------------------------------------------------------
// The comparison (`chopper compare --html`), from the tables compare writes.

template <const auto& Def>
std::string opt_num(const View<Def>& v, size_t r, typename View<Def>::Col col, double mul,
                    const char* f) {
  return v.null(r, col) ? std::string("–") : fmt::format(fmt::runtime(f), v.d(r, col) * mul);
}

void compare_runs_section(Doc& doc, const TableStore& ts) {
  const View<kSweepTable> sw(ts);
  if (sw.rows() == 0) return;
  doc.section("runs", "Runs",
              "Every run against the first (the baseline): the slowest rank's iteration time, "
              "mean over iterations, and what it gives per token.");
  std::string t =
      "<table><tr><th>run</th><th>ranks</th><th>iterations</th><th>iteration</th><th>vs "
      "baseline</th><th>tokens/s</th><th>time per token</th><th>energy per token</th></tr>";
  for (size_t r = 0; r < sw.rows(); ++r)
    t += fmt::format(
        "<tr data-run=\"{}\" data-iteration-ns=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}"
        "</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        esc(sw.s(r, "run")), num(sw.d(r, "iteration_ns")), esc(sw.s(r, "run")), sw.i(r, "ranks"),
        sw.i(r, "iterations"), ms_text(sw.d(r, "iteration_ns")),
        opt_num(sw, r, "iteration_diff_points", 1, "{:+.1f} points"),
        opt_num(sw, r, "tokens_per_s", 1, "{:.0f}"),
        opt_num(sw, r, "time_per_token_ns", 1e-3, "{:.3f} µs"),
        opt_num(sw, r, "energy_per_token_j", 1e3, "{:.3f} mJ"));
  doc.body += t + "</table>\n";
  // The sweep: one bar per run for each measure the runs have.
  struct Measure {
    View<kSweepTable>::Col col;
    const char* id;
    const char* title;
    const char* axis;
    double scale;
    const char* how;
  };
  const Measure ms[] = {
      {"iteration_ns", "fig-sweep-iteration", "Iteration time per run", "iteration time (ms)", kMs,
       "The slowest rank's iteration time, mean over the run's iterations (sweep.iteration_ns)."},
      {"tokens_per_s", "fig-sweep-throughput", "Tokens per second per run", "tokens per second", 1,
       "Tokens per step divided by the iteration time (sweep.tokens_per_s)."},
      {"time_per_token_ns", "fig-sweep-time-per-token", "Time per token per run",
       "time per token (µs)", 1e3,
       "Iteration time divided by tokens per step "
       "(sweep.time_per_token_ns)."},
      {"energy_per_token_j", "fig-sweep-energy-per-token", "Energy per token per run",
       "energy per token (mJ)", 1e-3,
       "The job's energy over the iterations (all GPUs, from telemetry) divided by the tokens "
       "(sweep.energy_per_token_j)."}};
  for (const Measure& m : ms) {
    bool any = false;
    for (size_t r = 0; r < sw.rows(); ++r) any = any || !sw.null(r, m.col);
    if (!any) continue;
    StackedBars c;
    c.value_label = m.axis;
    c.category_label = "run";
    c.scale = m.scale;
    c.series = {std::string(m.col.h.name)};
    c.series_colors = {std::string(palette(0))};
    for (size_t r = 0; r < sw.rows(); ++r) {
      c.categories.push_back(sw.s(r, "run"));
      c.cat_attrs.push_back(fmt::format(" data-run=\"{}\"", esc(sw.s(r, "run"))));
      c.values.push_back({sw.null(r, m.col) ? std::nan("") : sw.d(r, m.col)});
    }
    doc.figure({m.id, "sweep", m.title, stacked_bars(c), m.how, "Comparison",
                csv_of(sw.table(), all_rows(sw)), ""});
  }
}

void compare_components_section(Doc& doc, const TableStore& ts) {
  const View<kCompareComponentsTable> cc(ts);
  if (cc.rows() == 0) return;
  doc.section("components", "Where the difference is",
              "The slowest rank's iteration split into the same components as analyze's "
              "end_to_end (compute by phase.class, exposed communication, waiting for a "
              "straggler, host stall, host late, launch latency, idle ...), per run, and each "
              "run's difference from the baseline, largest first.");
  // Runs in order: the baseline, then each compared run.
  std::vector<std::string> runs;
  std::vector<std::string> comps;
  std::map<std::pair<std::string, std::string>, double> v;  // (run, component) -> ns
  for (size_t r = 0; r < cc.rows(); ++r) {
    const std::string a = cc.s(r, "baseline"), b = cc.s(r, "run"), k = cc.s(r, "component");
    if (runs.empty()) runs.push_back(a);
    if (std::find(runs.begin(), runs.end(), b) == runs.end()) runs.push_back(b);
    if (std::find(comps.begin(), comps.end(), k) == comps.end()) comps.push_back(k);
    v[{a, k}] = cc.d(r, "a_ns");
    v[{b, k}] = cc.d(r, "b_ns");
  }
  std::sort(comps.begin(), comps.end());
  StackedBars c;
  c.value_label = "time per iteration (ms)";
  c.category_label = "run";
  c.scale = kMs;
  c.series = comps;
  for (const std::string& k : comps) c.series_colors.push_back(component_color(k));
  for (const std::string& run : runs) {
    c.categories.push_back(run);
    c.cat_attrs.push_back(fmt::format(" data-run=\"{}\"", esc(run)));
    std::vector<double> row;
    for (const std::string& k : comps) {
      auto f = v.find({run, k});
      row.push_back(f == v.end() ? std::nan("") : f->second);
    }
    c.values.push_back(std::move(row));
  }
  doc.figure({"fig-compare-split", "compare_components", "Iteration time split per run",
              stacked_bars(c),
              "Each run's mean per iteration of the slowest rank's components "
              "(compare_components.a_ns for the baseline, b_ns for the run).",
              "Comparison", csv_of(cc.table(), all_rows(cc)), ""});
  // The differences, largest |diff| first (the table's order), up to 16 bars.
  StackedBars d;
  d.value_label = "difference from the baseline (ms per iteration)";
  d.category_label = "run: component";
  d.scale = kMs;
  d.horizontal = true;
  d.series = {"diff_ns"};
  d.series_colors = {"#e15759"};
  std::vector<size_t> rows;
  for (size_t r = 0; r < cc.rows(); ++r)
    if (cc.d(r, "diff_ns") != 0) rows.push_back(r);
  std::stable_sort(rows.begin(), rows.end(), [&](size_t x, size_t y) {
    return std::fabs(cc.d(x, "diff_ns")) > std::fabs(cc.d(y, "diff_ns"));
  });
  if (rows.size() > 16) rows.resize(16);
  if (rows.empty()) {
    doc.empty_note("No component differs from the baseline.");
    return;
  }
  for (size_t r : rows) {
    d.categories.push_back(cc.s(r, "run") + ": " + cc.s(r, "component"));
    d.cat_attrs.push_back(fmt::format(" data-run=\"{}\" data-component=\"{}\"", esc(cc.s(r, "run")),
                                      esc(cc.s(r, "component"))));
    d.values.push_back({cc.d(r, "diff_ns")});
  }
  doc.figure({"fig-compare-diff", "compare_components", "Largest differences from the baseline",
              stacked_bars(d),
              "b_ns − a_ns per component (compare_components.diff_ns), the 16 largest in "
              "magnitude (zero differences left out); positive = the run spends longer.",
              "Comparison", csv_of(cc.table(), rows), "the rows drawn"});
}

// The rows of a pair table with the largest |diff_ns| (up to n), as an HTML table.
// A column of a comparison list and its heading.
template <const auto& Def>
struct ListCol {
  typename View<Def>::Col col;
  const char* heading;
};

template <const auto& Def>
void compare_list(Doc& doc, const TableStore& ts, const char* id, const char* title,
                  const std::vector<ListCol<Def>>& cols, size_t n) {
  const View<Def> v(ts);
  const std::string_view table = Def.name;
  if (v.rows() == 0) return;
  std::vector<size_t> rows = all_rows(v);
  std::stable_sort(rows.begin(), rows.end(), [&](size_t x, size_t y) {
    return std::fabs(v.d(x, "diff_ns")) > std::fabs(v.d(y, "diff_ns"));
  });
  if (rows.size() > n) rows.resize(n);
  std::string t = fmt::format("<h3 id=\"{}\">{}</h3><table><tr><th>run</th>", id, esc(title));
  for (const auto& c : cols) t += fmt::format("<th>{}</th>", esc(c.heading));
  t += "<th>baseline</th><th>run</th><th>difference</th><th>status</th></tr>";
  for (size_t r : rows) {
    t += fmt::format("<tr data-diff-ns=\"{}\"><td>{}</td>", num(v.d(r, "diff_ns")),
                     esc(v.s(r, "run")));
    for (const auto& c : cols) {
      std::string x;
      if (!v.null(r, c.col)) {
        const Cell cell = v.table()->cell(r, c.col.h.index);
        x = cell.kind == Cell::kText  ? std::string(cell.s)
            : cell.kind == Cell::kInt ? std::to_string(cell.i)
                                      : label_num(cell.r);
      }
      t += "<td>" + esc(x) + "</td>";
    }
    t += fmt::format("<td>{}</td><td>{}</td><td>{:+.3f} ms</td><td>{}</td></tr>",
                     ms_text(v.d(r, "a_ns")), ms_text(v.d(r, "b_ns")), v.d(r, "diff_ns") / kMs,
                     esc(v.s(r, "status")));
  }
  doc.body += t + "</table>\n";
  doc.body += fmt::format(
      "<p><a class=\"csv\" download=\"{}.csv\" href=\"data:text/csv;base64,"
      "{}\">Download table {} (CSV, {} rows)</a></p>\n",
      table, base64(csv_of(v.table(), all_rows(v))), table, v.rows());
}

void compare_findings_section(Doc& doc, const TableStore& ts) {
  const View<kCompareFindingsTable> f(ts);
  if (f.rows() == 0) return;
  doc.section("findings", "Findings that changed",
              "Each run's significant findings (analyze's findings) against the baseline's: "
              "appeared, disappeared, grew or shrank.");
  std::string t =
      "<table class=\"findings\"><tr><th>run</th><th>finding</th><th>change</th><th>baseline"
      "</th><th>run</th><th>difference</th></tr>";
  for (size_t r = 0; r < f.rows(); ++r)
    t += fmt::format(
        "<tr data-finding=\"{}\" data-change=\"{}\" data-diff-ns=\"{}\"><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{:+.3f} ms</td></tr>",
        esc(f.s(r, "finding")), esc(f.s(r, "change")), num(f.d(r, "diff_ns")), esc(f.s(r, "run")),
        esc(f.s(r, "title")), esc(f.s(r, "change")), ms_text(f.d(r, "a_cost_ns")),
        ms_text(f.d(r, "b_cost_ns")), f.d(r, "diff_ns") / kMs);
  doc.body += t + "</table>\n";
}

}  // namespace

std::string render_report(const TableStore& ts, const ReportInfo& info,
                          std::vector<std::string>* figure_ids) {
  Doc doc;
  summary_section(doc, ts, info);
  findings_section(doc, ts);
  time_section(doc, ts, info);
  throughput_section(doc, ts);
  waterfall_section(doc, ts);
  launch_section(doc, ts);
  distributions_section(doc, ts);
  collectives_section(doc, ts);
  stragglers_section(doc, ts);
  overlap_section(doc, ts);
  hardware_section(doc, ts, info);
  coverage_section(doc, ts);
  return page(doc, "chopper report", info, figure_ids);
}

std::string render_compare_report(const TableStore& ts, const ReportInfo& info,
                                  std::vector<std::string>* figure_ids) {
  Doc doc;
  compare_runs_section(doc, ts);
  compare_components_section(doc, ts);
  if (ts.get(std::string(kCompareOperationsTable.name)) != nullptr ||
      ts.get(std::string(kCompareKernelsTable.name)) != nullptr) {
    doc.section("operations", "Operations, kernels and collectives",
                "Matched by place in the hierarchy (phase, layer, operation), kernel name, and "
                "collective type and size; the largest differences per iteration (per rank) "
                "first; slower or faster only beyond run-to-run noise (docs/metrics.md, "
                "Comparison).");
    compare_list<kCompareOperationsTable>(
        doc, ts, "tbl-operations", "Operations",
        {{"phase", "phase"}, {"layer", "layer"}, {"operation", "operation"}}, 20);
    compare_list<kCompareKernelsTable>(doc, ts, "tbl-kernels", "Kernels", {{"name", "kernel"}}, 20);
    compare_list<kCompareCollectivesTable>(doc, ts, "tbl-collectives", "Collectives",
                                           {{"type", "type"}, {"size_bytes", "size (bytes)"}}, 20);
  }
  compare_findings_section(doc, ts);
  return page(doc, "chopper compare", info, figure_ids);
}

}  // namespace chopper::html
