// sql_to_sqlite SQL_FILE DB_FILE: builds DB_FILE from the SQL text (the CLI tests' Nsight Systems
// fixtures, tests/data/nsys/*.sql) with the SQLite C API.
#include <cstdio>
#include <exception>

#include "sqlite_from_sql.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: sql_to_sqlite SQL_FILE DB_FILE\n");
    return 2;
  }
  try {
    chopper::test::sqlite_from_sql(argv[1], argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sql_to_sqlite: %s\n", e.what());
    return 1;
  }
  return 0;
}
