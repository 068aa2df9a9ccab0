#pragma once
// The timeline in Perfetto's native protobuf trace format (`chopper timeline --format perfetto`,
// docs/formats.md, Timeline): the same content as the Chrome-trace JSON (timeline.hpp), encoded as
// proto/perfetto_trace.proto, the subset of Perfetto's TracePacket that it uses.
//
//   - Each rank is one packet sequence (trusted_packet_sequence_id = index + 1): its first packet
//     clears the sequence's incremental state; its process track carries every interned string
//     of the rank (event names, categories, argument names and text values), referred to by iid.
//   - Tracks: per rank a process track (ProcessDescriptor pid = rank + 1: Perfetto keeps pid 0
//     for the idle process; process_name "rank R (device)"), under it one track per JSON thread
//     (hierarchy, GPU streams, host threads, same names) and one counter track per telemetry
//     metric.
//   - Slices: a SLICE_BEGIN / SLICE_END pair each, with the JSON's args as debug annotations; a
//     slice that overlaps a slice of its track without nesting in it goes on a track of its own
//     under the same parent, named "<track> (overlap k)" (a track's slices must nest).
//   - Flows: flow_ids on the slices' begin events: each launch from its runtime call to its GPU
//     activity, each matched collective through its ranks' activities.
//   - Timestamps: the aligned clock in ns (the JSON's base_ns + ts), written as deltas on each
//     rank's incremental clock (a clock snapshot maps it to BOOTTIME, the trace's clock).
//   - The file: every rank's header packets (clock, process track with the rank's interned
//     strings, tracks) first, then every rank's events, so that gzip (zlib, level 6) finds the
//     ranks' string tables, mostly the same names, within its window: they cost about once.
#include <memory>

#include "chopper/base/output_file.hpp"
#include "chopper/report/timeline.hpp"

namespace chopper {

// The Perfetto protobuf encoder, writing to `out` (opened without gzip): the file is gzip'd here
// (zlib, level 6) when `gzip` is set.
std::unique_ptr<TimelineSink> perfetto_timeline_sink(OutputFile& out, bool gzip);

}  // namespace chopper
