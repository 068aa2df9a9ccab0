#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "chopper/base/error.hpp"
#include "chopper/model/table.hpp"
#include "chopper/report/csv_sink.hpp"
#include "chopper/report/sqlite_sink.hpp"
#include "chopper/report/sqlite_source.hpp"

using namespace chopper;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

template <class T>
concept CellOf = requires(T v) {
  Cell::of(v);
};
static_assert(CellOf<int> && CellOf<int64_t> && CellOf<uint32_t> && CellOf<size_t>);
static_assert(CellOf<double> && CellOf<const char*> && CellOf<std::string_view>);
static_assert(!CellOf<bool>);

TableSchema mixed_schema() {
  return {"mixed",
          "one column of each type",
          {{"id", ColType::kInt, "an integer", "", "never"},
           {"val", ColType::kReal, "a real, in units", "J", "not measured"},
           {"label", ColType::kText, "free text"}}};
}

// Every awkward value: CSV specials in text, NULL in each column, int64 extremes, reals that only
// print exactly in shortest round-trip form, an int stored into the REAL column, empty text.
Table mixed_table() {
  Table t(mixed_schema());
  t.add_row({Cell::of(1), Cell::of(0.1), Cell::of("plain")});
  t.add_row({Cell::of(-1), Cell::of(1e-9), Cell::of("a,b")});
  t.add_row({Cell::of(kMin), Cell::of(-2.5), Cell::of("say \"hi\"")});
  t.add_row({Cell::of(kMax), Cell::of(1e300), Cell::of("line1\nline2")});
  t.add_row({Cell::null(), Cell::null(), Cell::null()});
  t.add_row({Cell::of(0), Cell::of(3), Cell::of("")});
  t.add_row({Cell::of(42), Cell::of(1.0 / 3), Cell::of("cr\rx")});
  return t;
}

constexpr std::string_view kMixedCsv =
    "id,val,label\n"
    "1,0.1,plain\n"
    "-1,1e-09,\"a,b\"\n"
    "-9223372036854775808,-2.5,\"say \"\"hi\"\"\"\n"
    "9223372036854775807,1e+300,\"line1\nline2\"\n"
    ",,\n"
    "0,3,\"\"\n"
    "42,0.3333333333333333,\"cr\rx\"\n";

class TableSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("chopper_table_test_" + std::to_string(::getpid()) + "_" +
                                        info->test_suite_name() + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

// A read-only connection for checking what SqliteSink wrote.
class Db {
 public:
  explicit Db(const fs::path& p) {
    EXPECT_EQ(sqlite3_open_v2(p.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  }
  ~Db() { sqlite3_close_v2(db_); }
  // All rows of a query, each cell as text (std::nullopt for NULL).
  std::vector<std::vector<std::optional<std::string>>> query(const std::string& sql) {
    std::vector<std::vector<std::optional<std::string>>> out;
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db_);
    if (!s) return out;
    while (sqlite3_step(s) == SQLITE_ROW) {
      auto& row = out.emplace_back();
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        if (sqlite3_column_type(s, c) == SQLITE_NULL) {
          row.emplace_back(std::nullopt);
        } else {
          const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, c));
          row.emplace_back(std::string(p, static_cast<size_t>(sqlite3_column_bytes(s, c))));
        }
      }
    }
    sqlite3_finalize(s);
    return out;
  }
  int64_t scalar(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
    EXPECT_EQ(sqlite3_step(s), SQLITE_ROW) << sql;
    const int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  }
  sqlite3* get() { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

size_t count_lines(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no chopper::Error thrown";
  return "";
}

}  // namespace

