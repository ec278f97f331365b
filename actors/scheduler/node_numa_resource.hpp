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
// NUMA topology policies (the node's numa-topology-policy label, else its kubelet's; the pod's
// numa-topology-spec, which must agree): under Restricted and SingleNUMANode, Filter asks the
// topology manager (numa/topology_manager.hpp) for the pod's best NUMA hint over the hints its
// request admits (numa/numa_resources.hpp) and refuses the node when it is not preferred; under
// BestEffort, Reserve does the same and takes any hint. The pod then gets NUMA node resources
// split over the hint's NUMA nodes (and its cpuset from them), which the node holds until the
// pod leaves. Score scores the NUMA nodes of the allocation under Restricted / SingleNUMANode.
// Koordinator stores the Filter's hint per node in the cycle state; Colony computes it again in
// Score and Reserve (same node state, same answer). Reservations' reusable CPUs and preemption
// (Koordinator's reservation restore and preemptible state) are not modelled.
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
#include <mutex>
#include <optional>
#include <set>
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
inline constexpr std::string_view err_missing_numa_resources = "node(s) missing NUMA resources";
inline constexpr std::string_view err_insufficient_numa_node_resources =
    "node(s) Insufficient NUMA Node resources";
inline constexpr std::string_view err_insufficient_resources_on_numa_node =
    "insufficient resources on NUMA Node";

// preFilterState.
struct numa_pre_filter_state : cycle_data {
  bool skip = true;
  bool request_cpu_bind = false;
  std::int64_t requested_milli_cpu = 0;
  std::int64_t requested_memory_bytes = 0;
  int num_cpus_needed = 0;
  numa::cpu_bind_policy required_cpu_bind_policy = numa::cpu_bind_policy::unset;
  numa::cpu_bind_policy preferred_cpu_bind_policy = numa::cpu_bind_policy::unset;
  numa::cpu_exclusive_policy preferred_cpu_exclusive_policy = numa::cpu_exclusive_policy::unset;
  numa::numa_topology_policy pod_numa_topology_policy = numa::numa_topology_policy::none;
  numa::numa_topology_exclusive pod_numa_exclusive = numa::numa_topology_exclusive::unset;
};

// What Reserve allocates on a node (PodAllocation): a cpuset and NUMA node resources.
struct numa_pod_allocation {
  numa::cpu_set cpuset;
  std::vector<numa::numa_amount> numa_resources;
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
  // admitted: when Filter ran the topology manager and admitted the pod, its best hint.
  [[nodiscard]] status filter_with(const numa_pre_filter_state& s, const pod_info& pod,
                                   const node_info& node,
                                   std::optional<numa::numa_hint>* admitted = nullptr) const;
  // hint: Filter's best hint on this node in this cycle, if it found one (else computed).
  [[nodiscard]] std::int64_t score_with(const numa_pre_filter_state& s, const pod_info& pod,
                                        const node_info& node,
                                        const numa::numa_hint* hint = nullptr) const;
  // Reserve's allocation (empty when the pod binds nothing here), or the status that refuses
  // the node.
  [[nodiscard]] status allocate(const numa_pre_filter_state& s, const node_info& node,
                                numa_pod_allocation& out,
                                const numa::numa_hint* hint = nullptr) const;
  // FilterByNUMANode (the topology manager's Admit): the pod's best NUMA hint on the node under
  // `policy`, allocatable there, or the status that refuses the node.
  [[nodiscard]] status admit(const numa_pre_filter_state& s, const node_info& node,
                             numa::numa_topology_policy policy, numa::numa_hint& best) const;

 private:
  struct node_context;
  [[nodiscard]] status allocate_in(const node_context& ctx, const numa_pre_filter_state& s,
                                   bool bind, const std::optional<std::uint64_t>& hint,
                                   numa_pod_allocation& out) const;
  [[nodiscard]] status allocate_with_hint(const numa_pre_filter_state& s, const node_info& node,
                                          bool bind, const std::optional<std::uint64_t>& hint,
                                          numa_pod_allocation& out) const;
  // A refusal text that is not a constant, kept for the plugin's lifetime (status::reason must
  // outlive the cycle); thread-safe.
  [[nodiscard]] std::string_view intern(std::string text) const;

  // Filter's best hint per node of the current cycle (Koordinator keeps it in the cycle
  // state's topologymanager store), read by Score and Reserve: by node index in the cycle's
  // node list, valid while hint_cycle_[i] is the cycle's number. Filter threads write
  // different indices.
  [[nodiscard]] const numa::numa_hint* cached_hint(const node_info& node) const;
  const node_info* nodes_base_ = nullptr;
  std::size_t nodes_n_ = 0;
  std::uint64_t cycle_ = 0;
  std::vector<std::uint64_t> hint_cycle_;
  std::vector<numa::numa_hint> hint_;

  node_numa_resource_args args_;
  mutable std::mutex interned_mu_;
  mutable std::set<std::string, std::less<>> interned_;
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
