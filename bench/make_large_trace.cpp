// chopper-make-large-trace: builds a large Kineto trace from a real one by repeating its events.
//
//   chopper-make-large-trace IN.json[.gz|.zst] OUT.json [--target-mb 600] [--copies K] [--gzip]
//
// The top-level keys (deviceProperties, distributedInfo, baseTimeNanoseconds, ...) are kept as
// written; traceEvents becomes the source events repeated K times. Copy k:
//   * shifts every "ts" by k * S, S = (span of the trace + 1 ms) rounded up to a whole microsecond,
//     so the number keeps the exact textual form of the source (same number of decimals; the
//     arithmetic is on the decimal text as an integer, never through double);
//   * offsets args "correlation", args "External id" and the top-level "id" (flows) by k * (M + 1),
//     M = the largest of all these ids, so ids stay unique and ac2g flow id == correlation holds;
//   * renumbers "ProfilerStep#N" names to N + k * (maxN - minN + 1) so steps keep increasing.
// Events with ph "M" are written once. Each event keeps the text and layout of the source (Kineto's
// multi-line layout for PyTorch traces); only the values above change. With --gzip the output is
// piped through `gzip -1`. The number of complete (ph "X") events is printed as
// "expected_x_events=N", for chopper-bench-ingest --expect-x-events.
//
// simdjson On-Demand is used (not DOM) because DOM keeps numbers only as double/int64 and loses
// their text: a float epoch timestamp (1.7e15 us with 3 decimals) does not survive a double.
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/base/input.hpp"

