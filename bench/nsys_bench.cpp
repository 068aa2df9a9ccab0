// chopper-bench-nsys: the Nsight Systems SQLite reader's speed against the Kineto reader's, on
// synthetic inputs of the same content.
//
//   chopper-bench-nsys SCHEMA.sql DIR [--kernels N]
//
// Writes DIR/nsys_bench.sqlite: the export schema of SCHEMA.sql (its CREATE TABLE statements;
// tests/data/nsys/two_ranks.sql) filled through SQLite with N kernels of one process, each launched
// by a cudaLaunchKernel_v7000 runtime call with its own correlation id, and a ProfilerStep#k NVTX
// push/pop range per 1000 kernels; and DIR/nsys_bench.json: the same N kernels, N runtime calls and
// steps as a Kineto trace. Then reads each (best of 3) with read_nsys_file and read_kineto_file
// and prints MB/s of the file and kernels per second, checking both kernel counts.
#include <fmt/format.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "chopper/ingest/kineto/kineto_reader.hpp"
#include "chopper/ingest/nsys/nsys_reader.hpp"

namespace {

void check(int rc, sqlite3* db, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE) {
    fmt::print(stderr, "chopper-bench-nsys: {}: {}\n", what, sqlite3_errmsg(db));
    std::exit(1);
  }
}

void write_sqlite(const std::string& schema_sql, const std::string& path, int64_t n) {
  std::filesystem::remove(path);
  sqlite3* db = nullptr;
  check(sqlite3_open(path.c_str(), &db), db, "open");
  // The schema's CREATE TABLE statements only (the fixture's rows are not wanted).
  std::string creates;
  std::istringstream in(schema_sql);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("CREATE TABLE", 0) == 0) creates += line + "\n";
  check(sqlite3_exec(db, creates.c_str(), nullptr, nullptr, nullptr), db, "schema");
  check(sqlite3_exec(db,
                     "BEGIN; INSERT INTO StringIds VALUES (1, 'void gemm_kernel<float>(float "
                     "const*, float*, int)'), (2, 'gemm_kernel'), (5, 'cudaLaunchKernel_v7000');"
                     "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, "
                     "'', '');"
                     "INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H100 80GB HBM3', '', 0, 0, "
                     "0, 132, '', '', 0, 9, 0);",
                     nullptr, nullptr, nullptr),
        db, "strings");
  const int64_t gp = int64_t{100} << 24, gt = gp + 101;
  sqlite3_stmt *k = nullptr, *r = nullptr, *v = nullptr;
  check(sqlite3_prepare_v2(db,
                           "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, NULL, 7, ?, "
                           "?, 1, 2, NULL, 0, 0, 128, 108, 1, 1, 256, 1, 1, 0, 49152, 0, 0, ?, "
                           "NULL, NULL, NULL)",
                           -1, &k, nullptr),
        db, "prepare kernel");
  check(sqlite3_prepare_v2(db,
                           "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 1, ?, ?, 5, 0, "
                           "NULL)",
                           -1, &r, nullptr),
        db, "prepare runtime");
  check(sqlite3_prepare_v2(db,
                           "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) "
                           "VALUES (?, ?, 59, ?, ?)",
                           -1, &v, nullptr),
        db, "prepare nvtx");
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = 1000 * i;
    sqlite3_bind_int64(r, 1, t);
    sqlite3_bind_int64(r, 2, t + 50);
    sqlite3_bind_int64(r, 3, gt);
    sqlite3_bind_int64(r, 4, i + 1);
    check(sqlite3_step(r), db, "runtime");
    sqlite3_reset(r);
    sqlite3_bind_int64(k, 1, t + 100);
    sqlite3_bind_int64(k, 2, t + 900);
    sqlite3_bind_int64(k, 3, i + 1);
    sqlite3_bind_int64(k, 4, gp);
    sqlite3_bind_int64(k, 5, i + 1);
    check(sqlite3_step(k), db, "kernel");
    sqlite3_reset(k);
    if (i % 1000 == 0) {
      const std::string name = fmt::format("ProfilerStep#{}", i / 1000);
      sqlite3_bind_int64(v, 1, t);
      sqlite3_bind_int64(v, 2, t + 1000 * 1000);
      sqlite3_bind_text(v, 3, name.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(v, 4, gt);
      check(sqlite3_step(v), db, "nvtx");
      sqlite3_reset(v);
    }
  }
  sqlite3_finalize(k);
  sqlite3_finalize(r);
  sqlite3_finalize(v);
  check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), db, "commit");
  sqlite3_close(db);
}

void write_kineto(const std::string& path, int64_t n) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    fmt::print(stderr, "chopper-bench-nsys: cannot write {}\n", path);
    std::exit(1);
  }
  const int64_t base_us = 1700000000000000;
  fmt::print(f, "{{\"schemaVersion\": 1, \"traceEvents\": [\n");
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = base_us + i;  // 1 us per kernel, as the export's 1000 ns
    if (i % 1000 == 0)
      fmt::print(f,
                 "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{}\", "
                 "\"pid\": 100, \"tid\": 101, \"ts\": {}, \"dur\": 1000}},\n",
                 i / 1000, t);
    fmt::print(f,
               "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
               "\"pid\": 100, \"tid\": 101, \"ts\": {}.000, \"dur\": 0.050, \"args\": "
               "{{\"correlation\": {}}}}},\n",
               t, i + 1);
    fmt::print(f,
               "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void gemm_kernel<float>(float "
               "const*, float*, int)\", \"pid\": 0, \"tid\": 7, \"ts\": {}.100, \"dur\": 0.800, "
               "\"args\": {{\"device\": 0, \"stream\": 7, \"correlation\": {}, \"registers per "
               "thread\": 128, \"shared memory\": 49152, \"grid\": [108, 1, 1], \"block\": [256, "
               "1, 1]}}}}{}\n",
               t, i + 1, i + 1 < n ? "," : "");
  }
  fmt::print(f, "]}}\n");
  std::fclose(f);
}

template <class F>
double best_seconds(F&& f) {
  double best = 1e300;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

size_t kernels(const chopper::RankTrace& t) {
  size_t n = 0;
  for (chopper::GpuKind k : t.gpu.kind) n += k == chopper::GpuKind::kKernel;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: chopper-bench-nsys SCHEMA.sql DIR [--kernels N]\n");
    return 2;
  }
  int64_t n = 100000;
  for (int i = 3; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--kernels") n = std::atoll(argv[i + 1]);
  std::ifstream in(argv[1]);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string dir = argv[2];
  std::filesystem::create_directories(dir);
  const std::string db = dir + "/nsys_bench.sqlite", json = dir + "/nsys_bench.json";
  write_sqlite(ss.str(), db, n);
  write_kineto(json, n);
  int rc = 0;
  auto run = [&](const char* what, const std::string& path, auto read) {
    size_t got = 0;
    const double s = best_seconds([&] { got = kernels(read(path)); });
    const double mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
    fmt::print("{:6} {:>8.1f} MB  {:7.3f} s  {:8.1f} MB/s  {:6.2f} M kernels/s  ({} kernels)\n",
               what, mb, s, mb / s, static_cast<double>(got) / s / 1e6, got);
    if (got != static_cast<size_t>(n)) {
      fmt::print(stderr, "{}: {} kernels read, {} written\n", what, got, n);
      rc = 1;
    }
  };
  run("nsys", db, [](const std::string& p) { return chopper::read_nsys_file(p); });
  run("kineto", json, [](const std::string& p) { return chopper::read_kineto_file(p); });
  return rc;
}
