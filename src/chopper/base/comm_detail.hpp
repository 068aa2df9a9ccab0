#pragma once
// Shared by comm.cpp and comm_mpi.cpp (no MPI header here): argument checks, messages a process
// sends to itself, and the MPI side's entry points.
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "chopper/base/comm.hpp"

namespace chopper::comm_detail {

// Throw Error naming `call` unless 0 <= process < size, or tag >= 0.
void check_process(const char* call, const char* what, int process, int size);
void check_tag(const char* call, int tag);

// Messages a process sent to itself, by tag, first in first out.
class SelfMessages {
 public:
  void push(int tag, std::string_view bytes);
  std::string pop(int tag, int rank);  // throws Error when none is queued

 private:
  std::map<int, std::deque<std::string>> by_tag_;
};

// comm_mpi.cpp (compiled with CHOPPER_HAVE_MPI): MPI initialised, its world as a Comm.
std::unique_ptr<Comm> mpi_init(int& argc, char**& argv);
// MPI_Finalize (c is what mpi_init returned; it throws on communication afterwards).
void mpi_finalize(Comm& c);
// MPI_Abort of the world when MPI is initialised and not finalized; returns otherwise.
void mpi_abort(int code);

}  // namespace chopper::comm_detail
