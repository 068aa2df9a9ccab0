// ShardedSqlite: two writers on two threads give the database one SqliteSink gives (the same
// tables in the same schema order, the same rows with the same row ids, the same documentation
// rows), and ShardRouter hands each table to the shard given the fewest cells so far.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "chopper/report/sqlite_shards.hpp"
#include "chopper/report/sqlite_sink.hpp"
#include "chopper/report/threaded_sink.hpp"

using namespace chopper;
namespace fs = std::filesystem;

namespace {

// Every row of a query, as one text line per row ("NULL" for NULL).
std::vector<std::string> dump(const fs::path& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::vector<std::string> out;
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK)
      << sql << ": " << sqlite3_errmsg(db);
  while (s != nullptr && sqlite3_step(s) == SQLITE_ROW) {
    std::string line;
    for (int c = 0; c < sqlite3_column_count(s); ++c) {
      if (c) line += '|';
      line += sqlite3_column_type(s, c) == SQLITE_NULL
                  ? std::string("NULL")
                  : std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, c)),
                                static_cast<size_t>(sqlite3_column_bytes(s, c)));
    }
    out.push_back(line);
  }
  sqlite3_finalize(s);
  sqlite3_close_v2(db);
  return out;
}

// The whole database: the schema in its order, the documentation rows and every table's rows
// with their row ids.
std::vector<std::string> whole(const fs::path& p) {
  std::vector<std::string> out;
  const std::vector<std::string> names =
      dump(p, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid");
  for (const std::string& s : dump(p, "SELECT type, name, sql FROM sqlite_master ORDER BY rowid"))
    out.push_back("schema " + s);
  for (const std::string& n : names)
    for (const std::string& r : dump(p, fmt::format("SELECT rowid, * FROM \"{}\"", n)))
      out.push_back(n + " " + r);
  return out;
}

// Tables of 40, 0, 3, 25, 40 (again: the name "a" rewritten) and 10 rows of three columns, with
// text, NULL and reals.
const std::vector<std::pair<std::string, int>> kTables = {{"a", 40}, {"b", 0},  {"c", 3},
                                                          {"d", 25}, {"a", 40}, {"e", 10}};

void play(TableSink& s) {
  int serial = 0;
  for (const auto& [name, rows] : kTables) {
    const TableSchema schema{name,
                             "table " + name,
                             {{"n", ColType::kInt, "a number", "1"},
                              {"x_ms", ColType::kReal, "a time", "ms"},
                              {"label", ColType::kText, "a name", ""}}};
    s.begin(schema);
    for (int r = 0; r < rows; ++r, ++serial) {
      const std::string text = fmt::format("{}-{}", name, serial);
      const Cell cells[] = {Cell::of(serial), r % 4 == 0 ? Cell::null() : Cell::of(serial * 0.25),
                            r % 5 == 0 ? Cell::null() : Cell::of(std::string_view(text))};
      s.row(cells);
    }
    s.end();
  }
}

class ShardedSqliteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("chopper_shards_{}_{}", ::testing::UnitTest::GetInstance()->random_seed(),
                       reinterpret_cast<uintptr_t>(this));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

}  // namespace

// Each table (rows × 3 cells) goes to the shard given fewer cells so far, the first on a tie:
// a (120 cells) → 0 at 0 = 0; b (0) → 1 at 0 < 120; c (9) → 1 at 0 < 120; d (75) → 1 at 9 < 120;
// a (120) → 1 at 84 < 120; e (30) → 0 at 120 < 204.
TEST(ShardRouter, GivesEachTableToTheShardWithTheFewestCells) {
  ShardRouter router(2);
  std::vector<size_t> owners;
  for (const auto& [name, rows] : kTables) {
    owners.push_back(router.begin());
    for (int r = 0; r < rows; ++r) router.row(3);
  }
  EXPECT_EQ(owners, (std::vector<size_t>{0, 1, 1, 1, 1, 0}));
}

TEST_F(ShardedSqliteTest, TwoWritersGiveTheDatabaseOneWriterGives) {
  {
    SqliteSink one((dir_ / "one.sqlite").string());
    play(one);
  }
  for (size_t shards : {1ul, 2ul, 3ul}) {
    const fs::path p = dir_ / fmt::format("sharded{}.sqlite", shards);
    {
      ShardedSqlite db(p.string(), shards);
      ThreadedSink threads(db.sinks(), 7, 64);  // small batches: many hand-overs
      play(threads);
      threads.finish();
      db.finish();
    }
    EXPECT_EQ(whole(p), whole(dir_ / "one.sqlite")) << shards << " shards";
    // Nothing left beside the database.
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}),
              static_cast<long>(shards) + 1);
  }
  // The comparison covers what matters: 5 tables, "a" with its second 40 rows (row ids 1..40).
  const std::vector<std::string> a = dump(dir_ / "sharded2.sqlite",
                                          "SELECT min(n), max(n), "
                                          "count(*), min(rowid), "
                                          "max(rowid) FROM a");
  EXPECT_EQ(a, std::vector<std::string>{"68|107|40|1|40"});
}

// An error in a shard's table reaches the caller; the database is not left half-copied.
TEST_F(ShardedSqliteTest, AWriterErrorReachesTheCaller) {
  ShardedSqlite db((dir_ / "bad.sqlite").string(), 2);
  ThreadedSink threads(db.sinks(), 7, 64);
  const TableSchema reserved{"chopper_tables", "", {{"n", ColType::kInt, "", ""}}};
  threads.begin(reserved);
  threads.end();
  EXPECT_THROW(threads.finish(), Error);
}
