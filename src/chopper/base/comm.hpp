#pragma once
// PROVISIONAL single-process communicator (replaced by the MPI-capable one).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chopper {

class Comm {
 public:
  virtual ~Comm();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual bool is_mpi() const = 0;
  virtual void barrier() = 0;
  virtual void broadcast(std::string& bytes, int root) = 0;
  virtual std::vector<std::string> gather(std::string_view mine, int root) = 0;
  virtual std::vector<std::string> allgather(std::string_view mine) = 0;
  virtual void send(int to, int tag, std::string_view bytes) = 0;
  virtual std::string recv(int from, int tag) = 0;
  virtual int64_t allreduce_max(int64_t v) = 0;
  virtual int64_t allreduce_sum(int64_t v) = 0;
};
Comm& comm();
Comm& init_comm(int& argc, char**& argv);
void finalize_comm();
[[noreturn]] void abort_comm(int code);
bool comm_has_mpi();

}  // namespace chopper
