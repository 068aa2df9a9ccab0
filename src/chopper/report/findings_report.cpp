#include "chopper/report/findings_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "chopper/base/error.hpp"
#include "chopper/base/json_out.hpp"

namespace chopper {
namespace {

// A loss this large (share of the iteration) that is not significant is printed as "large but
// not established" (too few or too variable iterations), apart from the small ones.
constexpr double kUncertainShare = 0.05;

std::string ms(double ns) {
  return fmt::format("{:.3f} ms", ns / 1e6);
}

// A JSON number; NaN (not measured) is null.
std::string num(double v) {
  return std::isnan(v) ? std::string("null") : fmt::format("{}", v);
}

}  // namespace

void findings_table(const Findings& f, TableSink& sink) {
  sink.begin(kFindingsTable.schema());
  for (const Finding& x : f.all) kFindingsTable.put(sink, x);
  sink.end();
}

Findings findings_from_table(const Table& t) {
  Findings f;
  const size_t key = t.col("finding"), rank = t.col("rank"), sig = t.col("significant"),
               cost = t.col("cost_ns"), share = t.col("cost_share"), se = t.col("stderr_ns"),
               threshold = t.col("threshold_ns"), conf = t.col("confidence"),
               energy = t.col("energy_j"), iters = t.col("iterations"),
               material = t.col("material_iterations"), evidence = t.col("evidence"),
               advice = t.col("suggestion"), samples = t.col("samples"), test = t.col("test");
  const double nan = std::nan("");
  const auto real_or_nan = [&](size_t r, size_t c) {
    return t.is_null(r, c) ? nan : t.get_real(r, c);
  };
  for (size_t r = 0; r < t.rows(); ++r) {
    Finding x;
    const std::optional<FindingKind> k = finding_from_key(t.get_text(r, key));
    if (!k)
      throw Error(fmt::format("findings row {}: unknown finding '{}'", r + 1, t.get_text(r, key)));
    x.kind = *k;
    x.rank = t.is_null(r, rank) ? -1 : t.get_int(r, rank);
    x.significant = t.get_int(r, sig) != 0;
    x.cost_ns = t.get_real(r, cost);
    x.cost_share = t.get_real(r, share);
    x.stderr_ns = real_or_nan(r, se);
    x.threshold_ns = t.get_real(r, threshold);
    x.confidence = real_or_nan(r, conf);
    x.energy_j = real_or_nan(r, energy);
    x.iterations = static_cast<uint64_t>(t.get_int(r, iters));
    x.material_iterations = static_cast<uint64_t>(t.get_int(r, material));
    x.evidence = std::string(t.get_text(r, evidence));
    x.suggestion = std::string(t.get_text(r, advice));
    x.samples = static_cast<uint64_t>(t.get_int(r, samples));
    x.test = std::string(t.get_text(r, test));
    f.iterations = std::max(f.iterations, x.iterations);
    f.iteration_ns = x.threshold_ns / kMaterialShare;
    f.all.push_back(std::move(x));
  }
  return f;
}

std::string findings_text(const Findings& f) {
  std::string s;
  if (f.iterations == 0) return s;
  s += fmt::format(
      "\nfindings (significant: above 1% of the iteration, {}, by a one-sided t test at 97.5%{}), "
      "largest loss first:\n",
      ms(kMaterialShare * f.iteration_ns),
      std::any_of(f.all.begin(), f.all.end(),
                  [](const Finding& x) { return std::isnan(x.confidence); })
          ? "; one iteration: no variance, so above 1% alone"
          : "");
  size_t k = 0;
  std::string rest;
  std::string uncertain;
  for (const Finding& x : f.all) {
    if (!x.significant) {
      // Large yet not significant: too few or too variable iterations to tell, not a small loss.
      if (x.cost_share >= kUncertainShare && !std::isnan(x.confidence))
        uncertain +=
            fmt::format("{}{} {} ± {} ({:.1f}%, confidence {:.2f})", uncertain.empty() ? "" : ", ",
                        finding_title(x.kind), ms(x.cost_ns), ms(x.stderr_ns), 100.0 * x.cost_share,
                        x.confidence);
      else if (x.cost_ns >= 1000)  // below a microsecond per iteration is not worth a word
        rest +=
            fmt::format("{}{} {}", rest.empty() ? "" : ", ", finding_title(x.kind), ms(x.cost_ns));
      continue;
    }
    std::string head = std::string(finding_title(x.kind));
    if (x.rank >= 0) head += fmt::format(": rank {}", x.rank);
    s += fmt::format("  {}. {}: {} per iteration ({:.1f}% of iteration time", ++k, head,
                     ms(x.cost_ns), 100.0 * x.cost_share);
    if (!std::isnan(x.energy_j)) s += fmt::format(", {:.1f} J", x.energy_j);
    if (std::isnan(x.confidence))
      s += fmt::format("); one iteration: no variance, no confidence\n");
    else
      s += fmt::format("); confidence {:.2f} ({}), ≥ 1% in {} of {} iterations\n", x.confidence,
                       x.test, x.material_iterations, x.iterations);
    if (!x.evidence.empty()) s += fmt::format("     {}\n", x.evidence);
    s += fmt::format("     try: {}\n", finding_advice(x));
  }
  if (k == 0) s += "  nothing significant: no loss stands out from the run's own variation\n";
  if (!uncertain.empty())
    s += fmt::format(
        "  large but not established over {} iterations (mean ± its spread over iterations, "
        "σ/√n: they vary too much to pass the test; profile more iterations): {}\n",
        f.iterations, uncertain);
  if (!rest.empty()) s += fmt::format("  below significance (findings table): {}\n", rest);
  return s;
}

std::string findings_json(const Findings& f) {
  std::string s = fmt::format(
      "{{\"iterations\": {}, \"iteration_ns\": {}, \"iteration_sigma_ns\": {}, "
      "\"significant\": {}, \"findings\": [",
      f.iterations, num(f.iteration_ns), num(f.iteration_sigma_ns), f.significant());
  for (size_t i = 0; i < f.all.size(); ++i) {
    const Finding& x = f.all[i];
    s += i ? ",\n  {" : "\n  {";
    s += "\"finding\": " + json_string(finding_key(x.kind));
    s += ", \"title\": " + json_string(finding_title(x.kind));
    s += x.rank >= 0 ? fmt::format(", \"rank\": {}", x.rank) : std::string(", \"rank\": null");
    s += fmt::format(
        ", \"significant\": {}, \"cost_ns\": {}, \"cost_share\": {}, \"stderr_ns\": {}, "
        "\"threshold_ns\": {}, \"confidence\": {}, \"energy_j\": {}, \"iterations\": {}, "
        "\"material_iterations\": {}",
        x.significant ? "true" : "false", num(x.cost_ns), num(x.cost_share), num(x.stderr_ns),
        num(x.threshold_ns), num(x.confidence), num(x.energy_j), x.iterations,
        x.material_iterations);
    s += fmt::format(", \"samples\": {}, \"test\": ", x.samples) + json_string(x.test);
    s += ", \"evidence\": " + json_string(x.evidence);
    s += ", \"suggestion\": " + json_string(finding_advice(x)) + "}";
  }
  s += f.all.empty() ? "]}\n" : "\n]}\n";
  return s;
}

}  // namespace chopper
