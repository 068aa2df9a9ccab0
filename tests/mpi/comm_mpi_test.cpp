// Comm (src/chopper/base/comm.hpp) on MPI's world, run under mpirun by ctest (comm_mpi_2,
// comm_mpi_4): every operation with payloads of a different size on each process (empty ones
// among them), once with MPI messages of up to 1 GiB and once with pieces of 1000 bytes, so that
// the chunked paths run on small payloads; then argument errors and send/recv ordering.
// With --abort (ctest comm_mpi_abort): abort_comm on one process ends them all.
// With --big (ctest comm_mpi_big, 2 processes, run when CHOPPER_COMM_BIG=1; skipped, exit 77,
// otherwise): send/recv, broadcast and gather of one payload above 2^31 bytes, timed.
// Exit status 0 when every check passed on every process.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/base/comm.hpp"
#include "chopper/base/error.hpp"

namespace {

using chopper::Comm;

int failures = 0;

// CHECK(condition, what): counts and reports a failed condition, and goes on.
void check_at(bool ok, const char* what, int line) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "process %d: %s:%d: check failed: %s\n", chopper::comm().rank(), __FILE__,
               line, what);
}
#define CHECK(ok, what) check_at((ok), (what), __LINE__)

// Process p's payload: 8-byte words, word k = (k + 1) * odd constant + p, so that every position
// and every process differ (pieces out of place or from the wrong process show); made and checked
// a word at a time (2 GiB in about a second).
uint64_t word_at(int p, uint64_t k) {
  return (k + 1) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(p);
}

std::string payload(int p, size_t n) {
  std::string s(n, '\0');
  for (size_t k = 0; k * 8 < n; ++k) {
    const uint64_t w = word_at(p, k);
    std::memcpy(s.data() + k * 8, &w, std::min<size_t>(8, n - k * 8));
  }
  return s;
}

bool is_payload(const std::string& s, int p, size_t n) {
  if (s.size() != n) return false;
  for (size_t k = 0; k * 8 < n; ++k) {
    const uint64_t w = word_at(p, k);
    if (std::memcmp(s.data() + k * 8, &w, std::min<size_t>(8, n - k * 8)) != 0) return false;
  }
  return true;
}

// Each process's payload size: empty, one byte, a few KB, above 64 KiB (past MPI's eager limit).
size_t size_of(int p) {
  static constexpr size_t kSizes[] = {3000, 0, 1, 100003, 0, 777};
  return kSizes[static_cast<size_t>(p) % std::size(kSizes)];
}

template <class F>
bool throws_error(F&& f) {
  try {
    f();
  } catch (const chopper::Error&) {
    return true;
  }
  return false;
}