TEST(Table, StoresTypedCellsColumnWise) {
  const Table t = mixed_table();
  EXPECT_EQ(t.name(), "mixed");
  EXPECT_EQ(t.rows(), 7u);
  EXPECT_EQ(t.cols(), 3u);
  const size_t id = t.col("id"), val = t.col("val"), label = t.col("label");
  EXPECT_EQ(val, 1u);
  EXPECT_EQ(t.get_int(2, id), kMin);
  EXPECT_EQ(t.get_int(3, id), kMax);
  EXPECT_EQ(t.get_real(0, val), 0.1);
  EXPECT_EQ(t.get_real(5, val), 3.0);  // the int went in as a double
  EXPECT_EQ(t.cell(5, val).kind, Cell::kReal);
  EXPECT_EQ(t.get_text(2, label), "say \"hi\"");
  EXPECT_EQ(t.get_text(3, label), "line1\nline2");
  EXPECT_EQ(t.get_text(5, label), "");
  EXPECT_FALSE(t.is_null(5, label));  // empty text is not NULL
  for (size_t c = 0; c < 3; ++c) {
    EXPECT_TRUE(t.is_null(4, c));
    EXPECT_FALSE(t.is_null(0, c));
    EXPECT_EQ(t.cell(4, c).kind, Cell::kNull);
  }
  EXPECT_EQ(t.get_int(4, id), 0);
  EXPECT_EQ(t.get_text(4, label), "");

  EXPECT_EQ(Cell::of("x").kind, Cell::kText);
  EXPECT_EQ(Cell::of(static_cast<const char*>(nullptr)).kind, Cell::kNull);
  EXPECT_EQ(Cell::of(uint64_t{7}).i, 7);
  EXPECT_NE(error_of([] { Cell::of(std::numeric_limits<uint64_t>::max()); }).find("int64"),
            std::string::npos);

  EXPECT_NE(error_of([&] { (void)t.col("nope"); }).find("'mixed': no column 'nope'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)t.get_real(0, id); }).find("column 'id' is INTEGER, not REAL"),
            std::string::npos);
  EXPECT_THROW((void)t.get_int(7, id), Error);
  EXPECT_THROW((void)t.is_null(0, 3), Error);
  EXPECT_THROW(Table({"", "", {}}), Error);
  EXPECT_THROW(Table({"dup", "", {{"a", ColType::kInt, ""}, {"a", ColType::kReal, ""}}}), Error);
}

TEST(Table, TextColumnHoldsEachDistinctTextOnce) {
  // 10,000 rows cycling through three kernel names, an empty text and NULL: the dictionary holds
  // the four distinct texts once each (NULL is no entry), every row reads back its own text, and
  // a copy of the table reads the same.
  const std::string names[] = {std::string(120, 'k'), "ampere_sgemm_128x64_nn", "nccl:all_reduce"};
  Table t({"t", "", {{"name", ColType::kText, ""}}});
  for (int r = 0; r < 10000; ++r) {
    const int k = r % 5;
    t.add_row({k < 3    ? Cell::of(std::string_view(names[k]))
               : k == 3 ? Cell::of("")
                        : Cell::null()});
  }
  EXPECT_EQ(t.text_ends(0).size(), 4u);
  EXPECT_EQ(t.text_bytes(0).size(), 120u + 22u + 15u + 0u);
  const Table copy = t;
  for (size_t r = 0; r < t.rows(); ++r) {
    const size_t k = r % 5;
    const std::string_view want = k < 3 ? std::string_view(names[k]) : std::string_view();
    ASSERT_EQ(t.get_text(r, 0), want) << r;
    ASSERT_EQ(copy.get_text(r, 0), want) << r;
    ASSERT_EQ(t.is_null(r, 0), k == 4) << r;
    ASSERT_EQ(t.text_codes(0)[r] == Table::kNoText, k == 4) << r;
  }
}

TEST(Table, TypeMismatchNamesTableAndColumn) {
  Table t(mixed_schema());
  t.add_row({Cell::of(1), Cell::of(2.0), Cell::of("ok")});
  EXPECT_EQ(error_of([&] {
              t.add_row({Cell::of("1"), Cell::of(2.0), Cell::of("x")});
            }),
            "table 'mixed': column 'id' (INTEGER) cannot hold text value");
  EXPECT_EQ(error_of([&] {
              t.add_row({Cell::of(1), Cell::of(2.0), Cell::of(3)});
            }),
            "table 'mixed': column 'label' (TEXT) cannot hold an integer value");
  EXPECT_EQ(error_of([&] {
              t.add_row({Cell::of(1.5), Cell::of(2.0), Cell::of("x")});
            }),
            "table 'mixed': column 'id' (INTEGER) cannot hold a real value");
  EXPECT_EQ(error_of([&] {
              t.add_row({Cell::of(1), Cell::of(2.0)});
            }),
            "table 'mixed': row has 2 cells, the table has 3 columns");
  EXPECT_EQ(t.rows(), 1u);  // the bad rows added nothing
  EXPECT_EQ(t.get_text(0, 2), "ok");

  // Sinks check rows streamed to them the same way.
  const fs::path dir =
      fs::temp_directory_path() / ("chopper_table_mismatch_" + std::to_string(::getpid()));
  {
    CsvSink csv(dir.string());
    csv.begin(mixed_schema());
    const Cell bad[] = {Cell::of(1), Cell::of("2"), Cell::null()};
    EXPECT_EQ(error_of([&] { csv.row(bad); }),
              "table 'mixed': column 'val' (REAL) cannot hold text value");
    SqliteSink db((dir / "m.sqlite").string());
    db.begin(mixed_schema());
    EXPECT_EQ(error_of([&] { db.row(bad); }),
              "table 'mixed': column 'val' (REAL) cannot hold text value");
  }
  fs::remove_all(dir);
}

TEST_F(TableSinkTest, CsvExactBytes) {
  const Table t = mixed_table();
  CsvSink csv((dir_ / "out").string());  // created when missing
  write_table(t, csv);
  EXPECT_EQ(read_file(dir_ / "out" / "mixed.csv"), kMixedCsv);

  // Column names are quoted like any field; a second table goes to its own file.
  Table q({"q", "", {{"a,b", ColType::kInt, ""}, {"c", ColType::kText, ""}}});
  q.add_row({Cell::of(-0), Cell::of("\"")});
  write_table(q, csv);
  EXPECT_EQ(read_file(dir_ / "out" / "q.csv"), "\"a,b\",c\n0,\"\"\"\"\n");
  EXPECT_EQ(read_file(dir_ / "out" / "mixed.csv"), kMixedCsv);
}

// A field is quoted when a comma, quote, CR or LF is anywhere in it: the check runs 16 bytes a
// step, so each special character is put at every position of fields of 1..40 bytes (the
// blocks and the tail) and the result compared with the rule applied byte by byte.
TEST(CsvField, QuotedWhereverTheSpecialCharacterIs) {
  auto expected = [](const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string o = "\"";
    for (char ch : s) o += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return o + "\"";
  };
  size_t quoted = 0;
  for (size_t n = 1; n <= 40; ++n) {
    const std::string base(n, 'k');
    std::string out;
    append_csv_field(out, base);
    EXPECT_EQ(out, base);
    for (size_t at = 0; at < n; ++at)
      for (char special : {',', '"', '\r', '\n'}) {
        std::string s = base;
        s[at] = special;
        std::string got;
        append_csv_field(got, s);
        EXPECT_EQ(got, expected(s)) << n << " " << at;
        quoted += got.front() == '"';
      }
  }
  EXPECT_EQ(quoted, 4u * (40u * 41u / 2u));  // every field with a special character
}

TEST_F(TableSinkTest, SqliteValuesTypesNullsAndDocs) {
  const fs::path db_path = dir_ / "sub" / "r.sqlite";
  fs::create_directories(dir_ / "sub");
  std::ofstream(db_path) << "not a database";  // replaced
  std::ofstream(db_path.string() + "-journal") << "stale journal";
  {
    SqliteSink db(db_path.string());
    write_table(mixed_table(), db);
    write_table(mixed_table(), db);  // the same name again replaces the table and its docs
  }
  EXPECT_FALSE(fs::exists(db_path.string() + "-journal"));
  Db db(db_path);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM mixed"), 7);
  using R = std::vector<std::optional<std::string>>;
  const auto rows = db.query(
      "SELECT id, typeof(id), val, typeof(val), label, typeof(label) FROM mixed ORDER BY rowid");
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[0], (R{"1", "integer", "0.1", "real", "plain", "text"}));
  EXPECT_EQ(rows[1], (R{"-1", "integer", "1.0e-09", "real", "a,b", "text"}));
  EXPECT_EQ(rows[2], (R{"-9223372036854775808", "integer", "-2.5", "real", "say \"hi\"", "text"}));
  EXPECT_EQ(rows[3],
            (R{"9223372036854775807", "integer", "1.0e+300", "real", "line1\nline2", "text"}));
  EXPECT_EQ(rows[4], (R{std::nullopt, "null", std::nullopt, "null", std::nullopt, "null"}));
  EXPECT_EQ(rows[5], (R{"0", "integer", "3.0", "real", "", "text"}));
  EXPECT_EQ(rows[6], (R{"42", "integer", "0.333333333333333", "real", "cr\rx", "text"}));

  // Reals come back bit-exact (the text form above is SQLite's 15-digit rendering).
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(db.get(), "SELECT val, id FROM mixed ORDER BY rowid", -1, &s, nullptr),
      SQLITE_OK);
  const Table t = mixed_table();
  for (size_t r = 0; sqlite3_step(s) == SQLITE_ROW; ++r) {
    EXPECT_EQ(sqlite3_column_double(s, 0), t.get_real(r, 1)) << r;
    EXPECT_EQ(sqlite3_column_int64(s, 1), t.get_int(r, 0)) << r;
  }
  sqlite3_finalize(s);

  EXPECT_EQ(db.query("SELECT table_name, doc FROM chopper_tables"),
            (std::vector<R>{{"mixed", "one column of each type"}}));
  EXPECT_EQ(db.query("SELECT column_name, type, doc, unit, null_when FROM chopper_columns WHERE "
                     "table_name = 'mixed' ORDER BY rowid"),
            (std::vector<R>{{"id", "INTEGER", "an integer", "", "never"},
                            {"val", "REAL", "a real, in units", "J", "not measured"},
                            {"label", "TEXT", "free text", "", ""}}));
  EXPECT_EQ(db.query("SELECT name, type FROM pragma_table_info('mixed') ORDER BY cid"),
            (std::vector<R>{{"id", "INTEGER"}, {"val", "REAL"}, {"label", "TEXT"}}));
}

