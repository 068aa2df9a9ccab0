#include "chopper/base/input.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <isa-l/igzip_lib.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <zstd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "chopper/base/error.hpp"

namespace chopper {

namespace {
std::atomic<uint64_t> g_max_decompressed{kDefaultMaxDecompressedBytes};
}  // namespace

void set_max_decompressed_bytes(uint64_t n) {
  g_max_decompressed.store(n, std::memory_order_relaxed);
}
uint64_t max_decompressed_bytes() {
  return g_max_decompressed.load(std::memory_order_relaxed);
}

std::string limit_text(uint64_t b) {
  if (b >= (uint64_t{1} << 30) && b % (uint64_t{1} << 30) == 0)
    return std::to_string(b >> 30) + " GiB";
  if (b >= (uint64_t{1} << 20) && b % (uint64_t{1} << 20) == 0)
    return std::to_string(b >> 20) + " MiB";
  if (b >= (uint64_t{1} << 10) && b % (uint64_t{1} << 10) == 0)
    return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " bytes";
}

void ByteSource::count_out(size_t n, uint64_t at) {
  out_ += n;
  if (out_ > max_out_)
    throw InputError(name_, at,
                     "decompressed data exceeds the limit of " + limit_text(max_out_) +
                         " per file (chopper --max-decompressed-gib raises it)");
}

namespace {

// Is the file on a local disk or in memory? Only such files are mapped: a mapped page that cannot
// be read (an NFS or Lustre server gone, a FUSE error) stops the process with SIGBUS, where
// read(2) returns an error that names the file.
bool on_local_filesystem(int fd) {
  constexpr uint64_t kZfsMagic = 0x2fc12fc1;  // not in linux/magic.h
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return false;
  switch (static_cast<uint64_t>(fs.f_type)) {
    case EXT4_SUPER_MAGIC:  // ext2/3/4 share it
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case F2FS_SUPER_MAGIC:
    case kZfsMagic:
    case TMPFS_MAGIC:
    case OVERLAYFS_SUPER_MAGIC:  // containers
      return true;
    default:
      return false;
  }
}

// The compressed bytes: a file read with read(2) in blocks, or a block of memory.
class RawInput {
 public:
  virtual ~RawInput() = default;
  // Returns a view of the next bytes (at most `max`), empty at EOF. Valid until the next call.
  virtual std::string_view next(size_t max) = 0;
  // Pushes back the last `n` bytes returned by next() (n <= size of the last view).
  virtual void unread(size_t n) = 0;
  virtual uint64_t offset() const = 0;
  virtual uint64_t size() const = 0;
  // Copies up to `cap` bytes into dst; 0 at EOF. Files override it to read(2) straight into dst.
  virtual size_t read_into(char* dst, size_t cap) {
    std::string_view v = next(cap);
    std::memcpy(dst, v.data(), v.size());
    return v.size();
  }
  // ByteSource::map_in_place and release_below, for plain input.
  virtual char* map_in_place(size_t pad) = 0;
  virtual void release_below(const char* p) = 0;
};

class FileInput final : public RawInput {
 public:
  FileInput(int fd, std::string name, uint64_t size)
      : fd_(fd), name_(std::move(name)), size_(size), buf_(1 << 20) {}
  ~FileInput() override {
    if (map_ != nullptr) ::munmap(map_, map_len_);
    ::close(fd_);
  }
  // One page of anonymous memory, the file mapped copy-on-write after it, then anonymous zero
  // pages for the padding (the last file page reads as zeros past the end of the file; a page
  // wholly past it would fault). Read ahead sequentially by the kernel, as read(2) would be.
  char* map_in_place(size_t pad) override {
    if (map_ != nullptr) return data_;
    if (offset_ != 0 || size_ == 0 || size_ > (uint64_t{1} << 46) || !on_local_filesystem(fd_))
      return nullptr;
    const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const auto up = [page](size_t n) { return (n + page - 1) / page * page; };
    const size_t file_len = up(size_), len = page + up(size_ + pad);
    void* r = ::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) return nullptr;
    char* data = static_cast<char*>(r) + page;
    if (::mmap(data, file_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, fd_,
               0) == MAP_FAILED) {
      ::munmap(r, len);
      return nullptr;
    }
    ::madvise(data, file_len, MADV_SEQUENTIAL);
    map_ = r;
    map_len_ = len;
    data_ = released_ = data;
    page_ = page;
    return data_;
  }
  // Pages behind the reader are dropped every few MiB (MADV_DONTNEED: the file's pages stay in
  // the page cache, only this mapping lets go of them).
  void release_below(const char* p) override {
    if (map_ == nullptr || p <= released_) return;
    const auto to = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(p) & ~(page_ - 1));
    if (to - released_ < kReleaseStep) return;
    ::madvise(released_, static_cast<size_t>(to - released_), MADV_DONTNEED);
    released_ = to;
  }
  std::string_view next(size_t max) override {
    if (pos_ == len_) {
      pos_ = len_ = 0;
      for (;;) {
        ssize_t n = ::read(fd_, buf_.data(), buf_.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
          throw InputError(name_, offset_, std::string("read failed: ") + std::strerror(errno));
        len_ = static_cast<size_t>(n);
        break;
      }
    }
    size_t take = std::min(max, len_ - pos_);
    std::string_view v(buf_.data() + pos_, take);
    pos_ += take;
    offset_ += take;
    return v;
  }
  void unread(size_t n) override {
    pos_ -= n;
    offset_ -= n;
  }
  size_t read_into(char* dst, size_t cap) override {
    if (pos_ < len_) return RawInput::read_into(dst, cap);  // bytes buffered by next()
    for (;;) {
      ssize_t n = ::read(fd_, dst, cap);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        throw InputError(name_, offset_, std::string("read failed: ") + std::strerror(errno));
      offset_ += static_cast<uint64_t>(n);
      return static_cast<size_t>(n);
    }
  }
  uint64_t offset() const override { return offset_; }
  uint64_t size() const override { return size_; }

 private:
  static constexpr ptrdiff_t kReleaseStep = 4 << 20;
  int fd_;
  std::string name_;
  uint64_t size_;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0;
  uint64_t offset_ = 0;
  void* map_ = nullptr;  // the whole mapping (lead page, file, padding)
  size_t map_len_ = 0;
  char* data_ = nullptr;      // the file's first byte in it
  char* released_ = nullptr;  // pages below this were released
  size_t page_ = 4096;
};

class MemoryInput final : public RawInput {
 public:
  explicit MemoryInput(std::string_view data) : data_(data) {}
  std::string_view next(size_t max) override {
    size_t take = std::min(max, data_.size() - pos_);
    std::string_view v(data_.data() + pos_, take);
    pos_ += take;
    return v;
  }
  void unread(size_t n) override { pos_ -= n; }
  uint64_t offset() const override { return pos_; }
  uint64_t size() const override { return data_.size(); }
  // A copy of exactly the bytes asked for (one before, the data, the padding), so that the
  // sanitizers catch a reader that looks past them.
  char* map_in_place(size_t pad) override {
    if (!block_.empty()) return block_.data() + 1;
    if (pos_ != 0 || data_.empty()) return nullptr;
    block_.assign(1 + data_.size() + pad, '\0');
    std::memcpy(block_.data() + 1, data_.data(), data_.size());
    return block_.data() + 1;
  }
  void release_below(const char*) override {}

