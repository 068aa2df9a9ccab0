#pragma once
// TableSinks run on threads of their own, so that writing the output formats overlaps with the
// caller making the rows (chopper analyze writes every table to SQLite and to CSV: each on its
// own thread, from one copy of the rows).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chopper/model/table.hpp"

namespace chopper {

// Calls are copied (text included) into batches of rows (batch_rows, and at most kBatchBytes of
// cells and text) that a thread per inner sink hands to it in the order they were made; every
// inner sink gets the same batches (the rows are copied once however many sinks there are), and
// at most two batches wait for each, so memory stays bounded however fast the caller is and
// however wide the rows. An exception thrown by an inner sink ends the work of every one and is
// rethrown to the caller: by the next begin/row/end, or at the latest by finish(). The inner
// sinks must outlive this one.
class ThreadedSink : public TableSink {
 public:
  explicit ThreadedSink(TableSink& inner, size_t batch_rows = 4096);
  explicit ThreadedSink(std::vector<TableSink*> inners, size_t batch_rows = 4096);
  // A batch is handed over when it holds this much (4,096 rows of gpu_activities with their
  // kernel names took 4 MiB a batch, 25 MiB with the batches in flight and spare).
  static constexpr size_t kBatchBytes = 512 << 10;
  ~ThreadedSink() override;  // waits for the threads; an error not yet seen is dropped
  ThreadedSink(const ThreadedSink&) = delete;
  ThreadedSink& operator=(const ThreadedSink&) = delete;

  void begin(const TableSchema& schema) override;
  void row(std::span<const Cell> cells) override;
  void end() override;
  // Hands the calls made so far to the threads without waiting for them (the last batch is
  // otherwise held until it fills or finish()).
  void flush();
  // Waits until every inner sink has received every call; rethrows the first error one threw.
  // Calls after it throw chopper::Error.
  void finish();

 private:
  struct Op {
    enum Kind : uint8_t { kBegin, kRow, kEnd } kind;
    uint32_t first = 0, n = 0;  // kRow: cells [first, first + n); kBegin: the schema's index
  };
  struct Batch {
    std::vector<Op> ops;
    std::vector<TableSchema> schemas;
    std::vector<Cell> cells;  // text cells: i = offset into `text` until the batch is handed over
    std::string text;
    size_t rows = 0;
    size_t readers = 0;  // inner sinks yet to take it (under m_)
    void clear();
  };
  using BatchPtr = std::shared_ptr<Batch>;
  void check_error();
  void submit();          // queues the current batch for every inner sink (waits for room)
  void run(size_t sink);  // the thread of inners_[sink]
  void deliver(const Batch& b, TableSink& sink);

  std::vector<TableSink*> inners_;
  const size_t batch_rows_;
  BatchPtr cur_;
  bool finished_ = false;
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<std::deque<BatchPtr>> queues_;  // per inner sink
  std::vector<BatchPtr> spare_;               // batches every sink is done with, for reuse
  bool closing_ = false;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};  // error_ is set
  std::vector<std::thread> threads_;
};

}  // namespace chopper
