#include "chopper/base/output_file.hpp"

#include <isa-l/igzip_lib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "chopper/base/error.hpp"

namespace chopper {

struct OutputFile::Deflate {
  isal_zstream s{};
  std::vector<uint8_t> level_buf = std::vector<uint8_t>(ISAL_DEF_LVL1_DEFAULT);
  std::vector<uint8_t> out = std::vector<uint8_t>(1u << 20);
};

OutputFile::OutputFile(std::string path, bool gzip) : path_(std::move(path)), gzip_(gzip) {
  tmp_ = path_ + ".tmp-" + std::to_string(::getpid());
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (f_ == nullptr) throw Error(path_ + ": cannot write: " + std::strerror(errno));
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
  buf_.append(bytes);
  if (buf_.size() >= (4u << 20)) {
    put(reinterpret_cast<const uint8_t*>(buf_.data()), buf_.size(), false);
    buf_.clear();
  }
}

uint64_t OutputFile::commit() {
  put(reinterpret_cast<const uint8_t*>(buf_.data()), buf_.size(), true);
  buf_.clear();
  if (std::fflush(f_) != 0 || std::fclose(f_) != 0) {
    f_ = nullptr;
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
    throw Error(path_ + ": write failed: " + std::strerror(errno));
  }
  f_ = nullptr;
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) {
    std::filesystem::remove(tmp_, ec);
    throw Error(path_ + ": cannot rename into place: " + ec.message());
  }
  return out_;
}

}  // namespace chopper
