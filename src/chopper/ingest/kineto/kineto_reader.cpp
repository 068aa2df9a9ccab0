#include "chopper/ingest/kineto/kineto_reader.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cstring>

#include "chopper/base/error.hpp"
#include "chopper/ingest/json_scanner.hpp"

namespace chopper {
namespace {

namespace od = simdjson::ondemand;

enum class CatKind : uint8_t {
  kOther,
  kCpuOp,
  kUserAnnotation,
  kGpuUserAnnotation,
  kPython,
  kKernel,
  kMemcpy,
  kMemset,
  kRuntime,
  kDriver,
  kSync,
  kFlowLaunch,
  kFlowFwdBwd,
};

CatKind cat_kind_of(std::string_view c) {
  if (c == "cpu_op" || c == "Operator") return CatKind::kCpuOp;
  if (c == "user_annotation") return CatKind::kUserAnnotation;
  if (c == "gpu_user_annotation") return CatKind::kGpuUserAnnotation;
  if (c == "python_function") return CatKind::kPython;
  if (c == "kernel" || c == "Kernel") return CatKind::kKernel;
  if (c == "gpu_memcpy" || c == "Memcpy") return CatKind::kMemcpy;
  if (c == "gpu_memset" || c == "Memset") return CatKind::kMemset;
  if (c == "cuda_runtime" || c == "Runtime") return CatKind::kRuntime;
  if (c == "cuda_driver") return CatKind::kDriver;
  if (c == "cuda_sync") return CatKind::kSync;
  if (c == "ac2g" || c == "async" || c == "async_cpu_to_gpu") return CatKind::kFlowLaunch;
  if (c == "fwdbwd") return CatKind::kFlowFwdBwd;
  return CatKind::kOther;
}

bool is_legacy_category(std::string_view c) {
  return c == "Operator" || c == "Kernel" || c == "Runtime" || c == "Memcpy" || c == "Memset";
}

// An absent or mistyped optional field is not an error: the default stays.
inline void ignore(simdjson::error_code) {}

// Keys of "args" that chopper keeps.
enum class ArgKey : uint8_t {
  kNone,
  kExternalId,
  kCorrelation,
  kSequenceNumber,
  kFwdThreadId,
  kRecordFunctionId,
  kDevice,
  kStream,
  kGrid,
  kBlock,
  kRegisters,
  kSharedMemory,
  kBytes,
  kInputDims,
  kInputType,
  kCollectiveName,
  kDtype,
  kInMsgNelems,
  kOutMsgNelems,
  kInSplitSize,
  kOutSplitSize,
  kGroupSize,
  kPgName,
  kPgDesc,
  kPgRanks,
  kSeq,
  kGraphId,
  kMemBytes,
  kTotalAllocated,
  kDeviceId,
  kName,
};

ArgKey arg_key_of(std::string_view k) {
  switch (k.size()) {
    case 3:
      if (k == "Seq") return ArgKey::kSeq;
      break;
    case 4:
      if (k == "grid") return ArgKey::kGrid;
      if (k == "name") return ArgKey::kName;
      break;
    case 5:
      if (k == "block") return ArgKey::kBlock;
      if (k == "bytes") return ArgKey::kBytes;
      if (k == "dtype") return ArgKey::kDtype;
      if (k == "Bytes") return ArgKey::kMemBytes;
      break;
    case 6:
      if (k == "device") return ArgKey::kDevice;
      if (k == "stream") return ArgKey::kStream;
      break;
    case 8:
      if (k == "graph id") return ArgKey::kGraphId;
      break;
    case 9:
      if (k == "Device Id") return ArgKey::kDeviceId;
      break;
    case 10:
      if (k == "Input Dims") return ArgKey::kInputDims;
      if (k == "Input type") return ArgKey::kInputType;
      if (k == "Group size") return ArgKey::kGroupSize;
      break;
    case 11:
      if (k == "External id" || k == "external id") return ArgKey::kExternalId;
      if (k == "correlation") return ArgKey::kCorrelation;
      break;
    case 13:
      if (k == "Fwd thread id") return ArgKey::kFwdThreadId;
      if (k == "shared memory") return ArgKey::kSharedMemory;
      if (k == "In msg nelems") return ArgKey::kInMsgNelems;
      if (k == "In split size") return ArgKey::kInSplitSize;
      break;
    case 14:
      if (k == "Out msg nelems") return ArgKey::kOutMsgNelems;
      if (k == "Out split size") return ArgKey::kOutSplitSize;
      break;
    case 15:
      if (k == "Sequence number") return ArgKey::kSequenceNumber;
      if (k == "Collective name") return ArgKey::kCollectiveName;
      if (k == "Total Allocated") return ArgKey::kTotalAllocated;
      break;
    case 18:
      if (k == "Record function id") return ArgKey::kRecordFunctionId;
      if (k == "Process Group Name") return ArgKey::kPgName;
      break;
    case 19:
      if (k == "Process Group Ranks") return ArgKey::kPgRanks;
      break;
    case 20:
      if (k == "registers per thread") return ArgKey::kRegisters;
      break;
    case 25:
      if (k == "Process Group Description") return ArgKey::kPgDesc;
      break;
    default:
      break;
  }
  return ArgKey::kNone;
}

// The key of a field as written (without quotes). Keys with escapes stay escaped; none of the
// keys chopper reads has one.
inline std::string_view raw_key(od::field& f) {
  const char* k = f.key().raw();
  const char* q = static_cast<const char*>(std::memchr(k, '"', 4096));
  while (q != nullptr && q > k && q[-1] == '\\') {
    q = static_cast<const char*>(std::memchr(q + 1, '"', 4096));
  }
  return q == nullptr ? std::string_view() : std::string_view(k, static_cast<size_t>(q - k));
}

inline std::string_view rtrim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' ||
                        s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// The text of a scalar value: numbers as written, strings without their quotes (not unescaped).
// Returns false for objects, arrays, null, booleans.
inline bool scalar_text(od::value& v, std::string_view& out, bool& was_string) {
  std::string_view tok = rtrim(v.raw_json_token());
  if (tok.empty()) return false;
  const char c = tok.front();
  if (c == '"') {
    if (tok.size() < 2 || tok.back() != '"') return false;
    out = tok.substr(1, tok.size() - 2);
    was_string = true;
    return true;
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    out = tok;
    was_string = false;
    return true;
  }
  return false;
}

struct CommFields {
  bool any = false;
  std::string_view collective_name, dtype, pg_name, pg_desc, pg_ranks, in_split, out_split;
  int64_t in_nelems = -1, out_nelems = -1, group_size = -1, seq = -1;
};

// One event's fields, filled by a single pass over the object.
struct Ev {
  char ph = 0;
  std::string_view cat;
  bool has_cat = false;
  std::string_view name;
  bool has_name = false;
  std::string_view ts, dur;
  bool has_ts = false, has_dur = false;
  int64_t pid = 0, tid = 0;
  bool has_pid = false, has_tid = false;
  std::string_view id_text;
  bool has_id = false;
  bool bp_e = false;
  char scope = 0;
  // args
  int64_t external_id = kNoId, correlation = kNoId, seq_nr = kNoId, fwd_tid = kNoId,
          rf_id = kNoId, device = kNoId, stream = kNoId, graph_id = kNoId;
  int64_t registers = -1, shared_mem = -1, bytes = -1, mem_bytes = 0, total_alloc = 0,
          device_id = -1;
  std::array<int32_t, 3> grid{0, 0, 0}, block{0, 0, 0};
  std::string_view input_dims, input_types;
  std::string_view arg_name;
  CommFields comm;
  bool has_args = false;
};

class KinetoReader {
 public:
  KinetoReader(ByteSource& src, const KinetoReadOptions& opt, RankTrace& t)
      : src_(src), opt_(opt), t_(t) {
    cap_ = std::max<size_t>(opt.window_bytes, 4096);
    buf_.resize(cap_ + 1 + simdjson::SIMDJSON_PADDING);
    len_ = 1;
    pos_ = 1;
  }