 private:
  std::string data_;  // owned: callers may pass temporaries
  size_t pos_ = 0;
  std::vector<char> block_;  // map_in_place's copy
};

class PlainSource final : public ByteSource {
 public:
  PlainSource(std::unique_ptr<RawInput> in, std::string name) : in_(std::move(in)) {
    name_ = std::move(name);
  }
  size_t read(char* dst, size_t cap) override {
    size_t total = 0;
    while (total < cap) {
      const size_t n = in_->read_into(dst + total, cap - total);
      if (n == 0) break;
      total += n;
    }
    return total;
  }
  uint64_t raw_offset() const override { return in_->offset(); }
  uint64_t raw_size() const override { return in_->size(); }
  char* map_in_place(size_t pad) override { return in_->map_in_place(pad); }
  void release_below(const char* p) override { in_->release_below(p); }

 private:
  std::unique_ptr<RawInput> in_;
};

class GzipSource final : public ByteSource {
 public:
  GzipSource(std::unique_ptr<RawInput> in, std::string name) : in_(std::move(in)), inbuf_(1 << 20) {
    name_ = std::move(name);
    compression_ = Compression::kGzip;
    isal_inflate_init(&state_);
    state_.crc_flag = ISAL_GZIP;
    state_.next_in = inbuf_.data();
    state_.avail_in = 0;
  }
  size_t read(char* dst, size_t cap) override {
    size_t total = 0;
    while (total < cap && !done_) {
      if (!member_started_) {
        if (state_.avail_in < 2) refill();
        if (state_.avail_in == 0) {
          done_ = true;  // clean end after the last member
          break;
        }
        if (state_.avail_in < 2 || state_.next_in[0] != 0x1f || state_.next_in[1] != 0x8b) {
          // gzip(1) ignores trailing garbage after a complete member with a warning; so do we.
          warnings_.push_back("trailing bytes after the last gzip member at compressed byte " +
                              std::to_string(consumed_offset()) + " ignored");
          done_ = true;
          break;
        }
        member_started_ = true;
      }
      if (state_.avail_in == 0 && !refill())
        throw InputError(name_, consumed_offset(),
                         "truncated gzip stream (unexpected end of file)");
      state_.next_out = reinterpret_cast<uint8_t*>(dst + total);
      const size_t want = std::min<size_t>(cap - total, UINT32_MAX);
      state_.avail_out = static_cast<uint32_t>(want);
      const int rc = isal_inflate(&state_);
      total += want - state_.avail_out;
      if (rc != ISAL_DECOMP_OK) {
        const char* what = rc == ISAL_INCORRECT_CHECKSUM ? "gzip checksum mismatch"
                           : rc == ISAL_INVALID_BLOCK    ? "corrupt deflate block"
                           : rc == ISAL_INVALID_SYMBOL   ? "corrupt deflate data (invalid symbol)"
                           : rc == ISAL_INVALID_LOOKBACK ? "corrupt deflate data (invalid distance)"
                           : rc == ISAL_UNSUPPORTED_METHOD ? "unsupported gzip compression method"
                                                           : "corrupt gzip data";
        throw InputError(name_, consumed_offset(), what);
      }
      if (state_.block_state == ISAL_BLOCK_FINISH) {
        // End of one member; another may follow (concatenated gzip files).
        const uint32_t left = state_.avail_in;
        uint8_t* next_in = state_.next_in;
        isal_inflate_reset(&state_);
        state_.crc_flag = ISAL_GZIP;
        state_.next_in = next_in;
        state_.avail_in = left;
        member_started_ = false;
      }
    }
    count_out(total, consumed_offset());
    return total;
  }
  uint64_t raw_offset() const override { return consumed_offset(); }
  uint64_t raw_size() const override { return in_->size(); }

