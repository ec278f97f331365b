// The sim driver: a trace replayed on a virtual clock through Colony's policies, every
// observation and decision appended to an event log, with a deterministic summary.
//
// Clock: a priority queue of pending actions ordered by (virtual time ms, sequence number);
// the sequence number is the order in which actions were scheduled, so the order is total and
// a pure function of the inputs. Everything at one instant runs in that order, then the
// scheduler drains its activeQ at that instant (scheduling takes no virtual time).
// The main loop is single-threaded; `threads` parallelises only the pure per-node work of a
// koordlet tick (usage, slo-controller, koordlet QoS decisions), merged in node order, and
// sets the CAF threads of the actor_host that folds the log into entity actors.
// See docs/sim.md ("Driver") for the full list of rules.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/trace/trace_set.hpp"
#include "messages/result.hpp"
#include "sim/sim_config.hpp"

namespace colony::sim {

struct run_options {
  std::string log_path;  // embedded log; created (an existing one is removed first)
  std::size_t threads = 1;
  std::uint64_t seed = 1;
  std::optional<usage_model> usage_override;      // --usage-model
  std::optional<pod_lifetime> lifetime_override;  // --lifetime
  // Called now and then with (virtual ms done, virtual ms total); for the progress bar.
  std::function<void(std::int64_t, std::int64_t)> progress;
  // Stop at this virtual time (ms); -1 = the end of the trace (last deletion time).
  std::int64_t until_ms = -1;
  // Start the clock here (ms, rounded down to a report interval): pods created earlier are
  // submitted at the start, koordlet reports and metrics begin there. 0 = the trace start.
  std::int64_t from_ms = 0;
  // Reuse a node's slo-controller result while it hosts no pod (its inputs are then constant;
  // docs/sim.md "Performance"). false recomputes every round: the log must be the same either
  // way (tested). Default: true.
  bool cache_idle_nodes = true;
  // Run the control plane's components in the deterministic step host (sim/host_driver.hpp)
  // instead of the legacy driver's own glue around the policies. Default: false (until the
  // component host meets the legacy driver's speed; docs/results.md).
  bool components_host = false;
  // With components_host: run them in the live actor_host (colony run's host), stepped as the
  // step host is, instead of the step host: the differential test of the two hosts. Default:
  // false.
  bool actor_host_reference = false;
  // Called at the end of each metrics sample with its virtual time and the offset the next event
  // will get: the sample (metrics row, quota rows) reflects exactly the events before that
  // offset. The log records no sample points, so a log observer (sim/metrics_observer.hpp) needs
  // this to sample where the driver did.
  std::function<void(std::int64_t, std::uint64_t)> on_sample;
};

// One row of metrics.csv (cluster totals at one instant).
struct metrics_row {
  std::int64_t time_ms = 0;
  std::int64_t pods_running = 0, pods_pending = 0;
  std::int64_t cpu_capacity = 0, cpu_requested = 0, cpu_allocated = 0, cpu_used = 0;
  std::int64_t mem_capacity = 0, mem_requested = 0, mem_allocated = 0, mem_used = 0;
  std::int64_t batch_cpu_allocatable = 0, batch_cpu_allocated = 0, batch_cpu_used = 0;
  std::int64_t batch_mem_allocatable = 0, batch_mem_allocated = 0, batch_mem_used = 0;
  std::int64_t gpu_total = 0, gpu_allocated = 0;  // x100 per device
  double gpu_frag = 0;                            // fragmented GPUs (FGD), in devices
  std::int64_t evictions = 0, unschedulable = 0;  // cumulative
};

// One quota at one metrics sample (quota.csv). CPU in milli-cores, memory in bytes.
struct quota_row {
  std::int64_t time_ms = 0;
  std::string quota;
  std::int64_t min_cpu = 0, max_cpu = 0, runtime_cpu = 0, used_cpu = 0, request_cpu = 0;
  std::int64_t runtime_memory = 0, used_memory = 0;
};

struct run_result {
  nlohmann::ordered_json summary;  // deterministic: byte-identical at any --threads
  nlohmann::ordered_json timing;   // wall-clock figures (vary run to run)
  std::vector<metrics_row> rows;
  std::vector<quota_row> quota_rows;  // empty without quotas
};

// Runs one config on one loaded trace.
[[nodiscard]] result<run_result> run_simulation(const trace::trace_set& trace,
                                                const sim_config& cfg, const run_options& opt);

}  // namespace colony::sim
