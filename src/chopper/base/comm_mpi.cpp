// MPI's world as a Comm (comm.hpp). Compiled only when CMake's CHOPPER_MPI builds MPI in; the only
// translation unit that includes mpi.h.
//
// Every payload is a byte string of any size, while MPI counts are ints: a payload goes as pieces
// of at most comm_chunk_bytes() (1 GiB), its size sent first where the receiver cannot know it.
// gather and allgather of at most one piece in all are one MPI_Gatherv / MPI_Allgatherv; above
// that, one message per piece. chopper's messages travel on duplicates of MPI_COMM_WORLD (one for
// send/recv, one for the collectives and their pieces), so they never match another library's or
// each other's.
#define OMPI_SKIP_MPICXX 1  // the C API only: no MPI C++ bindings to link
#define MPICH_SKIP_MPICXX 1
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/base/comm.hpp"
#include "chopper/base/comm_detail.hpp"
#include "chopper/base/error.hpp"

namespace chopper::comm_detail {

namespace {

[[noreturn]] void fail(const char* call, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS || len <= 0)
    throw Error(fmt::format("{} failed: MPI error code {}", call, rc));
  throw Error(fmt::format("{} failed: {}", call, std::string_view(text, static_cast<size_t>(len))));
}

void check(int rc, const char* call) {
  if (rc != MPI_SUCCESS) fail(call, rc);
}

// Calls f(offset, length) for each piece of n bytes, length <= comm_chunk_bytes() <= INT_MAX.
template <class F>
void for_each_piece(size_t n, F&& f) {
  const size_t chunk = comm_chunk_bytes();
  for (size_t off = 0; off < n; off += chunk) f(off, static_cast<int>(std::min(chunk, n - off)));
}

// Pieces of a large gather travel on the collectives' communicator with this tag.
constexpr int kPieceTag = 1;

class MpiComm final : public Comm {
 public:
  MpiComm() {
    // Errors come back as return codes, thrown as Error, rather than ending the job.
    check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &p2p_), "MPI_Comm_dup");  // inherits MPI_ERRORS_RETURN
    check(MPI_Comm_dup(MPI_COMM_WORLD, &coll_), "MPI_Comm_dup");
  }

  void finalize() {
    if (finalized_) return;
    finalized_ = true;
    check(MPI_Comm_free(&p2p_), "MPI_Comm_free");
    check(MPI_Comm_free(&coll_), "MPI_Comm_free");
    check(MPI_Finalize(), "MPI_Finalize");
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool is_mpi() const override { return true; }

  void barrier() override {
    live("barrier");
    check(MPI_Barrier(coll_), "MPI_Barrier");
  }

  void broadcast(std::string& bytes, int root) override {
    live("broadcast");
    check_process("broadcast", "root", root, size_);
    uint64_t n = bytes.size();
    check(MPI_Bcast(&n, 1, MPI_UINT64_T, root, coll_), "MPI_Bcast");
    if (rank_ != root) {
      bytes.clear();
      bytes.resize(n);
    }
    broadcast_pieces(bytes, root);
  }

  std::vector<std::string> gather(std::string_view mine, int root) override {
    live("gather");
    check_process("gather", "root", root, size_);
    const std::vector<uint64_t> sizes = all_sizes(mine.size());
    if (total(sizes) <= comm_chunk_bytes()) {
      std::vector<int> counts, displs;
      std::string all;
      if (rank_ == root) {
        counts_displs(sizes, counts, displs);
        all.resize(total(sizes));
      }
      check(MPI_Gatherv(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                        counts.data(), displs.data(), MPI_BYTE, root, coll_),
            "MPI_Gatherv");
      return rank_ == root ? split(all, sizes) : std::vector<std::string>{};
    }
    if (rank_ != root) {
      for_each_piece(mine.size(), [&](size_t off, int len) {
        check(MPI_Send(mine.data() + off, len, MPI_BYTE, root, kPieceTag, coll_), "MPI_Send");
      });
      return {};
    }
    // Every piece's receive posted at once, straight into its string.
    std::vector<std::string> out(sizes.size());
    std::vector<MPI_Request> requests;
    for (int p = 0; p < size_; ++p) {
      auto& s = out[static_cast<size_t>(p)];
      if (p == root) {
        s.assign(mine);
        continue;
      }
      s.resize(sizes[static_cast<size_t>(p)]);
      for_each_piece(s.size(), [&](size_t off, int len) {
        requests.emplace_back();
        check(MPI_Irecv(s.data() + off, len, MPI_BYTE, p, kPieceTag, coll_, &requests.back()),
              "MPI_Irecv");
      });
    }
    check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
          "MPI_Waitall");
    return out;
  }

  std::vector<std::string> allgather(std::string_view mine) override {
    live("allgather");
    const std::vector<uint64_t> sizes = all_sizes(mine.size());
    if (total(sizes) <= comm_chunk_bytes()) {
      std::vector<int> counts, displs;
      counts_displs(sizes, counts, displs);
      std::string all(total(sizes), '\0');
      check(MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                           counts.data(), displs.data(), MPI_BYTE, coll_),
            "MPI_Allgatherv");
      return split(all, sizes);
    }
    // Each process's bytes broadcast from it, piece by piece.
    std::vector<std::string> out(sizes.size());
    for (int p = 0; p < size_; ++p) {
      auto& s = out[static_cast<size_t>(p)];
      if (p == rank_)
        s.assign(mine);
      else
        s.resize(sizes[static_cast<size_t>(p)]);
      broadcast_pieces(s, p);
    }
    return out;
  }

  void send(int to, int tag, std::string_view bytes) override {
    live("send");
    check_process("send", "destination", to, size_);
    check_tag("send", tag);
    if (to == rank_) {
      self_.push(tag, bytes);
      return;
    }
    uint64_t n = bytes.size();
    check(MPI_Send(&n, 1, MPI_UINT64_T, to, tag, p2p_), "MPI_Send");
    for_each_piece(bytes.size(), [&](size_t off, int len) {
      check(MPI_Send(bytes.data() + off, len, MPI_BYTE, to, tag, p2p_), "MPI_Send");
    });
  }

  std::string recv(int from, int tag) override {
    live("recv");
    check_process("recv", "source", from, size_);
    check_tag("recv", tag);
    if (from == rank_) return self_.pop(tag, rank_);
    uint64_t n = 0;
    check(MPI_Recv(&n, 1, MPI_UINT64_T, from, tag, p2p_, MPI_STATUS_IGNORE), "MPI_Recv");
    std::string out(n, '\0');
    // Each receive takes whatever piece comes (at most INT_MAX bytes), whatever the sender's
    // comm_chunk_bytes() was.
    for (size_t off = 0; off < out.size();) {
      const auto want = static_cast<int>(std::min<size_t>(out.size() - off, INT_MAX));
      MPI_Status status;
      check(MPI_Recv(out.data() + off, want, MPI_BYTE, from, tag, p2p_, &status), "MPI_Recv");
      int got = 0;
      check(MPI_Get_count(&status, MPI_BYTE, &got), "MPI_Get_count");
      if (got <= 0)
        throw Error(
            fmt::format("Comm::recv: an empty piece from process {} with tag {} at byte {} "
                        "of {}",
                        from, tag, off, out.size()));
      off += static_cast<size_t>(got);
    }
    return out;
  }

  int64_t allreduce_max(int64_t v) override { return allreduce(v, MPI_MAX); }
  int64_t allreduce_sum(int64_t v) override { return allreduce(v, MPI_SUM); }

 private:
  void live(const char* call) const {
    if (finalized_)
      throw Error(fmt::format("Comm::{}: MPI was finalized (finalize_comm) before it", call));
  }

  int64_t allreduce(int64_t v, MPI_Op op) {
    live("allreduce");
    int64_t out = 0;
    check(MPI_Allreduce(&v, &out, 1, MPI_INT64_T, op, coll_), "MPI_Allreduce");
    return out;
  }

  std::vector<uint64_t> all_sizes(uint64_t mine) {
    std::vector<uint64_t> sizes(static_cast<size_t>(size_));
    check(MPI_Allgather(&mine, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, coll_),
          "MPI_Allgather");
    return sizes;
  }

  static size_t total(const std::vector<uint64_t>& sizes) {
    uint64_t t = 0;
    for (uint64_t s : sizes) t += s;
    return static_cast<size_t>(t);
  }

  // For a total of at most comm_chunk_bytes(): every count and offset fits an int.
  static void counts_displs(const std::vector<uint64_t>& sizes, std::vector<int>& counts,
                            std::vector<int>& displs) {
    int at = 0;
    for (uint64_t s : sizes) {
      counts.push_back(static_cast<int>(s));
      displs.push_back(at);
      at += static_cast<int>(s);
    }
  }

  static std::vector<std::string> split(const std::string& all,
                                        const std::vector<uint64_t>& sizes) {
    std::vector<std::string> out;
    out.reserve(sizes.size());
    size_t at = 0;
    for (uint64_t s : sizes) {
      out.emplace_back(all, at, static_cast<size_t>(s));
      at += static_cast<size_t>(s);
    }
    return out;
  }

  // bytes (already of the root's size everywhere) from root, piece by piece.
  void broadcast_pieces(std::string& bytes, int root) {
    for_each_piece(bytes.size(), [&](size_t off, int len) {
      check(MPI_Bcast(bytes.data() + off, len, MPI_BYTE, root, coll_), "MPI_Bcast");
    });
  }

  int rank_ = 0, size_ = 1;
  MPI_Comm p2p_ = MPI_COMM_NULL, coll_ = MPI_COMM_NULL;
  bool finalized_ = false;
  SelfMessages self_;
};

}  // namespace

std::unique_ptr<Comm> mpi_init(int& argc, char**& argv) {
  int initialised = 0;
  check(MPI_Initialized(&initialised), "MPI_Initialized");
  if (!initialised) {
    // Only the main thread calls MPI. An MPI that provides less than asked (MPI_THREAD_SINGLE)
    // is used all the same: no MPI call is ever made from another thread.
    int provided = 0;
    check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  }
  return std::make_unique<MpiComm>();
}

void mpi_finalize(Comm& c) {
  static_cast<MpiComm&>(c).finalize();
}

void mpi_abort(int code) {
  int initialised = 0, finalized = 0;
  if (MPI_Initialized(&initialised) != MPI_SUCCESS || MPI_Finalized(&finalized) != MPI_SUCCESS)
    return;
  if (initialised && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace chopper::comm_detail
