#include "chopper/report/output_dir.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "chopper/base/error.hpp"

namespace chopper {

namespace fs = std::filesystem;

OutputDir::OutputDir(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  if (dir_.empty()) throw Error("output directory: empty name");
  if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec))
    throw Error(fmt::format("{}: not a directory", dir_));
  fs::create_directories(dir_, ec);
  if (ec) throw Error(fmt::format("{}: cannot create directory: {}", dir_, ec.message()));
  const std::string lock = (fs::path(dir_) / kLockName).string();
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (lock_fd_ < 0)
    throw Error(fmt::format("{}: cannot create the lock file: {}", lock, std::strerror(errno)));
  int rc;
  do {
    rc = ::flock(lock_fd_, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (err == EWOULDBLOCK)
      throw Error(fmt::format(
          "{}: another chopper analyze is writing to this directory (it holds {}); wait for it "
          "or choose another -o",
          dir_, lock));
    throw Error(fmt::format("{}: cannot lock: {}", lock, std::strerror(err)));
  }
  // What an interrupted run left: under the lock, no one is writing these.
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(kTempPrefix, 0) != 0) continue;
    std::error_code re;
    fs::remove(it->path(), re);
  }
}

OutputDir::~OutputDir() {
  if (!committed_)
    for (const auto& [tmp, name] : staged_) ::unlink(tmp.c_str());
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

std::string OutputDir::stage(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw Error(fmt::format("{}: '{}' is not a file name", dir_, name));
  for (const auto& [tmp, n] : staged_)
    if (n == name) return tmp;
  const std::string tmp =
      (fs::path(dir_) / fmt::format("{}{}-{}", kTempPrefix, ::getpid(), name)).string();
  ::unlink(tmp.c_str());
  staged_.emplace_back(tmp, name);
  return tmp;
}

void OutputDir::commit() {
  if (committed_) return;
  std::set<std::string> written;
  for (const auto& [tmp, name] : staged_) {
    const std::string to = (fs::path(dir_) / name).string();
    if (::access(tmp.c_str(), F_OK) != 0) continue;  // staged but never written
    if (std::rename(tmp.c_str(), to.c_str()) != 0)
      throw Error(fmt::format("{}: cannot rename {} to it: {}", to, tmp, std::strerror(errno)));
    written.insert(name);
  }
  committed_ = true;
  for (const std::string& table : recorder_.names) {
    const std::string name = table + ".csv";
    if (written.count(name) != 0 || table.find('/') != std::string::npos) continue;
    const fs::path p = fs::path(dir_) / name;
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(p, ec))) continue;
    fs::remove(p, ec);
    if (ec)
      throw Error(
          fmt::format("{}: cannot remove (a CSV of an earlier run): {}", p.string(), ec.message()));
  }
}

}  // namespace chopper