void check_collectives(Comm& c) {
  const int n = c.size(), me = c.rank();
  CHECK(c.is_mpi(), "is_mpi");
  CHECK(me >= 0 && me < n, "rank in 0..size-1");
  c.barrier();

  CHECK(c.allreduce_sum(1) == n, "allreduce_sum(1) == size");
  CHECK(c.allreduce_max(me) == n - 1, "allreduce_max(rank) == size - 1");
  CHECK(c.allreduce_sum(me) == int64_t{n} * (n - 1) / 2, "allreduce_sum(rank)");
  CHECK(c.allreduce_max(-(int64_t{1} << 40) - me) == -(int64_t{1} << 40), "allreduce_max < 0");
  CHECK(c.allreduce_sum((int64_t{1} << 40) * me) == (int64_t{1} << 40) * n * (n - 1) / 2,
        "allreduce_sum above 2^32");

  for (int root = 0; root < n; ++root) {
    std::string bytes = me == root ? payload(root, size_of(root)) : std::string(5000, 'x');
    c.broadcast(bytes, root);
    CHECK(is_payload(bytes, root, size_of(root)), "broadcast: root's bytes everywhere");
  }

  const std::string mine = payload(me, size_of(me));
  for (int root = 0; root < n; ++root) {
    const std::vector<std::string> got = c.gather(mine, root);
    if (me != root) {
      CHECK(got.empty(), "gather: empty at the other processes");
      continue;
    }
    CHECK(got.size() == static_cast<size_t>(n), "gather: one entry per process at the root");
    for (int p = 0; p < n && p < static_cast<int>(got.size()); ++p)
      CHECK(is_payload(got[static_cast<size_t>(p)], p, size_of(p)), "gather: process p's bytes");
  }

  const std::vector<std::string> all = c.allgather(mine);
  CHECK(all.size() == static_cast<size_t>(n), "allgather: one entry per process");
  for (int p = 0; p < n && p < static_cast<int>(all.size()); ++p)
    CHECK(is_payload(all[static_cast<size_t>(p)], p, size_of(p)), "allgather: process p's bytes");

  // Every process empty, and every process the same large size.
  for (const std::string& s : c.allgather({})) CHECK(s.empty(), "allgather of empty strings");
  const std::vector<std::string> same = c.allgather(payload(me, 4096));
  for (int p = 0; p < n && p < static_cast<int>(same.size()); ++p)
    CHECK(is_payload(same[static_cast<size_t>(p)], p, 4096), "allgather of equal sizes");
}

void check_point_to_point(Comm& c) {
  const int n = c.size(), me = c.rank();
  // A ring: process 0 sends first, every other one receives first (sends above the eager limit
  // wait for their receive).
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const std::string mine = payload(me, size_of(me));
  if (me == 0) c.send(next, 5, mine);
  const std::string got = c.recv(prev, 5);
  CHECK(is_payload(got, prev, size_of(prev)), "ring: the previous process's bytes");
  if (me != 0) c.send(next, 5, mine);

  // One sender, one tag: received in the order sent (sizes 0, 5, 200000).
  if (me == 0) {
    for (size_t s : {size_t{0}, size_t{5}, size_t{200000}}) c.send(n - 1, 7, payload(9, s));
  } else if (me == n - 1) {
    for (size_t s : {size_t{0}, size_t{5}, size_t{200000}})
      CHECK(is_payload(c.recv(0, 7), 9, s), "same tag: in the order sent");
  }
  // Small messages of two tags received in the other order.
  if (me == 0) {
    c.send(n - 1, 1, "first");
    c.send(n - 1, 2, "second");
  } else if (me == n - 1) {
    CHECK(c.recv(0, 2) == "second", "tag 2 before tag 1");
    CHECK(c.recv(0, 1) == "first", "then tag 1");
  }
  // To itself: queued, first in first out per tag.
  c.send(me, 3, "a");
  c.send(me, 3, std::string(100000, 'b'));
  c.send(me, 4, "");
  CHECK(c.recv(me, 4).empty(), "self: empty message");
  CHECK(c.recv(me, 3) == "a", "self: first");
  CHECK(c.recv(me, 3) == std::string(100000, 'b'), "self: second");
  c.barrier();
}

void check_errors(Comm& c) {
  const int n = c.size(), me = c.rank();
  std::string s;
  CHECK(throws_error([&] { c.broadcast(s, n); }), "broadcast: root out of range");
  CHECK(throws_error([&] { c.gather("x", -1); }), "gather: root out of range");
  CHECK(throws_error([&] { c.send(n, 0, "x"); }), "send: destination out of range");
  CHECK(throws_error([&] { c.send(0, -1, "x"); }), "send: negative tag");
  CHECK(throws_error([&] { (void)c.recv(-1, 0); }), "recv: source out of range");
  CHECK(throws_error([&] { (void)c.recv(me, 99); }), "recv: from itself, nothing sent");
  CHECK(throws_error([] { chopper::set_comm_chunk_bytes(0); }), "chunk of 0 bytes");
  c.barrier();
}