  void run();

 private:
  // ---- buffer ----
  uint64_t offset_of(size_t p) const { return base_off_ + (p - 1); }
  // Moves buf_[keep_from, len_) to the front; returns how far positions moved (<= 0).
  ptrdiff_t compact(size_t keep_from) {
    if (keep_from <= 1) return 0;
    const size_t n = len_ - keep_from;
    std::memmove(buf_.data() + 1, buf_.data() + keep_from, n);
    base_off_ += keep_from - 1;
    len_ = 1 + n;
    return -static_cast<ptrdiff_t>(keep_from - 1);
  }
  // Appends more input after len_ (growing the window when full); false at end of input.
  bool read_more() {
    if (eof_) return false;
    if (len_ - 1 >= cap_) {
      cap_ *= 2;
      buf_.resize(cap_ + 1 + simdjson::SIMDJSON_PADDING);
    }
    const size_t n = src_.read(buf_.data() + len_, cap_ + 1 - len_);
    if (n == 0) {
      eof_ = true;
      return false;
    }
    len_ += n;
    t_.uncompressed_bytes += n;
    return true;
  }
  // Byte at pos_ (refilling, keeping bytes from pos_ on), or -1 at end of input.
  int peek() {
    while (pos_ >= len_) {
      pos_ += static_cast<size_t>(compact(pos_));
      if (!read_more()) return -1;
    }
    return static_cast<unsigned char>(buf_[pos_]);
  }
  void skip_ws() {
    for (int c = peek(); c == ' ' || c == '\n' || c == '\r' || c == '\t'; c = peek()) ++pos_;
  }
  [[noreturn]] void fail(uint64_t off, const std::string& what) {
    throw InputError(src_.name(), off, what);
  }
  [[noreturn]] void not_a_trace(uint64_t off, const std::string& what) {
    throw NotATraceError(src_.name(), off, what);
  }
  void expect(char c, const char* context) {
    skip_ws();
    const int got = peek();
    if (got != static_cast<unsigned char>(c)) {
      if (got < 0) fail(offset_of(pos_), fmt::format("truncated JSON: end of file, expected '{}' {}", c, context));
      fail(offset_of(pos_), fmt::format("malformed JSON: expected '{}' {}, found '{}'", c, context,
                                        printable(got)));
    }
    ++pos_;
  }
  static std::string printable(int c) {
    if (c >= 0x20 && c < 0x7f) return std::string(1, static_cast<char>(c));
    return fmt::format("\\x{:02x}", c);
  }

  // ---- top level ----
  std::string read_key();
  void read_value(std::string* capture, const std::string& key);
  void parse_object_form();
  void parse_events_array();
  void parse_metadata();

  // ---- events ----
  void parse_batch(size_t region_begin, const std::vector<ArrayElementScanner::Element>& elems);
  void parse_one(const ArrayElementScanner::Element& e);
  void count_gap_values(size_t from, size_t to);
  bool sanitize_utf8(size_t begin, size_t end);
  simdjson::error_code handle_event(od::object obj, uint64_t offset);
  simdjson::error_code read_args(od::object args, Ev& ev, uint64_t offset);
  void read_counter_args(od::object args, const Ev& ev, uint64_t offset);
  void commit(Ev& ev, uint64_t offset);
  bool get_int(od::value& v, int64_t& out, std::string_view key, uint64_t offset);
  bool get_time(std::string_view text, Ns& out, const char* what, uint64_t offset);
  void get_dim3(od::value& v, std::array<int32_t, 3>& out);
  int64_t id_from_pid_text(std::string_view text, bool was_string, bool gpu_stream);
  CatKind cat_kind(StrId cat) {
    if (cat >= cat_kinds_.size()) cat_kinds_.resize(cat + 1, -1);
    if (cat_kinds_[cat] < 0) {
      const std::string_view c = t_.strings.str(cat);
      cat_kinds_[cat] = static_cast<int8_t>(cat_kind_of(c));
      if (is_legacy_category(c)) t_.meta.legacy_2021 = true;
    }
    return static_cast<CatKind>(cat_kinds_[cat]);
  }
  void count_x(StrId cat) {
    if (cat >= x_counts_.size()) x_counts_.resize(cat + 1, 0);
    if (x_counts_[cat]++ == 0) x_order_.push_back(cat);
  }
  int32_t add_comm(const CommFields& c);

  ByteSource& src_;
  const KinetoReadOptions& opt_;
  RankTrace& t_;
  std::vector<char> buf_;
  size_t cap_;
  size_t len_;  // end of data in buf_ (data starts at 1)
  size_t pos_;  // top-level cursor
  uint64_t base_off_ = 0;
  bool eof_ = false;

