// The NUMA half of NodeNUMAResource's resource manager: what each NUMA node of a node still has
// (cpu and memory), the split of a pod's request over the NUMA nodes of a hint, and the NUMA
// affinity hints a pod's request admits. Pure.
//
// Koordinator: pkg/scheduler/plugins/nodenumaresource/{node_allocation.go
// (getAvailableNUMANodeResources, NUMANodeSharedStatus), resource_manager.go
// (allocateResourcesByHint, trimNUMANodeResources, tryBestToDistributeEvenly, splitQuantity,
// GetTopologyHints, generateResourceHints, hintsGenerator), util.go (amplifyNUMANodeResources)}.
//
// Colony models the NUMA resources a NodeResourceTopology zone reports for cpu and memory.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "actors/scheduler/numa/numa_aware.hpp"
#include "actors/scheduler/numa/topology_manager.hpp"
#include "messages/result.hpp"

namespace colony::scheduler::numa {

// NUMANodeResource restricted to cpu and memory.
struct numa_amount {
  int node = 0;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_bytes = 0;
  bool operator==(const numa_amount&) const = default;
};

// How a request is split over NUMA nodes (splitQuantity's inputs).
struct numa_split_options {
  bool request_cpu_bind = false;
  bool required_cpu_bind = false;  // requiredCPUBindPolicy
  cpu_bind_policy bind = cpu_bind_policy::unset;
  int cpus_per_core = 1;
};

// A cpu + memory request (the pod's, not amplified).
struct numa_request {
  std::int64_t cpu_milli = 0;
  std::int64_t memory_bytes = 0;
};

// getAvailableNUMANodeResources: per NUMA node of `allocatable` (ascending node id), allocatable
// minus what pods hold there, never below zero. With a cpu amplification ratio above 1 the
// cpuset CPUs held on the node count amplified (cpuset_cpus_by_node[id]: CPUs held there).
// `allocated_out`, when given, gets what is held per node (the same order).
[[nodiscard]] std::vector<numa_amount> available_numa_resources(
    std::span<const numa_amount> allocatable, std::span<const numa_amount> allocated,
    std::span<const int> cpuset_cpus_by_node, double cpu_amplification_ratio,
    std::vector<numa_amount>* allocated_out = nullptr);

// tryBestToDistributeEvenly over the NUMA nodes of `hint_nodes` (ascending ids), for the
// resources the node's NUMA nodes have (`allocatable`). Each resource
// goes to the nodes in ascending order of what they have available (Koordinator's comparator
// indexes the availability by position, not by node id; Colony keeps that, with Go's insertion
// sort, which is what sort.Slice runs for up to 12 NUMA nodes), each node taking an even share
// of what is left (splitQuantity: whole CPUs for a cpuset, whole cores under a required
// FullPCPUs). Error: "Insufficient NUMA cpu" / "Insufficient NUMA memory" when the nodes cannot
// hold it all (failed_precondition, the messages joined by ", ").
[[nodiscard]] result<std::vector<numa_amount>> distribute_evenly(
    const numa_request& request, std::span<const numa_amount> allocatable,
    std::span<const numa_amount> available, std::span<const int> hint_nodes,
    const numa_split_options& split);

// generateResourceHints: for every NUMA node set (numa_masks_of order) whose `try_allocate`
// succeeds, a hint per requested resource the NUMA nodes have (cpu when the request has cpu,
// memory when it has memory), unless a node of the set has none of it available; scored by
// `score(requested, total)` (the numaScoringStrategy over the set); preferred when it is as
// narrow as the narrowest or the policy is Restricted. A requested resource with no hint gets
// an empty list (no possible affinity).
[[nodiscard]] provider_hints generate_numa_hints(
    std::span<const numa_amount> allocatable, std::span<const numa_amount> available,
    const numa_request& request, numa_topology_policy policy,
    const std::function<std::int64_t(const numa_amount& requested, const numa_amount& total)>&
        score,
    const std::function<bool(std::uint64_t mask)>& try_allocate);

// The ids of a mask, ascending.
[[nodiscard]] std::vector<int> numa_mask_ids(std::uint64_t mask);

}  // namespace colony::scheduler::numa
