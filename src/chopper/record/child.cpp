#include "chopper/record/child.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

extern char** environ;

namespace chopper::record {

namespace {

// The signals passed on to CMD. Those a terminal sends (Ctrl-C: SIGINT, SIGQUIT; hang-up: SIGHUP)
// reach the whole foreground process group, CMD included, with si_code SI_KERNEL: they are not sent
// a second time. A signal sent by a process (kill, timeout, a batch system) is forwarded.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_sigchld = 1;  // 1: poll() looks at least once
struct sigaction g_old[sizeof(kForwarded) / sizeof(int)];
struct sigaction g_old_chld;
bool g_installed[sizeof(kForwarded) / sizeof(int)] = {};

void forward(int sig, siginfo_t* info, void*) {
  const int saved = errno;
  const pid_t child = g_child;
  if (child > 0 && (info == nullptr || info->si_code != SI_KERNEL)) ::kill(child, sig);
  errno = saved;
}

void on_sigchld(int) {
  g_sigchld = 1;
}

int shell_status(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return 1;
}

}  // namespace

ChildProcess::~ChildProcess() {
  restore_handlers();
}

void ChildProcess::restore_handlers() {
  if (!handlers_) return;
  for (size_t i = 0; i < sizeof(kForwarded) / sizeof(int); ++i)
    if (g_installed[i]) ::sigaction(kForwarded[i], &g_old[i], nullptr);
  ::sigaction(SIGCHLD, &g_old_chld, nullptr);
  g_child = 0;
  handlers_ = false;
}

int ChildProcess::spawn(const std::vector<std::string>& argv) {
  sigset_t block, old_mask;
  sigemptyset(&block);
  for (int sig : kForwarded) sigaddset(&block, sig);
  sigaddset(&block, SIGCHLD);
  // Blocked from before the start until the pid is known: a signal arriving meanwhile waits and
  // is then forwarded.
  ::sigprocmask(SIG_BLOCK, &block, &old_mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (size_t i = 0; i < sizeof(kForwarded) / sizeof(int); ++i) {
    struct sigaction cur {};
    ::sigaction(kForwarded[i], nullptr, &cur);
    g_old[i] = cur;
    g_installed[i] = false;
    if (cur.sa_handler == SIG_IGN) continue;  // ignored by whoever started chopper: stays so
    struct sigaction sa {};
    sa.sa_sigaction = forward;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    ::sigaction(kForwarded[i], &sa, nullptr);
    g_installed[i] = true;
    sigaddset(&defaults, kForwarded[i]);
  }
  struct sigaction chld {};
  chld.sa_handler = on_sigchld;
  sigemptyset(&chld.sa_mask);
  chld.sa_flags = SA_NOCLDSTOP;  // no SA_RESTART: a sleep ends when CMD does
  ::sigaction(SIGCHLD, &chld, &g_old_chld);
  handlers_ = true;
  sigaddset(&defaults, SIGCHLD);
  // SIGPIPE: chopper's own handler (base/output_file.hpp) is not CMD's.
  struct sigaction pipe {};
  ::sigaction(SIGPIPE, nullptr, &pipe);
  if (pipe.sa_handler != SIG_IGN) sigaddset(&defaults, SIGPIPE);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &old_mask);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int err = ::posix_spawnp(&pid, args[0], nullptr, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (err == 0) {
    pid_ = pid;
    g_child = pid;
    g_sigchld = 1;
  }
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  if (err != 0) restore_handlers();
  return err;
}

bool ChildProcess::poll() {
  if (status_ >= 0) return true;
  if (pid_ <= 0 || !g_sigchld) return false;
  g_sigchld = 0;
  int ws = 0;
  pid_t r;
  do r = ::waitpid(pid_, &ws, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r != pid_) return false;
  status_ = shell_status(ws);
  restore_handlers();
  return true;
}

int ChildProcess::wait() {
  while (status_ < 0 && pid_ > 0) {
    int ws = 0;
    const pid_t r = ::waitpid(pid_, &ws, 0);
    if (r == pid_) {
      status_ = shell_status(ws);
      restore_handlers();
    } else if (r < 0 && errno != EINTR) {
      status_ = 1;
      restore_handlers();
    }
  }
  return status_;
}

}  // namespace chopper::record