  od::parser parser_;
  ArrayElementScanner scanner_;
  std::vector<ArrayElementScanner::Element> elems_;
  std::vector<std::pair<std::string, std::string>> top_values_;
  std::vector<int8_t> cat_kinds_;
  std::vector<uint64_t> x_counts_;
  std::vector<StrId> x_order_;
  uint64_t ph_counts_[256] = {};
  bool saw_fraction_ = false;
  bool saw_events_ = false;
};

std::string KinetoReader::read_key() {
  expect('"', "to start a key");
  std::string key;
  for (;;) {
    const int c = peek();
    if (c < 0) fail(offset_of(pos_), "truncated JSON: end of file inside a key");
    ++pos_;
    if (c == '"') break;
    if (c == '\\') {
      const int d = peek();
      if (d < 0) fail(offset_of(pos_), "truncated JSON: end of file inside a key");
      ++pos_;
      key.push_back('\\');
      key.push_back(static_cast<char>(d));
      continue;
    }
    key.push_back(static_cast<char>(c));
  }
  return key;
}

// Reads one JSON value at the top level, byte by byte, copying it into *capture when given.
// Only used for the small top-level values (deviceProperties, distributedInfo, ...).
void KinetoReader::read_value(std::string* capture, const std::string& key) {
  constexpr size_t kMaxCapture = 64 << 20;
  skip_ws();
  const uint64_t start = offset_of(pos_);
  int depth = 0;
  bool in_str = false, esc = false, started = false;
  for (;;) {
    const int c = peek();
    if (c < 0) {
      if (!started) fail(offset_of(pos_), fmt::format("truncated JSON: end of file before the value of \"{}\"", key));
      if (depth == 0 && !in_str) return;  // a scalar ending at EOF: caller reports the missing '}'
      fail(offset_of(pos_), fmt::format("truncated JSON: end of file inside the value of \"{}\"", key));
    }
    if (!in_str && depth == 0 && started &&
        (c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t'))
      return;
    started = true;
    ++pos_;
    if (capture != nullptr) {
      if (capture->size() < kMaxCapture) {
        capture->push_back(static_cast<char>(c));
      } else {
        t_.diagnostics.add("top_level_value_too_large", [&] {
          return fmt::format("byte {}: value of \"{}\" exceeds {} MiB and was skipped", start, key,
                             kMaxCapture >> 20);
        });
        capture->clear();
        capture = nullptr;
      }
    }
    if (in_str) {
      if (esc) {
        esc = false;
      } else if (c == '\\') {
        esc = true;
      } else if (c == '"') {
        in_str = false;
        if (depth == 0) return;
      }
      continue;
    }
    if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return;
      if (depth < 0) fail(offset_of(pos_ - 1), "malformed JSON: unbalanced bracket");
    }
  }
}

void KinetoReader::run() {
  // Leading byte-order mark and whitespace.
  skip_ws();
  if (peek() == 0xEF) {
    ++pos_;
    if (peek() == 0xBB) ++pos_;
    if (peek() == 0xBF) ++pos_;
    skip_ws();
  }
  const int c = peek();
  if (c < 0) fail(offset_of(pos_), "empty file: no JSON trace in it");
  if (c == '[') {
    ++pos_;
    parse_events_array();
  } else if (c == '{') {
    ++pos_;
    parse_object_form();
  } else {
    not_a_trace(offset_of(pos_),
                fmt::format("not a JSON trace: expected '{{' or '[' but found '{}'", printable(c)));
  }
  skip_ws();
  if (peek() >= 0) {
    t_.diagnostics.add("trailing_data", fmt::format("byte {}: data after the end of the JSON trace ignored", offset_of(pos_)));
  }
  for (const auto& w : src_.warnings()) t_.diagnostics.add("compression_warning", w);
  parse_metadata();

  // Per-category and per-ph counts in the model.
  for (StrId cat : x_order_) t_.x_events_by_category.emplace_back(cat, x_counts_[cat]);
  for (int p = 0; p < 256; ++p)
    if (ph_counts_[p] != 0) t_.events_by_ph.emplace_back(static_cast<char>(p), ph_counts_[p]);

  // Timestamps become absolute when the trace has a base (current Kineto).
  if (t_.meta.has_base_time) {
    const Ns b = t_.meta.base_time_ns;
    for (auto* col : {&t_.gpu.start_ns, &t_.host.start_ns, &t_.runtime.start_ns, &t_.flows.ts_ns,
                      &t_.instants.ts_ns, &t_.counters.ts_ns})
      for (Ns& x : *col) x += b;
    t_.meta.ts_format = "relative_to_base";
  } else {
    t_.meta.ts_format = saw_fraction_ ? "float_epoch_us" : "int_epoch_us";
  }
}

void KinetoReader::parse_object_form() {
  bool first = true;
  for (;;) {
    skip_ws();
    int c = peek();
    if (c < 0) fail(offset_of(pos_), "truncated JSON: end of file inside the top-level object");
    if (c == '}') {
      ++pos_;
      break;
    }
    if (!first) {
      if (c != ',') fail(offset_of(pos_), fmt::format("malformed JSON: expected ',' or '}}' between top-level keys, found '{}'", printable(c)));
      ++pos_;
    }
    first = false;
    std::string key = read_key();
    expect(':', "after a key");
    skip_ws();
    if (key == "traceEvents" && peek() == '[') {
      ++pos_;
      parse_events_array();
      continue;
    }
    std::string value;
    read_value(&value, key);
    top_values_.emplace_back(std::move(key), std::move(value));
  }
  if (!saw_events_) {
    bool rocprof = false;
    for (const auto& kv : top_values_) rocprof |= kv.first == "rocprofiler-sdk-tool";
    not_a_trace(0, rocprof ? "not a Kineto trace: this is rocprofv3 JSON (no \"traceEvents\")"
                           : "not a Kineto/Chrome trace: the JSON object has no \"traceEvents\" array");
  }
}

void KinetoReader::parse_events_array() {
  saw_events_ = true;
  scanner_.reset();
  size_t region = pos_;  // bytes not yet handed to a batch start here
  size_t scan = pos_;
  for (;;) {
    scan = scanner_.scan(buf_.data(), scan, len_, elems_);
    if (!elems_.empty()) {
      parse_batch(region, elems_);
      region = elems_.back().end;
      elems_.clear();
    }
    if (scanner_.closed()) {
      // Between the last element and ']' only whitespace and commas belong.
      count_gap_values(region, scan - 1);
      pos_ = scan;
      return;
    }
    const ptrdiff_t d = compact(region);
    region = static_cast<size_t>(static_cast<ptrdiff_t>(region) + d);
    scan = static_cast<size_t>(static_cast<ptrdiff_t>(scan) + d);
    scanner_.rebase(d);
    if (!read_more()) {
      fail(offset_of(len_),
           fmt::format("truncated JSON: end of file inside traceEvents after {} events{}",
                       t_.total_events,
                       scanner_.inside_element() ? " (in the middle of an event)" : ""));
    }
  }
}

void KinetoReader::parse_batch(size_t region_begin,
                               const std::vector<ArrayElementScanner::Element>& elems) {
  // Wrap [region_begin, last end) as one JSON array: '[' over the separating comma (or the byte
  // before the region, already consumed) and ']' after the last element, restored afterwards.
  size_t p = region_begin;
  while (p < elems.front().begin &&
         (buf_[p] == ' ' || buf_[p] == '\n' || buf_[p] == '\r' || buf_[p] == '\t'))
    ++p;
  size_t open = (p < elems.front().begin && buf_[p] == ',') ? p : p - 1;
  const size_t close = elems.back().end;
  const char saved_open = buf_[open];
  const char saved_close = buf_[close];
  buf_[open] = '[';
  buf_[close] = ']';
  size_t done = 0;  // elements (objects or arrays) fully handled
  bool failed = false;
  {
    od::document doc;
    auto err = parser_.iterate(buf_.data() + open, close + 1 - open, buf_.size() - open).get(doc);
    if (err == simdjson::UTF8_ERROR) {
      buf_[open] = saved_open;
      buf_[close] = saved_close;
      sanitize_utf8(elems.front().begin, close);
      buf_[open] = '[';
      buf_[close] = ']';
      err = parser_.iterate(buf_.data() + open, close + 1 - open, buf_.size() - open).get(doc);
    }
    od::array arr;
    if (err || doc.get_array().get(arr)) {
      failed = true;
    } else {
      for (auto el : arr) {
        od::value v;
        od::json_type type;
        if (el.get(v) || v.type().get(type)) {
          failed = true;
          break;
        }
        if (type == od::json_type::object) {
          if (done >= elems.size()) {
            failed = true;
            break;
          }
          od::object obj;
          if (v.get_object().get(obj) || handle_event(obj, offset_of(elems[done].begin))) {
            failed = true;
            break;
          }
          ++done;
        } else {
          if (type == od::json_type::array) ++done;
          ++t_.total_events;
          t_.diagnostics.add("non_object_event", [&] {
            return fmt::format("byte {}: a value that is not an event object in traceEvents",
                               done > 0 && done <= elems.size() ? offset_of(elems[done - 1].begin)
                                                                : offset_of(region_begin));
          });
        }
      }
    }
  }
  buf_[open] = saved_open;
  buf_[close] = saved_close;
  if (failed) {
    // Fall back to one document per element so one bad event costs only itself; values between
    // elements that the batch did not reach are counted here.
    for (size_t i = done; i < elems.size(); ++i) {
      if (i > done) count_gap_values(elems[i - 1].end, elems[i].begin);
      parse_one(elems[i]);
    }
  }
}

// Counts the comma-separated values between two elements (scalars such as `42` or `"x"`); a
// well-formed file has only whitespace and one comma there.
void KinetoReader::count_gap_values(size_t from, size_t to) {
  bool in_value = false;
  for (size_t p = from; p < to; ++p) {
    const char ch = buf_[p];
    if (ch == ',') {
      in_value = false;
    } else if (ch != ' ' && ch != '\n' && ch != '\r' && ch != '\t' && !in_value) {
      in_value = true;
      ++t_.total_events;
      t_.diagnostics.add("non_object_event", [&] {
        return fmt::format("byte {}: a value that is not an event object in traceEvents", offset_of(p));
      });
    }
  }
}

void KinetoReader::parse_one(const ArrayElementScanner::Element& e) {
  const uint64_t off = offset_of(e.begin);
  if (!e.is_object) {
    ++t_.total_events;
    t_.diagnostics.add("non_object_event", [&] {
      return fmt::format("byte {}: a value that is not an event object in traceEvents", off);
    });
    return;
  }
  od::document doc;
  auto err = parser_.iterate(buf_.data() + e.begin, e.end - e.begin, buf_.size() - e.begin).get(doc);
  if (err == simdjson::UTF8_ERROR) {
    sanitize_utf8(e.begin, e.end);
    err = parser_.iterate(buf_.data() + e.begin, e.end - e.begin, buf_.size() - e.begin).get(doc);
  }
  od::object obj;
  if (!err) err = doc.get_object().get(obj);
  if (!err) err = handle_event(obj, off);
  if (err) {
    ++t_.total_events;
    t_.diagnostics.add("malformed_event", [&] {
      return fmt::format("byte {}: {} in an event; event skipped", off, simdjson::error_message(err));
    });
  }
}

// Replaces every byte that is not part of a valid UTF-8 sequence with '?', in place (the length
// does not change, so positions stay valid). Returns true if anything was replaced.
bool KinetoReader::sanitize_utf8(size_t begin, size_t end) {
  auto* s = reinterpret_cast<unsigned char*>(buf_.data());
  uint64_t replaced = 0;
  size_t first_bad = 0;
  for (size_t i = begin; i < end;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      n = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 4;
      cp = c & 0x07;
    }
    bool ok = n != 0 && i + n <= end;
    for (size_t k = 1; ok && k < n; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (ok) {
      // Overlong forms, surrogates and values above U+10FFFF are invalid too.
      if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
          (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        ok = false;
    }
    if (ok) {
      i += n;
    } else {
      if (replaced == 0) first_bad = i;
      s[i] = '?';
      ++replaced;
      ++i;
    }
  }
  if (replaced > 0) {
    t_.diagnostics.add("invalid_utf8", [&] {
      return fmt::format("byte {}: {} invalid UTF-8 byte(s) replaced by '?'", offset_of(first_bad),
                         replaced);
    });
  }
  return replaced > 0;
}

bool KinetoReader::get_time(std::string_view text, Ns& out, const char* what, uint64_t offset) {
  const DecimalStatus st = parse_us_to_ns(text, out);
  if (st == DecimalStatus::kExact) return true;
  if (st == DecimalStatus::kRounded) {
    t_.diagnostics.add("sub_ns_time_rounded", [&] {
      return fmt::format("byte {}: {} {} has more than 3 decimals; rounded to the nanosecond",
                         offset, what, text);
    });
    return true;
  }
  t_.diagnostics.add(st == DecimalStatus::kOverflow ? "time_out_of_range" : "invalid_time", [&] {
    return fmt::format("byte {}: {} '{}' is not a usable time; event skipped", offset, what, text);
  });
  return false;
}

bool KinetoReader::get_int(od::value& v, int64_t& out, std::string_view key, uint64_t offset) {
  std::string_view text;
  bool was_string = false;
  if (!scalar_text(v, text, was_string)) return false;
  DecimalStatus st = parse_int64(text, out);
  if (st == DecimalStatus::kExact) return true;
  if (st == DecimalStatus::kInvalid) {
    // A fraction ("device": 0.0) or exponent: take the integer if it is one.
    int64_t x;
    if (parse_scaled(text, 0, x) == DecimalStatus::kExact) {
      out = x;
      return true;
    }
    if (was_string) return false;  // non-numeric string: not an id
  }
  t_.diagnostics.add(st == DecimalStatus::kOverflow ? "integer_above_int64" : "invalid_integer",
                     [&] {
                       return fmt::format("byte {}: args \"{}\" = {} does not fit int64; ignored",
                                          offset, key, text);
                     });
  return false;
}

void KinetoReader::get_dim3(od::value& v, std::array<int32_t, 3>& out) {
  od::array a;
  if (v.get_array().get(a)) return;
  size_t i = 0;
  for (auto el : a) {
    int64_t x;
    if (i < 3 && !el.get_int64().get(x) && x >= 0 && x <= INT32_MAX)
      out[i] = static_cast<int32_t>(x);
    ++i;
  }
}

// pid/tid: integers, numeric strings, "stream 7" (2021 GPU tids), or names ("Spans", "Traces"),
// which get a stable negative id: -(interned id + 2).
int64_t KinetoReader::id_from_pid_text(std::string_view text, bool was_string, bool gpu_stream) {
  int64_t x;
  if (parse_int64(text, x) == DecimalStatus::kExact) return x;
  if (was_string) {
    std::string_view s = text;
    if (gpu_stream && s.substr(0, 7) == "stream ") {
      s.remove_prefix(7);
      while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
      if (parse_int64(s, x) == DecimalStatus::kExact) return x;
    }
  }
  return -static_cast<int64_t>(t_.strings.intern(text)) - 2;
}

simdjson::error_code KinetoReader::read_args(od::object args, Ev& ev, uint64_t offset) {
  ev.has_args = true;
  for (auto f : args) {
    od::field field;
    if (auto e = std::move(f).get(field)) return e;
    const std::string_view k = raw_key(field);
    const ArgKey key = arg_key_of(k);
    if (key == ArgKey::kNone) continue;
    od::value v = field.value();
    std::string_view text;
    bool was_string = false;
    switch (key) {
      case ArgKey::kExternalId: get_int(v, ev.external_id, k, offset); break;
      case ArgKey::kCorrelation: get_int(v, ev.correlation, k, offset); break;
      case ArgKey::kSequenceNumber: get_int(v, ev.seq_nr, k, offset); break;
      case ArgKey::kFwdThreadId: get_int(v, ev.fwd_tid, k, offset); break;
      case ArgKey::kRecordFunctionId: get_int(v, ev.rf_id, k, offset); break;
      case ArgKey::kDevice: get_int(v, ev.device, k, offset); break;
      case ArgKey::kStream:
        // CUDA: integer; ROCm runtime calls: hex string ("0x1a2b") — keep only integers.
        if (scalar_text(v, text, was_string) && parse_int64(text, ev.stream) != DecimalStatus::kExact)
          ev.stream = kNoId;
        break;
      case ArgKey::kGraphId: get_int(v, ev.graph_id, k, offset); break;
      case ArgKey::kRegisters: get_int(v, ev.registers, k, offset); break;
      case ArgKey::kSharedMemory: get_int(v, ev.shared_mem, k, offset); break;
      case ArgKey::kBytes: get_int(v, ev.bytes, k, offset); break;
      case ArgKey::kMemBytes: get_int(v, ev.mem_bytes, k, offset); break;
      case ArgKey::kTotalAllocated: get_int(v, ev.total_alloc, k, offset); break;
      case ArgKey::kDeviceId: get_int(v, ev.device_id, k, offset); break;
      case ArgKey::kGrid: get_dim3(v, ev.grid); break;
      case ArgKey::kBlock: get_dim3(v, ev.block); break;
      case ArgKey::kInputDims: {
        od::array a;
        if (!v.get_array().get(a)) ignore(a.raw_json().get(ev.input_dims));
        break;
      }
      case ArgKey::kInputType: {
        od::array a;
        if (!v.get_array().get(a)) ignore(a.raw_json().get(ev.input_types));
        break;
      }
      case ArgKey::kName: ignore(v.get_string().get(ev.arg_name)); break;
      case ArgKey::kCollectiveName:
        ev.comm.any = true;
        ignore(v.get_string().get(ev.comm.collective_name));
        break;
      case ArgKey::kDtype: ignore(v.get_string().get(ev.comm.dtype)); break;
      case ArgKey::kPgName:
        if (scalar_text(v, text, was_string)) ev.comm.pg_name = text;
        break;
      case ArgKey::kPgDesc: ignore(v.get_string().get(ev.comm.pg_desc)); break;
      case ArgKey::kPgRanks:
        if (scalar_text(v, text, was_string)) {
          ev.comm.pg_ranks = text;
        } else {
          od::array a;
          if (!v.get_array().get(a)) ignore(a.raw_json().get(ev.comm.pg_ranks));
        }
        break;
      case ArgKey::kInSplitSize:
        if (scalar_text(v, text, was_string)) ev.comm.in_split = text;
        break;
      case ArgKey::kOutSplitSize:
        if (scalar_text(v, text, was_string)) ev.comm.out_split = text;
        break;
      case ArgKey::kInMsgNelems: get_int(v, ev.comm.in_nelems, k, offset); break;
      case ArgKey::kOutMsgNelems: get_int(v, ev.comm.out_nelems, k, offset); break;
      case ArgKey::kGroupSize: get_int(v, ev.comm.group_size, k, offset); break;
      case ArgKey::kSeq: get_int(v, ev.comm.seq, k, offset); break;
      case ArgKey::kNone: break;
    }
  }
  return simdjson::SUCCESS;
}

void KinetoReader::read_counter_args(od::object args, const Ev& ev, uint64_t offset) {
  Ns ts;
  if (!ev.has_ts || !get_time(ev.ts, ts, "ts", offset)) return;
  for (auto f : args) {
    od::field field;
    if (std::move(f).get(field)) return;
    const std::string_view k = raw_key(field);
    double x;
    if (field.value().get_double().get(x)) continue;
    t_.counters.name.push_back(t_.strings.intern(std::string(ev.name) + "." + std::string(k)));
    t_.counters.pid.push_back(ev.pid);
    t_.counters.ts_ns.push_back(ts);
    t_.counters.value.push_back(x);
  }
}

int32_t KinetoReader::add_comm(const CommFields& c) {
  CommArgs a;
  a.collective_name = t_.strings.intern(c.collective_name);
  a.dtype = t_.strings.intern(c.dtype);
  a.in_nelems = c.in_nelems;
  a.out_nelems = c.out_nelems;
  a.group_size = c.group_size;
  a.pg_name = t_.strings.intern(c.pg_name);
  a.pg_desc = t_.strings.intern(c.pg_desc);
  a.pg_ranks = t_.strings.intern(c.pg_ranks);
  a.in_split = t_.strings.intern(c.in_split);
  a.out_split = t_.strings.intern(c.out_split);
  a.seq = c.seq;
  t_.comm_args.push_back(a);
  return static_cast<int32_t>(t_.comm_args.size() - 1);
}

simdjson::error_code KinetoReader::handle_event(od::object obj, uint64_t offset) {
  Ev ev;
  bool skip_rest = false;
  for (auto f : obj) {
    od::field field;
    if (auto e = std::move(f).get(field)) return e;
    const std::string_view k = raw_key(field);
    od::value v = field.value();
    std::string_view text;
    bool was_string = false;
    switch (k.size()) {
      case 1:
        if (k == "s") {
          if (scalar_text(v, text, was_string) && !text.empty()) ev.scope = text[0];
        }
        break;
      case 2:
        if (k == "ph") {
          if (scalar_text(v, text, was_string) && was_string && text.size() == 1) ev.ph = text[0];
          else ev.ph = '?';
        } else if (k == "ts") {
          ev.has_ts = scalar_text(v, ev.ts, was_string);
        } else if (k == "id") {
          ev.has_id = scalar_text(v, ev.id_text, was_string);
        } else if (k == "bp") {
          ev.bp_e = scalar_text(v, text, was_string) && text == "e";
        }
        break;
      case 3:
        if (k == "cat") {
          ev.has_cat = !v.get_string().get(ev.cat);
        } else if (k == "pid") {
          if (scalar_text(v, text, was_string)) {
            ev.pid = id_from_pid_text(text, was_string, false);
            ev.has_pid = true;
          }
        } else if (k == "tid") {
          if (scalar_text(v, text, was_string)) {
            ev.tid = id_from_pid_text(text, was_string, true);
            ev.has_tid = true;
          }
        } else if (k == "dur") {
          ev.has_dur = scalar_text(v, ev.dur, was_string);
        }
        break;
      case 4:
        if (k == "name") {
          ev.has_name = !v.get_string().get(ev.name);
        } else if (k == "args") {
          od::object args;
          if (auto e = v.get_object().get(args)) return e;
          if (ev.ph == 'C') {
            if (ev.has_ts) {
              read_counter_args(args, ev, offset);
            } else {
              t_.diagnostics.add("counter_args_before_ts", [&] {
                return fmt::format("byte {}: counter event with args before ts; values skipped",
                                   offset);
              });
            }
          } else if (auto e = read_args(args, ev, offset)) {
            return e;
          }
        }
        break;
      default:
        break;
    }
    // python_function events are most of many traces: once ph and cat are known, stop reading.
    if (!opt_.keep_python && ev.ph == 'X' && ev.has_cat && ev.cat == "python_function") {
      skip_rest = true;
      break;
    }
  }
  if (skip_rest) {
    ++t_.total_events;
    ++ph_counts_[static_cast<unsigned char>('X')];
    count_x(t_.strings.intern(ev.cat));
    return simdjson::SUCCESS;
  }
  commit(ev, offset);
  return simdjson::SUCCESS;
}

void KinetoReader::commit(Ev& ev, uint64_t offset) {
  ++t_.total_events;
  ++ph_counts_[static_cast<unsigned char>(ev.ph)];
  const StrId cat = ev.has_cat ? t_.strings.intern(ev.cat) : 0;
  if (ev.has_ts && !saw_fraction_ && ev.ts.find('.') != std::string_view::npos) saw_fraction_ = true;

  switch (ev.ph) {
    case 'X': {
      count_x(cat);
      const CatKind kind = cat_kind(cat);
      Ns ts = 0, dur = 0;
      if (!ev.has_ts) {
        t_.diagnostics.add("missing_ts", [&] { return fmt::format("byte {}: complete event without ts; skipped", offset); });
        return;
      }
      if (!get_time(ev.ts, ts, "ts", offset)) return;
      if (!ev.has_dur) {
        t_.diagnostics.add("missing_dur", [&] { return fmt::format("byte {}: complete event without dur; taken as 0", offset); });
      } else if (!get_time(ev.dur, dur, "dur", offset)) {
        return;
      }
      if (dur < 0) {
        t_.diagnostics.add("negative_dur", [&] { return fmt::format("byte {}: negative dur {}; taken as 0", offset, ev.dur); });
        dur = 0;
      }
      if (!ev.has_name && (kind != CatKind::kOther)) {
        t_.diagnostics.add("missing_name", [&] { return fmt::format("byte {}: event without name", offset); });
      }
      const StrId name = ev.has_name ? t_.strings.intern(ev.name) : 0;
      switch (kind) {
        case CatKind::kKernel:
        case CatKind::kMemcpy:
        case CatKind::kMemset:
        case CatKind::kSync: {
          GpuActivities& g = t_.gpu;
          g.kind.push_back(kind == CatKind::kKernel   ? GpuKind::kKernel
                           : kind == CatKind::kMemcpy ? GpuKind::kMemcpy
                           : kind == CatKind::kMemset ? GpuKind::kMemset
                                                      : GpuKind::kSync);
          const int64_t dev = ev.device != kNoId ? ev.device : (ev.has_pid ? ev.pid : -1);
          g.device.push_back(static_cast<int32_t>(std::clamp<int64_t>(dev, INT32_MIN, INT32_MAX)));
          g.stream.push_back(ev.stream != kNoId ? ev.stream : (ev.has_tid ? ev.tid : -1));
          g.start_ns.push_back(ts);
          g.dur_ns.push_back(dur);
          g.correlation.push_back(ev.correlation);
          g.external_id.push_back(ev.external_id);
          g.name.push_back(name);
          g.category.push_back(cat);
          g.grid.push_back(ev.grid);
          g.block.push_back(ev.block);
          g.registers.push_back(static_cast<int32_t>(std::clamp<int64_t>(ev.registers, -1, INT32_MAX)));
          g.shared_mem_bytes.push_back(static_cast<int32_t>(std::clamp<int64_t>(ev.shared_mem, -1, INT32_MAX)));
          g.bytes.push_back(ev.bytes);
          g.graph_id.push_back(ev.graph_id);
          g.comm_args.push_back(ev.comm.any ? add_comm(ev.comm) : kNoRow);
          return;
        }
        case CatKind::kCpuOp:
        case CatKind::kUserAnnotation:
        case CatKind::kPython: {
          HostOps& h = t_.host;
          h.kind.push_back(kind == CatKind::kCpuOp            ? HostKind::kCpuOp
                           : kind == CatKind::kUserAnnotation ? HostKind::kUserAnnotation
                                                              : HostKind::kPythonFunction);
          h.category.push_back(cat);
          h.pid.push_back(ev.pid);
          h.tid.push_back(ev.tid);
          h.start_ns.push_back(ts);
          h.dur_ns.push_back(dur);
          h.name.push_back(name);
          h.external_id.push_back(ev.external_id);
          h.sequence_number.push_back(ev.seq_nr);
          h.fwd_thread_id.push_back(ev.fwd_tid);
          h.record_function_id.push_back(ev.rf_id);
          h.input_dims.push_back(ev.input_dims.empty() ? 0 : t_.strings.intern(ev.input_dims));
          h.input_types.push_back(ev.input_types.empty() ? 0 : t_.strings.intern(ev.input_types));
          h.comm_args.push_back(ev.comm.any ? add_comm(ev.comm) : kNoRow);
          return;
        }
        case CatKind::kRuntime:
        case CatKind::kDriver: {
          RuntimeCalls& r = t_.runtime;
          r.driver.push_back(kind == CatKind::kDriver);
          r.pid.push_back(ev.pid);
          r.tid.push_back(ev.tid);
          r.start_ns.push_back(ts);
          r.dur_ns.push_back(dur);
          r.name.push_back(name);
          r.correlation.push_back(ev.correlation);
          r.external_id.push_back(ev.external_id);
          if (!t_.meta.rocm && ev.has_name && ev.name.substr(0, 3) == "hip") t_.meta.rocm = true;
          return;
        }
        case CatKind::kGpuUserAnnotation:
        case CatKind::kFlowLaunch:
        case CatKind::kFlowFwdBwd:
        case CatKind::kOther:
          return;  // counted in x_events_by_category; not stored
      }
      return;
    }
    case 's':
    case 't':
    case 'f': {
      if (!ev.has_ts || !ev.has_id) {
        t_.diagnostics.add("flow_missing_fields", [&] { return fmt::format("byte {}: flow event without ts or id; skipped", offset); });
        return;
      }
      Ns ts;
      if (!get_time(ev.ts, ts, "ts", offset)) return;
      uint64_t id = 0;
      if (parse_uint64(ev.id_text, id) != DecimalStatus::kExact) {
        // String ids are hexadecimal in the Chrome format ("0x1f" or "1f"); else hash the text.
        std::string_view s = ev.id_text;
        if (s.substr(0, 2) == "0x" || s.substr(0, 2) == "0X") s.remove_prefix(2);
        bool ok = !s.empty() && s.size() <= 16;
        uint64_t x = 0;
        for (char c : s) {
          int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
          if (d < 0) { ok = false; break; }
          x = x * 16 + static_cast<uint64_t>(d);
        }
        id = ok ? x : (0x8000000000000000ULL | t_.strings.intern(ev.id_text));
      }
      const CatKind kind = cat_kind(cat);
      Flows& fl = t_.flows;
      fl.kind.push_back(kind == CatKind::kFlowLaunch   ? FlowKind::kLaunch
                        : kind == CatKind::kFlowFwdBwd ? FlowKind::kFwdBwd
                                                       : FlowKind::kOther);
      fl.phase.push_back(ev.ph == 's' ? FlowPhase::kStart : ev.ph == 't' ? FlowPhase::kStep : FlowPhase::kFinish);
      fl.category.push_back(cat);
      fl.id.push_back(id);
      fl.pid.push_back(ev.pid);
      fl.tid.push_back(ev.tid);
      fl.ts_ns.push_back(ts);
      fl.binds_enclosing.push_back(ev.bp_e);
      return;
    }
    case 'i':
    case 'I':
    case 'R': {
      Ns ts;
      if (!ev.has_ts) {
        t_.diagnostics.add("missing_ts", [&] { return fmt::format("byte {}: instant event without ts; skipped", offset); });
        return;
      }
      if (!get_time(ev.ts, ts, "ts", offset)) return;
      Instants& in = t_.instants;
      in.name.push_back(ev.has_name ? t_.strings.intern(ev.name) : 0);
      in.category.push_back(cat);
      in.pid.push_back(ev.pid);
      in.tid.push_back(ev.tid);
      in.ts_ns.push_back(ts);
      in.scope.push_back(ev.scope == 0 ? 't' : ev.scope);
      in.mem_bytes.push_back(ev.mem_bytes);
      in.mem_total_allocated.push_back(ev.total_alloc);
      in.mem_device.push_back(static_cast<int32_t>(std::clamp<int64_t>(ev.device_id, -1, INT32_MAX)));
      return;
    }
    case 'M': {
      if (!ev.has_name || ev.arg_name.empty()) return;
      if (ev.name == "process_name") {
        t_.meta.process_names.emplace_back(ev.pid, std::string(ev.arg_name));
      } else if (ev.name == "thread_name") {
        t_.meta.thread_names.emplace_back(std::make_pair(ev.pid, ev.tid), std::string(ev.arg_name));
      }
      return;
    }
    case 'C':
      return;  // samples were stored while reading args
    default:
      t_.diagnostics.add("unsupported_phase", [&] {
        return fmt::format("byte {}: event with ph '{}' is not used by chopper; counted, not stored",
                           offset, ev.ph == 0 ? std::string("(none)") : printable(static_cast<unsigned char>(ev.ph)));
      });
      return;
  }
}

// deviceProperties, distributedInfo and the scalar top-level keys.
void KinetoReader::parse_metadata() {
  simdjson::dom::parser dp;
  TraceMetadata& m = t_.meta;
  auto as_text = [](simdjson::dom::element e) -> std::string {
    std::string_view s;
    if (!e.get_string().get(s)) return std::string(s);
    return simdjson::minify(e);
  };
  auto as_int = [](simdjson::dom::element e, int64_t def) -> int64_t {
    int64_t x;
    if (!e.get_int64().get(x)) return x;
    uint64_t u;
    if (!e.get_uint64().get(u)) return static_cast<int64_t>(std::min<uint64_t>(u, INT64_MAX));
    double d;
    if (!e.get_double().get(d)) return static_cast<int64_t>(d);
    std::string_view s;
    if (!e.get_string().get(s) && parse_int64(s, x) == DecimalStatus::kExact) return x;
    return def;
  };
  for (auto& [key, text] : top_values_) {
    simdjson::dom::element e;
    if (dp.parse(text).get(e)) {
      t_.diagnostics.add("malformed_metadata", fmt::format("top-level \"{}\" is not valid JSON; ignored", key));
      continue;
    }
    if (key == "baseTimeNanoseconds") {
      // Exact from the text: an epoch in ns has 19 digits.
      int64_t b;
      if (parse_int64(text, b) == DecimalStatus::kExact ||
          parse_scaled(text, 0, b) == DecimalStatus::kExact) {
        m.base_time_ns = b;
        m.has_base_time = true;
      } else {
        t_.diagnostics.add("malformed_metadata", fmt::format("baseTimeNanoseconds {} unusable", text));
      }
    } else if (key == "schemaVersion") {
      m.schema_version = as_int(e, -1);
    } else if (key == "traceName") {
      m.trace_name = as_text(e);
    } else if (key == "displayTimeUnit") {
      m.display_time_unit = as_text(e);
    } else if (key == "deviceProperties") {
      simdjson::dom::array arr;
      if (e.get_array().get(arr)) continue;
      for (simdjson::dom::element d : arr) {
        DeviceProps p;
        simdjson::dom::object o;
        if (d.get_object().get(o)) continue;
        for (auto [k, val] : o) {
          if (k == "id") p.id = as_int(val, -1);
          else if (k == "name") p.name = as_text(val);
          else if (k == "totalGlobalMem") p.total_global_mem_bytes = as_int(val, -1);
          else if (k == "computeMajor") p.compute_major = as_int(val, -1);
          else if (k == "computeMinor") p.compute_minor = as_int(val, -1);
          else if (k == "numSms") p.num_sms = as_int(val, -1);
          else if (k == "warpSize") p.warp_size = as_int(val, -1);
          else if (k == "maxThreadsPerBlock") p.max_threads_per_block = as_int(val, -1);
          else if (k == "sharedMemPerBlock") p.shared_mem_per_block_bytes = as_int(val, -1);
          else if (k == "regsPerBlock") p.regs_per_block = as_int(val, -1);
        }
        m.devices.push_back(std::move(p));
      }
    } else if (key == "distributedInfo") {
      simdjson::dom::object o;
      if (e.get_object().get(o)) continue;
      for (auto [k, val] : o) {
        if (k == "rank") m.rank = as_int(val, -1);
        else if (k == "world_size") m.world_size = as_int(val, -1);
        else if (k == "backend") m.backend = as_text(val);
        else if (k == "nccl_version") m.nccl_version = as_text(val);
        else if (k == "pg_config") {
          auto add_pg = [&](simdjson::dom::element pe, std::string_view fallback_name) {
            simdjson::dom::object po;
            if (pe.get_object().get(po)) return;
            ProcessGroup pg;
            pg.name = std::string(fallback_name);
            for (auto [pk, pv] : po) {
              if (pk == "pg_name") pg.name = as_text(pv);
              else if (pk == "pg_desc") pg.desc = as_text(pv);
              else if (pk == "backend_config") pg.backend_config = as_text(pv);
              else if (pk == "pg_size") pg.size = as_int(pv, -1);
              else if (pk == "ranks") {
                simdjson::dom::array ra;
                if (!pv.get_array().get(ra)) {
                  for (auto r : ra) pg.ranks.push_back(as_int(r, -1));
                } else {
                  // Some builds write the ranks as a string "[0, 1]".
                  std::string s = as_text(pv);
                  simdjson::dom::parser p2;
                  simdjson::dom::element re;
                  if (!p2.parse(s).get(re) && !re.get_array().get(ra))
                    for (auto r : ra) pg.ranks.push_back(as_int(r, -1));
                }
              }
            }
            if (pg.size < 0 && !pg.ranks.empty()) pg.size = static_cast<int64_t>(pg.ranks.size());
            m.process_groups.push_back(std::move(pg));
          };
          simdjson::dom::array pa;
          simdjson::dom::object pobj;
          if (!val.get_array().get(pa)) {
            for (auto pe : pa) add_pg(pe, "");
          } else if (!val.get_object().get(pobj)) {
            for (auto [pk, pv] : pobj) add_pg(pv, pk);
          }
        }
      }
      if (m.rank >= 0) m.rank_source = "distributedInfo";
    } else if (key.find("version") != std::string::npos || key == "trace_id") {
      m.versions.emplace_back(key, as_text(e));
      if (key.rfind("roctracer", 0) == 0 || key.rfind("hip_", 0) == 0) m.rocm = true;
    } else {
      std::string v = as_text(e);
      if (v.size() > 200) v = v.substr(0, 200) + "...";
      m.other.emplace_back(key, std::move(v));
    }
  }
}

}  // namespace

RankTrace read_kineto(ByteSource& src, const KinetoReadOptions& opt) {
  RankTrace t;
  t.file = src.name();
  t.file_bytes = src.raw_size();
  KinetoReader r(src, opt, t);
  r.run();
  return t;
}

RankTrace read_kineto_file(const std::string& path, const KinetoReadOptions& opt) {
  auto src = ByteSource::open_file(path);
  return read_kineto(*src, opt);
}

}  // namespace chopper
