// The report's CPU section (cpu_utilization, from `chopper record`'s CPU files): the host's cores
// per iteration, split into the rank's process, its data-loader workers, other busy cores and
// idle cores. Nothing at all without recorded CPU files.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "chopper/report/cpu_report.hpp"
#include "chopper/report/html/html_common.hpp"
#include "chopper/report/html/svg.hpp"

namespace chopper::html {

void cpu_section(Doc& doc, const TableStore& ts) {
  const View<kCpuUtilizationTable> c(ts);
  if (c.rows() == 0) return;
  doc.section("cpu", "Host CPUs",
              "The host's logical CPUs per rank and iteration, from the CPU files `chopper "
              "record` wrote beside the run.");
  std::vector<size_t> rows = all_rows(c);
  std::sort(rows.begin(), rows.end(), [&c](size_t x, size_t y) {
    return std::pair(c.i(x, "rank"), c.i(x, "iteration")) <
           std::pair(c.i(y, "rank"), c.i(y, "iteration"));
  });
  StackedBars b;
  b.value_label = "cores (logical CPUs)";
  b.category_label = "rank / iteration";
  b.series = {"rank process", "data-loader workers", "other busy cores", "idle cores"};
  b.series_colors = {"#4e79a7", "#f28e2b", "#bab0ac", "#e8e8e8"};
  auto or0 = [](double v) { return std::isnan(v) ? 0.0 : v; };
  for (size_t r : rows) {
    const double busy = c.d(r, "host_busy_cores"), cpus = c.d(r, "cpus");
    const double proc = or0(c.d(r, "process_cores")), work = or0(c.d(r, "worker_cores"));
    b.categories.push_back(fmt::format("r{} i{}", c.i(r, "rank"), c.i(r, "iteration")));
    b.cat_attrs.push_back(
        fmt::format(" data-rank=\"{}\" data-iteration=\"{}\" data-util-pct=\"{}\"", c.i(r, "rank"),
                    c.i(r, "iteration"), num(c.d(r, "host_util_pct"))));
    if (std::isnan(busy)) {
      b.values.push_back({proc, work, std::nan(""), std::nan("")});
      continue;
    }
    b.values.push_back({proc, work, std::max(0.0, busy - proc - work), std::max(0.0, cpus - busy)});
  }
  doc.figure({"fig-cpu", "cpu_utilization", "Host CPU cores per iteration", stacked_bars(b),
              "Each rank's iteration window on its host: the cores its process used "
              "(process_cores), its data-loader workers (worker_cores), the host's other busy "
              "cores (host_busy_cores less those two) and its idle cores (cpus − "
              "host_busy_cores); the bar's data-util-pct is host_util_pct. A tall idle part while "
              "the GPU waits for the host means the host's work is serial, not CPU-bound.",
              "CPU utilization (`cpu_utilization`)", csv_of(c.table(), rows), ""});
}

}  // namespace chopper::html
