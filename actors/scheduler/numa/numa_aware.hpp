// Koordinator's NUMA-aware API surface: the policy names, the pod annotations
// scheduling.koordinator.sh/resource-spec, /numa-topology-spec and /resource-status, the node
// labels node.koordinator.sh/cpu-bind-policy, /numa-topology-policy, /numa-allocate-strategy,
// the kubelet CPU manager policy annotation, and the small rules that combine them.
//
// Koordinator: apis/extension/numa_aware.go, pkg/scheduler/apis/config/types.go (CPUBindPolicy,
// CPUExclusivePolicy, NUMAAllocateStrategy), pkg/scheduler/plugins/nodenumaresource/{util.go,
// plugin.go PreFilter, topology_options.go convertToNUMATopologyPolicy}.
//
// Parsing follows Go's json.Unmarshal into string types: a CPU bind or exclusive policy
// Koordinator does not define is kept as `unrecognized` and acts as no policy (plugin_test.go
// TestPlugin_PreFilter "skip Pod with unsupported bind policy" schedules such a pod unbound).
// NUMA topology policies, the NUMA allocate strategy label and numaTopologyPolicy are strict:
// an unknown value is an error naming the annotation or label and the field, since Koordinator
// would compare the unknown string against the node's and refuse every node anyway.
// Wrong JSON types are always errors naming the field.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/scheduler/numa/cpu_set.hpp"
#include "messages/names.hpp"
#include "messages/priority.hpp"
#include "messages/qos.hpp"
#include "messages/result.hpp"

