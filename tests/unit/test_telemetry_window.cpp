// Windowed telemetry reading (TelemetryWindow, telemetry_reader.hpp): a file whose rows ascend in
// time is read only in the time ranges a run can use, plus its first and last rows; what is left
// out is counted ("rows_outside_window"); a file that does not allow it (time going back, a
// header that changes, slow sampling) is read whole. Checked against reading the same file whole:
// the rows read are the same inside the ranges, and the series aligned to a synthetic run's trace
// clock are identical.
#include <gtest/gtest.h>
#include <isa-l/igzip_lib.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/ingest/telemetry/csv.hpp"
#include "chopper/ingest/telemetry/telemetry_reader.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/pipeline/load.hpp"
#include "chopper/synth/synth.hpp"
#include "compress_util.hpp"

namespace chopper {
namespace {

using chopper::test::gzip;
using chopper::test::zstd;

namespace fs = std::filesystem;

constexpr Ns kJan2026 = Ns{1767225600} * 1000000000;
constexpr Ns kS = 1000000000;
constexpr Ns kMs = 1000000;

const std::string kHeader =
    "timestamp, index, power.draw [W], clocks.current.sm [MHz], utilization.gpu [%], "
    "clocks_event_reasons.active\n";

// One nvidia-smi row per GPU every `period` from `t0`, `n` samples; values vary with the sample.
std::string rows(Ns t0, Ns period, int n, int gpus = 2, int first = 0) {
  std::string s;
  for (int k = first; k < first + n; ++k)
    for (int g = 0; g < gpus; ++g)
      s += telemetry::format_calendar(t0 + static_cast<Ns>(k - first) * period) + ", " +
           std::to_string(g) + ", " + std::to_string(100 + (k * 7 + g * 13) % 500) + ".25 W, " +
           std::to_string(1400 + (k * 11) % 580) + " MHz, " + std::to_string((k * 3 + g) % 101) +
           " %, 0x0000000000000004\n";
  return s;
}

TelemetryWindow local_window(Ns from, Ns to, Ns pad = 20 * kMs, int periods = 2) {
  TelemetryWindow w;
  w.local = {{from, to}};
  w.pad_ns = pad;
  w.pad_periods = periods;
  w.min_file_bytes = 0;
  return w;
}

TelemetryData read_mem(const std::string& text, const TelemetryWindow& w = {}) {
  auto src = ByteSource::from_memory(text, "smi.csv");
  TelemetryReadOptions o;
  o.window = w;
  return read_telemetry(*src, o);
}

std::string temp_file(const std::string& name, const std::string& bytes) {
  const std::string p =
      (fs::temp_directory_path() / ("chopper_window_" + std::to_string(::getpid()) + "_" + name))
          .string();
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

// The samples of `s` within [lo, hi].
std::pair<std::vector<Ns>, std::vector<double>> within(const Series& s, Ns lo, Ns hi) {
  std::pair<std::vector<Ns>, std::vector<double>> r;
  for (size_t i = 0; i < s.size(); ++i)
    if (s.t_ns[i] >= lo && s.t_ns[i] <= hi) {
      r.first.push_back(s.t_ns[i]);
      r.second.push_back(s.value[i]);
    }
  return r;
}

// `part` read through a window [from, to] has, in every series, the samples `whole` has within
// [from - pad, to + pad], its first and last sample, and nothing that `whole` does not have.
void expect_same_inside(const TelemetryData& whole, const TelemetryData& part, Ns from, Ns to,
                        Ns pad) {
  ASSERT_EQ(part.series.size(), whole.series.size());
  for (size_t i = 0; i < whole.series.size(); ++i) {
    const Series& w = whole.series[i];
    const Series& p = part.series[i];
    ASSERT_EQ(p.gpu.index, w.gpu.index);
    ASSERT_EQ(p.metric, w.metric);
    EXPECT_EQ(within(p, from - pad, to + pad), within(w, from - pad, to + pad)) << p.source;
    ASSERT_FALSE(p.t_ns.empty());
    EXPECT_EQ(p.t_ns.front(), w.t_ns.front());
    EXPECT_EQ(p.t_ns.back(), w.t_ns.back());
    size_t j = 0;  // p ⊆ w, both ascending
    for (size_t k = 0; k < p.size(); ++k) {
      while (j < w.size() && w.t_ns[j] < p.t_ns[k]) ++j;
      ASSERT_LT(j, w.size());
      EXPECT_EQ(w.t_ns[j], p.t_ns[k]);
      EXPECT_EQ(w.value[j], p.value[k]);
    }
  }
}

// Whole and windowed reads that fell back must be the same read.
void expect_identical(const TelemetryData& a, const TelemetryData& b) {
  EXPECT_EQ(a.samples, b.samples);
  ASSERT_EQ(a.series.size(), b.series.size());
  for (size_t i = 0; i < a.series.size(); ++i) {
    EXPECT_EQ(a.series[i].t_ns, b.series[i].t_ns);
    EXPECT_EQ(a.series[i].value, b.series[i].value);
  }
  ASSERT_EQ(a.diagnostics.entries().size(), b.diagnostics.entries().size());
  for (size_t i = 0; i < a.diagnostics.entries().size(); ++i) {
    EXPECT_EQ(a.diagnostics.entries()[i].kind, b.diagnostics.entries()[i].kind);
    EXPECT_EQ(a.diagnostics.entries()[i].count, b.diagnostics.entries()[i].count);
  }
  EXPECT_EQ(b.diagnostics.count("rows_outside_window"), 0u);
}

TEST(TelemetryWindow, PlainFileReadsOnlyTheRangeAndCountsTheRest) {
  // 200 s of 2 GPUs at 10 ms; the range is one second, 100 s in.
  const std::string text = kHeader + rows(kJan2026, 10 * kMs, 20000);
  const Ns from = kJan2026 + 100 * kS, to = from + kS;
  const TelemetryData whole = read_mem(text);
  const TelemetryData part = read_mem(text, local_window(from, to));
  expect_same_inside(whole, part, from, to, 20 * kMs);
  // The range (1 s + 2 × 20 ms: 105 samples of 2 GPUs) and the first and last 64 lines.
  EXPECT_LE(part.samples, 2 * 105u + 2 * 64u);
  EXPECT_GE(part.samples, 2 * 103u + 2 * 64u);
  // The rows left out are counted from their size: every row of this file has the same length
  // but for the digits of the values, so the estimate is within 1%.
  const uint64_t out = part.diagnostics.count("rows_outside_window");
  const double expected = static_cast<double>(whole.samples - part.samples);
  EXPECT_NEAR(static_cast<double>(out), expected, 0.01 * expected);
  const auto& e = part.diagnostics.entries();
  ASSERT_FALSE(e.empty());
  bool seen = false;
  for (const auto& x : e)
    if (x.kind == "rows_outside_window") {
      seen = true;
      ASSERT_FALSE(x.examples.empty());
      EXPECT_EQ(x.examples.front().rfind("bytes ", 0), 0u) << x.examples.front();
      // After the first 64 lines (32 samples of 2 GPUs, 10 ms apart).
      EXPECT_NE(x.examples.front().find("stamped 2026/01/01 00:00:00.320 to"), std::string::npos)
          << x.examples.front();
    }
  EXPECT_TRUE(seen);
  // A range outside the recording: only the first and last rows.
  const TelemetryData none = read_mem(text, local_window(kJan2026 - 3600 * kS, kJan2026 - 10 * kS));
  EXPECT_EQ(none.samples, 2 * 64u);
  ASSERT_FALSE(none.series.empty());
  EXPECT_EQ(none.series[0].t_ns.front(), whole.series[0].t_ns.front());
  EXPECT_EQ(none.series[0].t_ns.back(), whole.series[0].t_ns.back());
  // A UTC range says nothing about a file stamped in local time: read whole.
  TelemetryWindow utc;
  utc.utc = {{from, to}};
  utc.min_file_bytes = 0;
  expect_identical(whole, read_mem(text, utc));
  // A file below min_file_bytes is read whole.
  TelemetryWindow big = local_window(from, to);
  big.min_file_bytes = text.size() + 1;
  expect_identical(whole, read_mem(text, big));
}

TEST(TelemetryWindow, CompressedFileCountsRowsExactly) {
  const std::string text = kHeader + rows(kJan2026, 10 * kMs, 20000);
  const std::string path = temp_file("smi.csv.gz", gzip(text));
  const TelemetryData whole = read_telemetry_file(path);
  TelemetryReadOptions o;
  // Every row's time is read: the rows outside are counted exactly.
  for (const Ns from : {kJan2026 + 100 * kS, kJan2026 + 150 * kS, kJan2026 + 199990 * kMs}) {
    const Ns to = std::min(from + kS, kJan2026 + 200 * kS);
    o.window = local_window(from, to);
    const TelemetryData part = read_telemetry_file(path, o);
    expect_same_inside(whole, part, from, to, 20 * kMs);
    EXPECT_EQ(part.diagnostics.count("rows_outside_window"), whole.samples - part.samples);
    EXPECT_LT(part.samples, whole.samples / 50);
    for (const auto& x : part.diagnostics.entries())
      if (x.kind == "rows_outside_window") {
        ASSERT_FALSE(x.examples.empty());
        EXPECT_EQ(x.examples.front().rfind("lines ", 0), 0u) << x.examples.front();
      }
  }
  std::remove(path.c_str());
}

TEST(TelemetryWindow, TimeGoingBackIsReadWhole) {
  const Ns from = kJan2026 + 100 * kS, to = from + kS;
  // A clock reset (back one hour) half way, the range after it: the probes see it.
  {
    const std::string text = kHeader + rows(kJan2026 + 3600 * kS, 10 * kMs, 10000) +
                             rows(kJan2026, 10 * kMs, 15000, 2, 10000);
    expect_identical(read_mem(text), read_mem(text, local_window(from, to)));
  }
  // Two samples out of order (0.5 s back) inside the range: seen among the rows read.
  {
    std::string a = rows(kJan2026, 10 * kMs, 10050), b = rows(kJan2026 + 100550 * kMs, 10 * kMs, 1),
                c = rows(kJan2026 + 100510 * kMs, 10 * kMs, 10000, 2, 10051);
    const std::string text = kHeader + a + b + c;
    const TelemetryData whole = read_mem(text);
    ASSERT_GT(whole.diagnostics.count("out_of_order"), 0u);
    expect_identical(whole, read_mem(text, local_window(from, to)));
  }
  // A clock reset before the range in a compressed file: every row's time is seen.
  {
    const std::string text = kHeader + rows(kJan2026 + 150 * kS, 10 * kMs, 3000) +
                             rows(kJan2026, 10 * kMs, 15000, 2, 3000);
    const std::string path = temp_file("reset.csv.gz", gzip(text));
    TelemetryReadOptions o;
    o.window = local_window(from, to);
    expect_identical(read_telemetry_file(path), read_telemetry_file(path, o));
    std::remove(path.c_str());
  }
}

TEST(TelemetryWindow, AHeaderThatChangesIsReadWhole) {
  const Ns from = kJan2026 + 100 * kS, to = from + kS;
  // The layout changes (a column more) 50 s in, the range after it: the rows read through the
  // first header's layout do not fit, plain or compressed.
  std::string second = rows(kJan2026 + 50 * kS, 10 * kMs, 10000);
  std::string widened;
  for (size_t p = 0; p < second.size();) {
    const size_t nl = second.find('\n', p);
    widened += second.substr(p, nl - p) + ", 40 %\n";
    p = nl + 1;
  }
  const std::string text = kHeader + rows(kJan2026, 10 * kMs, 5000) +
                           "timestamp, index, power.draw [W], clocks.current.sm [MHz], "
                           "utilization.gpu [%], clocks_event_reasons.active, "
                           "utilization.memory [%]\n" +
                           widened;
  const TelemetryData whole = read_mem(text);
  expect_identical(whole, read_mem(text, local_window(from, to)));
  const std::string path = temp_file("header.csv.gz", gzip(text));
  TelemetryReadOptions o;
  o.window = local_window(from, to);
  expect_identical(whole, read_telemetry_file(path, o));
  std::remove(path.c_str());
}

TEST(TelemetryWindow, SlowSamplingIsReadWideEnough) {
  // Samples every 2 s; the refinement needs 2 periods (4 s) either side, more than the 20 ms
  // guessed first: read again, widened.
  const std::string text = kHeader + rows(kJan2026, 2 * kS, 3000);
  const Ns from = kJan2026 + 3000 * kS, to = from + 10 * kS;
  const TelemetryData whole = read_mem(text);
  const TelemetryData part = read_mem(text, local_window(from, to));
  expect_same_inside(whole, part, from, to, 4 * kS);
  EXPECT_LT(part.samples, whole.samples / 10);
}

TEST(TelemetryWindow, TruncatedFiles) {
  // Every prefix of a file, read through a range in its middle: the same error as a whole read,
  // or the same rows inside the range and the same cut last line.
  const std::string text = kHeader + rows(kJan2026, 100 * kMs, 300);
  const Ns from = kJan2026 + 12 * kS, to = from + 2 * kS;
  for (size_t k = 0; k <= text.size(); k += k < 400 ? 1 : 37) {
    const std::string cut = text.substr(0, k);
    std::string whole_error, part_error;
    TelemetryData whole, part;
    try {
      whole = read_mem(cut);
    } catch (const InputError& e) {
      whole_error = e.what();
    }
    try {
      part = read_mem(cut, local_window(from, to));
    } catch (const InputError& e) {
      part_error = e.what();
    }
    EXPECT_EQ(part_error, whole_error) << "cut at " << k;
    if (!whole_error.empty()) continue;
    EXPECT_EQ(part.diagnostics.count("truncated_line"), whole.diagnostics.count("truncated_line"))
        << "cut at " << k;
    ASSERT_EQ(part.series.size(), whole.series.size()) << "cut at " << k;
    for (size_t i = 0; i < whole.series.size(); ++i)
      EXPECT_EQ(within(part.series[i], from - 20 * kMs, to + 20 * kMs),
                within(whole.series[i], from - 20 * kMs, to + 20 * kMs))
          << "cut at " << k;
  }
  // A compressed file cut after the range.
  const std::string big = kHeader + rows(kJan2026, 10 * kMs, 20000);
  const std::string cut = big.substr(0, big.size() - 40);
  const std::string path = temp_file("cut.csv.gz", gzip(cut));
  TelemetryReadOptions o;
  o.window = local_window(kJan2026 + 199 * kS, kJan2026 + 300 * kS);
  const TelemetryData part = read_telemetry_file(path, o);
  EXPECT_EQ(part.diagnostics.count("truncated_line"), 1u);
  const TelemetryData whole = read_mem(cut);
  expect_same_inside(whole, part, kJan2026 + 199 * kS, kJan2026 + 300 * kS, 20 * kMs);
  std::remove(path.c_str());
}

TEST(TelemetryWindow, FastDecimalsAreReadAsFromCharsReadsThem) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const int digits = 1 + static_cast<int>(rng() % 17);
    std::string s;
    for (int d = 0; d < digits; ++d) s += static_cast<char>('0' + rng() % 10);
    if (rng() % 3 != 0) s.insert(1 + rng() % s.size(), ".");
    if (s.back() == '.') s += "5";
    const std::string with_unit = s + (rng() % 2 ? " W" : "");
    double v = 0, ref = 0;
    std::string_view unit;
    ASSERT_EQ(telemetry::parse_quantity(with_unit, v, unit), telemetry::ValueStatus::kOk) << s;
    std::from_chars(s.data(), s.data() + s.size(), ref);
    EXPECT_EQ(v, ref) << s;
  }
}

TEST(TelemetryWindow, CalendarTextRoundTrips) {
  for (Ns t : {kJan2026, kJan2026 + 5123 * kMs, Ns{951782400} * kS + 86399999 * kMs}) {
    Ns back = 0;
    ASSERT_TRUE(telemetry::parse_calendar(telemetry::format_calendar(t), back));
    EXPECT_EQ(back, t) << telemetry::format_calendar(t);
  }
  EXPECT_EQ(telemetry::format_calendar(kJan2026 + 5123 * kMs), "2026/01/01 00:00:05.123");
}

// ---------------------------------------------------------------------------------------------
// Through alignment: a synthetic run, its telemetry lengthened to two minutes around the traced
// span, read through telemetry_window() and whole.

// The generator's rows restamped before and after it, `before` and `after` samples, in the same
// format (nvidia-smi local time, or amd-smi epoch ms).
std::string lengthen(const std::string& file, int before, int after, bool amd) {
  std::ifstream in(file);
  std::string header, line;
  std::getline(in, header);
  std::vector<std::pair<Ns, std::string>> rows;  // time, the rest of the row (", index, ...")
  while (std::getline(in, line)) {
    const size_t c = line.find(',');
    Ns t = 0;
    if (amd) {
      int64_t ms = 0;
      std::from_chars(line.data(), line.data() + c, ms);
      t = ms * kMs;
    } else {
      EXPECT_TRUE(telemetry::parse_calendar(line.substr(0, c), t));
    }
    rows.push_back({t, line.substr(c)});
  }
  EXPECT_GT(rows.size(), 4u);
  size_t gpus = 1;
  while (gpus < rows.size() && rows[gpus].first == rows[0].first) ++gpus;
  const Ns period = rows[gpus].first - rows[0].first;
  const size_t samples = rows.size() / gpus;
  auto stamp = [&](Ns t) { return amd ? std::to_string(t / kMs) : telemetry::format_calendar(t); };
  std::string out = header + "\n";
  auto filler = [&](Ns t, size_t k) {
    for (size_t g = 0; g < gpus; ++g)
      out += stamp(t) + rows[(k % samples) * gpus + g].second + "\n";
  };
  for (int k = before; k > 0; --k) filler(rows[0].first - k * period, static_cast<size_t>(k));
  for (const auto& [t, rest] : rows) out += stamp(t) + rest + "\n";
  for (int k = 1; k <= after; ++k)
    filler(rows.back().first + k * period, static_cast<size_t>(k) * 7);
  return out;
}

void check_aligned(const std::string& device) {
  SynthConfig c;
  c.device = device;
  c.layers = 2;
  c.ranks = 2;
  c.gpus_per_node = 2;
  c.iterations = 2;
  c.seq = 2048;
  c.threads = 2;
  c.counters = false;
  const fs::path dir = fs::temp_directory_path() /
                       ("chopper_window_run_" + std::to_string(::getpid()) + "_" + device);
  fs::remove_all(dir);
  const SynthSummary sum = synthesize(c, dir.string());
  ASSERT_EQ(sum.telemetry_files.size(), 1u);
  const bool amd = sum.telemetry_files[0].find("amd-smi") != std::string::npos;
  // 70 s before the traced span, 50 s after.
  const std::string text = lengthen(sum.telemetry_files[0], 7000, 5000, amd);
  std::ofstream(sum.telemetry_files[0], std::ios::binary) << text;
  chopper::Run run = load_run(sum.trace_files);
  TelemetryWindow w = telemetry_window(run);
  ASSERT_FALSE(w.empty());
  w.min_file_bytes = 0;
  HardwareFiles part = load_hardware({dir.string()}, {}, {}, 2, w);
  HardwareFiles whole = load_hardware({dir.string()}, {}, {}, 2);
  ASSERT_EQ(part.telemetry.size(), 1u);
  ASSERT_EQ(whole.telemetry.size(), 1u);
  EXPECT_LT(part.telemetry[0].samples, whole.telemetry[0].samples / 10);
  EXPECT_GT(part.telemetry[0].diagnostics.count("rows_outside_window"), 0u);
  const HardwareRun a = align_hardware(run, std::move(part.telemetry), {});
  const HardwareRun b = align_hardware(run, std::move(whole.telemetry), {});
  ASSERT_EQ(a.telemetry.size(), 1u);
  EXPECT_EQ(a.telemetry[0].method.rfind("none", 0), std::string::npos) << a.telemetry[0].method;
  EXPECT_EQ(a.telemetry[0].offset_ns, b.telemetry[0].offset_ns);
  EXPECT_EQ(a.telemetry[0].uncertainty_ns, b.telemetry[0].uncertainty_ns);
  EXPECT_EQ(a.telemetry[0].period_ns, b.telemetry[0].period_ns);
  EXPECT_EQ(a.telemetry[0].correlation, b.telemetry[0].correlation);
  EXPECT_EQ(a.telemetry[0].method, b.telemetry[0].method);
  EXPECT_EQ(a.telemetry[0].ranks, b.telemetry[0].ranks);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  size_t compared = 0;
  for (size_t r = 0; r < a.ranks.size(); ++r)
    for (size_t m = 0; m < static_cast<size_t>(kMetricCount); ++m) {
      EXPECT_EQ(a.ranks[r].series[m].t_ns, b.ranks[r].series[m].t_ns) << r << " " << m;
      EXPECT_EQ(a.ranks[r].series[m].value, b.ranks[r].series[m].value) << r << " " << m;
      compared += a.ranks[r].series[m].size();
    }
  EXPECT_GT(compared, 100u);
  fs::remove_all(dir);
}

TEST(TelemetryWindow, AlignedSeriesAreTheWholeFilesNvidiaLocalTime) {
  check_aligned("h100");
}

TEST(TelemetryWindow, AlignedSeriesAreTheWholeFilesAmdUtc) {
  check_aligned("mi300x");
}

TEST(TelemetryWindow, RangesForEveryOffsetTheAlignmentTries) {
  SynthConfig c;
  c.layers = 2;
  c.ranks = 2;
  c.gpus_per_node = 2;
  c.iterations = 1;
  c.seq = 2048;
  c.threads = 2;
  c.telemetry = false;
  const fs::path dir =
      fs::temp_directory_path() / ("chopper_window_ranges_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const SynthSummary sum = synthesize(c, dir.string());
  chopper::Run run = load_run(sum.trace_files);
  const TelemetryWindow w = telemetry_window(run);
  ASSERT_EQ(w.utc.size(), 1u);
  ASSERT_EQ(w.local.size(), 113u);  // every quarter hour from -14 h to +14 h
  const Ns width = w.utc[0].second - w.utc[0].first;
  EXPECT_GE(width, 2 * kS + 1);  // the span and a margin of at least 1 s either side
  EXPECT_EQ(w.local[56], w.utc[0]);
  EXPECT_EQ(w.local[60].first - w.local[56].first, 3600 * kS);
  HardwareAlignOptions o;
  o.utc_offset_known = true;
  o.utc_offset_h = -5.5;
  const TelemetryWindow k = telemetry_window(run, o);
  ASSERT_EQ(k.local.size(), 1u);
  EXPECT_EQ(k.local[0].first, w.utc[0].first - 19800 * kS);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace chopper
