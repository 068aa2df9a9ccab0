#pragma once
// Shared by the counter readers (not a public header): the per-format entry points and a builder
// that gathers (row, counter, value) cells into a CounterTable.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/ingest/json_document.hpp"
#include "chopper/ingest/rocprof/csv_split.hpp"
#include "chopper/model/series.hpp"

namespace chopper::rocprof {

// Each reader gets the bytes already read by the sniffer in `head`, then reads the rest of `src`.
CounterTable read_counter_collection_csv(ByteSource& src, std::string head);
CounterTable read_kernel_trace_csv(ByteSource& src, std::string head);
CounterTable read_rocprof_json(ByteSource& src, std::string head);
CounterTable read_chopper_kernel_csv(ByteSource& src, std::string head);
CounterTable read_chopper_samples_csv(ByteSource& src, std::string head);

// Number parsing for CSV fields: false for empty or malformed text (spaces around are trimmed).
bool parse_i64(std::string_view s, int64_t& out);
bool parse_f64(std::string_view s, double& out);  // finite values only
// Agent ids are written as numbers ("4") or as text ("Agent 4", "GPU 0"): the trailing integer.
bool parse_agent(std::string_view s, int32_t& out);

// "line N: <text>" with the text cut to 160 bytes, for diagnostics examples.
std::string example(uint64_t line_no, std::string_view text);

// A header row: column index by lower-cased name.
class Header {
 public:
  void assign(const csv::Splitter& row);
  int col(std::string_view lower_name) const {
    auto it = index_.find(std::string(lower_name));
    return it == index_.end() ? -1 : it->second;
  }
  size_t size() const { return names_.size(); }
  // Whether `row` repeats this header (a second file appended to the first).
  bool is_repeat(const csv::Splitter& row) const;

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, int> index_;
};

// Plausibility of a counter value (docs/counter_formats.md, "Limits and ranges"): finite, >= 0,
// at most kMaxCounterValue and, for a dispatch whose duration is known, at most
// kMaxCountsPerNs x its duration in ns + kCounterSlack. The per-ns bound is above every counter
// kind's own: cycles (10 GHz x 1,024 units x 4 per cycle = 4.1e4 per ns), bytes (1e5 per ns is
// 100 TB/s) and FLOPs (2e7 per ns is 20 PFLOP/s).
inline constexpr double kMaxCounterValue = 1e18;
inline constexpr double kMaxCountsPerNs = 1e8;
inline constexpr double kCounterSlack = 1e9;
// Checks every counter of `row` (values already in the table): one out of range becomes NaN (not
// collected) and is counted ("counter_out_of_range").
void drop_implausible_counters(CounterTable& t, size_t row);
// Removes the rows `drop` marks (parallel to the rows), keeping the others in order.
void remove_rows(CounterTable& t, const std::vector<bool>& drop);

// Collects rows and counter cells; finish() builds the dense values matrix.
class TableBuilder {
 public:
  explicit TableBuilder(CounterTable& t) : t_(t) {}
  size_t add_row();  // a row with every field absent
  size_t counter(std::string_view name);
  void add_cell(size_t row, size_t counter, double v) {
    cells_.push_back({static_cast<uint32_t>(row), static_cast<uint32_t>(counter), v});
  }
  // Row of a key, or SIZE_MAX. Keys are (process, kind, id); kind tells dispatch from correlation.
  size_t find(int64_t pid, int kind, int64_t id) const;
  void bind(int64_t pid, int kind, int64_t id, size_t row);
  // Builds values[]; repeated (row, counter) cells are summed and counted under `repeat_kind`
  // (not counted without one: summing is then the format's rule). Then every row's counters
  // are checked (drop_implausible_counters).
  void finish() { finish(nullptr); }
  void finish(DiagKind repeat_kind) { finish(&repeat_kind); }

 private:
  void finish(const DiagKind* repeat_kind);
  struct Cell {
    uint32_t row, counter;
    double v;
  };
  struct Key {
    int64_t pid, id;
    int kind;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = static_cast<uint64_t>(k.id) * 0x9E3779B97F4A7C15ull;
      h ^= static_cast<uint64_t>(k.pid) + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
      return static_cast<size_t>(h ^ static_cast<uint64_t>(k.kind));
    }
  };
  CounterTable& t_;
  std::vector<Cell> cells_;
  std::unordered_map<std::string, size_t> counter_index_;
  std::unordered_map<Key, size_t, KeyHash> rows_;
};

