// Counter readers: rocprofv3 counter_collection.csv / kernel_trace.csv / JSON and Chopper's
// device-sampling CSVs, on hand-written files in the exact formats (headers from rocprofv3's
// generateCSV.cpp and the shared documentation examples) and on the shared real files.
#include <gtest/gtest.h>
#include <isa-l/igzip_lib.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/ingest/cupti/cupti_range.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/ingest/rocprof/counter_reader.hpp"
#include "compress_util.hpp"
#include "test_util.hpp"

using namespace chopper;
namespace fs = std::filesystem;

namespace {

using chopper::test::gzip;
using chopper::test::zstd;

CounterTable read(const std::string& text, const std::string& name = "mem.csv") {
  auto src = ByteSource::from_memory(text, name);
  return read_counters(*src);
}

// The current (19-column) counter_collection.csv header.
const char* kCounterHeader19 =
    "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\","
    "\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\","
    "\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Counter_Name\","
    "\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"\n";

std::string row19(int disp, const std::string& agent, const std::string& kernel,
                  const std::string& counter, const std::string& value, long long start = 1000,
                  long long end = 2000) {
  return std::to_string(disp) + "," + std::to_string(disp) + "," + agent +
         ",1,4242,4242,1048576,16,\"" + kernel + "\",64,0,0,8,0,16,\"" + counter + "\"," + value +
         "," + std::to_string(start) + "," + std::to_string(end) + "\n";
}

const char* kKernelTraceHeader =
    "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\","
    "\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\","
    "\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\","
    "\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\n";

// Hands out at most `step` bytes per read(), so lines straddle refills.
class Trickle : public ByteSource {
 public:
  Trickle(std::unique_ptr<ByteSource> inner, size_t step) : inner_(std::move(inner)), step_(step) {
    name_ = inner_->name();
  }
  size_t read(char* dst, size_t cap) override { return inner_->read(dst, std::min(cap, step_)); }
  uint64_t raw_offset() const override { return inner_->raw_offset(); }
  uint64_t raw_size() const override { return inner_->raw_size(); }

 private:
  std::unique_ptr<ByteSource> inner_;
  size_t step_;
};

}  // namespace