TEST_F(TableSinkTest, SqliteQuotesIdentifiers) {
  const fs::path db_path = dir_ / "q.sqlite";
  {
    SqliteSink db(db_path.string());
    Table t({"select \"x\"", "", {{"from", ColType::kInt, ""}, {"a b", ColType::kText, ""}}});
    t.add_row({Cell::of(1), Cell::of("it's")});
    write_table(t, db);
    EXPECT_THROW(db.begin({"chopper_columns", "", {{"a", ColType::kInt, ""}}}), Error);
  }
  Db db(db_path);
  EXPECT_EQ(db.query("SELECT \"from\", \"a b\" FROM \"select \"\"x\"\"\""),
            (std::vector<std::vector<std::optional<std::string>>>{{"1", "it's"}}));
}

// What SqliteSink wrote comes back cell for cell (read_sqlite_tables: the report drawn from a
// database): every type, NULLs, extreme integers, bit-exact reals, text with quotes and line
// ends, an empty table, the tables in their order, on one thread or several; and the run's
// description. An integer stored in a REAL column (SQLite keeps 3.0 as an integer on disk) comes
// back a real.
TEST_F(TableSinkTest, SqliteReadBackEqualsWritten) {
  const fs::path db_path = dir_ / "back.sqlite";
  const Table mixed = mixed_table();
  Table empty({"empty", "no rows", {{"a_ns", ColType::kInt, "a time", "ns", "never"}}});
  Table quoted({"select \"x\"", "", {{"from", ColType::kInt, ""}, {"a b", ColType::kText, ""}}});
  quoted.add_row({Cell::of(1), Cell::of("it's")});
  {
    SqliteSink db(db_path.string());
    write_table(mixed, db);
    write_table(empty, db);
    write_table(quoted, db);
    db.describe_run({{"inputs", "a.json b.json"}, {"device", "H100"}});
    EXPECT_THROW(db.begin({"chopper_run", "", {{"a", ColType::kInt, ""}}}), Error);
  }
  for (unsigned threads : {1U, 3U}) {
    const std::vector<Table> back = read_sqlite_tables(db_path.string(), {}, threads);
    ASSERT_EQ(back.size(), 3u);
    EXPECT_EQ(back[0].name(), "mixed");
    EXPECT_EQ(back[1].name(), "empty");
    EXPECT_EQ(back[2].name(), "select \"x\"");
    EXPECT_EQ(back[1].rows(), 0u);
    EXPECT_EQ(back[1].schema().columns[0].unit, "ns");
    EXPECT_EQ(back[1].schema().columns[0].null_when, "never");
    EXPECT_EQ(back[1].schema().doc, "no rows");
    const Table& m = back[0];
    ASSERT_EQ(m.rows(), mixed.rows());
    ASSERT_EQ(m.cols(), mixed.cols());
    for (size_t r = 0; r < m.rows(); ++r)
      for (size_t c = 0; c < m.cols(); ++c) {
        const Cell a = mixed.cell(r, c), b = m.cell(r, c);
        ASSERT_EQ(a.kind, b.kind) << r << "," << c;
        EXPECT_EQ(a.i, b.i) << r << "," << c;
        EXPECT_EQ(a.r, b.r) << r << "," << c;  // bit-exact (no NaN in the fixture)
        EXPECT_EQ(a.s, b.s) << r << "," << c;
      }
    EXPECT_EQ(back[2].get_text(0, 1), "it's");
  }
  const std::vector<Table> only = read_sqlite_tables(db_path.string(), {{"empty", {}}});
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].name(), "empty");
  // A selection of columns: only those, in the table's order (not the selection's), the same
  // cells; a name that is not a column is left out.
  const std::vector<Table> some =
      read_sqlite_tables(db_path.string(), {{"mixed", {"label", "id", "no_such"}}});
  ASSERT_EQ(some.size(), 1u);
  ASSERT_EQ(some[0].cols(), 2u);
  EXPECT_EQ(some[0].schema().columns[0].name, "id");
  EXPECT_EQ(some[0].schema().columns[1].name, "label");
  ASSERT_EQ(some[0].rows(), mixed.rows());
  for (size_t r = 0; r < mixed.rows(); ++r) {
    EXPECT_EQ(some[0].cell(r, 0).kind, mixed.cell(r, 0).kind) << r;
    EXPECT_EQ(some[0].cell(r, 0).i, mixed.cell(r, 0).i) << r;
    EXPECT_EQ(some[0].cell(r, 1).kind, mixed.cell(r, 2).kind) << r;
    EXPECT_EQ(some[0].cell(r, 1).s, mixed.cell(r, 2).s) << r;
  }
  EXPECT_EQ(read_run_info(db_path.string()),
            (std::map<std::string, std::string>{{"inputs", "a.json b.json"}, {"device", "H100"}}));
  EXPECT_TRUE(is_sqlite_file(db_path.string()));

  // Not chopper's database, not a database, no file: an error naming the file.
  const fs::path other = dir_ / "other.sqlite";
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(other.string().c_str(), &raw), SQLITE_OK);
    sqlite3_exec(raw, "CREATE TABLE t (a)", nullptr, nullptr, nullptr);
    sqlite3_close(raw);
  }
  EXPECT_EQ(error_of([&] { read_sqlite_tables(other.string()); }),
            other.string() + ": not a database chopper analyze wrote (no chopper_tables)");
  const fs::path text = dir_ / "text.sqlite";
  std::ofstream(text) << "not a database at all";
  EXPECT_FALSE(is_sqlite_file(text.string()));
  EXPECT_NE(error_of([&] { read_sqlite_tables(text.string()); }).find(text.string()),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read_sqlite_tables((dir_ / "none.sqlite").string());
            }).find((dir_ / "none.sqlite").string()),
            std::string::npos);
}

