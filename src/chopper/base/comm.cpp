#include "chopper/base/comm.hpp"

#include <fmt/format.h>

#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "chopper/base/comm_detail.hpp"
#include "chopper/base/error.hpp"

#ifndef CHOPPER_HAVE_MPI
#define CHOPPER_HAVE_MPI 0
#endif

namespace chopper {

Comm::~Comm() = default;

namespace comm_detail {

void check_process(const char* call, const char* what, int process, int size) {
  if (process < 0 || process >= size)
    throw Error(
        fmt::format("Comm::{}: {} {} is not a process (there are {})", call, what, process, size));
}

void check_tag(const char* call, int tag) {
  if (tag < 0) throw Error(fmt::format("Comm::{}: tag {} is negative", call, tag));
}

void SelfMessages::push(int tag, std::string_view bytes) {
  by_tag_[tag].emplace_back(bytes);
}

std::string SelfMessages::pop(int tag, int rank) {
  auto it = by_tag_.find(tag);
  if (it == by_tag_.end() || it->second.empty())
    throw Error(fmt::format(
        "Comm::recv: process {} receives from itself with tag {}, but sent itself no such "
        "message (it would wait forever)",
        rank, tag));
  std::string out = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) by_tag_.erase(it);
  return out;
}

}  // namespace comm_detail

namespace {

// Rank 0 of 1: collectives return the process's own bytes.
class SingleComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  bool is_mpi() const override { return false; }
  void barrier() override {}
  void broadcast(std::string& /*bytes*/, int root) override {
    comm_detail::check_process("broadcast", "root", root, 1);
  }
  std::vector<std::string> gather(std::string_view mine, int root) override {
    comm_detail::check_process("gather", "root", root, 1);
    return {std::string(mine)};
  }
  std::vector<std::string> allgather(std::string_view mine) override { return {std::string(mine)}; }
  void send(int to, int tag, std::string_view bytes) override {
    comm_detail::check_process("send", "destination", to, 1);
    comm_detail::check_tag("send", tag);
    self_.push(tag, bytes);
  }
  std::string recv(int from, int tag) override {
    comm_detail::check_process("recv", "source", from, 1);
    comm_detail::check_tag("recv", tag);
    return self_.pop(tag, 0);
  }
  int64_t allreduce_max(int64_t v) override { return v; }
  int64_t allreduce_sum(int64_t v) override { return v; }

 private:
  comm_detail::SelfMessages self_;
};

SingleComm& single_comm() {
  static SingleComm c;
  return c;
}

bool initialised = false;
std::unique_ptr<Comm> mpi_world;  // set by init_comm under an MPI launch
size_t chunk_bytes = size_t{1} << 30;

// The integer value of a variable; `fallback` when unset or not a number.
long env_long(const std::function<const char*(const char*)>& getenv, const char* name,
              long fallback) {
  const char* v = getenv(name);
  if (v == nullptr) return fallback;
  std::string_view s(v);
  long out = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty() ? out : fallback;
}

const char* process_getenv(const char* name) {
  return std::getenv(name);
}

[[maybe_unused]] void warn_not_built_with_mpi() {
  // The launch's size and this process's rank, where the launcher says them.
  long size = -1, rank = -1;
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"})
    if (size < 0) size = env_long(process_getenv, name, -1);
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (rank < 0) rank = env_long(process_getenv, name, -1);
  if (size == 1 || rank > 0) return;  // one process: nothing differs; the others: said once
  std::fprintf(stderr,
               "chopper: started by an MPI launcher (%s processes), but this chopper was built "
               "without MPI: every process runs the whole command on its own (build with "
               "-DCHOPPER_MPI=ON)\n",
               size > 0 ? std::to_string(size).c_str() : "several");
}

}  // namespace

bool launched_by_mpi(const std::function<const char*(const char*)>& getenv) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"}) {
    const char* v = getenv(name);
    if (v != nullptr && *v != '\0') return true;
  }
  const char* procid = getenv("SLURM_PROCID");
  return procid != nullptr && *procid != '\0' && env_long(getenv, "SLURM_STEP_NUM_TASKS", 0) > 1;
}

bool launched_by_mpi() {
  return launched_by_mpi(process_getenv);
}

bool comm_has_mpi() {
  return CHOPPER_HAVE_MPI != 0;
}

Comm& comm() {
  return mpi_world ? *mpi_world : single_comm();
}

Comm& self_comm() {
  return single_comm();
}

Comm& init_comm([[maybe_unused]] int& argc, [[maybe_unused]] char**& argv) {
  if (initialised) return comm();
  initialised = true;
  if (!launched_by_mpi()) return comm();
#if CHOPPER_HAVE_MPI
  mpi_world = comm_detail::mpi_init(argc, argv);
#else
  warn_not_built_with_mpi();
#endif
  return comm();
}

void finalize_comm() {
#if CHOPPER_HAVE_MPI
  if (mpi_world) comm_detail::mpi_finalize(*mpi_world);
#endif
}

void abort_comm(int code) {
  std::fflush(nullptr);
#if CHOPPER_HAVE_MPI
  comm_detail::mpi_abort(code);
#endif
  std::exit(code);
}

size_t comm_chunk_bytes() {
  return chunk_bytes;
}

void set_comm_chunk_bytes(size_t bytes) {
  if (bytes == 0 || bytes > size_t{INT_MAX})
    throw Error(fmt::format("set_comm_chunk_bytes: {} is not in 1..{}", bytes, INT_MAX));
  chunk_bytes = bytes;
}

}  // namespace chopper
