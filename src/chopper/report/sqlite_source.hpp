#pragma once
// Reading back a chopper.sqlite that `chopper analyze` wrote (report/sqlite_sink.hpp): the result
// tables, each with its schema from the database's self-description (chopper_tables,
// chopper_columns), in the order they were written. `chopper report DIR` draws the report from
// them without reading the traces again; the Python module loads them (src/python/).
#include <map>
#include <string>
#include <vector>

#include "chopper/model/table.hpp"

namespace chopper {

// Whether `path` is a file whose first bytes are SQLite's header ("SQLite format 3\0").
bool is_sqlite_file(const std::string& path);
// Whether `path` is a SQLite database chopper wrote (it has chopper_tables): not an Nsight
// Systems export or another program's database. False when it cannot be opened.
bool is_chopper_database(const std::string& path);

// Every result table of the database at `path` (all but chopper_tables, chopper_columns and
// chopper_run), or only the tables and columns `keep` selects (model/table.hpp) when it is not
// empty, in the order they were written; on up to `threads` threads, a table each (a connection
// each). A cell is read as its column is declared: an integer stored in a REAL column is a real.
// Throws Error naming the file when it cannot be opened, is not chopper's (no chopper_tables), or a
// table or column it documents cannot be read.
std::vector<Table> read_sqlite_tables(const std::string& path, const TableSelection& keep = {},
                                      unsigned threads = 1);

// The database's chopper_run(name, value) rows (report/sqlite_sink.hpp, describe_run): what the
// tables are the analysis of ("inputs", "device", "chopper_version"). Empty when the database has
// none (written by an older chopper, or by the Python module). Throws as read_sqlite_tables.
std::map<std::string, std::string> read_run_info(const std::string& path);

}  // namespace chopper
