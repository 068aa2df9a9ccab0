#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "chopper/base/input.hpp"
#include "chopper/ingest/kineto/kineto_reader.hpp"
#include "chopper/link/link.hpp"

namespace chopper::test {

inline std::string data_path(const std::string& name) {
  return std::string(CHOPPER_TEST_DATA) + "/" + name;
}
inline std::string shared_path(const std::string& rel) {
  return std::string(CHOPPER_SHARED_DIR) + "/" + rel;
}
inline bool have_shared_traces() {
  return std::filesystem::is_directory(std::string(CHOPPER_SHARED_DIR) + "/traces/kineto");
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Reads, links and classifies a trace held in memory.
inline RankTrace parse(const std::string& text, KinetoReadOptions opt = {}) {
  auto src = ByteSource::from_memory(text, "mem.json");
  RankTrace t = read_kineto(*src, opt);
  link_trace(t);
  classify_trace(t);
  return t;
}

// Wraps event objects (comma-separated JSON text) into a minimal object-form trace.
inline std::string trace_of(const std::string& events, const std::string& extra_top = "") {
  return "{\"schemaVersion\": 1, " + extra_top + "\"traceEvents\": [" + events + "]}";
}

}  // namespace chopper::test
