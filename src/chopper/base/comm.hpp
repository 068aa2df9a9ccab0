#pragma once
// The processes one command runs on: one (the default), or MPI's world when chopper was built with
// MPI (CMake option CHOPPER_MPI) and started by a launcher (mpirun, srun). Nothing here includes
// MPI's headers: comm_mpi.cpp is the only translation unit that does.
//
// Every call is made by the thread that called init_comm (MPI is initialised with
// MPI_THREAD_FUNNELED: worker threads exist but never communicate). Collectives (barrier,
// broadcast, gather, allgather, allreduce_*) must be called by every process in the same order.
// A failing MPI call throws Error naming the call and MPI's message.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace chopper {

class Comm {
 public:
  virtual ~Comm();
  virtual int rank() const = 0;  // this process, 0..size-1
  virtual int size() const = 0;
  virtual bool is_mpi() const = 0;
  virtual void barrier() = 0;
  // root's `bytes` to every process (others' contents are replaced).
  virtual void broadcast(std::string& bytes, int root) = 0;
  // every process's bytes, in process order, at `root` (empty vector elsewhere).
  virtual std::vector<std::string> gather(std::string_view mine, int root) = 0;
  // every process's bytes, in process order, at every process.
  virtual std::vector<std::string> allgather(std::string_view mine) = 0;
  // Point to point, any size; tag >= 0. Messages of one sender with one tag arrive in the order
  // sent. As MPI_Send, send may block until the receiver posts the matching recv (payloads beyond
  // MPI's eager limit), so two processes must not both send to each other first. A process may
  // send to itself: the message is queued and a later recv(rank(), tag) returns it; a recv from
  // itself with nothing queued throws (it would wait forever).
  virtual void send(int to, int tag, std::string_view bytes) = 0;
  virtual std::string recv(int from, int tag) = 0;
  // max and sum of one int64 over every process, result everywhere
  virtual int64_t allreduce_max(int64_t v) = 0;
  virtual int64_t allreduce_sum(int64_t v) = 0;
};

// The process's communicator (a single process unless init_comm found an MPI launch).
Comm& comm();
// This process alone, whatever comm() is (work one process does by itself under MPI).
Comm& self_comm();

// Called first in main(): initialises MPI (MPI_Init_thread, MPI_THREAD_FUNNELED) when chopper was
// built with MPI and launched_by_mpi() — so a plain `chopper ...` never needs an MPI runtime and
// starts as fast as without MPI. Built without MPI but launched as one of several processes, it
// says so on stderr (each process then runs the whole command alone). Returns comm(); a second
// call returns it unchanged.
Comm& init_comm(int& argc, char**& argv);

// Called before main() returns: MPI_Finalize when MPI was initialised (every process must call
// it). comm() keeps its rank and size; communicating after it throws Error.
void finalize_comm();

// Ends this process and, under MPI, every process of the job (MPI_Abort), for the error paths
// that would otherwise leave the others waiting for this one. Flushes stdout and stderr first.
// Without MPI: std::exit(code).
[[noreturn]] void abort_comm(int code);

// Whether this binary was built with MPI support.
bool comm_has_mpi();

// Whether the environment says an MPI launcher started this process: Open MPI's mpirun
// (OMPI_COMM_WORLD_SIZE), PMIx (PMIX_RANK: Open MPI, srun --mpi=pmix), PMI (PMI_SIZE, PMI_RANK:
// MPICH's hydra, srun --mpi=pmi2), or srun starting more than one task (SLURM_PROCID with
// SLURM_STEP_NUM_TASKS > 1; not SLURM_NTASKS, which a batch script run without srun also has).
// `getenv` looks a variable up (nullptr when unset).
bool launched_by_mpi(const std::function<const char*(const char*)>& getenv);
bool launched_by_mpi();  // this process's environment

// The largest piece one MPI message carries: 1 GiB (MPI counts are ints). Payloads above it go in
// several messages; gather and allgather of more than this in all leave MPI_Gatherv for one
// message per piece. Tests lower it to exercise those paths with small payloads: every process
// must set the same value, between operations.
size_t comm_chunk_bytes();
void set_comm_chunk_bytes(size_t bytes);  // >= 1

}  // namespace chopper
