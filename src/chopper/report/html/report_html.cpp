#include "chopper/report/html/report_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <string_view>

#include "chopper/base/thread_pool.hpp"
#include "chopper/report/analysis_report.hpp"
#include "chopper/report/compare_report.hpp"
#include "chopper/report/cpu_report.hpp"
#include "chopper/report/csv_sink.hpp"
#include "chopper/report/diagnostics_report.hpp"
#include "chopper/report/findings_report.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/hierarchy_report.hpp"
#include "chopper/report/html/html_common.hpp"
#include "chopper/report/html/svg.hpp"
#include "chopper/report/rank_tables.hpp"
#include "chopper/report/work_report.hpp"

namespace chopper::html {

void TableStore::begin(const TableSchema& schema) {
  cur_ = nullptr;
  if (!selects_table(keep_, schema.name)) return;
  const TableSchema kept = select_columns(schema, keep_, &kept_);
  if (kept_.size() == schema.columns.size()) kept_.clear();  // every column: no gather a row
  tables_.erase(schema.name);
  cur_ = &tables_.emplace(schema.name, Table(kept)).first->second;
}
void TableStore::row(std::span<const Cell> cells) {
  if (cur_ == nullptr) return;
  if (kept_.empty()) return cur_->add_row(cells);
  cells_.resize(kept_.size());
  for (size_t k = 0; k < kept_.size(); ++k) cells_[k] = cells[kept_[k]];
  cur_->add_row(cells_);
}
void TableStore::end() {
  cur_ = nullptr;
}
void TableStore::add(Table t) {
  if (!selects_table(keep_, t.name())) return;
  std::vector<size_t> kept;
  const TableSchema schema = select_columns(t.schema(), keep_, &kept);
  if (kept.size() != t.cols()) {  // the columns not kept dropped
    Table p(schema);
    p.reserve(t.rows());
    std::vector<Cell> cells(kept.size());
    for (size_t r = 0; r < t.rows(); ++r) {
      for (size_t k = 0; k < kept.size(); ++k) cells[k] = t.cell(r, kept[k]);
      p.add_row(cells);
    }
    t = std::move(p);
  }
  const std::string name = t.name();
  tables_.erase(name);
  tables_.emplace(name, std::move(t));
}
const Table* TableStore::get(const std::string& name) const {
  auto it = tables_.find(name);
  return it == tables_.end() ? nullptr : &it->second;
}

TableSelection report_tables() {
  TableSelection out;
  for (std::string_view t :
       {kTemporalBreakdownTable.name, kRankComponentsTable.name,   kIdleBreakdownTable.name,
        kCollectivesTable.name,       kStragglersTable.name,       kIterationsTable.name,
        kEndToEndTable.name,          kTelemetryTable.name,        kPowerEnergyTable.name,
        kFindingsTable.name,          kLabelCoverageTable.name,    kDiagnosticsTable.name,
        kClockOffsetsTable.name,      kCpuUtilizationTable.name,   kTelemetryAlignmentTable.name,
        kCollectiveSummaryTable.name, kTopKernelsTable.name,       kRooflineTable.name,
        kKernelDurationsTable.name,   kCounterOperationsTable.name})
    out.emplace(t, std::vector<std::string>{});
  // The three tables with a row per operation instance (most of the cells at scale): the columns
  // the figures draw and those that name the row.
  out.emplace(
      columns_of<kOperationInstancesTable>({"rank", "iteration", "phase", "layer", "operation",
                                            "op_class", "kernel_ns", "overlap_ratio"}));
  out.emplace(columns_of<kLaunchOverheadTable>(
      {"rank", "iteration", "operation", "kernels", "gpu_wait_ns", "prep_ns", "call_ns", "wait_ns",
       "graph_gap_ns", "no_launch_ns", "launch_overhead_ns"}));
  out.emplace(columns_of<kWaterfallTable>(
      {"rank", "iteration", "phase", "operation", "kernels", "observed_ns", "theoretical_ns",
       "instruction_ns", "utilization_ns", "overlap_ns", "frequency_ns", "residual_ns"}));
  return out;
}

std::string base64(std::string_view in) {
  static constexpr char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string o((in.size() + 2) / 3 * 4, '=');
  char* p = o.data();
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3, p += 4) {
    const uint32_t v = (static_cast<uint8_t>(in[i]) << 16) |
                       (static_cast<uint8_t>(in[i + 1]) << 8) | static_cast<uint8_t>(in[i + 2]);
    p[0] = k[v >> 18], p[1] = k[(v >> 12) & 63], p[2] = k[(v >> 6) & 63], p[3] = k[v & 63];
  }
  if (i + 1 == in.size()) {  // one byte left: two characters and "=="
    const uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    p[0] = k[v >> 18], p[1] = k[(v >> 12) & 63];
  } else if (i + 2 == in.size()) {  // two: three characters and "="
    const uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8);
    p[0] = k[v >> 18], p[1] = k[(v >> 12) & 63], p[2] = k[(v >> 6) & 63];
  }
  return o;
}

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

