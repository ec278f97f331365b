// usage_source: the sim's stand-in for each node's koordlet collectors. It says what a pod uses
// at an instant (the usage model of the config) and writes a node's NodeMetricReported, the
// observation the slo-controller, the koordlet and LoadAwareScheduling read.
//
// Models (docs/sim.md "Usage model"):
//   - none: a pod uses what it requests (after admission: cpu + batch-cpu + mid-cpu, memory
//     likewise);
//   - v2018-curves: each pod follows a real v2018 machine curve (seeded pick by pod name, seeded
//     shift), normalised by the curve's mean and scaled by the class ratio of the config (the
//     trace's qos column: BE rows use the batch ratio), capped at its request.
// BE CPU suppression in force on the node (BeSuppressed, folded into node_state::be_cpu_milli)
// caps what BE pods use together, scaled down proportionally, as the cgroup would.
// Pure given its inputs; thread-safety: const methods may run concurrently.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bridges/trace/trace_set.hpp"
#include "bridges/trace/usage_curves.hpp"
#include "messages/codec.hpp"
#include "messages/result.hpp"
#include "sim/sim_config.hpp"

namespace colony::sim {

// One pod on a node, as the collector sees it.
struct pod_on_node_usage {
  std::uint32_t pod = 0;  // trace row
  const std::string* key = nullptr;
  resource_list requests;  // after admission
  std::int64_t bind_ms = 0;
  wire::QoSClass qos = wire::QoSClass::None;
  wire::PriorityClass priority_class = wire::PriorityClass::None;
  std::int64_t cpu = 0, memory = 0;  // filled by measure()
};

class usage_source {
 public:
  [[nodiscard]] static result<usage_source> create(const trace::trace_set& t, const sim_config& cfg,
                                                   usage_model model, std::uint64_t seed);

  [[nodiscard]] usage_model model() const { return model_; }
  [[nodiscard]] std::size_t curve_count() const { return curves_.size(); }

  // Fills cpu/memory of every pod at time t; be_cpu_limit_milli >= 0 caps the BE pods' sum.
  // Returns the node's usage (the sum).
  resource_list measure(std::span<pod_on_node_usage> pods, std::int64_t t,
                        std::int64_t be_cpu_limit_milli) const;

  // NodeMetricReported of `node` at t (source "koordlet") with the measured pods.
  [[nodiscard]] messages::byte_buffer node_metric(messages::event_builder& b, std::int64_t t,
                                                  std::string_view node,
                                                  std::span<const pod_on_node_usage> pods,
                                                  const resource_list& node_usage) const;

 private:
  usage_source(const sim_config& cfg, usage_model m) : cfg_(&cfg), model_(m) {}

  const sim_config* cfg_;
  usage_model model_;
  std::vector<trace::usage_curve> curves_;
  std::vector<double> mean_cpu_, mean_mem_;
  std::vector<std::uint32_t> curve_of_;  // per pod row
  std::vector<std::int64_t> shift_of_;   // per pod row
  std::vector<char> trace_be_;           // per pod row: the trace's qos column says BE
};

}  // namespace colony::sim