TEST(CounterSniff, Formats) {
  EXPECT_EQ(sniff_counters(kCounterHeader19), "rocprofv3-counter-csv");
  EXPECT_EQ(sniff_counters(kKernelTraceHeader), "rocprofv3-kernel-trace-csv");
  EXPECT_EQ(sniff_counters("{\"rocprofiler-sdk-tool\":[{\"metadata\":{}}]}"), "rocprofv3-json");
  EXPECT_EQ(sniff_counters("  {\n  \"rocprofiler-sdk-tool\": ["), "rocprofv3-json");
  EXPECT_EQ(sniff_counters("kernel_name,start_ns,end_ns,duration_ns,agent_id,queue_id,"
                           "correlation_id\n"),
            "chopper-kernel-csv");
  EXPECT_EQ(sniff_counters("timestamp_ns,counter_name,counter_value,agent_id,dimension_xcc\n"),
            "chopper-counter-samples-csv");
  // A header cut by the sniffing window still sniffs on what it has.
  EXPECT_EQ(sniff_counters(std::string_view(kCounterHeader19).substr(0, 260)),
            "rocprofv3-counter-csv");
  // A Kineto JSON may hold CUPTI range-profiler counters: known only once it is read.
  EXPECT_EQ(sniff_counters("{\"traceEvents\": []}"), "cupti-range-json");
  EXPECT_EQ(sniff_counters("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": ["),
            "cupti-range-json");
  EXPECT_EQ(sniff_counters("timestamp, name, power.draw [W]\n"), "");
  EXPECT_EQ(sniff_counters(""), "");
}

TEST(CounterCsv, LongFormatGathersOneDispatch) {
  // Dispatch 7 has three counters on three rows; dispatch 8 has one. Rows of one dispatch need not
  // be adjacent. Expect two rows, three columns in order of first appearance.
  std::string text = kCounterHeader19;
  text += row19(7, "\"Agent 4\"", "gemm_kernel(float*, int)", "SQ_WAVES", "16384", 100, 250);
  text += row19(7, "\"Agent 4\"", "gemm_kernel(float*, int)", "GRBM_GUI_ACTIVE", "2.5e3", 100, 250);
  text += row19(8, "\"Agent 5\"", "other", "SQ_WAVES", "8", 300, 400);
  text += row19(7, "\"Agent 4\"", "gemm_kernel(float*, int)", "TCC_HIT_sum", "12", 100, 250);
  CounterTable t = read(text);
  EXPECT_EQ(t.format, "rocprofv3-counter-csv");
  EXPECT_EQ(t.clock, ClockDomain::kMonotonic);
  ASSERT_EQ(t.size(), 2u);
  ASSERT_EQ(t.counter_names.size(), 3u);
  EXPECT_EQ(t.counter_names[0], "SQ_WAVES");
  EXPECT_EQ(t.counter_names[1], "GRBM_GUI_ACTIVE");
  EXPECT_EQ(t.counter_names[2], "TCC_HIT_sum");
  EXPECT_EQ(t.dispatch_id[0], 7);
  EXPECT_EQ(t.correlation_id[0], 7);
  EXPECT_EQ(t.agent[0], 4);  // "Agent 4"
  EXPECT_EQ(t.agent[1], 5);
  EXPECT_EQ(t.pid[0], 4242);
  EXPECT_EQ(t.kernel[0], "gemm_kernel(float*, int)");  // the comma inside quotes stays
  EXPECT_EQ(t.start_ns[0], 100);
  EXPECT_EQ(t.end_ns[0], 250);
  EXPECT_DOUBLE_EQ(t.value(0, 0), 16384);
  EXPECT_DOUBLE_EQ(t.value(0, 1), 2500);
  EXPECT_DOUBLE_EQ(t.value(0, 2), 12);
  EXPECT_DOUBLE_EQ(t.value(1, 0), 8);
  EXPECT_TRUE(std::isnan(t.value(1, 1)));  // not collected for dispatch 8
  EXPECT_TRUE(std::isnan(t.value(1, 2)));
  EXPECT_EQ(t.counter_index("TCC_HIT_sum"), 2);
  EXPECT_TRUE(t.diagnostics.empty());
}

TEST(CounterCsv, RepeatedCounterOfOneDispatchIsSummed) {
  // rocprofv3 sums a counter's instances before writing (one row per dispatch x counter); rows
  // that still repeat (per-XCD rows, appended files) are summed the same way and counted.
  std::string text = kCounterHeader19;
  text += row19(1, "2", "k", "TCC_HIT", "10");
  text += row19(1, "2", "k", "TCC_HIT", "32");
  CounterTable t = read(text);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_DOUBLE_EQ(t.value(0, 0), 42);
  EXPECT_EQ(t.diagnostics.count("counter_repeated_summed"), 1u);
}

TEST(CounterCsv, OldLayoutWithoutTimestampsAndKernelId) {
  // The 2024 15-column layout of docs_kernel_names.csv: no Kernel_Id, no timestamps, numeric agent.
  std::string text =
      "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\","
      "\"Grid_Size\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\","
      "\"VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\"\n"
      "4,4,1,1,36499,36499,1048576,\"divide_kernel(float*, float const*, float const*, int, int)\","
      "64,0,0,12,16,\"SQ_WAVES\",16384\n";
  CounterTable t = read(text);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t.agent[0], 1);
  EXPECT_EQ(t.start_ns[0], kNoTime);
  EXPECT_EQ(t.end_ns[0], kNoTime);
  EXPECT_EQ(t.kernel[0], "divide_kernel(float*, float const*, float const*, int, int)");
}

TEST(CounterCsv, MissingColumnsAndEmptyValues) {
  // Only the columns the reader needs: Correlation_Id (no Dispatch_Id), Counter_Name/Value.
  std::string text =
      "Correlation_Id,Counter_Name,Counter_Value\n"
      "5,SQ_WAVES,3\n"
      "5,SQ_BUSY_CYCLES,\n"  // empty value: counted, the cell stays NaN
      ",SQ_WAVES,1\n"        // no id at all: skipped
      "6,,7\n"               // empty counter name: the dispatch row exists, no cell
      "6,SQ_WAVES,abc\n"     // not a number
      "7,SQ_WAVES,nan\n";    // not finite
  CounterTable t = read(text);
  ASSERT_EQ(t.size(), 3u);  // correlations 5, 6, 7
  EXPECT_EQ(t.dispatch_id[0], -1);
  EXPECT_EQ(t.correlation_id[0], 5);
  EXPECT_EQ(t.agent[0], -1);
  EXPECT_EQ(t.pid[0], -1);
  EXPECT_EQ(t.kernel[0], "");
  EXPECT_DOUBLE_EQ(t.value(0, 0), 3);
  EXPECT_TRUE(std::isnan(t.value(0, 1)));
  EXPECT_TRUE(std::isnan(t.value(1, 0)));
  EXPECT_EQ(t.diagnostics.count("empty_counter_value"), 1u);
  EXPECT_EQ(t.diagnostics.count("missing_dispatch_id"), 1u);
  EXPECT_EQ(t.diagnostics.count("empty_counter_name"), 1u);
  EXPECT_EQ(t.diagnostics.count("bad_counter_value"), 2u);
}

TEST(CounterCsv, TextAndNumericAgentIds) {
  std::string text = kCounterHeader19;
  text += row19(1, "\"Agent 12\"", "k", "SQ_WAVES", "1");
  text += row19(2, "3", "k", "SQ_WAVES", "1");
  text += row19(3, "\"GPU 0\"", "k", "SQ_WAVES", "1");
  text += row19(4, "\"Agent x\"", "k", "SQ_WAVES", "1");
  CounterTable t = read(text);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t.agent[0], 12);
  EXPECT_EQ(t.agent[1], 3);
  EXPECT_EQ(t.agent[2], 0);
  EXPECT_EQ(t.agent[3], -1);
  EXPECT_EQ(t.diagnostics.count("bad_agent_id"), 1u);
}

