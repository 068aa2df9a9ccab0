#include "chopper/report/output_dir.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "chopper/base/error.hpp"
#include "chopper/base/output_file.hpp"

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
  for (const auto& [tmp, name] : staged_) {
    if (!committed_) ::unlink(tmp.c_str());
    untrack_temp_file(tmp);
  }
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
  track_temp_file(tmp);  // removed if a signal ends the process
  staged_.emplace_back(tmp, name);
  return tmp;
}

void OutputDir::commit() {
  if (committed_) return;
  std::set<std::string> written;
  for (const auto& [tmp, name] : staged_) {
    const std::string to = (fs::path(dir_) / name).string();
    if (::access(tmp.c_str(), F_OK) != 0) continue;  // staged but never written
    // The earlier file removed first: ext4 writes a file renamed over another to disk at once
    // (its replace-by-rename safeguard), which made a rerun's commit wait on ~40 files' I/O.
    // The names are replaced one by one either way; a reader sees the old file or the new one,
    // or for a moment neither.
    ::unlink(to.c_str());
    if (std::rename(tmp.c_str(), to.c_str()) != 0)
      throw Error(fmt::format("{}: cannot rename {} to it: {}", to, tmp, std::strerror(errno)));
    untrack_temp_file(tmp);
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

std::vector<std::string> remove_stale_run_dirs(const std::string& dir, size_t runs,
                                               std::vector<std::string>& kept) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("run-", 0) != 0 || name.size() == 4 || name.size() > 12) continue;
    size_t k = 0;
    bool digits = true;
    for (size_t q = 4; q < name.size(); ++q) {
      digits &= name[q] >= '0' && name[q] <= '9';
      if (digits) k = k * 10 + static_cast<size_t>(name[q] - '0');
    }
    if (!digits || k <= runs || name[4] == '0') continue;
    std::error_code le;
    if (!fs::is_directory(fs::symlink_status(it->path(), le))) continue;
    // Its content must be analyze's: the lock file, and only what analyze writes beside it.
    bool ours = fs::is_regular_file(it->path() / OutputDir::kLockName, le);
    for (fs::directory_iterator f(it->path(), le), fend; ours && !le && f != fend;
         f.increment(le)) {
      const std::string n = f->path().filename().string();
      std::error_code se;
      const bool file = fs::is_regular_file(fs::symlink_status(f->path(), se));
      const bool csv = n.size() > 4 && n.compare(n.size() - 4, 4, ".csv") == 0;
      ours = file && (n == OutputDir::kLockName || n == "chopper.sqlite" || csv ||
                      n.rfind(OutputDir::kTempPrefix, 0) == 0);
    }
    if (!ours || le) {
      kept.push_back(it->path().string());
      continue;
    }
    fs::remove_all(it->path(), le);
    if (le)
      kept.push_back(it->path().string());
    else
      removed.push_back(it->path().string());
  }
  std::sort(removed.begin(), removed.end());
  std::sort(kept.begin(), kept.end());
  return removed;
}

}  // namespace chopper