std::string csv_field(std::string_view s) {
  std::string o;
  append_csv_field(o, s);
  return o;
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

namespace {

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

std::string metric_link(std::string_view section) {
  return fmt::format("<a class=\"def\" href=\"docs/metrics.md#{}\">docs/metrics.md § {}</a>",
                     esc(anchor(section)), esc(section));
}

}  // namespace

void Doc::section(const std::string& id, const std::string& title, const std::string& intro) {
  if (!ids.empty() || !toc.empty())
    body += "</section>\n";
  else
    first_open = body.size();
  body += fmt::format("<section id=\"{}\"><h2>{}</h2>\n", id, esc(title));
  if (!intro.empty()) body += "<p>" + intro + "</p>\n";
  toc.emplace_back(id, title);
}

void Doc::append(Doc&& part) {
  const bool open = !ids.empty() || !toc.empty();  // part's first section closes the one open
  const size_t at = body.size();
  if (open && part.first_open != std::string::npos) {
    body.append(part.body, 0, part.first_open);
    body += "</section>\n";
    body.append(part.body, part.first_open);
  } else {
    body += part.body;
    if (first_open == std::string::npos && part.first_open != std::string::npos)
      first_open = at + part.first_open;
  }
  ids.insert(ids.end(), std::make_move_iterator(part.ids.begin()),
             std::make_move_iterator(part.ids.end()));
  toc.insert(toc.end(), std::make_move_iterator(part.toc.begin()),
             std::make_move_iterator(part.toc.end()));
}

void Doc::figure(const Figure& f) {
  ids.push_back(f.id);
  const size_t lines = static_cast<size_t>(std::count(f.csv.begin(), f.csv.end(), '\n'));
  // Into the page as it is (a figure's chart can be a megabyte: no copy of it on the way).
  fmt::format_to(
      std::back_inserter(body),
      "<figure id=\"{}\" data-table=\"{}\"><h3>{}</h3>\n<div class=\"plot\">{}</div>\n"
      "<figcaption>{} Definition: {}. <a class=\"csv\" download=\"{}.csv\" "
      "href=\"data:text/csv;base64,{}\">Download the data (CSV, {} rows{})</a></figcaption>"
      "</figure>\n",
      f.id, esc(f.table), esc(f.title), f.svg, f.caption, metric_link(f.section), f.id,
      base64(f.csv), lines > 0 ? lines - 1 : 0,
      f.csv_note.empty() ? fmt::format(" of table {}", esc(f.table)) : ", " + f.csv_note);
}

std::string ms_text(double ns) {
  return fixed(ns / kMs, 3) + " ms";
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

namespace {

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
.panel{display:inline-block;vertical-align:top}
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

// The one inline script's hash, as the Content-Security-Policy names it (base64 of its SHA-256):
// only that script runs; an inline script or event handler anywhere else is blocked.
const std::string& script_hash() {
  static const std::string h = base64(sha256(kScript));
  return h;
}

// The page before its sections: the strict Content-Security-Policy, the style, the script that
// records errors, the header and the table of contents.
std::string page_head(const char* heading, const ReportInfo& info,
                      const std::vector<std::pair<std::string, std::string>>& toc) {
  std::string nav;
  for (const auto& s : toc) nav += fmt::format("<a href=\"#{}\">{}</a>", s.first, esc(s.second));
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'; script-src 'sha256-{}'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width\">\n"
      "<title>{}: {}</title>\n<style>{}</style>\n<script>{}</script>\n</head>\n"
      "<body data-report=\"chopper\">\n<header><h1>{}</h1><div>{}</div></header>\n"
      "<nav>{}</nav>\n<main>\n",
      script_hash(), heading, esc(info.title), kStyle, kScript, heading, esc(info.title), nav);
}

// After the sections: the last one closed, the footer.
constexpr std::string_view kPageEnd =
    "</section>\n</main>\n<footer><pre id=\"chopper-errors\" hidden></pre><pre "
    "id=\"chopper-load-ms\" hidden></pre></footer>\n</body></html>\n";

// The whole page around `doc`'s sections.
std::string page(const Doc& doc, const char* heading, const ReportInfo& info,
                 std::vector<std::string>* figure_ids) {
  std::string html = page_head(heading, info, doc.toc);
  html.reserve(html.size() + doc.body.size() + kPageEnd.size());
  html += doc.body;
  html += kPageEnd;
  if (figure_ids != nullptr) *figure_ids = doc.ids;
  return html;
}

}  // namespace

std::string render_report(const TableStore& ts, const ReportInfo& info,
                          std::vector<std::string>* figure_ids) {
  // The sections only read the tables: each is drawn on a Doc of its own, side by side, and
  // the parts joined in the page's order (the same page as drawn one after another). The heavier
  // (their work measured on a 64-rank run: the GPU × time heatmaps, then the sections with a row
  // per operation instance) are started first, so that the threads finish together.
  struct Part {
    int weight;  // 0: light
    std::function<void(Doc&)> draw;
  };
  const std::vector<Part> sections = {{0, [&](Doc& d) { summary_section(d, ts, info); }},
                                      {0, [&](Doc& d) { findings_section(d, ts); }},
                                      {2, [&](Doc& d) { time_section(d, ts, info); }},
                                      {0, [&](Doc& d) { throughput_section(d, ts); }},
                                      {0, [&](Doc& d) { kernels_section(d, ts, info); }},
                                      {1, [&](Doc& d) { waterfall_section(d, ts); }},
                                      {2, [&](Doc& d) { launch_section(d, ts); }},
                                      {1, [&](Doc& d) { distributions_section(d, ts); }},
                                      {0, [&](Doc& d) { collectives_section(d, ts); }},
                                      {0, [&](Doc& d) { stragglers_section(d, ts); }},
                                      {1, [&](Doc& d) { overlap_section(d, ts); }},
                                      {3, [&](Doc& d) { hardware_section(d, ts, info); }},
                                      {0, [&](Doc& d) { counters_section(d, ts); }},
                                      {0, [&](Doc& d) { cpu_section(d, ts); }},
                                      {0, [&](Doc& d) { coverage_section(d, ts); }}};
  std::vector<size_t> order(sections.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&sections](size_t a, size_t b) {
    return sections[a].weight > sections[b].weight;
  });
  std::vector<Doc> parts(sections.size());
  parallel_for(sections.size(), info.threads == 0 ? default_threads() : info.threads,
               [&](size_t k) { sections[order[k]].draw(parts[order[k]]); });
  // The parts joined into the page itself, after its head (whose contents list the parts'
  // sections): the megabytes of the sections copied once.
  std::vector<std::pair<std::string, std::string>> toc;
  size_t bytes = kPageEnd.size();
  for (const Doc& part : parts) {
    toc.insert(toc.end(), part.toc.begin(), part.toc.end());
    bytes += part.body.size() + 16;  // and a "</section>" each
  }
  Doc doc;
  doc.body = page_head("chopper report", info, toc);
  doc.body.reserve(doc.body.size() + bytes);
  for (Doc& part : parts) doc.append(std::move(part));
  doc.body += kPageEnd;
  if (figure_ids != nullptr) *figure_ids = std::move(doc.ids);
  return std::move(doc.body);
}

std::string render_compare_report(const TableStore& ts, const ReportInfo& info,
                                  std::vector<std::string>* figure_ids) {
  Doc doc;
  compare_runs_section(doc, ts);
  compare_components_section(doc, ts);
  compare_operations_section(doc, ts);
  compare_findings_section(doc, ts);
  return page(doc, "chopper compare", info, figure_ids);
}

}  // namespace chopper::html
