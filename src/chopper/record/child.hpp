#pragma once
// chopper record's child: CMD started on the PATH, the signals chopper record receives forwarded
// to it, and its exit status as a shell reports it.
#include <sys/types.h>

#include <string>
#include <vector>

namespace chopper::record {

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  // Installs the forwarding handlers (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2; a signal
  // ignored when chopper started stays ignored, for CMD too) and the SIGCHLD handler, then starts
  // argv (argv[0] searched on PATH when it has no '/') with the current environment. Returns 0,
  // or the errno of the failed start (ENOENT: not found), with nothing left running.
  int spawn(const std::vector<std::string>& argv);
  pid_t pid() const { return pid_; }
  // Whether CMD has ended (reaped: status() is then its status). Never blocks; cheap when no
  // SIGCHLD arrived since the last call.
  bool poll();
  // Blocks until CMD ends; returns status().
  int wait();
  // CMD's status as a shell gives it: the exit code, or 128 + the signal that killed it.
  int status() const { return status_; }

 private:
  void restore_handlers();
  pid_t pid_ = -1;
  int status_ = -1;
  bool handlers_ = false;
};

}  // namespace chopper::record