TEST_F(TableSinkTest, UnwritableOutputThrowsWithPath) {
  const fs::path file = dir_ / "regular";
  std::ofstream(file) << "x";
  const std::string csv_dir = (file / "csv").string();
  EXPECT_NE(error_of([&] { CsvSink s(csv_dir); }).find(csv_dir), std::string::npos);
  const std::string db_path = (file / "r.sqlite").string();
  EXPECT_NE(error_of([&] { SqliteSink s(db_path); }).find(db_path), std::string::npos);
  EXPECT_NE(error_of([&] { SqliteSink s(dir_.string()); }).find(dir_.string()), std::string::npos);

  // The table's file cannot be opened: a directory sits at its name.
  fs::create_directories(dir_ / "out" / "mixed.csv");
  CsvSink csv((dir_ / "out").string());
  const std::string csv_file = (dir_ / "out" / "mixed.csv").string();
  EXPECT_NE(error_of([&] { csv.begin(mixed_schema()); }).find(csv_file), std::string::npos);
  EXPECT_THROW(csv.begin({"a/b", "", {{"x", ColType::kInt, ""}}}), Error);

  // Writes that fail (device full) are reported, naming the file.
  if (fs::exists("/dev/full")) {
    fs::create_symlink("/dev/full", dir_ / "out" / "full.csv");
    const std::string full = (dir_ / "out" / "full.csv").string();
    const std::string msg = error_of([&] {
      csv.begin({"full", "", {{"x", ColType::kText, ""}}});
      const std::string big(4096, 'y');
      const Cell c[] = {Cell::of(big)};
      for (int i = 0; i < 1000; ++i) csv.row(c);
      csv.end();
    });
    EXPECT_NE(msg.find(full), std::string::npos) << msg;
  }
}

