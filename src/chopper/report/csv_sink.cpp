#include "chopper/report/csv_sink.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <system_error>

#include "chopper/report/output_dir.hpp"

namespace chopper {

namespace {
constexpr size_t kFlushBytes = size_t{1} << 20;
}  // namespace

CsvSink::CsvSink(std::string dir, OutputDir* staging) : dir_(std::move(dir)), staging_(staging) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw Error(fmt::format("{}: cannot create directory: {}", dir_, ec.message()));
  if (!std::filesystem::is_directory(dir_, ec))
    throw Error(fmt::format("{}: not a directory", dir_));
}

CsvSink::~CsvSink() {
  if (file_) std::fclose(file_);
}

void CsvSink::fail(std::string_view what) {
  const int err = errno;
  std::string msg = fmt::format("{}: {}: {}", path_, what, std::strerror(err));
  if (file_) std::fclose(file_);
  file_ = nullptr;
  buf_.clear();
  throw Error(msg);
}

void CsvSink::begin(const TableSchema& schema) {
  if (file_) throw Error(fmt::format("{}: CsvSink::begin while '{}' is open", dir_, schema_.name));
  validate_schema(schema);
  if (schema.name.find('/') != std::string::npos || schema.name.find('\0') != std::string::npos ||
      schema.name == "." || schema.name == "..")
    throw Error(fmt::format("table '{}': name is not usable as a CSV file name", schema.name));
  schema_ = schema;
  path_ = staging_ != nullptr ? staging_->stage(schema.name + ".csv")
                              : (std::filesystem::path(dir_) / (schema.name + ".csv")).string();
  errno = 0;
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) fail("cannot open for writing");
  buf_.clear();
  buf_.reserve(kFlushBytes + 4096);
  for (size_t c = 0; c < schema.columns.size(); ++c) {
    if (c) buf_.push_back(',');
    append_field(schema.columns[c].name);
  }
  buf_.push_back('\n');
}

namespace {

// Whether `s` holds a character that makes a CSV field quoted: , " CR LF. Sixteen bytes a step
// with SSE2 (every x86-64 processor has it): kernel names of 100+ characters are most of a
// trace's CSV text, and a loop of four compares a byte was the CSV thread's largest cost.
bool needs_quotes(std::string_view s) {
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i comma = _mm_set1_epi8(','), quote = _mm_set1_epi8('"'), cr = _mm_set1_epi8('\r'),
                lf = _mm_set1_epi8('\n');
  for (; i + 16 <= s.size(); i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
    const __m128i hit =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, comma), _mm_cmpeq_epi8(v, quote)),
                     _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, lf)));
    if (_mm_movemask_epi8(hit) != 0) return true;
  }
#endif
  for (; i < s.size(); ++i) {
    const char ch = s[i];
    if (ch == ',' || ch == '"' || ch == '\r' || ch == '\n') return true;
  }
  return false;
}

}  // namespace

void append_csv_field(std::string& out, std::string_view s) {
  if (!needs_quotes(s)) {
    out.append(s);
    return;
  }
  out.push_back('"');
  for (char ch : s) {
    if (ch == '"') out.push_back('"');
    out.push_back(ch);
  }
  out.push_back('"');
}

void CsvSink::append_field(std::string_view s) {
  if (s.empty()) {
    buf_ += "\"\"";  // empty text, as opposed to NULL (an empty field)
    return;
  }
  append_csv_field(buf_, s);
}

// The shortest text that reads back as the same double ({fmt}'s "{}"), formatted on the stack
// rather than through a growing back-inserter (the longest, "-2.2250738585072014e-308", is 24
// characters); a compiled format into a pointer: the runtime one parsed "{}" each value.
void CsvSink::append_real(double x) {
  char tmp[64];
  const char* end = fmt::format_to(tmp, FMT_COMPILE("{}"), x);
  buf_.append(tmp, static_cast<size_t>(end - tmp));
}

void CsvSink::row(std::span<const Cell> cells) {
  if (!file_) throw Error(fmt::format("{}: CsvSink::row outside begin/end", dir_));
  validate_row(schema_, cells);
  for (size_t c = 0; c < cells.size(); ++c) {
    if (c) buf_.push_back(',');
    const Cell& v = cells[c];
    switch (v.kind) {
      case Cell::kNull:
        break;
      case Cell::kInt:
        // An int in a REAL column prints as the double the column holds (as Table stores it).
        if (schema_.columns[c].type == ColType::kReal) {
          append_real(static_cast<double>(v.i));
        } else {
          const fmt::format_int f(v.i);
          buf_.append(f.data(), f.size());
        }
        break;
      case Cell::kReal:
        append_real(v.r);
        break;
      case Cell::kText:
        append_field(v.s);
        break;
    }
  }
  buf_.push_back('\n');
  if (buf_.size() >= kFlushBytes) flush();
}

void CsvSink::flush() {
  if (buf_.empty()) return;
  errno = 0;
  if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) fail("write failed");
  buf_.clear();
}

void CsvSink::end() {
  if (!file_) throw Error(fmt::format("{}: CsvSink::end outside begin/end", dir_));
  flush();
  errno = 0;
  if (std::fflush(file_) != 0) fail("write failed");
  std::FILE* f = file_;
  file_ = nullptr;
  errno = 0;
  if (std::fclose(f) != 0) {
    const int err = errno;
    throw Error(fmt::format("{}: close failed: {}", path_, std::strerror(err)));
  }
}

}  // namespace chopper
