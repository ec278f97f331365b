// NodeNUMAResource: Koordinator's CPU-bind plugin. LSE/LSR prod pods (and, on a node whose
// cpu-bind-policy label or kubelet static policy asks for it, every pod with a whole-CPU
// request) get an exclusive cpuset picked by the CPU accumulator (numa/); every pod with
// requests is scored by the plugin's resource allocation scorer.
//
// Extension points: PreFilter (the pod's bind request, resolved once), Filter (topology,
// bind-policy conflicts, SMT alignment, amplified cpu, and for a required bind policy a trial
// allocation), Score (scoringStrategy over the node's requested and allocatable, with the cpu
// cpuset pods hold amplified), Reserve (the cpuset, into cycle_state::cpuset and so the
// decision). The node view is changed only by assume_pod / forget_pod (framework.hpp), which add
// and release the cpuset in node_info::numa.allocation.
//
// NUMA topology policies: None is Koordinator's path in full. BestEffort, Restricted and
// SingleNUMANode need the topology manager's NUMA hints and the per-NUMA-node resource split,
// which Colony does not have yet: a node (or pod) that asks for one is refused with a reason
// that says so, rather than scheduled as if it had none.
//
// Koordinator: pkg/scheduler/plugins/nodenumaresource/{plugin.go (PreFilter, Filter,
// filterAmplifiedCPUs, Reserve, getResourceOptions, tryAllocateFromNode), scoring.go (Score,
// scoreWithAmplifiedCPUs, resourceAllocationScorer), least_allocated.go, most_allocated.go,
// util.go (requestCPUBind)}, pkg/scheduler/apis/config/v1/defaults.go
// (SetDefaults_NodeNUMAResourceArgs).
//
// Thread-safety: Filter and Score read only the pod, the node and PreFilter's state
// (parallel_safe).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/scheduler/framework.hpp"
#include "actors/scheduler/node_resources_fit.hpp"
#include "actors/scheduler/numa/cpuset_allocation.hpp"

namespace colony::scheduler {

// NodeNUMAResourceArgs.
struct node_numa_resource_args {
  // Default: FullPCPUs (defaultPreferredCPUBindPolicy).
  numa::cpu_bind_policy default_cpu_bind_policy = numa::cpu_bind_policy::full_pcpus;
  // Default: LeastAllocated over cpu and memory, weight 1 each.
  scoring_strategy_type scoring_strategy = scoring_strategy_type::least_allocated;
  std::vector<resource_spec> scoring_resources{{resource_name::cpu, 1}, {resource_name::memory, 1}};
  // numaScoringStrategy: Default: LeastAllocated over cpu and memory. Its type picks the NUMA
  // allocate strategy when the node has no numa-allocate-strategy label (MostAllocated ->
  // MostAllocated, anything else -> LeastAllocated).
  scoring_strategy_type numa_scoring_strategy = scoring_strategy_type::least_allocated;
  std::vector<resource_spec> numa_scoring_resources{{resource_name::cpu, 1},
                                                    {resource_name::memory, 1}};
};

// Filter / Reserve reasons (plugin.go's Err* constants, byte for byte).
inline constexpr std::string_view err_invalid_cpu_topology = "node(s) invalid CPU Topology";
inline constexpr std::string_view err_smt_alignment =
    "node(s) requested cpus not multiple cpus per core";
inline constexpr std::string_view err_cpu_bind_policy_conflict =
    "node(s) cpu bind policy conflicts with pod's required cpu bind policy";
inline constexpr std::string_view err_insufficient_amplified_cpu = "Insufficient amplified cpu";
// Colony's: the node's numa-topology-policy label names no policy Koordinator defines.
inline constexpr std::string_view err_invalid_numa_topology_policy_label =
    "node(s) invalid node.koordinator.sh/numa-topology-policy label";
// Colony's: NUMA topology policies other than None are not modelled yet (see above).
inline constexpr std::string_view err_numa_topology_policy_unsupported =
    "node(s) NUMA topology policy other than None is not supported by Colony yet";

// preFilterState.
struct numa_pre_filter_state : cycle_data {
  bool skip = true;
  bool request_cpu_bind = false;
  std::int64_t requested_milli_cpu = 0;
  int num_cpus_needed = 0;
  numa::cpu_bind_policy required_cpu_bind_policy = numa::cpu_bind_policy::unset;
  numa::cpu_bind_policy preferred_cpu_bind_policy = numa::cpu_bind_policy::unset;
  numa::cpu_exclusive_policy preferred_cpu_exclusive_policy = numa::cpu_exclusive_policy::unset;
  numa::numa_topology_policy pod_numa_topology_policy = numa::numa_topology_policy::none;
};

class node_numa_resource final : public plugin {
 public:
  static constexpr std::string_view plugin_name = "NodeNUMAResource";
  explicit node_numa_resource(node_numa_resource_args args = {}) : args_(std::move(args)) {}

  [[nodiscard]] std::string_view name() const noexcept override { return plugin_name; }
  [[nodiscard]] std::uint32_t points() const noexcept override {
    return ep_pre_filter | ep_filter | ep_score | ep_reserve;
  }
  [[nodiscard]] const node_numa_resource_args& args() const noexcept { return args_; }

  status pre_filter(cycle_state& st, const pod_info& pod, std::span<const node_info>,
                    event_time) override;
  status filter(cycle_state& st, const pod_info& pod, const node_info& node, event_time) override;
  std::int64_t score(cycle_state& st, const pod_info& pod, const node_info& node,
                     event_time) override;
  status reserve(cycle_state& st, const pod_info& pod, const node_info& node, event_time) override;
  [[nodiscard]] bool parallel_safe() const noexcept override { return true; }

  // The extension points over an explicit state (Koordinator's tests set preFilterState
  // directly; so do Colony's).
  [[nodiscard]] status filter_with(const numa_pre_filter_state& s, const pod_info& pod,
                                   const node_info& node) const;
  [[nodiscard]] std::int64_t score_with(const numa_pre_filter_state& s, const pod_info& pod,
                                        const node_info& node) const;
  // Reserve's allocation: the cpuset (empty when the pod binds no CPUs here), or the status that
  // refuses the node.
  [[nodiscard]] result<numa::cpu_set> allocate(const numa_pre_filter_state& s,
                                               const node_info& node) const;

 private:
  node_numa_resource_args args_;
};

// PreFilter's state of a pod, as a value (PreFilter stores it): skip when the pod requests
// nothing; an error value for an annotation that does not parse (numa_spec_error) or a bind
// request that is not whole CPUs.
[[nodiscard]] result<numa_pre_filter_state> numa_pre_filter(const pod_info& pod,
                                                            numa::cpu_bind_policy default_policy);

// resourceAllocationScorer.score: the strategy over (requested + pod request) / allocatable of
// the weighted resources the node has (scalar resources only when the pod requests them).
[[nodiscard]] std::int64_t numa_resource_allocation_score(
    scoring_strategy_type type, std::span<const resource_spec> resources,
    const resource_list& requested, const resource_list& allocatable,
    const resource_list& pod_requests) noexcept;

}  // namespace colony::scheduler
