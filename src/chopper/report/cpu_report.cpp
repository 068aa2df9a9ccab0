#include "chopper/report/cpu_report.hpp"

namespace chopper {

void cpu_utilization_table(const RunAnalysis& ra, TableSink& sink) {
  sink.begin(kCpuUtilizationTable.schema());
  for (const RankAnalysis& r : ra.ranks)
    for (const CpuRow& row : r.cpu) kCpuUtilizationTable.put(sink, row);
  sink.end();
}

}  // namespace chopper
