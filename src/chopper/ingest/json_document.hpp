#pragma once
// One whole JSON document read with simdjson On-Demand, for the readers of small-to-medium JSON
// outputs (rocprofv3 JSON, CUPTI range-profiler passes): the rest of the source is read after the
// sniffed head into one padded buffer, and the caller's reader is run over it. Damage real files
// show is recovered from, and counted:
//   - invalid UTF-8: the bytes are replaced by '?' ("invalid_utf8"), and the document read again;
//   - a document cut short: it is closed after the last complete element of an array
//     ("truncated_json") and read again;
//   - any other error after some records were read: those records are kept ("json_error").
// Kineto traces themselves are read by ingest/kineto, which streams.
#include <simdjson.h>

#include <functional>
#include <string>
#include <string_view>

#include "chopper/base/diagnostics.hpp"
#include "chopper/base/input.hpp"

namespace chopper {

// The most bytes (decompressed) one document may have: past it, InputError (such a document is
// held whole, and its parse needs as much again).
inline constexpr uint64_t kMaxJsonDocumentBytes = uint64_t{4} << 30;

// `read` reads the document into the caller's state, which it resets first (it may be called more
// than once) and may throw simdjson::simdjson_error; `records` says how many records that state
// holds now. Recoveries are counted in `diags`. Throws InputError naming the file, the byte offset
// and `what` ("rocprofv3 JSON") when nothing could be read.
void read_json_document(ByteSource& src, std::string head, std::string_view what,
                        Diagnostics& diags,
                        const std::function<void(simdjson::ondemand::document&)>& read,
                        const std::function<size_t()>& records);

// For a document cut short: the end of the last element of an array that is complete (a '}' or
// ']' outside strings whose container is an array), and in `closers` the brackets that close
// every container open there. 0 if there is none.
size_t last_complete_element(const char* p, size_t n, std::string& closers);

}  // namespace chopper
