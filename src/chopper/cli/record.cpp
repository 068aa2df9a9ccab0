#include <memory>

#include "chopper/cli/commands.hpp"
#include "chopper/record/recorder.hpp"

namespace chopper::cli {

Command add_record(CLI::App& root) {
  auto* app = root.add_subcommand(
      "record",
      "Run a command (after --) and record GPU telemetry (NVML or AMD SMI) and CPU use beside it "
      "into RUN/telemetry/, on the clock of PyTorch traces; exits with the command's status");
  auto o = std::make_shared<record::RecordOptions>();
  app->add_option("-o,--out", o->run_dir,
                  "Run directory (default: chopper-run-YYYYmmdd-HHMMSS); the command gets it as "
                  "CHOPPER_RUN_DIR");
  app->add_option("--interval-ms", o->interval_ms, "GPU and CPU sampling interval (ms)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 60000u));
  app->add_option("--thread-interval-ms", o->thread_interval_ms,
                  "Interval of the command's threads' CPU time (ms)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 600000u));
  app->add_option("--counter-interval-ms", o->counter_interval_ms,
                  "Interval of the GPUs' cumulative counters: energy, PCIe and NVLink bytes (ms; "
                  "costly on some drivers: 4 ms of CPU per GPU per read on an H200)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 600000u));
  app->add_option("--gpu", o->gpu,
                  "GPU library: auto (NVML, else AMD SMI, else none), nvml, amdsmi or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "nvml", "amdsmi", "none"}));
  app->add_flag("--no-cpu", o->no_cpu, "Record no CPU utilization and no threads");
  app->add_option("command", o->command, "The command and its arguments, after --")->required();
  return {app, [o]() -> int { return record::record(*o); }};
}

}  // namespace chopper::cli
