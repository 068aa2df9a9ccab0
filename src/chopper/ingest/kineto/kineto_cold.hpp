#pragma once
// The Kineto parser's parts that need no ISA-specific code, compiled once (kineto_cold.cpp)
// instead of in each of kineto_parser.inc's copies: the top-level metadata and the base time,
// the unread categories' diagnostics, all run once per file after the events. Internal to the
// reader.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chopper/base/time.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper::kineto_parser {

// Times kept are within 2^62 ns (146 years) of 1970, ends included: the difference of any two
// times, and the sum of any two durations, then fits in int64. Events outside are skipped and
// counted (time_overflow).
inline constexpr Ns kTimeLimit = Ns{1} << 62;

// The top-level keys (besides traceEvents) whose values parse_metadata reads: they are kept whole
// (up to 64 MiB), any other key's value only as far as its first 200 characters are concerned.
bool is_metadata_key(std::string_view key);

// Fills t.meta from the top-level keys and their JSON text, in file order (baseTimeNanoseconds,
// schemaVersion, deviceProperties, distributedInfo, versions; the rest as text of at most 200
// characters); a value that is not valid JSON is counted (malformed_metadata) and ignored.
void parse_metadata(const std::vector<std::pair<std::string, std::string>>& top_values,
                    RankTrace& t);

// Reports a category of complete events chopper does not read (`events` of them, `with_device`
// with a device arg) when it looks like device work: with a device arg, or named "..._events" or
// "...kernel..." (unread_device_category): never a silent zero.
void report_unread_category(RankTrace& t, StrId cat, uint64_t events, uint64_t with_device);

// Adds `base` (baseTimeNanoseconds, or 0) to every time of t; rows whose time or end is then
// outside (-kTimeLimit, kTimeLimit) are counted (time_overflow) and dropped.
void add_base_time(RankTrace& t, Ns base);

// Drops, counted as gpu_activity_outside_trace, the GPU activities with ts 0 when the trace's
// median GPU start is more than 10 minutes from 0 (its base), and those more than 10 minutes
// before the first or after the last host op or runtime call (those at ts 0 aside). Kineto
// writes such rows when CUPTI lost their times: in its per-kernel counter mode the activities
// launched before the profiled steps come with ts 0, one of them ending at the present; kept,
// one kernel was 57 years long and the unlinked ones a quarter of the trace's kernels.
void drop_gpu_activities_outside_trace(RankTrace& t);

}  // namespace chopper::kineto_parser
