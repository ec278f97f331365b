// NodeResourcesFit: kube-scheduler's resource fit filter and allocation scorer, with
// Koordinator's co-location resources (kubernetes.io/batch-*, mid-*) as scalar resources.
//
// Filter: pods count, then every requested resource must fit allocatable - requested.
// Score: LeastAllocated (default) or MostAllocated over the configured resources; cpu/memory
// use kube's non-zero requests; a scalar resource the pod does not request is skipped.
// The GPU family (koordinator.sh/gpu*) is left to DeviceShare, whose per-device check is
// stricter than an aggregate one (Colony choice; upstream would also check the aggregate).
//
// Kubernetes: pkg/scheduler/framework/plugins/noderesources/{fit.go, resource_allocation.go,
// least_allocated.go, most_allocated.go}. Koordinator's shipped profile
// (config/manager/scheduler-config.yaml) scores cpu, memory, batch-cpu, batch-memory weight 1.
// Thread-safety: stateless after construction.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "actors/scheduler/framework.hpp"

namespace colony::scheduler {

enum class scoring_strategy_type : std::uint8_t { least_allocated, most_allocated };

struct resource_spec {
  resource_name name = resource_name::cpu;
  std::int64_t weight = 1;
  bool operator==(const resource_spec&) const = default;
};

struct node_resources_fit_args {
  // Default: LeastAllocated (k8s pkg/scheduler/apis/config/v1/defaults.go).
  scoring_strategy_type scoring_strategy = scoring_strategy_type::least_allocated;
  // Default: cpu 1, memory 1 (k8s defaults.go defaultResourceSpec).
  std::vector<resource_spec> resources{{resource_name::cpu, 1}, {resource_name::memory, 1}};
  // Default: none. ignoredResources: scalar resources the filter does not check.
  std::vector<resource_name> ignored_resources;

  // The scoring Koordinator ships (config/manager/scheduler-config.yaml): LeastAllocated over
  // cpu, memory, kubernetes.io/batch-cpu, kubernetes.io/batch-memory, weight 1 each.
  [[nodiscard]] static node_resources_fit_args koordinator_profile();
};

[[nodiscard]] result<void> validate(const node_resources_fit_args& a, const std::string& path);

// leastRequestedScore / mostRequestedScore (int64, MaxNodeScore = 100).
[[nodiscard]] std::int64_t least_requested_score(std::int64_t requested,
                                                 std::int64_t capacity) noexcept;
[[nodiscard]] std::int64_t most_requested_score(std::int64_t requested,
                                                std::int64_t capacity) noexcept;

class node_resources_fit final : public plugin {
 public:
  static constexpr std::string_view plugin_name = "NodeResourcesFit";
  explicit node_resources_fit(node_resources_fit_args args = {});

  [[nodiscard]] std::string_view name() const noexcept override { return plugin_name; }
  // Filter and Score are pure functions of the pod, the node and the args.
  [[nodiscard]] bool parallel_safe() const noexcept override { return true; }
  [[nodiscard]] std::uint32_t points() const noexcept override { return ep_filter | ep_score; }
  [[nodiscard]] const node_resources_fit_args& args() const noexcept { return args_; }

  status filter(cycle_state&, const pod_info& pod, const node_info& node, event_time) override;
  std::int64_t score(cycle_state&, const pod_info& pod, const node_info& node, event_time) override;
  // score_node() over many nodes, with the pod's side of every resource computed once.
  void score_nodes(cycle_state&, const pod_info& pod, std::span<const node_info> nodes,
                   std::span<const std::uint32_t> indices, std::span<std::int64_t> out,
                   event_time) override;

  // Queue when the pod's requests fit what ev.node has free (fitsRequest, the Filter itself),
  // as kube's isSchedulableAfterNodeChange / isSchedulableAfterPodEvent (fit.go) check.
  [[nodiscard]] queueing_hint filter_hint(const pod_info& pod,
                                          const cluster_event& ev) const override;
  // Fit check alone (fitsRequest), for callers outside a cycle.
  [[nodiscard]] status fits_request(const pod_info& pod, const node_info& node) const;
  [[nodiscard]] std::int64_t score_node(const pod_info& pod, const node_info& node) const;

 private:
  [[nodiscard]] status fits(const pod_info& pod, const resource_list& allocatable,
                            const resource_list& requested) const;

  node_resources_fit_args args_;
  std::array<bool, resource_name_count> ignored_{};
  std::vector<resource_name> scalar_checks_;  // scalar resources the filter checks, in order
  std::array<std::string, resource_name_count> insufficient_;  // "Insufficient <name>"
};

}  // namespace colony::scheduler