namespace colony::scheduler::numa {

// Koordinator's names, from the one vocabulary (messages/names.hpp).
using names::annotation_kubelet_cpu_manager_policy;
using names::annotation_node_cpu_topology;
using names::annotation_numa_topology_spec;
using names::annotation_resource_spec;
using names::annotation_resource_status;
using names::label_node_cpu_bind_policy;
using names::label_node_numa_allocate_strategy;
using names::label_numa_topology_policy;

// plugin.go's status messages.
inline constexpr std::string_view err_not_match_numa_topology =
    "node(s) NUMA Topology policy not match";
inline constexpr std::string_view err_invalid_requested_cpus = "the requested CPUs must be integer";
inline constexpr std::string_view err_not_enough_cpus =
    "not enough cpus available to satisfy request";

// CPUBindPolicy; unset is "" (the field absent).
enum class cpu_bind_policy : std::uint8_t {
  unset,
  default_policy,     // "Default": the plugin args' defaultCPUBindPolicy
  full_pcpus,         // "FullPCPUs"
  spread_by_pcpus,    // "SpreadByPCPUs"
  constrained_burst,  // "ConstrainedBurst"
  unrecognized,       // any other string: no binding
};
// CPUExclusivePolicy; unset is "".
// unrecognized: any other string, which fences nothing.
enum class cpu_exclusive_policy : std::uint8_t {
  unset,
  none,
  pcpu_level,
  numa_node_level,
  unrecognized,
};
// NUMAAllocateStrategy. The accumulator orders NUMA nodes and sockets MostAllocated-first only
// for most_allocated; least_allocated and distribute_evenly both order LeastAllocated-first
// (cpu_accumulator.go compares against NUMAMostAllocated only).
enum class numa_allocate_strategy : std::uint8_t {
  most_allocated,
  least_allocated,
  distribute_evenly,
};
// NodeCPUBindPolicy.
enum class node_cpu_bind_policy : std::uint8_t { none, full_pcpus_only, spread_by_pcpus };
// NUMATopologyPolicy; none is "".
enum class numa_topology_policy : std::uint8_t { none, best_effort, restricted, single_numa_node };
// NumaTopologyExclusive; unset is "".
enum class numa_topology_exclusive : std::uint8_t { unset, preferred, required };

[[nodiscard]] std::string_view to_string(cpu_bind_policy p);
[[nodiscard]] std::string_view to_string(cpu_exclusive_policy p);
[[nodiscard]] std::string_view to_string(numa_allocate_strategy s);
[[nodiscard]] std::string_view to_string(node_cpu_bind_policy p);
[[nodiscard]] std::string_view to_string(numa_topology_policy p);
[[nodiscard]] std::string_view to_string(numa_topology_exclusive e);
// Each accepts exactly Koordinator's spelling ("" for the unset/none value); nullopt otherwise.
[[nodiscard]] std::optional<cpu_bind_policy> parse_cpu_bind_policy(std::string_view s);
[[nodiscard]] std::optional<cpu_exclusive_policy> parse_cpu_exclusive_policy(std::string_view s);
[[nodiscard]] std::optional<numa_allocate_strategy> parse_numa_allocate_strategy(
    std::string_view s);
[[nodiscard]] std::optional<numa_topology_policy> parse_numa_topology_policy(std::string_view s);

// ResourceSpec (scheduling.koordinator.sh/resource-spec).
struct resource_spec {
  cpu_bind_policy required_cpu_bind_policy = cpu_bind_policy::unset;
  cpu_bind_policy preferred_cpu_bind_policy = cpu_bind_policy::unset;
  cpu_exclusive_policy preferred_cpu_exclusive_policy = cpu_exclusive_policy::unset;
  bool operator==(const resource_spec&) const = default;
};
// NUMATopologySpec (scheduling.koordinator.sh/numa-topology-spec).
struct numa_topology_spec {
  numa_topology_policy topology_policy = numa_topology_policy::none;  // numaTopologyPolicy
  numa_topology_exclusive single_numa_node_exclusive =
      numa_topology_exclusive::unset;  // singleNUMANodeExclusive
  bool operator==(const numa_topology_spec&) const = default;
};
// NUMANodeResource: resources as Kubernetes quantity strings, keyed by resource name.
struct numa_node_resource {
  int node = 0;
  std::map<std::string, std::string> resources;
  bool operator==(const numa_node_resource&) const = default;
};
// ResourceStatus (scheduling.koordinator.sh/resource-status): what the scheduler allocated.
struct resource_status {
  cpu_set cpuset;
  std::vector<numa_node_resource> numa_node_resources;
  bool operator==(const resource_status&) const = default;
};
// KubeletCPUManagerPolicy (kubelet.koordinator.sh/cpu-manager-policy on NodeResourceTopology).
struct kubelet_cpu_manager_policy {
  std::string policy;  // "static" | "none" | ""
  std::map<std::string, std::string> options;
  cpu_set reserved_cpus;
  bool operator==(const kubelet_cpu_manager_policy&) const = default;
};

// Get*: the annotation's JSON (callers pass the value; an absent annotation is the default
// struct, as in Go). Errors name the annotation and the field.
[[nodiscard]] result<resource_spec> parse_resource_spec(std::string_view json);
[[nodiscard]] result<numa_topology_spec> parse_numa_topology_spec(std::string_view json);
[[nodiscard]] result<resource_status> parse_resource_status(std::string_view json);
[[nodiscard]] result<kubelet_cpu_manager_policy> parse_kubelet_cpu_manager_policy(
    std::string_view json);
// SetResourceStatus's JSON: {"cpuset":"0-3","numaNodeResources":[{"node":0,"resources":{..}}]}
// with omitempty fields left out.
[[nodiscard]] std::string format_resource_status(const resource_status& s);

using label_map = std::map<std::string, std::string, std::less<>>;

// GetNodeCPUBindPolicy: label FullPCPUsOnly, or kubelet static with full-pcpus-only=true, is
// FullPCPUsOnly; label SpreadByPCPUs is SpreadByPCPUs; anything else None.
[[nodiscard]] node_cpu_bind_policy get_node_cpu_bind_policy(
    const label_map& node_labels, const kubelet_cpu_manager_policy* kubelet);
// convertToNUMATopologyPolicy: the first of NodeResourceTopology.topologyPolicies that is
// BestEffort, Restricted or SingleNUMANodePodLevel; otherwise none (SingleNUMANodeContainerLevel
// and None map to none).
[[nodiscard]] numa_topology_policy numa_topology_policy_from_kubelet(
    const std::vector<std::string>& nrt_topology_policies);
// getNUMATopologyPolicy: the node label when it names a policy, else the kubelet's.
// An unknown label value is an error naming the label.
[[nodiscard]] result<numa_topology_policy> get_numa_topology_policy(
    const label_map& node_labels, numa_topology_policy kubelet_policy);
// mergeTopologyPolicy: both set and different is err_not_match_numa_topology; else the pod's
// when set, else the node's.
[[nodiscard]] result<numa_topology_policy> merge_topology_policy(numa_topology_policy node,
                                                                 numa_topology_policy pod);
// GetDefaultNUMAAllocateStrategy + GetNUMAAllocateStrategy: the node label when set, else
// most_allocated when the plugin's numaScoringStrategy is MostAllocated, else least_allocated.
// An unknown label value is an error naming the label.
[[nodiscard]] result<numa_allocate_strategy> get_numa_allocate_strategy(
    const label_map& node_labels, bool numa_scoring_most_allocated);

// getCPUBindPolicy: (policy, required). A pod-required policy wins and is required; otherwise
// the pod's preferred policy, overridden (and made required) by a node policy of FullPCPUsOnly
// or SpreadByPCPUs.
struct bind_decision {
  cpu_bind_policy policy = cpu_bind_policy::unset;
  bool required = false;
  bool operator==(const bind_decision&) const = default;
};
[[nodiscard]] bind_decision get_cpu_bind_policy(const label_map& node_labels,
                                                const kubelet_cpu_manager_policy* kubelet,
                                                cpu_bind_policy required,
                                                cpu_bind_policy preferred);

// AllowUseCPUSet: the raw koordinator.sh/qosClass label is LSE or LSR and the priority class
// (GetPodPriorityClassWithDefault) is prod. Only such pods get cpusets.
[[nodiscard]] constexpr bool allow_use_cpuset(qos_class qos_label,
                                              priority_class with_default) noexcept {
  return (qos_label == qos_class::lse || qos_label == qos_class::lsr) &&
         with_default == priority_class::prod;
}

// PreFilter's resolution for a pod AllowUseCPUSet admits (LSE/LSR and prod): preferred
// Default/unset becomes `default_policy`, required Default becomes `default_policy`, a set
// required policy replaces the preferred one. Binds when the result is FullPCPUs or
// SpreadByPCPUs and the pod requests cpu; then requested milli-cpu must be whole cores
// (err_invalid_requested_cpus).
struct pod_cpu_bind {
  bool request_cpu_bind = false;
  int num_cpus_needed = 0;  // requested milli-cpu / 1000
  cpu_bind_policy required_cpu_bind_policy = cpu_bind_policy::unset;
  cpu_bind_policy preferred_cpu_bind_policy = cpu_bind_policy::unset;
  cpu_exclusive_policy preferred_cpu_exclusive_policy = cpu_exclusive_policy::unset;
  bool operator==(const pod_cpu_bind&) const = default;
};
[[nodiscard]] result<pod_cpu_bind> resolve_pod_cpu_bind(const resource_spec& spec,
                                                        std::int64_t requested_milli_cpu,
                                                        cpu_bind_policy default_policy);

}  // namespace colony::scheduler::numa