// The receiver's pieces need not be the sender's: recv takes whatever piece comes.
void check_mixed_chunks(Comm& c) {
  if (c.size() < 2) return;
  if (c.rank() == 0) {
    chopper::set_comm_chunk_bytes(1000);
    c.send(1, 8, payload(0, 5500));
  } else if (c.rank() == 1) {
    CHECK(is_payload(c.recv(0, 8), 0, 5500), "pieces of 1000 bytes into one recv");
  }
  chopper::set_comm_chunk_bytes(size_t{1} << 30);
  c.barrier();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One payload above 2^31 bytes (and not a multiple of the 1 GiB pieces) between processes 0
// and 1; the others take part in the collectives with nothing. Each operation is timed at the
// receiving process, from a barrier to the whole payload received (making and checking it apart).
void check_big(Comm& c) {
  const size_t big = (size_t{1} << 31) + 4099;
  const int me = c.rank();
  auto report = [&](const char* what, std::chrono::steady_clock::time_point t0) {
    std::printf("%s of %zu bytes: %.2f s\n", what, big, seconds_since(t0));
    std::fflush(stdout);
  };
  {
    std::string s = me == 0 ? payload(0, big) : std::string();
    c.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    if (me == 0) {
      c.send(1, 11, s);
    } else if (me == 1) {
      s = c.recv(0, 11);
      report("send/recv", t0);
      CHECK(is_payload(s, 0, big), "big send/recv");
    }
  }
  {
    std::string s = me == 1 ? payload(1, big) : std::string();
    c.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    c.broadcast(s, 1);
    if (me == 0) report("broadcast", t0);
    CHECK(is_payload(s, 1, big), "big broadcast");
  }
  {
    const std::string mine = me == 1 ? payload(1, big) : std::string();
    c.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<std::string> got = c.gather(mine, 0);
    if (me == 0) {
      report("gather", t0);
      CHECK(got.size() == static_cast<size_t>(c.size()), "big gather: one entry per process");
      CHECK(got.size() > 1 && is_payload(got[1], 1, big), "big gather: process 1's bytes");
      CHECK(!got.empty() && got[0].empty(), "big gather: process 0's empty bytes");
    }
  }
  c.barrier();
}

}  // namespace

int main(int argc, char** argv) {
  Comm& c = chopper::init_comm(argc, argv);
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (mode == "--abort") {
    // abort_comm ends every process (ctest comm_mpi_abort: exit status 3, no hang): the last
    // process aborts while the others wait for a message it never sends.
    if (c.rank() == c.size() - 1) chopper::abort_comm(3);
    (void)c.recv(c.size() - 1, 0);
    return 0;
  }
  const bool big = mode == "--big";
  if (big) {
    const char* on = std::getenv("CHOPPER_COMM_BIG");
    if (on == nullptr || std::string_view(on) != "1" || c.size() < 2) {
      if (c.rank() == 0)
        std::printf("comm_mpi_test --big: skipped (set CHOPPER_COMM_BIG=1; 2 processes)\n");
      chopper::finalize_comm();
      return 77;
    }
  }
  try {
    if (big) {
      check_big(c);
    } else {
      check_collectives(c);
      check_point_to_point(c);
      check_errors(c);
      check_mixed_chunks(c);
      // Again with pieces of 1000 bytes: the payloads above take several messages, and gather
      // and allgather of more than 1000 bytes in all go piece by piece.
      chopper::set_comm_chunk_bytes(1000);
      check_collectives(c);
      check_point_to_point(c);
      chopper::set_comm_chunk_bytes(size_t{1} << 30);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "process %d: %s\n", c.rank(), e.what());
    chopper::abort_comm(1);
  }
  const int64_t all_failures = c.allreduce_sum(failures);
  if (c.rank() == 0)
    std::printf("comm_mpi_test%s on %d processes: %lld CHECK(s) failed\n", big ? " --big" : "",
                c.size(), static_cast<long long>(all_failures));
  chopper::finalize_comm();
  return all_failures == 0 ? 0 : 1;
}