TEST_F(TableSinkTest, StreamsManyRowsThroughFanout) {
  const TableSchema schema{
      "big",
      "streamed",
      {{"i", ColType::kInt, ""}, {"half", ColType::kReal, ""}, {"name", ColType::kText, ""}}};
  constexpr int64_t kRows = 200000;
  const fs::path db_path = dir_ / "big.sqlite";
  {
    SqliteSink db(db_path.string());
    CsvSink csv(dir_.string());
    FanoutSink both({&db, &csv});
    both.begin(schema);
    std::string name;
    for (int64_t i = 0; i < kRows; ++i) {
      name = "kernel_" + std::to_string(i);
      const Cell row[] = {Cell::of(i), i % 10 ? Cell::of(static_cast<double>(i) / 2) : Cell::null(),
                          Cell::of(name)};
      both.row(row);
    }
    both.end();
  }
  Db db(db_path);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM big"), kRows);
  EXPECT_EQ(db.scalar("SELECT sum(i) FROM big"), kRows * (kRows - 1) / 2);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM big WHERE half IS NULL"), kRows / 10);
  EXPECT_EQ(db.query("SELECT name FROM big WHERE i = 123456")[0][0], "kernel_123456");
  EXPECT_EQ(count_lines(dir_ / "big.csv"), static_cast<size_t>(kRows) + 1);  // + header
}