TEST(CounterCsv, RepeatedHeaderBadRowsAndCrlf) {
  std::string body = row19(1, "2", "k", "SQ_WAVES", "1") + row19(2, "2", "k", "SQ_WAVES", "2");
  std::string text = std::string(kCounterHeader19) + body + kCounterHeader19 +
                     row19(3, "2", "k", "SQ_WAVES", "3") + "1,2,3\n" + "\"unterminated,1\n";
  // CRLF line ends read the same.
  std::string crlf;
  for (char c : text) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  for (const std::string& in : {text, crlf}) {
    CounterTable t = read(in);
    ASSERT_EQ(t.size(), 3u);
    EXPECT_DOUBLE_EQ(t.value(2, 0), 3);
    EXPECT_EQ(t.diagnostics.count("repeated_header"), 1u);
    EXPECT_EQ(t.diagnostics.count("bad_field_count"), 1u);
    EXPECT_EQ(t.diagnostics.count("bad_quoting"), 1u);
    ASSERT_FALSE(t.diagnostics.entries().empty());
    // Examples name the line: the short row is line 6 (header, 2 rows, header, 1 row).
    bool found = false;
    for (const auto& e : t.diagnostics.entries())
      if (e.kind == "bad_field_count") found = e.examples.at(0).rfind("line 6: 1,2,3", 0) == 0;
    EXPECT_TRUE(found);
  }
}

TEST(CounterCsv, TruncatedAtEveryOffsetKeepsCompleteRows) {
  std::string text = kCounterHeader19;
  for (int d = 1; d <= 4; ++d)
    text += row19(d, "\"Agent 2\"", "kern<1, 2>(int)", "SQ_WAVES", "100");
  const size_t header_len = std::string(kCounterHeader19).size();
  for (size_t cut = header_len; cut <= text.size(); ++cut) {
    std::string part = text.substr(0, cut);
    CounterTable t = read(part);
    // Complete rows: those whose '\n' is inside the cut.
    size_t complete = 0;
    for (size_t i = header_len; i < cut; ++i) complete += text[i] == '\n';
    bool partial = cut > 0 && text[cut - 1] != '\n';
    // A cut inside the last field (End_Timestamp) leaves a full field count: kept and counted.
    EXPECT_GE(t.size(), complete) << "cut " << cut;
    EXPECT_LE(t.size(), complete + 1) << "cut " << cut;
    if (partial) {
      EXPECT_EQ(t.diagnostics.count("truncated_last_line") +
                    t.diagnostics.count("unterminated_last_line") +
                    t.diagnostics.count("bad_quoting"),
                1u)
          << "cut " << cut;
      if (t.size() == complete + 1) {
        EXPECT_EQ(t.diagnostics.count("unterminated_last_line"), 1u);
      }
    } else {
      EXPECT_EQ(t.size(), complete);
      EXPECT_TRUE(t.diagnostics.empty()) << "cut " << cut;
    }
  }
  // A header cut short is still a counter file with no rows.
  EXPECT_EQ(read(std::string(kCounterHeader19).substr(0, 300)).size(), 0u);
}

TEST(CounterCsv, CompressedInputReadsTheSame) {
  std::string text = kCounterHeader19;
  for (int d = 1; d <= 50; ++d) text += row19(d, "\"Agent 2\"", "k", "SQ_WAVES", std::to_string(d));
  for (const std::string& packed : {gzip(text), zstd(text)}) {
    CounterTable t = read(packed, "counters.csv.gz");
    ASSERT_EQ(t.size(), 50u);
    EXPECT_DOUBLE_EQ(t.value(49, 0), 50);
  }
}

TEST(CounterCsv, SmallReadsGiveTheSameTable) {
  std::string text = kCounterHeader19;
  for (int d = 1; d <= 20; ++d)
    text += row19(d, "\"Agent 2\"", "k<1, 2>", d % 2 ? "SQ_WAVES" : "TCC_HIT", std::to_string(d));
  CounterTable whole = read(text);
  for (size_t step : {1, 2, 7, 64}) {
    Trickle src(ByteSource::from_memory(text, "t.csv"), step);
    CounterTable t = read_counters(src);
    ASSERT_EQ(t.size(), whole.size()) << step;
    EXPECT_EQ(t.kernel, whole.kernel);
    EXPECT_EQ(t.counter_names, whole.counter_names);
    EXPECT_EQ(t.dispatch_id, whole.dispatch_id);
    for (size_t i = 0; i < t.values.size(); ++i)
      EXPECT_TRUE(t.values[i] == whole.values[i] ||
                  (std::isnan(t.values[i]) && std::isnan(whole.values[i])));
  }
}

