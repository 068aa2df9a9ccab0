#include "chopper/record/csv_stream.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>

#include "chopper/base/error.hpp"

namespace chopper::record {

CsvStream::~CsvStream() {
  close();
}

void CsvStream::open(const std::string& path, std::string_view header) {
  close();
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(path + ": cannot be created: " + std::strerror(errno));
  buf_.clear();
  buf_.append(header);
  buf_.push_back('\n');
  flush();
}

void CsvStream::flush() {
  const char* p = buf_.data();
  size_t left = buf_.size();
  while (left > 0 && fd_ >= 0 && !failed_) {
    const ssize_t w = ::write(fd_, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      fmt::print(stderr, "chopper record: {}: write failed ({}); its later rows are dropped\n",
                 path_, w < 0 ? std::strerror(errno) : "no progress");
      failed_ = true;
      break;
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  lost_ += left;
  buf_.clear();
}

void CsvStream::close() {
  if (fd_ < 0) return;
  flush();
  ::close(fd_);
  fd_ = -1;
}

void append_tenths(fmt::memory_buffer& b, uint64_t v) {
  append_int(b, v / 10);
  b.push_back('.');
  b.push_back(static_cast<char>('0' + v % 10));
}

void append_milli(fmt::memory_buffer& b, uint64_t v) {
  append_int(b, v / 1000);
  const unsigned m = static_cast<unsigned>(v % 1000);
  const char digits[4] = {'.', static_cast<char>('0' + m / 100),
                          static_cast<char>('0' + m / 10 % 10), static_cast<char>('0' + m % 10)};
  b.append(digits, digits + 4);
}

void append_cell(fmt::memory_buffer& b, std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) {
    b.append(s);
    return;
  }
  const bool quote = s.find_first_of(",\"") != std::string_view::npos;
  if (quote) b.push_back('"');
  for (char c : s) {
    if (c == '"') b.push_back('"');
    b.push_back(c == '\n' || c == '\r' ? ' ' : c);  // one row per line
  }
  if (quote) b.push_back('"');
}

}  // namespace chopper::record