 private:
  uint64_t consumed_offset() const { return in_->offset() - state_.avail_in; }
  // Moves the unread input to the front of the buffer and appends the next raw bytes.
  bool refill() {
    const size_t left = state_.avail_in;
    if (left > 0 && state_.next_in != inbuf_.data())
      std::memmove(inbuf_.data(), state_.next_in, left);
    std::string_view v = in_->next(inbuf_.size() - left);
    std::memcpy(inbuf_.data() + left, v.data(), v.size());
    state_.next_in = inbuf_.data();
    state_.avail_in = static_cast<uint32_t>(left + v.size());
    return !v.empty();
  }

  std::unique_ptr<RawInput> in_;
  std::vector<uint8_t> inbuf_;
  inflate_state state_{};
  bool member_started_ = false;
  bool done_ = false;
};

class ZstdSource final : public ByteSource {
 public:
  ZstdSource(std::unique_ptr<RawInput> in, std::string name) : in_(std::move(in)) {
    name_ = std::move(name);
    compression_ = Compression::kZstd;
    ds_ = ZSTD_createDStream();
    ZSTD_initDStream(ds_);
  }
  ~ZstdSource() override { ZSTD_freeDStream(ds_); }
  size_t read(char* dst, size_t cap) override {
    ZSTD_outBuffer out{dst, cap, 0};
    while (out.pos < out.size) {
      if (in_buf_.pos == in_buf_.size) {
        std::string_view v = in_->next(1 << 20);
        if (v.empty()) {
          if (last_ret_ != 0)
            throw InputError(name_, in_->offset(),
                             "truncated zstd stream (unexpected end of file)");
          break;
        }
        in_buf_ = ZSTD_inBuffer{v.data(), v.size(), 0};
      }
      size_t ret = ZSTD_decompressStream(ds_, &out, &in_buf_);
      if (ZSTD_isError(ret))
        throw InputError(name_, in_->offset() - (in_buf_.size - in_buf_.pos),
                         std::string("corrupt zstd data: ") + ZSTD_getErrorName(ret));
      last_ret_ = ret;
    }
    count_out(out.pos, raw_offset());
    return out.pos;
  }
  uint64_t raw_offset() const override { return in_->offset() - (in_buf_.size - in_buf_.pos); }
  uint64_t raw_size() const override { return in_->size(); }