TEST(CounterCsv, NotCounterFiles) {
  // A Kineto JSON trace, a telemetry CSV, an empty file and binary bytes are not counter files.
  EXPECT_THROW(read(test::trace_of("{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":1}")),
               NotATraceError);
  EXPECT_THROW(read("timestamp, name, pci.bus_id, power.draw [W]\n2024/01/15 10:23:45.123, "
                    "NVIDIA H100, 00000000:18:00.0, 312.5 W\n"),
               NotATraceError);
  EXPECT_THROW(read(""), NotATraceError);
  EXPECT_THROW(read(std::string("\x00\x01\x02\xff", 4)), NotATraceError);
  EXPECT_THROW(read("[{\"rocprofiler-sdk-tool\": 1}]"), NotATraceError);
  try {
    read("a,b,c\n1,2,3\n", "telemetry.csv");
    FAIL();
  } catch (const NotATraceError& e) {
    EXPECT_NE(std::string(e.what()).find("telemetry.csv"), std::string::npos);
  }
}

TEST(CounterKernelTrace, ReadAndJoin) {
  std::string kt = kKernelTraceHeader;
  kt +=
      "\"KERNEL_DISPATCH\",\"Agent 4\",1,0,69,1,16,\"add(float*, int)\",1451,8819330200067564,"
      "8819330200116308,0,0,8,0,16,64,1,1,1024,1024,1\n";
  kt +=
      "\"KERNEL_DISPATCH\",\"Agent 4\",1,0,69,2,19,\"sub(float*, int)\",1459,8819330200120456,"
      "8819330200223721,0,0,8,0,16,64,1,1,1024,1024,1\n";
  CounterTable trace = read(kt);
  EXPECT_EQ(trace.format, "rocprofv3-kernel-trace-csv");
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_TRUE(trace.counter_names.empty());
  EXPECT_TRUE(trace.values.empty());
  EXPECT_EQ(trace.dispatch_id[1], 2);
  EXPECT_EQ(trace.correlation_id[1], 1459);
  EXPECT_EQ(trace.agent[1], 4);
  EXPECT_EQ(trace.start_ns[0], 8819330200067564);
  EXPECT_EQ(trace.end_ns[0], 8819330200116308);

  // Counters without timestamps (the 16-column documented layout): dispatch 1 and 2 match by
  // Dispatch_Id (their Correlation_Id differ from the trace's), dispatch 3 is not in the trace,
  // and dispatch 2's kernel name differs.
  std::string cc =
      "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\","
      "\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\","
      "\"Scratch_Size\",\"VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\"\n"
      "1,1,4,1,7,7,1048576,16,\"add(float*, int)\",64,0,0,8,16,\"SQ_WAVES\",16384\n"
      "2,2,4,1,7,7,1048576,19,\"sub_renamed\",64,0,0,8,16,\"SQ_WAVES\",16384\n"
      "3,3,4,1,7,7,1048576,19,\"mul\",64,0,0,8,16,\"SQ_WAVES\",16384\n";
  CounterTable c = read(cc);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c.start_ns[0], kNoTime);
  join_kernel_trace(c, trace);
  EXPECT_EQ(c.start_ns[0], 8819330200067564);
  EXPECT_EQ(c.end_ns[0], 8819330200116308);
  EXPECT_EQ(c.start_ns[1], 8819330200120456);
  EXPECT_EQ(c.start_ns[2], kNoTime);
  EXPECT_EQ(c.diagnostics.count("join_unmatched"), 1u);
  EXPECT_EQ(c.diagnostics.count("join_kernel_mismatch"), 1u);

  // Without dispatch ids on the counter side the join falls back to correlation ids.
  CounterTable byc = read("Correlation_Id,Counter_Name,Counter_Value\n1459,SQ_WAVES,1\n");
  join_kernel_trace(byc, trace);
  EXPECT_EQ(byc.start_ns[0], 8819330200120456);
  EXPECT_EQ(byc.kernel[0], "sub(float*, int)");  // filled in where missing
  EXPECT_EQ(byc.dispatch_id[0], 2);
}

