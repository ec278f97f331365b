// The sim driver: a trace replayed on a virtual clock through Colony's control plane, every
// observation and decision appended to an event log, with a deterministic report.
//
// One run = a trace source (sim/trace_source.hpp) and a usage model standing in for each node's
// collectors (sim/usage_model.hpp) feeding observation events, on a virtual clock, to the
// deterministic step host (actors/entities/step_host.hpp), which runs the components `colony run`
// hosts; the report is folded from the written log (sim/metrics_observer.hpp). Nothing in sim/
// decides: every decision in the log is a component's. The implementation is sim/host_driver.cpp;
// docs/sim.md ("Driver") has the rules.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridges/trace/trace_set.hpp"
#include "messages/result.hpp"
#include "sim/sim_config.hpp"

namespace colony::sim {

struct run_options {
  std::string log_path;     // embedded log; created (an existing one is removed first)
  std::size_t threads = 1;  // node-scoped components in parallel; the log is the same at any count
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
  // The idle-node economies (docs/sim.md "Performance economies"): the slo-controller's cache
  // (slo_controller_options::cache_idle_nodes: a node that hosts no pod reuses its result, its
  // inputs being constant) and the reuse of an idle node's NodeMetric report as a template.
  // false computes and builds everything every round: the log must be the same either way
  // (tested). Default: true.
  bool cache_idle_nodes = true;
  // Run the components in the live actor_host (colony run's host), stepped as the step host is,
  // instead of the step host: the differential test of the two hosts. Default: false.
  bool actor_host_reference = false;
  // Release the finished simulation (its components, state and log, closed last) on a thread
  // of its own, so the caller writes the report meanwhile; run_result::release joins it. The log
  // is complete and closed once release is reset or destroyed. Default: false (released before
  // run_simulation returns).
  bool release_in_background = false;
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
  // The spread of node cpu usage: p90 - p10 over the nodes of each node's cpu used (its latest
  // NodeMetric; usage model none: allocated) in % of its capacity (nearest rank, rank =
  // floor(q * (n - 1)) of the sorted values), in percentage points.
  double cpu_used_spread_pct = 0;
  std::int64_t migrations = 0;  // PodMigrationJobs created, cumulative
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
  // With run_options::release_in_background: joins the release when reset or destroyed.
  std::shared_ptr<void> release;
};

// Runs one config on one loaded trace.
[[nodiscard]] result<run_result> run_simulation(const trace::trace_set& trace,
                                                const sim_config& cfg, const run_options& opt);

// The config of a re-simulation that keeps the cluster's own configuration (it gives nothing):
// `colony sim --from-log` without --config, or `--config builtin:recorded`. Named "recorded".
[[nodiscard]] sim_config recorded_configuration();
inline constexpr std::string_view recorded_config_spelling = "builtin:recorded";

// Re-simulates a cluster's event log (written by `colony run --log`): its observations, in log
// order, each delivered as `colony run` delivered it, through the components `colony run` hosts,
// with the configuration cfg gives replacing the cluster's of the same kinds (docs/sim.md
// "Re-simulating a cluster's log"). Of opt, log_path, threads and progress apply (the seeds
// are the components' own, as in `colony run`). The implementation is sim/log_driver.cpp.
[[nodiscard]] result<run_result> run_log_simulation(const std::string& log_path,
                                                    const sim_config& cfg, const run_options& opt);

}  // namespace colony::sim
