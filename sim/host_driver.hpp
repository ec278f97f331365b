// host_driver: `colony sim` as one control plane. A trace source (sim/trace_source.hpp) and a
// usage model standing in for each node's collectors (sim/usage_model.hpp) feed observation
// events, on a virtual clock, to the deterministic step_host (actors/entities/step_host.hpp),
// which runs the same components `colony run` hosts: the ClusterColocationProfile webhook, the
// koord-scheduler, the ElasticQuota controller, the slo-controller (one shard per node) and a
// koordlet per node. Nothing here calls a policy: every decision in the log is a component's.
//
// The clock: pending source actions ordered by (virtual ms, sequence); the next instant is the
// earlier of the next action and the earliest component wake-up (a scheduler backoff). At an
// instant the source's observations go in first, then the host runs rounds until quiet.
//   - usage model v2018-curves: every node's collector reports NodeMetric every
//     nodeMetricReportIntervalSeconds (a node without pods every idleNodeReportIntervalSeconds
//     once it has reported empty).
//   - usage model none (pods use what they request): a node's collector reports when the pods on
//     it change, at that instant, so the slo-controller sees every change as the old driver's
//     per-bind reconcile did.
// Pods leave when their trace run time is over (counted from their binding), or are deleted by
// the trace while still pending.
#pragma once

#include "bridges/trace/trace_set.hpp"
#include "messages/result.hpp"
#include "sim/driver.hpp"
#include "sim/sim_config.hpp"

namespace colony::sim {

[[nodiscard]] result<run_result> run_on_components(const trace::trace_set& trace,
                                                   const sim_config& cfg, const run_options& opt);

}  // namespace colony::sim
