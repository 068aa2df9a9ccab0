#include "chopper/report/work_report.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace chopper {

void work_tables_write(const RunAnalysis& ra, TableSink& sink) {
  sink.begin(kTopKernelsTable.schema());
  for (const WorkRow& w : ra.work)
    if (w.level != "shape_class") kTopKernelsTable.put(sink, w);
  sink.end();
  sink.begin(kRooflineTable.schema());
  for (const WorkRow& w : ra.work)
    if (w.level == "shape_class") kRooflineTable.put(sink, w);
  sink.end();
  sink.begin(kKernelDurationsTable.schema());
  for (const DurationBin& b : ra.durations) kKernelDurationsTable.put(sink, b);
  sink.end();
  sink.begin(kCounterOperationsTable.schema());
  for (const CounterOpRow& x : ra.counter_ops) kCounterOperationsTable.put(sink, x);
  sink.end();
}

std::string top_operations_text(const RunAnalysis& ra, size_t n) {
  // The operations; a trace without operation labels (GPU only): the kernels.
  std::vector<const WorkRow*> rows;
  for (const char* level : {"operation", "kernel"}) {
    for (const WorkRow& w : ra.work)
      if (w.level == level && rows.size() < n) rows.push_back(&w);
    if (!rows.empty()) break;
  }
  if (rows.empty()) return {};
  std::string s = fmt::format("\n{} with the most GPU time (all ranks; top_kernels):\n",
                              rows.front()->level == "operation" ? "operations" : "kernels");
  for (const WorkRow* w : rows) {
    const double mean =
        w->count ? static_cast<double>(w->total_ns) / static_cast<double>(w->count) : 0.0;
    std::string rate;
    if (w->known_ns > 0) {
      const double secs = static_cast<double>(w->known_ns) * 1e-9;
      if (w->flops > 0) rate = fmt::format(" {:.3g} TFLOP/s,", w->flops / secs * 1e-12);
      rate = " " + rate + fmt::format(" {:.3g} TB/s", w->bytes / secs * 1e-12);
    }
    std::string name = w->name;
    if (name.size() > 40) name = name.substr(0, 39) + "…";
    s += fmt::format("  {:<40} {:>6.1f}% {:>8} calls {:>10.3f} ms/call{}\n", name, 100.0 * w->share,
                     w->count, mean / 1e6, rate);
  }
  return s;
}

}  // namespace chopper
