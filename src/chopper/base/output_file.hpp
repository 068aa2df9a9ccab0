#pragma once
// A file written whole or not at all: bytes go to PATH.tmp-PID (gzip-compressed through ISA-L
// when asked) and are renamed to PATH by commit(); destroyed without commit(), the temporary file
// is removed and PATH is untouched.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace chopper {

class OutputFile {
 public:
  // Throws Error naming the path when it cannot be created.
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