// rocprofv3 writes one <pid>_kernel_trace.csv and <pid>_counter_collection.csv per process, and
// dispatch ids restart in every process: each counter file must be timed by its own process's
// kernel trace, never by another's (both processes have a dispatch 1 here, 1000 ns apart).
TEST(CounterKernelTrace, EachProcessTimedByItsOwnTrace) {
  const fs::path dir = fs::temp_directory_path() / ("chopper_kt_" + std::to_string(::getpid()));
  fs::create_directories(dir / "counters");
  auto write = [&](const std::string& name, const std::string& text) {
    FILE* f = std::fopen((dir / "counters" / name).c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  };
  for (int pid : {4001, 4002}) {
    const long long t0 = 1000000 + (pid - 4001) * 1000;
    write(std::to_string(pid) + "_kernel_trace.csv",
          std::string(kKernelTraceHeader) + "\"KERNEL_DISPATCH\",\"Agent 4\",1,0,69,1,16,\"k\",7," +
              std::to_string(t0) + "," + std::to_string(t0 + 500) +
              ",0,0,8,0,16,64,1,1,1024,1024,1\n");
    write(std::to_string(pid) + "_counter_collection.csv",
          "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\","
          "\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\","
          "\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"SGPR_Count\",\"Counter_Name\","
          "\"Counter_Value\"\n7,1,4,1," +
              std::to_string(pid) + ",69,1048576,16,\"k\",64,0,0,8,16,\"SQ_WAVES\",1\n");
  }
  HardwareFiles hf = load_hardware({dir.string()}, {}, {}, 2);
  ASSERT_TRUE(hf.errors.empty()) << hf.errors.front();
  EXPECT_TRUE(hf.skipped.empty());
  ASSERT_EQ(hf.counters.size(), 2u);
  for (const CounterTable& c : hf.counters) {
    ASSERT_EQ(c.size(), 1u);
    const long long want = c.file.find("4001_") != std::string::npos ? 1000000 : 1001000;
    EXPECT_EQ(c.start_ns[0], want) << c.file;
    EXPECT_EQ(c.end_ns[0], want + 500) << c.file;
  }
  fs::remove_all(dir);
}

TEST(CounterKernelTrace, BadRows) {
  std::string kt = kKernelTraceHeader;
  kt += "\"KERNEL_DISPATCH\",1,1,0,69,1,16,\"a\",10,100,200,0,0,8,0,16,64,1,1,1024,1024,1\n";
  kt += "\"KERNEL_DISPATCH\",1,1,0,69,2,16,\"b\",11,,200,0,0,8,0,16,64,1,1,1024,1024,1\n";
  kt += "\"KERNEL_DISPATCH\",1,1,0,69,1,16,\"a\",10,100,200,0,0,8,0,16,64,1,1,1024,1024,1\n";
  kt += "\"KERNEL_DISPATCH\",1,1,0,69,3,16,\"c\",12,300,250,0,0,8,0,16,64,1,1,1024,1024,1\n";
  CounterTable t = read(kt);
  EXPECT_EQ(t.size(), 2u);  // dispatch 1 and 3
  EXPECT_EQ(t.diagnostics.count("bad_timestamp"), 1u);
  EXPECT_EQ(t.diagnostics.count("duplicate_dispatch"), 1u);
  EXPECT_EQ(t.diagnostics.count("end_before_start"), 1u);
}

namespace {
// A small rocprofv3 JSON in the layout of generateJSON.cpp: one process, two agents, a counter
// info list, kernel symbols, one counter_collection record (two instances of one counter and one
// other counter) and two kernel_dispatch records. Keys are in rocprofv3's order except that
// buffer_records comes before kernel_symbols, to show that names resolve at the end.
const char* kJson = R"JSON({"rocprofiler-sdk-tool":[{
 "metadata":{"pid":908,"init_time":1,"fini_time":2},
 "agents":[{"id":{"handle":37944},"type":1,"node_id":0,"logical_node_id":0,"name":"cpu"},
           {"id":{"handle":37946},"type":2,"node_id":2,"logical_node_id":2,"name":"gfx950"}],
 "counters":[{"agent_id":{"handle":37946},"id":{"handle":17},"is_constant":0,"is_derived":0,
              "name":"SQ_WAVES","description":"waves","block":"SQ","expression":""},
             {"agent_id":{"handle":37946},"id":{"handle":23},"name":"GRBM_GUI_ACTIVE"}],
 "strings":{"buffer_records":[{"kind":"NONE","operations":[]}]},
 "callback_records":{"counter_collection":[
   {"thread_id":908,"dispatch_data":{"size":64,"correlation_id":{"internal":5,"external":0},
     "dispatch_info":{"size":72,"agent_id":{"handle":37946},"queue_id":{"handle":16},
       "kernel_id":8,"dispatch_id":2,"private_segment_size":0,"group_segment_size":0,
       "workgroup_size":{"x":512,"y":1,"z":1},"grid_size":{"x":512,"y":1,"z":1}}},
    "records":[{"counter_id":{"handle":17},"value":100},{"counter_id":{"handle":17},"value":28},
               {"counter_id":{"handle":23},"value":5.5e3}],
    "stream_id":{"handle":0}}]},
 "buffer_records":{"kernel_dispatch":[
   {"size":184,"kind":11,"operation":2,"thread_id":908,"correlation_id":{"internal":4,"external":0},
    "start_timestamp":63857982592000,"end_timestamp":63857982594840,
    "dispatch_info":{"size":72,"agent_id":{"handle":37946},"queue_id":{"handle":16},"kernel_id":9,
      "dispatch_id":1,"workgroup_size":{"x":512,"y":1,"z":1},"grid_size":{"x":512,"y":1,"z":1}},
    "stream_id":{"handle":0}},
   {"size":184,"kind":11,"operation":2,"thread_id":908,"correlation_id":{"internal":5,"external":0},
    "start_timestamp":63857982595000,"end_timestamp":63857982599000,
    "dispatch_info":{"size":72,"agent_id":{"handle":37946},"queue_id":{"handle":16},"kernel_id":8,
      "dispatch_id":2},"stream_id":{"handle":0}}],
  "hip_api":[],"memory_copy":[]},
 "kernel_symbols":[{"kernel_id":8,"kernel_name":"_Z4gemmv.kd","formatted_kernel_name":"gemm()",
                    "demangled_kernel_name":"gemm().kd","truncated_kernel_name":"gemm"},
                   {"kernel_id":9,"kernel_name":"copy.kd","formatted_kernel_name":"",
                    "demangled_kernel_name":"copy_demangled"}]
}]}
)JSON";
}  // namespace

