#pragma once
// Telling an Nsight Systems SQLite export (nsys export --type sqlite) from other files by its
// content: the SQLite header, then its tables. chopper's own chopper.sqlite (it has
// `chopper_tables`) is not an export; neither is any other SQLite database.
#include <string>
#include <string_view>

namespace chopper::nsys {

enum class SqliteKind : uint8_t {
  kNotSqlite,    // no SQLite header (or not a readable regular file)
  kNsysExport,   // CUPTI_ACTIVITY_KIND_KERNEL or StringIds, and no chopper_tables
  kChopperOwn,   // chopper's own output (chopper.sqlite of analyze)
  kOtherSqlite,  // an SQLite database of something else
};

// Whether the first 16 bytes are SQLite's header ("SQLite format 3\0"). No error: false if the
// file cannot be read.
bool has_sqlite_header(const std::string& path);
// The kind of a file by its content. Throws InputError (naming the file) when it has the SQLite
// header but its tables cannot be listed (truncated, corrupt).
SqliteKind sqlite_kind(const std::string& path);

// An Nsight Systems report (.nsys-rep, .qdrep): a closed format chopper cannot read.
bool is_nsys_report_name(std::string_view path);
// The message for one: what it is and the command that exports it to SQLite.
std::string nsys_report_message(const std::string& path);

}  // namespace chopper::nsys
