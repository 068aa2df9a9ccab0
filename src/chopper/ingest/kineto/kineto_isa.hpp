#pragma once
// The Kineto parser's copies, one per x86-64 level (kineto_parser.inc, compiled by
// kineto_parser_{baseline,v2,v3}.cpp), each in its own namespace; kineto_reader.cpp chooses one
// at run time. Internal to the reader: the public side is KinetoIsa in kineto_reader.hpp.
#include <string>

#include "chopper/base/input.hpp"
#include "chopper/ingest/kineto/kineto_reader.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper::kineto_parser {

// Each reads the whole of src into t (whose file and file_bytes the caller has set). `path`: the
// file src reads, which opt.split opens again for its second reader ("": src is no file).
namespace baseline {
void read(ByteSource& src, const KinetoReadOptions& opt, RankTrace& t, const std::string& path);
}
#if defined(__x86_64__)
namespace v2 {
void read(ByteSource& src, const KinetoReadOptions& opt, RankTrace& t, const std::string& path);
}
namespace v3 {
void read(ByteSource& src, const KinetoReadOptions& opt, RankTrace& t, const std::string& path);
}
#endif

}  // namespace chopper::kineto_parser
