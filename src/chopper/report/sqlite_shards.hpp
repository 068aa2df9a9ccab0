#pragma once
// One SQLite database written by several threads: SQLite lets one writer at a time into a file,
// so each extra shard writes the tables given to it into a database of its own in memory, and
// the first shard, which writes the database itself, copies them in at the end with
// `INSERT INTO t SELECT * FROM shard.t` (SQLite's transfer optimization: the records and row ids
// are copied as they are, about a quarter of the cost of inserting the rows). The tables, their
// rows, their row ids, their order in the schema and their documentation (chopper_tables,
// chopper_columns) are the same as one SqliteSink would write.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chopper/model/table.hpp"
#include "chopper/report/sqlite_sink.hpp"

namespace chopper {

// Which shard writes a table: the one given the fewest cells so far (the first on a tie), decided
// from the calls alone, so that every shard, seeing the same calls, decides the same.
class ShardRouter {
 public:
  explicit ShardRouter(size_t shards) : cells_(shards == 0 ? 1 : shards, 0) {}
  size_t begin();  // the owner of the table that begins
  void row(size_t cells) { cells_[owner_] += cells; }
  size_t owner() const { return owner_; }

 private:
  std::vector<uint64_t> cells_;
  size_t owner_ = 0;
};

class ShardedSqlite {
 public:
  // `shards` writers (1: the database alone, as a plain SqliteSink); the other shards' databases
  // are in memory until finish().
  ShardedSqlite(std::string path, size_t shards);
  ~ShardedSqlite();
  ShardedSqlite(const ShardedSqlite&) = delete;
  ShardedSqlite& operator=(const ShardedSqlite&) = delete;

  // One sink per shard, each to be called from one thread (a ThreadedSink's) with every call of
  // the tables written: each keeps the tables given to it.
  std::vector<TableSink*> sinks();
  // After every sink had its last call: the other shards' tables copied into the database.
  void finish();
  SqliteSink& db() { return *dbs_.front(); }

 private:
  class Shard;
  std::string path_;
  std::vector<std::unique_ptr<SqliteSink>> dbs_;  // [0]: the database; [k]: shard k's, in memory
  std::vector<std::unique_ptr<Shard>> shards_;
  std::unordered_map<std::string, size_t> copy_from_;  // table → the shard that wrote it
};

}  // namespace chopper
