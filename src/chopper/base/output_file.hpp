#pragma once
// A file written whole or not at all: bytes go to PATH.tmp-PID (gzip-compressed through ISA-L
// when asked) and are renamed to PATH by commit(); destroyed without commit(), the temporary file
// is removed and PATH is untouched.
//
// Temporary files are removed on every way out: by their owner's destructor (an error), by the
// signal handlers below (SIGINT, SIGTERM, SIGHUP, SIGPIPE), and, for a process killed outright
// (SIGKILL, a crash), by the next start: each temporary name carries its process id, and a start
// removes those of processes no longer alive.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace chopper {

// Temporary files removed if the process is ended by a signal (install_temp_file_cleanup). A
// path is recorded once and kept (the handler reads the records without a lock); at most 4,096
// distinct paths per process are recorded, later ones are left to the next start's cleanup.
void track_temp_file(const std::string& path);
void untrack_temp_file(const std::string& path);
// Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGPIPE (those not ignored) that unlink every
// tracked temporary file (async-signal-safe: unlink(2) of recorded paths), then end the process by
// the same signal. Also ignores SIGXFSZ, so that a file-size limit (ulimit -f) is a write error
// naming the file (EFBIG), not a silent end with a core dump. Call once, from main.
void install_temp_file_cleanup();
// Removes the files of `dir` named PREFIX<pid>[SUFFIX...] whose <pid> is not this process's and
// not a live process (kill(pid, 0) fails with ESRCH): what a killed run left. Returns how many.
size_t remove_stale_temp_files(const std::string& dir, const std::string& prefix);

class OutputFile {
 public:
  // Throws Error naming the path when it cannot be created (and when it is a directory).
  OutputFile(std::string path, bool gzip);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Buffered; throws Error naming the path on a write error (a full disk).
  void write(std::string_view bytes);
  // Finishes the stream, flushes, closes and renames into place. Returns the bytes written to
  // the file (compressed size with gzip).
  uint64_t commit();
  uint64_t bytes_in() const { return in_; }

 private:
  void put(const uint8_t* p, size_t n, bool last);
  void raw(const void* p, size_t n);
  std::string path_, tmp_;
  FILE* f_ = nullptr;
  bool gzip_;
  struct Deflate;
  std::unique_ptr<Deflate> z_;
  std::string buf_;
  uint64_t in_ = 0, out_ = 0;
};

}  // namespace chopper
