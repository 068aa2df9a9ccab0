// What the host was doing while the GPU waited for it (idle causes, docs/metrics.md) on a
// hand-written trace in the shape of a real PyTorch inference step
// (tests/data/dataloader_gaps.json): one thread (pid 100, tid 100), one stream; all times in µs.
//
//   ProfilerStep#1 [0, 650)
//     enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ [10, 300)
//       torch/utils/data/dataloader.py(628): __next__ [12, 298)
//     aten::to [300, 330) > aten::copy_ [302, 328) > cudaMemcpyAsync [305, 325)
//                                        -> Memcpy HtoD (Pageable -> Device) [310, 340)
//     aten::mm [340, 360), cudaLaunchKernel [350, 356)   -> gemm_kernel [360, 400)
//     aten::relu [400, 420), cudaLaunchKernel [412, 416) -> relu_kernel [420, 430)
//     aten::sum [425, 435), cudaLaunchKernel [430, 433)  -> sum_kernel [436, 500)
//     aten::item [440, 560) > aten::_local_scalar_dense [441, 559) > cudaMemcpyAsync [445, 450)
//                                        -> Memcpy DtoH (Device -> Pageable) [500, 502)
//                                      and cudaStreamSynchronize [451, 555)
//     aten::add [570, 590), cudaLaunchKernel [580, 584)  -> add_kernel [590, 600)
//     Optimizer.step#SGD.step [595, 640) > aten::_foreach_add_ [620, 635),
//       cudaLaunchKernel [625, 629)                      -> multi_tensor_apply_kernel [640, 650)
//   ProfilerStep#2 [650, 1100)
//     enumerate(DataLoader)#... [665, 960) > dataloader.py(628): __next__ [666, 958)
//     aten::to [960, 990) > aten::copy_ [962, 988) > cudaMemcpyAsync [965, 985)
//                                        -> Memcpy HtoD (Pageable -> Device) [970, 1000)
//     aten::mm [1000, 1020), cudaLaunchKernel [1010, 1016)  -> gemm_kernel [1020, 1060)
//     aten::relu [1060, 1080), cudaLaunchKernel [1072, 1076) -> relu_kernel [1080, 1090)
//
// Windows: iteration 1 [0, 650) (opens at its step's start), iteration 2 [650, 1090) (opens at
// ProfilerStep#2, the GPU idle from the foreach kernel's end). The iterations' first launch calls
// (the cudaMemcpyAsync of the batch) are at 305 and 965: host time before them that no cause
// frame names is host_stall. Every expected number is worked out in the comments beside it.
#include <gtest/gtest.h>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/findings.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/pipeline/load.hpp"
#include "test_util.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

constexpr Ns kUs = 1000;

RunAnalysis analyze_fixture() {
  Run run = load_run({data_path("dataloader_gaps.json")});
  label_run(Taxonomy::builtin(), run, 1);
  AnalysisOptions o;
  o.threads = 1;
  return analyze_run(run, o);
}

Ns at(const std::map<std::string, Ns>& comp, const char* k) {
  auto f = comp.find(k);
  return f == comp.end() ? 0 : f->second;
}

const IdleCauseRow* row(const RankAnalysis& r, int64_t it, const char* cause) {
  for (const IdleCauseRow& x : r.idle_causes)
    if (x.iteration == it && x.cause == cause) return &x;
  return nullptr;
}

}  // namespace

