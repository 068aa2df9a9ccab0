#include <gtest/gtest.h>
#include <isa-l/igzip_lib.h>
#include <unistd.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "compress_util.hpp"

using namespace chopper;

namespace {

using chopper::test::gzip;
using chopper::test::zstd;

std::string read_all(ByteSource& s, size_t piece = 4096) {
  std::string out;
  std::string buf(piece, '\0');
  for (size_t n; (n = s.read(buf.data(), buf.size())) > 0;) out.append(buf.data(), n);
  return out;
}

std::string sample_text() {
  std::mt19937 rng(1);
  std::string s;
  for (int i = 0; i < 200000; ++i) s += "{\"ts\": " + std::to_string(rng() % 100000) + "},\n";
  return s;
}

}  // namespace

TEST(ByteSource, DetectsCompressionFromContent) {
  const std::string text = sample_text();
  const std::string gz = gzip(text), zs = zstd(text);
  auto p = ByteSource::from_memory(text, "a.json.gz");  // the name lies; the content decides
  EXPECT_EQ(p->compression(), Compression::kNone);
  EXPECT_EQ(read_all(*p), text);
  auto g = ByteSource::from_memory(gz, "a.json");
  EXPECT_EQ(g->compression(), Compression::kGzip);
  EXPECT_EQ(read_all(*g, 1000), text);
  EXPECT_EQ(g->raw_offset(), gz.size());
  auto z = ByteSource::from_memory(zs, "a");
  EXPECT_EQ(z->compression(), Compression::kZstd);
  EXPECT_EQ(read_all(*z, 777), text);
}

TEST(ByteSource, ReadsConcatenatedGzipMembers) {
  const std::string a = "first member\n", b = "second member\n";
  const std::string gz = gzip(a) + gzip(b);
  auto g = ByteSource::from_memory(gz, "cat.gz");
  EXPECT_EQ(read_all(*g), a + b);
  EXPECT_TRUE(g->warnings().empty());
}

TEST(ByteSource, TruncatedGzipNamesFileAndOffset) {
  const std::string gz = gzip(sample_text());
  const std::string cut = gz.substr(0, gz.size() / 2);
  auto g = ByteSource::from_memory(cut, "rank3.json.gz");
  try {
    read_all(*g);
    FAIL() << "no error for a truncated gzip stream";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "rank3.json.gz");
    EXPECT_EQ(e.offset(), cut.size());  // it ran out at the end of what was there
    EXPECT_NE(std::string(e.what()).find("truncated gzip"), std::string::npos) << e.what();
  }
}

TEST(ByteSource, CorruptGzipAndZstdThrow) {
  std::string gz = gzip(sample_text());
  for (size_t i = 20; i < 60; ++i) gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  auto g = ByteSource::from_memory(gz, "bad.gz");
  EXPECT_THROW(read_all(*g), InputError);
  std::string zs = zstd(sample_text());
  auto z = ByteSource::from_memory(zs.substr(0, zs.size() - 10), "bad.zst");
  EXPECT_THROW(read_all(*z), InputError);
}

TEST(ByteSource, TrailingGarbageAfterGzipIsAWarning) {
  const std::string gz = gzip("hello") + "XYZ";
  auto g = ByteSource::from_memory(gz, "t.gz");
  EXPECT_EQ(read_all(*g), "hello");
  ASSERT_EQ(g->warnings().size(), 1u);
}

TEST(ByteSource, MissingFileIsAnInputError) {
  EXPECT_THROW(ByteSource::open_file("/nonexistent/x.json"), InputError);
}

// A plain file is given whole, in place: its bytes, one readable byte before them and the padding
// (zeros) after; writes to the block never reach the file, and memory released behind the reader
// reads as the file again. Compressed input and empty files are not given in place: they are read
// with read().
TEST(ByteSource, PlainFilesMapInPlaceCopyOnWrite) {
  const std::string text = sample_text() + sample_text();  // 5.2 MB: not a whole number of pages
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("chopper_map_" + std::to_string(::getpid()) + ".json"))
                               .string();
  std::ofstream(path, std::ios::binary) << text;
  {
    auto f = ByteSource::open_file(path);
    char* p = f->map_in_place(65);
    if (p == nullptr)  // only files on local filesystems are mapped (base/input.cpp)
      GTEST_SKIP() << path << " is not on a filesystem chopper maps (ext4, XFS, Btrfs, tmpfs...)";
    EXPECT_EQ(f->map_in_place(65), p) << "mapped once";
    EXPECT_EQ(std::string_view(p, text.size()), text);
    EXPECT_EQ(p[-1], '\0');
    for (size_t i = 0; i < 65; ++i) ASSERT_EQ(p[text.size() + i], '\0') << i;
    p[0] = '#';
    p[text.size() - 1] = '#';
    f->release_below(p + 1000);  // less than a release step (4 MiB): kept
    EXPECT_EQ(p[0], '#');
    f->release_below(p + text.size());  // the first 4 MiB and more: given back
    EXPECT_EQ(p[0], text[0]);
    EXPECT_EQ(p[text.size() - 1], '#');  // in the last, partial step: kept
  }
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), text);
  std::filesystem::remove(path);

  auto m = ByteSource::from_memory(text, "m.json");  // memory: a padded copy
  char* q = m->map_in_place(65);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(std::string_view(q, text.size()), text);
  EXPECT_EQ(q[text.size()], '\0');
  auto g = ByteSource::from_memory(gzip(text), "m.json.gz");
  EXPECT_EQ(g->map_in_place(65), nullptr);
  auto e = ByteSource::from_memory("", "empty.json");
  EXPECT_EQ(e->map_in_place(65), nullptr);
}