// The row loop shared by the CSV readers. Reads the header (the first non-blank line; broken
// quoting there is an InputError), then calls on_row(fields, line_no, line) for each data row with
// as many fields as the header. Skipped and counted: rows with broken quoting ("bad_quoting"),
// repeated header rows ("repeated_header"), rows with another field count ("bad_field_count"),
// and a last line cut short ("truncated_last_line"). A last line without '\n' whose fields are
// complete is kept and counted ("unterminated_last_line"). If merge_col >= 0, a row with extra
// fields whose column merge_col was not quoted gets them joined back into that column with ','
// (a kernel name with commas written without quotes).
template <class OnRow>
void read_csv_rows(ByteSource& src, std::string head, CounterTable& t, Header& hdr, OnRow&& on_row,
                   int merge_col = -1) {
  csv::LineSource lines(src, std::move(head), &t.diagnostics);
  csv::Splitter row;
  std::string_view line;
  bool terminated = true;
  bool have_header = false;
  std::vector<std::string_view> fields;
  while (lines.next(line, terminated)) {
    std::string_view l = line;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.find_first_not_of(" \t") == std::string_view::npos) continue;
    bool ok = row.split(l);
    if (!have_header) {
      if (!ok)
        throw InputError(src.name(), lines.line_offset(),
                         "line " + std::to_string(lines.line_no()) + ": unreadable CSV header");
      hdr.assign(row);
      have_header = true;
      continue;
    }
    if (!ok) {
      t.diagnostics.add(terminated ? DiagKind("bad_quoting") : DiagKind("truncated_last_line"),
                        [&] { return example(lines.line_no(), l); });
      continue;
    }
    if (hdr.is_repeat(row)) {
      t.diagnostics.add("repeated_header", [&] { return example(lines.line_no(), l); });
      continue;
    }
    fields.assign(row.fields().begin(), row.fields().end());
    if (fields.size() > hdr.size() && merge_col >= 0 &&
        static_cast<size_t>(merge_col) < hdr.size()) {
      // Rejoin the raw text of the unquoted fields merge_col .. merge_col + extra (spaces kept).
      size_t extra = fields.size() - hdr.size();
      size_t mc = static_cast<size_t>(merge_col);
      bool plain = true;
      for (size_t k = mc; k <= mc + extra; ++k) plain = plain && !row.quoted(k);
      if (plain) {
        const char* begin = fields[mc].data();
        const char* end = fields[mc + extra].data() + fields[mc + extra].size();
        fields.erase(fields.begin() + static_cast<std::ptrdiff_t>(mc) + 1,
                     fields.begin() + static_cast<std::ptrdiff_t>(mc + extra) + 1);
        fields[mc] = std::string_view(begin, static_cast<size_t>(end - begin));
      }
    }
    if (fields.size() != hdr.size()) {
      t.diagnostics.add(terminated || fields.size() > hdr.size() ? DiagKind("bad_field_count")
                                                                 : DiagKind("truncated_last_line"),
                        [&] {
                          return example(lines.line_no(), l) + " (" +
                                 std::to_string(fields.size()) + " fields, header has " +
                                 std::to_string(hdr.size()) + ")";
                        });
      continue;
    }
    if (!terminated)
      t.diagnostics.add("unterminated_last_line", [&] {
        return example(lines.line_no(), l) + " (no final newline; kept, its last field may be cut)";
      });
    on_row(fields, lines.line_no(), l);
  }
  if (!have_header) throw NotATraceError(src.name(), 0, "no CSV header line");
}

// A whole JSON document of per-dispatch counters (rocprofv3 JSON, a CUPTI range pass) read by a
// `Reader`: constructed on a fresh table for every attempt read_json_document makes (so a retry
// after a cut never doubles rows), read_root(doc), then finish() or, when the document breaks off,
// abandon() (the rows read so far made whole). The recoveries' diagnostics come first.
template <class Reader>
CounterTable read_counter_json(ByteSource& src, std::string head, std::string_view what,
                               std::string format, ClockDomain clock) {
  CounterTable t;
  Diagnostics recovered;
  read_json_document(
      src, std::move(head), what, recovered,
      [&](simdjson::ondemand::document& doc) {
        t = CounterTable{};
        t.file = src.name();
        t.format = format;
        t.clock = clock;
        Reader reader(t);
        try {
          reader.read_root(doc);
        } catch (const simdjson::simdjson_error&) {
          reader.abandon();
          throw;
        }
        reader.finish();
      },
      [&] { return t.size(); });
  recovered.merge(t.diagnostics);
  t.diagnostics = std::move(recovered);
  return t;
}

}  // namespace chopper::rocprof
