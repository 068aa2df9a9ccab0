#include "chopper/report/sqlite_shards.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "chopper/base/error.hpp"

namespace chopper {

size_t ShardRouter::begin() {
  owner_ = 0;
  for (size_t k = 1; k < cells_.size(); ++k)
    if (cells_[k] < cells_[owner_]) owner_ = k;
  return owner_;
}

// Shard 0 begins and ends every table in the database (its schema and documentation, in the
// order written) and writes the rows of its own; shard k > 0 writes only its own tables, whole,
// into its database in memory, and shard 0 notes which tables to copy from it.
class ShardedSqlite::Shard : public TableSink {
 public:
  Shard(size_t index, size_t shards, SqliteSink& out, std::unordered_map<std::string, size_t>* from)
      : index_(index), router_(shards), out_(out), from_(from) {}

  void begin(const TableSchema& schema) override {
    own_ = router_.begin() == index_;
    if (index_ == 0) {
      if (own_)
        from_->erase(schema.name);  // written here last: nothing to copy
      else
        (*from_)[schema.name] = router_.owner();
    }
    if (own_ || index_ == 0) out_.begin(schema);
  }
  void row(std::span<const Cell> cells) override {
    router_.row(cells.size());
    if (own_) out_.row(cells);
  }
  void end() override {
    if (own_ || index_ == 0) out_.end();
  }

 private:
  size_t index_;
  ShardRouter router_;
  SqliteSink& out_;
  std::unordered_map<std::string, size_t>* from_;  // shard 0's: table → the shard writing it
  bool own_ = false;
};

ShardedSqlite::ShardedSqlite(std::string path, size_t shards) : path_(std::move(path)) {
  if (shards == 0) shards = 1;
  try {
    dbs_.push_back(std::make_unique<SqliteSink>(path_));
    // In memory: copied from there without a file's writes and reads. Named for this object, so
    // that two in one process (tests) do not share one.
    for (size_t k = 1; k < shards; ++k)
      dbs_.push_back(std::make_unique<SqliteSink>(
          fmt::format("chopper-shard-{}-{}-{}", static_cast<long>(getpid()),
                      reinterpret_cast<uintptr_t>(this), k),
          SqliteSink::InMemory{}));
  } catch (...) {
    dbs_.clear();
    throw;
  }
  for (size_t k = 0; k < shards; ++k)
    shards_.push_back(std::make_unique<Shard>(k, shards, *dbs_[k], &copy_from_));
}

ShardedSqlite::~ShardedSqlite() = default;

std::vector<TableSink*> ShardedSqlite::sinks() {
  std::vector<TableSink*> out;
  for (const std::unique_ptr<Shard>& s : shards_) out.push_back(s.get());
  return out;
}

void ShardedSqlite::finish() {
  if (dbs_.size() <= 1) return;
  std::vector<std::vector<std::string>> tables(dbs_.size());
  for (const auto& [name, k] : copy_from_) tables[k].push_back(name);
  for (size_t k = 1; k < dbs_.size(); ++k) {
    std::sort(tables[k].begin(), tables[k].end());  // the same work whatever the map's order
    dbs_.front()->copy_tables(dbs_[k]->path(), tables[k]);
  }
  dbs_.resize(1);  // the shards' databases gone
  copy_from_.clear();
}

}  // namespace chopper
