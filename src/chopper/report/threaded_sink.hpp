#pragma once
// A TableSink run on a thread of its own, so that writing one output format overlaps with the
// caller writing another (chopper analyze writes every table to SQLite and to CSV: the CSV files
// are written on this thread while the caller fills the database).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chopper/model/table.hpp"

namespace chopper {

// Calls are copied (text included) into batches of rows (batch_rows, and at most kBatchBytes of
// cells and text) that the thread hands to `inner` in the order they were made; at most two
// batches wait, so memory stays bounded however fast the caller is and however wide the rows. An
// exception thrown by `inner` ends its work and is rethrown to the caller: by the next
// begin/row/end, or at the latest by finish(). The inner sink must outlive this one.
class ThreadedSink : public TableSink {
 public:
  explicit ThreadedSink(TableSink& inner, size_t batch_rows = 4096);
  // A batch is handed over when it holds this much (4,096 rows of gpu_activities with their
  // kernel names took 4 MiB a batch, 25 MiB with the batches in flight and spare).
  static constexpr size_t kBatchBytes = 512 << 10;
  ~ThreadedSink() override;  // waits for the thread; an error not yet seen is dropped
  ThreadedSink(const ThreadedSink&) = delete;
  ThreadedSink& operator=(const ThreadedSink&) = delete;

  void begin(const TableSchema& schema) override;
  void row(std::span<const Cell> cells) override;
  void end() override;
  // Waits until `inner` has received every call; rethrows its error if it threw. Calls after it
  // throw chopper::Error.
  void finish();

 private:
  struct Op {
    enum Kind : uint8_t { kBegin, kRow, kEnd } kind;
    uint32_t first = 0, n = 0;  // kRow: cells [first, first + n); kBegin: the schema's index
  };
  struct Batch {
    std::vector<Op> ops;
    std::vector<TableSchema> schemas;
    std::vector<Cell> cells;  // text cells: i = offset into `text`, until the thread takes it
    std::string text;
    size_t rows = 0;
    void clear();
  };
  void check_error();
  void submit();  // queues the current batch (waits while two are queued)
  void run();     // the thread

  TableSink& inner_;
  const size_t batch_rows_;
  Batch cur_;
  bool finished_ = false;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;
  std::vector<Batch> spare_;  // emptied batches, reused for their capacity
  bool closing_ = false;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};  // error_ is set
  std::thread thread_;
};

}  // namespace chopper
