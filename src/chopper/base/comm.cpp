#include "chopper/base/comm.hpp"

#include <cstdlib>

#include "chopper/base/error.hpp"

namespace chopper {
namespace {
class Single : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  bool is_mpi() const override { return false; }
  void barrier() override {}
  void broadcast(std::string&, int) override {}
  std::vector<std::string> gather(std::string_view mine, int) override {
    return {std::string(mine)};
  }
  std::vector<std::string> allgather(std::string_view mine) override { return {std::string(mine)}; }
  void send(int, int, std::string_view) override { throw Error("send: one process"); }
  std::string recv(int, int) override { throw Error("recv: one process"); }
  int64_t allreduce_max(int64_t v) override { return v; }
  int64_t allreduce_sum(int64_t v) override { return v; }
};
}  // namespace
Comm::~Comm() = default;
Comm& comm() {
  static Single s;
  return s;
}
Comm& init_comm(int&, char**&) {
  return comm();
}
void finalize_comm() {}
void abort_comm(int code) {
  std::exit(code);
}
bool comm_has_mpi() {
  return false;
}
}  // namespace chopper
