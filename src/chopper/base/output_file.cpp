#include "chopper/base/output_file.hpp"

#include <isa-l/igzip_lib.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "chopper/base/error.hpp"

namespace chopper {

namespace {

// The tracked temporary files. A slot's path is written once, before the slot is counted in
// g_used (release), and never freed: the signal handler reads slots [0, g_used) without a lock.
constexpr size_t kMaxTracked = 4096;
struct TempSlot {
  std::atomic<const char*> path{nullptr};
  std::atomic<bool> live{false};
};
TempSlot g_slots[kMaxTracked];
std::atomic<size_t> g_used{0};
std::mutex g_track_mu;

void set_tracked(const std::string& path, bool live) {
  std::lock_guard<std::mutex> lk(g_track_mu);
  const size_t used = g_used.load(std::memory_order_relaxed);
  for (size_t i = 0; i < used; ++i)
    if (path == g_slots[i].path.load(std::memory_order_relaxed)) {
      g_slots[i].live.store(live, std::memory_order_release);
      return;
    }
  if (!live || used == kMaxTracked) return;
  char* copy = new char[path.size() + 1];  // never freed (see above)
  std::memcpy(copy, path.c_str(), path.size() + 1);
  g_slots[used].path.store(copy, std::memory_order_relaxed);
  g_slots[used].live.store(true, std::memory_order_relaxed);
  g_used.store(used + 1, std::memory_order_release);
}

extern "C" void remove_temps_and_reraise(int sig) {
  const size_t used = g_used.load(std::memory_order_acquire);
  for (size_t i = 0; i < used; ++i) {
    const char* p = g_slots[i].path.load(std::memory_order_relaxed);
    if (p != nullptr && g_slots[i].live.load(std::memory_order_acquire)) ::unlink(p);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

bool process_alive(long pid) {
  if (pid <= 0 || pid > INT32_MAX) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

}  // namespace

void track_temp_file(const std::string& path) {
  set_tracked(path, true);
}
void untrack_temp_file(const std::string& path) {
  set_tracked(path, false);
}

void install_temp_file_cleanup() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = remove_temps_and_reraise;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &sa, nullptr);
  }
  ::signal(SIGXFSZ, SIG_IGN);
}

size_t remove_stale_temp_files(const std::string& dir, const std::string& prefix) {
  namespace fs = std::filesystem;
  size_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    size_t q = prefix.size();
    long pid = 0;
    while (q < name.size() && name[q] >= '0' && name[q] <= '9' && pid < INT32_MAX)
      pid = pid * 10 + (name[q++] - '0');
    if (q == prefix.size() || (q < name.size() && name[q] != '-')) continue;  // not PREFIX<pid>
    if (pid == ::getpid() || process_alive(pid)) continue;
    std::error_code re;
    if (fs::is_regular_file(fs::symlink_status(it->path(), re)) && fs::remove(it->path(), re))
      ++removed;
  }
  return removed;
}

struct OutputFile::Deflate {
  isal_zstream s{};
  std::vector<uint8_t> level_buf = std::vector<uint8_t>(ISAL_DEF_LVL1_DEFAULT);
  std::vector<uint8_t> out = std::vector<uint8_t>(1u << 20);
};

OutputFile::OutputFile(std::string path, bool gzip) : path_(std::move(path)), gzip_(gzip) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path_, ec))
    throw Error(path_ + ": is a directory; name the file to write (-o FILE)");
  // What an earlier run that was killed left beside PATH.
  const fs::path p(path_);
  remove_stale_temp_files(p.parent_path().string(), p.filename().string() + ".tmp-");
  tmp_ = path_ + ".tmp-" + std::to_string(::getpid());
  track_temp_file(tmp_);
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (f_ == nullptr) {
    untrack_temp_file(tmp_);
    throw Error(path_ + ": cannot write: " + std::strerror(errno));
  }
  if (gzip_) {
    z_ = std::make_unique<Deflate>();
    isal_deflate_init(&z_->s);
    z_->s.gzip_flag = IGZIP_GZIP;
    z_->s.level = 1;
    z_->s.level_buf = z_->level_buf.data();
    z_->s.level_buf_size = static_cast<uint32_t>(z_->level_buf.size());
    z_->s.flush = NO_FLUSH;
  }
}

OutputFile::~OutputFile() {
  if (f_ != nullptr) {
    std::fclose(f_);
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
  }
  untrack_temp_file(tmp_);
}

void OutputFile::raw(const void* p, size_t n) {
  if (n > 0 && std::fwrite(p, 1, n, f_) != n)
    throw Error(path_ + ": write failed: " + std::strerror(errno));
  out_ += n;
}

void OutputFile::put(const uint8_t* p, size_t n, bool last) {
  if (!gzip_) {
    raw(p, n);
    return;
  }
  isal_zstream& s = z_->s;
  s.next_in = const_cast<uint8_t*>(p);
  s.avail_in = static_cast<uint32_t>(n);
  s.end_of_stream = last ? 1 : 0;
  do {
    s.next_out = z_->out.data();
    s.avail_out = static_cast<uint32_t>(z_->out.size());
    if (isal_deflate(&s) != COMP_OK) throw Error(path_ + ": gzip compression failed");
    raw(z_->out.data(), z_->out.size() - s.avail_out);
  } while (s.avail_in > 0 || (last && s.internal_state.state != ZSTATE_END));
}

void OutputFile::write(std::string_view bytes) {
  in_ += bytes.size();
  if (buf_.empty() && bytes.size() >= (4u << 20)) {  // a whole large text: no copy on the way
    put(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), false);
    return;
  }
  buf_.append(bytes);
  if (buf_.size() >= (4u << 20)) {
    put(reinterpret_cast<const uint8_t*>(buf_.data()), buf_.size(), false);
    buf_.clear();
  }
}

uint64_t OutputFile::commit() {
  put(reinterpret_cast<const uint8_t*>(buf_.data()), buf_.size(), true);
  buf_.clear();
  const bool flushed = std::fflush(f_) == 0;
  const int flush_err = errno;
  const bool closed = std::fclose(f_) == 0;
  const int err = flushed ? errno : flush_err;
  f_ = nullptr;
  if (!flushed || !closed) {
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
    throw Error(path_ + ": write failed: " + std::strerror(err));
  }
  // An earlier file removed first, as OutputDir::commit does: ext4 writes a file renamed over
  // another to disk at once (its replace-by-rename safeguard), which made a rerun of `analyze
  // --html` wait ~7 ms on its 7.4 MB page, and a timeline of hundreds of MB far longer. A reader
  // sees the old file or the new one, or for a moment neither. Only a regular file: anything
  // else is left to the rename (which names a directory in its error).
  if (struct stat st{}; ::lstat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode))
    ::unlink(path_.c_str());
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int rerr = errno;
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
    throw Error(path_ + ": cannot rename " + tmp_ + " into place: " +
                (rerr == EISDIR ? std::string("it is a directory") : std::strerror(rerr)));
  }
  untrack_temp_file(tmp_);
  return out_;
}

}  // namespace chopper
