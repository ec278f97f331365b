// The `colony sim` and `colony trace synth` commands as library functions (the CLI11 wiring is
// in cmd/colony/): trace and config loading, one run or a comparison of several configs, the
// report files, and the progress bar. Errors come back as colony::error (the caller maps them
// to exit codes: invalid input = 3).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "messages/result.hpp"

namespace colony::sim {

// The default --threads: the machine's cores, at most 8 (the output is the same at any count).
[[nodiscard]] inline std::size_t default_sim_threads() {
  const std::size_t n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : (n > 8 ? 8 : n);
}

struct sim_args {
  std::string trace;  // empty = default_trace_dir()
  // A cluster's event log (`colony run --log`) to re-simulate instead of a trace; configs may
  // include "builtin:recorded" (the cluster's own configuration, the default).
  std::string from_log;
  std::string pod_list = "default";
  std::string node_list = "all_node";  // openb_node_list_<NAME>.csv
  std::vector<std::string> configs;    // empty = the built-in koordinator-defaults
  std::string out = "colony-sim-out";
  std::string log;                              // empty = OUT/log (OUT/<config>/log when comparing)
  std::size_t threads = default_sim_threads();  // Default: cores, at most 8
  std::string usage_model;                      // empty = each config's own
  std::string lifetime;                         // empty = each config's own (trace | running-stays)
  bool skip_bad_rows = false;
  std::uint64_t seed = 1;
  double until_days = -1;           // stop the clock early (-1 = trace end)
  double from_days = 0;             // start the clock later (earlier pods submitted at the start)
  bool quiet = false;               // no summary on stdout
  std::string plot_format = "svg";  // svg | png
  // The FGD paper's experiment (sim/fgd_experiment.hpp): pods submitted one after another until
  // the cluster saturates, the list inflated to `inflate` x the GPUs, seeds seed .. seed+seeds-1.
  bool until_saturated = false;
  double inflate = 1.3;
  std::int64_t seeds = 1;
};

// Where the default trace is: $COLONY_TRACES, else ./traces, else <binary dir>/../../traces,
// <binary dir>/../share/colony/traces, else the source tree's traces/ (compiled in).
[[nodiscard]] std::string default_trace_dir();

[[nodiscard]] result<void> run_sim_command(const sim_args& a);

struct synth_args {
  std::int64_t nodes = 1523;
  std::int64_t pods = 8152;
  std::int64_t days = 8;
  std::uint64_t seed = 1;
  std::string out = "synthetic-trace";
  std::string calibration;  // trace dir with openb + v2018 machine_usage; empty = default
};
[[nodiscard]] result<void> run_trace_synth(const synth_args& a);

}  // namespace colony::sim
