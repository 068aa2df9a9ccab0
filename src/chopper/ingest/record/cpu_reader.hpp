#pragma once
// Readers of the CPU files `chopper record` writes (docs/telemetry_formats.md, "chopper record":
// <host>.cpu.csv and <host>.threads.csv), recognised by their header line. Rows that cannot be
// used are counted in the file's diagnostics with their line (bad_row, bad_timestamp,
// bad_quoting, bad_value, value_not_available, telemetry_out_of_range, unused_field); a last line
// without its "\n" is a cut write: dropped and counted (truncated_line). An unreadable file throws
// InputError naming it.
#include <string>
#include <string_view>
#include <vector>

#include "chopper/base/input.hpp"
#include "chopper/model/recorded_cpu.hpp"

namespace chopper {

// The first columns of each file's header, as the recorder writes them.
inline constexpr std::string_view kCpuCsvHeader = "time_ns,cpu,util_pct";
inline constexpr std::string_view kThreadsCsvHeader = "time_ns,pid,ppid,tid,comm";

// Whether the first bytes of a file are a <host>.cpu.csv / <host>.threads.csv (its header line).
bool is_cpu_csv(std::string_view head);
bool is_threads_csv(std::string_view head);

CpuUtilization read_cpu_csv(ByteSource& src);
CpuUtilization read_cpu_csv(const std::string& path);
ThreadSamples read_threads_csv(ByteSource& src);
ThreadSamples read_threads_csv(const std::string& path);

// The files of one host together: a cpu file and a threads file whose paths are the same but for
// ".cpu.csv" / ".threads.csv" (compression suffixes aside) make one RecordedCpu; any other file
// stands alone. In order of their paths.
std::vector<RecordedCpu> group_recorded_cpu(std::vector<CpuUtilization> cpus,
                                            std::vector<ThreadSamples> threads);

}  // namespace chopper
