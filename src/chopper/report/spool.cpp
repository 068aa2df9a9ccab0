#include "chopper/report/spool.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "chopper/base/error.hpp"

namespace chopper {
namespace {

constexpr size_t kBlock = 1 << 20;  // buffered before a write; read at once when replaying

void put_varint(uint64_t v, std::string& out) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// The varint at p (p < end), or false when it runs past end or is longer than 10 bytes.
bool get_varint(const char*& p, const char* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    const auto b = static_cast<uint8_t>(*p++);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}

}  // namespace

void encode_row(std::span<const Cell> cells, std::string& out) {
  size_t body = 0;
  for (const Cell& c : cells) {
    body += 1;
    switch (c.kind) {
      case Cell::kNull:
        break;
      case Cell::kInt: {
        const uint64_t z = (static_cast<uint64_t>(c.i) << 1) ^ static_cast<uint64_t>(c.i >> 63);
        body += varint_size(z);
        break;
      }
      case Cell::kReal:
        body += 8;
        break;
      case Cell::kText:
        body += varint_size(c.s.size()) + c.s.size();
        break;
    }
  }
  put_varint(body, out);
  for (const Cell& c : cells) {
    out.push_back(static_cast<char>(c.kind));
    switch (c.kind) {
      case Cell::kNull:
        break;
      case Cell::kInt:
        put_varint((static_cast<uint64_t>(c.i) << 1) ^ static_cast<uint64_t>(c.i >> 63), out);
        break;
      case Cell::kReal: {
        char b[8];
        std::memcpy(b, &c.r, 8);
        out.append(b, 8);
        break;
      }
      case Cell::kText:
        put_varint(c.s.size(), out);
        out.append(c.s);
        break;
    }
  }
}

void decode_rows(std::string_view bytes, TableSink& sink, std::string_view what) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  std::vector<Cell> cells;
  auto bad = [&]() {
    throw Error(fmt::format("{}: spooled rows damaged at byte {}", what, p - bytes.data()));
  };
  while (p < end) {
    uint64_t body = 0;
    if (!get_varint(p, end, body) || body > static_cast<uint64_t>(end - p)) bad();
    const char* const row_end = p + body;
    cells.clear();
    while (p < row_end) {
      Cell c;
      const auto kind = static_cast<uint8_t>(*p++);
      switch (kind) {
        case Cell::kNull:
          break;
        case Cell::kInt: {
          uint64_t z = 0;
          if (!get_varint(p, row_end, z)) bad();
          c.kind = Cell::kInt;
          c.i = static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1));
          break;
        }
        case Cell::kReal:
          if (row_end - p < 8) bad();
          c.kind = Cell::kReal;
          std::memcpy(&c.r, p, 8);
          p += 8;
          break;
        case Cell::kText: {
          uint64_t n = 0;
          if (!get_varint(p, row_end, n) || n > static_cast<uint64_t>(row_end - p)) bad();
          c.kind = Cell::kText;
          c.s = std::string_view(p, n);
          p += n;
          break;
        }
        default:
          bad();
      }
      cells.push_back(c);
    }
    sink.row(cells);
  }
}

SpoolFile::SpoolFile(std::string path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr)
    throw Error(fmt::format("{}: cannot create spool file: {}", path_, std::strerror(errno)));
  buf_.reserve(kBlock + 4096);
}

SpoolFile::~SpoolFile() {
  if (file_ != nullptr) std::fclose(file_);
}

void SpoolFile::begin_chunk() {
  if (open_) throw Error(path_ + ": spool chunk begun twice");
  open_ = true;
  cur_ = SpoolChunk{size(), 0, 0};
}

SpoolChunk SpoolFile::end_chunk() {
  if (!open_) throw Error(path_ + ": spool chunk ended without a beginning");
  open_ = false;
  cur_.bytes = size() - cur_.offset;
  return cur_;
}

void SpoolFile::row(std::span<const Cell> cells) {
  if (!open_) throw Error(path_ + ": spool row outside a chunk");
  encode_row(cells, buf_);
  ++cur_.rows;
  if (buf_.size() >= kBlock) flush();
}

void SpoolFile::flush() {
  if (buf_.empty()) return;
  if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size() || std::fflush(file_) != 0)
    throw Error(fmt::format("{}: cannot write spool file: {}", path_, std::strerror(errno)));
  written_ += buf_.size();
  buf_.clear();
}

SpoolReader::SpoolReader(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0)
    throw Error(fmt::format("{}: cannot open spool file: {}", path_, std::strerror(errno)));
}

SpoolReader::~SpoolReader() {
  if (fd_ >= 0) ::close(fd_);
}

void SpoolReader::replay(const SpoolChunk& c, TableSink& sink) {
  uint64_t at = c.offset;
  const uint64_t end = c.offset + c.bytes;
  buf_.clear();
  size_t used = 0;  // bytes of buf_ decoded already
  while (at < end || used < buf_.size()) {
    // Keep the undecoded tail, read the next block behind it.
    buf_.erase(0, used);
    used = 0;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kBlock * 4, end - at));
    const size_t old = buf_.size();
    buf_.resize(old + want);
    size_t got = 0;
    while (got < want) {
      const ssize_t n =
          ::pread(fd_, buf_.data() + old + got, want - got, static_cast<off_t>(at + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw Error(fmt::format("{}: cannot read spool file at byte {}: {}", path_, at + got,
                                n < 0 ? std::strerror(errno) : "unexpected end"));
      got += static_cast<size_t>(n);
    }
    at += want;
    // The whole rows in the buffer.
    const char* p = buf_.data();
    const char* const bend = p + buf_.size();
    while (p < bend) {
      const char* q = p;
      uint64_t body = 0;
      if (!get_varint(q, bend, body) || body > static_cast<uint64_t>(bend - q)) break;
      p = q + body;
    }
    const size_t whole = static_cast<size_t>(p - buf_.data());
    if (whole == 0 && at >= end && !buf_.empty())
      throw Error(fmt::format("{}: spooled rows damaged near byte {}", path_, at));
    decode_rows(std::string_view(buf_.data(), whole), sink, path_);
    used = whole;
    if (at >= end && used == buf_.size()) break;
  }
}

}  // namespace chopper
