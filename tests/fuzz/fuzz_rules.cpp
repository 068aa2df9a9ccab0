// libFuzzer target for the labelling rules engine (hierarchy/taxonomy.cpp, label.cpp): patterns
// compiled with RE2, the literal filter in front of them, operation labels ($1, $&, ...), user
// TOML rules files, and labelling a small trace whose names come from the input.
//
// The first byte picks the mode. Bit 0x80 clear: the rest is a pattern (first line) and names
// (the other lines); bit 0 = ignore_case, bits 1-3 = the level. Every name that the regex matches
// must pass the filter (a filter that turns away a match would lose labels silently: that is a
// crash here). Bit 0x80 set: the rest is a TOML rules file, then "\n%%\n", then names, each made a
// host op of a small trace that is then labelled with the built-in rules plus the file's.
// Bits 0xC0 = 0x40: the rest is a run manifest (TOML: tokens_per_step, device, dtype), read as
// `--manifest` reads it.
// Any input must end in labels or a chopper::Error: never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/base/json_out.hpp"
#include "chopper/cli/common.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/hierarchy/taxonomy.hpp"
#include "chopper/ingest/kineto/kineto_reader.hpp"
#include "chopper/link/link.hpp"

namespace {

std::vector<std::string_view> lines(std::string_view s) {
  std::vector<std::string_view> v;
  while (!s.empty()) {
    const size_t nl = s.find('\n');
    v.push_back(s.substr(0, nl));
    if (nl == std::string_view::npos) break;
    s.remove_prefix(nl + 1);
  }
  return v;
}

void pattern_mode(uint8_t mode, std::string_view rest) {
  std::vector<std::string_view> ls = lines(rest);
  if (ls.empty()) return;
  chopper::NameRule r;
  r.name = "fuzz";
  r.source = "fuzz.toml:1";
  r.pattern = std::string(ls[0]);
  r.ignore_case = (mode & 1) != 0;
  r.level = static_cast<chopper::RuleLevel>((mode >> 1) % 5);
  r.label = "$1-$&-$`-$'-$$-$12-$";
  try {
    chopper::compile_rule(r);
  } catch (const chopper::Error&) {
    return;
  }
  std::vector<std::string_view> groups(static_cast<size_t>(r.captures) + 1);
  for (size_t i = 1; i < ls.size(); ++i) {
    const std::string_view name = ls[i];
    const bool hit = r.search(name);
    if (hit && !r.may_match(name)) __builtin_trap();  // the filter lost a match
    const bool hit2 = r.search(name, groups.data(), static_cast<int>(groups.size()));
    if (hit != hit2) __builtin_trap();
    if (hit2) (void)chopper::format_label(r.label, name, groups);
  }
}

void toml_mode(std::string_view rest) {
  const size_t sep = rest.find("\n%%\n");
  const std::string_view toml = rest.substr(0, sep);
  const std::string_view names = sep == std::string_view::npos ? "" : rest.substr(sep + 4);
  chopper::Taxonomy tx = chopper::Taxonomy::builtin();
  try {
    tx.load_toml_text(toml, "fuzz.toml");
  } catch (const chopper::Error&) {
    return;
  }
  // Each name: a host op (nested in the one before) launching one kernel, in one step.
  std::string events =
      R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100000})";
  int k = 0;
  for (std::string_view n : lines(names)) {
    if (k >= 64) break;
    const std::string cat = k % 2 == 0 ? "user_annotation" : "cpu_op";
    events += ",\n{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": " + chopper::json_string(n) +
              ", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(10 + k) +
              ", \"dur\": " + std::to_string(1000 - k) + "}";
    events +=
        ",\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
        "\"pid\": 1, \"tid\": 1, \"ts\": " +
        std::to_string(10 + k) +
        ", \"dur\": 1, \"args\": {\"correlation\": " + std::to_string(k + 1) + "}}";
    events += ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": " + chopper::json_string(n) +
              ", \"pid\": 0, \"tid\": 7, \"ts\": " + std::to_string(2000 + k * 10) +
              ", \"dur\": 5, \"args\": {\"correlation\": " + std::to_string(k + 1) +
              ", \"device\": 0, \"stream\": 7}}";
    ++k;
  }
  const std::string text = "{\"traceEvents\": [" + events + "]}";
  try {
    auto src = chopper::ByteSource::from_memory(text, "fuzz.json");
    chopper::RankTrace t = chopper::read_kineto(*src);
    chopper::link_trace(t);
    chopper::classify_trace(t);
    chopper::label_trace(tx, t);
  } catch (const chopper::InputError&) {
  }
}

void manifest_mode(std::string_view rest) {
  chopper::AnalysisOptions a;
  try {
    chopper::cli::apply_manifest(rest, "fuzz.toml", a, (rest.size() & 1) != 0);
  } catch (const chopper::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((data[0] & 0x80) != 0)
    toml_mode(rest);
  else if ((data[0] & 0x40) != 0)
    manifest_mode(rest);
  else
    pattern_mode(data[0], rest);
  return 0;
}