TEST(CounterJson, DispatchesAndCounters) {
  CounterTable t = read(kJson, "results.json");
  EXPECT_EQ(t.format, "rocprofv3-json");
  ASSERT_EQ(t.size(), 2u);
  // Row 0 is dispatch 2 (its counter record came first), row 1 dispatch 1.
  EXPECT_EQ(t.dispatch_id[0], 2);
  EXPECT_EQ(t.correlation_id[0], 5);
  EXPECT_EQ(t.kernel[0], "gemm()");          // formatted_kernel_name
  EXPECT_EQ(t.kernel[1], "copy_demangled");  // formatted empty: demangled
  EXPECT_EQ(t.agent[0], 2);                  // node_id of handle 37946
  EXPECT_EQ(t.pid[0], 908);
  EXPECT_EQ(t.start_ns[0], 63857982595000);  // from the kernel_dispatch record
  EXPECT_EQ(t.end_ns[1], 63857982594840);
  ASSERT_EQ(t.counter_names.size(), 2u);
  int waves = t.counter_index("SQ_WAVES");
  int active = t.counter_index("GRBM_GUI_ACTIVE");
  ASSERT_GE(waves, 0);
  ASSERT_GE(active, 0);
  EXPECT_DOUBLE_EQ(t.value(0, static_cast<size_t>(waves)), 128);  // 100 + 28: instances summed
  EXPECT_DOUBLE_EQ(t.value(0, static_cast<size_t>(active)), 5500);
  EXPECT_TRUE(std::isnan(t.value(1, static_cast<size_t>(waves))));
  // Summing instances inside one record is rocprofv3's own rule (generateCSV.cpp), still counted.
  EXPECT_EQ(t.diagnostics.count("counter_repeated_summed"), 1u);
}

TEST(CounterJson, TruncatedKeepsCompleteRecords) {
  std::string full = kJson;
  // Cut right after the first kernel_dispatch record's closing brace: dispatch 1 is complete.
  size_t at = full.find("\"stream_id\":{\"handle\":0}},\n   {\"size\":184");
  ASSERT_NE(at, std::string::npos);
  size_t cut = full.find("}}", at) + 2;
  for (size_t c : {cut, cut + 5, cut + 40}) {
    CounterTable t = read(full.substr(0, c), "results.json");
    EXPECT_GE(t.size(), 2u) << c;  // the counter record's dispatch 2 and dispatch 1
    EXPECT_EQ(t.diagnostics.count("truncated_json"), 1u) << c;
  }
  // A document cut before any record is an InputError naming the file.
  try {
    read(full.substr(0, 60), "results.json");
    FAIL();
  } catch (const NotATraceError&) {
    FAIL() << "a cut rocprofv3 JSON is a counter file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("results.json"), std::string::npos);
  }
}

TEST(CounterChopper, KernelTraces) {
  // Assumed from the documented column list: names unquoted (commas rejoined), agent_id numeric.
  std::string text =
      "kernel_name,start_ns,end_ns,duration_ns,agent_id,queue_id,correlation_id\n"
      "Cijk_Ailk_Bljk_BBS_BH,1000,1500,500,2,0,17\n"
      "void foo<float, 2>(float*, int),1600,1700,100,2,0,18\n"
      "\"quoted, name\",1800,1900,100,2,0,19\n"
      "bad,xx,1,1,2,0,20\n";
  CounterTable t = read(text, "kernel_traces_rank0.csv");
  EXPECT_EQ(t.format, "chopper-kernel-csv");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.kernel[1], "void foo<float, 2>(float*, int)");
  EXPECT_EQ(t.kernel[2], "quoted, name");
  EXPECT_EQ(t.correlation_id[1], 18);
  EXPECT_EQ(t.start_ns[1], 1600);
  EXPECT_EQ(t.end_ns[1], 1700);
  EXPECT_EQ(t.agent[0], 2);
  EXPECT_EQ(t.diagnostics.count("bad_timestamp"), 1u);
}

TEST(CounterChopper, CounterSamplesSumInstances) {
  // Two XCC instances per counter per sample, cumulative values: one row per (agent, time),
  // instances summed; values stay cumulative (the table says so).
  std::string text =
      "timestamp_ns,counter_name,counter_value,agent_id,xcc\n"
      "1000,GRBM_GUI_ACTIVE,10,2,0\n"
      "1000,GRBM_GUI_ACTIVE,12,2,1\n"
      "1000,SQ_BUSY_CYCLES,5,2,0\n"
      "2000,GRBM_GUI_ACTIVE,30,2,0\n"
      "2000,GRBM_GUI_ACTIVE,33,2,1\n"
      "2000,GRBM_GUI_ACTIVE,1,3,0\n";
  CounterTable t = read(text, "counter_samples_rank0.csv");
  EXPECT_EQ(t.format, "chopper-counter-samples-csv");
  EXPECT_TRUE(t.cumulative);
  ASSERT_EQ(t.size(), 3u);  // (2,1000), (2,2000), (3,2000)
  EXPECT_EQ(t.start_ns[0], 1000);
  EXPECT_EQ(t.end_ns[0], 1000);
  EXPECT_DOUBLE_EQ(t.value(0, 0), 22);
  EXPECT_DOUBLE_EQ(t.value(0, 1), 5);
  EXPECT_DOUBLE_EQ(t.value(1, 0), 63);
  EXPECT_TRUE(std::isnan(t.value(1, 1)));
  EXPECT_EQ(t.agent[2], 3);
  EXPECT_DOUBLE_EQ(t.value(2, 0), 1);
  EXPECT_TRUE(t.diagnostics.empty());  // summing instances is the format's rule, not an anomaly
}

