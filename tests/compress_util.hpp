#pragma once
// Compressing test inputs in memory: gzip through ISA-L, zstd through libzstd (the libraries the
// readers decompress with), so a test can feed the same text plain and compressed.
#include <gtest/gtest.h>
#include <isa-l/igzip_lib.h>
#include <zstd.h>

#include <cstdint>
#include <string>

namespace chopper::test {

inline std::string gzip(const std::string& in) {
  std::string out(in.size() + 1024, '\0');
  isal_zstream s;
  isal_deflate_init(&s);
  s.gzip_flag = IGZIP_GZIP;
  s.end_of_stream = 1;
  s.flush = NO_FLUSH;
  s.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(in.data()));
  s.avail_in = static_cast<uint32_t>(in.size());
  s.next_out = reinterpret_cast<uint8_t*>(out.data());
  s.avail_out = static_cast<uint32_t>(out.size());
  EXPECT_EQ(isal_deflate_stateless(&s), COMP_OK);
  out.resize(s.total_out);
  return out;
}

inline std::string zstd(const std::string& in) {
  std::string out(ZSTD_compressBound(in.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

}  // namespace chopper::test
