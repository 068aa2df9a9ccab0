#include "chopper/ingest/nsys/nsys_detect.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "chopper/ingest/nsys/nsys_db.hpp"

namespace chopper::nsys {

bool has_sqlite_header(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char head[16];
  const size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  return n == sizeof head && std::memcmp(head, "SQLite format 3", 16) == 0;
}

SqliteKind sqlite_kind(const std::string& path) {
  if (!has_sqlite_header(path)) return SqliteKind::kNotSqlite;
  const Db db(path);
  if (db.has_table("chopper_tables")) return SqliteKind::kChopperOwn;
  if (db.has_table("CUPTI_ACTIVITY_KIND_KERNEL") || db.has_table("StringIds"))
    return SqliteKind::kNsysExport;
  return SqliteKind::kOtherSqlite;
}

static bool ends_with(std::string_view s, std::string_view e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

bool is_nsys_report_name(std::string_view path) {
  return ends_with(path, ".nsys-rep") || ends_with(path, ".qdrep");
}

std::string nsys_report_message(const std::string& path) {
  std::string out = path;
  for (std::string_view e : {".nsys-rep", ".qdrep"})
    if (ends_with(out, e)) out.resize(out.size() - e.size());
  return fmt::format(
      "an Nsight Systems report: a closed format chopper cannot read. Export it to SQLite and "
      "give chopper the export: nsys export --type sqlite -o {}.sqlite {}",
      out, path);
}

}  // namespace chopper::nsys
