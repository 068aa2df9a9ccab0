#pragma once
// Streaming file input. A ByteSource yields the uncompressed bytes of a file in pieces, so a reader
// never holds a whole decompressed trace in memory. The compression is detected from the content
// (gzip and zstd magic numbers), never from the file name. Multi-member gzip and multi-frame zstd
// are read to the end. Corrupt or truncated compressed data throws InputError naming the file and
// the compressed byte offset, and so does compressed data that decompresses to more than a cap
// (64 GiB by default: a few MB of gzip can hold many GB). Files are opened without blocking (a FIFO
// with no writer would block open(2) forever) and must be regular files, unless a stream is
// asked for: then "-" is standard input, and a FIFO or pipe (`<(zcat run.json.gz)`) is read as a
// stream (never mapped; the same decompression cap).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/base/enum_names.hpp"

namespace chopper {

#define CHOPPER_COMPRESSIONS(X) \
  X(kNone, "none")              \
  X(kGzip, "gzip")              \
  X(kZstd, "zstd")
CHOPPER_ENUM(Compression, CHOPPER_COMPRESSIONS)
inline std::string_view compression_name(Compression c) {
  return enum_name(c);
}

// The most bytes one compressed file may decompress to, for sources made after the call
// (process-wide; default 64 GiB). Past it, read() throws InputError.
inline constexpr uint64_t kDefaultMaxDecompressedBytes = uint64_t{64} << 30;
void set_max_decompressed_bytes(uint64_t n);
uint64_t max_decompressed_bytes();
// What a file that is not a regular one is, from its st_mode: "a FIFO", "a directory", ...
std::string_view file_type_name(unsigned st_mode);
// "64 GiB", "4 MiB", "100 bytes": a limit as messages say it.
std::string limit_text(uint64_t bytes);

// The most bytes of a rules file or a run manifest (read whole, as text).
inline constexpr uint64_t kMaxConfigFileBytes = uint64_t{1} << 20;
// A small text file read whole (a rules file, a run manifest): a regular file only, opened without
// blocking (a FIFO with no writer would block open(2) forever), at most `max_bytes` (a device such
// as /dev/zero is refused, not read forever). Throws InputError naming the file; `what` names the
// kind of file in the size message ("a rules file").
std::string read_text_file(const std::string& path, uint64_t max_bytes, std::string_view what);

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Opens a file; throws InputError if it cannot be opened or is not a regular file ("not a regular
  // file (a FIFO)", ... at byte 0). Never blocks. With `streams`, "-" is standard input (named "-")
  // and a FIFO or pipe is read as it comes (a FIFO with no writer reads as empty); a terminal or
  // another device is still refused.
  static std::unique_ptr<ByteSource> open_file(const std::string& path, bool streams = false);
  // Reads from a copy of `data` (tests, fuzzing). `name` is used in messages.
  static std::unique_ptr<ByteSource> from_memory(std::string_view data, std::string name);

  // Fills up to `cap` bytes of uncompressed data; returns 0 only at the end of the data.
  virtual size_t read(char* dst, size_t cap) = 0;

  // Plain input only, before any read(): the whole content as one writable block, for readers
  // that parse it where it lies instead of copying it through read(). A file is mapped
  // copy-on-write (MAP_PRIVATE: writes stay in this process, the file never changes); memory is
  // copied once. The block is preceded by one readable byte and followed by `pad` zero bytes.
  // Null for compressed input, an empty file, a file on a network or other non-local filesystem
  // (where an unreadable mapped page would be SIGBUS, not an error), or when the mapping fails:
  // read() is then the way. The block lives as long as the source.
  virtual char* map_in_place(size_t pad) {
    (void)pad;
    return nullptr;
  }
  // The block's bytes below `p` will not be read again: their memory may be given back, so that
  // a mapped file costs a few MiB of resident memory, not its size.
  virtual void release_below(const char* p) { (void)p; }

  Compression compression() const { return compression_; }
  const std::string& name() const { return name_; }
  // Compressed bytes consumed so far (== uncompressed bytes for plain files).
  virtual uint64_t raw_offset() const = 0;
  // Size of the underlying file or memory block in bytes.
  virtual uint64_t raw_size() const = 0;
  // Non-fatal oddities of the container (e.g. trailing bytes after the last gzip member).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // This source's cap on decompressed bytes (compressed input only); starts at
  // max_decompressed_bytes().
  void set_max_decompressed(uint64_t n) { max_out_ = n; }

 protected:
  // Adds n decompressed bytes; throws InputError (at compressed offset `at`) past the cap.
  void count_out(size_t n, uint64_t at);

  Compression compression_ = Compression::kNone;
  uint64_t max_out_ = max_decompressed_bytes();
  uint64_t out_ = 0;
  std::string name_;
  std::vector<std::string> warnings_;
};

}  // namespace chopper
