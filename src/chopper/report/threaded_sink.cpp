#include "chopper/report/threaded_sink.hpp"

#include <algorithm>
#include <utility>

namespace chopper {

void ThreadedSink::Batch::clear() {
  ops.clear();
  schemas.clear();
  cells.clear();
  text.clear();
  rows = 0;
  readers = 0;
}

ThreadedSink::ThreadedSink(TableSink& inner, size_t batch_rows)
    : ThreadedSink(std::vector<TableSink*>{&inner}, batch_rows) {}

ThreadedSink::ThreadedSink(std::vector<TableSink*> inners, size_t batch_rows)
    : inners_(std::move(inners)),
      batch_rows_(batch_rows == 0 ? 1 : batch_rows),
      cur_(std::make_shared<Batch>()),
      queues_(inners_.size()) {
  for (size_t k = 0; k < inners_.size(); ++k) threads_.emplace_back([this, k] { run(k); });
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
  cur_->ops.push_back({Op::kBegin, static_cast<uint32_t>(cur_->schemas.size()), 0});
  cur_->schemas.push_back(schema);
}

void ThreadedSink::row(std::span<const Cell> cells) {
  check_error();
  Batch& b = *cur_;
  const auto first = static_cast<uint32_t>(b.cells.size());
  for (const Cell& c : cells) {
    Cell& d = b.cells.emplace_back(c);
    if (c.kind == Cell::kText) {
      // The offset now; the view is made when the batch is handed over (the text may move).
      d.i = static_cast<int64_t>(b.text.size());
      b.text.append(c.s);
    }
  }
  b.ops.push_back({Op::kRow, first, static_cast<uint32_t>(cells.size())});
  if (++b.rows >= batch_rows_ || b.cells.size() * sizeof(Cell) + b.text.size() >= kBatchBytes)
    submit();
}

void ThreadedSink::end() {
  check_error();
  cur_->ops.push_back({Op::kEnd, 0, 0});
  // Not handed over yet: many small tables go in one batch (a hand-over per table cost a thread
  // wake-up each, ~40 a run, which on a busy machine made a small run wait ~1 ms per table).
}

void ThreadedSink::submit() {
  if (cur_->ops.empty()) return;
  // The text cells' views, now that the batch stops moving (a short string moves its bytes with
  // it); from here on the batch is only read.
  for (Cell& c : cur_->cells)
    if (c.kind == Cell::kText) {
      c.s = std::string_view(cur_->text.data() + c.i, c.s.size());
      c.i = 0;
    }
  BatchPtr next;
  {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] {
      return error_ || std::all_of(queues_.begin(), queues_.end(),
                                   [](const std::deque<BatchPtr>& q) { return q.size() < 2; });
    });
    if (!spare_.empty()) {
      next = std::move(spare_.back());
      spare_.pop_back();
    }
    if (!error_) {
      cur_->readers = queues_.size();
      for (std::deque<BatchPtr>& q : queues_) q.push_back(cur_);
    }
  }
  cv_.notify_all();
  cur_ = next != nullptr ? std::move(next) : std::make_shared<Batch>();
  cur_->clear();
}

void ThreadedSink::flush() {
  check_error();
  submit();
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
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  finished_ = true;
  if (std::exception_ptr e = std::exchange(error_, nullptr)) std::rethrow_exception(e);
}

void ThreadedSink::deliver(const Batch& b, TableSink& sink) {
  for (const Op& op : b.ops) {
    switch (op.kind) {
      case Op::kBegin:
        sink.begin(b.schemas[op.first]);
        break;
      case Op::kRow:
        sink.row(std::span<const Cell>(b.cells.data() + op.first, op.n));
        break;
      case Op::kEnd:
        sink.end();
        break;
    }
  }
}

void ThreadedSink::run(size_t sink) {
  std::deque<BatchPtr>& queue = queues_[sink];
  for (;;) {
    BatchPtr b;
    {
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait(lock, [&] { return !queue.empty() || closing_; });
      if (queue.empty()) return;  // closing, and nothing left
      b = std::move(queue.front());
      queue.pop_front();
    }
    cv_.notify_all();  // room in the queue
    try {
      deliver(*b, *inners_[sink]);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_release);
      for (std::deque<BatchPtr>& q : queues_) q.clear();  // nothing after the error is written
    }
    {
      std::lock_guard<std::mutex> lock(m_);
      if (--b->readers == 0) spare_.push_back(std::move(b));  // every sink is done with it
    }
    cv_.notify_all();  // a waiting submit() sees the room, or the error
  }
}

}  // namespace chopper