namespace {

namespace od = simdjson::ondemand;

constexpr std::string_view kDefaultInput =
    "/work/shared/traces/kineto/hta_a100_ddp_nccl_rank0.json.gz";

[[noreturn]] void die(const std::string& msg) {
  throw std::runtime_error(msg);
}

void check(simdjson::error_code e, std::string_view what) {
  if (e) die(fmt::format("{}: {}", what, simdjson::error_message(e)));
}

std::string_view rtrim(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// The key of a field with its quotes, as written (escapes kept).
std::string_view raw_key(od::field& f) {
  const char* k = f.key().raw();  // just after the opening quote
  const char* p = k;
  while (*p != '"') p += (*p == '\\') ? 2 : 1;
  return std::string_view(k - 1, static_cast<size_t>(p - k) + 2);
}

// The text of any value, as written.
std::string_view raw_value(od::value& v) {
  od::json_type t{};
  check(v.type().get(t), "value type");
  std::string_view s;
  if (t == od::json_type::object) {
    od::object o;
    check(v.get_object().get(o), "object");
    check(o.raw_json().get(s), "object text");
    return s;
  }
  if (t == od::json_type::array) {
    od::array a;
    check(v.get_array().get(a), "array");
    check(a.raw_json().get(s), "array text");
    return s;
  }
  return rtrim(v.raw_json_token());
}

bool parse_i64(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// A decimal "[-]digits[.digits]" as an integer scaled by 10^decimals.
struct Decimal {
  int64_t scaled = 0;
  int decimals = 0;
};
bool parse_decimal(std::string_view s, Decimal& d) {
  const size_t dot = s.find('.');
  std::string_view ip = s.substr(0, dot);
  std::string_view fp = dot == std::string_view::npos ? std::string_view() : s.substr(dot + 1);
  if (dot != std::string_view::npos && fp.empty()) return false;
  if (fp.size() > 9) return false;
  for (char c : fp)
    if (c < '0' || c > '9') return false;
  const bool neg = !ip.empty() && ip.front() == '-';
  int64_t i;
  if (!parse_i64(ip, i)) return false;
  int64_t f = 0;
  if (!fp.empty() && !parse_i64(fp, f)) return false;
  int64_t scale = 1;
  for (size_t k = 0; k < fp.size(); ++k) scale *= 10;
  int64_t x;
  if (__builtin_mul_overflow(i, scale, &x)) return false;
  if (__builtin_add_overflow(x, neg ? -f : f, &x)) return false;
  d.scaled = x;
  d.decimals = static_cast<int>(fp.size());
  return true;
}
int64_t pow10(int n) {
  int64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}
// Nanoseconds of a decimal microsecond value, rounded toward -inf below 1 ns.
int64_t to_ns(const Decimal& d) {
  if (d.decimals <= 3) return d.scaled * pow10(3 - d.decimals);
  const int64_t div = pow10(d.decimals - 3);
  int64_t q = d.scaled / div;
  if (d.scaled % div < 0) --q;
  return q;
}
void append_decimal(std::string& out, int64_t scaled, int decimals) {
  char buf[32];
  if (decimals == 0) {
    auto r = std::to_chars(buf, buf + sizeof buf, scaled);
    out.append(buf, r.ptr);
    return;
  }
  const bool neg = scaled < 0;
  const uint64_t mag = neg ? 0 - static_cast<uint64_t>(scaled) : static_cast<uint64_t>(scaled);
  const uint64_t p = static_cast<uint64_t>(pow10(decimals));
  if (neg) out.push_back('-');
  auto r = std::to_chars(buf, buf + sizeof buf, mag / p);
  out.append(buf, r.ptr);
  out.push_back('.');
  r = std::to_chars(buf, buf + sizeof buf, mag % p);
  const size_t n = static_cast<size_t>(r.ptr - buf);
  out.append(static_cast<size_t>(decimals) - n, '0');
  out.append(buf, n);
}

enum class Slot : uint8_t { kNone, kTs, kId, kStep };

// Literal text, then (optionally) a value that changes with the copy number.
struct Piece {
  std::string literal;
  Slot slot = Slot::kNone;
  bool quoted = false;  // kId: the id was written as a string
  int decimals = 0;     // kTs
  int64_t value = 0;    // kTs: scaled ts; kId: id; kStep: step number
};

struct Event {
  std::vector<Piece> pieces;
  bool meta = false;      // ph "M"
  bool complete = false;  // ph "X"
};

struct Model {
  bool object_form = true;
  std::vector<std::pair<std::string, std::string>> before, after;  // top-level key text, value
  std::string events_key = "\"traceEvents\"";
  std::vector<Event> events;
  int64_t min_ns = std::numeric_limits<int64_t>::max();
  int64_t max_end_ns = std::numeric_limits<int64_t>::min();
  int64_t max_id = -1;
  int64_t min_step = std::numeric_limits<int64_t>::max();
  int64_t max_step = std::numeric_limits<int64_t>::min();
  uint64_t non_numeric_ids = 0;
  uint64_t events_without_ts = 0;
};

// One event of the source: its text is copied verbatim (Kineto's own layout), except the slot
// values, which are rewritten per copy.
class Builder {
 public:
  explicit Builder(Model& m) : m_(m) {}

  void event(od::value el) {
    const char* begin = el.raw_json_token().data();  // '{' (peeks, does not consume)
    od::object obj;
    check(el.get_object().get(obj), "traceEvents element (not an object)");
    Event ev;
    cur_ = &ev;
    cursor_ = begin;
    bool has_ts = false;
    int64_t ts_ns = 0, dur_ns = 0;
    for (auto f : obj) {
      od::field field;
      check(std::move(f).get(field), "event field");
      const std::string_view key = raw_key(field);
      od::value v = field.value();
      if (key == "\"args\"") {
        od::json_type t{};
        check(v.type().get(t), "args type");
        if (t == od::json_type::object) {
          od::object args;
          check(v.get_object().get(args), "args");
          read_args(args);
        }
        continue;
      }
      if (key != "\"ts\"" && key != "\"dur\"" && key != "\"ph\"" && key != "\"id\"" &&
          key != "\"name\"")
        continue;  // value skipped, copied as text
      const std::string_view text = raw_value(v);
      if (key == "\"ts\"") {
        Decimal d;
        if (!parse_decimal(text, d)) die(fmt::format("unsupported ts '{}'", text));
        slot(text, Slot::kTs, d.scaled, d.decimals, false);
        has_ts = true;
        ts_ns = to_ns(d);
      } else if (key == "\"dur\"") {
        Decimal d;
        if (parse_decimal(text, d)) dur_ns = std::max<int64_t>(0, to_ns(d));
      } else if (key == "\"ph\"") {
        ev.meta = text == "\"M\"";
        ev.complete = text == "\"X\"";
      } else if (key == "\"id\"") {
        id_slot(text);
      } else if (text.starts_with("\"ProfilerStep#")) {
        int64_t n;
        if (text.size() > 15 && text.back() == '"' &&
            parse_i64(text.substr(14, text.size() - 15), n) && n >= 0) {
          slot(text, Slot::kStep, n, 0, false);
          m_.min_step = std::min(m_.min_step, n);
          m_.max_step = std::max(m_.max_step, n);
        }
      }
    }
    const char* end = matching_close(begin);
    ev.pieces.push_back(Piece{std::string(cursor_, end), Slot::kNone, false, 0, 0});
    if (ev.meta) {
      // Written once, as copy 0 (append_event).
    } else if (has_ts) {
      m_.min_ns = std::min(m_.min_ns, ts_ns);
      m_.max_end_ns = std::max(m_.max_end_ns, ts_ns + dur_ns);
    } else {
      ++m_.events_without_ts;
    }
    m_.events.push_back(std::move(ev));
    cur_ = nullptr;
  }

 private:
  void read_args(od::object args) {
    for (auto f : args) {
      od::field field;
      check(std::move(f).get(field), "args field");
      const std::string_view key = raw_key(field);
      if (key == "\"correlation\"" || key == "\"External id\"" || key == "\"external id\"") {
        od::value v = field.value();
        id_slot(raw_value(v));
      }
    }
  }

  void id_slot(std::string_view text) {
    const bool quoted = text.size() >= 2 && text.front() == '"' && text.back() == '"';
    int64_t id;
    if (parse_i64(quoted ? text.substr(1, text.size() - 2) : text, id) && id >= 0) {
      slot(text, Slot::kId, id, 0, quoted);
      m_.max_id = std::max(m_.max_id, id);
    } else {
      ++m_.non_numeric_ids;
    }
  }

  // `text` points into the source: the literal before it is copied, the value becomes a slot.
  void slot(std::string_view text, Slot s, int64_t value, int decimals, bool quoted) {
    cur_->pieces.push_back(Piece{std::string(cursor_, text.data()), s, quoted, decimals, value});
    cursor_ = text.data() + text.size();
  }

  // One past the '}' that closes the object starting at `p` (the parser validated the text).
  static const char* matching_close(const char* p) {
    int depth = 0;
    bool in_str = false;
    for (;; ++p) {
      const char c = *p;
      if (in_str) {
        if (c == '\\')
          ++p;
        else if (c == '"')
          in_str = false;
      } else if (c == '"') {
        in_str = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return p + 1;
      }
    }
  }

  Model& m_;
  Event* cur_ = nullptr;
  const char* cursor_ = nullptr;
};

struct Shift {
  int64_t ts_us = 0;
  int64_t id = 0;
  int64_t step = 0;
};

void append_piece_value(std::string& out, const Piece& p, int64_t k, const Shift& sh) {
  char buf[32];
  switch (p.slot) {
    case Slot::kNone:
      return;
    case Slot::kTs:
      append_decimal(out, p.value + k * sh.ts_us * pow10(p.decimals), p.decimals);
      return;
    case Slot::kId: {
      if (p.quoted) out.push_back('"');
      auto r = std::to_chars(buf, buf + sizeof buf, p.value + k * sh.id);
      out.append(buf, r.ptr);
      if (p.quoted) out.push_back('"');
      return;
    }
    case Slot::kStep: {
      out += "\"ProfilerStep#";
      auto r = std::to_chars(buf, buf + sizeof buf, p.value + k * sh.step);
      out.append(buf, r.ptr);
      out.push_back('"');
      return;
    }
  }
}

void append_event(std::string& out, const Event& ev, int64_t k, const Shift& sh) {
  out += "  ";
  for (const Piece& p : ev.pieces) {
    out += p.literal;
    append_piece_value(out, p, ev.meta ? 0 : k, sh);
  }
}

class Output {
 public:
  Output(const std::string& path, bool gzip) : path_(path), gzip_(gzip) {
    if (gzip) {
      std::string q = "'";
      for (char c : path) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      q += "'";
      f_ = ::popen(("gzip -1 -c > " + q).c_str(), "w");
    } else {
      f_ = std::fopen(path.c_str(), "wb");
    }
    if (f_ == nullptr)
      die(fmt::format("cannot open {} for writing: {}", path, std::strerror(errno)));
    buf_.reserve(kChunk + (1 << 20));
  }
  ~Output() {
    if (f_ != nullptr) (void)(gzip_ ? ::pclose(f_) : std::fclose(f_));
  }
  std::string& buf() { return buf_; }
  void maybe_flush() {
    if (buf_.size() >= kChunk) flush();
  }
  void flush() {
    bytes_ += buf_.size();
    if (std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size())
      die(fmt::format("write to {} failed: {}", path_, std::strerror(errno)));
    buf_.clear();
  }
  void close() {
    flush();
    const int rc = gzip_ ? ::pclose(f_) : std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) die(fmt::format("closing {} failed (status {})", path_, rc));
  }
  uint64_t bytes() const { return bytes_; }

 private:
  static constexpr size_t kChunk = 8 << 20;
  std::string path_;
  bool gzip_;
  FILE* f_ = nullptr;
  std::string buf_;
  uint64_t bytes_ = 0;
};

std::string read_all(const std::string& path) {
  auto src = chopper::ByteSource::open_file(path);
  std::string data;
  std::vector<char> buf(4 << 20);
  for (;;) {
    const size_t n = src->read(buf.data(), buf.size());
    if (n == 0) break;
    data.append(buf.data(), n);
  }
  return data;
}

Model load(const std::string& path, uint64_t& in_bytes) {
  const std::string text = read_all(path);
  in_bytes = text.size();
  simdjson::padded_string padded(text);
  od::parser parser;
  od::document doc;
  check(parser.iterate(padded).get(doc), "parse " + path);
  Model m;
  Builder b(m);
  od::json_type t{};
  check(doc.type().get(t), "top-level type");
  auto read_events = [&](od::array arr) {
    for (auto el : arr) {
      od::value v;
      check(std::move(el).get(v), "traceEvents element");
      b.event(v);
    }
  };
  if (t == od::json_type::array) {
    m.object_form = false;
    od::array arr;
    check(doc.get_array().get(arr), "top-level array");
    read_events(arr);
    return m;
  }
  od::object top;
  check(doc.get_object().get(top), "top-level object");
  bool seen_events = false;
  for (auto f : top) {
    od::field field;
    check(std::move(f).get(field), "top-level field");
    const std::string key(raw_key(field));
    od::value v = field.value();
    if (key == "\"traceEvents\"" && !seen_events) {
      od::array arr;
      check(v.get_array().get(arr), "traceEvents");
      read_events(arr);
      seen_events = true;
      continue;
    }
    (seen_events ? m.after : m.before).emplace_back(key, std::string(raw_value(v)));
  }
  if (!seen_events) die(path + ": no traceEvents array");
  return m;
}

int usage() {
  fmt::print(stderr,
             "usage: chopper-make-large-trace [IN.json[.gz|.zst]] OUT.json [--target-mb MB] "
             "[--copies K] [--gzip]\n"
             "  IN defaults to {}\n"
             "  --target-mb MB  uncompressed output size to reach (10^6 bytes; default 600)\n"
             "  --copies K      number of copies instead of --target-mb\n"
             "  --gzip          compress the output with `gzip -1` (OUT is written compressed)\n",
             kDefaultInput);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  double target_mb = 600;
  int64_t copies = 0;
  bool gzip = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--gzip") {
      gzip = true;
    } else if (a == "--target-mb" && i + 1 < argc) {
      target_mb = std::atof(argv[++i]);
    } else if (a == "--copies" && i + 1 < argc) {
      copies = std::atoll(argv[++i]);
    } else if (a == "-h" || a == "--help") {
      return usage();
    } else if (a.starts_with("--")) {
      fmt::print(stderr, "unknown option {}\n", a);
      return usage();
    } else {
      pos.emplace_back(a);
    }
  }
  if (pos.size() == 1) pos.insert(pos.begin(), std::string(kDefaultInput));
  if (pos.size() != 2 || target_mb <= 0) return usage();
  const std::string& in = pos[0];
  const std::string& out_path = pos[1];

