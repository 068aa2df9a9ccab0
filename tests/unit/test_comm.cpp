// Comm (base/comm.hpp) in one process: what every command runs on unless an MPI launcher started
// it; and how a launch is recognised from the environment. Under MPI: tests/mpi/comm_mpi_test.cpp.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "chopper/base/comm.hpp"
#include "chopper/base/error.hpp"

using chopper::Comm;
using chopper::Error;

namespace {

// An environment made of the given variables only.
bool launched(const std::map<std::string, std::string>& env) {
  return chopper::launched_by_mpi([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST(Comm, SingleProcessByDefault) {
  Comm& c = chopper::comm();
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  EXPECT_FALSE(c.is_mpi());
  c.barrier();
  EXPECT_EQ(c.allreduce_max(-7), -7);
  EXPECT_EQ(c.allreduce_sum(int64_t{1} << 40), int64_t{1} << 40);
}

TEST(Comm, InitWithoutLauncherIsSingleProcess) {
  // ctest starts this test without mpirun: init_comm leaves MPI alone, whatever the build.
  ASSERT_FALSE(chopper::launched_by_mpi());
  int argc = 1;
  char name[] = "chopper_tests";
  char* args[] = {name, nullptr};
  char** argv = args;
  Comm& c = chopper::init_comm(argc, argv);
  EXPECT_EQ(&c, &chopper::comm());
  EXPECT_FALSE(c.is_mpi());
  EXPECT_EQ(c.size(), 1);
  EXPECT_EQ(argc, 1);
  EXPECT_EQ(&chopper::init_comm(argc, argv), &c);  // a second call changes nothing
  chopper::finalize_comm();
  EXPECT_EQ(chopper::comm().size(), 1);
}

TEST(Comm, CollectivesReturnOwnBytes) {
  Comm& c = chopper::comm();
  std::string bytes("a\0b", 3);
  c.broadcast(bytes, 0);
  EXPECT_EQ(bytes, std::string("a\0b", 3));
  EXPECT_EQ(c.gather("xyz", 0), std::vector<std::string>{"xyz"});
  EXPECT_EQ(c.gather("", 0), std::vector<std::string>{""});
  EXPECT_EQ(c.allgather("q"), std::vector<std::string>{"q"});
  EXPECT_EQ(c.allgather(""), std::vector<std::string>{""});
}

TEST(Comm, SendToItselfQueuesByTag) {
  Comm& c = chopper::comm();
  c.send(0, 1, "first");
  c.send(0, 2, "other tag");
  c.send(0, 1, "");
  c.send(0, 1, std::string(1 << 20, 'z'));
  EXPECT_EQ(c.recv(0, 1), "first");
  EXPECT_EQ(c.recv(0, 1), "");
  EXPECT_EQ(c.recv(0, 2), "other tag");
  EXPECT_EQ(c.recv(0, 1), std::string(1 << 20, 'z'));
  // Nothing queued: an error rather than waiting forever.
  EXPECT_THROW((void)c.recv(0, 1), Error);
}

TEST(Comm, BadArgumentsAreErrors) {
  Comm& c = chopper::comm();
  std::string s = "kept";
  EXPECT_THROW(c.broadcast(s, 1), Error);
  EXPECT_EQ(s, "kept");
  EXPECT_THROW(c.gather("x", -1), Error);
  EXPECT_THROW(c.send(1, 0, "x"), Error);
  EXPECT_THROW(c.send(0, -1, "x"), Error);
  EXPECT_THROW((void)c.recv(1, 0), Error);
  EXPECT_THROW((void)c.recv(0, -1), Error);
  try {
    c.send(3, 0, "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "Comm::send: destination 3 is not a process (there are 1)");
  }
}

TEST(Comm, ChunkBytes) {
  const size_t before = chopper::comm_chunk_bytes();
  EXPECT_EQ(before, size_t{1} << 30);
  EXPECT_THROW(chopper::set_comm_chunk_bytes(0), Error);
  EXPECT_THROW(chopper::set_comm_chunk_bytes(size_t{1} << 31), Error);
  chopper::set_comm_chunk_bytes(1000);
  EXPECT_EQ(chopper::comm_chunk_bytes(), 1000u);
  chopper::set_comm_chunk_bytes(before);
}

TEST(Comm, HasMpiAsBuilt) {
  EXPECT_EQ(chopper::comm_has_mpi(), CHOPPER_TEST_HAVE_MPI != 0);
}

TEST(Comm, LaunchFromEnvironment) {
  EXPECT_FALSE(launched({}));
  EXPECT_FALSE(launched({{"PATH", "/usr/bin"}, {"OMPI_MCA_btl", "self,vader"}}));
  EXPECT_TRUE(launched({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"}}));
  EXPECT_TRUE(launched({{"OMPI_COMM_WORLD_SIZE", "1"}}));  // mpirun -n 1 is MPI too
  EXPECT_TRUE(launched({{"PMIX_RANK", "0"}}));
  EXPECT_TRUE(launched({{"PMI_SIZE", "8"}, {"PMI_RANK", "3"}}));
  EXPECT_TRUE(launched({{"PMI_RANK", "0"}}));
  EXPECT_FALSE(launched({{"OMPI_COMM_WORLD_SIZE", ""}}));  // set but empty
  // srun with several tasks; not the batch script itself (SLURM_NTASKS and SLURM_PROCID=0 there,
  // no step task count), nor srun of one task.
  EXPECT_TRUE(launched({{"SLURM_PROCID", "1"}, {"SLURM_STEP_NUM_TASKS", "4"}}));
  EXPECT_FALSE(launched({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}}));
  EXPECT_FALSE(launched({{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}}));
  EXPECT_FALSE(launched({{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "x"}}));
  EXPECT_FALSE(launched({{"SLURM_STEP_NUM_TASKS", "4"}}));
}
