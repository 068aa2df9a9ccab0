#include "chopper/ingest/cupti/cupti_range.hpp"

#include <simdjson.h>

#include <cmath>
#include <limits>
#include <string>

#include "chopper/base/error.hpp"
#include "chopper/base/utf8.hpp"
#include "chopper/ingest/rocprof/internal.hpp"

namespace chopper {

namespace {

namespace od = simdjson::ondemand;

constexpr std::string_view kRangeCat = "cuda_profiler_range";

// An integer that may be written as a number or as a string ("pid": "0"); -1 when neither.
int64_t as_id(od::value v) {
  const od::json_type ty = v.type();
  if (ty == od::json_type::number) {
    int64_t i = 0;
    if (!v.get_int64().get(i)) return i;
    double d = 0;
    if (!v.get_double().get(d) && std::isfinite(d) && std::abs(d) < 9e18)
      return static_cast<int64_t>(d);
    return -1;
  }
  if (ty == od::json_type::string) {
    int64_t i = -1;
    std::string_view s = v.get_string();
    return rocprof::parse_i64(s, i) ? i : -1;
  }
  return -1;
}

class RangeReader {
 public:
  explicit RangeReader(CounterTable& t) : t_(t), b_(t) {}

  void read_root(od::document& doc) {
    for (auto f : doc.get_object()) {
      std::string_view k = f.unescaped_key();
      if (k == "traceEvents") {
        for (auto e : f.value().get_array()) read_event(e.value());
      } else if (k == "distributedInfo") {
        od::value v = f.value();
        if (v.type() != od::json_type::object) continue;
        for (auto d : v.get_object())
          if (d.unescaped_key() == std::string_view("rank")) t_.rank = as_id(d.value());
      }
    }
  }
  void finish() { b_.finish("counter_repeated_summed"); }
  void abandon() { finish(); }
  size_t rows() const { return t_.size(); }

 private:
  struct Arg {
    size_t counter;
    double v;
  };

  // Reads args into `out` (counter index, value); non-numbers are counted.
  void read_args(od::object args, std::vector<Arg>& out) {
    for (auto a : args) {
      std::string_view name = a.unescaped_key();
      od::value v = a.value();
      double x = 0;
      if (v.type() != od::json_type::number || v.get_double().get(x) || !std::isfinite(x)) {
        t_.diagnostics.add("bad_counter_value", [&] {
          return "range " + std::to_string(t_.size()) + ": " + std::string(name.substr(0, 80)) +
                 " is not a finite number";
        });
        continue;
      }
      out.push_back({b_.counter(name), x});
    }
  }

  void read_event(od::value ev) {
    if (ev.type() != od::json_type::object) return;
    std::string_view cat, ph;
    std::string name;
    int64_t pid = -1;
    bool have_cat = false;
    args_.clear();
    std::string deferred;  // args met before cat: kept as text, read if the event is a range
    for (auto f : ev.get_object()) {
      std::string_view k = f.unescaped_key();
      if (k == "cat") {
        cat = f.value().get_string();
        have_cat = true;
        if (cat != kRangeCat) return;  // the rest of a plain event is not needed
      } else if (k == "ph") {
        ph = f.value().get_string();
      } else if (k == "name") {
        name = std::string(std::string_view(f.value().get_string()));
      } else if (k == "pid") {
        pid = as_id(f.value());
      } else if (k == "args") {
        od::value v = f.value();
        if (v.type() != od::json_type::object) continue;
        if (have_cat) {
          read_args(v.get_object(), args_);
        } else {
          od::object o = v.get_object();
          deferred = std::string(std::string_view(o.raw_json()));
        }
      }
    }
    if (!have_cat || cat != kRangeCat) return;
    if (ph != "X") {
      t_.diagnostics.add("range_not_complete", [&] {
        return "a cuda_profiler_range event with ph \"" + std::string(ph) + "\" (not X): skipped";
      });
      return;
    }
    if (!deferred.empty()) {
      od::parser p;
      simdjson::padded_string ps(deferred);
      od::document d = p.iterate(ps);
      read_args(d.get_object(), args_);
    }
    const size_t r = b_.add_row();
    repair_utf8(name);
    t_.kernel[r] = std::move(name);
    t_.agent[r] =
        pid >= 0 && pid < std::numeric_limits<int32_t>::max() ? static_cast<int32_t>(pid) : -1;
    t_.dispatch_id[r] = static_cast<int64_t>(r);
    for (const Arg& a : args_) b_.add_cell(r, a.counter, a.v);
  }

  CounterTable& t_;
  rocprof::TableBuilder b_;
  std::vector<Arg> args_;
};

}  // namespace

bool sniff_kineto_json(std::string_view head) {
  if (head.size() >= 3 && head.substr(0, 3) == "\xEF\xBB\xBF") head.remove_prefix(3);
  size_t i = 0;
  while (i < head.size() &&
         (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n'))
    ++i;
  if (i >= head.size() || head[i] != '{') return false;
  for (std::string_view key :
       {"\"traceEvents\"", "\"schemaVersion\"", "\"deviceProperties\"", "\"distributedInfo\""})
    if (head.find(key) != std::string_view::npos) return true;
  return false;
}

CounterTable read_cupti_ranges(ByteSource& src, std::string head) {
  CounterTable t = rocprof::read_counter_json<RangeReader>(
      src, std::move(head), "Kineto JSON", "cupti-range-json", ClockDomain::kUnknown);
  if (t.size() == 0)
    throw NotATraceError(src.name(), 0,
                         "a Kineto trace without cuda_profiler_range events: not hardware "
                         "counters (a timing trace belongs beside the other rank traces)");
  // The range profiler's ts/dur split the profiling span evenly: not the kernels' times.
  t.start_ns.assign(t.size(), kNoTime);
  t.end_ns.assign(t.size(), kNoTime);
  return t;
}

}  // namespace chopper