  try {
    uint64_t in_bytes = 0;
    Model m = load(in, in_bytes);
    uint64_t n_meta = 0, n_x = 0, n_other = 0;
    for (const Event& e : m.events) {
      n_meta += e.meta;
      n_x += e.complete;
      n_other += !e.meta;
    }
    if (n_other == 0 || m.min_ns > m.max_end_ns) die(in + ": no timed events to repeat");
    Shift sh;
    const int64_t span_ns = m.max_end_ns - m.min_ns;
    sh.ts_us = (span_ns + 1'000'000 + 999) / 1000;  // span + 1 ms, whole microseconds
    sh.id = m.max_id + 1;
    sh.step = m.max_step >= m.min_step ? m.max_step - m.min_step + 1 : 0;

    // Size of one copy (copy 0, M events excluded) to pick K.
    std::string tmp;
    uint64_t per_copy = 0;
    for (const Event& e : m.events) {
      if (e.meta) continue;
      tmp.clear();
      append_event(tmp, e, 0, sh);
      per_copy += tmp.size() + 2;
    }
    if (copies <= 0) {
      copies = static_cast<int64_t>(std::ceil(target_mb * 1e6 / static_cast<double>(per_copy)));
      copies = std::max<int64_t>(copies, 1);
    }

    Output out(out_path, gzip);
    std::string& o = out.buf();
    o += m.object_form ? "{\n" : "[\n";
    for (const auto& [k, v] : m.before) o += fmt::format("  {}: {},\n", k, v);
    if (m.object_form) o += "  " + m.events_key + ": [\n";
    bool first = true;
    for (int64_t k = 0; k < copies; ++k) {
      for (const Event& e : m.events) {
        if (e.meta && k > 0) continue;
        if (!first) o += ",\n";
        first = false;
        append_event(o, e, k, sh);
        out.maybe_flush();
      }
    }
    o += "\n";
    if (m.object_form) {
      o += "  ]";
      for (const auto& [k, v] : m.after) o += fmt::format(",\n  {}: {}", k, v);
      o += "\n}\n";
    } else {
      o += "]\n";
    }
    out.close();

    const uint64_t events = n_meta + static_cast<uint64_t>(copies) * n_other;
    const uint64_t x_events = static_cast<uint64_t>(copies) * n_x;
    fmt::print("input            {} ({:.1f} MB uncompressed, {} events, {} ph M)\n", in,
               static_cast<double>(in_bytes) / 1e6, m.events.size(), n_meta);
    fmt::print("output           {}{}\n", out_path, gzip ? " (gzip -1)" : "");
    fmt::print("copies           {}\n", copies);
    fmt::print("shift per copy   ts +{} us, ids +{}, ProfilerStep +{}\n", sh.ts_us, sh.id, sh.step);
    fmt::print("uncompressed     {:.1f} MB ({} bytes)\n", static_cast<double>(out.bytes()) / 1e6,
               out.bytes());
    fmt::print("events           {}\n", events);
    if (m.non_numeric_ids > 0)
      fmt::print("warning          {} non-numeric ids left unchanged (not unique across copies)\n",
                 m.non_numeric_ids);
    if (m.events_without_ts > 0)
      fmt::print("warning          {} events without ts repeated unshifted\n", m.events_without_ts);
    fmt::print("uncompressed_bytes={}\n", out.bytes());
    fmt::print("expected_x_events={}\n", x_events);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "chopper-make-large-trace: {}\n", e.what());
    return 1;
  }
}