// Real files. Expected numbers were counted independently with Python's csv and json modules:
//   docs_counter_collection.csv: 7 data rows, 7 distinct Dispatch_Id (1 2 5 9 13 3 6), one
//     counter SQ_WAVES = 16384 each (sum 114688), a trailing blank line;
//   docs_kernel_trace.csv: 7 dispatches, all 7 counter dispatches match by Dispatch_Id with the
//     same kernel names; dispatch 1 runs 8819330200067564..8819330200116308;
//   tracelens_mi350x_results.json.gz: 43915 kernel_dispatch records, 43915 distinct dispatch ids,
//     all on agent handle 37946 (node_id 2), no counter records; the first is dispatch 1
//     __amd_rocclr_copyBuffer 63857982592000..63857982594840, the last dispatch 43915
//     ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>); sum of durations 4441741378 ns.
TEST(CounterReal, DocsCounterCollectionAndKernelTrace) {
  if (!test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real counter-file test skipped";
  CounterTable c =
      read_counters_file(test::shared_path("traces/rocprofv3/docs_counter_collection.csv"));
  ASSERT_EQ(c.size(), 7u);
  ASSERT_EQ(c.counter_names.size(), 1u);
  EXPECT_EQ(c.counter_names[0], "SQ_WAVES");
  double sum = 0;
  for (size_t r = 0; r < c.size(); ++r) sum += c.value(r, 0);
  EXPECT_DOUBLE_EQ(sum, 114688);
  EXPECT_TRUE(c.diagnostics.empty());
  CounterTable k = read_counters_file(test::shared_path("traces/rocprofv3/docs_kernel_trace.csv"));
  ASSERT_EQ(k.size(), 7u);
  join_kernel_trace(c, k);
  EXPECT_TRUE(c.diagnostics.empty());
  for (size_t r = 0; r < c.size(); ++r) EXPECT_NE(c.start_ns[r], kNoTime);
  EXPECT_EQ(c.dispatch_id[0], 1);
  EXPECT_EQ(c.start_ns[0], 8819330200067564);
  EXPECT_EQ(c.end_ns[0], 8819330200116308);
}

TEST(CounterReal, RocprofJson) {
  if (!test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real rocprofv3 JSON test skipped";
  CounterTable t =
      read_counters_file(test::shared_path("traces/rocprofv3/tracelens_mi350x_results.json.gz"));
  EXPECT_EQ(t.format, "rocprofv3-json");
  ASSERT_EQ(t.size(), 43915u);
  EXPECT_TRUE(t.counter_names.empty());
  EXPECT_TRUE(t.diagnostics.empty());
  EXPECT_EQ(t.dispatch_id[0], 1);
  EXPECT_EQ(t.kernel[0], "__amd_rocclr_copyBuffer");
  EXPECT_EQ(t.start_ns[0], 63857982592000);
  EXPECT_EQ(t.end_ns[0], 63857982594840);
  EXPECT_EQ(t.dispatch_id.back(), 43915);
  EXPECT_EQ(t.correlation_id.back(), 43915);
  EXPECT_EQ(t.kernel.back(), "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)");
  int64_t total = 0;
  for (size_t r = 0; r < t.size(); ++r) {
    EXPECT_EQ(t.agent[r], 2);
    EXPECT_EQ(t.pid[r], 908);
    total += t.end_ns[r] - t.start_ns[r];
  }
  EXPECT_EQ(total, 4441741378);
}

// CUPTI range-profiler passes as Kineto writes them (CuptiRangeProfiler.cpp: one complete event
// per kernel, cat cuda_profiler_range, name = the kernel, pid = the device, metrics in args, ts/dur
// splitting the span evenly).
TEST(CounterCupti, RangesInFileOrderWithoutTimes) {
  const std::string doc =
      "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 3},\n"
      "  \"traceEvents\": [\n"
      "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 7, \"tid\": 7, "
      "\"ts\": 5, \"dur\": 9, \"args\": {\"External id\": 1}},\n"
      "  {\"ph\": \"X\", \"cat\": \"cuda_profiler_range\", \"name\": \"gemm_a\", \"pid\": 2, "
      "\"tid\": 0, \"ts\": 100, \"dur\": 50, \"args\": {\"gpc__cycles_elapsed.max\": 1980000, "
      "\"sm__ops_path_tensor_src_bf16_dst_fp32.sum\": 2.5e11}},\n"
      // args before cat: read once the event is known to be a range
      "  {\"ph\": \"X\", \"args\": {\"gpc__cycles_elapsed.max\": 990000, \"note\": \"x\"}, "
      "\"cat\": \"cuda_profiler_range\", \"name\": \"gemm_a\", \"pid\": \"2\", \"ts\": 150, "
      "\"dur\": 50},\n"
      "  {\"ph\": \"i\", \"cat\": \"cuda_profiler_range\", \"name\": \"odd\", \"pid\": 2, "
      "\"ts\": 200, \"s\": \"t\"},\n"
      "  {\"ph\": \"X\", \"cat\": \"cuda_profiler_range\", \"name\": \"__missing__\", \"pid\": 2, "
      "\"tid\": 0, \"ts\": 200, \"dur\": 50, \"args\": {}}\n"
      "  ],\n  \"traceName\": \"pass.json\"\n}\n";
  CounterTable t = read(doc, "pass.json");
  EXPECT_EQ(t.format, "cupti-range-json");
  EXPECT_EQ(t.rank, 3);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.kernel[0], "gemm_a");
  EXPECT_EQ(t.kernel[1], "gemm_a");
  EXPECT_EQ(t.kernel[2], "__missing__");
  for (size_t r = 0; r < t.size(); ++r) {
    EXPECT_EQ(t.agent[r], 2);
    EXPECT_EQ(t.pid[r], -1);  // a device, not a process
    EXPECT_EQ(t.start_ns[r], kNoTime);
    EXPECT_EQ(t.dispatch_id[r], static_cast<int64_t>(r));
  }
  const int cyc = t.counter_index("gpc__cycles_elapsed.max");
  const int ops = t.counter_index("sm__ops_path_tensor_src_bf16_dst_fp32.sum");
  ASSERT_GE(cyc, 0);
  ASSERT_GE(ops, 0);
  EXPECT_EQ(t.value(0, static_cast<size_t>(cyc)), 1980000);
  EXPECT_EQ(t.value(0, static_cast<size_t>(ops)), 2.5e11);
  EXPECT_EQ(t.value(1, static_cast<size_t>(cyc)), 990000);
  EXPECT_TRUE(std::isnan(t.value(1, static_cast<size_t>(ops))));
  EXPECT_TRUE(std::isnan(t.value(2, static_cast<size_t>(cyc))));
  EXPECT_EQ(t.diagnostics.count("bad_counter_value"), 1u);   // "note": "x"
  EXPECT_EQ(t.diagnostics.count("range_not_complete"), 1u);  // the ph "i" event
}

TEST(CounterCupti, TruncatedAndCompressedPasses) {
  std::string doc = "{\"distributedInfo\": {\"rank\": 1}, \"traceEvents\": [";
  for (int i = 0; i < 40; ++i)
    doc += std::string(i ? "," : "") + "{\"ph\": \"X\", \"cat\": \"cuda_profiler_range\", " +
           "\"name\": \"k" + std::to_string(i % 3) +
           "\", \"pid\": 0, \"tid\": 0, \"ts\": " + std::to_string(i * 10) +
           ", \"dur\": 10, \"args\": {\"gpc__cycles_elapsed.max\": " + std::to_string(1000 + i) +
           "}}";
  const std::string whole = doc + "]}";
  const CounterTable full = read(whole, "pass.json");
  ASSERT_EQ(full.size(), 40u);
  EXPECT_TRUE(full.diagnostics.empty());
  const CounterTable gz = read(gzip(whole), "pass.json.gz");
  EXPECT_EQ(gz.kernel, full.kernel);
  EXPECT_EQ(gz.values, full.values);
  // Cut inside the 31st event: the 30 complete ones are kept, and the cut is said.
  const CounterTable part = read(doc.substr(0, doc.find("\"ts\": 300")), "pass.json");
  EXPECT_EQ(part.size(), 30u);
  EXPECT_EQ(part.diagnostics.count("truncated_json"), 1u);
  for (size_t r = 0; r < part.size(); ++r) EXPECT_EQ(part.kernel[r], full.kernel[r]);
  // A Kineto trace without range events is not a counter file, and says what it is.
  try {
    read(
        "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, "
        "\"dur\": 1}]}",
        "rank0.json");
    FAIL();
  } catch (const NotATraceError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda_profiler_range"), std::string::npos);
  }
}

TEST(CounterReal, CuptiRangeProfilerPass) {
  if (!test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real CUPTI range-profiler test skipped";
  // HTA's cupti_profiler test trace (A100): 77 kernels with the nine SASS FLOP instruction
  // counters Kineto's kineto__cuda_core_flops expands to. Expected values counted independently
  // (Python json over the same file): 77 ranges, one named __missing__, all on device 0,
  // Σ ffma = 39,142,369,720.
  CounterTable t =
      read_counters_file(test::shared_path("traces/kineto/hta_a100_cupti_counters.json.gz"));
  EXPECT_EQ(t.format, "cupti-range-json");
  EXPECT_EQ(t.rank, 0);
  ASSERT_EQ(t.size(), 77u);
  EXPECT_EQ(t.counter_names.size(), 9u);
  EXPECT_TRUE(t.diagnostics.empty());
  EXPECT_EQ(std::count(t.kernel.begin(), t.kernel.end(), "__missing__"), 1);
  const int ffma = t.counter_index("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum");
  ASSERT_GE(ffma, 0);
  double sum = 0;
  for (size_t r = 0; r < t.size(); ++r) {
    EXPECT_EQ(t.agent[r], 0);
    sum += t.value(r, static_cast<size_t>(ffma));
  }
  EXPECT_DOUBLE_EQ(sum, 39142369720.0);
}