// The host-side idle time of each window, by what the host was doing; with compute, memcpy and
// idle the components add up to the window exactly.
TEST(IdleCauses, ComponentsByHostFrame) {
  const RunAnalysis ra = analyze_fixture();
  ASSERT_EQ(ra.ranks.size(), 1u);
  const RankAnalysis& r = ra.ranks[0];
  ASSERT_EQ(r.components.size(), 2u);
  const auto& c1 = r.components.at(1);
  // Iteration 1. data_loading: the DataLoader annotation [10, 300) (the gap before the gemm,
  // [0, 360) less the batch's copy [310, 340), opened at the window's start).
  EXPECT_EQ(at(c1, "data_loading"), 290 * kUs);
  // host_stall: the rest of that gap before the first launch call (305) in no cause frame:
  // [0, 10) (ProfilerStep#1) + [300, 305) (aten::copy_).
  EXPECT_EQ(at(c1, "host_stall"), 15 * kUs);
  // host_sync: the gap before add_kernel opened at 500 (sum_kernel's end) while the host was in
  // aten::item (the sync drained the GPU): from the DtoH copy's end to the launch call,
  // [502, 580), all of it, though the sync call itself returned at 555.
  EXPECT_EQ(at(c1, "host_sync"), 78 * kUs);
  // host_optimizer: before the foreach kernel's launch call, inside Optimizer.step: [600, 625).
  EXPECT_EQ(at(c1, "host_optimizer"), 25 * kUs);
  // host_late: framework time after the first launch call: [305, 310) + [340, 350) (aten::mm) +
  // [400, 412) (aten::relu).
  EXPECT_EQ(at(c1, "host_late"), 27 * kUs);
  // launch_overhead: launch call to kernel start: [350, 360) + [412, 420) + [430, 436) +
  // [580, 590) + [625, 640).
  EXPECT_EQ(at(c1, "launch_overhead"), 49 * kUs);
  // Compute 40 + 10 + 64 + 10 + 10 = 134, copies 30 + 2, host-side 484: the window's 650.
  EXPECT_EQ(at(c1, "idle"), 0);
  EXPECT_EQ(at(c1, "exposed_memcpy"), 32 * kUs);

  const auto& c2 = r.components.at(2);
  // Iteration 2: the gap before the gemm opened at 650 (the foreach kernel's end, the window's
  // start): DataLoader [665, 960); host_stall [650, 665) + [960, 965); host_late [965, 970) +
  // [1000, 1010) + [1060, 1072); launch [1010, 1020) + [1072, 1080). No sync, no optimizer.
  EXPECT_EQ(at(c2, "data_loading"), 295 * kUs);
  EXPECT_EQ(at(c2, "host_stall"), 20 * kUs);
  EXPECT_EQ(at(c2, "host_late"), 27 * kUs);
  EXPECT_EQ(at(c2, "launch_overhead"), 18 * kUs);
  EXPECT_EQ(c2.count("host_sync"), 0u);
  EXPECT_EQ(c2.count("host_optimizer"), 0u);
  EXPECT_EQ(at(c2, "idle"), 0);

  // Each window's components add up to it.
  for (const BreakdownRow& b : r.breakdown) {
    if (b.iteration == kNoId) continue;
    Ns sum = 0;
    for (const auto& [k, v] : r.components.at(b.iteration)) sum += v;
    EXPECT_EQ(sum, b.total_ns) << "iteration " << b.iteration;
  }
  EXPECT_EQ(ra.iterations.at(0).time_ns, 650 * kUs);
  EXPECT_EQ(ra.iterations.at(1).time_ns, 440 * kUs);
}

// The evidence rows: per window and cause, the gaps, their sizes and the covering frames.
TEST(IdleCauses, EvidenceRows) {
  const RunAnalysis ra = analyze_fixture();
  const RankAnalysis& r = ra.ranks[0];
  // Each row's idle_ns is its component.
  for (const IdleCauseRow& x : r.idle_causes)
    EXPECT_EQ(x.idle_ns, at(r.components.at(x.iteration), x.cause.c_str()))
        << x.iteration << " " << x.cause;
  const IdleCauseRow* dl = row(r, 1, "data_loading");
  ASSERT_NE(dl, nullptr);
  EXPECT_EQ(dl->gaps, 1u);
  EXPECT_EQ(dl->max_gap_ns, 290 * kUs);
  ASSERT_EQ(dl->frames.size(), 1u);  // the outermost frame: the annotation, not its Python frame
  EXPECT_EQ(dl->frames[0].first, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  EXPECT_EQ(dl->frames[0].second, 290 * kUs);
  const IdleCauseRow* sync = row(r, 1, "host_sync");
  ASSERT_NE(sync, nullptr);
  ASSERT_EQ(sync->frames.size(), 1u);
  EXPECT_EQ(sync->frames[0].first, "aten::item");
  const IdleCauseRow* opt = row(r, 1, "host_optimizer");
  ASSERT_NE(opt, nullptr);
  ASSERT_EQ(opt->frames.size(), 1u);
  EXPECT_EQ(opt->frames[0].first, "Optimizer.step#SGD.step");
  // host_late of iteration 1: two gaps, 5 + 10 = 15 (before the gemm) and 12 (before relu);
  // median of {12, 15}: the upper middle (index ⌊0.5·1 + 0.5⌋), 15. Frames by the innermost
  // host op at each piece's middle: aten::relu 12, aten::mm 10, aten::copy_ 5 (at 305).
  const IdleCauseRow* late = row(r, 1, "host_late");
  ASSERT_NE(late, nullptr);
  EXPECT_EQ(late->gaps, 2u);
  EXPECT_EQ(late->median_gap_ns, 15 * kUs);
  EXPECT_EQ(late->max_gap_ns, 15 * kUs);
  ASSERT_EQ(late->frames.size(), 3u);
  EXPECT_EQ(late->frames[0], (std::pair<std::string, Ns>{"aten::relu", 12 * kUs}));
  EXPECT_EQ(late->frames[1], (std::pair<std::string, Ns>{"aten::mm", 10 * kUs}));
  EXPECT_EQ(late->frames[2], (std::pair<std::string, Ns>{"aten::copy_", 5 * kUs}));
  // launch_overhead of iteration 1: five gaps {10, 8, 6, 10, 15}: median 10, largest 15.
  const IdleCauseRow* call = row(r, 1, "launch_overhead");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->gaps, 5u);
  EXPECT_EQ(call->median_gap_ns, 10 * kUs);
  EXPECT_EQ(call->max_gap_ns, 15 * kUs);
}

