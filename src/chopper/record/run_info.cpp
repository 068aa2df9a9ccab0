#include "chopper/record/run_info.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "chopper/base/error.hpp"
#include "chopper/base/json_out.hpp"
#include "chopper/record/clock.hpp"

namespace chopper::record {

std::string record_json(const RunInfo& info) {
  std::string j = "{\n  \"format\": \"chopper-record\",\n  \"version\": 1,\n  \"host\": ";
  append_json_string(j, info.host);
  j += ",\n  \"command\": [";
  for (size_t i = 0; i < info.command.size(); ++i) {
    if (i > 0) j += ", ";
    append_json_string(j, info.command[i]);
  }
  auto b = std::back_inserter(j);
  fmt::format_to(b,
                 "],\n  \"interval_ms\": {},\n  \"thread_interval_ms\": {},\n  "
                 "\"counter_interval_ms\": {},\n",
                 info.interval_ms, info.thread_interval_ms, info.counter_interval_ms);
  j += "  \"gpu_backend\": ";
  append_json_string(j, info.gpu_backend);
  j += ",\n  \"gpu_note\": ";
  append_json_string(j, info.gpu_note);
  j += ",\n  \"gpus\": [";
  for (size_t i = 0; i < info.gpus.size(); ++i) {
    fmt::format_to(b, "{}{{\"index\": {}, \"name\": ", i > 0 ? ", " : "", info.gpus[i].index);
    append_json_string(j, info.gpus[i].name);
    j += ", \"uuid\": ";
    append_json_string(j, info.gpus[i].uuid);
    j += "}";
  }
  fmt::format_to(b, "],\n  \"logical_cpus\": {},\n  \"start_realtime_ns\": {},\n",
                 info.logical_cpus, info.start_realtime_ns);
  auto or_null = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string("null"); };
  fmt::format_to(b, "  \"end_realtime_ns\": {},\n  \"exit_status\": {},\n  \"pids\": [",
                 or_null(info.end_realtime_ns), or_null(info.exit_status));
  for (size_t i = 0; i < info.pids.size(); ++i)
    fmt::format_to(b, "{}{}", i > 0 ? ", " : "", info.pids[i]);
  j += "]";
  if (info.recorder_cpu_ns)
    fmt::format_to(b, ",\n  \"recorder_cpu_ns\": {}", *info.recorder_cpu_ns);
  j += "\n}\n";
  return j;
}

void write_record_json(const std::string& path, const RunInfo& info) {
  const std::string text = record_json(info);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(tmp + ": cannot be created: " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(tmp + ": write failed: " + std::strerror(err));
    }
    done += static_cast<size_t>(w);
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error(path + ": cannot be replaced: " + std::strerror(errno));
}

void append_clock_row(CsvStream& out) {
  const int64_t real = realtime_ns();
  const int64_t mono = monotonic_ns();
  fmt::format_to(std::back_inserter(out.buf()), "{},{}\n", real, mono);
}

std::string file_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  std::string h = name;
  for (char& c : h) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return h;
}

}  // namespace chopper::record