 private:
  std::unique_ptr<RawInput> in_;
  ZSTD_DStream* ds_;
  ZSTD_inBuffer in_buf_{nullptr, 0, 0};
  size_t last_ret_ = 0;
};

std::unique_ptr<ByteSource> make_source(std::unique_ptr<RawInput> in, std::string name) {
  std::string_view head = in->next(4);
  unsigned char m[4] = {0, 0, 0, 0};
  std::memcpy(m, head.data(), head.size());
  const size_t n = head.size();
  in->unread(n);
  if (n >= 2 && m[0] == 0x1f && m[1] == 0x8b)
    return std::make_unique<GzipSource>(std::move(in), std::move(name));
  // A zstd frame, or a skippable frame (magic 0x184D2A50-5F), which pzstd writes before each of
  // its frames: the decoder skips those and reads the frames that follow, one after another.
  if (n >= 4 && ((m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) ||
                 ((m[0] & 0xf0) == 0x50 && m[1] == 0x2a && m[2] == 0x4d && m[3] == 0x18)))
    return std::make_unique<ZstdSource>(std::move(in), std::move(name));
  return std::make_unique<PlainSource>(std::move(in), std::move(name));
}

}  // namespace

std::string_view file_type_name(unsigned m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  return "not a file";
}

namespace {

// Opens `path` for reading without blocking ("-": a copy of standard input) and checks its type:
// a regular file, or (with `streams`) a FIFO or pipe. Returns the descriptor (blocking again) and
// its stat; throws InputError naming the file.
int open_checked(const std::string& path, bool streams, struct stat& st) {
  // O_NONBLOCK: opening a FIFO for reading waits for a writer otherwise (forever, if none comes).
  // A regular file ignores it; it is cleared all the same, once the file is known to be one.
  const bool is_stdin = streams && path == "-";
  int fd = is_stdin ? ::fcntl(0, F_DUPFD_CLOEXEC, 3)
                    : ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    throw InputError(path, 0,
                     std::string(is_stdin ? "cannot read standard input: " : "cannot open: ") +
                         std::strerror(errno));
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw InputError(path, 0, std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode) && !(streams && S_ISFIFO(st.st_mode))) {
    ::close(fd);
    throw InputError(path, 0,
                     "not a regular file (" + std::string(file_type_name(st.st_mode)) + ")" +
                         (streams ? ", nor a pipe" : ""));
  }
  if (!is_stdin) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  return fd;
}

}  // namespace

std::unique_ptr<ByteSource> ByteSource::open_file(const std::string& path, bool streams) {
  struct stat st {};
  const int fd = open_checked(path, streams, st);
  // A stream's size is unknown (0): it is read, never mapped.
  const uint64_t size = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
  return make_source(std::make_unique<FileInput>(fd, path, size), path);
}

std::string read_text_file(const std::string& path, uint64_t max_bytes, std::string_view what) {
  struct stat st {};
  const int fd = open_checked(path, false, st);
  auto too_large = [&](uint64_t n) {
    ::close(fd);
    throw InputError(
        path, 0,
        fmt::format("{} bytes, above the limit of {} for {}", n, limit_text(max_bytes), what));
  };
  if (static_cast<uint64_t>(st.st_size) > max_bytes) too_large(static_cast<uint64_t>(st.st_size));
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw InputError(path, text.size(), std::string("read failed: ") + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) too_large(text.size());  // it grew while read
  }
  ::close(fd);
  return text;
}

std::unique_ptr<ByteSource> ByteSource::from_memory(std::string_view data, std::string name) {
  return make_source(std::make_unique<MemoryInput>(data), std::move(name));
}

}  // namespace chopper