// Data loading is the largest finding, named by the DataLoader frame with the gaps' sizes; its
// cost is the mean of 290 and 295 µs.
TEST(IdleCauses, DataLoadingIsTheLargestFinding) {
  const RunAnalysis ra = analyze_fixture();
  const Findings f = decide_findings(ra, AnalysisOptions{});
  ASSERT_FALSE(f.all.empty());
  const Finding& top = f.all.front();
  EXPECT_EQ(top.kind, FindingKind::kDataLoading);
  EXPECT_TRUE(top.significant);
  EXPECT_DOUBLE_EQ(top.cost_ns, 292.5 * kUs);
  // Medians per iteration {290, 295} µs: the lower middle of the two, 0.290 ms.
  EXPECT_EQ(top.evidence,
            "host in enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ (100.0%); 2 "
            "gaps, median 0.290 ms, largest 0.295 ms");
  // host late keeps only the framework time: (27 + 27) / 2 µs.
  const Finding* late = nullptr;
  for (const Finding& x : f.all)
    if (x.kind == FindingKind::kHostLate) late = &x;
  ASSERT_NE(late, nullptr);
  EXPECT_DOUBLE_EQ(late->cost_ns, 27.0 * kUs);
}

// Where the launching thread shows nothing, the other threads' frames name the cause: the kernel
// is launched from thread 200 (an autograd-like thread with only its launch call), while the main
// thread 100 is in the DataLoader. Window [0, 170) µs (ProfilerStep#1 opens it); the gap before
// the kernel [0, 160): [10, 100) is data loading (thread 100's DataLoader annotation); [0, 10) and
// [100, 150), before the launch call, are in no frame of thread 200: host_stall, named "(no host
// activity)"; the call [150, 160) is launch overhead.
TEST(IdleCauses, OtherThreadsNameWhatTheLaunchingThreadDoesNot) {
  const std::string events =
      R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 200, "args": {"External id": 1}, "pid": 100, "tid": 100},
      {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "ts": 10, "dur": 90, "args": {"External id": 2}, "pid": 100, "tid": 100},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 150, "dur": 5, "args": {"correlation": 7}, "pid": 100, "tid": 200},
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 160, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 7}})";
  RankTrace t = parse(trace_of(events));
  label_trace(Taxonomy::builtin(), t);
  AnalysisOptions o;
  o.threads = 1;
  const RankAnalysis r = analyze_rank(t, 0, o);
  ASSERT_EQ(r.components.size(), 1u);
  const auto& c = r.components.begin()->second;
  EXPECT_EQ(at(c, "data_loading"), 90 * kUs);
  EXPECT_EQ(at(c, "host_stall"), 60 * kUs);
  EXPECT_EQ(at(c, "launch_overhead"), 10 * kUs);
  const IdleCauseRow* stall = row(r, r.components.begin()->first, "host_stall");
  ASSERT_NE(stall, nullptr);
  ASSERT_EQ(stall->frames.size(), 1u);
  EXPECT_EQ(stall->frames[0].first, "(no host op: Python or untraced code)");
}
