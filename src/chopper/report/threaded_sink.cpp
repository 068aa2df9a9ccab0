#include "chopper/report/threaded_sink.hpp"

#include <utility>

namespace chopper {

void ThreadedSink::Batch::clear() {
  ops.clear();
  schemas.clear();
  cells.clear();
  text.clear();
  rows = 0;
}

ThreadedSink::ThreadedSink(TableSink& inner, size_t batch_rows)
    : inner_(inner), batch_rows_(batch_rows == 0 ? 1 : batch_rows) {
  thread_ = std::thread([this] { run(); });
}

ThreadedSink::~ThreadedSink() {
  try {
    finish();
  } catch (...) {  // NOLINT(bugprone-empty-catch): the caller did not ask for the error
  }
}

void ThreadedSink::check_error() {
  if (finished_) throw Error("ThreadedSink: call after finish()");
  // A flag, not the mutex: this runs on every row.
  if (failed_.load(std::memory_order_acquire)) finish();  // rethrows the inner sink's error
}

void ThreadedSink::begin(const TableSchema& schema) {
  check_error();
  cur_.ops.push_back({Op::kBegin, static_cast<uint32_t>(cur_.schemas.size()), 0});
  cur_.schemas.push_back(schema);
}

void ThreadedSink::row(std::span<const Cell> cells) {
  check_error();
  const auto first = static_cast<uint32_t>(cur_.cells.size());
  for (const Cell& c : cells) {
    Cell& d = cur_.cells.emplace_back(c);
    if (c.kind == Cell::kText) {
      // The offset now; the view is made when the thread takes the batch (the text may move).
      d.i = static_cast<int64_t>(cur_.text.size());
      cur_.text.append(c.s);
    }
  }
  cur_.ops.push_back({Op::kRow, first, static_cast<uint32_t>(cells.size())});
  if (++cur_.rows >= batch_rows_ ||
      cur_.cells.size() * sizeof(Cell) + cur_.text.size() >= kBatchBytes)
    submit();
}

void ThreadedSink::end() {
  check_error();
  cur_.ops.push_back({Op::kEnd, 0, 0});
  // Not handed over yet: many small tables go in one batch (a hand-over per table cost a thread
  // wake-up each, ~40 a run, which on a busy machine made a small run wait ~1 ms per table).
}

void ThreadedSink::submit() {
  if (cur_.ops.empty()) return;
  Batch next;
  {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return queue_.size() < 2 || error_; });
    if (!spare_.empty()) {
      next = std::move(spare_.back());
      spare_.pop_back();
    }
    if (!error_) queue_.push_back(std::move(cur_));
  }
  cv_.notify_all();
  cur_ = std::move(next);
  cur_.clear();
}

void ThreadedSink::finish() {
  if (finished_) return;
  bool failed = false;
  {
    std::lock_guard<std::mutex> lock(m_);
    failed = error_ != nullptr;
  }
  if (!failed) submit();  // the partly filled batch too
  {
    std::lock_guard<std::mutex> lock(m_);
    closing_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  finished_ = true;
  if (std::exception_ptr e = std::exchange(error_, nullptr)) std::rethrow_exception(e);
}

void ThreadedSink::run() {
  for (;;) {
    Batch b;
    {
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait(lock, [&] { return !queue_.empty() || closing_; });
      if (queue_.empty()) return;  // closing, and nothing left
      b = std::move(queue_.front());
      queue_.pop_front();
    }
    cv_.notify_all();  // room in the queue
    // The text cells' views, now that the batch has stopped moving (a short string moves its
    // bytes with it).
    for (Cell& c : b.cells)
      if (c.kind == Cell::kText) {
        c.s = std::string_view(b.text.data() + c.i, c.s.size());
        c.i = 0;
      }
    try {
      for (const Op& op : b.ops) {
        switch (op.kind) {
          case Op::kBegin:
            inner_.begin(b.schemas[op.first]);
            break;
          case Op::kRow:
            inner_.row(std::span<const Cell>(b.cells.data() + op.first, op.n));
            break;
          case Op::kEnd:
            inner_.end();
            break;
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(m_);
      error_ = std::current_exception();
      failed_.store(true, std::memory_order_release);
      queue_.clear();  // nothing after the error reaches the sink
    }
    b.clear();
    {
      std::lock_guard<std::mutex> lock(m_);
      spare_.push_back(std::move(b));
    }
    cv_.notify_all();  // a waiting submit() sees the room, or the error
  }
}

}  // namespace chopper
